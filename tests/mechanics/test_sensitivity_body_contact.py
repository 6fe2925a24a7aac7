"""Sensitivities through frictionless contacts between bodies (issue 33): the gap of a node to the plane of its
triangle taken at the current positions, its derivatives, and gradients of the finger pressing into a soft block
against Richardson central differences of re-solved frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics import Scene
from softsim.mechanics.constraints import BodyContactConstraint, ContactSurface
from softsim.mechanics.constraints.triangle_distance import plane_gap, plane_gap_hessian
from softsim.mechanics.sensitivity import GradientError, NotDifferentiableError, gradient_report
from tests.mechanics.sensitivity_checks import tighten, worst_against_differences

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT / "tests" / "data" / "softrobots" / "finger_block.toml"
#: mm: the finger presses into the block's underside with 4 contacts, the same in every re-solved frame (9 before
#: frictionless rows followed the surface, 3 of them holding nodes up to 3.8 mm from the block). At 20 mm
#: the re-solved frames' contacts switch between neighbouring triangles of the block; there, before contacts were
#: found inside the equilibrium steps, the tight solve ended with the finger bent down, 10 mm below the block, held
#: there by 3160 mN of contact force on rows of triangle planes far from the nodes
CABLE = 17.0
OUTPUTS = ["cable.force", "node[117].y", "collision.normalForce"]
TRIANGLE = np.array([[0.0, 0.0, 0.0], [2.0, 0.2, 0.1], [0.3, 1.7, -0.2]])


def _gap(y: np.ndarray):
    weights, normal, gap = plane_gap(y[:3][None], y[3:].reshape(1, 3, 3))
    return gap[0], np.concatenate([normal[0], *(-w * normal[0] for w in weights[0])])


@pytest.mark.parametrize("point", [[0.6, 0.5, 0.8], [0.6, 0.5, -0.8], [1.5, -0.6, 0.5], [-0.4, -0.3, 0.6],
                                   [2.6, 0.1, -0.5]])
def test_plane_gap_derivatives_against_differences(point):
    """The gap's gradient is [n, -w_a n, -w_b n, -w_c n] and plane_gap_hessian its derivative (central
    differences, h = 1e-6), above and below the triangle and with the projection beyond an edge or a corner
    (weights outside [0, 1])."""
    y = np.concatenate([point, TRIANGLE.reshape(-1)])
    h = 1e-6
    gap, gradient = _gap(y)
    differences = np.array([(_gap(y + h * e)[0] - _gap(y - h * e)[0]) / (2 * h) for e in np.eye(12)])
    np.testing.assert_allclose(gradient, differences, atol=1e-9)
    hessian = plane_gap_hessian(y[:3][None], TRIANGLE[None])[0]
    columns = np.column_stack([(_gap(y + h * e)[1] - _gap(y - h * e)[1]) / (2 * h) for e in np.eye(12)])
    np.testing.assert_allclose(hessian, columns, atol=1e-8)
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-14)
    assert np.abs(hessian).max() > 0.1
    # the distance to the plane, independently: along the unit normal of the cross product
    normal = np.cross(TRIANGLE[1] - TRIANGLE[0], TRIANGLE[2] - TRIANGLE[0])
    assert gap == pytest.approx((np.array(point) - TRIANGLE[0]) @ normal / np.linalg.norm(normal), abs=1e-14)


def _pair():
    """Three nodes of one surface near a triangle of another (the contacts' nodes 3, 4, 5 on triangle 0-1-2)."""
    x = np.array([[0, 0, 0], [2, 0.2, 0.1], [0.3, 1.7, -0.2], [0.6, 0.5, 0.25], [1.5, -0.3, 0.2],
                  [-0.2, -0.25, 0.15], [0.7, 0.6, 5.0]], dtype=float)
    surfaces = [ContactSurface("a", np.array([[0, 1, 2]]), np.array([0, 1, 2])),
                ContactSurface("b", np.array([[3, 4, 6]]), np.array([3, 4, 5]))]
    return x, surfaces


def _differences(function, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences (rows, 3n) of ``function(x (n, 3)) -> (rows,)``."""
    flat = x.reshape(-1)
    columns = []
    for k in range(flat.size):
        step = np.zeros(flat.size)
        step[k] = h
        columns.append((function((flat + step).reshape(-1, 3)) - function((flat - step).reshape(-1, 3))) / (2 * h))
    return np.column_stack(columns)


def test_body_contact_force_stiffness_against_differences_of_the_jacobian():
    """BodyContactConstraint's frictionless rows follow the nodes: J(x) is the derivative of the normal rows'
    violation, and force_stiffness is -d(J(x)^T lambda)/dx (central differences)."""
    x, surfaces = _pair()
    contact = BodyContactConstraint(surfaces, [(0, 1, 0.0)], contactDistance=0.1, alarmDistance=0.6, n_nodes=7)
    contact.update(x)
    assert contact.n_contacts == 3 and contact.following().all()
    J = contact.jacobian(x).toarray()
    np.testing.assert_allclose(J, _differences(lambda y: contact.violation(x, y, None), x), atol=1e-9)
    force = np.array([2.0, 5.0, 3.0])
    rows, cols, values = contact.force_stiffness(x, force)
    S = sp.coo_matrix((values, (rows, cols)), shape=(21, 21)).toarray()
    np.testing.assert_allclose(S, -_differences(lambda y: contact.jacobian(y).T @ force, x), atol=1e-8)
    assert np.abs(S).max() > 1.0


def test_body_friction_rows_against_differences():
    """Friction contacts between bodies follow the nodes too: the normal row is the gap's gradient, the tangent
    frame is SOFA's construction on the triangle's normal (it turns with the triangle), and the tangential rows
    measure the relative motion since the frame's start of the node and its triangle's point at the current
    weights. force_stiffness is -d(J(x)^T lambda)/dx with tangential forces (unsymmetric), and law_jacobian the
    derivative of the rows' violations, both against central differences; the laws' derivative differs from the
    force rows (the frame's turning and the weights' change)."""
    x, surfaces = _pair()
    contact = BodyContactConstraint(surfaces, [(0, 1, 0.5)], contactDistance=0.1, alarmDistance=0.6, n_nodes=7)
    contact.update(x)
    assert contact.n_contacts == 3 and contact.n_rows == 9 and contact.following().all()
    contact.begin_frame(x + np.random.default_rng(1).normal(scale=0.05, size=x.shape))
    force = np.array([2.0, 0.7, -0.4, 5.0, -1.1, 0.9, 3.0, 0.2, 0.3])
    rows, cols, values = contact.force_stiffness(x, force)
    S = sp.coo_matrix((values, (rows, cols)), shape=(21, 21)).toarray()
    np.testing.assert_allclose(S, -_differences(lambda y: contact.jacobian(y).T @ force, x), atol=1e-8)
    assert np.abs(S - S.T).max() > 0.1  # the frame's turning makes it unsymmetric
    law = contact.law_jacobian(x).toarray()
    np.testing.assert_allclose(law, _differences(lambda y: contact.violation(contact.frame_start, y, None), x),
                               atol=1e-8)
    assert np.abs(law - contact.jacobian(x).toarray()).max() > 1e-2
    # the rows of one contact sum to zero over its four nodes (the contact force is internal)
    J = contact.jacobian(x).toarray().reshape(9, 7, 3)
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=1e-14)
    contact.frame_start = None
    with pytest.raises(ValueError, match="frame's start"):
        contact.law_jacobian(x)


def test_a_contact_made_within_a_frame_counts_its_slip_from_the_touch():
    """Nodes of one surface land on triangle 0-1-2 of the other within a frame, after sliding 0.36 mm along it
    since the frame's start: the contacts the equilibrium steps add at the touch (``at``) measure their
    tangential motion from there, so their tangential laws are zero at the touch and the node's own motion
    along the tangent frame after it (the triangle stays put); the laws' derivative still matches central
    differences. Added without ``at`` (a contact found at a frame's end), the slip counts from the frame's
    start, as for the contacts found there."""
    x, surfaces = _pair()
    start = x.copy()
    start[3:6] += [0.3, -0.2, 0.0]  # the frame's start: the nodes 0.36 mm away along the face
    touch = x.copy()
    touch[3:6, 2] = 0.05  # within contactDistance (0.1) of the face z ~ 0
    end = touch.copy()
    end[3:6] += [[0.02, 0.01, -0.01], [-0.015, 0.02, -0.02], [0.01, -0.01, 0.0]]
    for at in (touch, None):
        contact = BodyContactConstraint(surfaces, [(0, 1, 0.5)], contactDistance=0.1, alarmDistance=0.6, n_nodes=7)
        contact.begin_frame(start)
        added = contact.add_missed_contacts(end, at=at)
        assert added >= 2 and contact.n_rows == 3 * added
        nodes = contact.contact_nodes
        _normals, tangents, bitangents = contact.frames_at(end)
        moved = end[nodes] - (start[nodes] if at is None else touch[nodes])
        law = contact.violation(start, end, None).reshape(added, 3)
        np.testing.assert_allclose(law[:, 1], np.einsum("ij,ij->i", tangents, moved), atol=1e-12)
        np.testing.assert_allclose(law[:, 2], np.einsum("ij,ij->i", bitangents, moved), atol=1e-12)
        assert np.abs(moved).max() > (0.1 if at is None else 0.005)
        if at is not None:
            np.testing.assert_allclose(contact.violation(start, touch, None).reshape(added, 3)[:, 1:], 0.0,
                                       atol=1e-12)
        np.testing.assert_allclose(contact.law_jacobian(end).toarray(),
                                   _differences(lambda y, c=contact: c.violation(c.frame_start, y, None), end),
                                   atol=1e-8)
        contact.begin_frame(end)  # a new frame counts every contact from its start
        np.testing.assert_allclose(contact.slip_origin, 0.0)


def _solved(extra=None):
    """finger_block.toml solved tightly in one frame to the cable's CABLE mm, with ``extra`` {key: value}."""
    scene = Scene.load(BLOCK)
    tighten(scene)
    scene.set("body.finger.cable.cable.value", CABLE)
    for key, value in (extra or {}).items():
        if key.startswith("scene.gravity."):
            gravity = list(scene.get("scene.gravity"))
            gravity["xyz".index(key[-1])] = value
            scene.set("scene.gravity", gravity)
        else:
            scene.set(key, value)
    report = scene.step()
    assert report.converged, report.message
    return scene


@pytest.fixture(scope="module")
def pressed():
    return _solved()


def test_body_contacts_end_at_the_contact_problems_stationary_point(pressed):
    """At the converged frame every active contact keeps its node contactDistance (0.2 mm) from the plane of its
    triangle at the final positions, and its force is along that plane's normal: the frame is the stationary
    point of the contact problem, not of rows frozen at detection."""
    sim = pressed.simulation
    system, force = sim.last_report.equilibrium.system, sim.last_report.equilibrium.force
    contact = next(c for c in system.constraints if isinstance(c, BodyContactConstraint))
    rows = system.rows_of(contact)
    active = np.flatnonzero(force[rows] > 0.0)
    assert active.size >= 4
    assert contact.detached(pressed.positions, force[rows]) == (0, 0.0)  # every pushed node is on the block
    x = pressed.positions
    _weights, normals, gaps = plane_gap(x[contact.contact_nodes[active]], x[contact.contact_triangles[active]])
    np.testing.assert_allclose(gaps, 0.2, atol=1e-9)
    np.testing.assert_allclose(contact.contact_forces[active] / force[rows][active, None], normals, atol=1e-12)


def test_body_contact_gradients_against_finite_differences(pressed):
    """The finger pressing into the soft block (4 frictionless contacts held, nodes of both bodies in their rows):
    d(cable force, the tip node's height, the total contact force)/d(the finger's E, the block's E, the cable's
    value, gravity) agree with Richardson central differences of re-solved frames to 1e-6 relative (measured
    1.3e-9)."""
    steps = {"body.finger.material.youngModulus": 0.5, "body.block.material.youngModulus": 0.1,
             "body.finger.cable.cable.value": 1e-3, "scene.gravity.y": 5.0}
    report = gradient_report(pressed, OUTPUTS, list(steps))
    contact_rows = report.held_rows - 1  # the cable's row is the other one held
    assert contact_rows >= 4

    def solve(key, shift):
        return _solved({key: float(report.parameters[key]) + shift})

    worst = worst_against_differences(report, OUTPUTS, steps, solve, 1e-6)
    assert worst < 1e-6


PYRAMID = ROOT / "tests" / "data" / "sensitivity" / "pyramid_block.toml"
APEX = ["collision.normalForce", "node[4].x", "node[4].y", "node[4].z"]


def _pressed(extra=None, friction=None):
    """pyramid_block.toml solved tightly in one frame, with ``extra`` {key: value} (a totalForce component as
    ``...totalForce.x``) and ``collision.friction`` set to ``friction`` when given."""
    scene = Scene.load(PYRAMID)
    tighten(scene)
    if friction is not None:
        scene.set("collision.friction", friction)
    for key, value in (extra or {}).items():
        if ".totalForce." in key:
            vector = list(scene.get(key[:-2]))
            vector["xyz".index(key[-1])] = value
            scene.set(key[:-2], vector)
        else:
            scene.set(key, value)
    report = scene.step()
    assert report.converged, report.message
    return scene


def test_sticking_friction_between_bodies_against_finite_differences():
    """A soft pyramid's apex pressed onto a soft block with mu = 0.5 (tests/data/sensitivity/pyramid_block.toml):
    one contact, the apex on a triangle of the block's top face, sticking (tangential over normal force 0.095):
    its normal row and its two tangential rows are held, with the nodes of both bodies in them. The derivatives
    of the contact force and of the apex's position with respect to the force on the apex (down and sideways) and
    both bodies' moduli agree with Richardson central differences of re-solved frames to 1e-6 (measured 1.2e-7 at
    worst, the apex's z against the sideways force, a derivative 78 times smaller than its x; the same with
    steps four times smaller). Without friction the apex slides along the face: its x moves 3.5 times more per
    unit of sideways force."""
    scene = _pressed()
    system, force = scene.simulation.last_report.equilibrium.system, scene.simulation.last_report.equilibrium.force
    contact = next(c for c in system.constraints if isinstance(c, BodyContactConstraint))
    per_contact = force[system.rows_of(contact)].reshape(-1, 3)
    assert per_contact.shape[0] == 1 and contact.contact_nodes[0] == 4
    ratio = np.hypot(*per_contact[0, 1:]) / per_contact[0, 0]
    assert 0.05 < ratio < 0.15 and per_contact[0, 0] > 100.0  # sticking, well inside the cone of 0.5
    steps = {"body.indenter.force[0].totalForce.x": 2.0, "body.indenter.force[0].totalForce.y": 5.0,
             "body.block.material.youngModulus": 2.0, "body.indenter.material.youngModulus": 2.0}
    report = gradient_report(scene, APEX, list(steps))
    assert report.held_rows == 3

    def solve(key, shift):
        return _pressed({key: float(report.parameters[key]) + shift})

    assert worst_against_differences(report, APEX, steps, solve, 1e-6) < 1e-6
    sliding = gradient_report(_pressed(friction=0.0), ["node[4].x"], ["body.indenter.force[0].totalForce.x"])
    free_x = sliding.values["node[4].x"]["body.indenter.force[0].totalForce.x"]
    assert free_x > 3.0 * report.values["node[4].x"]["body.indenter.force[0].totalForce.x"]


def test_sliding_friction_between_bodies_is_not_differentiable():
    """The same apex with mu = 0.05, below its tangential over normal force: it slides on the cone and the
    gradient is refused, naming the sliding row."""
    scene = _pressed(friction=0.05)
    with pytest.raises(NotDifferentiableError, match="sliding"):
        gradient_report(scene, ["node[4].x"], ["body.block.material.youngModulus"])


def test_held_friction_contacts_between_bodies_pass_the_contact_check():
    """Friction contacts between bodies follow the nodes now (their normal, tangent frame and weights are taken
    at the current positions), so held ones, like frictionless ones, pass the gradients' contact check; a
    contact model whose rows keep the frame found at detection is refused, naming the constraint. The pyramid's
    apex held on the block without friction (its normal row) and sticking with mu = 0.5 (its three rows)."""
    for friction, held in ((0.0, 1), (0.5, 3)):
        scene = _pressed(friction=friction)
        report = gradient_report(scene, ["node[4].x"], ["body.block.material.youngModulus"])
        assert report.held_rows == held
        contact = next(c for c in scene.simulation.last_report.equilibrium.system.constraints
                       if isinstance(c, BodyContactConstraint))
        contact.following = lambda contact=contact: np.zeros(len(contact.contact_nodes), dtype=bool)
        with pytest.raises(GradientError, match="collision: active contacts between bodies"):
            gradient_report(scene, ["node[4].x"], ["body.block.material.youngModulus"])
