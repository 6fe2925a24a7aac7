"""Semi-smooth Newton on the constraint laws (mechanics/constraint_solvers/semismooth.py): frictionless problems
against planted solutions, friction against the law residuals (mechanics.resolutions), and a light box landing
flat on a floor with its four corners (the PneunetGripper cube's numbers: mass 0.01, STLIB's moments 0.01, half
side 21), where Block Gauss-Seidel stops at 1000 sweeps and the fallback converges by Gauss-Seidel's own test."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.constraint_solvers.semismooth import semismooth_newton, solve_with_newton_fallback
from softsim.mechanics.resolutions import Blocks, complementarity_residual, row_residuals
from tests.mechanics.test_constraint_solvers import compliance, planted_mixed


@pytest.mark.parametrize("seed", [3, 7])
def test_every_frictionless_kind_matches_the_planted_solution(seed):
    """EQUALITY (1 and 3 rows), BOUNDED in every bound state, FORCE in every state, unilateral."""
    W, dfree, blocks, f_star, d_star = planted_mixed(seed=seed)
    force, iterations, residual = semismooth_newton(W, dfree, blocks, np.zeros(dfree.size))
    np.testing.assert_allclose(force, f_star, atol=1e-10)
    np.testing.assert_allclose(dfree + W @ force, d_star, atol=1e-10)
    assert residual < 1e-12 and iterations < 50


@pytest.mark.parametrize("seed", [1, 4])
def test_friction_contacts_meet_their_laws(seed):
    """Random well-posed contacts with mu 0.5 (some open, some sticking, some sliding): the answer's law
    residuals (mechanics.resolutions.complementarity_residual, independent of this solver) vanish."""
    W, rng = compliance(30, seed=seed)
    dfree = rng.uniform(-1.0, 1.0, 30)
    blocks = Blocks.friction(10, 0.5)
    force, _, residual = semismooth_newton(W, dfree, blocks, np.zeros(30))
    assert residual < 1e-10
    assert complementarity_residual(W, dfree, force, blocks) < 1e-10
    normal = force[0::3]
    assert np.any(np.abs(normal) < 1e-15) and np.any(normal > 0.1)  # open and closed contacts both present


def _landing_box(mass=0.01, inertia=0.01, half=21.0, depth=0.5):
    """A flat box's 4 bottom corners on the floor y = 0 (normal +y, friction rows along z and x), rows n, t, s;
    W = J M^-1 J^T with J's rows [d, r x d] (r the corner relative to the centre), each corner ``depth`` into
    the floor: the answer lifts the box by ``depth`` without turning it."""
    corners = np.array([[sx * half, -half, sz * half] for sx in (-1, 1) for sz in (-1, 1)])
    directions = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    J = np.array([np.concatenate([d, np.cross(r, d)]) for r in corners for d in directions])
    M_inv = np.diag([1 / mass] * 3 + [1 / inertia] * 3)
    W = J @ M_inv @ J.T
    dfree = np.tile([-depth, 0.0, 0.0], 4)
    return W, dfree, Blocks.friction(4, 0.6), J


def test_a_light_box_landing_flat_is_lifted_without_turning():
    """Exact answer: J^T f = M u with u the lift (0, depth, 0, 0, 0, 0), the same normal force m depth / 4 on
    each corner by symmetry, no friction. W has rank 6 for 12 rows (four corners: redundant), so many forces
    give the same motion; Newton from zero finds the symmetric one."""
    W, dfree, blocks, J = _landing_box()
    force, _, residual = semismooth_newton(W, dfree, blocks, np.zeros(12))
    assert residual < 1e-12
    np.testing.assert_allclose(force[0::3], 0.01 * 0.5 / 4, rtol=1e-10)
    np.testing.assert_allclose(force[1::3], 0.0, atol=1e-12)
    np.testing.assert_allclose(force[2::3], 0.0, atol=1e-12)
    motion = np.diag([100.0] * 6) @ (J.T @ force)  # M^-1 J^T f with m = I = 0.01
    np.testing.assert_allclose(motion, [0.0, 0.5, 0.0, 0.0, 0.0, 0.0], atol=1e-12)


def test_gauss_seidel_stops_on_the_light_box_and_the_fallback_converges():
    """The scene's settings (1000 sweeps, tolerance 1e-6 x rows): Block Gauss-Seidel does not converge on the
    light box (its sweeps leave squeezing friction forces that 1/I turns into large corner motions); with a
    solid box's moments (m (2 21^2) / 3 = 2.94) it does. The fallback's report is Gauss-Seidel's own, from
    Newton's answer: the box lifted by the depth without turning."""
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-6)
    W, dfree, blocks, J = _landing_box()
    plain = solver.solve(W, dfree, blocks)
    assert not plain.converged and plain.iterations == 1000
    W_solid, dfree_solid, _, _ = _landing_box(inertia=0.01 * 2 * 21.0**2 / 3)
    assert solver.solve(W_solid, dfree_solid, blocks).converged
    report = solve_with_newton_fallback(solver, W, dfree, blocks)
    assert report.converged and report.solver == "BlockGaussSeidel from semi-smooth Newton"
    assert report.iterations <= 2 and report.error < 1e-6 * 12
    # from Gauss-Seidel's answer Newton keeps some of its squeezing friction forces (the redundant rows allow
    # them): the forces differ from the symmetric ones, the box's motion is the same lift
    motion = np.diag([100.0] * 6) @ (J.T @ report.force)
    np.testing.assert_allclose(motion, [0.0, 0.5, 0.0, 0.0, 0.0, 0.0], atol=1e-6)
    assert row_residuals(np.diag(W), report.violation, report.force, blocks).max() < 1e-6


def test_the_fallback_leaves_converged_and_large_problems_to_the_solver():
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-6)
    W, dfree, blocks, _ = _landing_box(inertia=0.01 * 2 * 21.0**2 / 3)
    report = solve_with_newton_fallback(solver, W, dfree, blocks)
    assert report.converged and report.solver == "BlockGaussSeidel"
    W, dfree, blocks, _ = _landing_box()
    report = solve_with_newton_fallback(solver, W, dfree, blocks, max_rows=11)  # 12 rows: too many
    assert not report.converged and report.solver == "BlockGaussSeidel"


def test_the_residual_rule_accepts_newtons_answer_without_running_the_solver_again():
    """``accept="residual"`` (the equilibrium's reduced problems, which the solver diverges on): Newton's own
    answer, from zero, is accepted by its largest row residual against the solver's tolerance (1e-6 x 12 rows),
    and the report is Newton's: the box lifted by the depth without turning, each corner's normal force
    m depth / 4. A rule that is neither is refused by name."""
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-6)
    W, dfree, blocks, J = _landing_box()
    failed = solver.solve(W, dfree, blocks)
    assert not failed.converged
    report = solve_with_newton_fallback(solver, W, dfree, blocks, report=failed, accept="residual")
    assert report.converged and report.solver == "semi-smooth Newton" and report.error <= 1e-6 * 12
    np.testing.assert_allclose(report.force[0::3], 0.01 * 0.5 / 4, rtol=1e-8)
    np.testing.assert_allclose(np.diag([100.0] * 6) @ (J.T @ report.force), [0.0, 0.5, 0.0, 0.0, 0.0, 0.0],
                               atol=1e-8)
    assert solve_with_newton_fallback(solver, W, dfree, blocks, report=failed, accept="residual",
                                      max_rows=11) is failed  # 12 rows: too many
    with pytest.raises(ValueError, match="accept must be 'solver' or 'residual', got 'best'"):
        solve_with_newton_fallback(solver, W, dfree, blocks, accept="best")
