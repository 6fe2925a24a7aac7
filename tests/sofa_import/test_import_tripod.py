"""Tripod's steps 4 and 5 imported as they are (issue 31): the servo arms' rigidified groups of nodes become fixed
regions turned by the servo angle, the scene's animation becomes keyframes, and TripodController's keys turn the
servos through the written controller script.

The expected nodes, axes and centres come from tripod.py's own numbers (``__getTransform``: servo i at
``[60 sin(120 i + 180), -1.35, 60 cos(120 i + 180)]`` turned by ``120 i`` degrees about y, its wheel turning about
the servo's x axis; the rigidified box 25 above it, ``scale [45, 15, 30]``), computed here with numpy and scipy,
not with the importer's code."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim.app.sofa_import import import_scene, write_import
from softsim.mechanics.scene_runtime import Scene

TRIPOD = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "sofa" / "Tripod" / "details"


def imported(name: str, tmp_path: Path):
    out = tmp_path / (Path(name).stem + ".toml")
    result = import_scene(TRIPOD / name, out)
    write_import(result, out)
    return result


def servo(i: int) -> tuple[np.ndarray, Rotation]:
    """Servo i's position and orientation (tripod.py's __getTransform with radius 60, three motors)."""
    turn = math.radians(120.0 * i + 180.0)
    return np.array([60 * math.sin(turn), -1.35, 60 * math.cos(turn)]), Rotation.from_euler("y", 120.0 * i,
                                                                                             degrees=True)


def box_nodes(points: np.ndarray, i: int) -> np.ndarray:
    """The nodes in arm i's oriented box: centred 25 above the servo, turned with it, 45 x 15 x 30."""
    position, orientation = servo(i)
    local = orientation.inv().apply(points - (position + [0.0, 25.0, 0.0]))
    return np.flatnonzero(np.all(np.abs(local) <= np.array([22.5, 7.5, 15.0]) + 1e-9, axis=1))


def test_step4_servo_groups_become_turning_fixed_regions(tmp_path):
    result = imported("step4.py", tmp_path)
    spec, text = result.spec, result.report.text()
    body = spec.bodies[0]
    scene = Scene(spec)
    points = scene.model.rest_positions  # the placed mesh: GIDMeshLoader rotation [90, 0, 0], translation [0, 30, 0]
    assert len(body.fixed) == 3
    for i, region in enumerate(body.fixed):
        position, orientation = servo(i)
        expected = box_nodes(points, i)
        assert len(expected) in (18, 19)
        np.testing.assert_array_equal(sorted(region.indices), expected)
        np.testing.assert_allclose(region.axis, orientation.apply([1.0, 0.0, 0.0]), atol=1e-9)
        np.testing.assert_allclose(region.center, position, atol=1e-9)
        assert region.angle == 0.0  # ActuatedArm's angleIn default
    # step4's animate: arm.angleIn = -factor * pi / 4 over 1 s, as keyframes in degrees
    assert [(c.key, c.keyframes) for c in spec.controllers] == [
        (f"body.MechanicalModel.fixed[{i}].angle", ((0.0, 0.0), (1.0, -45.0))) for i in range(3)]
    # the centre's SphereROI (centre [0, 30, 0], radius 7.5) is a free rigid frame: reported, its nodes deformable
    centre = np.flatnonzero(np.linalg.norm(points - [0.0, 30.0, 0.0], axis=1) <= 7.5)
    assert f"the {len(centre)} nodes of MechanicalModel it carries rigidly stay deformable" in text
    assert "/Modelling/Tripod/RigidifiedStructure/FreeCenter/dofs" in text
    assert "not translated, matters for the mechanics (1)" in text.lower()


def test_step4_runs_and_turns_the_arms_by_45_degrees(tmp_path):
    """110 frames of 10 ms in dynamic mode, every one converged; after the 1 s animation each group sits where a
    rotation by -45 degrees about its servo's axis puts it (scipy's rotation, to 1e-9)."""
    scene = Scene(imported("step4.py", tmp_path).spec)
    points = scene.model.rest_positions
    for _ in range(110):
        report = scene.step()
        assert report.ok and report.converged, report.message
    for i in range(3):
        position, orientation = servo(i)
        nodes = box_nodes(points, i)
        turn = Rotation.from_rotvec(math.radians(-45.0) * orientation.apply([1.0, 0.0, 0.0]))
        np.testing.assert_allclose(scene.positions[nodes], position + turn.apply(points[nodes] - position), atol=1e-9)
    # the arms lift the body against gravity: the centre rises (measured +1.31 mm after 1.1 s; a sanity check, SOFA
    # itself was not run)
    centre = np.flatnonzero(np.linalg.norm(points - [0.0, 30.0, 0.0], axis=1) <= 7.5)
    lift = float((scene.positions[centre, 1] - points[centre, 1]).mean())
    assert lift > 0.5


def test_step5_tripod_controller_turns_the_servos(tmp_path):
    """TripodController, unmodified: the up arrow turns arm 0 by +0.1 rad from its angleOut, left arm 1, '+' arm 2,
    the down arrow back; 'A' starts an animation at run time, which softsim refuses by name."""
    spec = imported("step5.py", tmp_path).spec
    scene = Scene(spec)
    script = runpy.run_path(str(spec.controllers[0].script_path))
    step = math.degrees(0.1)
    script["on_key"](scene, "Up")
    script["on_key"](scene, "Up")
    script["on_key"](scene, "Left")
    script["on_key"](scene, "+")
    script["on_key"](scene, "-")
    script["on_key"](scene, "-")
    angles = [scene.get(f"body.MechanicalModel.fixed[{i}].angle") for i in range(3)]
    assert angles == pytest.approx([2 * step, step, -step], abs=1e-12)
    script["on_key"](scene, "Down")
    assert scene.get("body.MechanicalModel.fixed[0].angle") == pytest.approx(step, abs=1e-12)
    assert scene.step().converged
    with pytest.raises(RuntimeError, match="animations createScene starts"):
        script["on_key"](scene, "A")
