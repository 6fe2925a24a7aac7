"""``[[controller]]``: keyframes set before every frame, and Python scripts (``on_frame``, ``on_key``) run only when
allowed; a failing script is reported with its file and line and leaves the scene as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.controllers import ControllerError, interpolate
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "resources" / "scenes"
CABLE = "body.finger.cable.cable.value"
CAVITY = "body.pneunet.cavity.cavity.value"


def with_controllers(path: Path, controllers, *, allow_scripts=False, mode=None) -> Scene:
    spec = load_scene(path)
    data = to_data(spec)
    data["controller"] = controllers
    if mode is not None:
        data["scene"]["mode"] = mode
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir), allow_scripts=allow_scripts)


def script(tmp_path: Path, text: str, name: str = "drive.py") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_interpolation_between_before_and_after_the_keyframes():
    frames = ((0.0, 0.0), (1.0, 10.0), (3.0, 0.0))
    assert [interpolate(frames, t) for t in (-1.0, 0.0, 0.25, 1.0, 2.0, 2.5, 3.0, 7.0)] == \
        [0.0, 0.0, 2.5, 10.0, 5.0, 2.5, 0.0, 0.0]
    vectors = ((1.0, (0.0, 0.0, 0.0)), (2.0, (2.0, -4.0, 1.0)))
    assert interpolate(vectors, 1.5) == (1.0, -2.0, 0.5)
    assert interpolate(((5.0, 3.0),), 0.0) == 3.0


def test_keyframes_drive_the_cable_frame_by_frame_in_static_mode():
    """Static time is frame x dt (dt = 0.01 s in finger.toml), the frame's end: frame 1 is at t = 0.01."""
    scene = with_controllers(SCENES / "finger.toml", [{"key": CABLE, "keyframes": [[0.0, 0.0], [0.04, 8.0],
                                                                                    [0.08, 4.0]]}])
    values, displacements = [], []
    for _ in range(10):
        assert scene.step().converged
        values.append(scene.get(CABLE))
        displacements.append(scene.outputs()["cable.displacement"])
    expected = [2.0, 4.0, 6.0, 8.0, 7.0, 6.0, 5.0, 4.0, 4.0, 4.0]
    np.testing.assert_allclose(values, expected, atol=1e-12)
    np.testing.assert_allclose(displacements, expected, atol=1e-6)


def test_keyframes_follow_the_simulated_time_in_dynamic_mode_and_drive_vectors():
    scene = with_controllers(SCENES / "finger.toml",
                             [{"key": "scene.gravity", "keyframes": [[0.0, [0.0, 0.0, 0.0]],
                                                                     [0.1, [0.0, -9810.0, 0.0]]]}], mode="dynamic")
    for frame in range(1, 4):
        assert scene.step().ok
        assert scene.simulation.time == pytest.approx(0.01 * frame)
        np.testing.assert_allclose(scene.get("scene.gravity"), (0.0, -981.0 * frame, 0.0), atol=1e-9)
        np.testing.assert_allclose(scene.gravities[0].g, (0.0, -981.0 * frame, 0.0), atol=1e-9)


def test_controller_keys_are_validated_naming_the_key():
    cases = [({"key": "body.finger.cable.nope.value", "keyframes": [[0.0, 1.0]]},
              r"controller\[0\]\.key: \"body\.finger\.cable\.nope\.value\" is not a key of this scene: no cable "
              r"named 'nope'"),
             ({"key": CABLE, "keyframes": [[0.0, 1.0], [0.0, 2.0]]},
              r"controller\[0\]\.keyframes: keyframe 1: time 0 is not after keyframe 0's 0; times must increase"),
             ({"key": CABLE, "keyframes": [[0.0, [1.0, 2.0]]]},
              r"controller\[0\]\.keyframes: keyframe 0: the value \[1\.0, 2\.0\] does not fit "
              r"body\.finger\.cable\.cable\.value"),
             ({"key": "scene.gravity", "keyframes": [[0.0, 1.0]]},
              r"controller\[0\]\.keyframes: keyframe 0: the value 1\.0 does not fit scene\.gravity"),
             ({"key": "scene.units", "keyframes": [[0.0, 1.0]]},
              r"controller\[0\]\.key: \"scene\.units\" is one of SI, mm-kg-s, not a number"),
             ({"key": CABLE}, r"controller\[0\]\.keyframes: missing; key"),
             ({"keyframes": [[0.0, 1.0]]}, r"controller\[0\]: one of key, script is required"),
             ({"key": CABLE, "keyframes": [[0.0, 1.0], [1.0, [1.0]]]},
              r"controller\[0\]\.keyframes: keyframe 1: value \[1\.0\] has another shape than keyframe 0's "
              r"\(a number\)")]
    for table, message in cases:
        with pytest.raises(SceneError, match=r"finger\.toml: " + message):
            with_controllers(SCENES / "finger.toml", [table])


