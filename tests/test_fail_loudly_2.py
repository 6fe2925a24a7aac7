"""Issue 29, "Fail loudly, part 2": each defect the reliability trial found, tested through the message a person
sees (the command's exit status and its stderr line), in-process through ``app.cli.main``."""

from __future__ import annotations

import io
import os
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


# -- sweeps -----------------------------------------------------------------------------------------------
CABLE = "body.finger.cable.cable.value"


def test_a_sample_that_kills_its_worker_is_an_error_row_and_the_sweep_completes(tmp_path):
    """Sample 1's worker aborts (as a crash in native code would): its row says status error and why, and the
    other samples are there with their results (on the surviving worker and the one that replaced the dead)."""
    from softsim.app.sweep import sweep
    from tests.sweep_crash_plugin import AbortOnSample

    clients = []

    def started(client):
        client.register_plugin(AbortOnSample(1))
        clients.append(client)

    results = sweep(FINGER, {CABLE: "2,4,6"}, frames=1, workers=2, out=tmp_path / "out", on_start=started)
    assert list(results["sample"]) == [0, 1, 2]
    assert list(results["status"]) == ["ok", "error", "ok"]
    assert "worker process running this sample died" in results["message"][1]
    assert results["cable.displacement"][2] == pytest.approx(6.0, abs=1e-6)
    import pandas as pd

    assert sorted(pd.read_parquet(tmp_path / "out" / "results.parquet")["sample"]) == [0, 1, 2]


def sweep_cli(tmp_path: Path, *arguments: str) -> tuple[int, str]:
    """``softsim sweep FINGER ARGUMENTS --frames 1`` (``--out tmp_path/out`` unless given): (status, stderr)."""
    out = [] if "--out" in arguments else ["--out", str(tmp_path / "out")]
    status, _out, err = run_cli("sweep", str(FINGER), *arguments, "--frames", "1", *out)
    return status, err


def test_a_samples_file_that_is_a_device_is_refused_at_once(tmp_path):
    status, err = sweep_cli(tmp_path, "--samples", "/dev/zero")
    assert status == 2
    assert "--samples /dev/zero: is a character device, not a regular file" in err


def test_a_samples_file_that_is_missing_or_unreadable_says_so_without_errno(tmp_path):
    status, err = sweep_cli(tmp_path, "--samples", str(tmp_path / "none.csv"))
    assert status == 2
    assert f"--samples {tmp_path / 'none.csv'}: file not found" in err and "[Errno" not in err


def test_a_samples_file_with_a_byte_order_mark_is_read(tmp_path):
    from softsim.app.sweep.plan import read_samples

    samples = tmp_path / "samples.csv"
    samples.write_bytes(f"\ufeff{CABLE}\n2.0\n".encode())
    assert [s.as_dict() for s in read_samples(samples)] == [{CABLE: 2.0}]


def test_a_samples_file_naming_a_column_twice_is_refused(tmp_path):
    samples = tmp_path / "samples.csv"
    samples.write_text(f"{CABLE},{CABLE}\n2.0,3.0\n")
    status, err = sweep_cli(tmp_path, "--samples", str(samples))
    assert status == 2
    assert f"the header names '{CABLE}' twice; give each key path one column" in err


def test_a_key_varied_twice_is_refused_not_replaced_by_the_last(tmp_path):
    status, err = sweep_cli(tmp_path, "--vary", f"{CABLE}=1,2", "--vary", f"{CABLE}=3,4")
    assert status == 2
    assert f"--vary {CABLE} is given twice; give all its values in one --vary" in err


def test_vtu_without_keep_frames_is_refused(tmp_path):
    status, err = sweep_cli(tmp_path, "--vary", f"{CABLE}=1,2", "--vtu")
    assert status == 2
    assert "--vtu writes each sample's .vtu files into OUT/samples/ID, which only --keep-frames keeps" in err


