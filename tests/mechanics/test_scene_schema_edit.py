"""Live editing by key path and writing scenes back (mechanics.scene.edit / save)."""

from __future__ import annotations

import copy
import os
import stat
import tomllib
from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.scene import (
    SceneError,
    SphereSpec,
    dump_scene,
    get_value,
    list_parameters,
    load_scene,
    parse_data,
    parse_scene,
    save_scene,
    set_value,
    set_values,
    to_data,
    undo_point,
    validate_spec,
)

from .test_scene_schema import EXAMPLE


@pytest.fixture
def example(tmp_path: Path):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "meshes").mkdir()
    for name in ("finger.vtu", "cavity.stl", "other.vtu"):
        (tmp_path / "meshes" / name).write_text("dummy")
    path = tmp_path / "scenes" / "finger.toml"
    path.write_text(EXAMPLE)
    return load_scene(path)


def error_lines(spec, path: str, value) -> list[str]:
    before = copy.deepcopy(spec)
    with pytest.raises(SceneError) as info:
        set_value(spec, path, value)
    assert spec == before  # an invalid edit leaves the scene unchanged
    return info.value.errors


def test_get_value_by_name_and_by_index(example) -> None:
    assert get_value(example, "body.finger.cable.cable.minForce") == 0.0
    assert get_value(example, "body[0].cable[0].pullPoint") == (0.0, 12.5, 2.5)
    assert get_value(example, "body.finger.material.region[0].youngModulus") == 1500.0
    assert get_value(example, "obstacle.obstacle0.friction") == 0.3
    assert get_value(example, "solver.constraint.type") == "ImprovedJacobi"
    assert get_value(example, "solver.newton.should_diverge_when_residual_is_growing") is False
    assert get_value(example, "body.finger.effector.tip").name == "tip"
    assert get_value(example, "drag").compliance == 1e-3


def test_set_value_from_command_line_strings(example) -> None:
    set_value(example, "solver.constraint.spectralCorrectionFactor", "0.8")
    assert example.solver.constraint.spectralCorrectionFactor == 0.8
    set_value(example, "body.finger.cable.cable.value", "5")
    assert example.bodies[0].cables[0].value == 5.0
    set_value(example, "body[0].cable[0].valueType", "force")
    assert example.bodies[0].cables[0].valueType == "force"
    set_value(example, "body.finger.effector.tip.useDirections", "[1, 1, 0]")
    assert example.bodies[0].effectors[0].useDirections == (1, 1, 0)
    set_value(example, "solver.newton.newton_iterations", "25")
    assert example.solver.newton.newton_iterations == 25
    set_value(example, "solver.constraint.allVerified", "true")
    assert example.solver.constraint.allVerified is True
    set_value(example, "scene.name", "a finger, renamed")
    assert example.scene.name == "a finger, renamed"


def test_set_value_with_python_values(example) -> None:
    cable = example.bodies[0].cables[0]
    set_value(example, "body.finger.cable.cable.maxForce", np.float64(12.5))
    set_value(example, "body.finger.cable.cable.pullPoint", np.array([1.0, 2.0, 3.0]))
    assert example.bodies[0].cables[0] is cable  # edited in place
    assert (cable.maxForce, cable.pullPoint) == (12.5, (1.0, 2.0, 3.0))
    set_value(example, "body.finger.cable.cable.maxForce", None)
    assert cable.maxForce is None
    set_value(example, "solver.newton.should_diverge_when_residual_is_growing", True)
    assert example.solver.newton.shoud_diverge_when_residual_is_growing is True


def test_invalid_values_name_the_key_and_the_range(example) -> None:
    assert error_lines(example, "body.finger.material.poissonRatio", "0.7") == [
        "finger.toml: body.finger.material.poissonRatio: 0.7 is outside (-1, 0.5)"
    ]
    assert error_lines(example, "solver.constraint.spectralCorrectionFactor", "abc") == [
        'finger.toml: solver.constraint.spectralCorrectionFactor: expected a number, got "abc"'
    ]
    assert error_lines(example, "body.finger.cable.cable.valueType", "displacment") == [
        'finger.toml: body.finger.cable.cable.valueType: "displacment" is not one of displacement, force; '
        "did you mean displacement?"
    ]
    assert error_lines(example, "body.finger.cable.cable.maxForce", -1.0) == [
        "finger.toml: body[0].cable[0].minForce: 0 is greater than maxForce = -1"
    ]
    assert error_lines(example, "scene.gravity", "[0, 1]") == [
        "finger.toml: scene.gravity: expected a list of 3 numbers, got 2 values"
    ]


