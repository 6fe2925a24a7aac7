"""``[[body.unilateralPlane]]`` (SoftRobots UnilateralPlaneConstraint): the gap and its derivatives against finite
differences, and the resolution against an independent model of the same contact (a frictionless contact of the
one node against a static plane obstacle)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.constraints import ContactConstraint, PlaneObstacle, UnilateralPlaneConstraint
from softsim.mechanics.constraints.unilateral_plane import plane_gap_and_gradient
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
FINGER = ROOT / "resources" / "scenes" / "finger.toml"
TIP = 0  #: the finger's tip node (-103, 0, 0), which the cable lifts (+y)
#: three fixed nodes on the base's top face y = 10: the plane y = 10, normal -y in this order
PLANE = [370, 430, 374]


def finger(planes=(), cable=0.0, mode="static") -> Scene:
    spec = load_scene(FINGER)
    data = to_data(spec)
    data["body"][0]["unilateralPlane"] = list(planes)
    data["body"][0]["cable"][0]["value"] = cable
    data["scene"]["mode"] = mode
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


@pytest.mark.parametrize("flip", [False, True])
def test_the_gap_gradient_matches_finite_differences(flip):
    rng = np.random.default_rng(11)
    for _ in range(5):
        points = rng.normal(size=(4, 3)) * [3.0, 2.0, 1.0]
        gap, gradient = plane_gap_and_gradient(points, flip)
        # the gap is the signed distance of p0 to the plane (its own formula: the volume over the area)
        normal = np.cross(points[2] - points[1], points[3] - points[1]) * (-1.0 if flip else 1.0)
        assert gap == pytest.approx((points[0] - points[1]) @ normal / np.linalg.norm(normal), rel=1e-12)
        h = 1e-6
        for k in range(12):
            step = np.zeros(12)
            step[k] = h
            plus = plane_gap_and_gradient(points + step.reshape(4, 3), flip)[0]
            minus = plane_gap_and_gradient(points - step.reshape(4, 3), flip)[0]
            assert gradient.reshape(-1)[k] == pytest.approx((plus - minus) / (2 * h), abs=1e-8)


def test_the_force_stiffness_matches_finite_differences_of_the_constraint_force():
    scene = finger([{"name": "stop", "indices": [TIP, *PLANE]}])
    plane = scene.simulation.constraint("stop")
    rng = np.random.default_rng(5)
    x = scene.mesh.points + rng.normal(scale=0.4, size=scene.mesh.points.shape)
    force = np.array([2.5])
    rows, cols, values = plane.force_stiffness(x, force)
    n = 3 * x.shape[0]
    K = np.zeros((n, n))
    np.add.at(K, (rows, cols), values)
    h = 1e-6
    for dof in np.flatnonzero(np.abs(plane.jacobian(x).toarray()[0]) > 0):
        step = np.zeros(n)
        step[dof] = h
        plus = plane.jacobian((x.reshape(-1) + step).reshape(-1, 3)).T @ force
        minus = plane.jacobian((x.reshape(-1) - step).reshape(-1, 3)).T @ force
        np.testing.assert_allclose(K[:, dof], -(plus - minus) / (2 * h), atol=1e-7)


def test_a_plane_stops_the_tip_where_a_contact_with_a_plane_obstacle_stops_it():
    free = finger(cable=10.0)
    free.step()
    assert free.positions[TIP, 1] == pytest.approx(13.92, abs=0.01)  # lifted through y = 10 without the plane
    scene = finger([{"name": "stop", "indices": [TIP, *PLANE]}], cable=10.0)
    report = scene.step()
    assert report.converged, report.message
    out = scene.outputs()
    assert out["stop.gap"] == pytest.approx(0.0, abs=1e-7)
    assert out["stop.force"] > 0.0
    assert scene.positions[TIP, 1] == pytest.approx(10.0, abs=1e-7)
    assert out["cable.displacement"] == pytest.approx(10.0, abs=1e-6)
    # the same contact written as contact.py writes it: node 0 against the half-space y >= 10 seen from below
    reference = finger(cable=10.0)
    contact = ContactConstraint(np.array([TIP]), [PlaneObstacle([0.0, 10.0, 0.0], [0.0, -1.0, 0.0])],
                                alarmDistance=20.0, n_nodes=scene.mesh.n_points, name="contact")
    reference.simulation.add_constraint(contact)
    assert reference.step().converged
    assert np.max(np.abs(reference.positions - scene.positions)) < 1e-6
    assert contact.outputs["normalForce"] == pytest.approx(out["stop.force"], rel=1e-5)


def test_an_open_plane_changes_nothing_and_flipnormal_reverses_it():
    free = finger(cable=5.0)
    free.step()
    assert free.positions[TIP, 1] < 10.0
    scene = finger([{"name": "stop", "indices": [TIP, *PLANE]},
                    {"name": "flipped", "indices": [TIP, PLANE[0], PLANE[2], PLANE[1]], "flipNormal": True}],
                   cable=5.0)
    assert scene.simulation.constraint("stop").gap == pytest.approx(10.0, abs=1e-12)  # at rest
    assert scene.step().converged
    out = scene.outputs()
    assert out["stop.force"] == 0.0 and out["flipped.force"] == 0.0
    assert out["stop.gap"] == pytest.approx(10.0 - free.positions[TIP, 1], abs=1e-6)
    assert out["flipped.gap"] == pytest.approx(out["stop.gap"], abs=1e-12)
    assert np.max(np.abs(scene.positions - free.positions)) < 1e-6


def test_the_plane_holds_in_dynamic_mode():
    scene = finger([{"name": "stop", "indices": [TIP, *PLANE]}], cable=10.0, mode="dynamic")
    gaps = []
    for _ in range(30):
        assert scene.step().ok
        gaps.append(scene.outputs()["stop.gap"])
    assert min(gaps) > -1e-3  # a few micrometres of a step's linearisation at most
    assert gaps[-1] < 0.5  # the tip has come up against it


def test_embedded_points_are_mapped_and_bad_indices_are_refused():
    plane_rows = [[-103.0, 0.0, 0.0], [-14.71428571, 10.0, 0.0], [0.0, 10.0, 0.0], [-14.71428571, 10.0, 15.0]]
    scene = finger([{"name": "stop", "points": plane_rows, "indices": [0, 1, 2, 3]}])
    assert scene.simulation.constraint("stop").gap == pytest.approx(10.0, abs=1e-6)
    for table, key, words in (({"indices": [0, 1, 2]}, "indices", "expected 4 ids"),
                              ({"indices": [0, 1, 1, 2]}, "indices", "repeats an id"),
                              ({"indices": [0, 1, 2, 9], "points": plane_rows}, "indices", "not a row of points")):
        with pytest.raises(SceneError, match=rf"unilateralPlane\[0\]\.{key}: .*{words}"):
            finger([table])
    with pytest.raises(SceneError, match=r"body\.finger\.unilateralPlane\.unilateralPlane0\.indices: node ids must "
                                         r"lie in 0\.\.\d+"):
        finger([{"indices": [0, 1, 2, 10**6]}])


def test_inactive_rows_and_degenerate_planes():
    X = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    gap, gradient = plane_gap_and_gradient(X)  # three points on a line: no plane
    assert gap == 0.0 and not gradient.any()
    plane = UnilateralPlaneConstraint(X, indices=[0, 1, 2, 3], name="line")
    plane.active = False
    assert plane.n_rows == 0 and plane.jacobian(X).shape == (0, 12)


def test_the_tentacles_planes_keep_its_segments_apart_in_dynamic_mode():
    """ArticulatedTentacle as the example runs it (dynamic, Rayleigh 0.1/0.1), its cable ramped to 35 mm at
    0.1 mm a step: with its seven planes the closing hinges stop at gap 0 with a positive force; without them
    four segments go through each other (measured after 400 steps: -0.03, -0.86, -0.25, -0.18 mm)."""
    tentacle = ROOT / "tests" / "data" / "softrobots" / "tentacle.toml"
    gaps = {}
    for planes in (True, False):
        spec = load_scene(tentacle)
        data = to_data(spec)
        data["scene"]["mode"] = "dynamic"
        data["solver"]["dynamic"] = {"rayleighMass": 0.1, "rayleighStiffness": 0.1}
        data["controller"] = [{"key": "body.tentacle.cable.cable.value", "keyframes": [[0.0, 0.0], [3.5, 35.0]]}]
        if not planes:
            data["body"][0]["unilateralPlane"] = []
        scene = Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))
        for _ in range(400):
            assert scene.step().ok
        # one linearisation per time step: a frame where a hinge closes reads up to 1 mm short (34.03..35.0)
        assert 33.5 < scene.outputs()["cable.displacement"] < 35.01
        planes_of_the_example = [UnilateralPlaneConstraint(scene.mesh.points, scene.mesh.tets, indices=p.indices,
                                                           points=p.points, name=p.name)
                                 for p in spec.bodies[0].unilateralPlanes]
        gaps[planes] = np.array([plane_gap_and_gradient(plane.point_set.positions(scene.positions), plane.flipNormal)[0]
                                 for plane in planes_of_the_example])
        if planes:
            forces = np.array([scene.outputs()[f"upc{k}.force"] for k in range(1, 8)])
            assert np.sum(forces > 0.0) >= 3
    assert gaps[True].min() > -1e-3
    assert np.sum(gaps[False] < -0.1) >= 3
