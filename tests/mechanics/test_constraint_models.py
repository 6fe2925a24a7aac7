"""SoftRobots actuator models: CableConstraint and SurfacePressureConstraint."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.constraints import (
    CableConstraint,
    SurfacePressureConstraint,
    cable_length_and_gradient,
    surface_volume,
    surface_volume_gradient,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, FORCE
from tests.mechanics.test_mapping import box_mesh

# SoftRobots examples/component/constraint/CableConstraint/Finger.py, in the file's order (reference 4.5).
FINGER_CABLE = np.array(
    [
        [-17.5, 12.5, 2.5],
        [-32.5, 12.5, 2.5],
        [-47.5, 12.5, 2.5],
        [-62.5, 12.5, 2.5],
        [-77.5, 12.5, 2.5],
        [-85.5, 12.5, 6.5],
        [-85.5, 12.5, 8.5],
        [-83.5, 12.5, 4.5],
        [-83.5, 12.5, 10.5],
        [-77.5, 12.5, 12.5],
        [-62.5, 12.5, 12.5],
        [-47.5, 12.5, 12.5],
        [-32.5, 12.5, 12.5],
        [-17.5, 12.5, 12.5],
    ]
)
FINGER_PULL_POINT = np.array([0.0, 12.5, 2.5])


def finger_box():
    """A box roughly the size of the SoftRobots finger (x in [-105, 0], y, z in [0, 15])."""
    return box_mesh((7, 3, 3), size=(105.0, 15.0, 15.0), origin=(-105.0, 0.0, 0.0))


def central_gradient(function, x, h):
    """Central finite-difference gradient of a scalar function of the (n, 3) positions."""
    flat = x.reshape(-1).copy()
    gradient = np.empty_like(flat)
    for i in range(flat.size):
        flat[i] += h
        plus = function(flat.reshape(x.shape))
        flat[i] -= 2 * h
        minus = function(flat.reshape(x.shape))
        flat[i] += h
        gradient[i] = (plus - minus) / (2 * h)
    return gradient


# ---------------------------------------------------------------------- cable
def test_finger_cable_initial_length_matches_softrobots():
    length, _ = cable_length_and_gradient(FINGER_CABLE, FINGER_PULL_POINT)
    assert length == pytest.approx(165.241, abs=5e-4)
    geometric = FINGER_CABLE[[0, 1, 2, 3, 4, 7, 5, 6, 8, 9, 10, 11, 12, 13]]
    assert cable_length_and_gradient(geometric, FINGER_PULL_POINT)[0] == pytest.approx(157.806, abs=5e-4)
    X, tets = finger_box()
    cable = CableConstraint(X, tets, points=FINGER_CABLE, pullPoint=FINGER_PULL_POINT, minForce=0.0)
    assert cable.L0 == pytest.approx(165.2409632, abs=1e-6)
    assert cable.outputs == pytest.approx({"cableLength": cable.L0, "displacement": 0.0, "force": 0.0,
                                            "limited": 0.0})


@pytest.mark.parametrize("has_pull_point", [True, False])
def test_cable_jacobian_is_minus_length_gradient_mapped(has_pull_point):
    rng = np.random.default_rng(3)
    X, tets = finger_box()
    cable = CableConstraint(
        X,
        tets,
        points=FINGER_CABLE,
        pullPoint=FINGER_PULL_POINT if has_pull_point else None,
        hasPullPoint=has_pull_point,
    )
    for _ in range(3):
        x = X + rng.normal(scale=2.0, size=X.shape)
        J = cable.jacobian(x)
        assert J.shape == (1, 3 * X.shape[0])
        fd = central_gradient(cable.length, x, 1e-5)
        np.testing.assert_allclose(J.toarray()[0], -fd, rtol=1e-6, atol=1e-8)


def test_cable_jacobian_on_node_indices_with_sliding_points():
    rng = np.random.default_rng(4)
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    indices = np.array([4, 13, 22, 17])
    for pull, has_pull in ((np.array([9.0, 1.0, -3.0]), True), (None, False)):
        cable = CableConstraint(X, tets, indices=indices, pullPoint=pull, hasPullPoint=has_pull)
        x = X + rng.normal(scale=0.3, size=X.shape)
        J = cable.jacobian(x).toarray()[0]
        np.testing.assert_allclose(J, -central_gradient(cable.length, x, 1e-6), rtol=1e-7, atol=1e-9)
        # Only the cable nodes carry entries; a single point with a pull point: the unit vector toward P.
    single = CableConstraint(X, tets, indices=[13], pullPoint=[2.0, 2.0, 10.0])
    J = single.jacobian(X).toarray()[0].reshape(-1, 3)
    np.testing.assert_allclose(J[13], [0.0, 0.0, 1.0])
    assert np.count_nonzero(J) == 1


def test_cable_violation_sign_and_linearisation():
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0])  # node 13 = (2, 2, 2)
    L0 = cable.L0
    assert L0 == pytest.approx(10.0)  # |P - x13| + |x13 - x4| = 8 + 2, x4 = (0, 2, 2)
    # Pulling node 13 up by 1 shortens the cable by 1 (to first order): positive displacement.
    x_free = X.copy()
    x_free[13, 2] += 1.0
    J = cable.jacobian(X)
    dfree = cable.violation(X, x_free, J)
    assert dfree.shape == (1,)
    exact = L0 - cable.length(x_free)
    assert exact > 0
    linear_part = (J @ (x_free - X).reshape(-1))[0]
    assert dfree[0] == pytest.approx(linear_part + L0 - cable.length(X))
    assert dfree[0] == pytest.approx(1.0)  # J row at node 13: (0, 0, 1) + (-1, 0, 0)
    assert exact == pytest.approx(3.0 - np.sqrt(5.0))  # L(x_free) = 7 + sqrt(5)


def test_cable_length_follows_positions_changed_in_place_and_a_moved_pull_point():
    """The cable keeps the length of the last positions it was asked about: the same array changed in place, or
    a pull point moved by set_parameters, gives the new length (node 13 = (2, 2, 2), node 4 = (0, 2, 2))."""
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0])
    x = X.copy()
    assert cable.length(x) == pytest.approx(10.0)  # |P - x13| + |x13 - x4| = 8 + 2
    x[13, 2] += 1.0
    assert cable.length(x) == pytest.approx(7.0 + np.sqrt(5.0))
    np.testing.assert_allclose(cable.jacobian(x).toarray()[0], -central_gradient(cable.length, x, 1e-6),
                               rtol=1e-7, atol=1e-9)
    cable.set_parameters(pullPoint=np.array([2.0, 2.0, 12.0]))
    assert cable.length(x) == pytest.approx(9.0 + np.sqrt(5.0))


def test_cable_displacement_blocks_clipping():
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(
        X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0], value=10.0, maxDispVariation=1.0
    )
    blocks = cable.blocks(X)
    assert blocks.kind.tolist() == [BOUNDED] and blocks.size.tolist() == [1]
    assert blocks.target[0] == pytest.approx(1.0)  # current displacement 0, variation 1
    assert blocks.lo[0] == -np.inf and blocks.hi[0] == np.inf
    # From a configuration already displaced by 0.6, the next target is 1.6.
    x = X.copy()
    x[13, 2] += 0.6
    current = cable.L0 - cable.length(x)
    assert cable.blocks(x).target[0] == pytest.approx(current + 1.0)
    cable.set_parameters(maxPositiveDisp=0.5, minForce=0.0, maxForce=30.0)
    blocks = cable.blocks(X)
    assert blocks.target[0] == pytest.approx(0.5)
    assert (blocks.lo[0], blocks.hi[0]) == (0.0, 30.0)
    cable.set_parameters(value=-5.0, maxDispVariation=None, maxNegativeDisp=2.0)
    assert cable.blocks(X).target[0] == pytest.approx(-2.0)


def test_cable_force_blocks_clipping():
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(
        X, tets, indices=[13], pullPoint=[2.0, 2.0, 10.0], valueType="force", value=-3.0, minForce=0.0
    )
    blocks = cable.blocks(X)
    assert blocks.kind.tolist() == [FORCE]
    assert blocks.target[0] == 0.0 and blocks.lo[0] == -np.inf and blocks.hi[0] == np.inf
    cable.set_parameters(value=50.0, maxForce=20.0, maxPositiveDisp=4.0, maxNegativeDisp=1.0)
    blocks = cable.blocks(X)
    assert (blocks.target[0], blocks.lo[0], blocks.hi[0]) == (20.0, -1.0, 4.0)


def test_cable_store_outputs():
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0], name="c1")
    x_new = X.copy()
    x_new[13] = [2.0, 2.0, 4.0]
    cable.store(np.array([2.5]), x_new)
    expected_length = 6.0 + np.sqrt(8.0)
    assert cable.outputs == pytest.approx(
        {"cableLength": expected_length, "displacement": cable.L0 - expected_length, "force": 2.5,
         "limited": 0.0}  # short of the command (value 0), but no bound holds it (a force of 2.5, no bounds)
    )
    cable.set_parameters(maxForce=2.5)  # the force on its bound: now a limit holds the cable short of 0
    assert cable.outputs["limited"] == 1.0


def test_cable_parameter_errors():
    X, tets = box_mesh((2, 2, 2))
    with pytest.raises(ParameterError, match="exactly one of points"):
        CableConstraint(X, tets, pullPoint=[0, 0, 0])
    with pytest.raises(ParameterError, match="at least 2 points"):
        CableConstraint(X, tets, indices=[3], hasPullPoint=False)
    with pytest.raises(ParameterError, match="pullPoint is required"):
        CableConstraint(X, tets, indices=[3])
    with pytest.raises(ParameterError, match=r"indices must lie in \[0, 26\]"):
        CableConstraint(X, tets, indices=[3, 40], pullPoint=[0, 0, 0])
    cable = CableConstraint(X, tets, indices=[3, 4], pullPoint=[0, 0, 2])
    with pytest.raises(ParameterError, match=r"cable: maxDispVariation: -1 is outside \(0, inf\)"):
        cable.set_parameters(maxDispVariation=-1)
    with pytest.raises(ParameterError, match="valueType: \"stroke\" is not one of displacement, force"):
        cable.set_parameters(valueType="stroke")
    with pytest.raises(ParameterError, match="minForce=5.0 must not exceed maxForce=1.0"):
        cable.set_parameters(minForce=5.0, maxForce=1.0)
    assert (cable.minForce, cable.maxForce) == (None, None)  # a rejected change leaves the cable unchanged
    with pytest.raises(ParameterError, match="unknown parameter 'maxforce'"):
        cable.set_parameters(maxforce=1.0)


# ---------------------------------------------------------------------- cavity
def boundary_triangles(X, tets):
    """Outward-oriented boundary triangles of a tet mesh (faces used by a single tet)."""
    faces = np.concatenate([tets[:, [1, 2, 3]], tets[:, [0, 3, 2]], tets[:, [0, 1, 3]], tets[:, [0, 2, 1]]])
    _, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True, return_counts=True)
    return faces[counts[inverse.reshape(-1)] == 1]


def inner_cube_cavity():
    """3x3x3 unit-cube grid; the cavity is the closed surface of the central cube [1, 2]^3 (volume 1)."""
    X, tets = box_mesh((3, 3, 3), size=(3.0, 3.0, 3.0))
    centroids = X[tets].mean(axis=1)
    central = tets[np.all((centroids > 1.0) & (centroids < 2.0), axis=1)]
    return X, tets, boundary_triangles(X, central)


def test_closed_cube_volume_is_exactly_one():
    X, tets, triangles = inner_cube_cavity()
    assert triangles.shape == (12, 3)
    assert surface_volume(X, triangles) == 1.0
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles)
    assert cavity.outputs == {
        "cavityVolume": 1.0,
        "initialCavityVolume": 1.0,
        "pressure": 0.0,
        "volumeGrowth": 0.0,
        "limited": 0.0,
    }


def test_cavity_jacobian_matches_volume_finite_differences():
    rng = np.random.default_rng(5)
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles)
    for _ in range(3):
        x = X + rng.normal(scale=0.1, size=X.shape)
        J = cavity.jacobian(x).toarray()[0]
        fd = central_gradient(cavity.signed_volume, x, 1e-3)
        assert np.linalg.norm(J - fd) <= 1e-8 * np.linalg.norm(fd)
    # The per-vertex a_t/3 sum equals the gradient of the triple-product formula (p1 x p2)/6 on a closed
    # surface.
    points = X + rng.normal(scale=0.1, size=X.shape)
    exact = np.zeros_like(points)
    for k in range(3):
        np.add.at(
            exact,
            triangles[:, k],
            np.cross(points[triangles[:, (k + 1) % 3]], points[triangles[:, (k + 2) % 3]]) / 6,
        )
    np.testing.assert_allclose(surface_volume_gradient(points, triangles), exact, atol=1e-12)


def test_cavity_orientation_and_flip_normal():
    X, tets, triangles = inner_cube_cavity()
    outward = SurfacePressureConstraint(X, tets, triangles=triangles)
    inward = SurfacePressureConstraint(X, tets, triangles=triangles[:, ::-1])
    flipped = SurfacePressureConstraint(X, tets, triangles=triangles, flipNormal=True)
    J = outward.jacobian(X).toarray()
    np.testing.assert_allclose(inward.jacobian(X).toarray(), J)  # positive pressure inflates either way
    np.testing.assert_allclose(flipped.jacobian(X).toarray(), -J)
    # The row pushes the cavity corner (2, 2, 2) (node 42) outward: on each of its 3 faces both triangles
    # (area 1/2) touch it (the Kuhn diagonals pass through it), so each component is 2 * (1/2) / 3.
    np.testing.assert_allclose(J[0].reshape(-1, 3)[42], np.full(3, 1.0 / 3.0))
    assert np.count_nonzero(J) == 3 * 8
    # Inflating the cavity by scaling about its centre: volume growth 0.331 for a 1.1 scaling.
    x = X.copy()
    cavity_nodes = np.unique(triangles)
    x[cavity_nodes] = 1.5 + 1.1 * (X[cavity_nodes] - 1.5)
    inward.store(np.array([0.7]), x)
    assert inward.outputs == pytest.approx(
        {"cavityVolume": 1.331, "initialCavityVolume": 1.0, "pressure": 0.7, "volumeGrowth": 0.331,
         "limited": 0.0}  # short of the command (value 0), but no bound holds it
    )
    flipped.store(np.array([0.0]), x)
    assert flipped.outputs["volumeGrowth"] == pytest.approx(-0.331)
    J = outward.jacobian(X)
    dfree = outward.violation(X, x, J)
    assert dfree[0] == pytest.approx((J @ (x - X).reshape(-1))[0])
    assert dfree[0] == pytest.approx(0.3, rel=1e-12)  # linearised growth of (1+3*0.1) - 1


def test_cavity_mapped_surface_volume_and_jacobian():
    """A closed surface not made of mesh nodes: the cube [0.5, 2.5]^3 inside a 3x3x3 grid (volume 8)."""
    rng = np.random.default_rng(6)
    X, tets = box_mesh((3, 3, 3), size=(3.0, 3.0, 3.0))
    cube_X, cube_tets = box_mesh((1, 1, 1), size=(2.0, 2.0, 2.0), origin=(0.5, 0.5, 0.5))
    surface_triangles = boundary_triangles(cube_X, cube_tets)
    cavity = SurfacePressureConstraint(
        X, tets, surface_points=cube_X, surface_triangles=surface_triangles, valueType="volumeGrowth"
    )
    assert cavity.initialCavityVolume == pytest.approx(8.0, rel=1e-14)
    x = X + rng.normal(scale=0.05, size=X.shape)
    J = cavity.jacobian(x).toarray()[0]
    fd = central_gradient(cavity.signed_volume, x, 1e-3)
    assert np.linalg.norm(J - fd) <= 1e-8 * np.linalg.norm(fd)


def test_cavity_blocks_clipping():
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(
        X,
        tets,
        triangles=triangles,
        valueType="volumeGrowth",
        value=5.0,
        maxVolumeGrowthVariation=2.0,
        minPressure=0.0,
        maxPressure=3.0,
    )
    blocks = cavity.blocks(X)
    assert blocks.kind.tolist() == [BOUNDED]
    assert (blocks.target[0], blocks.lo[0], blocks.hi[0]) == (2.0, 0.0, 3.0)
    cavity.set_parameters(maxVolumeGrowth=1.5)
    assert cavity.blocks(X).target[0] == 1.5
    cavity.set_parameters(valueType="pressure", value=4.0, minVolumeGrowth=-0.5, maxVolumeGrowth=0.25)
    blocks = cavity.blocks(X)
    assert blocks.kind.tolist() == [FORCE]
    assert (blocks.target[0], blocks.lo[0], blocks.hi[0]) == (
        3.0,
        -0.5,
        0.25,
    )  # pressure clipped to maxPressure
    cavity.set_parameters(maxPressureVariation=0.5)
    cavity.store(np.array([1.0]), X)
    assert cavity.blocks(X).target[0] == 1.5  # from the stored pressure 1.0, by at most 0.5
    with pytest.raises(ParameterError, match="minPressure=4.0 must not exceed maxPressure=3.0"):
        cavity.set_parameters(minPressure=4.0)
    with pytest.raises(ParameterError, match="either triangles"):
        SurfacePressureConstraint(X, tets)


def test_actuator_signs_in_a_linear_projection():
    """Step II/III on a body of independent springs (K = k I): a cable told to shorten by 0.5 gets a positive
    multiplier and is shortened by 0.5 to first order; a positive pressure inflates the cavity."""
    k = 4.0
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    cable = CableConstraint(X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0], value=0.5, minForce=0.0)
    J = cable.jacobian(X)
    W = (J @ J.T).toarray() / k
    dfree = cable.violation(X, X, J)
    target = cable.blocks(X).target
    force = np.linalg.solve(W, target - dfree)
    # J: (-1, 0, 1) on node 13 and (1, 0, 0) on node 4, so J J^T = 3.
    assert force[0] == pytest.approx(0.5 * k / 3.0, rel=1e-12)
    x_new = X + (J.T @ force).reshape(-1, 3) / k
    linearised = (J @ (x_new - X).reshape(-1))[0]
    assert linearised == pytest.approx(0.5, rel=1e-12)
    cable.store(force, x_new)
    assert 0.4 < cable.outputs["displacement"] < 0.5  # the exact length change lags the linearisation

    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles[:, ::-1], value=0.3)
    J = cavity.jacobian(X)
    x_new = X + (J.T @ np.array([0.3])).reshape(-1, 3) / k
    cavity.store(np.array([0.3]), x_new)
    assert cavity.outputs["volumeGrowth"] > 0.0
    assert cavity.outputs["volumeGrowth"] == pytest.approx(0.3 * (J @ J.T).toarray()[0, 0] / k, rel=0.05)
