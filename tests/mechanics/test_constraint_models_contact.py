"""Contact (obstacles, friction frame, active set), PositionEffector, DragConstraint, BilateralAttachment."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.constraints import (
    BilateralAttachment,
    BoxObstacle,
    CapsuleObstacle,
    ContactConstraint,
    DragConstraint,
    PlaneObstacle,
    PositionEffector,
    SphereObstacle,
    friction_frames,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FRICTION
from tests.mechanics.test_mapping import box_mesh

SQRT2 = np.sqrt(2.0)


# ---------------------------------------------------------------------- obstacles
def test_plane_signed_distance():
    plane = PlaneObstacle([0.0, 0.0, 1.0], [0.0, 0.0, 2.0])
    dist, normal = plane.signed_distance_and_normal(np.array([[1.0, 2.0, 4.0], [5.0, -1.0, 0.0]]))
    np.testing.assert_allclose(dist, [3.0, -1.0])
    np.testing.assert_allclose(normal, [[0, 0, 1], [0, 0, 1]])
    tilted = PlaneObstacle([0.0, 0.0, 0.0], [1.0, 1.0, 0.0])
    assert tilted.signed_distance_and_normal([[1.0, 0.0, 7.0]])[0][0] == pytest.approx(1.0 / SQRT2)
    with pytest.raises(ParameterError, match="normal must be a non-zero vector"):
        PlaneObstacle([0, 0, 0], [0, 0, 0])


def test_sphere_signed_distance():
    sphere = SphereObstacle([1.0, 0.0, 0.0], 2.0)
    dist, normal = sphere.signed_distance_and_normal(
        np.array([[4.0, 0.0, 0.0], [1.0, 1.0, 0.0], [2.0, 2.0, 2.0]])
    )
    np.testing.assert_allclose(dist, [1.0, -1.0, 1.0])
    np.testing.assert_allclose(normal, [[1, 0, 0], [0, 1, 0], [1 / 3, 2 / 3, 2 / 3]])
    with pytest.raises(ParameterError, match="radius"):
        SphereObstacle([0, 0, 0], 0.0)


def test_box_signed_distance():
    box = BoxObstacle([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    points = np.array(
        [
            [3.0, 0.0, 0.0],
            [2.0, 3.0, 0.0],
            [2.0, 3.0, 4.0],
            [0.5, 0.0, 0.0],
            [0.0, -1.5, 0.0],
            [0.0, 0.0, -3.0],
        ]
    )
    dist, normal = box.signed_distance_and_normal(points)
    np.testing.assert_allclose(dist, [2.0, SQRT2, np.sqrt(3.0), -0.5, -0.5, 0.0])
    expected = [
        [1, 0, 0],
        [1 / SQRT2, 1 / SQRT2, 0],
        np.ones(3) / np.sqrt(3.0),
        [1, 0, 0],
        [0, -1, 0],
        [0, 0, -1],
    ]
    np.testing.assert_allclose(normal, expected, atol=1e-15)
    with pytest.raises(ParameterError, match="half_extents must be > 0"):
        BoxObstacle([0, 0, 0], [1, 0, 1])


def test_capsule_signed_distance():
    capsule = CapsuleObstacle([0.0, 0.0, 0.0], [0.0, 0.0, 2.0], 0.5)
    points = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 3.0], [0.0, 0.0, -2.0], [0.25, 0.0, 1.0], [3.0, 4.0, 1.5]])
    dist, normal = capsule.signed_distance_and_normal(points)
    np.testing.assert_allclose(dist, [0.5, 0.5, 1.5, -0.25, 4.5])
    np.testing.assert_allclose(normal, [[1, 0, 0], [0, 0, 1], [0, 0, -1], [1, 0, 0], [0.6, 0.8, 0]])


def test_friction_frame_is_orthonormal_with_normal_first():
    rng = np.random.default_rng(7)
    normals = rng.normal(size=(50, 3))
    normals = np.vstack([normals, [[1, 1, 1], [-1, -1, -1], [0, 0, 1]]])
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    t, s = friction_frames(normals)
    frames = np.stack([normals, t, s], axis=1)  # rows n, t, s
    np.testing.assert_allclose(
        frames @ frames.transpose(0, 2, 1), np.broadcast_to(np.eye(3), frames.shape), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.det(frames), 1.0, atol=1e-12)  # n x t = s
    # SOFA's construction for n = z: t = (n_z, n_x, n_y) = x, s = n x t = y.
    np.testing.assert_allclose(t[-1], [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(s[-1], [0, 1, 0], atol=1e-15)


# ---------------------------------------------------------------------- contact constraint
def contact_setup(friction):
    X, tets = box_mesh((2, 2, 2))  # unit cube, 27 nodes
    floor = PlaneObstacle([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    ball = SphereObstacle([0.5, 0.5, 3.0], 1.0)
    bottom = np.flatnonzero(X[:, 2] == 0.0)
    surface = np.unique(np.concatenate([bottom, np.flatnonzero(X[:, 2] == 1.0)]))
    contact = ContactConstraint(
        surface,
        [floor, ball],
        contactDistance=[0.01, 0.0],
        alarmDistance=[0.05, 0.0],
        friction=[friction, 0.0],
    )
    return X, tets, contact, bottom


@pytest.mark.parametrize("mu", [0.0, 0.4])
def test_contact_active_set_rows_and_violation(mu):
    X, _, contact, bottom = contact_setup(mu)
    x = X.copy()
    x_free = X.copy()
    x_free[:, 2] += 0.02  # lifted: bottom nodes 0.02 above the floor (within alarm 0.05)
    x_free[bottom[:3], 2] = -0.1  # three nodes penetrate
    x_free[bottom[:3], 0] += 0.3  # and slide along x
    x_free[14, 2] = 2.2  # the top node 14 (0.5, 0.5, 1) enters the ball (distance -0.2)
    x_free[14, :2] = [0.5, 0.5]
    contact.update(x_free)
    assert contact.n_contacts == 9 + 1
    rows_per_floor_contact = 3 if mu > 0 else 1
    assert contact.n_rows == 9 * rows_per_floor_contact + 1
    J = contact.jacobian(x)
    assert J.shape == (contact.n_rows, 81)
    dfree = contact.violation(x, x_free, J)
    blocks = contact.blocks(x)
    assert blocks.n_rows == contact.n_rows
    on_floor = contact.contact_obstacles == 0
    np.testing.assert_allclose(np.sort(dfree[blocks.start[on_floor]]), [-0.11] * 3 + [0.01] * 6, atol=1e-14)
    ball_row = blocks.start[~on_floor][0]
    assert dfree[ball_row] == pytest.approx(-0.2)
    np.testing.assert_allclose(J[ball_row].toarray().reshape(-1, 3)[14], [0, 0, -1])
    assert J[ball_row].nnz == 3
    if mu > 0:
        assert sorted(blocks.kind.tolist()) == [BOUNDED] + [FRICTION] * 9
        np.testing.assert_array_equal(blocks.mu, np.where(on_floor, 0.4, 0.0))
        # Tangential rows hold the tangential free motion: 0.3 along x for the sliding nodes.
        sliding = np.isin(contact.contact_nodes, bottom[:3])
        t_rows = blocks.start[sliding]
        tangential = np.hypot(dfree[t_rows + 1], dfree[t_rows + 2])
        np.testing.assert_allclose(tangential, 0.3, atol=1e-14)
    else:
        assert blocks.kind.tolist() == [BOUNDED] * 10
        assert blocks.lo.tolist() == [0.0] * 10 and np.all(np.isinf(blocks.hi))


def test_contact_store_outputs():
    X, _, contact, bottom = contact_setup(0.5)
    x_free = X.copy()
    x_free[bottom, 2] = -0.1
    contact.update(x_free)
    assert contact.n_contacts == 9 and contact.n_rows == 27
    force = np.zeros(27)
    force[0::3] = np.arange(1.0, 10.0)  # normal forces 1..9
    force[1] = 0.25  # friction on the first contact
    contact.store(force, x_free)
    assert contact.outputs == {"contacts": 9.0, "normalForce": 45.0}
    np.testing.assert_allclose(contact.contact_points, x_free[contact.contact_nodes])
    np.testing.assert_allclose(contact.contact_forces[:, 2], np.arange(1.0, 10.0))
    assert np.linalg.norm(contact.contact_forces[0]) == pytest.approx(np.hypot(1.0, 0.25))
    # J^T lambda is the same nodal force.
    nodal = (contact.jacobian(X).T @ force).reshape(-1, 3)
    np.testing.assert_allclose(nodal[contact.contact_nodes], contact.contact_forces, atol=1e-15)
    # The stored positions stay contact candidates at the next update (an actuator may hold the body there)...
    contact.update(X + [0.0, 0.0, 1.0])
    assert contact.n_contacts == 9
    # ...separation: once forgotten, nothing is within alarm distance.
    contact.remember(None)
    contact.update(X + [0.0, 0.0, 1.0])
    assert contact.n_rows == 0 and contact.jacobian(X).shape == (0, 81) and contact.blocks(X).n_rows == 0
    with pytest.raises(ParameterError, match="alarmDistance must be >= contactDistance"):
        contact.set_parameters(alarmDistance=0.001)


# ---------------------------------------------------------------------- effector
def test_position_effector_rows_violation_outputs():
    X, tets = box_mesh((2, 2, 2), size=(2.0, 2.0, 2.0))
    effector = PositionEffector(
        X, tets, position=[[0.5, 1.5, 1.0]], effectorGoal=[0.5, 3.0, 0.0], useDirections=[0, 1, 1], weight=2.0
    )
    assert effector.enforced is False
    assert effector.n_rows == 2
    J = effector.jacobian(X)
    # Rows weight * e_y, weight * e_z on the mapped point: the mapped row sums to the weight.
    dense = J.toarray().reshape(2, -1, 3)
    np.testing.assert_allclose(dense.sum(axis=1), [[0.0, 2.0, 0.0], [0.0, 0.0, 2.0]], atol=1e-14)
    x_free = X + [0.0, 0.5, -0.25]
    dfree = effector.violation(X, x_free, J)
    np.testing.assert_allclose(dfree, [2.0 * (1.5 + 0.5 - 3.0), 2.0 * (1.0 - 0.25 - 0.0)], atol=1e-13)
    blocks = effector.blocks(X)
    assert blocks.kind.tolist() == [EQUALITY, EQUALITY] and blocks.target.tolist() == [0.0, 0.0]
    effector.store(np.zeros(2), x_free)
    assert effector.outputs == pytest.approx({"x": 0.5, "y": 2.0, "z": 0.75, "distance": np.hypot(1.0, 0.75)})
    np.testing.assert_allclose(effector.delta, [-2.0, 1.5])
    with pytest.raises(ParameterError, match="useDirections: item 1: 2 is not 0 or 1"):
        effector.set_parameters(useDirections=[1, 2, 0])


def test_position_effector_on_indices_several_points():
    X, tets = box_mesh((1, 1, 1))
    effector = PositionEffector(
        X, indices=[1, 7], effectorGoal=[[0, 0, 2], [1, 1, 2]], useDirections=(0, 0, 1)
    )
    J = effector.jacobian(X).toarray()
    assert J.shape == (2, 24)
    assert J[0, 3 * 1 + 2] == 1.0 and J[1, 3 * 7 + 2] == 1.0 and np.count_nonzero(J) == 2
    np.testing.assert_allclose(effector.violation(X, X, effector.jacobian(X)), [1.0 - 2.0, 1.0 - 2.0])
    effector.store(np.zeros(2), X)
    assert effector.outputs == pytest.approx(
        {"x0": 0, "y0": 0, "z0": 1, "x1": 1, "y1": 1, "z1": 1, "distance": SQRT2}
    )


# ---------------------------------------------------------------------- drag
def test_drag_soft_rows_and_finite_force():
    X, _ = box_mesh((1, 1, 1))
    drag = DragConstraint(5, [2.0, 0.0, 1.0], compliance=0.01)
    J = drag.jacobian(X)
    np.testing.assert_array_equal(J.toarray()[:, 15:18], np.eye(3))
    assert J.nnz == 3
    dfree = drag.violation(X, X, J)
    np.testing.assert_allclose(dfree, X[5] - [2.0, 0.0, 1.0])  # X[5] = (1, 0, 1): (-1, 0, 0)
    np.testing.assert_allclose(drag.compliance(), [0.01] * 3)
    blocks = drag.blocks(X)
    assert blocks.kind.tolist() == [EQUALITY] and blocks.size.tolist() == [3]
    # A node held by a spring of stiffness k = 100: W = 1/k I. With the compliance the node moves by the
    # fraction (1/k) / (1/k + c) = 0.5 of the way; even with W = 0 (the node fixed) the force stays finite.
    for W_diag, fraction in ((0.01, 0.5), (0.0, 0.0)):
        W = W_diag * np.eye(3) + np.diag(drag.compliance())
        force = -np.linalg.solve(W, dfree)
        assert np.all(np.isfinite(force))
        np.testing.assert_allclose(W_diag * force, -fraction * dfree)
    drag.store(np.array([100.0, 0.0, 0.0]), X)
    assert drag.outputs == pytest.approx({"force": 100.0, "distance": 1.0})
    drag.release()
    assert drag.n_rows == 0 and drag.jacobian(X).shape == (0, 24) and drag.compliance().shape == (0,)
    drag.set_target([1.0, 1.0, 1.0])
    assert drag.active and drag.n_rows == 3
    with pytest.raises(ParameterError, match=r"drag: compliance: 0.0 is outside \(0, inf\)"):
        drag.set_parameters(compliance=0.0)
    with pytest.raises(ParameterError, match="node 30 must be < 8"):
        DragConstraint(30, [0, 0, 0], compliance=1.0).jacobian(X)


# ---------------------------------------------------------------------- attachment
def test_bilateral_attachment_two_bodies_with_offsets():
    X_a, _ = box_mesh((1, 1, 1))  # body A: 8 nodes, DOFs 0..23
    X_b = X_a + [3.0, 0.0, 0.0]  # body B: DOFs 24..47
    x = np.vstack([X_a, X_b])
    attachment = BilateralAttachment([1, 3], [0, 2], rest_vector=[3.0, 0.0, 0.0], dof_offset_b=24, n_dofs=48)
    J = attachment.jacobian(x).toarray()
    assert J.shape == (6, 48)
    assert (
        J[0, 3 * 1] == -1.0
        and J[0, 24 + 3 * 0] == 1.0
        and J[5, 3 * 3 + 2] == -1.0
        and J[5, 24 + 3 * 2 + 2] == 1.0
    )
    assert np.count_nonzero(J) == 12
    # x_b - x_a - rest: node 0 of B = (3,0,0), node 1 of A = (0,0,1): (3, 0, -1) - (3, 0, 0).
    dfree = attachment.violation(x, x, attachment.jacobian(x))
    np.testing.assert_allclose(dfree.reshape(2, 3), [[0.0, 0.0, -1.0], [0.0, 0.0, -1.0]])
    np.testing.assert_allclose(J @ x.reshape(-1) - np.tile([3.0, 0.0, 0.0], 2), dfree)
    blocks = attachment.blocks(x)
    assert blocks.kind.tolist() == [EQUALITY, EQUALITY] and blocks.size.tolist() == [3, 3]
    assert attachment.compliance() is None
    attachment.set_parameters(compliance=1e-3)
    np.testing.assert_allclose(attachment.compliance(), [1e-3] * 6)
    attachment.store(np.array([0.0, 0.0, 2.0, 0.0, 0.0, -1.0]), x)
    assert attachment.outputs == pytest.approx({"pairs": 2.0, "force": 2.0, "maxViolation": 1.0})
    with pytest.raises(ParameterError, match="positions must hold 48 DOFs"):
        attachment.jacobian(X_a)


def test_bilateral_attachment_to_fixed_targets():
    X, _ = box_mesh((1, 1, 1))
    attachment = BilateralAttachment([7], targets=[1.0, 1.0, 1.5])
    J = attachment.jacobian(X).toarray()
    np.testing.assert_array_equal(J[:, 21:24], -np.eye(3))
    assert np.count_nonzero(J) == 3
    np.testing.assert_allclose(attachment.violation(X, X, attachment.jacobian(X)), [0.0, 0.0, 0.5])
    with pytest.raises(ParameterError, match="exactly one of nodes_b and targets"):
        BilateralAttachment([7])
    with pytest.raises(ParameterError, match="multiple of 3"):
        BilateralAttachment([1], [2], dof_offset_b=4)
