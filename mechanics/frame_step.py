"""One frame of the constraint resolution method (seed 001, DESIGN.md section 2).

Step I    free configuration: static Newton on f_int(x) + f_ext = 0 over the free DOFs with lambda = 0,
          warm-started from the last frame's positions.
Step II   projection into constraint space at x_free with the last tangent's factorization:
          W = J K^-1 J^T (+ C for compliant rows), one multi-right-hand-side solve for K^-1 J^T;
          delta_free = violations at x_free; complementarity solve for lambda.
Step III  correction x = x_free + K^-1 J^T lambda.

J and the violations are evaluated at x_free (SoftRobots evaluates J at the step-start x, which in its dynamic
step lies next to x_free; in a static step x_free is the unconstrained equilibrium, possibly far from the
last constrained state, and linearising there made successive frames oscillate). Frictional contacts measure
their tangential rows from the last frame's positions (``measures_motion``), so sticking means "no slip since
the last frame".

Optional (``reequilibration_iterations``, off by default): outer iterations that make large actuations exact
instead of linearised. Each one takes a Newton step on the equilibrium with the constraint forces J^T lambda
as an external load and re-projects: at the current x, with K and R = f_int + f_ext, the free step is
K^-1 R, the violation is linearised to x + K^-1 R, the complementarity problem gives the total lambda and
x <- x + K^-1 (R + J^T lambda). This is a Newton (SQP) iteration on the constrained equilibrium, so it
converges where holding J^T lambda fixed and re-solving the free problem to convergence does not
(measured on the finger: the fixed-load variant moved 120 mm away and diverged).

Warm starts (not in SOFA's GenericConstraintSolver, which starts every step from zero): the complementarity
solves start from the last frame's multipliers of each constraint whose row count is unchanged, the
projection about x_free from the last projection's and the re-equilibration from the last final ones. An
iterative solver then stops after a sweep or two in a still or slowly moving scene (the gripper scene's
still frames: 2036 + 2511 Gauss-Seidel sweeps -> 1 + 1, 28 -> 6.5 ms) at the same state within its tolerance.

lambda is a generalised force in the scene's force unit (static mode: no dt factor, unlike SOFA's
EulerImplicit impulses; reference/sofa-constraints.md section 3.1).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from mechanics.resolutions import Blocks

logger = logging.getLogger(__name__)

#: extra projections per frame for contacts that appear only at the corrected positions
MAX_REDETECTIONS = 3


@dataclass
class ConstraintSystem:
    """The stacked constraint rows of one frame, restricted to the free DOFs.

    J_free : csr (m, n_free); dfree : (m,); blocks : resolutions; compliance : (m,);
    row_ranges : one ``slice`` of rows per constraint, in the order of ``constraints``.
    """

    constraints: list
    J_free: sp.csr_matrix
    dfree: np.ndarray
    blocks: Blocks
    compliance: np.ndarray
    row_ranges: list[slice]

    @property
    def n_rows(self) -> int:
        return int(self.dfree.shape[0])

    def initial_force(self, last_forces) -> np.ndarray | None:
        """The multipliers ``(m,)`` to start the complementarity solve from: each constraint's rows from
        ``last_forces`` (pairs ``(constraint, force)`` of the last frame) when its row count is unchanged,
        else zeros; None when no constraint has last forces."""
        if not last_forces:
            return None
        start, found = np.zeros(self.n_rows), False
        for constraint, rows in zip(self.constraints, self.row_ranges):
            force = next((f for c, f in last_forces if c is constraint), None)
            if force is not None and force.shape == (rows.stop - rows.start,):
                start[rows] = force
                found = True
        return start if found else None

    def rows_of(self, constraint) -> slice | None:
        for candidate, rows in zip(self.constraints, self.row_ranges):
            if candidate is constraint:
                return rows
        return None


@dataclass
class FrameReport:
    """What one frame did; the GUI and the CLI show it.

    ``times`` holds seconds per phase: assembly (forces and tangents), factorization, newton_solve (the rest
    of the Newton solve: triangular solves, residual norms), build (constraint rows), W, constraint_solve,
    correction, and reequilibration when enabled. ``forces`` and ``projection_forces`` start the next frame's
    complementarity solves (``solve_frame(last_report=...)``).
    """

    frame: int
    ok: bool
    message: str
    newton: object | None = None
    constraint: object | None = None
    n_constraint_rows: int = 0
    times: dict[str, float] = field(default_factory=dict)
    x_free: np.ndarray | None = None
    #: (constraint, multipliers (rows,)) of every constraint that had rows this frame: the final ones and
    #: those of the projection about x_free (they differ when the frame re-equilibrates)
    forces: list = field(default_factory=list)
    projection_forces: list = field(default_factory=list)

    @property
    def wall_time(self) -> float:
        return sum(self.times.values())


def build_constraint_system(constraints, x: np.ndarray, x_free: np.ndarray, free_dofs: np.ndarray, *,
                            linearize_at: np.ndarray | None = None) -> ConstraintSystem:
    """Stack the rows of the given constraints at x_free (J, violations, resolutions).

    ``x`` is the last frame's state: rate bounds are taken from it and constraints that ``measures_motion``
    (frictional contacts) measure their tangential rows from it; the others give their violation at x_free,
    linearised from ``linearize_at`` (default x_free itself, i.e. exact), where J is evaluated.
    """
    at = x_free if linearize_at is None else linearize_at
    J_parts, dfree_parts, block_parts, compliance_parts, row_ranges, active = [], [], [], [], [], []
    row = 0
    for constraint in constraints:
        J = constraint.jacobian(at)
        rows = J.shape[0]
        if rows == 0:
            continue
        J_parts.append(J)
        reference = x if getattr(constraint, "measures_motion", False) else at
        dfree_parts.append(np.asarray(constraint.violation(reference, x_free, J), dtype=np.float64))
        block_parts.append(constraint.blocks(x))
        compliance = constraint.compliance()
        compliance_parts.append(np.zeros(rows) if compliance is None else np.asarray(compliance, float))
        row_ranges.append(slice(row, row + rows))
        active.append(constraint)
        row += rows
    if not J_parts:
        empty = sp.csr_matrix((0, free_dofs.size))
        return ConstraintSystem([], empty, np.zeros(0), Blocks.concatenate([]), np.zeros(0), [])
    J_free = _drop_fixed_columns(sp.vstack(J_parts, format="csr"), free_dofs)
    return ConstraintSystem(active, J_free, np.concatenate(dfree_parts), Blocks.concatenate(block_parts),
                            np.concatenate(compliance_parts), row_ranges)


def _drop_fixed_columns(J: sp.csr_matrix, free_dofs: np.ndarray) -> sp.csr_matrix:
    """The columns of the free DOFs of a CSR matrix, renumbered (cheaper than CSC column slicing)."""
    dof_to_free = np.full(J.shape[1], -1, dtype=np.int64)
    dof_to_free[free_dofs] = np.arange(free_dofs.size)
    columns = dof_to_free[J.indices]
    keep = columns >= 0
    rows = np.repeat(np.arange(J.shape[0]), np.diff(J.indptr))
    indptr = np.zeros(J.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=J.shape[0]), out=indptr[1:])
    return sp.csr_matrix((J.data[keep], columns[keep], indptr), shape=(J.shape[0], free_dofs.size))


def compliance_in_constraint_space(linear_solver, J_free: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """W = J K^-1 J^T (m, m) and K^-1 J^T (n_free, m) from the current factorization, in one multi-RHS solve."""
    if J_free.shape[0] == 0:
        return np.zeros((0, 0)), np.zeros((J_free.shape[1], 0))
    KinvJt = np.asarray(linear_solver.solve(J_free.T.toarray())).reshape(J_free.shape[1], J_free.shape[0])
    W = np.asarray(J_free @ KinvJt)
    return 0.5 * (W + W.T), KinvJt


def _ensure_factorization(problem, newton, x: np.ndarray) -> None:
    """Make sure the Newton solver holds a factorization (a solve that converged at once made none)."""
    solver = newton.linear_solver
    if not getattr(solver, "is_factorized", False):
        solver.factorize(problem.tangent(x))


def _project(constraint_solver, linear_solver, system: ConstraintSystem, initial_force=None, times=None):
    """Steps II-III on a built system: returns (K^-1 J^T lambda on the free DOFs, the solver's report).

    ``times`` (optional dict) accumulates the seconds spent on "W" and "constraint_solve".
    """
    times = {} if times is None else times
    started = time.perf_counter()
    W, KinvJt = compliance_in_constraint_space(linear_solver, system.J_free)
    W[np.diag_indices_from(W)] += system.compliance
    times["W"] = times.get("W", 0.0) + time.perf_counter() - started
    if initial_force is not None and initial_force.size != system.n_rows:
        initial_force = None
    started = time.perf_counter()
    report = constraint_solver.solve(W, system.dfree, system.blocks, initial_force=initial_force)
    times["constraint_solve"] = times.get("constraint_solve", 0.0) + time.perf_counter() - started
    return KinvJt @ report.force, report


def solve_frame(*, problem, newton, constraint_solver, constraints, x: np.ndarray, frame: int,
                free_start: np.ndarray | None = None, reequilibration_iterations: int = 0,
                x_is_equilibrium: bool = False,
                last_report: FrameReport | None = None) -> tuple[np.ndarray | None, FrameReport]:
    """Run Steps I-III from the positions ``x`` (n, 3); never mutates ``x``.

    ``free_start`` is where the Newton solve starts (default ``x``): the last frame's free configuration is
    the best start, since the free configuration does not depend on the constraints (when only actuators or
    the drag target changed, Newton then stops at once and its factorization is reused).
    ``x_is_equilibrium``: ``x`` is the previous frame's constrained equilibrium (with the same constraints);
    the re-equilibration iterations then start from it instead of from the linear correction about x_free,
    which is much farther away after a large actuation (1-2 iterations per frame instead of 5+).
    ``last_report``: the last frame's report; the complementarity solves start from its multipliers where a
    constraint's row count is unchanged (the projection about x_free from the last projection's, the
    re-equilibration from the last final ones): a still or slowly moving scene then converges in a few
    sweeps instead of thousands, to the same solution within the solver's tolerance.
    Returns the new positions (None when the frame failed: the caller keeps its last good state) and the
    report (``report.x_free`` holds the free configuration). A diverged Newton solve, a singular constraint
    problem or a non-finite result fails the frame.
    """
    times: dict[str, float] = {}
    started = time.perf_counter()
    newton_report = newton.solve(problem, x if free_start is None else free_start)
    newton_time = time.perf_counter() - started
    times["assembly"] = newton_report.assembly_time + newton_report.residual_time
    times["factorization"] = newton_report.factorization_time
    times["newton_solve"] = max(0.0, newton_time - times["assembly"] - times["factorization"])
    if newton_report.diverged or not np.all(np.isfinite(newton_report.x)):
        return None, FrameReport(frame, False, f"Newton solve diverged: {newton_report.reason}",
                                 newton=newton_report, times=times)
    x_free = newton_report.x
    for constraint in constraints:
        constraint.update(x_free)
    enforced = [c for c in constraints if c.enforced and c.active]
    system, constraint_report, projection_report, x_new = None, None, None, x_free
    started = time.perf_counter()
    if enforced:
        system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
    times["build"] = time.perf_counter() - started
    if system is not None and system.n_rows:
        started = time.perf_counter()
        _ensure_factorization(problem, newton, x_free)
        times["factorization"] += time.perf_counter() - started
        try:
            for detection in range(1 + MAX_REDETECTIONS):
                if detection:
                    # Contacts that appear only after the correction (an actuator or the drag pushed the body
                    # onto an obstacle x_free does not touch): detect them at the corrected positions, project
                    # again about x_free.
                    missed = [c for c in enforced if getattr(c, "missed_contacts", None) and c.missed_contacts(x_new)]
                    if not missed:
                        break
                    for constraint in missed:
                        constraint.remember(x_new)
                        constraint.update(x_free)
                    system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
                warm = None if last_report is None else system.initial_force(last_report.projection_forces)
                correction, constraint_report = _project(constraint_solver, newton.linear_solver, system, warm,
                                                         times=times)
                started = time.perf_counter()
                x_new = x_free + problem.expand(correction)
                times["correction"] = times.get("correction", 0.0) + time.perf_counter() - started
        except ValueError as error:  # W not positive on its diagonal: an indefinite tangent
            return None, FrameReport(frame, False, f"constraint projection failed: {error}",
                                     newton=newton_report, times=times)
        projection_report = constraint_report
        if reequilibration_iterations:
            started = time.perf_counter()
            tolerance = newton.residual_tolerance_threshold
            start = x if x_is_equilibrium else x_new
            x_new, system, constraint_report = _reequilibrate(problem, newton.linear_solver, constraint_solver,
                                                             enforced, x, start, system, constraint_report,
                                                             reequilibration_iterations,
                                                             tolerance if tolerance > 0 else 1e-8,
                                                             last_forces=None if last_report is None
                                                             else last_report.forces)
            times["reequilibration"] = time.perf_counter() - started
    if not np.all(np.isfinite(x_new)):
        return None, FrameReport(frame, False, "the constraint correction produced non-finite positions",
                                 newton=newton_report, constraint=constraint_report, times=times)
    projection_forces = [] if projection_report is None else [
        (constraint, projection_report.force[rows].copy()) for constraint, rows in zip(system.constraints,
                                                                                      system.row_ranges)]
    force = np.zeros(0) if constraint_report is None else constraint_report.force
    forces = []
    for constraint in constraints:
        rows = None if system is None else system.rows_of(constraint)
        constraint.store(np.zeros(constraint.n_rows) if rows is None else force[rows], x_new)
        if rows is not None:
            forces.append((constraint, force[rows].copy()))
    report = _report(frame, newton_report, constraint_report, 0 if system is None else system.n_rows, times)
    report.x_free = x_free
    report.forces = forces
    report.projection_forces = projection_forces
    return x_new, report


def _reequilibrate(problem, linear_solver, constraint_solver, enforced, x_last, x_cur, system, report, iterations,
                   tolerance: float = 1e-8, last_forces=None):
    """Constrained Newton (SQP) iterations from the corrected state; see the module docstring.

    Before each iteration the equilibrium residual R(x) + J^T lambda is checked: once it is below
    ``tolerance`` x (|f_int| + |f_ext|) the state is accepted without factorizing (a frame whose actuation
    did not change costs one assembly). Keeps the frame's set of rows (contacts are not
    re-detected); stops early when the rows change or an iteration produces non-finite values (the last
    finite state is kept). The first complementarity solve starts from ``last_forces`` (the last frame's
    final multipliers, closer to this frame's than the projection's about x_free), the next ones from the
    previous iteration's.
    """
    for iteration in range(iterations):
        residual, K_free = problem.system(x_cur)  # one pass over the elements for both
        unbalanced = residual + system.J_free.T @ report.force
        if np.linalg.norm(unbalanced) <= tolerance * getattr(problem, "last_force_scale", 0.0):
            break
        linear_solver.factorize(K_free)
        x_lin = x_cur + problem.expand(linear_solver.solve(residual))
        candidate = build_constraint_system(enforced, x_last, x_lin, problem.free_dofs, linearize_at=x_cur)
        if candidate.n_rows != system.n_rows:
            break
        try:
            start = candidate.initial_force(last_forces) if iteration == 0 else None
            correction, candidate_report = _project(constraint_solver, linear_solver, candidate,
                                                    report.force if start is None else start)
        except ValueError as error:
            logger.warning("re-equilibration stopped: %s", error)
            break
        x_next = x_lin + problem.expand(correction)
        if not np.all(np.isfinite(x_next)):
            break
        x_cur, system, report = x_next, candidate, candidate_report
    return x_cur, system, report


def _report(frame, newton_report, constraint_report, n_rows, times) -> FrameReport:
    warnings = []
    if not newton_report.converged:
        warnings.append(f"Newton did not converge ({newton_report.reason})")
    if constraint_report is not None and not constraint_report.converged:
        warnings.append(f"constraint solver did not converge (error {constraint_report.currentError:.3g} "
                        f"after {constraint_report.currentIterations} iterations)")
    return FrameReport(frame, True, "; ".join(warnings), newton=newton_report, constraint=constraint_report,
                       n_constraint_rows=n_rows, times=times)
