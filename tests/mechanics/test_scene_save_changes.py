"""Saving a scene writes what the user changed, not the defaults the file leaves out, and keeps the file's text
for the values the user did not touch (issue 30's "Save as")."""

import difflib
import shutil
from pathlib import Path

from softsim.app.resources import resource_path
from softsim.mechanics.scene import load_scene, set_value
from softsim.mechanics.scene.save import save_scene


def _copy_finger(tmp_path: Path) -> Path:
    """The shipped finger and its mesh in a folder of their own (scenes/finger.toml, meshes/finger.vtu)."""
    (tmp_path / "scenes").mkdir()
    (tmp_path / "meshes").mkdir()
    shutil.copy(resource_path("scenes", "finger.toml"), tmp_path / "scenes" / "finger.toml")
    shutil.copy(resource_path("meshes", "finger.vtu"), tmp_path / "meshes" / "finger.vtu")
    return tmp_path / "scenes" / "finger.toml"


def _changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_an_unchanged_scene_saves_to_the_same_text(tmp_path):
    path = _copy_finger(tmp_path)
    text = path.read_text()
    save_scene(load_scene(path), path)
    assert path.read_text() == text


def test_one_edit_changes_one_line_and_a_default_set_by_the_user_is_added(tmp_path):
    path = _copy_finger(tmp_path)
    text = path.read_text()
    spec = load_scene(path)
    set_value(spec, "body.finger.cable.cable.value", 7.5)
    save_scene(spec, path)
    changed = [(line[0], line[1:].strip()) for line in _changed_lines(text, path.read_text())]
    assert changed == [("-", "value = 0.0"), ("+", "value = 7.5")]
    set_value(spec, "solver.newton.warm_start", False)  # a key the file leaves out (default true)
    save_scene(spec, path)
    changed = [(line[0], line[1:].strip()) for line in _changed_lines(text, path.read_text())]
    assert changed == [("-", "value = 0.0"), ("+", "value = 7.5"), ("+", "warm_start = false")]
    assert load_scene(path) == spec


def test_save_as_elsewhere_rewrites_only_the_paths_that_must_change(tmp_path):
    path = _copy_finger(tmp_path)
    text = path.read_text()
    other = tmp_path / "elsewhere" / "deeper"
    other.mkdir(parents=True)
    spec = load_scene(path)
    save_scene(spec, other / "copy.toml")
    saved = (other / "copy.toml").read_text()
    changed = _changed_lines(text, saved)
    assert len(changed) == 2 and "finger.vtu" in changed[0] and "../../meshes/finger.vtu" in changed[1]
    assert load_scene(other / "copy.toml").bodies[0].mesh_path == spec.bodies[0].mesh_path