def test_an_out_that_is_a_file_or_cannot_be_written_is_named_without_errno(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    status, err = sweep_cli(tmp_path, "--vary", f"{CABLE}=1,2", "--out", str(a_file))
    assert status == 2
    assert f"--out {a_file}: exists and is not a directory" in err
    status, err = sweep_cli(tmp_path, "--vary", f"{CABLE}=1,2", "--out", str(a_file / "below"))
    assert status == 2
    assert f"--out {a_file / 'below'}: " in err and "[Errno" not in err


def test_a_mesh_whose_name_holds_glob_characters_travels_with_the_scene(tmp_path, monkeypatch):
    """``fing[1].vtu`` is a name, not a pattern: the bundle holds it, a sample runs (was: every sample
    invalid), and the sample leaves no directory behind in the temporary directory."""
    import shutil
    import tempfile

    from softsim.app.sweep.bundle import bundle_scene
    from softsim.app.sweep.plan import Sample
    from softsim.app.sweep.task import run_sample
    from softsim.mechanics.scene import load_scene

    shutil.copy(FINGER_MESH, tmp_path / "fing[1].vtu")
    scene = finger_copy(tmp_path)
    scene.write_text(scene.read_text().replace(FINGER_MESH.as_posix(), "fing[1].vtu"))
    bundle = bundle_scene(load_scene(scene))
    assert [name for name, _data in bundle.files] == ["file0_fing[1].vtu"]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    row = run_sample(bundle, (), Sample(0, ((CABLE, 2.0),)), 1)
    assert row["status"] == "ok", row["message"]
    assert row["cable.displacement"] == pytest.approx(2.0, abs=1e-6)
    assert list(scratch.iterdir()) == []


# -- softsim run: the output directory ------------------------------------------------------------------
def test_a_second_run_into_a_directory_a_run_is_writing_is_refused(tmp_path):
    """While the first run writes its frames, a second one into the same --out exits 2 and says why; the first
    run's files are untouched and it completes."""
    from softsim.app import headless

    out = tmp_path / "out"
    second: list[tuple[int, str]] = []

    def start_another(_scene, index, _row):
        if index == 1:
            err = io.StringIO()
            status = headless.main(["run", str(FINGER), "--frames", "1", "--out", str(out), "--no-vtu"],
                                   stdout=io.StringIO(), stderr=err)
            second.append((status, err.getvalue()))

    err = io.StringIO()
    status = headless.main(["run", str(FINGER), "--frames", "2", "--out", str(out), "--no-vtu"],
                           stdout=io.StringIO(), stderr=err, on_frame=start_another)
    assert status == 0, err.getvalue()
    assert second[0][0] == 2
    assert f"another softsim run is writing into {out} now; wait until it ends, or choose another --out" in second[0][1]
    assert len((out / "frames.csv").read_text().splitlines()) == 3  # the header and the first run's 2 rows


def test_the_lock_is_released_when_a_run_ends(tmp_path):
    from softsim.app.run_output import hold_out_dir

    out = tmp_path / "out"
    assert run_cli("run", str(FINGER), "--frames", "1", "--out", str(out), "--no-vtu")[0] == 0
    with hold_out_dir(out):
        pass  # not refused: nobody holds it
    assert run_cli("run", str(FINGER), "--frames", "1", "--out", str(out), "--no-vtu")[0] == 0


def test_a_disk_full_names_the_file_being_written(tmp_path, monkeypatch):
    import errno

    from softsim.app import run_output

    out = tmp_path / "out"
    writes = []
    real_write = os.write

    def write(descriptor, data):
        writes.append(1)
        if len(writes) > 1:  # the first row is written, the second finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(descriptor, data)

    monkeypatch.setattr(run_output.os, "write", write)
    status, _out, err = run_cli("run", str(FINGER), "--frames", "3", "--out", str(out), "--no-vtu")
    assert status == 2
    assert f"cannot write {out / 'frames.csv'}: No space left on device (1 frame(s) are complete in frames.csv)" in err
    assert "[Errno" not in err


def test_an_out_that_cannot_be_created_is_named_without_errno(tmp_path):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "below"
    status, _out, err = run_cli("run", str(FINGER), "--frames", "1", "--out", str(out))
    assert status == 2
    assert f"--out: cannot create the directory {out} (Not a directory)" in err and "[Errno" not in err


# -- scenes that load but make no sense -------------------------------------------------------------------
def test_self_contact_at_rest_is_a_no_op(tmp_path):
    """The finger with selfCollision and no actuation (it sags under gravity only): frames converge without a
    contact, to the same state as without [collision] (frame 1 diverged on contacts between nodes and the
    triangles across the finger's thin parts)."""
    import csv

    rows = {}
    for name, extra in (("self", "\n[collision]\nselfCollision = true\n"), ("none", "")):
        out = tmp_path / name
        status, _out, err = run_cli("run", str(finger_copy(tmp_path, f"{name}.toml", extra=extra)), "--frames", "2",
                                    "--out", str(out), "--no-vtu")
        assert status == 0, err
        rows[name] = list(csv.DictReader((out / "frames.csv").open()))
    assert [float(row["collision.contacts"]) for row in rows["self"]] == [0.0, 0.0]
    assert [float(row["max_displacement"]) for row in rows["self"]] == pytest.approx(
        [float(row["max_displacement"]) for row in rows["none"]], rel=1e-9)


def test_a_sphere_wholly_inside_the_body_is_refused(tmp_path):
    scene = finger_copy(tmp_path, extra='\n[[obstacle]]\nname = "ball"\ntype = "sphere"\ncenter = [-50.0, 7.5, 7.5]\n'
                                         'radius = 3.0\n')
    status, _out, err = run_cli("check", str(scene))
    assert status == 2
    assert "finger.toml: obstacle.ball: the sphere lies inside body 'finger'" in err
    assert "has no effect; move it outside the body" in err


def test_an_obstacle_that_stops_before_it_starts_is_refused(tmp_path):
    scene = finger_copy(tmp_path, extra='\n[[obstacle]]\nname = "floor"\ntype = "plane"\npoint = [0.0, -5.0, 0.0]\n'
                                         'normal = [0.0, 1.0, 0.0]\nvelocity = [0.0, -1.0, 0.0]\nstartTime = 2.0\n'
                                         'endTime = 1.0\n')
    status, _out, err = run_cli("check", str(scene))
    assert status == 2
    assert "obstacle[0].endTime: 1 is before startTime = 2: the obstacle would never move" in err


def test_an_effector_goal_without_the_inverse_model_gets_a_warning(tmp_path):
    text = FINGER.read_text().replace('position = [-100.0, 7.5, 7.5]',
                                      'position = [-100.0, 7.5, 7.5]\n  effectorGoal = [-100.0, 0.0, 7.5]')
    scene = finger_copy(tmp_path)
    scene.write_text(text.replace('"../meshes/finger.vtu"', f'"{FINGER_MESH.as_posix()}"'))
    status, _out, err = run_cli("check", str(scene))
    assert status == 0, err
    assert ("warning: finger.toml: body[0].effector[0].effectorGoal: the inverse model is off (no [solver.inverse], "
            "or active = false): nothing steers the effector to this goal, which only gives the output tip.distance"
            in err)


def test_an_inverse_goal_out_of_reach_is_flagged_at_load_and_at_the_end_of_the_run(tmp_path):
    inverse = ROOT / "resources" / "scenes" / "trunk_inverse.toml"
    text = inverse.read_text().replace("effectorGoal = [[-50.0, 40.0, 170.0]]", "effectorGoal = [[1e9, 0.0, 0.0]]")
    scene = tmp_path / "far.toml"
    scene.write_text(text.replace('"../meshes/', f'"{(ROOT / "resources" / "meshes").as_posix()}/'))
    status, _out, err = run_cli("check", str(scene))
    assert status == 0, err
    assert "body.trunk.effector.tip.effectorGoal: [1e+09, 0, 0] is 1e+09 mm outside the body's bounding box" in err
    assert "out of reach" in err
    status, _out, err = run_cli("run", str(inverse), "--frames", "1", "--out", str(tmp_path / "out"), "--no-vtu",
                                "--set", "body[0].effector[0].effectorGoal=[1e9, 0, 0]")
    assert status == 0, err
    assert "warning: trunk_inverse.toml: the effector goal is not reached: after frame 1 an effector is 1e+09 mm" in err


# -- temporary files ----------------------------------------------------------------------------------------
def test_the_temporary_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    """A process killed (SIGKILL) in the middle of saving a scene leaves ``.NAME.XXXXXXXX.tmp``; the next save of
    the same file removes it. The temporary file of a live writer stays."""
    import signal
    import subprocess
    import sys
    import time

    from softsim.mechanics.scene import load_scene, save_scene
    from softsim.meshes import files

    scene = finger_copy(tmp_path, "scene.toml")
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom softsim.meshes.files import atomic_path\n"
         f"with atomic_path({str(scene)!r}) as t:\n    open(t, 'w').write('half')\n    print('in', flush=True)\n"
         "    time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "in"
    (live,) = [p for p in tmp_path.iterdir() if files.temporary_target(p.name) == "scene.toml"]
    os.utime(live, (time.time() - 60, time.time() - 60))
    save_scene(load_scene(scene), scene)  # the writer lives: its file stays
    assert live.exists()
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert live.exists()  # a killed process cleans nothing
    save_scene(load_scene(scene), scene)
    assert not live.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
