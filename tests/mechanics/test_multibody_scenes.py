"""Several deformable bodies in one scene: composite DOFs, per-body edits, attachments, the gripper scene."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from softsim.app.cli import main as cli_main
from softsim.mechanics.scene import SceneError, parse_data
from softsim.mechanics.scene_runtime import Scene

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"


def _finger_and_cube(*, mode="dynamic", attach=True, cube_fixed=False, cable=8.0) -> Scene:
    data = tomllib.loads((SCENES / "finger.toml").read_text())
    data["scene"]["mode"] = mode
    data["solver"]["constraint"]["type"] = "exact"
    data["solver"]["dynamic"] = {"rayleighStiffness": 0.1}
    data["body"][0]["cable"][0]["value"] = cable
    cube = {"name": "cube", "mesh": "../meshes/cube.vtu", "scale": 0.5, "translation": [-113.0, 2.5, 2.5],
            "material": {"model": "corotational", "youngModulus": 300.0, "poissonRatio": 0.4, "totalMass": 0.01}}
    if cube_fixed:
        cube["fixed"] = [{"box": [-114.0, 0.0, 0.0, -110.0, 20.0, 20.0]}]
    data["body"].append(cube)
    if attach:
        data["attachment"] = [{"name": "glue", "bodyA": "cube", "bodyB": "finger",
                               "box": [-103.1, 2.0, 2.0, -102.9, 13.0, 13.0]}]
    return Scene(parse_data(data, source=str(SCENES / "two_bodies.toml"), base_dir=SCENES))


def test_second_body_leaves_the_first_bodys_solution_unchanged() -> None:
    """A separate, fixed second body: the finger's cable frame is the single-body one (same numbers)."""
    single = Scene.load(SCENES / "finger.toml")
    single.set("body.finger.cable.cable.value", 8.0)
    single.run(3)
    double = _finger_and_cube(mode="static", attach=False, cube_fixed=True)
    double.run(3)
    n = single.mesh.n_points
    assert double.simulation.x.shape == (n + 343, 3)
    assert np.max(np.abs(double.simulation.x[:n] - single.simulation.x)) < 1e-8
    assert double.outputs()["cable.force"] == pytest.approx(single.outputs()["cable.force"], rel=1e-9)
    assert len(double.meshes) == 2 and double.mesh.n_tets == single.mesh.n_tets + 1296


def test_attached_cube_follows_the_pulled_finger_in_dynamic_mode() -> None:
    scene = _finger_and_cube()
    glue = scene.simulation.constraint("glue")
    nodes_a = glue.nodes_a + scene.node_offsets[1]
    nodes_b = glue.nodes_b + scene.node_offsets[0]
    rest = glue.rest_vector.copy()
    assert glue.nodes_a.size == 49
    scene.run(15)
    x = scene.simulation.x
    gap = x[nodes_b] - x[nodes_a] - rest
    assert np.max(np.linalg.norm(gap, axis=1)) < 1e-6  # hard glue holds (measured ~1e-12)
    assert scene.outputs()["cable.displacement"] == pytest.approx(8.0, abs=0.05)
    tip_motion = x[nodes_b].mean(axis=0) - scene.simulation.X[nodes_b].mean(axis=0)
    cube = slice(int(scene.node_offsets[1]), None)
    cube_motion = x[cube].mean(axis=0) - scene.simulation.X[cube].mean(axis=0)
    assert np.linalg.norm(tip_motion) > 5.0  # the finger curled (mm)
    assert tip_motion[1] > 5.0 and cube_motion[1] > 0.5 * tip_motion[1]  # the cube went up with the tip


def test_material_edits_reach_the_addressed_body() -> None:
    scene = _finger_and_cube(mode="static", attach=False, cube_fixed=True)
    finger, cube = scene.elasticities
    scene.set("body.cube.material.youngModulus", 450.0)
    assert np.all(cube.young == 450.0) and np.all(finger.young == 600.0)
    scene.set("body.finger.material.poissonRatio", 0.3)
    assert np.all(finger.poisson == 0.3) and np.all(cube.poisson == 0.4)
    scene.set("body.finger.cable.cable.value", 3.0)
    assert scene.simulation.constraint("cable").value == 3.0


def test_free_body_in_static_mode_is_a_clear_error() -> None:
    with pytest.raises(SceneError, match="body 'cube' has no fixed nodes.*dynamic"):
        _finger_and_cube(mode="static")
    scene = _finger_and_cube(mode="dynamic")
    with pytest.raises(SceneError, match="cube"):
        scene.set("scene.mode", "static")
    assert scene.simulation.mode == "dynamic"


def test_attachment_errors_name_the_key() -> None:
    data = tomllib.loads((SCENES / "gripper_object.toml").read_text())
    data["attachment"][0]["bodyB"] = "hand"
    with pytest.raises(SceneError, match=r"attachment\.glue\.bodyB: no body named 'hand'"):
        Scene(parse_data(data, source=str(SCENES / "g.toml"), base_dir=SCENES))


def test_gripper_object_scene_runs_headless_without_going_through_the_floor() -> None:
    scene = Scene.load(SCENES / "gripper_object.toml")
    assert [m.n_points for m in scene.meshes] == [440, 440, 343]
    contact_distance = scene.spec.obstacles[0].contactDistance
    for _ in range(20):
        report = scene.step()
        assert report.ok, report.message
        x = scene.simulation.x
        assert np.all(np.isfinite(x))
        assert x[:, 1].min() >= -30.0 + contact_distance - 1e-3 - 0.1
    outputs = scene.outputs()
    assert outputs["cable_finger1.displacement"] == pytest.approx(10.0, abs=0.3)
    assert outputs["cable_finger2.displacement"] == pytest.approx(10.0, abs=0.3)
    assert outputs["glue.maxViolation"] < 0.01  # compliance 1e-5 mm/mN x ~100 mN
    assert np.max(np.abs(scene.simulation.x - scene.simulation.X)) < 60.0  # bounded (mm)
    cube = scene.simulation.x[int(scene.node_offsets[2]):]
    assert cube[:, 1].min() < -28.0  # the cube was pressed onto the floor


def test_softsim_check_accepts_the_gripper_object_scene() -> None:
    assert cli_main(["check", str(SCENES / "gripper_object.toml")]) == 0
