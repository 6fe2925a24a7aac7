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
import shutil
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
    # the centre's SphereROI (centre [0, 30, 0], radius 7.5) is carried by a free rigid frame: a rigid group
    centre = np.flatnonzero(np.linalg.norm(points - [0.0, 30.0, 0.0], axis=1) <= 7.5)
    (group,) = body.rigidGroups
    np.testing.assert_array_equal(group.indices, centre)
    assert (f"/Modelling/Tripod/RigidifiedStructure/FreeCenter/dofs: a free rigid frame (nothing holds or drives "
            f"it) carrying {len(centre)} nodes of MechanicalModel: body.MechanicalModel.rigidGroup[0]") in text
    assert "matters for the mechanics" not in text.lower()


def test_step4_runs_and_turns_the_arms_by_45_degrees(tmp_path):
    """110 frames of 10 ms in dynamic mode, every one converged; after the 1 s animation each group sits where a
    rotation by -45 degrees about its servo's axis puts it (scipy's rotation, to 1e-9), and the free centre's
    nodes are a rigid motion of their rest positions (1e-6 mm)."""
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
    # the arms lift the body against gravity: the centre rises (measured +1.24 mm after 1.1 s, +1.31 while the
    # centre was deformable; a sanity check, SOFA itself was not run)
    centre = np.flatnonzero(np.linalg.norm(points - [0.0, 30.0, 0.0], axis=1) <= 7.5)
    lift = float((scene.positions[centre, 1] - points[centre, 1]).mean())
    assert lift > 0.5
    now, rest = scene.positions[centre], points[centre]
    turn, _ = Rotation.align_vectors(now - now.mean(axis=0), rest - rest.mean(axis=0))  # scipy's best rotation
    assert np.abs(turn.apply(rest - rest.mean(axis=0)) - (now - now.mean(axis=0))).max() < 1e-6


def test_step5_tripod_controller_turns_the_servos(tmp_path):
    """TripodController, unmodified: the up arrow turns arm 0 by +0.1 rad from its angleOut, left arm 1, '+' arm 2,
    the down arrow back; 'A' starts the initial-pose animation at run time (test_step8_keys)."""
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


ANIMATED = '''
from splib3.animation import animate


def createScene(root):
    root.gravity = [0, -9810, 0]
    finger = root.addChild("finger")
    finger.addObject("EulerImplicitSolver")
    finger.addObject("MeshVTKLoader", name="loader", filename={mesh!r})
    finger.addObject("MeshTopology", src="@loader", name="container")
    finger.addObject("MechanicalObject", name="tetras")
    finger.addObject("UniformMass", totalMass=0.075)
    finger.addObject("TetrahedronFEMForceField", youngModulus=500, poissonRatio=0.3)
    finger.addObject("BoxROI", name="box", box=[-10, -1, -10, 0, 15, 20])
    finger.addObject("RestShapeSpringsForceField", points="@box.indices", stiffness=1e12)
    cable = finger.addChild("cable")
    cable.addObject("MechanicalObject", position=[[-17.5, 12.5, 2.5], [-32.5, 12.5, 2.5]])
    actuator = cable.addObject("CableConstraint", name="pull", indices=[0, 1], pullPoint=[0, 12.5, 2.5])
    cable.addObject("BarycentricMapping")

    def pull(target, factor):
        target.value = [10.0 * factor * factor]

    def pull_and_tilt(target, mass, factor):
        target.value = [factor]
        mass.totalMass = 0.075 * (1 + factor)

    animate(pull, {{"target": actuator}}, duration=2.0)
    animate(pull_and_tilt, {{"target": actuator, "mass": finger.UniformMass}}, duration=1.0)
    animate(pull, {{"target": actuator}}, duration=1.0, mode="loop")
'''


def test_animations_become_keyframes_or_are_reported(tmp_path):
    """A quadratic pull keeps its 21 samples (not on a line), a function that also changes an unbound field and a
    looping animation are reported with the reason; the recorded values are restored after sampling."""
    mesh = TRIPOD.parents[1] / "CableConstraint" / "mesh" / "finger.vtk"
    scene = tmp_path / "animated.py"
    scene.write_text(ANIMATED.format(mesh=str(mesh)))
    result = import_scene(scene, tmp_path / "animated.toml")
    (controller,) = result.spec.controllers
    assert controller.key == "body.finger.cable.pull.value"
    times = [t for t, _ in controller.keyframes]
    np.testing.assert_allclose(times, np.linspace(0.0, 2.0, 21))
    np.testing.assert_allclose([v for _, v in controller.keyframes], 10.0 * (np.asarray(times) / 2.0) ** 2)
    text = result.report.text()
    assert "'pull_and_tilt' (1.0 s) is not run: it also changes /finger/UniformMass.totalMass" in text
    assert "'pull' (1.0 s) is not run: mode 'loop'" in text
    assert result.spec.bodies[0].material.totalMass == 0.075 and result.spec.bodies[0].cables[0].value == 0.0


