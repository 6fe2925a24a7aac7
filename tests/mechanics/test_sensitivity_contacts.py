"""Sensitivities through contacts (issue 33) against Richardson central differences of re-solved frames:
friction contacts that stick, and contacts against curved obstacles.

A sticking contact's tangential rows hold the node where the previous frame left it (static friction measures
the motion since the last frame), so its gradient is the derivative of one frame solved from a given previous
state. The differences re-solve exactly that: a fresh scene runs the same first frames, then the frame under
test with the parameter moved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics import Scene
from softsim.mechanics.constraints import BoxObstacle, CapsuleObstacle, ContactConstraint, PlaneObstacle, SphereObstacle
from softsim.mechanics.sensitivity import gradient_report
from tests.mechanics.sensitivity_checks import tighten, worst_against_differences

ROOT = Path(__file__).resolve().parents[2]
FLOOR = ROOT / "tests" / "data" / "sensitivity" / "finger_floor.toml"
TOLERANCE = 1e-6


def _solved(path, frames, extra=None):
    """The scene ``path`` solved tightly through ``frames`` (a list of {key: value} set before each frame), with
    ``extra`` {key: value} set before the last one."""
    scene = Scene.load(path)
    tighten(scene)
    for i, values in enumerate(frames):
        values = dict(values, **(extra or {})) if i == len(frames) - 1 else values
        for key, value in values.items():
            scene.set(key, value)
        report = scene.step()
        assert report.converged, report.message
    return scene


def _compare(path, frames, outputs, steps):
    """The largest relative difference between the gradients at the last frame and the differences."""
    scene = _solved(path, frames)
    report = gradient_report(scene, outputs, list(steps))

    def solve(key, shift):
        return _solved(path, frames, {key: float(report.parameters[key]) + shift})

    worst = worst_against_differences(report, outputs, steps, solve, TOLERANCE)
    return scene, report, worst


def test_sticking_friction_against_finite_differences():
    """The finger sagging onto a floor with mu = 1: after a softer second frame three tip nodes stick (their
    tangential forces strictly inside the cone), each holding three rows; the derivatives with respect to the
    modulus and the cable's value agree with re-solved second frames to 1e-8 (measured 2e-9)."""
    frames = [{}, {"body.finger.material.youngModulus": 500.0}]
    scene, report, worst = _compare(FLOOR, frames, ["cable.force", "node[50].y", "contact.normalForce"],
                                    {"body.finger.material.youngModulus": 5.0,
                                     "body.finger.cable.cable.value": 1e-2})
    system = scene.simulation.last_report.equilibrium.system
    force = scene.simulation.last_report.equilibrium.force
    rows = next(r for c, r in zip(system.constraints, system.row_ranges) if c.name == "contact")
    per_contact = force[rows].reshape(-1, 3)
    touching = per_contact[per_contact[:, 0] > 0.0]
    ratio = np.hypot(touching[:, 1], touching[:, 2]) / touching[:, 0]
    assert touching.shape[0] == 3 and np.all(ratio < 0.95) and np.all(ratio > 0.05)  # sticking, not sliding
    assert report.held_rows == 1 + 3 * 3  # the cable and three sticking contacts
    assert worst < 1e-8


def _against(tmp_path, obstacle: str):
    """finger_floor.toml with its floor replaced by the frictionless ``obstacle`` (TOML lines), in tmp_path."""
    text = FLOOR.read_text()
    mesh = (FLOOR.parent.parent / "softrobots" / "finger.vtk").as_posix()
    text = text.replace('"../softrobots/finger.vtk"', f'"{mesh}"')
    text = text[:text.index("[[obstacle]]")] + f'[[obstacle]]\nname = "obstacle"\n{obstacle}friction = 0.0\n'
    path = tmp_path / "finger_obstacle.toml"
    path.write_text(text)
    return path


CURVED = {
    # the finger's tip node 117 sags onto the top of each, 12 mm round (sphere, capsule across the finger)
    "sphere": ('type = "sphere"\ncenter = [-95.0, -22.0, 7.5]\nradius = 12.0\ncontactDistance = 0.0\n',
               ["center.x", "center.y"]),
    "capsule": ('type = "capsule"\na = [-95.0, -22.0, -10.0]\nb = [-95.0, -22.0, 25.0]\nradius = 12.0\n'
                'contactDistance = 0.0\n', ["a.x", "a.y", "b.y"]),
    # a face contact (zero curvature) kept at contactDistance 1 mm
    "box": ('type = "box"\ncenter = [-50.0, -15.0, 7.5]\nhalfExtents = [20.0, 10.0, 20.0]\ncontactDistance = 1.0\n',
            ["center.y"]),
}


