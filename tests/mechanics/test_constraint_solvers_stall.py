"""The exact solver's friction sweeps stop, not converged, when they no longer make progress
(:func:`mechanics.constraint_solvers.exact.stalled`), and keep their answers where they converge.

The problems: W = J K^-1 J^T of more friction rows than degrees of freedom (redundant contacts, like the finger
pressed into the soft block), mu = 2. On some, block Gauss-Seidel converges; on others its certificate wanders or
cycles for the whole 200,000 sweeps (finger_block.toml with friction 2: 19 such solves of 138 rows, 5 s each)."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import exact
from softsim.mechanics.constraint_solvers.exact import FRICTION_CHUNK, FRICTION_SWEEPS, STALL_WINDOW, ExactSolver
from softsim.mechanics.resolutions import Blocks, complementarity_residual
from tests.mechanics.test_constraint_solvers import compliance


def redundant_friction(contacts: int, ndof: int, seed: int):
    """W (3c, 3c) of ``contacts`` friction contacts on ``ndof`` < 3c degrees of freedom (a 1e-9 relative
    regularization keeps its diagonal positive and makes it definite), dfree (3c,) with every normal row closing,
    blocks with mu = 2."""
    W, rng = compliance(3 * contacts, ndof=ndof, seed=seed)
    W = W + 1e-9 * np.trace(W) / W.shape[0] * np.eye(3 * contacts)
    dfree = rng.uniform(-0.5, 0.5, 3 * contacts)
    dfree[0::3] = rng.uniform(-1.0, 0.0, contacts)
    return W, dfree, Blocks.friction(contacts, mu=2.0)


def test_stalled_rule():
    """Falling by 1e3 per chunk (the gripper's grasp): never stalled. The certificate of one of finger_block's
    solves (relative to |dfree|, per chunk of 2000 sweeps, cycling with period 11): stalled after 6 chunks, its
    best of the last 5 (0.026) above half the best before them (0.042)."""
    falling = [1e-3 * 1e-3 ** k for k in range(10)]
    assert not any(exact.stalled(falling[:k]) for k in range(1, 11))
    cycling = [0.042, 0.038, 0.042, 0.038, 0.034, 0.026, 0.017, 0.021, 0.022, 0.031, 0.034]
    assert [exact.stalled(cycling[:k]) for k in range(1, 7)] == [False] * 5 + [True]
    assert exact.stalled([1.0] * (STALL_WINDOW + 1))
    assert not exact.stalled([1.0] * STALL_WINDOW)


@pytest.mark.parametrize(("contacts", "ndof", "seed"), [(4, 6, 2), (6, 9, 3), (8, 12, 1)])
def test_converged_friction_solves_are_unchanged(monkeypatch, contacts, ndof, seed):
    """Solves that converge give the same forces, to the bit, as the sweeps without the stall rule, and their
    certificate (the solver-independent complementarity residual) is within 1e-14 of |dfree|. (8, 12, 1) takes
    24,000 sweeps (12 chunks: measured), more than a window, so the rule was checked on the way."""
    W, dfree, blocks = redundant_friction(contacts, ndof, seed)
    report = ExactSolver().solve(W, dfree, blocks)
    assert report.converged
    assert complementarity_residual(W, dfree, report.force, blocks) <= 1e-14 * np.abs(dfree).max()
    monkeypatch.setattr(exact, "stalled", lambda certificates: False)
    unstopped = ExactSolver().solve(W, dfree, blocks)
    assert unstopped.converged and unstopped.iterations == report.iterations
    np.testing.assert_array_equal(report.force, unstopped.force)
    if (contacts, ndof, seed) == (8, 12, 1):
        assert report.iterations > (STALL_WINDOW + 1) * FRICTION_CHUNK


def test_cycling_friction_sweeps_stop_and_say_so(monkeypatch):
    """10 contacts on 12 degrees of freedom: the sweeps stop after 6 chunks (12,000 sweeps instead of 200,000),
    not converged, with the error their forces really have (1.5 of |dfree|: measured). Without the rule all
    200,000 sweeps end no better (their certificate is above half the stopped one: 1.5 too)."""
    W, dfree, blocks = redundant_friction(10, 12, 0)
    report = ExactSolver().solve(W, dfree, blocks)
    assert not report.converged
    assert report.iterations <= 2 * (STALL_WINDOW + 1) * FRICTION_CHUNK
    assert report.error == pytest.approx(complementarity_residual(W, dfree, report.force, blocks), rel=1e-12)
    assert report.error > 0.1 * np.abs(dfree).max()
    monkeypatch.setattr(exact, "stalled", lambda certificates: False)
    unstopped = ExactSolver().solve(W, dfree, blocks)
    assert not unstopped.converged and unstopped.iterations == FRICTION_SWEEPS
    assert unstopped.error > 0.5 * report.error