def test_step6_initial_pose_animation_slides_and_turns_the_servos(tmp_path):
    """step6's TripodController.initTripod('A') animates, over 0.2 s, each servo base 35 mm along its forward axis
    (RigidDof.setPosition of ServoBody/dofs) and its angle to -1.4965 rad: keyframes of the region's translation
    and angle. 25 frames converge and hold each group at servo i moved by 35 f_i, turned by -85.74 degrees about
    its axis (scipy). JumpController's 'Z' sets every angle to -3.14 / 4 through the written script."""
    spec = imported("step6.py", tmp_path).spec
    keyframes = {c.key: c.keyframes for c in spec.controllers if c.key is not None}
    turn = math.degrees(-1.4965)
    for i in range(3):
        _, orientation = servo(i)
        forward = orientation.apply([0.0, 0.0, 1.0])
        assert keyframes[f"body.MechanicalModel.fixed[{i}].angle"] == ((0.0, 0.0), (0.2, pytest.approx(turn)))
        (t0, v0), (t1, v1) = keyframes[f"body.MechanicalModel.fixed[{i}].translation"]
        assert (t0, t1, v0) == (0.0, 0.2, (0.0, 0.0, 0.0))
        np.testing.assert_allclose(v1, 35.0 * forward, atol=1e-8)
    scene = Scene(spec)
    points = scene.model.rest_positions
    for _ in range(25):
        report = scene.step()
        assert report.ok and report.converged, report.message
    for i in range(3):
        position, orientation = servo(i)
        nodes = box_nodes(points, i)
        rotation = Rotation.from_rotvec(math.radians(turn) * orientation.apply([1.0, 0.0, 0.0]))
        expected = position + rotation.apply(points[nodes] - position) + 35.0 * orientation.apply([0.0, 0.0, 1.0])
        np.testing.assert_allclose(scene.positions[nodes], expected, atol=1e-9)
    script = runpy.run_path(str(spec.controllers[-1].script_path))
    script["on_key"](scene, "Z")
    for i in range(3):
        assert scene.get(f"body.MechanicalModel.fixed[{i}].angle") == pytest.approx(math.degrees(-3.14 / 4))


def test_servo_binding_conversions():
    from softsim.app.sofa_import.rigid import FRAME, FRAME_REST, RADIANS, RADIANS_VEC, from_scene, scene_key, to_scene

    angle = f"{RADIANS}body.b.fixed[0].angle"
    assert scene_key(angle) == "body.b.fixed[0].angle"
    assert to_scene(angle, [math.pi / 4]) == pytest.approx(45.0) and from_scene(angle, 90.0) == pytest.approx(
        math.pi / 2)
    q = Rotation.from_euler("y", 120.0, degrees=True).as_quat()
    origin = [1.0, 2.0, 3.0, *q]
    frame = f"{FRAME}{','.join(repr(float(v)) for v in origin)}:body.b.fixed[0].translation"
    assert scene_key(frame) == "body.b.fixed[0].translation"
    assert to_scene(frame, [[4.0, 2.0, 1.0, *q]]) == [3.0, 0.0, -2.0]
    np.testing.assert_allclose(from_scene(frame, [3.0, 0.0, -2.0]), [[4.0, 2.0, 1.0, *q]])
    with pytest.raises(ValueError, match="orientation changed"):
        to_scene(frame, [[1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]])
    joint = f"{RADIANS_VEC}body.b.fixed[0].angle"  # a joint-angle MechanicalObject's position: [[radians]]
    assert scene_key(joint) == "body.b.fixed[0].angle" and from_scene(joint, 90.0) == [[pytest.approx(math.pi / 2)]]
    assert to_scene(joint, [[math.pi / 4]]) == pytest.approx(45.0)
    rest = frame.replace(FRAME, FRAME_REST, 1)
    np.testing.assert_allclose(from_scene(rest, [5.0, 5.0, 5.0]), [origin])
    with pytest.raises(ValueError, match="read only"):
        to_scene(rest, [origin])


