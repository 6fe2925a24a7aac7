"""Inverse control of servo joints (``[[body.fixed]] actuated = true`` with ``[solver.inverse]``,
mechanics.servo_inverse; SoftRobots.Inverse JointActuator, Tripod steps 8 and 9) and the centre effector's carried
point (``[[body.centerEffector]] point``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.spatial.transform import Rotation

from softsim.mechanics.constraints.center_effector import CenterEffector, affine_weights
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene
from softsim.mechanics.servo_inverse import Servo, servo_increment

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "resources" / "scenes" / "beam.toml"
TIP = np.array([100.0, 5.0, 5.0])
PIVOT = np.array([0.0, 5.0, 5.0])


def turned_tip(degrees: float) -> np.ndarray:
    """The beam's tip centre turned by ``degrees`` about z through the clamp's centre (scipy's rotation)."""
    return PIVOT + Rotation.from_euler("z", degrees, degrees=True).apply(TIP - PIVOT)


def servo_beam(goal_degrees: float, **servo) -> Scene:
    """The 100 mm beam without load or gravity, its clamp x = 0 a servo turning about z through (0, 5, 5), the
    tip's centre tracked (a centre effector on the tip face's nodes carrying the point (100, 5, 5)) toward the tip
    turned by ``goal_degrees``."""
    spec = load_scene(BEAM)
    data = to_data(spec)
    body = data["body"][0]
    body.pop("force")
    body.pop("effector")
    body["material"]["model"] = "corotational"
    body["fixed"][0].update(actuated=True, axis=[0, 0, 1], center=PIVOT.tolist(), **servo)
    scene = Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))
    X = scene.model.rest_positions
    tip = np.flatnonzero(np.abs(X[:, 0] - 100.0) < 1e-9).tolist()
    data["body"][0]["centerEffector"] = [{"name": "tip", "indices": tip, "point": TIP.tolist(),
                                          "effectorGoal": turned_tip(goal_degrees).tolist()}]
    data["solver"]["inverse"] = {}
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def test_step_bounds():
    servo = Servo("body.b.fixed[0]", minAngle=-30.0, maxAngle=20.0, maxAngleVariation=5.0)
    assert servo.step_bounds(0.0) == (-5.0, 5.0)
    assert servo.step_bounds(18.0) == (-5.0, 2.0)
    assert servo.step_bounds(-28.0) == (-2.0, 5.0)
    assert servo.step_bounds(40.0) == (-5.0, -5.0)  # outside the range: toward it by the variation
    assert Servo("s", maxAngle=10.0).step_bounds(4.0) == (-np.inf, 6.0)


def test_servo_increment_against_a_general_minimiser():
    """The bounded least-squares answer equals L-BFGS-B's minimum of the same objective (1e-6), and the servos it
    leaves on a bound are named."""
    rng = np.random.default_rng(7)
    S, r = rng.normal(size=(5, 3)), rng.normal(size=5)
    bounds = [(-0.2, 0.2), (-1.0, 1.0), (-0.05, 0.3)]
    epsilon = 1e-3
    d, on_bound = servo_increment(S, r, bounds, epsilon)
    w = np.abs(S.T @ S).sum(axis=1).max()

    def objective(v):
        return float(np.sum((S @ v + r) ** 2) + epsilon * w * v @ v)

    reference = minimize(objective, np.zeros(3), jac=lambda v: 2 * S.T @ (S @ v + r) + 2 * epsilon * w * v,
                         bounds=bounds, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12})
    np.testing.assert_allclose(d, reference.x, atol=1e-6)
    assert on_bound == [j for j in range(3) if min(abs(d[j] - bounds[j][0]), abs(d[j] - bounds[j][1])) < 1e-9]
    unconstrained, none = servo_increment(S, r, [(-np.inf, np.inf)] * 3, 0.0)
    np.testing.assert_allclose(unconstrained, np.linalg.lstsq(S, -r, rcond=None)[0], atol=1e-10)
    assert none == []


def test_affine_weights_carry_a_point_with_any_rigid_motion():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 3))
    P = np.array([0.3, -2.0, 1.5])
    w = affine_weights(X, P)
    assert abs(w.sum() - 1.0) < 1e-12
    R, t = Rotation.random(random_state=4), np.array([1.0, -3.0, 2.0])
    np.testing.assert_allclose(w @ (R.apply(X) + t), R.apply(P) + t, atol=1e-12)
    effector = CenterEffector(X, indices=np.arange(9), point=P, effectorGoal=[0.0, 0.0, 0.0])
    x = R.apply(X) + t
    np.testing.assert_allclose(effector.center(x), R.apply(P) + t, atol=1e-12)
    J = effector.jacobian(x).toarray()  # against central differences of the tracked point
    step = 1e-6
    numeric = np.zeros_like(J)
    for dof in range(27):
        dx = np.zeros(27)
        dx[dof] = step
        numeric[:, dof] = (effector.center(x + dx.reshape(9, 3)) - effector.center(x - dx.reshape(9, 3))) / (2 * step)
    np.testing.assert_allclose(J, numeric, atol=1e-8)
    with pytest.raises(ParameterError, match="not an affine combination"):
        affine_weights(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), [0.0, 0.0, 1.0])


