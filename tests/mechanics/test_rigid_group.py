"""``[[body.rigidGroup]]`` (mechanics.constraints.rigid_group): nodes carried by a massless rigid frame that
nothing drives. Checked against a separate model (the same region made 10^4 times stiffer), against finite
differences of its force's derivative, and against Newton's second law (the rows add no net force)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim.mechanics.constraints.rigid_group import RigidGroupConstraint
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "resources" / "scenes" / "beam.toml"
MIDDLE = [29.9, -0.1, -0.1, 60.1, 10.1, 10.1]  # the nodes at x = 30 ... 60 (the mesh's layers are 5 mm apart)


def beam(change, load: float, dynamic=None, **scene) -> Scene:
    """The shipped cantilever, corotational, with the tip load ``load`` (mN, along y), changed by ``change``."""
    spec = load_scene(BEAM)
    data = to_data(spec)
    body = data["body"][0]
    body["material"]["model"] = "corotational"
    body["force"][0]["totalForce"] = [0.0, load, 0.0]
    data["scene"].update(scene)
    if dynamic is not None:
        data.setdefault("solver", {})["dynamic"] = dynamic
    change(body)
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def group(body) -> None:
    body["rigidGroup"] = [{"box": MIDDLE}]


def stiff(body) -> None:
    body["material"]["region"] = [{"box": MIDDLE, "youngModulus": 600.0 * 1e4}]


@pytest.mark.parametrize("load", [-10.0, -60.0])
def test_a_rigid_middle_deflects_the_cantilever_as_a_very_stiff_one(load):
    """The beam's middle third (x = 30 to 60) as a rigid group, against the same beam whose elements there are
    10^4 times stiffer (a separate model: material, no constraint): the tip deflections agree to 2e-4 (the stiff
    region's own compliance is about 1e-4 of the rest's), while the plain beam bends 40 % more; the group's
    nodes stay a rigid motion of their rest positions to 1e-6 mm. At -60 mN the tip drops 14 mm (the group
    turns by about 0.2 rad)."""
    tips = {}
    for label, change in (("plain", lambda body: None), ("group", group), ("stiff", stiff)):
        scene = beam(change, load)
        report = scene.step()
        assert report.ok, report.message
        tips[label] = 5.0 - scene.outputs()["tip.y"]
        if label == "group":
            assert scene.outputs()["beam_rigidGroup0.deviation"] < 1e-6
    assert tips["group"] == pytest.approx(tips["stiff"], rel=2e-4)
    assert tips["plain"] > 1.3 * tips["group"]


def _group_constraint():
    X = np.random.default_rng(3).uniform(-5.0, 5.0, size=(9, 3))
    return X, RigidGroupConstraint(X, np.arange(1, 8), name="g")


def test_the_force_stiffness_is_the_derivative_of_the_rows_force():
    """At a rigid pose (the rest positions turned and moved), -d(J(x)^T lambda)/dx from force_stiffness against
    central differences of J(x)^T lambda along random directions, to 1e-6 of its size."""
    X, constraint = _group_constraint()
    turn = Rotation.from_rotvec([0.4, -0.2, 0.7]).as_matrix()
    x = X @ turn.T + [1.0, 2.0, 3.0]
    lam = np.random.default_rng(4).normal(size=constraint.n_rows)
    rows, cols, values = constraint.force_stiffness(x, lam)
    n = 3 * X.shape[0]
    K = np.zeros((n, n))
    np.add.at(K, (rows, cols), values)
    for seed in range(3):
        d = np.random.default_rng(10 + seed).normal(size=x.shape)
        step = 1e-6
        plus = constraint.jacobian(x + step * d).T @ lam
        minus = constraint.jacobian(x - step * d).T @ lam
        derivative = (plus - minus) / (2 * step)
        np.testing.assert_allclose(-K @ d.reshape(-1), derivative, atol=1e-6 * np.abs(derivative).max())


def test_the_rows_ignore_rigid_motions_and_push_with_no_net_force_or_torque():
    """At a turned pose: J times a rigid velocity (v + w x p) is 0, the violation of a rigid pose is 0, and J^T
    lambda sums to zero force and zero torque about the origin (to round-off)."""
    X, constraint = _group_constraint()
    turn = Rotation.from_rotvec([0.3, 0.5, -0.1]).as_matrix()
    x = X @ turn.T + [4.0, -1.0, 0.5]
    J = constraint.jacobian(x)
    v, w = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.9, -0.4])
    assert np.abs(J @ (v + np.cross(w, x)).reshape(-1)).max() < 1e-12
    assert np.abs(constraint.violation(x, x, J)).max() < 1e-12
    f = (J.T @ np.random.default_rng(5).normal(size=constraint.n_rows)).reshape(-1, 3)
    assert np.abs(f.sum(axis=0)).max() < 1e-12 and np.abs(np.cross(x, f).sum(axis=0)).max() < 1e-11
    assert np.abs(f[[0, 8]]).max() == 0.0  # nodes outside the group get nothing


def test_a_free_beam_with_a_rigid_group_moves_as_the_load_pushes_it():
    """Dynamic mode, no fixed node, no gravity, no damping: a 10 mN load on the free end for 20 steps of 10 ms.
    The rows are internal, so the total momentum is the impulse, 10 mN x 0.2 s = 2 mN s along -y (to 1e-9 of
    it), and the middle third stays rigid (1e-6 mm; the beam turns by about 0.1 rad a step, so the step's Newton
    iterations are needed: one linearised iteration leaves about 0.06 mm)."""
    scene = beam(lambda body: (group(body), body.pop("fixed")), -10.0, mode="dynamic",
                 dynamic={"rayleighMass": 0.0, "rayleighStiffness": 0.0, "newton_iterations": 20,
                          "newton_tolerance": 1e-12})
    for _ in range(20):
        report = scene.step()
        assert report.ok, report.message
    simulation = scene.simulation
    M = simulation.dynamic_solver.system.mass_matrix
    momentum = (M @ simulation.v.reshape(-1)).reshape(-1, 3).sum(axis=0)
    np.testing.assert_allclose(momentum, [0.0, -10.0 * 0.2, 0.0], atol=1e-9 * 2.0)
    assert scene.outputs()["beam_rigidGroup0.deviation"] < 1e-6


def test_bad_groups_are_refused():
    with pytest.raises(ParameterError, match="at least 3 nodes not on one line, got 2"):
        RigidGroupConstraint(np.eye(3), [0, 1])
    with pytest.raises(ParameterError, match="on one line"):
        RigidGroupConstraint(np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), [0, 1, 2])
    with pytest.raises(SceneError, match=r"body.beam.rigidGroup\[0\].*on one line"):
        beam(lambda body: body.update(rigidGroup=[{"box": [49.9, -0.1, -0.1, 50.1, 0.1, 10.1]}]), -10.0)  # 3 in a line
    with pytest.raises(SceneError, match=r"rigidGroup\[0\]"):
        beam(lambda body: body.update(rigidGroup=[{"box": MIDDLE, "indices": [0, 1, 2]}]), -10.0)
    clamp_and_next = [-0.1, -0.1, -0.1, 5.1, 10.1, 10.1]  # the clamped layer x = 0 and the free one x = 5
    with pytest.raises(SceneError, match=r"body.beam.rigidGroup\[0\]: 9 of its 18 nodes are fixed nodes"):
        beam(lambda body: body.update(rigidGroup=[{"box": clamp_and_next}]), -10.0)


def test_gradients_go_through_a_rigid_group():
    """d tip.y / d youngModulus of the beam with its rigid middle, from Scene.gradients (the adjoint through the
    group's rows and their force stiffness) against central differences of re-solved frames (E +- 0.1 %): 1e-5."""
    scene = beam(group, -10.0)
    assert scene.step().ok
    exact = scene.gradients(outputs=["tip.y"], wrt=["body.beam.material.youngModulus"])["tip.y"][
        "body.beam.material.youngModulus"]
    tips = []
    for young in (600.0 * 0.999, 600.0 * 1.001):
        moved = beam(lambda body, young=young: (group(body), body["material"].update(youngModulus=young)), -10.0)
        assert moved.step().ok
        tips.append(moved.outputs()["tip.y"])
    assert exact == pytest.approx((tips[1] - tips[0]) / (2 * 0.6), rel=1e-5)