def test_unknown_paths(example) -> None:
    assert error_lines(example, "solver.constraint.spectralCorectionFactor", "0.8") == [
        "finger.toml: solver.constraint.spectralCorectionFactor: unknown key 'spectralCorectionFactor' in "
        "solver.constraint; did you mean spectralCorrectionFactor?"
    ]
    assert error_lines(example, "body.hand.cable.cable.value", "1") == [
        "finger.toml: body.hand.cable.cable.value: no body named 'hand' (names: finger)"
    ]
    assert error_lines(example, "body[3].scale", "1") == [
        "finger.toml: body[3].scale: index 3 is out of range: 1 body item(s)"
    ]
    assert error_lines(example, "body.finger.cable", "1") == [
        "finger.toml: body.finger.cable: cable is a list; address an item by name or index (cable[0])"
    ]
    with pytest.raises(SceneError, match="scale is a value, not a table"):
        get_value(example, "body.finger.scale.x")


def test_changing_the_mesh_resolves_and_checks_the_new_path(example, tmp_path: Path) -> None:
    set_value(example, "body.finger.mesh", "../meshes/other.vtu")
    assert example.bodies[0].mesh_path == (tmp_path / "meshes" / "other.vtu").resolve()
    missing = (tmp_path / "meshes" / "gone.vtu").resolve()
    assert error_lines(example, "body.finger.mesh", "../meshes/gone.vtu") == [
        f"finger.toml: body.finger.mesh: file not found: {missing}"
    ]


def test_renaming_keeps_names_unique(example) -> None:
    assert error_lines(example, "body.finger.effector.tip.name", "cavity") == [
        'finger.toml: body.finger.effector.tip.name: duplicate actuator/effector name "cavity" '
        "(also used by body[0].cavity[0])"
    ]
    set_value(example, "body.finger.name", "index")
    assert get_value(example, "body.index.cable.cable.minForce") == 0.0


def test_setting_a_selector_replaces_the_other_one(example) -> None:
    region = example.bodies[0].fixed[0]
    assert error_lines(example, "body.finger.fixed[0].box", None) == [
        "finger.toml: body[0].fixed[0]: one of box, sphere, set, indices, halfspace is required"
    ]
    set_value(example, "body.finger.fixed[0].sphere", SphereSpec(center=(0.0, 0.0, 0.0), radius=3.0))
    assert (
        region.to_selector() == {"sphere": {"center": (0.0, 0.0, 0.0), "radius": 3.0}} and region.box is None
    )
    set_value(example, "body.finger.fixed[0].sphere.radius", "4.5")
    assert region.sphere.radius == 4.5
    set_value(example, "body.finger.fixed[0].set", "base")
    assert (region.set, region.sphere) == ("base", None)
    set_value(example, "body.finger.cable.cable.indices", "[4, 8, 9]")
    assert (example.bodies[0].cables[0].indices, example.bodies[0].cables[0].points) == ((4, 8, 9), None)


def test_set_values_changes_an_obstacle_type_at_once(example) -> None:
    obstacle = example.obstacles[0]
    assert error_lines(example, "obstacle.obstacle0.type", "sphere") == [
        "finger.toml: obstacle[0].center: missing; type sphere needs center, radius",
        "finger.toml: obstacle[0].radius: missing; type sphere needs center, radius",
        "finger.toml: obstacle[0].normal: not used by type sphere (it uses center, radius)",
        "finger.toml: obstacle[0].point: not used by type sphere (it uses center, radius)",
    ]
    set_values(
        example,
        {
            "obstacle.obstacle0.type": "sphere",
            "obstacle.obstacle0.point": None,
            "obstacle.obstacle0.normal": None,
            "obstacle.obstacle0.center": "[0, -30, 0]",
            "obstacle.obstacle0.radius": "10",
        },
    )
    assert (obstacle.type, obstacle.center, obstacle.radius, obstacle.normal) == (
        "sphere",
        (0, -30, 0),
        10,
        None,
    )
    assert validate_spec(example) == example


