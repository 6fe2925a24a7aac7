"""``[[body.centerEffector]]`` (SoftRobots.Inverse BarycentricCenterEffector): the mean position of some nodes as
an output and as an objective of the inverse model, checked against a forward run that reached that mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.constraints import CenterEffector
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
FINGER = ROOT / "resources" / "scenes" / "finger.toml"


def finger(effectors, *, cable=0.0, inverse=False) -> Scene:
    spec = load_scene(FINGER)
    data = to_data(spec)
    data["body"][0]["centerEffector"] = list(effectors)
    data["body"][0]["cable"][0]["value"] = cable
    if inverse:
        data["solver"]["inverse"] = {"epsilon": 0.0}  # no energy term: the goal itself
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def tip_nodes(scene) -> list[int]:
    X = scene.mesh.points
    return [int(i) for i in np.flatnonzero(X[:, 0] < -100.0)]


def test_the_outputs_are_the_mean_of_the_nodes():
    scene = finger([{"name": "all"}])
    out = scene.outputs()
    # the finger mesh is symmetric about z = 7.5 and its nodes' mean x, y are those of the generated grid
    assert out["all.z"] == pytest.approx(7.5, abs=1e-9)
    assert (out["all.x"], out["all.y"]) == pytest.approx(tuple(scene.mesh.points[:, :2].mean(axis=0)), abs=1e-12)
    nodes = tip_nodes(scene)
    scene = finger([{"name": "centre", "indices": nodes}], cable=6.0)
    scene.step()
    np.testing.assert_allclose([scene.outputs()[f"centre.{a}"] for a in "xyz"],
                               scene.positions[nodes].mean(axis=0), atol=1e-12)


def test_the_rows_are_the_derivative_of_the_weighted_centre():
    X = np.random.default_rng(2).normal(size=(9, 3))
    effector = CenterEffector(X, indices=[1, 4, 6], effectorGoal=[0.1, 0.2, 0.3], axis=(1, 0, 1), weight=2.0)
    J = effector.jacobian(X).toarray()
    assert J.shape == (2, 27)
    h = 1e-6
    for dof in range(27):
        step = np.zeros(27)
        step[dof] = h
        moved = (X.reshape(-1) + step).reshape(-1, 3)
        rows = effector.violation(moved, moved, effector.jacobian(moved))
        base = effector.violation(X, X, J)
        np.testing.assert_allclose(J[:, dof], (rows - base) / h, atol=1e-8)
    centre = X[[1, 4, 6]].mean(axis=0)
    np.testing.assert_allclose(effector.violation(X, X, J), 2.0 * (centre - [0.1, 0.2, 0.3])[[0, 2]])


def test_the_inverse_model_finds_the_pull_that_puts_the_centre_on_its_goal():
    forward = finger([{"name": "centre", "indices": tip_nodes(finger([]))}], cable=7.0)
    forward.step()
    reached = [forward.outputs()[f"centre.{a}"] for a in "xyz"]
    scene = finger([{"name": "centre", "indices": tip_nodes(forward), "effectorGoal": reached}], inverse=True)
    for _ in range(3):
        report = scene.step()
    assert report.converged, report.message
    out = scene.outputs()
    assert out["centre.distance"] < 1e-3
    assert out["cable.displacement"] == pytest.approx(7.0, abs=1e-2)


def test_goal_axis_and_weight_are_edited_live_and_checked():
    scene = finger([{"name": "centre", "indices": [0, 1], "effectorGoal": [0.0, 0.0, 0.0]}])
    effector = scene.simulation.constraint("centre")
    scene.set("body.finger.centerEffector.centre.axis", [0, 1, 0])
    scene.set("body.finger.centerEffector.centre.effectorGoal", [1.0, 2.0, 3.0])
    assert scene.simulation.constraint("centre") is effector and effector.n_rows == 1
    np.testing.assert_array_equal(effector.effectorGoal, [[1.0, 2.0, 3.0]])
    with pytest.raises(SceneError, match=r"finger\.toml: body\.finger\.centerEffector\.centre\.axis: item 0: 2 is not "
                                         r"0 or 1"):
        scene.set("body.finger.centerEffector.centre.axis", [2, 0, 0])
    with pytest.raises(SceneError, match=r"centerEffector\.c\.indices: node ids must lie in 0\.\.\d+"):
        finger([{"name": "c", "indices": [10**6]}])
