"""Block principal pivoting: an exact active-set solver for constraint problems without friction.

Every 1-row block is in one state at a time; a state fixes either the row's force or its violation:

- EQUALITY: ``d = target`` (always);
- BOUNDED [lo, hi]: ``d = target`` (free), or ``f = lo``, or ``f = hi``;
- FORCE (target F, violation range [lo, hi]): ``f = F``, or ``d = lo``, or ``d = hi``.

Given the states, the unknown forces follow from one dense linear solve with W restricted to the rows whose
violation is fixed. A state is feasible when the other quantity obeys the law (a free BOUNDED row's force lies
in [lo, hi], a row at lo has ``d >= target``, a FORCE row at F has ``lo <= d <= hi``, a row at its violation
bound pushes the right way, ...). Every infeasible row switches state at once (Kim and Park's block principal
pivoting for LCPs, Judice and Pires's for box-constrained ones); when that does not reduce the number of
infeasible rows for three iterations, only the last infeasible row switches (Murty's rule, which terminates
for the positive definite W of a constraint problem). A solve from the last frame's forces usually needs one
or two linear solves; from zero, a few (4 on 500 random contacts, where Block Gauss-Seidel needs about 900
sweeps).

The answer is exact to round-off, not to a tolerance: ``error`` is the largest law residual of a row
(:func:`mechanics.resolutions.row_residuals`, displacement units), and ``converged`` means every state is
feasible. Problems with FRICTION blocks (the Coulomb disk is not a polyhedron) are solved by Block Gauss-Seidel
with the equality rows eliminated (:mod:`.elimination`), with this solver's maxIterations and tolerance.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from softsim.mechanics.constraint_solvers.base import ConstraintSolver
from softsim.mechanics.constraint_solvers.gauss_seidel import BlockGaussSeidel
from softsim.mechanics.resolutions import BOUNDED, FORCE, FRICTION, Blocks, row_residuals

# row states: the force is unknown and the violation fixed (at target / lo / hi), or the force is fixed
D_TARGET, D_LO, D_HI, F_LO, F_HI, F_TARGET = range(6)
#: iterations without fewer infeasible rows before Murty's single-row rule
BACKUP_AFTER = 3


class BlockPivoting(ConstraintSolver):
    """Exact active-set solve of frictionless problems (see the module docstring)."""

    type_name = "BlockPivoting"

    def _solve(self, W, dfree, blocks, f0):
        if np.any(blocks.kind == FRICTION):
            return self._solve_by_gauss_seidel(W, dfree, blocks, f0)
        rows = _RowLaws(blocks)
        state = rows.initial_state(f0)
        scale_f = max(1.0, float(np.abs(f0).max(initial=0.0)))
        scale_d = max(float(np.abs(dfree).max(initial=0.0)), float(np.abs(rows.target).max(initial=0.0)),
                      np.finfo(float).tiny)
        best, patience, graph = np.inf, BACKUP_AFTER, []
        f = np.zeros(dfree.size)
        for iteration in range(1, self._values["maxIterations"] + 1):
            f = rows.forces(W, dfree, state)
            if f is None:  # singular W restricted to the free rows (redundant rows without compliance)
                return self._solve_by_gauss_seidel(W, dfree, blocks, f0)
            d = dfree + W @ f
            infeasible = rows.infeasible(state, f, d, 1e-11 * max(scale_f, float(np.abs(f).max(initial=0.0))),
                                         1e-11 * scale_d)
            error = float(row_residuals(np.diag(W), d, f, blocks).max(initial=0.0))
            graph.append(error)
            count = int(infeasible.sum())
            if count == 0:
                return f, iteration, error, True, graph
            if count < best:
                best, patience = count, BACKUP_AFTER
                rows.switch(state, infeasible, f, d)
            elif patience > 0:
                patience -= 1
                rows.switch(state, infeasible, f, d)
            else:
                only = np.zeros_like(infeasible)
                only[np.flatnonzero(infeasible)[-1]] = True
                rows.switch(state, only, f, d)
        return f, self._values["maxIterations"], graph[-1] if graph else 0.0, False, graph

    def _solve_by_gauss_seidel(self, W, dfree, blocks, f0):
        """Friction, or a singular W on the free rows: Block Gauss-Seidel with the equality rows eliminated,
        with this solver's iteration budget and tolerance."""
        solver = BlockGaussSeidel(maxIterations=self._values["maxIterations"], tolerance=self._values["tolerance"],
                                  scaleTolerance=self._values["scaleTolerance"],
                                  allVerified=self._values["allVerified"], eliminateEqualities=True)
        return solver._iterate(W, dfree, blocks, f0)