def test_list_parameters_uses_names_and_round_trips_through_get_value(example) -> None:
    parameters = dict(list_parameters(example))
    assert parameters["body.finger.cable.cable.value"] == 0.0
    assert parameters["body.finger.material.region[0].youngModulus"] == 1500.0
    assert parameters["body.finger.cable.cable.maxForce"] is None
    assert parameters["solver.constraint.spectralCorrectionFactor"] == 1.0
    assert parameters["obstacle.obstacle0.normal"] == (0.0, 1.0, 0.0)
    # scene 5, body 7 (with collisionGroup), material 7, region 4, fixed 13 (with the servo keys actuated, minAngle,
    # maxAngle and maxAngleVariation), force 7, cable 13, cavity 12, effector 8, obstacle 14, newton 10, linear 5,
    # constraint 13, dynamic 4, inverse 1 (the unset table), drag 1, collision 1 (unset)
    assert len(parameters) == 133  # 6 keys declared for the Newton and dynamic solvers, body.collisionGroup
    for path, value in parameters.items():
        assert get_value(example, path) == value


def test_dump_then_parse_gives_an_equal_scene(example) -> None:
    text = dump_scene(example)
    assert tomllib.loads(text)["body"][0]["cable"][0]["minForce"] == 0.0
    again = parse_scene(text, source=example.source, base_dir=example.base_dir)
    assert again == example
    assert again.bodies[0].mesh == "../meshes/finger.vtu"


def test_round_trip_keeps_edited_values(example, tmp_path: Path) -> None:
    set_value(example, "solver.constraint.spectralCorrectionFactor", "0.8")
    set_value(example, "body.finger.cable.cable.maxForce", float("inf"))
    set_value(example, "body.finger.effector.tip.weight", 0.1 + 0.2)  # 0.30000000000000004 survives
    set_value(example, "scene.name", 'quote " backslash \\ tab \t unicode é')
    path = tmp_path / "scenes" / "edited.toml"
    save_scene(example, path)
    again = load_scene(path)
    assert again == example
    assert again.solver.constraint.spectralCorrectionFactor == 0.8
    assert again.bodies[0].cables[0].maxForce == float("inf")
    assert again.bodies[0].effectors[0].weight == 0.30000000000000004
    assert again.scene.name == 'quote " backslash \\ tab \t unicode é'
    assert again.bodies[0].mesh == "../meshes/finger.vtu"  # same directory: paths kept as written


def test_saving_far_away_writes_the_mesh_path_absolute(example, tmp_path: Path) -> None:
    """Three directories up and down again (a scene saved outside its project): an absolute path, not
    ``../../../meshes/finger.vtu``; it still loads the same mesh."""
    target = tmp_path / "a" / "b" / "c"
    target.mkdir(parents=True)
    save_scene(example, target / "copy.toml")
    data = tomllib.loads((target / "copy.toml").read_text())
    assert data["body"][0]["mesh"] == (tmp_path / "meshes" / "finger.vtu").resolve().as_posix()
    assert load_scene(target / "copy.toml") == example