@pytest.mark.parametrize("kind", sorted(CURVED))
def test_curved_obstacle_contacts_against_finite_differences(tmp_path, kind):
    """Frictionless contacts against a sphere, a capsule and a box: the normal row follows the node (the gap's
    gradient at the equilibrium) and the tangent carries the curvature -lambda H; derivatives with respect to
    the modulus, the cable's value and the obstacle's center (a capsule's ends) agree with re-solved frames
    (measured: sphere 4e-8, capsule 3e-9, box 1e-8)."""
    block, center_axes = CURVED[kind]
    path = _against(tmp_path, block)
    steps = {"body.finger.material.youngModulus": 5.0, "body.finger.cable.cable.value": 1e-2}
    steps.update({f"obstacle.obstacle.{axis}": 1e-2 for axis in center_axes})
    outputs = ["cable.force", "contact.normalForce", "node[50].y"]
    scene, report, worst = _compare_moved(path, outputs, steps)
    assert report.held_rows == 2  # the cable and one contact
    assert worst < TOLERANCE


def _compare_moved(path, outputs, steps):
    """:func:`_compare` on one frame, with the obstacle's center, a capsule's end or the gravity moved through
    its vector key."""
    scene = _solved(path, [{}])
    report = gradient_report(scene, outputs, list(steps))

    def solve(key, shift):
        if key.startswith(("obstacle.", "scene.gravity.")):  # a component of a vector key
            vector_key = key[:-2]
            vector = list(scene.get(vector_key))
            vector["xyz".index(key[-1])] += shift
            return _solved(path, [{vector_key: vector}])
        return _solved(path, [{key: float(report.parameters[key]) + shift}])

    worst = worst_against_differences(report, outputs, steps, solve, TOLERANCE)
    return scene, report, worst


#: a sphere 0.5 mm below the finger's tip at rest: sagging onto it, the tip node 117 touches its top and sticks
STICKING_SPHERE = 'type = "sphere"\ncenter = [-95.0, -12.5, 7.5]\nradius = 12.0\ncontactDistance = 0.0\n'
#: the same round top as the end of an upright capsule (the node touches its end cap)
STICKING = {
    "sphere": (STICKING_SPHERE, ["center.x", "center.y"]),
    "capsule": ('type = "capsule"\na = [-95.0, -12.5, 7.5]\nb = [-95.0, -60.0, 7.5]\nradius = 12.0\n'
                'contactDistance = 0.0\n', ["a.x", "a.y"]),
}


def _frictional(tmp_path, obstacle: str, mu: float):
    path = _against(tmp_path, obstacle)
    path.write_text(path.read_text().replace("friction = 0.0", f"friction = {mu}"))
    return path


@pytest.mark.parametrize("kind", sorted(STICKING))
def test_sticking_friction_on_a_curved_obstacle_against_finite_differences(tmp_path, kind):
    """The finger sags onto a sphere (or a capsule's end cap) with mu = 1 and its tip node sticks there
    (tangential over normal force 0.47): the normal row follows the node, the tangent frame turns with the
    normal, and the tangential rows hold the motion since the frame's start in it. The derivatives of the contact
    force and of a node's position with respect to the modulus, the gravity and the sphere's center (the
    capsule's end) agree with re-solved frames (measured 2.4e-8 for both)."""
    obstacle, axes = STICKING[kind]
    path = _frictional(tmp_path, obstacle, 1.0)
    steps = {"body.finger.material.youngModulus": 5.0, "scene.gravity.y": 50.0}
    steps.update({f"obstacle.obstacle.{axis}": 1e-2 for axis in axes})
    scene, report, worst = _compare_moved(path, ["contact.normalForce", "node[50].y", "node[50].x"], steps)
    contact = scene.simulation.constraint("contact")
    system = scene.simulation.last_report.equilibrium.system
    force = scene.simulation.last_report.equilibrium.force[system.rows_of(contact)].reshape(-1, 3)
    touching = force[force[:, 0] > 0.0]
    ratio = np.hypot(touching[:, 1], touching[:, 2]) / touching[:, 0]
    assert touching.shape[0] == 1 and 0.1 < ratio[0] < 0.9  # sticking, well inside the cone
    assert report.held_rows == 3 and worst < TOLERANCE


