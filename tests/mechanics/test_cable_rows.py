"""All the cables' and cavities' rows built at once (mechanics.constraints.cable_rows, cavity_rows) against the
rows built one constraint at a time by each one's own jacobian / violation / blocks, and against finite
differences of the cable lengths and cavity volumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics import Scene
from softsim.mechanics.constraint_system import build_constraint_system
from softsim.mechanics.constraints import CableConstraint, SurfacePressureConstraint, UnilateralPlaneConstraint
from softsim.mechanics.constraints.cable_rows import CableRows, fast_csr
from softsim.mechanics.constraints.cavity_rows import CavityRows
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, FORCE
from tests.mechanics.test_constraint_models import (
    FINGER_CABLE,
    FINGER_PULL_POINT,
    boundary_triangles,
    finger_box,
    inner_cube_cavity,
)
from tests.mechanics.test_mapping import box_mesh

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"


def one_at_a_time(constraints, x_last, x, free_dofs):
    """(J on the free DOFs (m, n_free) dense, violations (m,), kinds, targets, lo, hi) from each constraint's own
    methods, as the rows were built before the cables were batched."""
    J, dfree, laws = [], [], []
    for constraint in constraints:
        rows = constraint.jacobian(x)
        if rows.shape[0] == 0:
            continue
        J.append(rows.toarray()[:, free_dofs])
        dfree.append(constraint.violation(x, x, rows))
        blocks = constraint.blocks(x_last)
        laws.append(np.stack([blocks.kind.astype(float), blocks.target, blocks.lo, blocks.hi]))
    laws = np.concatenate(laws, axis=1)
    return np.vstack(J), np.concatenate(dfree), *laws


def assert_same_rows(system, reference, volume_scale=0.0):
    """The rows as the reference's to 1e-12 of their largest entry; the violations to 1e-12 of the largest
    violation, or of ``volume_scale`` (a cavity's volume: its growth is a difference of volumes summed in
    another order)."""
    J, dfree, kind, target, lo, hi = reference
    scale = np.abs(J).max()
    np.testing.assert_allclose(system.J_free.toarray(), J, rtol=0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(system.dfree, dfree, rtol=0.0,
                               atol=1e-12 * max(np.abs(dfree).max(), volume_scale))
    np.testing.assert_array_equal(system.blocks.kind, kind.astype(np.int8))
    np.testing.assert_allclose(system.blocks.target, target, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(system.blocks.lo, lo)
    np.testing.assert_array_equal(system.blocks.hi, hi)
    J_free = system.J_free
    assert sp.csr_matrix((J_free.data, J_free.indices, J_free.indptr), shape=J_free.shape).has_canonical_format


@pytest.mark.parametrize("scene_name, key, value", [
    ("finger.toml", "body.finger.cable.cable.value", 6.0),
    # the trunk's cables have a rate limit of 1 mm per frame: cableL0's target is clipped from the last frame's
    # length, measured at x_last
    ("trunk.toml", "body.trunk.cable.cableL0.value", 4.0),
    ("pneunet.toml", "body.pneunet.cavity.cavity.value", 5.0),
])
def test_scene_cables_match_the_rows_built_one_cable_at_a_time(scene_name, key, value):
    scene = Scene.load(SCENES / scene_name)
    scene.set(key, value)
    scene.step()
    simulation = scene.simulation
    problem = simulation.problem
    enforced = [c for c in simulation.constraints if c.enforced and c.active]
    assert enforced and all(type(c) in (CableConstraint, SurfacePressureConstraint) for c in enforced)
    scene.set(key, 2.0 * value)
    x_last = simulation.x.copy()
    rng = np.random.default_rng(7)
    x = x_last + problem.expand(rng.normal(scale=0.5, size=problem.free_dofs.size))
    system = build_constraint_system(enforced, x_last, x, problem.free_dofs, linearize_at=x)
    reference = one_at_a_time(enforced, x_last, x, problem.free_dofs)
    volume = max([abs(c.signed_volume(x)) for c in enforced if isinstance(c, SurfacePressureConstraint)], default=0.0)
    assert_same_rows(system, reference, volume)
    if scene_name == "trunk.toml":  # the rate limit binds: the target is 1 mm past x_last's displacement
        cable = enforced[0]
        assert system.blocks.target[0] == pytest.approx(cable.L0 - cable.length(x_last) + 1.0, abs=1e-12)
        assert system.blocks.target[0] < 2.0 * value - 1.0
    # each constraint's own Jacobian, as a dynamic step reads them, is still the cable's own
    for constraint, J in zip(system.constraints, system.jacobians):
        np.testing.assert_array_equal(J.toarray(), constraint.jacobian(x).toarray())
    # the same rows at the same positions built twice: the kept lengths at x_last do not go stale
    x_last += 0.1
    again = build_constraint_system(enforced, x_last, x, problem.free_dofs, linearize_at=x)
    assert_same_rows(again, one_at_a_time(enforced, x_last, x, problem.free_dofs), volume)


def central_differences(quantities, x, free_dofs, h):
    """The derivatives (k, len(free_dofs)) of ``quantities(x)`` (k,) along the flat free DOFs of ``x`` (n, 3), by
    central differences of step ``h``."""
    flat = x.reshape(-1)
    numeric = np.empty((len(quantities(x)), free_dofs.size))
    for k, dof in enumerate(free_dofs):
        plus, minus = flat.copy(), flat.copy()
        plus[dof] += h
        minus[dof] -= h
        numeric[:, k] = (quantities(plus.reshape(x.shape)) - quantities(minus.reshape(x.shape))) / (2 * h)
    return numeric


def test_rows_are_minus_the_length_gradient_by_finite_differences():
    X, tets = finger_box()
    cables = [CableConstraint(X, tets, points=FINGER_CABLE, pullPoint=FINGER_PULL_POINT, name="a"),
              CableConstraint(X, tets, points=FINGER_CABLE[::-1] + [0.0, -2.0, 0.0], hasPullPoint=False, name="b"),
              CableConstraint(X, tets, indices=[5, 17, 40], pullPoint=[3.0, 7.0, 7.0], name="c")]
    fixed = np.flatnonzero(X[:, 0] > -1e-9)  # the clamped end x = 0
    free_mask = np.ones(3 * X.shape[0], dtype=bool)
    free_mask[(3 * fixed[:, None] + np.arange(3)).reshape(-1)] = False
    free_dofs = np.flatnonzero(free_mask)
    rows = CableRows(cables, free_dofs, X.shape[0])
    rng = np.random.default_rng(11)
    x = X + rng.normal(scale=1.5, size=X.shape)
    lengths, J = rows.rows(x)
    np.testing.assert_allclose(lengths, [c.length(x) for c in cables], rtol=1e-14)
    numeric = -central_differences(rows.lengths, x, free_dofs, h=1e-5)
    np.testing.assert_allclose(J.toarray(), numeric, rtol=0.0, atol=1e-8)
    assert np.abs(numeric).max() > 0.5  # the rows are unit-ish gradients, not zeros
    # the pull point is read at every build: moving it changes the first cable's length by the moved distance
    cables[0].pullPoint = FINGER_PULL_POINT + [1.0, 0.0, 0.0]
    moved = rows.rows(x)[0]
    assert moved[0] == pytest.approx(cables[0].length(x), rel=1e-14)
    assert moved[0] != lengths[0]


def test_cables_among_other_constraints_keep_their_order_and_rows():
    X, tets = finger_box()
    a = CableConstraint(X, tets, points=FINGER_CABLE, pullPoint=FINGER_PULL_POINT, name="a", minForce=0.0)
    b = CableConstraint(X, tets, indices=[5, 17, 40], pullPoint=[3.0, 7.0, 7.0], name="b", valueType="force",
                        value=2.5, maxPositiveDisp=4.0)
    idle = CableConstraint(X, tets, indices=[6, 18], pullPoint=[3.0, 7.0, 7.0], name="idle")
    idle.active = False  # no rows
    plane = UnilateralPlaneConstraint(X, tets, indices=[10, 20, 21, 22])
    constraints = [a, plane, idle, b]
    free_dofs = np.arange(3 * X.shape[0])
    rng = np.random.default_rng(5)
    x = X + rng.normal(scale=0.5, size=X.shape)
    system = build_constraint_system(constraints, X, x, free_dofs, linearize_at=x)
    assert system.constraints == [a, plane, b]
    assert [(r.start, r.stop) for r in system.row_ranges] == [(0, 1), (1, 2), (2, 3)]
    assert list(system.blocks.kind) == [BOUNDED, BOUNDED, FORCE]
    assert_same_rows(system, one_at_a_time(constraints, X, x, free_dofs))
    for constraint, J in zip(system.constraints, system.jacobians):
        np.testing.assert_array_equal(J.toarray(), constraint.jacobian(x).toarray())


def test_a_bad_law_is_refused_by_name():
    X, tets = finger_box()
    cable = CableConstraint(X, tets, points=FINGER_CABLE, pullPoint=FINGER_PULL_POINT)
    cable.value = float("nan")  # what a broken edit could leave: Blocks' own check names it
    with pytest.raises(ParameterError, match="target must be finite"):
        build_constraint_system([cable], X, X, np.arange(3 * X.shape[0]))


def test_fast_csr_is_the_matrix_scipy_builds():
    rng = np.random.default_rng(2)
    dense = rng.normal(size=(4, 9)) * (rng.random((4, 9)) < 0.4)
    reference = sp.csr_matrix(dense)
    built = fast_csr(reference.data.copy(), reference.indices.copy(), reference.indptr.copy(), reference.shape)
    built.check_format(full_check=True)
    assert built.shape == (4, 9) and built.format == "csr" and built.has_canonical_format
    vector = rng.normal(size=9)
    np.testing.assert_array_equal(built @ vector, reference @ vector)
    np.testing.assert_array_equal(built.T.toarray(), dense.T)
    np.testing.assert_array_equal((built[1:3]).toarray(), dense[1:3])


def test_cavity_rows_are_the_volume_gradient_by_finite_differences():
    X, tets, triangles = inner_cube_cavity()
    cube_X, cube_tets = box_mesh((1, 1, 1), size=(2.0, 2.0, 2.0), origin=(0.5, 0.5, 0.5))
    cavities = [SurfacePressureConstraint(X, tets, triangles=triangles, name="nodes"),
                SurfacePressureConstraint(X, tets, triangles=triangles[:, ::-1], flipNormal=True, name="flipped"),
                SurfacePressureConstraint(X, tets, surface_points=cube_X,
                                          surface_triangles=boundary_triangles(cube_X, cube_tets), name="mapped")]
    free_dofs = np.arange(3, 3 * X.shape[0])  # node 0 fixed
    rows = CavityRows(cavities, free_dofs, X.shape[0])
    rng = np.random.default_rng(4)
    x = X + rng.normal(scale=0.1, size=X.shape)
    volumes, J = rows.rows(x)
    np.testing.assert_allclose(volumes, [c.signed_volume(x) for c in cavities], rtol=1e-13)
    orientation = np.array([c.orientation for c in cavities])
    numeric = orientation[:, None] * central_differences(rows.quantities, x, free_dofs, h=1e-4)
    np.testing.assert_allclose(J.toarray(), numeric, rtol=0.0, atol=1e-8)
    assert np.abs(numeric).max() > 0.1
    # the violations are the growths s (V - V_rest), as each cavity's own
    system = build_constraint_system(cavities, X, x, free_dofs)
    np.testing.assert_allclose(system.dfree, [c.growth(x) for c in cavities], rtol=0.0, atol=1e-13)


def test_cavities_and_cables_among_other_constraints():
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles, valueType="volumeGrowth", value=0.2,
                                       maxVolumeGrowthVariation=0.05)
    cable = CableConstraint(X, tets, indices=[5, 17, 40], pullPoint=[3.0, 7.0, 7.0], minForce=0.0)
    plane = UnilateralPlaneConstraint(X, tets, indices=[10, 20, 21, 22])
    constraints = [cavity, plane, cable]
    free_dofs = np.arange(3 * X.shape[0])
    rng = np.random.default_rng(9)
    x_last = X + rng.normal(scale=0.05, size=X.shape)
    x = x_last + rng.normal(scale=0.05, size=X.shape)
    system = build_constraint_system(constraints, x_last, x, free_dofs, linearize_at=x)
    assert system.constraints == constraints
    assert_same_rows(system, one_at_a_time(constraints, x_last, x, free_dofs), 1.0)
    # the rate limit holds the cavity 0.05 past its growth at x_last
    assert system.blocks.target[0] == pytest.approx(cavity.growth(x_last) + 0.05, abs=1e-13)