def test_saving_elsewhere_rewrites_paths_relative_to_the_new_file(example, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "deeper"
    target.mkdir(parents=True)
    save_scene(example, target / "copy.toml")
    assert sorted(os.listdir(target)) == ["copy.toml"]  # no temporary file left behind
    data = tomllib.loads((target / "copy.toml").read_text())
    assert data["body"][0]["mesh"] == "../../meshes/finger.vtu"
    assert data["body"][0]["cavity"][0]["surface"] == "../../meshes/cavity.stl"
    again = load_scene(target / "copy.toml")
    assert again == example
    assert (
        again.bodies[0].mesh_path == example.bodies[0].mesh_path == (tmp_path / "meshes/finger.vtu").resolve()
    )
    assert again.base_dir == target.resolve()


def test_save_replaces_an_existing_file(example, tmp_path: Path) -> None:
    path = tmp_path / "scenes" / "finger.toml"
    set_value(example, "drag.compliance", "0.01")
    save_scene(example, path)
    assert load_scene(path).drag.compliance == 0.01
    assert sorted(os.listdir(path.parent)) == ["finger.toml"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes and symbolic links")
def test_save_keeps_the_mode_and_writes_through_a_symbolic_link(example, tmp_path: Path) -> None:
    path = tmp_path / "scenes" / "finger.toml"
    os.chmod(path, 0o664)
    set_value(example, "drag.compliance", "0.01")
    save_scene(example, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o664  # not mkstemp's 0600
    link = tmp_path / "scenes" / "current.toml"
    link.symlink_to("finger.toml")
    set_value(example, "drag.compliance", "0.02")
    save_scene(example, link)
    assert link.is_symlink() and os.readlink(link) == "finger.toml"
    assert load_scene(path).drag.compliance == 0.02 and stat.S_IMODE(path.stat().st_mode) == 0o664
    assert sorted(os.listdir(path.parent)) == ["current.toml", "finger.toml"]


def test_round_trip_of_obstacles_and_regions(tmp_path: Path) -> None:
    text = (
        '[[obstacle]]\ntype = "box"\nmin = [-1, -2, -3]\nmax = [1, 0, 3]\n'
        '[[obstacle]]\ntype = "capsule"\na = [0, 0, 0]\nb = [0, 1, 0]\nradius = 0.25\n'
    )
    (tmp_path / "finger.vtu").write_text("dummy")
    text += (
        '[[body]]\nmesh = "finger.vtu"\n'
        "[body.material]\nyoungModulus = 1e3\npoissonRatio = -0.2\nmassDensity = 1e3\n"
        "[[body.fixed]]\nhalfspace = { point = [0, 0, 0], normal = [0, -1, 0] }\n"
        "[[body.fixed]]\nindices = [3, 1]\n"
        '[[body.force]]\nset = "inner"\npressure = -2.5\n'
        '[[body.cavity]]\nset = "inner"\nvalueType = "volumeGrowth"\nminVolumeGrowth = -1.0\n'
    )
    spec = parse_scene(text, base_dir=tmp_path)
    again = parse_scene(dump_scene(spec), base_dir=tmp_path)
    assert again == spec
    assert again.obstacles[0].center == (0.0, -1.0, 0.0) and again.obstacles[0].halfExtents == (1.0, 1.0, 3.0)
    assert again.bodies[0].fixed[1].indices == (3, 1) and again.bodies[0].material.poissonRatio == -0.2


def test_validate_spec_checks_values_changed_in_python(example) -> None:
    example.solver.constraint.sor = 3.0
    example.bodies[0].cables[0].value = "5"
    with pytest.raises(SceneError) as info:
        validate_spec(example)
    assert info.value.errors == [
        'finger.toml: body[0].cable[0].value: expected a number, got "5"',
        "finger.toml: solver.constraint.sor: 3.0 is outside (0, 2)",
    ]


def test_any_wrong_value_anywhere_is_a_scene_error(example) -> None:
    """Replace every key of the example, one at a time, by values of the wrong shape: the loader reports a
    SceneError naming the file (never another exception)."""
    base = to_data(example)

    def key_paths(node, prefix=()):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            if isinstance(key, str):
                yield prefix + (key,)
            yield from key_paths(child, prefix + (key,))

    paths = list(key_paths(base))
    assert len(paths) == 110  # one more since the fixed table has the servo keys (7341fca)
    rejected = 0
    for path in paths:
        for wrong in ("x", [[1]], {"a": 1}, [{"b": 2}]):
            data = copy.deepcopy(base)
            table = data
            for key in path[:-1]:
                table = table[key]
            table[path[-1]] = wrong
            try:
                parse_data(data, source="f.toml", base_dir=example.base_dir)
            except SceneError as error:
                rejected += 1
                assert error.errors and all(line.startswith("f.toml: ") for line in error.errors)
    # Only the 6 names accept "x" (scene, body, cable, cavity, effector, obstacle); the cavity surface "x"
    # is a file that does not exist.
    assert rejected == 4 * len(paths) - 6


def test_constraint_solver_ranges_in_the_scene_file_match_the_solvers():
    """A value the scene file accepts must be one the solver accepts (the GUI validates with the file's rules)."""
    from softsim.mechanics.constraint_solvers import make_constraint_solver
    from softsim.mechanics.scene import SceneError, parse_scene, set_value

    spec = parse_scene("[solver.constraint]\ntype = 'ImprovedJacobi'\n", check_files=False)
    for key, too_big, largest in (("spectralCorrectionFactor", 10.5, 10.0),
                                  ("conjugateResidueSpeedFactor", 1001.0, 1000.0),
                                  ("maxIterations", 10_000_001, 10_000_000)):
        with pytest.raises(SceneError, match=key):
            set_value(spec, f"solver.constraint.{key}", too_big)
        set_value(spec, f"solver.constraint.{key}", largest)
        make_constraint_solver("ImprovedJacobi", **{key: largest})


def test_save_keeps_the_users_comments_key_order_and_layout(tmp_path: Path) -> None:
    mesh = (Path(__file__).resolve().parents[2] / "resources" / "meshes" / "cube.vtu").as_posix()
    text = f"""# my cube, tuned by hand
[[body]]
mesh = "{mesh}"
name = "cube"   # the name comes second here

  [body.material]
  poissonRatio = 0.3      # silicone-ish
  youngModulus = 100.0
  # the base is fixed
  [[body.fixed]]
  box = [-1.0, -1.0, -1.0, 1.0, 0.001, 1.0]

[solver.newton]
newton_iterations = 7  # enough here
"""
    path = tmp_path / "cube.toml"
    path.write_text(text, encoding="utf-8")
    spec = load_scene(path)
    set_value(spec, "body.cube.material.youngModulus", 250.0)
    save_scene(spec, path)
    saved = path.read_text(encoding="utf-8")
    for line in ("# my cube, tuned by hand", 'name = "cube"   # the name comes second here',
                 "poissonRatio = 0.3      # silicone-ish", "# the base is fixed",
                 "newton_iterations = 7  # enough here"):
        assert line in saved
    assert "youngModulus = 250.0" in saved and "youngModulus = 100.0" not in saved
    assert saved.index("mesh =") < saved.index("name =") < saved.index("[body.material]")
    assert saved.index("poissonRatio") < saved.index("youngModulus")
    assert load_scene(path) == spec


#: values tried on every key: right and wrong kinds, in and out of range, command-line strings
_TRIED = (-1.0, 0.0, 0.3, 2, 7.5, 1e30, float("nan"), "abc", "0.4", "[0, 1, 0]", [1.0, 2.0], [0.0, 1.0, 0.0],
          [[1.0, 2.0, 3.0]], True, "force", "pressure", [0, 1, 2, 3])


def _outcome(set_values_function, spec, path, value):
    """The spec after the edit as TOML data, or the refusal's messages (the spec then unchanged)."""
    trial = copy.deepcopy(spec)
    try:
        set_values_function(trial, {path: value})
    except SceneError as error:
        assert trial == spec
        return ("refused", error.errors)
    return ("set", to_data(trial), trial.warnings)


def _set_with_an_unchanged_key(spec, values):
    """``set_values`` of one value together with another key set to its own value: an edit of two values, which
    the whole scene read again validates."""
    (path, value), = values.items()
    other = "scene.dt" if path == "scene.units" else "scene.units"
    set_values(spec, {path: value, other: get_value(spec, other)})


@pytest.mark.parametrize("scene", ["finger", "gripper_object", "trunk_inverse"])
def test_one_value_validated_on_its_own_agrees_with_reading_the_whole_scene_again(scene, monkeypatch) -> None:
    """Every key of a shipped scene, set to right and wrong values: the edit of one value (validated alone when
    no scene-wide rule reads its key) stores the same scene, or refuses with the same messages, as the whole
    scene written out and read again by the loader (the same value set together with an unchanged key)."""
    import softsim.mechanics.scene.edit as edit

    readings = []
    parse = edit.parse_data

    def counted(*args, **kwargs):
        readings.append(1)
        return parse(*args, **kwargs)

    monkeypatch.setattr(edit, "parse_data", counted)
    spec = load_scene(Path(__file__).resolve().parents[2] / "resources" / "scenes" / f"{scene}.toml")
    keys = list_parameters(spec)
    for path, _value in keys:
        for value in _TRIED:
            alone = _outcome(set_values, spec, path, value)
            again = _outcome(_set_with_an_unchanged_key, spec, path, value)
            assert alone == again, (path, value)
    # most keys are checked alone (the comparison is not between two readings of the whole scene)
    del readings[:]
    for path, value in keys:
        if value is not None:
            set_value(copy.deepcopy(spec), path, value)
    alone = len(keys) - sum(value is None for _path, value in keys) - len(readings)
    assert alone >= 0.5 * len(keys) > 40


def test_a_bad_value_is_refused_alone_with_the_loaders_message_without_reading_the_scene(example, monkeypatch):
    """A value checked on its own: refused with the loader's message, the table's rule between two keys included,
    and the scene is not written out and read again for it (its cost does not grow with the scene)."""
    import softsim.mechanics.scene.edit as edit

    def never(*_args, **_kwargs):
        raise AssertionError("the whole scene was read again for one value")

    monkeypatch.setattr(edit, "parse_data", never)  # the loader reading the whole scene
    assert error_lines(example, "body.finger.material.poissonRatio", "0.7") == [
        "finger.toml: body.finger.material.poissonRatio: 0.7 is outside (-1, 0.5)"
    ]
    assert error_lines(example, "body.finger.cable.cable.maxForce", -1.0) == [
        "finger.toml: body[0].cable[0].minForce: 0 is greater than maxForce = -1"
    ]
    set_value(example, "body.finger.cable.cable.maxForce", 2.0)
    assert error_lines(example, "body.finger.cable.cable.minForce", "5") == [
        "finger.toml: body.finger.cable.cable.minForce: 5 is greater than maxForce = 2"
    ]
    set_value(example, "body.finger.cable.cable.value", 3.5)
    assert get_value(example, "body.finger.cable.cable.value") == 3.5
    # a key a scene-wide rule reads (a name: unique in the scene) is checked by reading the whole scene again
    with pytest.raises(AssertionError, match="read again"):
        set_value(example, "body.finger.cable.cable.name", "tip")


def test_an_undo_point_puts_the_scene_back_after_any_edit(example) -> None:
    """undo_point (what Scene.set keeps instead of a copy of the whole scene): after an edit of one value, of an
    exclusive selector (read again with the whole scene), of a table's type and of a key of an optional table
    not set yet, the function puts back a scene equal to a copy taken before."""
    edits = [
        {"body.finger.material.youngModulus": 1234.0},
        {"body.finger.cable.cable.value": "3.5"},
        {"body.finger.fixed[0].sphere": SphereSpec(center=(0.0, 0.0, 0.0), radius=3.0)},
        {"body.finger.fixed[0].set": "base"},
        {"body.finger.cable.cable.indices": "[4, 8, 9]"},
        {"obstacle.obstacle0.type": "sphere", "obstacle.obstacle0.point": None, "obstacle.obstacle0.normal": None,
         "obstacle.obstacle0.center": "[0, -30, 0]", "obstacle.obstacle0.radius": "10"},
        {"solver.inverse.epsilon": "0.5"},
        {"scene.gravity": "[0, 0, -9810]"},
    ]
    for values in edits:
        before = copy.deepcopy(example)
        undo = [undo_point(example, path) for path in values]
        set_values(example, values)
        assert example != before, values
        for restore in reversed(undo):
            restore()
        assert example == before, values
        assert validate_spec(example) == before


def test_an_edit_the_running_solver_refuses_leaves_the_scene_as_it_was() -> None:
    """Scene.set when the schema accepts a value but the running object refuses it (the asynchronous solver
    needs a tolerance <= 1e-2): the scene's spec is put back, equal to a copy taken before the edit."""
    from softsim.mechanics import Scene

    scene = Scene.load(Path(__file__).resolve().parents[2] / "resources" / "scenes" / "finger.toml")
    scene.set("solver.linear.type", "async")
    before = copy.deepcopy(scene.spec)
    with pytest.raises(SceneError, match="residual_tolerance_threshold must be in"):
        scene.set("solver.linear.residual_tolerance_threshold", 0.5)
    assert scene.spec == before
    scene.simulation.newton.linear_solver.close()
