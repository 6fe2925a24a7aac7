"""eliminateEqualities: the equality rows solved by a Cholesky factorization of their block of W, the iterative
solvers on the Schur complement of the others. Checked against planted solutions, the exact solver, and a
stiff attachment-like problem where the sweeps over equality rows converge slowly."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.constraint_solvers.elimination import eliminate_equalities
from softsim.mechanics.resolutions import EQUALITY, Blocks, complementarity_residual
from tests.mechanics.test_constraint_solvers import ITERATIVE, compliance, planted_mixed, tight_solver


@pytest.mark.parametrize("name", ITERATIVE)
def test_planted_mixed_problem_is_solved_with_elimination(name):
    W, dfree, blocks, f_star, d_star = planted_mixed(seed=3)
    report = tight_solver(name, eliminateEqualities=True).solve(W, dfree, blocks)
    assert report.converged or name == "NNCG"
    np.testing.assert_allclose(report.force, f_star, atol=1e-7)
    np.testing.assert_allclose(report.violation, d_star, atol=1e-7)
    equality_rows = np.repeat(blocks.kind == EQUALITY, blocks.size)
    # the equality rows hold to round-off, not to the iterations' tolerance
    np.testing.assert_allclose(report.violation[equality_rows], d_star[equality_rows], atol=1e-12)


def test_reduced_problem_is_the_schur_complement():
    """W_r = W_RR - W_RE W_EE^-1 W_ER and d_r = d_R + W_RE W_EE^-1 (t_E - d_E), checked with numpy's inverse."""
    W, dfree, blocks, _, _ = planted_mixed(seed=4)
    reduced = eliminate_equalities(W, dfree, blocks)
    e, r = reduced.rows_e, reduced.rows_r
    assert e.size == 7 and r.size == blocks.n_rows - 7
    inverse = np.linalg.inv(W[np.ix_(e, e)])
    target = np.repeat(blocks.target[blocks.kind == EQUALITY], blocks.size[blocks.kind == EQUALITY])
    np.testing.assert_allclose(reduced.W_r, W[np.ix_(r, r)] - W[np.ix_(r, e)] @ inverse @ W[np.ix_(e, r)],
                               atol=1e-12)
    np.testing.assert_allclose(reduced.dfree_r, dfree[r] + W[np.ix_(r, e)] @ inverse @ (target - dfree[e]),
                               atol=1e-12)


def _glued_problem(seed: int):
    """A stiff, strongly coupled block of 60 equality rows (a glue) beside 20 frictional contacts (60 rows):
    W = J K^-1 J^T + 1e-5 on the glue's diagonal."""
    W, rng = compliance(120, ndof=150, seed=seed)
    W[np.arange(60), np.arange(60)] += 1e-5
    glue = Blocks.equality(60, target=rng.uniform(-0.1, 0.1, 20), block_size=3)
    contacts = Blocks.friction(20, mu=0.4)
    dfree = np.concatenate([rng.uniform(-1, 1, 60), rng.uniform(-0.5, 0.5, 60)])
    return W, dfree, Blocks.concatenate([glue, contacts])


@pytest.mark.parametrize("name", ["BlockGaussSeidel", "NNCG"])
def test_friction_with_a_glue_agrees_with_the_full_iterations(name):
    W, dfree, blocks = _glued_problem(seed=11)
    full = tight_solver(name).solve(W, dfree, blocks)
    eliminated = tight_solver(name, eliminateEqualities=True).solve(W, dfree, blocks)
    assert eliminated.converged
    assert complementarity_residual(W, dfree, eliminated.force, blocks) < 1e-8
    np.testing.assert_allclose(eliminated.force, full.force, atol=1e-6 * np.abs(full.force).max())
    assert eliminated.iterations < full.iterations


def test_only_equalities_is_one_cholesky_solve_and_matches_numpy():
    W, rng = compliance(12, seed=2)
    blocks = Blocks.equality(12, target=0.3)
    dfree = rng.standard_normal(12)
    report = make_constraint_solver("BlockGaussSeidel", eliminateEqualities=True).solve(W, dfree, blocks)
    assert report.converged and report.iterations == 1
    np.testing.assert_allclose(report.force, np.linalg.solve(W, 0.3 - dfree), atol=1e-12)


def test_singular_equality_block_falls_back_to_the_iterations():
    """Two identical equality rows without compliance: W_EE is singular, the solver iterates on the whole
    problem (as without elimination) instead of failing."""
    W, rng = compliance(6, seed=3)
    W[1, :] = W[0, :]
    W[:, 1] = W[:, 0]
    blocks = Blocks.concatenate([Blocks.equality(2, target=0.1), Blocks.unilateral(4)])
    assert eliminate_equalities(W, rng.standard_normal(6), blocks) is None