def test_beam_servo_turns_to_its_goal():
    """With no load the beam turns rigidly with its clamp, so the tip reaches the goal exactly when the servo is at
    20 degrees: each frame turns it by at most maxAngleVariation (5), every frame converges, and after 8 frames the
    angle is 20 to 1e-6 degrees and the tip on the goal to 1e-6 mm."""
    scene = servo_beam(20.0, maxAngleVariation=5.0)
    angles = [0.0]
    for _ in range(8):
        report = scene.step()
        assert report.ok and report.converged, report.message
        angles.append(scene.get("body.beam.fixed[0].angle"))
    assert np.abs(np.diff(angles)).max() <= 5.0 + 1e-12
    assert angles[1:4] == pytest.approx([5.0, 10.0, 15.0], abs=1e-9)  # the variation limits the first frames
    assert scene.servo_inverse.last.limited == []
    assert angles[-1] == pytest.approx(20.0, abs=1e-6)
    tip = scene.simulation.constraint("tip")
    np.testing.assert_allclose(tip.center(scene.simulation.x), turned_tip(20.0), atol=1e-6)
    assert scene.outputs()["tip.distance"] < 1e-6


def test_beam_servo_stops_at_its_range():
    """A goal at 40 degrees with maxAngle 30: the servo stops at 30, named as limited, and the tip sits where 30
    degrees puts it."""
    scene = servo_beam(40.0, maxAngle=30.0, maxAngleVariation=10.0)
    for _ in range(5):
        report = scene.step()
        assert report.ok and report.converged, report.message
    assert scene.get("body.beam.fixed[0].angle") == pytest.approx(30.0, abs=1e-12)
    assert scene.servo_inverse.last.limited == ["body.beam.fixed[0]"]
    np.testing.assert_allclose(scene.simulation.constraint("tip").center(scene.simulation.x), turned_tip(30.0),
                               atol=1e-6)
    distance = np.linalg.norm(turned_tip(30.0) - turned_tip(40.0))
    assert scene.outputs()["tip.distance"] == pytest.approx(distance, abs=1e-6)


def test_servo_inverse_turned_off_and_refused_beside_cables():
    scene = servo_beam(20.0)
    scene.set("solver.inverse.active", False)
    assert scene.servo_inverse is None
    scene.step()
    assert scene.get("body.beam.fixed[0].angle") == 0.0  # a forward frame: the servo holds its angle
    scene.set("solver.inverse.active", True)
    assert scene.servo_inverse is not None
    data = to_data(scene.spec)
    tip = data["body"][0]["centerEffector"][0]["indices"]
    data["body"][0]["cable"] = [{"name": "c", "indices": tip[:2], "hasPullPoint": False}]
    with pytest.raises(SceneError, match="either actuated servos or cables"):
        Scene(parse_data(data, source=scene.spec.source, base_dir=scene.spec.base_dir))
    assert math.isfinite(scene.servo_inverse.epsilon)


def test_rotation_rows_of_a_centre_effector_against_scipy_and_finite_differences():
    """``rotationAxis``: the offset is scipy's rotation vector of R R_goal^T for nodes turned rigidly by R (R found
    by Kabsch), and where R = R_goal the rows' Jacobian equals central differences of the offsets (1e-7)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 3)) * 10.0
    goal = Rotation.from_euler("xyz", [10.0, -20.0, 30.0], degrees=True)
    effector = CenterEffector(X, indices=np.arange(8), effectorGoal=[0.0, 0.0, 0.0], axis=(0, 1, 0),
                              rotationAxis=(1, 0, 1), goalRotation=(10.0, -20.0, 30.0))
    turn = Rotation.from_rotvec([0.3, -0.2, 0.5])
    x = turn.apply(X) + [1.0, 2.0, 3.0]
    expected = (turn * goal.inv()).as_rotvec()
    np.testing.assert_allclose(effector.rotation_offset(x), expected, atol=1e-12)
    np.testing.assert_allclose(effector.offsets(x)[1:], expected[[0, 2]], atol=1e-12)
    at_goal = goal.apply(X) + [1.0, 2.0, 3.0]
    J = effector.jacobian(at_goal).toarray()
    assert J.shape == (3, 24)
    numeric = np.zeros_like(J)
    step = 1e-6
    for dof in range(24):
        dx = np.zeros(24)
        dx[dof] = step
        numeric[:, dof] = (effector.offsets(at_goal + dx.reshape(8, 3))
                           - effector.offsets(at_goal - dx.reshape(8, 3))) / (2 * step)
    np.testing.assert_allclose(J, numeric, atol=1e-7)


def test_angle_range_in_the_wrong_order_is_refused():
    spec = load_scene(BEAM)
    data = to_data(spec)
    data["body"][0]["fixed"][0].update(actuated=True, minAngle=10.0, maxAngle=-10.0)
    with pytest.raises(SceneError, match=r"body\[0\]\.fixed\[0\]\.maxAngle: -10 is below minAngle 10"):
        parse_data(data, source=spec.source, base_dir=spec.base_dir)