def test_step7_imports_without_the_robot(tmp_path):
    """step7.py looks for the Arduino's serial port (splib3.interface.serialport): softsim finds none, as splib3
    does on a computer without the robot, and reports the serial bridge; the initial-pose animation and the
    servo groups are translated as in step 6."""
    result = imported("step7.py", tmp_path)
    text = result.report.text()
    assert "/SerialPortBridgeGeneric (SerialPortBridgeGeneric): the serial link to the real robot's servos" in text
    assert "not translated, matters for the mechanics (1)" in text.lower()  # the bridge (the free centre is)
    keys = {c.key for c in result.spec.controllers if c.key is not None}
    assert keys == {f"body.MechanicalModel.fixed[{i}].{k}" for i in range(3) for k in ("angle", "translation")}


# ---------------------------------------------------------------- step 8: inverse control of the servos
RADIAN = 180.0 / math.pi


def test_step8_servos_become_actuated_and_the_centre_an_effector(tmp_path):
    """step8.py's JointActuators (minAngle -1.5, maxAngle 1.5, maxAngleVariation 0.1 rad) make the three servo
    regions actuated with those limits in degrees; the Rigid3 PositionEffector on the FreeCenter (useDirections
    [1, 1, 1, 0, 0, 0], goal the Goal node's [0, 40, 0], maxShiftToTarget 5) becomes a centre effector on the
    free group's nodes carrying the frame's origin [0, 30, 0]."""
    result = imported("step8.py", tmp_path)
    spec, text = result.spec, result.report.text()
    body = spec.bodies[0]
    assert spec.solver.inverse is not None and spec.solver.inverse.active
    for region in body.fixed:
        assert region.actuated
        assert region.minAngle == pytest.approx(-1.5 * RADIAN, abs=1e-8)
        assert region.maxAngle == pytest.approx(1.5 * RADIAN, abs=1e-8)
        assert region.maxAngleVariation == pytest.approx(0.1 * RADIAN, abs=1e-8)
    (effector,) = body.centerEffectors
    (group,) = body.rigidGroups
    assert effector.indices == group.indices
    assert effector.point == (0.0, 30.0, 0.0)
    assert effector.effectorGoal == (0.0, 40.0, 0.0)
    assert effector.axis == (1, 1, 1)
    assert effector.limitShiftToTarget and effector.maxShiftToTarget == 5.0
    assert "JointActuator" not in text.split("Not translated")[-1]
    assert "PositionEffector" not in text.split("Not translated")[-1]
    assert "SOFA starts it deactivated" in text


def test_step8_inverse_reaches_the_goal_from_the_initial_pose(tmp_path):
    """The tutorial's order: the initial pose first (step 6's 'A' animation: each servo slid 35 mm forward and
    turned to -1.4965 rad, from tripod.py's numbers), walked in 30 forward frames, then the inverse frames. Every
    frame converges, no frame turns a servo by more than maxAngleVariation (0.1 rad), and within 8 frames the
    FreeCenter's origin is on the goal [0, 40, 0] to 1e-4 mm: checked independently by scipy's best rotation of
    the free group's nodes carrying the origin (not the effector's affine weights)."""
    scene = Scene(imported("step8.py", tmp_path).spec)
    rest = scene.model.rest_positions
    group = np.asarray(scene.spec.bodies[0].rigidGroups[0].indices)
    walk_to_initial_pose(scene)
    angles = [[scene.get(f"body.MechanicalModel.fixed[{i}].angle") for i in range(3)]]
    for _ in range(8):
        report = scene.step()
        assert report.ok and report.converged, report.message
        angles.append([scene.get(f"body.MechanicalModel.fixed[{i}].angle") for i in range(3)])
    assert np.abs(np.diff(angles, axis=0)).max() <= 0.1 * RADIAN + 1e-9
    now = scene.positions[group]
    turn, _ = Rotation.align_vectors(now - now.mean(axis=0), rest[group] - rest[group].mean(axis=0))
    origin = now.mean(axis=0) + turn.apply(np.array([0.0, 30.0, 0.0]) - rest[group].mean(axis=0))
    np.testing.assert_allclose(origin, [0.0, 40.0, 0.0], atol=1e-4)
    assert scene.outputs()["effector.distance"] < 1e-4
    assert all(-1.5 * RADIAN <= a <= 1.5 * RADIAN for a in angles[-1])


