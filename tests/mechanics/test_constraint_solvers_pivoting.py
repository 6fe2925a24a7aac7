"""BlockPivoting: exact active-set solves of frictionless problems, checked against planted solutions and
Lemke's method (the exact solver), with warm starts, Murty's fallback rule and the friction fallback."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.resolutions import Blocks, complementarity_residual
from tests.mechanics.test_constraint_solvers import compliance, planted_lcp, planted_mixed


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_planted_lcp_is_solved_to_round_off(seed):
    W, dfree, f_star, d_star = planted_lcp(40, seed)
    report = make_constraint_solver("BlockPivoting").solve(W, dfree, Blocks.unilateral(40))
    assert report.converged
    np.testing.assert_allclose(report.force, f_star, atol=1e-12)
    np.testing.assert_allclose(report.violation, d_star, atol=1e-12)
    assert report.error < 1e-12


@pytest.mark.parametrize("seed", [3, 7])
def test_every_frictionless_kind_matches_the_planted_solution(seed):
    """EQUALITY (1 and 3 rows), BOUNDED in every bound state, FORCE in every state, unilateral."""
    W, dfree, blocks, f_star, d_star = planted_mixed(seed=seed)
    report = make_constraint_solver("BlockPivoting").solve(W, dfree, blocks)
    assert report.converged
    np.testing.assert_allclose(report.force, f_star, atol=1e-11)
    np.testing.assert_allclose(report.violation, d_star, atol=1e-11)


@pytest.mark.parametrize("seed", [5, 6, 8])
def test_agrees_with_lemke_on_random_boxes_and_force_rows(seed):
    W, rng = compliance(30, seed=seed)
    blocks = Blocks.concatenate([Blocks.bounded(10, target=rng.uniform(-1, 1, 10), lo=-0.5, hi=0.8),
                                 Blocks.force(10, target=rng.uniform(-1, 1, 10), lo=-0.3, hi=0.4),
                                 Blocks.unilateral(10)])
    dfree = rng.uniform(-2, 2, 30)
    exact = make_constraint_solver("exact").solve(W, dfree, blocks)
    pivoting = make_constraint_solver("BlockPivoting").solve(W, dfree, blocks)
    assert pivoting.converged
    np.testing.assert_allclose(pivoting.force, exact.force, atol=1e-10)
    assert complementarity_residual(W, dfree, pivoting.force, blocks) < 1e-12


def test_a_warm_start_at_the_answer_takes_one_linear_solve():
    W, dfree, f_star, _ = planted_lcp(60, 9)
    solver = make_constraint_solver("BlockPivoting")
    cold = solver.solve(W, dfree, Blocks.unilateral(60))
    warm = solver.solve(W, dfree, Blocks.unilateral(60), initial_force=cold.force)
    assert cold.iterations >= 2 and warm.iterations == 1
    np.testing.assert_allclose(warm.force, f_star, atol=1e-12)


def test_iteration_cap_reports_not_converged():
    W, dfree, _, _ = planted_lcp(60, 10)
    report = make_constraint_solver("BlockPivoting", maxIterations=1).solve(W, dfree, Blocks.unilateral(60))
    assert not report.converged and report.iterations == 1 and report.error > 0


def test_friction_is_solved_by_gauss_seidel_with_the_equalities_eliminated():
    W, rng = compliance(36, seed=12)
    blocks = Blocks.concatenate([Blocks.equality(6, target=0.05, block_size=3), Blocks.friction(10, mu=0.5)])
    dfree = rng.uniform(-1, 1, 36)
    report = make_constraint_solver("BlockPivoting", tolerance=1e-12, scaleTolerance=False,
                                    maxIterations=100_000).solve(W, dfree, blocks)
    reference = make_constraint_solver("exact").solve(W, dfree, blocks)
    assert report.converged
    np.testing.assert_allclose(report.force, reference.force, atol=1e-8)
