"""The complementarity solve of a step whose W = J K^-1 J^T is not positive on its diagonal.

With the exact tangent, K is indefinite at many stable constrained equilibria: a finger bent by its cable is
a column compressed beyond its buckling load, held by the cable. K is then positive only on the motions the
cable allows, and the cable's own W_ii = J_i K^-1 J_i^T is negative. The Newton step on the constrained system
is still well defined (its KKT matrix is non-singular), but an iterative complementarity solver needs a
positive diagonal.

The rows that cause it are the actuators' and the drag's (equality rows, or displacement rows with force
bounds): they are solved as equalities, exactly (LU of their block of W), with the other rows seeing the
Schur complement, which is positive for the contacts of a stable state; a bounded row whose force leaves its
bounds is fixed at the bound, and released again when its law asks for it (an active-set loop on these few
rows, as in a primal active-set QP method).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla

from softsim.mechanics.constraint_solvers.base import ConstraintReport
from softsim.mechanics.constraint_solvers.semismooth import solve_with_newton_fallback
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FRICTION, Blocks

#: active-set changes on the actuator rows before the solve gives up
MAX_ACTIVE_SET_CHANGES = 20
#: the solver named in the report of a friction block the iterative solvers refuse (W with a non-positive
#: diagonal) when semi-smooth Newton finds no answer either (the frame's message says so)
REFUSED = "refused (W has a non-positive diagonal)"


def needs_indefinite_projection(W: np.ndarray) -> bool:
    """True when W (m, m) has a diagonal entry that is not positive (an iterative solver refuses it)."""
    return bool(W.shape[0]) and bool(np.any(np.diag(W) <= 0.0))


def equality_like_rows(blocks: Blocks, ramped_rows: np.ndarray) -> np.ndarray:
    """Rows (k,) of single-row EQUALITY/BOUNDED blocks and of 3-row EQUALITY blocks that belong to a ramped
    constraint (``ramped_rows`` (m,) bool): actuators in displacement mode, the drag, attachments."""
    kind = np.repeat(blocks.kind, blocks.size)
    return np.flatnonzero(ramped_rows & ((kind == EQUALITY) | (kind == BOUNDED)))


def solve_indefinite(constraint_solver, W: np.ndarray, dfree: np.ndarray, blocks: Blocks, rows_a: np.ndarray,
                     initial_force: np.ndarray | None = None) -> ConstraintReport:
    """Multipliers (m,) for W (m, m) (any sign on the diagonal of the ``rows_a`` rows), dfree (m,), blocks.

    The ``rows_a`` rows are equalities with force bounds; the others are solved by ``constraint_solver`` on
    their Schur complement (directly where it cannot: :func:`_exact_reduced_solve`). Raises ValueError when the
    equality block is singular or a reduced problem without friction blocks still has a non-positive diagonal
    (a report that is not converged when semi-smooth Newton finds no answer to one with friction blocks).
    """
    started = time.perf_counter()
    m = dfree.size
    target = np.repeat(blocks.target, blocks.size)
    lo, hi = np.repeat(blocks.lo, blocks.size), np.repeat(blocks.hi, blocks.size)
    kind = np.repeat(blocks.kind, blocks.size)
    rows_a = np.asarray(rows_a, dtype=np.int64)
    is_a = np.zeros(m, dtype=bool)
    is_a[rows_a] = True
    rows_r = np.flatnonzero(~is_a)
    rows_b = rows_a[kind[rows_a] == BOUNDED]  # the rows that may be held at a force bound
    state = np.zeros(m, dtype=np.int8)  # per row: -1 held at lo, 0 free, 1 held at hi
    force = np.zeros(m) if initial_force is None or initial_force.size != m else initial_force.copy()
    if initial_force is not None and initial_force.size == m:
        # the warm start's active set: a row that ended on a bound starts held there (a slack cable at 0), so that
        # a step near the last one's answer takes one pass instead of finding that set again row by row
        state[rows_b] = np.where(force[rows_b] <= lo[rows_b], -1, np.where(force[rows_b] >= hi[rows_b], 1, 0))
    reduced_report = None
    seen, cycled = set(), False
    for _ in range(MAX_ACTIVE_SET_CHANGES + 1):
        rows_e = rows_a[state[rows_a] == 0]
        rows_f = np.sort(rows_a[state[rows_a] != 0])
        f_fixed = np.where(state[rows_f] < 0, lo[rows_f], hi[rows_f])
        # rows E: W_EE f_E + W_ER f_R + W_EF f_F + dfree_E = target_E
        q = dfree.copy()
        if rows_f.size:
            q += W[:, rows_f] @ f_fixed
        f_r = force[rows_r]
        if rows_e.size:
            try:
                lu = sla.lu_factor(W[np.ix_(rows_e, rows_e)], check_finite=False)
            except (np.linalg.LinAlgError, ValueError) as error:
                raise ValueError(f"the actuator rows' block of W is singular ({error})") from error
            if not np.all(np.isfinite(lu[0])) or np.any(np.diag(lu[0]) == 0.0):
                raise ValueError("the actuator rows' block of W is singular")
            X = sla.lu_solve(lu, W[np.ix_(rows_e, rows_r)], check_finite=False)
            y = sla.lu_solve(lu, target[rows_e] - q[rows_e], check_finite=False)
        else:
            X, y = np.zeros((0, rows_r.size)), np.zeros(0)
        if rows_r.size:
            W_r = W[np.ix_(rows_r, rows_r)] - W[np.ix_(rows_r, rows_e)] @ X
            q_r = q[rows_r] + W[np.ix_(rows_r, rows_e)] @ y
            keep = np.isin(blocks.start, rows_r)
            size = blocks.size[keep]
            blocks_r = Blocks(np.concatenate(([0], np.cumsum(size)[:-1])), size, blocks.kind[keep],
                              blocks.target[keep], blocks.lo[keep], blocks.hi[keep], blocks.mu[keep])
            indefinite = needs_indefinite_projection(W_r)
            if indefinite and _single_bounded_rows(blocks_r):
                reduced_report = solve_box_active_set(W_r, q_r, blocks_r, f_r)
            elif indefinite and np.any(blocks_r.kind == FRICTION):
                # friction rows the iterative solvers refuse: semi-smooth Newton, as when they fail (before, the
                # step failed and its increment was cut: finger_block with friction 0.5, 1 mm of cable a frame,
                # ended 4 of 30 frames unconverged). Other laws keep that path: PneunetGripper's pressure row with
                # W_ii < 0 solved this way took its 150 kPa jump in 27 steps instead of 21.
                refused = ConstraintReport(f_r.copy(), q_r + W_r @ f_r, 0, np.inf, False, np.array([np.inf]), 0.0,
                                           num_constraints=f_r.size, solver=REFUSED)
                reduced_report = _exact_reduced_solve(constraint_solver, W_r, q_r, blocks_r, f_r, refused)
            else:
                reduced_report = constraint_solver.solve(W_r, q_r, blocks_r, initial_force=f_r)
                if not (reduced_report.converged and np.all(np.isfinite(reduced_report.force))):
                    reduced_report = _exact_reduced_solve(constraint_solver, W_r, q_r, blocks_r, f_r, reduced_report)
            f_r = reduced_report.force
        force = np.zeros(m)
        force[rows_r] = f_r
        force[rows_f] = f_fixed
        if rows_e.size:
            force[rows_e] = y - X @ f_r
        d = dfree + W @ force
        free_b = rows_b[state[rows_b] == 0]
        new = state.copy()
        new[rows_b] = next_active_set(state[rows_b], force[rows_b], d[rows_b], target[rows_b], lo[rows_b],
                                      hi[rows_b])
        changed = not np.array_equal(new, state)
        state = new
        key = state[rows_a].tobytes()
        if changed and key in seen:
            # a cycle: with a negative W_ii the linearised row has no consistent state (held at its bound it
            # asks to be released, released it needs a force beyond the bound). The last set, with every such
            # row held at its bound, is the step's answer; the laws are checked again at the new state.
            cycled = True
            force[free_b] = np.minimum(np.maximum(force[free_b], lo[free_b]), hi[free_b])
            break
        seen.add(key)
        if not changed:
            break
    d = dfree + W @ force
    error = float(np.max(np.abs(d[rows_a] - target[rows_a])[state[rows_a] == 0], initial=0.0))
    converged = (not changed or cycled) and (reduced_report is None or reduced_report.converged)
    iterations = 0 if reduced_report is None else reduced_report.iterations
    if reduced_report is not None:
        error = max(error, reduced_report.error)
    return ConstraintReport(force, d, iterations, error, converged, np.array([error]), time.perf_counter() - started,
                            num_constraints=m, solver="active-set on the actuator rows")


def _exact_reduced_solve(constraint_solver, W_r: np.ndarray, q_r: np.ndarray, blocks_r: Blocks,
                         f_r: np.ndarray | None, failed: ConstraintReport) -> ConstraintReport:
    """The reduced problem (W_r (k, k), q_r (k,), blocks_r) solved by a direct method after the scene's
    iterative solver failed on it (``failed``). The Schur complement of an exact tangent can be indefinite off
    its diagonal too (a finger pressed into a soft block): projected Gauss-Seidel then diverges to non-finite
    forces, or crawls, while the step has an answer.

    Also called without the iterative solver's attempt when W_r's diagonal is not positive (which that solver
    refuses): ``failed`` is then a report that says so.

    Single bounded rows (frictionless contacts): the primal-dual active set of :func:`solve_box_active_set`,
    accepted when it converged. Other laws (friction) on at most NEWTON_MAX_ROWS rows: semi-smooth Newton from
    the last forces, then from zero, accepted when its largest row residual meets the solver's tolerance
    (:func:`~mechanics.constraint_solvers.semismooth.solve_with_newton_fallback`, ``accept="residual"``).
    Returns ``failed`` otherwise."""
    if _single_bounded_rows(blocks_r):
        try:
            report = solve_box_active_set(W_r, q_r, blocks_r, f_r)
        except ValueError:
            return failed
        return report if report.converged else failed
    return solve_with_newton_fallback(constraint_solver, W_r, q_r, blocks_r, initial_force=f_r, report=failed,
                                      accept="residual")


def next_active_set(state: np.ndarray, force: np.ndarray, d: np.ndarray, target: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray) -> np.ndarray:
    """One pass of the hold-and-release rules of bounded rows (both active-set solves here use them).

    ``state`` (k,) int: -1 held at its lower force bound, 0 free, 1 held at its upper one; ``force``, ``d`` (the
    rows' violation after the pass), ``target``, ``lo``, ``hi``: (k,). A free row whose force left [lo, hi] is
    held at the bound it crossed; a held row whose law pulls it back inside (d < target at lo, d > target at hi)
    is freed. Returns the new state (k,), a new array.
    """
    new = state.copy()
    new[(state == 0) & (force < lo)] = -1
    new[(state == 0) & (force > hi)] = 1
    new[(state == -1) & (d < target)] = 0
    new[(state == 1) & (d > target)] = 0
    return new


def _single_bounded_rows(blocks: Blocks) -> bool:
    """Whether every block is one BOUNDED row (frictionless contacts, unilateral planes, bounded actuators)."""
    return bool(blocks.size.size) and bool(np.all(blocks.size == 1)) and bool(np.all(blocks.kind == BOUNDED))


def solve_box_active_set(W: np.ndarray, dfree: np.ndarray, blocks: Blocks,
                         initial_force: np.ndarray | None = None) -> ConstraintReport:
    """The box complementarity problem of single BOUNDED rows, d = dfree + W f, lo <= f <= hi, with d = target
    where lo < f < hi, d >= target where f = lo and d <= target where f = hi, by a primal-dual active set: for
    a W (m, m) whose diagonal is not positive (the exact tangent's Schur complement, where a plane's row sees the
    compliance of a body past a limit point), which no iterative solver takes. Each pass solves the free rows
    exactly (LU), moves a row whose force leaves its bounds to the bound and frees a bound row whose law asks for
    it; it stops when nothing changes, or on a cycle (then not converged). Raises ValueError when the free rows'
    block is singular."""
    started = time.perf_counter()
    m = dfree.size
    target, lo, hi = blocks.target.astype(float), blocks.lo.astype(float), blocks.hi.astype(float)
    force = np.zeros(m) if initial_force is None or initial_force.size != m else np.clip(initial_force, lo, hi)
    state = np.where(force <= lo, -1, np.where(force >= hi, 1, 0))  # -1: at lo, 0: free, 1: at hi
    state[(state == -1) & (dfree + W @ force < target)] = 0  # a violated row starts free
    seen: set = set()
    converged = False
    passes = 0
    while passes <= MAX_ACTIVE_SET_CHANGES:
        passes += 1
        free = np.flatnonzero(state == 0)
        bound = np.flatnonzero(state != 0)
        force[bound] = np.where(state[bound] < 0, lo[bound], hi[bound])
        if free.size:
            rhs = target[free] - dfree[free] - W[np.ix_(free, bound)] @ force[bound]
            try:
                force[free] = sla.solve(W[np.ix_(free, free)], rhs, check_finite=False)
            except (np.linalg.LinAlgError, ValueError) as error:
                raise ValueError(f"the contact rows' block of W is singular ({error})") from error
        d = dfree + W @ force
        new = next_active_set(state, force, d, target, lo, hi)
        if np.array_equal(new, state):
            converged = True
            break
        key = new.tobytes()
        if key in seen:
            break
        seen.add(key)
        state = new
    d = dfree + W @ force
    law = np.where(state == 0, np.abs(d - target), np.where(state < 0, np.maximum(target - d, 0.0),
                                                              np.maximum(d - target, 0.0)))
    error = float(law.max(initial=0.0))
    return ConstraintReport(force, d, passes, error, converged, np.array([error]), time.perf_counter() - started,
                            num_constraints=m, solver="active set on the bounded rows")