def test_step8_as_imported_settles_at_the_nearest_reachable_point(tmp_path):
    """Run as imported, without the initial pose, the goal y = 40 is out of reach (the centre rises to about 33.57
    mm when the servos turn about -22.6 degrees): 8 frames all converge and the distance to the goal never grows
    (a step that would raise it is halved), ending above 6.4 mm."""
    scene = Scene(imported("step8.py", tmp_path).spec)
    distances = []
    for _ in range(8):
        report = scene.step()
        assert report.ok and report.converged, report.message
        distances.append(scene.outputs()["effector.distance"])
    assert all(b <= a + 1e-9 for a, b in zip(distances, distances[1:]))
    assert 6.4 < distances[-1] < 6.45


def test_step8_keys_release_the_servos_and_walk_to_the_initial_pose(tmp_path):
    """step8.py's controllers, unmodified, through the written script (then 'B', below). 'I' (InverseController):
    each servo's joint
    spring released (stiffness 0: the angle is the inverse model's, which the actuated regions are from the first
    frame) and the inverse nodes activated; the next frame converges. 'A' (DirectController): splib3's animate
    of setupanimation over 0.2 s, run by the following frames as splib3's AnimationManager runs it (factor 0 at
    the first, (t - t0) / 0.2 after): each servo base slides 35 mm forward and turns to -1.4965 rad (tripod.py),
    the factor checked at every frame, then the animation ends. The servo angles are output columns
    (MechanicalModel.fixed[i].angle, degrees) equal to the regions' angles."""
    spec = imported("step8.py", tmp_path).spec
    scene = Scene(spec)
    script = runpy.run_path(str(spec.controllers[-1].script_path))
    controllers = script["_CONTROLLERS"]
    script["on_key"](scene, "I")
    springs = [c for n in controllers.root.walk() for c in n.objects
               if getattr(c, "type", "") == "RestShapeSpringsForceField" and "Articulation" in c.getPathName()]
    assert len(springs) == 3 and all(c.data["stiffness"] == [0.0] for c in springs)
    assert all(scene.get(f"body.MechanicalModel.fixed[{i}].actuated") for i in range(3))
    report = scene.step()
    assert report.ok and report.converged, report.message
    outputs = scene.outputs()
    angles = [scene.get(f"body.MechanicalModel.fixed[{i}].angle") for i in range(3)]
    assert [outputs[f"MechanicalModel.fixed[{i}].angle"] for i in range(3)] == angles
    assert any(a != 0.0 for a in angles)  # the inverse frame turned the servos
    script["on_key"](scene, "A")
    start = scene.get("body.MechanicalModel.fixed[0].translation")
    forward = [servo(i)[1].apply([0.0, 0.0, 35.0]) for i in range(3)]
    for k in range(22):
        script["on_frame"](scene, 0.01 + 0.01 * k)
        factor = min(0.01 * k / 0.2, 1.0)
        for i in range(3):
            np.testing.assert_allclose(scene.get(f"body.MechanicalModel.fixed[{i}].translation"),
                                       forward[i] * factor, atol=1e-9)
            assert scene.get(f"body.MechanicalModel.fixed[{i}].angle") == pytest.approx(-1.4965 * RADIAN * factor,
                                                                                         abs=1e-9)
    assert start == pytest.approx((0.0, 0.0, 0.0)) and controllers.animations == []
    assert scene.outputs()["MechanicalModel.fixed[2].angle"] == pytest.approx(-1.4965 * RADIAN)
    # 'B' starts the serial communication: each frame the InverseController reads each joint angle
    # (Articulation/dofs.position[0][0], radians) and sends floor(degrees) + 179, clamped to [60, 180], to the
    # robot's port, whose packetOut softsim keeps and sends nowhere: -1.4965 rad is -85.74 degrees, so 93
    script["on_key"](scene, "B")
    script["on_frame"](scene, 0.3)
    (bridge,) = [c for n in controllers.root.walk() for c in n.objects if getattr(c, "type", "") ==
                 "SerialPortBridgeGeneric"]
    expected = min(max(math.floor(math.degrees(-1.4965)) + 179, 60), 180)
    assert expected == 93 and bridge.data["packetOut"] == [expected] * 3


