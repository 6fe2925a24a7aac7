"""Constraint solvers: planted solutions, agreement with the exact solver, SOFA's error measure, parameters.

The helpers at the top (W = J K^-1 J^T problems with planted solutions) are shared by the other
test_constraint_solvers_* files.
"""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import (
    NNCG,
    BlockGaussSeidel,
    ExactSolver,
    ImprovedJacobi,
    lemke,
    make_constraint_solver,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FORCE, Blocks, complementarity_residual

ITERATIVE = ("BlockGaussSeidel", "NNCG", "ImprovedJacobi")
TIGHT = {"tolerance": 1e-11, "scaleTolerance": False, "maxIterations": 50_000}


def compliance(m: int, ndof: int = 60, seed: int = 0) -> tuple[np.ndarray, np.random.Generator]:
    """W (m, m) = J K^-1 J^T with K (ndof, ndof) SPD and J (m, ndof) dense random; SPD for m <= ndof."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((ndof, ndof))
    K = A @ A.T + ndof * np.eye(ndof)
    J = rng.standard_normal((m, ndof))
    W = J @ np.linalg.solve(K, J.T)
    return 0.5 * (W + W.T), rng


def tight_solver(name: str, **extra):
    params = dict(TIGHT, **extra)
    if name == "ImprovedJacobi":
        params["useSpectralCorrection"] = True
    return make_constraint_solver(name, **params)


def planted_lcp(m: int, seed: int):
    """Unilateral problem with a planted solution: f* >= 0, d* >= 0, f*.d* = 0, dfree = d* - W f*."""
    W, rng = compliance(m, seed=seed)
    active = rng.random(m) < 0.5
    f_star = np.where(active, rng.uniform(0.5, 2.0, m), 0.0)
    d_star = np.where(active, 0.0, rng.uniform(0.1, 1.0, m))
    return W, d_star - W @ f_star, f_star, d_star


def planted_mixed(seed: int):
    """Mixed problem (EQUALITY 1 and 3 rows, BOUNDED in every bound state, FORCE in every state, unilateral)
    with a planted solution (f*, d*) that satisfies every law; W is SPD so it is the unique solution."""
    rng = np.random.default_rng(seed + 100)
    parts, f_parts, d_parts = [], [], []
    # equalities: d = target, f anything
    targets = rng.uniform(-1, 1, 4)
    parts.append(Blocks.equality(4, target=targets))
    f_parts.append(rng.uniform(-2, 2, 4))
    d_parts.append(targets)
    parts.append(Blocks.equality(3, target=0.2, block_size=3))
    f_parts.append(rng.uniform(-2, 2, 3))
    d_parts.append(np.full(3, 0.2))
    # bounded: interior (d = t), at lo (d > t), at hi (d < t), one-sided boxes
    t = np.array([0.1, -0.2, 0.3, 0.0, 0.5, -0.4])
    lo = np.array([-1.0, -1.0, -1.0, 0.0, -np.inf, 0.2])
    hi = np.array([1.0, 1.0, 1.0, np.inf, 0.7, np.inf])
    parts.append(Blocks.bounded(6, target=t, lo=lo, hi=hi))
    f_parts.append(np.array([0.3, -1.0, 1.0, 0.8, 0.7, 0.2]))
    d_parts.append(t + np.array([0.0, 0.4, -0.3, 0.0, -0.2, 0.6]))
    # force: f = F with d inside, d = lo with f > F, d = hi with f < F, one-sided
    F = np.array([1.0, 1.0, 1.0, -0.5])
    dlo = np.array([-0.5, -0.5, -0.5, -np.inf])
    dhi = np.array([0.5, 0.5, 0.5, 0.3])
    parts.append(Blocks.force(4, target=F, lo=dlo, hi=dhi))
    f_parts.append(np.array([1.0, 1.6, 0.2, -0.9]))
    d_parts.append(np.array([0.1, -0.5, 0.5, 0.3]))
    parts.append(Blocks.unilateral(5))
    f_parts.append(np.array([0.0, 0.7, 0.0, 1.2, 0.0]))
    d_parts.append(np.array([0.3, 0.0, 0.8, 0.0, 0.0]))
    blocks = Blocks.concatenate(parts)
    f_star, d_star = np.concatenate(f_parts), np.concatenate(d_parts)
    W, _ = compliance(blocks.n_rows, seed=seed)
    return W, d_star - W @ f_star, blocks, f_star, d_star


# ---------------------------------------------------------------------- planted LCPs
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", ("exact",) + ITERATIVE)
def test_random_lcp_planted_solution(name, seed):
    W, dfree, f_star, d_star = planted_lcp(30, seed)
    blocks = Blocks.unilateral(30)
    solver = make_constraint_solver("exact") if name == "exact" else tight_solver(name)
    report = solver.solve(W, dfree, blocks)
    # NNCG may stop without the flag when |df| < tol (SOFA's rule); accuracy is asserted below.
    assert report.converged or name == "NNCG"
    f, d = report.force, report.violation
    assert f.min() >= -1e-12
    assert d.min() >= -1e-8
    assert np.abs(f * d).max() < 1e-8
    assert complementarity_residual(W, dfree, f, blocks) < 1e-8
    np.testing.assert_allclose(f, f_star, atol=1e-12 if name == "exact" else 1e-7)


def test_default_tolerance_residual_below_tolerance():
    W, dfree, f_star, _ = planted_lcp(30, 4)
    report = BlockGaussSeidel().solve(W, dfree, Blocks.unilateral(30))
    assert report.converged and report.error < 1e-3 * 30
    # the sweep error bounds the natural-map residual of the last sweep
    assert complementarity_residual(W, dfree, report.force, Blocks.unilateral(30)) < 1e-3 * 30


@pytest.mark.parametrize("name", ("exact",) + ITERATIVE)
def test_mixed_problem_every_kind(name):
    W, dfree, blocks, f_star, d_star = planted_mixed(seed=3)
    assert set(np.unique(blocks.kind)) == {EQUALITY, BOUNDED, FORCE}
    solver = make_constraint_solver("exact") if name == "exact" else tight_solver(name)
    report = solver.solve(W, dfree, blocks)
    assert report.converged or name == "NNCG"
    np.testing.assert_allclose(report.force, f_star, atol=1e-10 if name == "exact" else 1e-7)
    np.testing.assert_allclose(report.violation, d_star, atol=1e-9 if name == "exact" else 1e-7)


@pytest.mark.parametrize("seed", [5, 6])
def test_iterative_solvers_agree_with_exact_on_boxes_and_force(seed):
    W, rng = compliance(24, seed=seed)
    dfree = rng.uniform(-2, 2, 24)
    blocks = Blocks.concatenate(
        [
            Blocks.bounded(8, target=rng.uniform(-0.3, 0.3, 8), lo=-0.5, hi=0.8),
            Blocks.force(8, target=rng.uniform(-1, 1, 8), lo=-0.4, hi=0.4),
            Blocks.equality(6, target=0.1, block_size=3),
            Blocks.unilateral(2),
        ]
    )
    exact = ExactSolver().solve(W, dfree, blocks)
    assert exact.converged and exact.error < 1e-12
    for name in ITERATIVE:
        report = tight_solver(name).solve(W, dfree, blocks)
        assert report.converged or name == "NNCG", name
        np.testing.assert_allclose(report.force, exact.force, atol=1e-7, err_msg=name)


def test_lemke_on_a_textbook_lcp():
    # w = M z + q; solution z = (4/3, 7/3, 0), w = (0, 0, 3) (hand-checked: 2*4/3 + 7/3 - 5 = 0, ...)
    M = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]])
    q = np.array([-5.0, -6.0, 0.0])
    z, pivots, ok = lemke(M, q, 100)
    assert ok and pivots >= 2
    np.testing.assert_allclose(z, [4 / 3, 7 / 3, 0.0], atol=1e-14)
    np.testing.assert_allclose(M @ z + q, [0.0, 0.0, 7 / 3], atol=1e-14)


# ---------------------------------------------------------------------- SOFA's BlockGS error measure
W22 = np.array([[2.0, 1.0], [1.0, 2.0]])
D22 = np.array([-1.0, -1.0])
# Sweeps on W22, D22, bilateral rows, from f = 0 (by hand):
#  1: f = (0.5, 0.25), errors |2*0.5| + |2*0.25| = 1.5
#  2: f = (0.375, 0.3125), errors 0.25 + 0.125 = 0.375
#  3: f = (0.34375, 0.328125), errors 0.0625 + 0.03125 = 0.09375


def test_block_gauss_seidel_error_and_scaled_tolerance_by_hand():
    blocks = Blocks.equality(2)
    scaled = BlockGaussSeidel(tolerance=0.2).solve(W22, D22, blocks)  # tol = 0.2 * 2 = 0.4
    assert scaled.iterations == 2
    np.testing.assert_allclose(scaled.error_history, [1.5, 0.375])
    np.testing.assert_allclose(scaled.force, [0.375, 0.3125])
    unscaled = BlockGaussSeidel(tolerance=0.2, scaleTolerance=False).solve(W22, D22, blocks)
    assert unscaled.iterations == 3 and unscaled.error == pytest.approx(0.09375)
    np.testing.assert_allclose(unscaled.force, [0.34375, 0.328125])
    # allVerified: every block error <= tolerance (not scaled); sweep 2 has 0.25 > 0.2
    verified = BlockGaussSeidel(tolerance=0.2, allVerified=True).solve(W22, D22, blocks)
    assert verified.iterations == 3
    verified = BlockGaussSeidel(tolerance=0.3, allVerified=True).solve(W22, D22, blocks)
    assert verified.iterations == 2


def test_block_gauss_seidel_sor_after_sweep_and_iteration_cap():
    report = BlockGaussSeidel(sor=0.5, maxIterations=1).solve(W22, D22, Blocks.equality(2))
    np.testing.assert_allclose(report.force, [0.25, 0.125])  # 0.5 * (0.5, 0.25) + 0.5 * 0
    assert not report.converged and report.iterations == 1


def test_three_row_block_error_measure():
    W, rng = compliance(3, seed=9)
    dfree = rng.standard_normal(3)
    report = BlockGaussSeidel(maxIterations=1).solve(W, dfree, Blocks.equality(3, block_size=3))
    df = report.force  # from 0, exact in one step
    expected = sum(np.sqrt(np.sum((W[l, :] * df) ** 2)) for l in range(3))
    assert report.error_history[0] == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(report.violation, 0.0, atol=1e-14)


def test_nncg_and_warm_start():
    W, dfree, f_star, _ = planted_lcp(30, 7)
    blocks = Blocks.unilateral(30)
    gs = BlockGaussSeidel(**TIGHT).solve(W, dfree, blocks)
    nn = NNCG(**TIGHT).solve(W, dfree, blocks)
    assert gs.converged
    np.testing.assert_allclose(nn.force, f_star, atol=1e-9)
    np.testing.assert_allclose(gs.force, f_star, atol=1e-9)
    warm = BlockGaussSeidel(**TIGHT).solve(W, dfree, blocks, initial_force=f_star)
    assert warm.iterations == 1 and warm.error < 1e-11


def test_regularization_adds_to_diagonal():
    reg = 0.5
    report = make_constraint_solver("exact", regularizationTerm=reg).solve(W22, D22, Blocks.equality(2))
    np.testing.assert_allclose(report.force, np.linalg.solve(W22 + reg * np.eye(2), -D22), rtol=1e-14)
    # reported violation uses the true W: d = D + W f = (-1 + 3 * 0.2857..., ...)
    np.testing.assert_allclose(report.violation, D22 + W22 @ report.force)
    assert report.violation[0] == pytest.approx(-1 + 3 * (1 / 3.5), rel=1e-12)


# ---------------------------------------------------------------------- parameters and factory
def test_parameters_validated_and_take_effect_next_solve():
    solver = make_constraint_solver("BlockGaussSeidel", maxIt=1)
    assert solver.maxIterations == 1
    first = solver.solve(W22, D22, Blocks.equality(2))
    solver.set_parameters(maxIterations=50, tolerance=1e-9)
    second = solver.solve(W22, D22, Blocks.equality(2))
    assert first.iterations == 1 and not first.converged
    assert second.converged and second.iterations > 1
    np.testing.assert_allclose(second.force, [1 / 3, 1 / 3], atol=1e-8)
    with pytest.raises(ParameterError, match=r"sor: 2.5 is outside \(0, 2\)"):
        solver.set_parameters(sor=2.5)
    with pytest.raises(ParameterError, match="tolerance"):
        solver.set_parameters(tolerance=-1.0)
    with pytest.raises(ParameterError, match="maxIterations: expected an integer, got 2.5"):
        solver.set_parameters(maxIterations=2.5)
    with pytest.raises(ParameterError, match="unknown parameter 'useSpectralCorrection'"):
        solver.set_parameters(useSpectralCorrection=True)
    with pytest.raises(ParameterError, match="allVerified: expected true or false, got 1"):
        solver.set_parameters(allVerified=1)
    assert solver.tolerance == 1e-9  # failed calls changed nothing


def test_factory_names_and_errors():
    assert isinstance(make_constraint_solver("GenericConstraintSolver"), BlockGaussSeidel)
    assert isinstance(make_constraint_solver("ImprovedJacobi"), ImprovedJacobi)
    assert isinstance(make_constraint_solver("NNCGConstraintSolver"), NNCG)
    assert isinstance(make_constraint_solver("exact"), ExactSolver)
    defaults = make_constraint_solver("BlockGaussSeidel").parameters
    assert defaults == {
        "maxIterations": 1000,
        "tolerance": 1e-6,  # the scene's default: one declaration (ConstraintSpec)
        "sor": 1.0,
        "regularizationTerm": 0.0,
        "scaleTolerance": True,
        "allVerified": False,
        "computeConstraintForces": False,
        "eliminateEqualities": False,
    }
    with pytest.raises(ParameterError, match="'Lemke' is unknown"):
        make_constraint_solver("Lemke")


def test_input_errors_and_empty_problem():
    solver = BlockGaussSeidel(computeConstraintForces=True)
    with pytest.raises(ParameterError, match="blocks describe 3 rows"):
        solver.solve(W22, D22, Blocks.unilateral(3))
    with pytest.raises(ParameterError, match="positive diagonal"):
        solver.solve(np.zeros((2, 2)), D22, Blocks.unilateral(2))
    with pytest.raises(ParameterError, match="shape"):
        solver.solve(np.eye(3), D22, Blocks.unilateral(2))
    empty = solver.solve(np.zeros((0, 0)), np.zeros(0), Blocks.empty())
    assert empty.converged and empty.iterations == 0 and empty.force.shape == (0,)
    report = solver.solve(W22, D22, Blocks.unilateral(2))
    np.testing.assert_array_equal(report.constraint_forces, report.force)
    assert report.num_constraints == 2 and report.num_constraint_groups == 2
