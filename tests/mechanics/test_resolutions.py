"""Blocks table and the resolution laws (hand-computed numbers)."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers.gauss_seidel import block_arrays, gauss_seidel_sweep
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import (
    BOUNDED,
    EQUALITY,
    FORCE,
    FRICTION,
    Blocks,
    complementarity_residual,
    project_all,
    slack_at_bound,
)


def one_sweep(W, dfree, blocks, f=None):
    """One Gauss-Seidel sweep (numba resolve_block) and one Jacobi step (numpy project_all) from f."""
    f = np.zeros(blocks.n_rows) if f is None else np.asarray(f, dtype=float)
    f_gs = f.copy()
    gauss_seidel_sweep(W, dfree, f_gs, *block_arrays(blocks, W), 1e-3)
    f_jacobi = project_all(blocks, W, np.diag(W).copy(), blocks.local_inverses(W), f, dfree + W @ f)
    return f_gs, f_jacobi


def test_constructors_and_concatenate_offsets():
    parts = [
        Blocks.equality(2, target=0.5),
        Blocks.friction(2, mu=[0.3, 0.6]),
        Blocks.unilateral(1),
        Blocks.bounded(1, target=2.0, lo=-1.0, hi=3.0),
        Blocks.force(1, target=4.0, lo=-0.1, hi=0.2),
        Blocks.equality(3, block_size=3),
        Blocks.empty(),
    ]
    blocks = Blocks.concatenate(parts)
    assert blocks.n_rows == 2 + 6 + 1 + 1 + 1 + 3
    assert blocks.n_blocks == 2 + 2 + 1 + 1 + 1 + 1
    np.testing.assert_array_equal(blocks.start, [0, 1, 2, 5, 8, 9, 10, 11])
    np.testing.assert_array_equal(blocks.size, [1, 1, 3, 3, 1, 1, 1, 3])
    np.testing.assert_array_equal(
        blocks.kind, [EQUALITY, EQUALITY, FRICTION, FRICTION, BOUNDED, BOUNDED, FORCE, EQUALITY]
    )
    np.testing.assert_array_equal(blocks.mu[2:4], [0.3, 0.6])
    assert blocks.lo[4] == 0.0 and blocks.hi[4] == np.inf
    assert blocks.target[5] == 2.0 and blocks.hi[6] == 0.2
    np.testing.assert_array_equal(blocks.row_block[:6], [0, 1, 2, 2, 2, 3])
    assert Blocks.concatenate([]).n_rows == 0


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Blocks.bounded(2, lo=1.0, hi=0.0), "lo must be <= hi"),
        (
            lambda: Blocks(np.array([0]), np.array([2]), np.array([0]), 0.0, 0.0, 1.0, 0.0),
            "size must be 1 or 3",
        ),
        (
            lambda: Blocks(np.array([0]), np.array([1]), np.array([FRICTION]), 0.0, 0.0, 1.0, 0.0),
            "exactly 3 rows",
        ),
        (lambda: Blocks(np.array([0]), np.array([1]), np.array([7]), 0.0, 0.0, 1.0, 0.0), "kind must be in"),
        (lambda: Blocks(np.array([1]), np.array([1]), np.array([0]), 0.0, 0.0, 1.0, 0.0), "contiguous"),
        (lambda: Blocks.friction(1, mu=-0.1), "mu must be"),
        (lambda: Blocks.bounded(2, target=[1.0, 2.0, 3.0]), "target has 3 values"),
        (lambda: Blocks.equality(4, block_size=3), "block_size"),
    ],
)
def test_invalid_blocks_raise_parameter_error(make, words):
    with pytest.raises(ParameterError, match=words):
        make()


def test_bounded_step_and_clamp():
    W = np.array([[2.0]])
    # f = 0 - (d - target)/W = -(-4 - 1)/2 = 2.5, inside [0, 3]
    f_gs, f_j = one_sweep(W, np.array([-4.0]), Blocks.bounded(1, target=1.0, lo=0.0, hi=3.0))
    assert f_gs[0] == pytest.approx(2.5) and f_j[0] == pytest.approx(2.5)
    # 4.5 clamped to hi = 3; and unilateral separation clamps to 0
    f_gs, _ = one_sweep(W, np.array([-8.0]), Blocks.bounded(1, target=1.0, lo=0.0, hi=3.0))
    assert f_gs[0] == 3.0
    f_gs, f_j = one_sweep(W, np.array([5.0]), Blocks.unilateral(1))
    assert f_gs[0] == 0.0 and f_j[0] == 0.0


def test_force_kind_uses_correct_bound_test_not_sofa_double_count():
    W = np.array([[1.0]])
    blocks = Blocks.force(1, target=1.0, lo=-np.inf, hi=1.5)
    # From the solution f = 1 (d = 1 <= 1.5), the step must keep f = 1. SOFA's test W*F + d = 2 > 1.5 would
    # move to f = 1 - (1 - 1.5) = 1.5 instead.
    f_gs, f_j = one_sweep(W, np.array([0.0]), blocks, f=[1.0])
    assert f_gs[0] == 1.0 and f_j[0] == 1.0
    # With W = 2 the imposed force would give d = 2 > 1.5: d is driven to the bound, f = 1.5/2 = 0.75.
    f_gs, f_j = one_sweep(np.array([[2.0]]), np.array([0.0]), blocks)
    assert f_gs[0] == pytest.approx(0.75) and f_j[0] == pytest.approx(0.75)
    # Lower bound: dfree = -3, F = 1, W = 1 -> d_if_F = -2 < lo = -1 -> f = (lo - dfree)/W = 2
    f_gs, _ = one_sweep(W, np.array([-3.0]), Blocks.force(1, target=1.0, lo=-1.0, hi=1.0))
    assert f_gs[0] == pytest.approx(2.0)


def test_equality_three_rows_solves_its_block_in_one_step():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    W = A @ A.T + 3 * np.eye(3)
    dfree = np.array([0.3, -1.2, 0.7])
    blocks = Blocks.equality(3, target=0.25, block_size=3)
    f_gs, f_j = one_sweep(W, dfree, blocks)
    np.testing.assert_allclose(dfree + W @ f_gs, 0.25, atol=1e-13)
    np.testing.assert_allclose(f_j, f_gs, atol=1e-13)


def test_friction_step_matches_sofa_formula():
    W = np.array([[2.0, 0.4, -0.2], [0.4, 3.0, 0.1], [-0.2, 0.1, 1.0]])
    dfree = np.array([-1.0, 0.5, -0.3])
    mu = 0.4
    blocks = Blocks.friction(1, mu=mu)
    f_gs, f_j = one_sweep(W, dfree, blocks)
    fn = 1.0 / 2.0  # f_n = 0 - d_n/W_nn
    dt, ds = 0.5 + 0.4 * fn, -0.3 - 0.2 * fn  # tangential violation corrected for the normal change
    ft, fs = -2 * dt / 4.0, -2 * ds / 4.0  # mean compliance (W_tt + W_ss)/2 = 2
    scale = mu * fn / np.hypot(ft, fs)  # |(ft, fs)| = 0.409 > mu f_n = 0.2: radial projection
    assert scale < 1
    np.testing.assert_allclose(f_gs, [fn, ft * scale, fs * scale], rtol=1e-14)
    np.testing.assert_allclose(f_j, f_gs, rtol=1e-14)
    # Separation: d_n > 0 gives all three forces 0
    f_gs, f_j = one_sweep(W, np.array([1.0, 0.5, 0.5]), blocks, f=[0.1, 0.01, 0.0])
    np.testing.assert_array_equal(f_gs, 0.0)
    np.testing.assert_array_equal(f_j, 0.0)


def test_complementarity_residual_numbers():
    W = np.array([[2.0]])
    blocks = Blocks.unilateral(1)
    # exact solution of d = -4 + 2 f: f = 2, d = 0
    assert complementarity_residual(W, np.array([-4.0]), np.array([2.0]), blocks) == 0.0
    # f = 1: d = -2, projected step gives 2, residual = W |1 - 2| = 2
    assert complementarity_residual(W, np.array([-4.0]), np.array([1.0]), blocks) == pytest.approx(2.0)
    # equality: |d - target| = |-4 + 2*1 - 0.5| = 2.5
    assert complementarity_residual(W, np.array([-4.0]), np.array([1.0]), Blocks.equality(1, 0.5)) == 2.5
    # friction sliding at the cone edge: W = diag(1, 2, 2), dfree = (-1, 2, 0), mu = 0.5:
    # f_n = 1, f_t = -0.5 (|f_t| = mu f_n), d_t = 2 - 1 = 1 opposite to f_t -> residual 0
    Wf = np.diag([1.0, 2.0, 2.0])
    assert complementarity_residual(
        Wf, np.array([-1.0, 2.0, 0.0]), np.array([1.0, -0.5, 0.0]), Blocks.friction(1, 0.5)
    ) == pytest.approx(0.0, abs=1e-15)
    # the same force with the tangential force in the slip direction violates maximal dissipation
    assert complementarity_residual(
        Wf, np.array([-1.0, 2.0, 0.0]), np.array([1.0, 0.5, 0.0]), Blocks.friction(1, 0.5)
    ) == pytest.approx(2.0)


def test_slack_at_bound_holds_a_row_on_its_bound_only_while_its_law_is_slack():
    """Cases by hand, force bounds [0, 500]: a cable with no force whose length passes its value by 0.4 is held
    at lo; the same cable told to shorten 0.3 more than it is (gap -0.3) is a pull, not held; a taut cable (120)
    is held at neither; one on its upper bound 500 still short of its value (gap -1) is held at hi, and at hi with
    the law met past it (gap +1) is not."""
    f = np.array([0.0, 0.0, 120.0, 500.0, 500.0])
    gap = np.array([0.4, -0.3, 0.0, -1.0, 1.0])
    at_lo, at_hi = slack_at_bound(f, gap, np.zeros(5), np.full(5, 500.0))
    assert at_lo.tolist() == [True, False, False, False, False]
    assert at_hi.tolist() == [False, False, False, True, False]
