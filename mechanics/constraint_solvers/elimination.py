"""Exact elimination of the equality rows before an iterative complementarity solve.

Equality (bilateral) rows obey ``d_E = target_E`` whatever the other rows do, so their multipliers follow from
the others' by a linear solve with their own block of W::

    f_E = W_EE^-1 (target_E - dfree_E - W_ER f_R)

and the other rows see the Schur complement of W_EE (SPD when W is)::

    d_R = dfree_R + W_RE W_EE^-1 (target_E - dfree_E) + (W_RR - W_RE W_EE^-1 W_ER) f_R

An iterative solver then iterates on the R rows only (contacts, friction, bounded actuators). A glued body makes
W_EE stiff and strongly coupled: Gauss-Seidel sweeps over its rows converge slowly (more than 1000 sweeps on
``gripper_object``'s 147 glue rows), while the Cholesky factorization of W_EE solves them exactly (16 sweeps of
the 74 other rows). The answer is that of the full problem: the equality rows hold to round-off and the R rows
to the solver's tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from softsim.mechanics.resolutions import EQUALITY, Blocks


@dataclass
class EqualityElimination:
    """The reduced problem on the non-equality rows and what is needed to recover every multiplier.

    rows_e, rows_r: (m_E,), (m_R,) row indices; W_r (m_R, m_R), dfree_r (m_R,), blocks_r: the reduced problem;
    X = W_EE^-1 W_ER (m_E, m_R); y = W_EE^-1 (target_E - dfree_E) (m_E,).
    """

    rows_e: np.ndarray
    rows_r: np.ndarray
    W_r: np.ndarray
    dfree_r: np.ndarray
    blocks_r: Blocks
    X: np.ndarray
    y: np.ndarray

    def expand(self, force_r: np.ndarray) -> np.ndarray:
        """The multipliers of every row (m,) from those of the reduced rows (m_R,)."""
        force = np.empty(self.rows_e.size + self.rows_r.size)
        force[self.rows_r] = force_r
        force[self.rows_e] = self.y - self.X @ force_r
        return force


def _rows(blocks: Blocks, mask: np.ndarray) -> np.ndarray:
    """The row indices of the blocks selected by ``mask`` (b,), in order."""
    return np.flatnonzero(np.repeat(mask, blocks.size))


def eliminate_equalities(W: np.ndarray, dfree: np.ndarray, blocks: Blocks) -> EqualityElimination | None:
    """The reduced problem, or None when there is nothing to eliminate (no equality rows, or only those) or
    when W_EE is not positive definite (redundant equalities without compliance: the caller then iterates on
    the whole problem, as without elimination)."""
    equality = blocks.kind == EQUALITY
    if not equality.any() or equality.all():
        return None
    rows_e, rows_r = _rows(blocks, equality), _rows(blocks, ~equality)
    try:
        factor = sla.cho_factor(W[np.ix_(rows_e, rows_e)], check_finite=False)
    except np.linalg.LinAlgError:
        return None
    W_er = W[np.ix_(rows_e, rows_r)]
    X = sla.cho_solve(factor, W_er, check_finite=False)
    y = sla.cho_solve(factor, np.repeat(blocks.target[equality], blocks.size[equality]) - dfree[rows_e],
                      check_finite=False)
    W_r = W[np.ix_(rows_r, rows_r)] - W_er.T @ X
    keep = ~equality
    size = blocks.size[keep]
    blocks_r = Blocks(np.concatenate(([0], np.cumsum(size)[:-1])), size, blocks.kind[keep], blocks.target[keep],
                      blocks.lo[keep], blocks.hi[keep], blocks.mu[keep])
    return EqualityElimination(rows_e, rows_r, 0.5 * (W_r + W_r.T), dfree[rows_r] + W_er.T @ y, blocks_r, X, y)


def solve_equalities(W: np.ndarray, dfree: np.ndarray, blocks: Blocks) -> np.ndarray | None:
    """The multipliers of a problem made only of equality rows, W f = target - dfree (None: W not SPD)."""
    try:
        factor = sla.cho_factor(W, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    return sla.cho_solve(factor, np.repeat(blocks.target, blocks.size) - dfree, check_finite=False)