def test_a_script_drives_the_cavity(tmp_path):
    path = script(tmp_path, "def on_frame(scene, time):\n"
                            "    scene.set('" + CAVITY + "', 400.0 * time)\n")
    scene = with_controllers(SCENES / "pneunet.toml", [{"script": str(path)}], allow_scripts=True)
    pressures = []
    for _ in range(4):
        assert scene.step().converged
        pressures.append(scene.outputs()["cavity.pressure"])
    np.testing.assert_allclose(pressures, [4.0, 8.0, 12.0, 16.0], atol=1e-6)


def test_scripts_run_only_when_allowed_and_answer_keys(tmp_path):
    path = script(tmp_path, "def on_key(scene, key):\n"
                            "    if key == 'Up':\n"
                            "        scene.set('" + CABLE + "', scene.get('" + CABLE + "') + 1.0)\n")
    refused = with_controllers(SCENES / "finger.toml", [{"name": "keys", "script": str(path)}])
    assert refused.scripts == [path] and not refused.scripts_allowed
    assert any("controller keys: the script" in w and "not run" in w for w in refused.warnings)
    refused.key_pressed("Up")
    assert refused.get(CABLE) == 0.0
    refused.allow_scripts()
    refused.key_pressed("Up")
    refused.key_pressed("Down")
    refused.key_pressed("Up")
    assert refused.get(CABLE) == 2.0
    assert not any("not run" in w for w in refused.warnings)


def test_a_failing_script_names_its_line_and_leaves_the_scene_as_it_was(tmp_path):
    path = script(tmp_path, "def on_frame(scene, time):\n"
                            "    scene.set('" + CABLE + "', 5.0)\n"
                            "    if time > 0.015:\n"
                            "        raise RuntimeError('boom')\n")
    scene = with_controllers(SCENES / "finger.toml", [{"script": str(path)}], allow_scripts=True)
    assert scene.step().converged
    before = scene.positions.copy()
    scene.set(CABLE, 3.0)
    with pytest.raises(ControllerError, match=r"controller controller0: drive\.py, line 4: in on_frame: "
                                              r"RuntimeError: boom"):
        scene.step()
    assert scene.get(CABLE) == 3.0  # the script's set is undone
    assert scene.simulation.frame == 1
    np.testing.assert_array_equal(scene.positions, before)


def test_scripts_that_cannot_load_are_reported_with_their_line(tmp_path):
    for text, message in (("x = 1\n", r"defines neither on_frame\(scene, time\) nor on_key\(scene, key\)"),
                          ("def on_frame(scene, time)\n    pass\n", r"bad\.py, line 1: SyntaxError"),
                          ("import nothing_of_that_name\n", r"bad\.py, line 1: ModuleNotFoundError")):
        path = script(tmp_path, text, "bad.py")
        with pytest.raises(ControllerError, match=message):
            with_controllers(SCENES / "finger.toml", [{"script": str(path)}], allow_scripts=True)
    with pytest.raises(SceneError, match=r"controller\[0\]\.script: file not found"):
        with_controllers(SCENES / "finger.toml", [{"script": str(tmp_path / "missing.py")}])