class _RowLaws:
    """The per-row laws of a frictionless problem (1-row blocks; 3-row EQUALITY blocks split into rows)."""

    def __init__(self, blocks: Blocks):
        self.kind = np.repeat(blocks.kind, blocks.size)
        self.target = np.repeat(blocks.target, blocks.size)
        self.lo = np.repeat(blocks.lo, blocks.size)
        self.hi = np.repeat(blocks.hi, blocks.size)
        self.bounded = self.kind == BOUNDED
        self.force_rows = self.kind == FORCE

    def initial_state(self, f0: np.ndarray) -> np.ndarray:
        """States from a warm start: a BOUNDED row at a finite bound stays there, a FORCE row away from its
        target is at a violation bound (the lower one when its force is above the target)."""
        state = np.full(self.kind.size, D_TARGET, dtype=np.int8)
        b = self.bounded
        state[b & np.isfinite(self.lo) & (f0 <= self.lo)] = F_LO
        state[b & np.isfinite(self.hi) & (f0 >= self.hi)] = F_HI
        # a BOUNDED row without a warm start force and with a finite lower bound starts there (contacts open)
        state[b & (f0 == 0.0) & (self.lo == 0.0)] = F_LO
        fr = self.force_rows
        state[fr] = F_TARGET
        state[fr & (f0 > self.target) & np.isfinite(self.lo)] = D_LO
        state[fr & (f0 < self.target) & np.isfinite(self.hi)] = D_HI
        return state

    def fixed_force(self, state: np.ndarray) -> np.ndarray:
        return np.where(state == F_LO, self.lo, np.where(state == F_HI, self.hi, self.target))

    def fixed_violation(self, state: np.ndarray) -> np.ndarray:
        return np.where(state == D_LO, self.lo, np.where(state == D_HI, self.hi, self.target))

    def forces(self, W: np.ndarray, dfree: np.ndarray, state: np.ndarray) -> np.ndarray | None:
        """The forces (m,) of the states: known ones set, the others from W_DD f_D = d_D - dfree_D - W_DK f_K."""
        known = state >= F_LO
        f = np.where(known, self.fixed_force(state), 0.0)
        unknown = np.flatnonzero(~known)
        if unknown.size:
            rhs = self.fixed_violation(state)[unknown] - dfree[unknown] - W[unknown] @ f
            try:
                factor = sla.cho_factor(W[np.ix_(unknown, unknown)], check_finite=False)
            except np.linalg.LinAlgError:
                return None
            f[unknown] = sla.cho_solve(factor, rhs, check_finite=False)
        return f

    def infeasible(self, state, f, d, tol_f: float, tol_d: float) -> np.ndarray:
        """Rows whose state breaks their law's other condition (with round-off slack)."""
        excess = d - self.target
        bad = np.zeros(state.size, dtype=bool)
        b = self.bounded
        bad |= b & (state == D_TARGET) & ((f < self.lo - tol_f) | (f > self.hi + tol_f))
        bad |= b & (state == F_LO) & (excess < -tol_d)
        bad |= b & (state == F_HI) & (excess > tol_d)
        fr = self.force_rows
        bad |= fr & (state == F_TARGET) & ((d < self.lo - tol_d) | (d > self.hi + tol_d))
        bad |= fr & (state == D_LO) & (f < self.target - tol_f)
        bad |= fr & (state == D_HI) & (f > self.target + tol_f)
        return bad

    def switch(self, state, rows, f, d) -> None:
        """Move the given rows to the state their violated condition points to."""
        b, fr = self.bounded & rows, self.force_rows & rows
        free = b & (state == D_TARGET)
        state[free & (f < self.lo)] = F_LO
        state[free & (f > self.hi)] = F_HI
        state[b & ((state == F_LO) | (state == F_HI)) & ~free] = D_TARGET
        at_force = fr & (state == F_TARGET)
        state[at_force & (d < self.lo)] = D_LO
        state[at_force & (d > self.hi)] = D_HI
        state[fr & ((state == D_LO) | (state == D_HI)) & ~at_force] = F_TARGET