def test_sliding_friction_on_a_sphere_is_not_differentiable(tmp_path):
    """The same sag with mu = 0.3: the tip node slides on the sphere (its tangential force on the cone), a
    non-differentiable point."""
    from softsim.mechanics.sensitivity import NotDifferentiableError

    scene = _solved(_frictional(tmp_path, STICKING_SPHERE, 0.3), [{}])
    with pytest.raises(NotDifferentiableError, match="sliding"):
        gradient_report(scene, ["contact.normalForce"], ["body.finger.material.youngModulus"])


def test_signed_distance_hessians_against_differences_of_the_normal():
    """Each obstacle's distance Hessian is the derivative of its normal (central differences, h = 1e-6), in
    every region: a sphere; a box in front of a face (0), beyond an edge, beyond a corner and inside (0); a
    capsule beside its segment and beyond an end."""
    sphere = SphereObstacle([1.0, -2.0, 0.5], 3.0)
    box = BoxObstacle([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    capsule = CapsuleObstacle([0.0, 0.0, 0.0], [4.0, 1.0, 0.0], 0.5)
    cases = [(sphere, [4.0, 1.0, 2.0]), (box, [0.3, 2.7, 1.0]), (box, [1.5, 2.5, 0.2]),
             (box, [1.5, -2.5, 3.4]), (box, [0.2, 0.1, -0.4]), (capsule, [2.0, 2.0, 1.0]),
             (capsule, [-1.0, 0.5, 0.7]), (capsule, [5.0, 1.0, -0.6])]
    h = 1e-6
    for obstacle, point in cases:
        point = np.array(point)
        hessian = obstacle.distance_hessian(point[None])[0]
        columns = [(obstacle.distance_and_normal((point + h * e)[None])[1][0]
                    - obstacle.distance_and_normal((point - h * e)[None])[1][0]) / (2 * h) for e in np.eye(3)]
        np.testing.assert_allclose(hessian, np.column_stack(columns), atol=1e-8, err_msg=str((obstacle, point)))
    # a sphere of radius 3 seen from 3 * sqrt(3) away: curvature 1 / |x - c| across the normal
    assert np.trace(sphere.distance_hessian(np.array([[4.0, 1.0, 3.5]]))[0]) == pytest.approx(2 / np.sqrt(27))
    assert not box.distance_hessian(np.array([[0.3, 2.7, 1.0]])).any()  # in front of a face: flat


def test_contact_force_stiffness_against_differences_of_the_jacobian():
    """ContactConstraint.force_stiffness is -d(J(x)^T lambda)/dx for frictionless contacts on a sphere (their
    normal follows the node), checked against central differences of the Jacobian; a plane's rows do not
    follow, so its term is None."""
    sphere = SphereObstacle([0.0, 0.0, 0.0], 1.0)
    x = np.array([[1.1, 0.2, 0.1], [0.1, -1.05, 0.3], [3.0, 3.0, 3.0]])
    contact = ContactConstraint(np.arange(3), [sphere], alarmDistance=0.5)
    contact.update(x)
    assert contact.n_contacts == 2 and contact.following().all()
    force = np.array([2.0, 5.0])
    rows, cols, values = contact.force_stiffness(x, force)
    S = sp.coo_matrix((values, (rows, cols)), shape=(9, 9)).toarray()
    h = 1e-6
    reference = np.zeros((9, 9))
    for k in range(9):
        step = np.zeros(9)
        step[k] = h
        plus = contact.jacobian((x.reshape(-1) + step).reshape(-1, 3)).T @ force
        minus = contact.jacobian((x.reshape(-1) - step).reshape(-1, 3)).T @ force
        reference[:, k] = -(plus - minus) / (2 * h)
    np.testing.assert_allclose(S, reference, atol=1e-8)
    assert np.abs(S).max() > 1.0  # the curvature term is there (lambda / |x - c| ~ 1.8 and 4.6)
    plane = ContactConstraint(np.arange(3), [PlaneObstacle([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])], alarmDistance=0.5)
    plane.update(x * [1.0, 1.0, 0.0] + [0.0, 0.0, 0.1])
    assert plane.force_stiffness(x, np.ones(plane.n_rows)) is None


def _jacobian_differences(function, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences (rows, 3n) of ``function(x (n, 3)) -> (rows,)``."""
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = h
        plus = function((x.reshape(-1) + step).reshape(-1, 3))
        minus = function((x.reshape(-1) - step).reshape(-1, 3))
        columns.append((plus - minus) / (2 * h))
    return np.column_stack(columns)


def test_friction_frame_derivatives_against_differences():
    """friction_frame_derivatives is the directional derivative of friction_frames (central differences, h =
    1e-7), for normals on SOFA's guess and one beside the degenerate (1, 1, 1) direction (the (1, 0, 0) guess)."""
    from softsim.mechanics.constraints.contact import friction_frame_derivatives, friction_frames

    rng = np.random.default_rng(3)
    normals = rng.normal(size=(6, 3))
    normals[-1] = [1.0, 1.0, 1.0 + 1e-9]
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    d_normals = rng.normal(size=normals.shape)
    d_normals -= normals * np.einsum("ij,ij->i", normals, d_normals)[:, None]  # unit normals stay unit
    d_normals[-1] *= 1e-3  # keeps the last one on the degenerate branch over the differences' step
    d_t, d_s = friction_frame_derivatives(normals, d_normals)
    h = 1e-7

    def frame(shift):
        moved = normals + shift * d_normals
        return friction_frames(moved / np.linalg.norm(moved, axis=1)[:, None])

    (t_plus, s_plus), (t_minus, s_minus) = frame(h), frame(-h)
    np.testing.assert_allclose(d_t, (t_plus - t_minus) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(d_s, (s_plus - s_minus) / (2 * h), atol=1e-7)
    assert np.abs(d_t[:-1]).max() > 0.1  # the frames turn


@pytest.mark.parametrize("obstacle", [SphereObstacle([0.0, 0.0, 0.0], 1.0),
                                      CapsuleObstacle([-0.5, 0.0, 0.0], [0.5, 0.3, 0.0], 0.8)])
def test_friction_contact_rows_against_differences(obstacle):
    """Friction contacts on a curved obstacle: the normal row follows the node and the tangent frame turns with
    it, so force_stiffness is -d(J(x)^T lambda)/dx with tangential forces too, and law_jacobian is the
    derivative of the rows' violations (the tangential motion since the frame's start measured in the turning
    frame), both against central differences; the tangential laws' derivative differs from their force rows."""
    x = np.array([[1.1, 0.2, 0.1], [0.1, -1.05, 0.3], [3.0, 3.0, 3.0]])
    contact = ContactConstraint(np.arange(3), [obstacle], alarmDistance=0.5, friction=0.6)
    contact.update(x)
    assert contact.n_contacts == 2 and contact.n_rows == 6 and contact.following().all()
    contact.begin_frame(x + [[0.05, -0.1, 0.02], [-0.03, 0.04, 0.08], [0.0, 0.0, 0.0]])
    force = np.array([2.0, 0.7, -0.4, 5.0, -1.1, 0.9])
    rows, cols, values = contact.force_stiffness(x, force)
    S = sp.coo_matrix((values, (rows, cols)), shape=(9, 9)).toarray()
    reference = -_jacobian_differences(lambda y: contact.jacobian(y).T @ force, x)
    np.testing.assert_allclose(S, reference, atol=1e-8)
    assert np.abs(S - S.T).max() > 1e-3  # the frame's turning makes it unsymmetric
    law = contact.law_jacobian(x).toarray()
    reference = _jacobian_differences(lambda y: contact.violation(contact.frame_start, y, None), x)
    np.testing.assert_allclose(law, reference, atol=1e-8)
    assert np.abs(law - contact.jacobian(x).toarray()).max() > 1e-3
    contact.frame_start = None
    with pytest.raises(ValueError, match="frame's start"):
        contact.law_jacobian(x)


def test_an_obstacle_contact_made_within_a_frame_counts_its_slip_from_the_touch():
    """Two nodes land on a sphere within a frame, after moving 0.5 mm along it since the frame's start: added at
    the touch (``at``), their tangential laws measure the motion since the touch in the frame that turns with
    the normal (zero at the touch), and the laws' derivative (the frame's turning included) still matches
    central differences; added without ``at``, the slip counts from the frame's start."""
    sphere = SphereObstacle([0.0, 0.0, 0.0], 1.0)
    touch = np.array([[1.04, 0.1, 0.0], [0.0, -1.03, 0.2], [3.0, 3.0, 3.0]])
    start = touch + [[0.0, 0.5, 0.1], [0.4, 0.0, -0.3], [0.0, 0.0, 0.0]]
    end = touch + [[-0.05, 0.03, 0.02], [0.02, 0.04, -0.03], [0.0, 0.0, 0.0]]
    for at in (touch, None):
        contact = ContactConstraint(np.arange(3), [sphere], contactDistance=0.1, alarmDistance=0.5, friction=0.6)
        contact.begin_frame(start)
        assert contact.add_missed_contacts(end, at=at) == 2 and contact.n_rows == 6
        _normals, tangents, bitangents = contact.frames_at(end)
        moved = (end - (start if at is None else touch))[:2]
        law = contact.violation(start, end, None).reshape(2, 3)
        np.testing.assert_allclose(law[:, 1], np.einsum("ij,ij->i", tangents, moved), atol=1e-12)
        np.testing.assert_allclose(law[:, 2], np.einsum("ij,ij->i", bitangents, moved), atol=1e-12)
        if at is not None:
            np.testing.assert_allclose(contact.violation(start, touch, None).reshape(2, 3)[:, 1:], 0.0, atol=1e-12)
        reference = _jacobian_differences(lambda y, c=contact: c.violation(c.frame_start, y, None), end)
        np.testing.assert_allclose(contact.law_jacobian(end).toarray(), reference, atol=1e-8)


def test_mapped_contact_force_stiffness_against_differences_of_the_jacobian():
    """A collision surface's vertex (mapped from four nodes with barycentric weights) touching a sphere: the
    mapped model's stiffness is -d(J(x)^T lambda)/dx on the nodes (central differences of its Jacobian)."""
    from softsim.mechanics.constraints.mapped import MappedConstraint

    sphere = SphereObstacle([0.0, 0.0, -1.0], 1.0)
    x = np.array([[0.0, 0.0, 0.3], [1.0, 0.0, 0.2], [0.0, 1.0, 0.1], [0.3, 0.2, 1.0]])
    weights = sp.csr_matrix(np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]))
    contact = ContactConstraint(np.array([4, 5]), [sphere], alarmDistance=1.0)
    mapped = MappedConstraint(contact, weights, 4)
    mapped.update(x)
    assert contact.n_contacts == 2
    force = np.array([3.0, 1.5])
    rows, cols, values = mapped.force_stiffness(x, force)
    assert mapped.force_stiffness(x, force)[0] is rows  # a stable pattern
    S = sp.coo_matrix((values, (rows, cols)), shape=(12, 12)).toarray()
    h = 1e-6
    reference = np.zeros((12, 12))
    for k in range(12):
        step = np.zeros(12)
        step[k] = h
        plus = mapped.jacobian((x.reshape(-1) + step).reshape(-1, 3)).T @ force
        minus = mapped.jacobian((x.reshape(-1) - step).reshape(-1, 3)).T @ force
        reference[:, k] = -(plus - minus) / (2 * h)
    np.testing.assert_allclose(S, reference, atol=1e-8)
    assert np.abs(S).max() > 0.1


def test_curved_contact_through_a_collision_surface_against_finite_differences(tmp_path):
    """The sphere case touched by a collision surface (the finger's own surface shrunk by 0.5 % about its centre,
    so every vertex is mapped into a tetrahedron with weights on its four nodes): the curvature and the center's
    partials go through the mapping; derivatives agree with re-solved frames (measured 8e-8)."""
    import meshio

    from softsim import meshes

    mesh = meshes.load(FLOOR.parent.parent / "softrobots" / "finger.vtk")
    centre = mesh.points.mean(axis=0)
    surface = tmp_path / "surface.obj"
    shrunk = centre + 0.995 * (mesh.points - centre)
    meshio.write(surface, meshio.Mesh(shrunk, [("triangle", mesh.surface_triangles())]))
    path = _against(tmp_path, CURVED["sphere"][0])
    path.write_text(path.read_text().replace('mesh = "', f'collisionMesh = "{surface.as_posix()}"\nmesh = "', 1))
    steps = {"body.finger.material.youngModulus": 5.0, "obstacle.obstacle.center.x": 1e-2,
             "obstacle.obstacle.center.y": 1e-2}
    scene, report, worst = _compare_moved(path, ["cable.force", "contact.normalForce", "node[50].y"], steps)
    assert type(scene.simulation.constraints[1]).__name__ == "MappedConstraint"
    assert report.held_rows == 2 and worst < TOLERANCE
