"""Issue 29, "Fail loudly, part 2": each defect the reliability trial found, tested through the message a person
sees (the command's exit status and its stderr line), in-process through ``app.cli.main``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from softsim.app.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FINGER = ROOT / "resources" / "scenes" / "finger.toml"
FINGER_MESH = ROOT / "resources" / "meshes" / "finger.vtu"


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``softsim ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    command = argv[0]
    if command in ("run", "check"):
        from softsim.app.headless import main

        status = main(list(argv), stdout=out, stderr=err)
    elif command == "sweep":
        from softsim.app.sweep.command import main

        status = main(list(argv[1:]), stdout=out, stderr=err)
    else:
        status = cli_main(list(argv))
    return status, out.getvalue(), err.getvalue()


def finger_copy(folder: Path, name: str = "finger.toml", *, extra: str = "", prefix: str = "") -> Path:
    """finger.toml in ``folder`` (mesh by absolute path), with ``prefix`` before and ``extra`` after its text."""
    text = FINGER.read_text().replace('"../meshes/finger.vtu"', f'"{FINGER_MESH.as_posix()}"')
    path = folder / name
    path.write_text(prefix + text + extra, encoding="utf-8")
    return path


# -- scene files and --set values -------------------------------------------------------------------------
def test_a_mesh_that_is_a_symlink_loop_is_invalid_input_naming_the_key_and_the_file(tmp_path):
    (tmp_path / "a.vtu").symlink_to(tmp_path / "b.vtu")
    (tmp_path / "b.vtu").symlink_to(tmp_path / "a.vtu")
    scene = finger_copy(tmp_path)
    scene.write_text(scene.read_text().replace(FINGER_MESH.as_posix(), "a.vtu"))
    status, _out, err = run_cli("check", str(scene))
    assert status == 2, err
    assert "finger.toml: body[0].mesh:" in err and "a.vtu" in err and "symbolic link loop" in err
    assert "internal error" not in err


def test_a_null_byte_in_a_path_names_the_key(tmp_path):
    scene = finger_copy(tmp_path)
    scene.write_text(scene.read_text().replace(FINGER_MESH.as_posix(), "fin\\u0000ger.vtu"))
    status, _out, err = run_cli("check", str(scene))
    assert status == 2
    assert "body[0].mesh:" in err and "\\x00" in err and "remove" in err
    assert "embedded null byte" not in err


def test_a_byte_order_mark_at_the_start_of_a_scene_is_accepted(tmp_path):
    scene = finger_copy(tmp_path, prefix="\ufeff")
    assert scene.read_bytes().startswith(b"\xef\xbb\xbf")
    status, out, err = run_cli("check", str(scene))
    assert status == 0, err
    assert "Cable-driven finger" in out


def test_an_integer_of_too_many_digits_in_a_scene_names_its_line_and_key(tmp_path):
    scene = finger_copy(tmp_path, extra="\n[drag]\nstiffness = " + "9" * 5000 + "\n")
    status, _out, err = run_cli("check", str(scene))
    assert status == 2
    assert "finger.toml: line" in err and "stiffness: an integer of more than" in err and "exponent" in err
    assert "set_int_max_str_digits" not in err


def test_a_set_value_of_100000_digits_names_the_key_without_pythons_hint():
    status, _out, err = run_cli("check", str(FINGER), "--set", "body.finger.cable.cable.value=" + "1" * 100_000)
    assert status == 2
    assert "body.finger.cable.cable.value: a number of 100000 digits" in err
    assert "set_int_max_str_digits" not in err


@pytest.mark.parametrize("override, shown", [('scene.units="SI"', "(SI, static)"),
                                             ("scene.mode='dynamic'", "(mm-kg-s, dynamic)"),
                                             ("scene.units=SI", "(SI, static)")])
def test_a_string_set_value_may_be_quoted_as_one_toml_value(override, shown):
    extra = ["--set", "body.finger.material.totalMass=0.05"] if "dynamic" in override else []
    status, out, err = run_cli("check", str(FINGER), "--set", override, *extra)
    assert status == 0, err
    assert shown in out


@pytest.mark.parametrize("override", ["body.finger.cable.cable.value=", "body.finger.cable.cable.value=  "])
def test_an_empty_set_value_is_refused_not_a_silent_reset_to_the_default(override):
    status, _out, err = run_cli("check", str(FINGER), "--set", override)
    assert status == 2
    assert "--set body.finger.cable.cable.value: no value after '='" in err and "leave this --set out" in err