def walk_to_initial_pose(scene: Scene, frames: int = 30) -> None:
    """The tutorial's 'A' animation (step 6): each servo slid 35 mm forward and turned to -1.4965 rad (tripod.py's
    numbers), walked in ``frames`` forward frames with the inverse model off, each converged; then the inverse
    model back on."""
    scene.set("solver.inverse.active", False)
    pose = {i: (servo(i)[1].apply([0.0, 0.0, 35.0]), -1.4965 * RADIAN) for i in range(3)}
    for k in range(1, frames + 1):
        for i, (slide, angle) in pose.items():
            scene.set(f"body.MechanicalModel.fixed[{i}].translation", (slide * k / frames).tolist())
            scene.set(f"body.MechanicalModel.fixed[{i}].angle", angle * k / frames)
        report = scene.step()
        assert report.ok and report.converged, report.message
    scene.set("solver.inverse.active", True)


def imported_step9(tmp_path: Path):
    """step9.py from a copy of the tutorial's folder: its CloseLoopController opens data/results/closedLoop.csv for
    writing while the scene is built (SoftRobots ships that folder)."""
    folder = tmp_path / "details"
    shutil.copytree(TRIPOD, folder)
    (folder / "data" / "results").mkdir(parents=True, exist_ok=True)
    out = tmp_path / "step9.toml"
    result = import_scene(folder / "step9.py", out)
    write_import(result, out)
    return result


def test_step9_imports_with_the_orientation_effector(tmp_path):
    """step9.py's controllers open the robot's serial port with pyserial: softsim's stand-in opens nothing (and
    refuses to write). Its effector (useDirections [0, 1, 0, 1, 0, 1], goal [0, 50, 50] with the identity
    orientation) becomes the centre effector's y row and its rotation rows about x and z; the closed loop's
    Reference frame, read only by the controllers, is reported."""
    result = imported_step9(tmp_path)
    spec, text = result.spec, result.report.text()
    (effector,) = spec.bodies[0].centerEffectors
    assert effector.axis == (0, 1, 0) and effector.rotationAxis == (1, 0, 1)
    assert effector.effectorGoal == (0.0, 50.0, 50.0) and effector.goalRotation == (0.0, 0.0, 0.0)
    assert effector.point == (0.0, 30.0, 0.0)
    assert all(region.actuated for region in spec.bodies[0].fixed)
    assert "PositionEffector" not in text.split("Not translated")[-1]
    assert "/Modelling/Reference/goalMO (MechanicalObject)" in text
    assert (tmp_path / "details" / "data" / "results" / "closedLoop.csv").exists()  # opened by the controller
    from softsim.app.sofa_import.standin import SerialException, SerialPort

    port = SerialPort(None, 57600, timeout=0.05)
    assert port.readline() == b"" and not port.is_open
    with pytest.raises(SerialException, match="drives no hardware"):
        port.write(b"150 150 150\n")


def test_step9_inverse_lifts_the_centre_and_keeps_it_level(tmp_path):
    """From the initial pose, 20 inverse frames, every one converged: the FreeCenter's origin reaches y = 50 to
    1e-4 mm and its tilt about x and z (scipy's best rotation of its nodes, not the effector's Kabsch) falls
    below 0.2 degrees, shrinking every frame over the last ten (measured 0.099 degrees at frame 20: the energy
    term, relative as in SoftRobots, slows the weak rotation rows)."""
    scene = Scene(imported_step9(tmp_path).spec)
    rest = scene.model.rest_positions
    group = np.asarray(scene.spec.bodies[0].rigidGroups[0].indices)
    walk_to_initial_pose(scene)
    tilts = []
    for _ in range(20):
        report = scene.step()
        assert report.ok and report.converged, report.message
        now = scene.positions[group]
        turn, _ = Rotation.align_vectors(now - now.mean(axis=0), rest[group] - rest[group].mean(axis=0))
        tilts.append(math.degrees(float(np.linalg.norm(turn.as_rotvec()[[0, 2]]))))
    origin = now.mean(axis=0) + turn.apply(np.array([0.0, 30.0, 0.0]) - rest[group].mean(axis=0))
    assert abs(origin[1] - 50.0) < 1e-4
    assert tilts[-1] < 0.2
    assert all(b < a for a, b in zip(tilts[-10:], tilts[-9:]))
    assert scene.outputs()["effector.angleError"] == pytest.approx(tilts[-1], abs=1e-6)
