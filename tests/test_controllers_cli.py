"""``softsim run`` and scene scripts: refused without ``--allow-scripts`` (exit 2, the script named), run with
it; ``softsim check`` runs none of a scene's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from softsim.app.headless import main as headless_main
from softsim.mechanics.scene import load_scene, parse_data, save_scene, to_data

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "resources" / "scenes"
CAVITY = "body.pneunet.cavity.cavity.value"


def script(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_softsim_run_refuses_scripts_unless_allowed(tmp_path, capsys):
    spec = load_scene(SCENES / "pneunet.toml")
    data = to_data(spec)
    data["controller"] = [{"name": "pump", "script": "pump.py"}]
    script(tmp_path, "def on_frame(scene, time):\n    scene.set('" + CAVITY + "', 400.0 * time)\n", "pump.py")
    (tmp_path / "pneunet.vtu").write_bytes((ROOT / "resources" / "meshes" / "pneunet.vtu").read_bytes())
    data["body"][0]["mesh"] = "pneunet.vtu"
    path = tmp_path / "pumped.toml"
    save_scene(parse_data(data, source=str(path), base_dir=tmp_path), path)
    out = tmp_path / "out"
    assert headless_main(["run", str(path), "--frames", "2", "--out", str(out), "--no-vtu"]) == 2
    error = capsys.readouterr().err
    assert "pumped.toml: the scene's controllers run Python scripts: pump (pump.py)" in error
    assert "--allow-scripts" in error and not out.exists()
    assert headless_main(["run", str(path), "--frames", "2", "--out", str(out), "--no-vtu", "--allow-scripts"]) == 0
    rows = (out / "frames.csv").read_text().splitlines()
    header = rows[0].split(",")
    column = header.index("cavity.pressure")
    assert [float(r.split(",")[column]) for r in rows[1:]] == pytest.approx([4.0, 8.0], abs=1e-6)
    assert headless_main(["check", str(path)]) == 0  # checking a scene runs none of its code


def test_a_script_that_fails_stops_the_run_with_its_line_and_keeps_the_frames(tmp_path, capsys):
    spec = load_scene(SCENES / "pneunet.toml")
    data = to_data(spec)
    data["controller"] = [{"name": "pump", "script": "pump.py"}]
    script(tmp_path, "def on_frame(scene, time):\n"
                     "    if time > 0.025:\n"
                     "        raise ValueError('no more air')\n"
                     "    scene.set('" + CAVITY + "', 400.0 * time)\n", "pump.py")
    (tmp_path / "pneunet.vtu").write_bytes((ROOT / "resources" / "meshes" / "pneunet.vtu").read_bytes())
    data["body"][0]["mesh"] = "pneunet.vtu"
    path = tmp_path / "pumped.toml"
    save_scene(parse_data(data, source=str(path), base_dir=tmp_path), path)
    out = tmp_path / "out"
    assert headless_main(["run", str(path), "--frames", "5", "--out", str(out), "--no-vtu", "--allow-scripts"]) == 2
    assert "controller pump: pump.py, line 3: in on_frame: ValueError: no more air" in capsys.readouterr().err
    assert len((out / "frames.csv").read_text().splitlines()) == 3  # the header and frames 1 and 2
