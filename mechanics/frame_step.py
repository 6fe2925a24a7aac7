"""One static frame of the constraint resolution method (SOFA's FreeMotionAnimationLoop, made static).

Step I    free configuration: static Newton on f_int(x) + f_ext = 0 over the free DOFs with lambda = 0,
          warm-started from the last frame's positions.
Step II   projection into constraint space at x_free with the last tangent's factorization:
          W = J K^-1 J^T (+ C for compliant rows), one multi-right-hand-side solve for K^-1 J^T;
          delta_free = violations at x_free; complementarity solve for lambda.
Step III  correction x = x_free + K^-1 J^T lambda.

J and the violations are evaluated at x_free (SoftRobots evaluates J at the step-start x, which in its dynamic
step lies next to x_free; in a static step x_free is the unconstrained equilibrium, possibly far from the
last constrained state, and linearising there lets successive frames oscillate). Frictional contacts measure
their tangential rows from the last frame's positions (``measures_motion``), so sticking means "no slip since
the last frame".

Step IV (``correction = "equilibrium"``, the default): constrained Newton (SQP) steps that end the frame at the
nonlinear constrained equilibrium. At the current x, with K and R = f_int + f_ext, the free step is K^-1 R, the
rows are linearised to x + K^-1 R, the complementarity problem gives the total lambda and
x <- x + K^-1 (R + J^T lambda); they stop once |R + J^T lambda| and every constraint law meet the Newton
tolerances (:func:`_equilibrate`). SOFA's single linear correction is a property of its time stepping, where
the next step starts from the corrected state; a static frame that stopped after Step III would keep the
linearisation error for ever, so softsim iterates by default and keeps SOFA's
correction as ``correction = "linear"``. A frame whose inputs did not change since the last converged one
reuses its answer after one residual evaluation.

Warm starts (not in SOFA's GenericConstraintSolver, which starts every step from zero): the complementarity
solves start from the last frame's multipliers of each constraint whose row count is unchanged, the
projection about x_free from the last projection's and the equilibrium steps from the last final ones. An
iterative solver then stops after a sweep or two in a slowly moving scene, at the same state within its
tolerance.

lambda is a generalised force in the scene's force unit (static mode: no dt factor, unlike SOFA's
EulerImplicit impulses).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from softsim.mechanics.constrained_tangent import ConstrainedTangent, ResponseCache
from softsim.mechanics.equilibrium import (
    EquilibriumReport,
    body_size,
    equilibrate,
    solve_accuracy,
    solve_failed,
    solve_failure,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.inversion import count_new_inversions
from softsim.mechanics.linear_solvers import LinearSolverError
from softsim.mechanics.resolutions import Blocks

logger = logging.getLogger(__name__)

#: extra projections per frame for contacts that appear only at the corrected positions
MAX_REDETECTIONS = 3
#: how a static frame ends: at the nonlinear constrained equilibrium, or with SOFA's single linear correction
CORRECTIONS = ("equilibrium", "linear")
#: a node that moves farther than this many times the body's size (bbox diagonal) means a runaway solve
MAX_DISPLACEMENT_FACTOR = 10.0


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
    #: the frame ran and its state was kept (False: it failed and the simulation kept its last good state)
    ran: bool
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
    #: the constrained equilibrium iterations (None with the linear correction or without constraint rows)
    equilibrium: EquilibriumReport | None = None
    #: True when nothing the frame depends on changed since the last converged frame (its state was kept)
    unchanged: bool = False
    #: what the projection about x_free was made of (compared by the next frame to detect "unchanged")
    signature: tuple | None = None
    #: the implicit time step of a dynamic frame (mechanics.dynamics.DynamicReport); None for static frames
    dynamic: object | None = None
    #: the inverse model's part of the frame (mechanics.inverse.frame.InverseReport); None in forward mode
    inverse: object | None = None
    #: with the asynchronous preconditioner (``[solver.linear] type = "async"``): ``cg_iterations`` of the
    #: frame's solves, the ``factorization_age`` (tangents assembled since the one the preconditioner factorized;
    #: the largest of the frame's solvers) and the ``background_factorizations`` finished during the frame
    preconditioner: dict | None = None
    #: names of the actuators a bound or rate limit held this frame (filled by the simulation)
    limited: list = field(default_factory=list)

    @property
    def wall_time(self) -> float:
        return sum(self.times.values())

    @property
    def ok(self) -> bool:
        """The frame's answer can be trusted: it ran and converged. A frame that ran without converging keeps
        its best state but is not ok; ``ran`` tells it from a failed one."""
        return self.converged

    @property
    def status(self) -> str:
        """"ok", "limited" (converged, an actuator held by a bound or rate limit), "not_converged" (ran, best
        state kept) or "diverged" (failed, last good state kept)."""
        if not self.ran:
            return "diverged"
        if not self.converged:
            return "not_converged"
        return "limited" if self.limited else "ok"

    @property
    def converged(self) -> bool:
        """The frame ran and its answer meets the tolerances: the constrained equilibrium converged (or, with
        the linear correction or without constraint rows, the free Newton solve did) and the complementarity
        solve converged."""
        if not self.ran:
            return False
        if self.inverse is not None and not self.inverse.converged:
            return False
        if self.constraint is not None and not self.constraint.converged:
            return False
        if self.dynamic is not None:
            return bool(self.dynamic.converged)
        if self.equilibrium is not None:
            return self.equilibrium.converged
        return self.newton is None or bool(self.newton.converged)

    @property
    def iterations(self) -> int:
        """The frame's nonlinear iterations: the free Newton solve's (static) or the implicit step's (dynamic)."""
        solve = self.dynamic if self.dynamic is not None else self.newton
        return 0 if solve is None else int(solve.iterations)

    @property
    def residual_norms(self) -> np.ndarray:
        """How the nonlinear iterations converged, for plots and logs: ``|R_0|, |R_1|, ...`` of the free Newton
        solve (force units), or the velocity corrections ``|delta_1|, ...`` of a dynamic step."""
        if self.dynamic is not None:
            return np.asarray(self.dynamic.correction_norms, dtype=np.float64)
        if self.newton is None:
            return np.zeros(0)
        return np.sqrt([self.newton.squared_initial_residual, *self.newton.squared_residuals])


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


def compliance_in_constraint_space(linear_solver, J_free: sp.csr_matrix, cache: ResponseCache | None = None,
                                   KinvJt: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """W = J K^-1 J^T (m, m) and K^-1 J^T (n_free, m) from the current factorization, in one multi-RHS solve
    (only the changed rows' with a ``cache`` that saw the same factorization; none when ``KinvJt`` is given)."""
    if J_free.shape[0] == 0:
        return np.zeros((0, 0)), np.zeros((J_free.shape[1], 0))
    if KinvJt is None:
        Jt = J_free.T.toarray()
        if cache is None:
            KinvJt = np.asarray(linear_solver.solve(Jt)).reshape(J_free.shape[1], J_free.shape[0])
        else:
            KinvJt = cache.solve(linear_solver, Jt)
    W = np.asarray(J_free @ KinvJt)
    if linear_solver.symmetric:  # round-off only; an unsymmetric tangent's W is unsymmetric
        W = 0.5 * (W + W.T)
    return W, KinvJt


def _ensure_factorization(problem, newton, x: np.ndarray) -> None:
    """Make sure the Newton solver holds a factorization (a solve that converged at once made none)."""
    solver = newton.linear_solver
    if not solver.is_factorized:
        solver.factorize(problem.tangent(x))


def _project(constraint_solver, linear_solver, system: ConstraintSystem, initial_force=None, times=None,
             cache: ResponseCache | None = None, KinvJt: np.ndarray | None = None, solve=None):
    """Steps II-III on a built system: returns (K^-1 J^T lambda on the free DOFs, the solver's report, W with
    the compliance on its diagonal (m, m)).

    ``times`` (optional dict) accumulates the seconds spent on "W" and "constraint_solve". ``solve(W, system,
    initial_force) -> report`` replaces the constraint solver's own solve (the equilibrium steps' projection,
    :func:`mechanics.equilibrium.project`).
    """
    times = {} if times is None else times
    started = time.perf_counter()
    W, KinvJt = compliance_in_constraint_space(linear_solver, system.J_free, cache, KinvJt)
    W[np.diag_indices_from(W)] += system.compliance
    times["W"] = times.get("W", 0.0) + time.perf_counter() - started
    if initial_force is not None and initial_force.size != system.n_rows:
        initial_force = None
    started = time.perf_counter()
    if solve is None:
        report = constraint_solver.solve(W, system.dfree, system.blocks, initial_force=initial_force)
    else:
        report = solve(W, system, initial_force)
    times["constraint_solve"] = times.get("constraint_solve", 0.0) + time.perf_counter() - started
    return KinvJt @ report.force, report, W


def solve_frame(*, problem, newton, constraint_solver, constraints, x: np.ndarray, frame: int,
                free_start: np.ndarray | None = None, correction: str = "equilibrium",
                x_is_equilibrium: bool = False, last_report: FrameReport | None = None,
                reuse_unchanged: bool = True, equilibrium_start: np.ndarray | None = None,
                constrained_tangent: ConstrainedTangent | None = None) -> tuple[np.ndarray | None, FrameReport]:
    """Run Steps I-III from the positions ``x`` (n, 3), then (``correction="equilibrium"``) the constrained
    Newton iterations that end the frame at the nonlinear constrained equilibrium; never mutates ``x``.

    ``free_start`` is where the Newton solve starts (default ``x``): the last frame's free configuration is
    the best start, since the free configuration does not depend on the constraints (when only actuators or
    the drag target changed, Newton then stops at once and its factorization is reused).
    ``correction``: "equilibrium" (iterate until the Newton tolerances hold, at most ``newton_iterations``
    times) or "linear" (SOFA's single correction x_free + K^-1 J^T lambda).
    ``x_is_equilibrium``: ``x`` is the previous frame's constrained equilibrium (with the same constraints);
    the equilibrium iterations then start from it instead of from the linear correction about x_free,
    which is much farther away after a large actuation; ``equilibrium_start`` (n, 3), with ``last_report``'s
    multipliers, starts them elsewhere (the inverse model's last equilibrium of the same frame).
    ``last_report``: the last frame's report; the complementarity solves start from its multipliers where a
    constraint's row count is unchanged. When that frame converged, Newton found the free configuration
    unchanged and the constraint rows built about it are the same as that frame's, nothing that the frame
    depends on has changed: its state is this frame's answer (``report.unchanged``), at the cost of one
    residual evaluation and one build of the rows. ``reuse_unchanged=False`` (a parameter was edited, e.g. a
    solver tolerance that none of these compare) solves the frame anyway. ``constrained_tangent`` keeps the
    equilibrium iterations' matrix pattern and factorization across frames (the caller owns one per problem).
    Returns the new positions (None when the frame failed: the caller keeps its last good state) and the
    report (``report.x_free`` holds the free configuration). A diverged Newton solve, a singular constraint
    problem, a diverged equilibrium iteration or an implausible result (:func:`check_state`) fails the frame.
    """
    if correction not in CORRECTIONS:
        raise ParameterError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    newton_report, times, failed = free_configuration(problem, newton, constraints, x, free_start, frame)
    if failed is not None:
        return None, failed
    x_free = newton_report.x
    enforced = [c for c in constraints if c.enforced and c.active]
    system, constraint_report, projection_report, x_new, equilibrium = None, None, None, x_free, None
    started = time.perf_counter()
    if enforced:
        system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
    times["build"] = time.perf_counter() - started
    signature = None if system is None else _signature(system)
    if (reuse_unchanged and x_is_equilibrium and last_report is not None and last_report.converged
            and newton_report.iterations == 0 and signature is not None and last_report.signature is not None
            and _same_signature(signature, last_report.signature)):
        return x, unchanged_report(frame, last_report, newton_report, constraints, x, x_free, times)
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
                    signature = _signature(system)
                warm = None if last_report is None else system.initial_force(last_report.projection_forces)
                correction_dx, constraint_report, W = _project(constraint_solver, newton.linear_solver, system,
                                                               warm, times=times)
                started = time.perf_counter()
                x_new = x_free + problem.expand(correction_dx)
                times["correction"] = times.get("correction", 0.0) + time.perf_counter() - started
        except (ValueError, LinearSolverError) as error:  # W not positive on its diagonal, a runaway state
            return None, FrameReport(frame, False, f"constraint projection failed: {error}",
                                     newton=newton_report, times=times)
        projection_report = constraint_report
        accuracy = solve_accuracy(system, W, constraint_report.force)
        if solve_failed(constraint_report, accuracy, body_size(problem.elasticity.rest_positions)):
            return None, FrameReport(frame, False, solve_failure(constraint_report, accuracy), newton=newton_report,
                                     constraint=constraint_report, times=times)
        if correction == "equilibrium":
            started = time.perf_counter()
            start, start_force = x_new, constraint_report.force
            if not x_is_equilibrium and equilibrium_start is None:
                # the first frame (or the first after dynamic mode): the increments start from the state as it
                # is, without constraint force, so that they follow the physical path (gravity and actuation
                # applied from zero). The trunk's drooping first frame took 38 steps from its rest shape, 68 from
                # the linear correction about x_free and 149 from x_free itself.
                start, start_force = x, np.zeros(system.n_rows)
            if x_is_equilibrium:
                start = x if equilibrium_start is None else equilibrium_start
                last = None if last_report is None else system.initial_force(last_report.forces)
                start_force = constraint_report.force if last is None else last
            tangent = constrained_tangent or ConstrainedTangent(problem.dof_to_free)
            equilibrium = equilibrate(problem, newton, constraint_solver, enforced, x, start, system,
                                      constraint_report, start_force, W, tangent, build=build_constraint_system,
                                      project=_project, check_state=check_state)
            equilibrium = _redetect_contacts(problem, newton, constraint_solver, enforced, x, x_free, equilibrium,
                                             tangent, times)
            times["reequilibration"] = time.perf_counter() - started
            if equilibrium.diverged:
                return None, FrameReport(frame, False, f"constrained equilibrium diverged: {equilibrium.reason}",
                                         newton=newton_report, constraint=equilibrium.constraint, times=times,
                                         equilibrium=equilibrium)
            x_new, system, constraint_report = equilibrium.x, equilibrium.system, equilibrium.constraint
    problem_found = check_state(problem, x_new)
    if problem_found:
        return None, FrameReport(frame, False, problem_found, newton=newton_report, constraint=constraint_report,
                                 times=times, equilibrium=equilibrium)
    projection_forces = [] if projection_report is None else [
        (constraint, projection_report.force[rows].copy()) for constraint, rows in zip(system.constraints,
                                                                                      system.row_ranges)]
    if equilibrium is not None:  # the accepted state's multipliers (the last solve's unless no step was taken)
        force = equilibrium.force
    else:
        force = np.zeros(0) if constraint_report is None else constraint_report.force
    forces = store_forces(constraints, system, force, x_new)
    report = _report(frame, newton_report, constraint_report, 0 if system is None else system.n_rows, times,
                     equilibrium)
    note = inverted_elements_note(problem, x_new)
    if note:
        report.message = f"{report.message}; {note}" if report.message else note
    report.x_free = x_free
    report.forces = forces
    report.projection_forces = projection_forces
    report.signature = signature
    return x_new, report


def _redetect_contacts(problem, newton, constraint_solver, enforced, x, x_free, equilibrium, tangent, times):
    """Contacts the equilibrium's positions reach but that have no row (a finger curled onto a plane it did not
    touch at the projection): detect them there, build the rows again and continue the equilibrium iterations
    from that state, up to :data:`MAX_REDETECTIONS` times, so that a frame ends with a contact set that matches
    its positions. Returns the last equilibrium report (steps and factorizations summed)."""
    steps, factorizations = 0, 0
    for _ in range(MAX_REDETECTIONS):
        if equilibrium.diverged or equilibrium.x is None:
            break
        missed = [c for c in enforced if getattr(c, "missed_contacts", None) and c.missed_contacts(equilibrium.x)]
        if not missed:
            break
        for constraint in missed:
            constraint.remember(equilibrium.x)
            constraint.update(x_free)
        system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
        previous = equilibrium.system
        pairs = [] if previous is None else [(c, equilibrium.force[rows]) for c, rows in
                                             zip(previous.constraints, previous.row_ranges)]
        _dx, report, W = _project(constraint_solver, newton.linear_solver, system, None, times=times)
        start_force = system.initial_force(pairs)
        steps, factorizations = steps + equilibrium.steps, factorizations + equilibrium.iterations
        equilibrium = equilibrate(problem, newton, constraint_solver, enforced, x, equilibrium.x, system, report,
                                  np.zeros(system.n_rows) if start_force is None else start_force, W, tangent,
                                  build=build_constraint_system, project=_project, check_state=check_state)
    equilibrium.steps += steps
    equilibrium.iterations += factorizations
    return equilibrium


def free_configuration(problem, newton, constraints, x: np.ndarray, free_start: np.ndarray | None, frame: int):
    """Step I: the Newton solve with no constraint force from ``free_start`` (default ``x``), then every
    constraint's active set at the free configuration (``update``). Returns ``(newton report, times by phase,
    None)``, or the failed frame's report in place of None when Newton diverged."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    newton_report = newton.solve(problem, x if free_start is None else free_start)
    newton_time = time.perf_counter() - started
    times["assembly"] = newton_report.assembly_time + newton_report.residual_time
    times["factorization"] = newton_report.factorization_time
    times["newton_solve"] = max(0.0, newton_time - times["assembly"] - times["factorization"])
    if newton_report.diverged or not np.all(np.isfinite(newton_report.x)):
        return newton_report, times, FrameReport(frame, False, f"Newton solve diverged: {newton_report.reason}",
                                                 newton=newton_report, times=times)
    for constraint in constraints:
        constraint.update(newton_report.x)
    return newton_report, times, None


def store_forces(constraints, system: ConstraintSystem | None, force: np.ndarray, x: np.ndarray) -> list:
    """Let every constraint store its multipliers from ``force`` (m,) (the rows of ``system``; zeros for one
    without rows) at the positions ``x`` (n, 3); returns ``(constraint, multipliers)`` of those with rows (the
    next frame's warm starts)."""
    forces = []
    for constraint in constraints:
        rows = None if system is None else system.rows_of(constraint)
        constraint.store(np.zeros(constraint.n_rows) if rows is None else force[rows], x)
        if rows is not None:
            forces.append((constraint, force[rows].copy()))
    return forces


def _signature(system: ConstraintSystem) -> tuple:
    """Copies of what a complementarity problem about x_free is made of (rows, J, violations, laws)."""
    J, blocks = system.J_free, system.blocks
    return (tuple(id(c) for c in system.constraints), J.indptr.copy(), J.indices.copy(), J.data.copy(),
            system.dfree.copy(), system.compliance.copy(), blocks.kind.copy(), blocks.size.copy(),
            blocks.target.copy(), blocks.lo.copy(), blocks.hi.copy(), blocks.mu.copy())


def _same_signature(a: tuple, b: tuple) -> bool:
    """True when two signatures describe the same problem: same constraints and structure, values equal to
    1e-13 of their magnitude (a round-off change of the state must not force a full frame)."""
    if a[0] != b[0]:
        return False
    for left, right in zip(a[1:], b[1:]):
        if left.shape != right.shape:
            return False
        if left.dtype.kind in "iu":
            if not np.array_equal(left, right):
                return False
            continue
        finite = np.isfinite(left)
        if not np.array_equal(finite, np.isfinite(right)) or not np.array_equal(left[~finite], right[~finite]):
            return False
        scale = np.max(np.abs(left[finite]), initial=0.0)
        if np.any(np.abs(left[finite] - right[finite]) > 1e-13 * scale):
            return False
    return True


def unchanged_report(frame, last_report, newton_report, constraints, x, x_free, times) -> FrameReport:
    """The report of a frame whose inputs did not change: the last frame's state and multipliers."""
    for constraint, force in last_report.forces:
        constraint.store(force, x)
    report = FrameReport(frame, True, "", newton=newton_report, constraint=last_report.constraint,
                         n_constraint_rows=last_report.n_constraint_rows, times=times,
                         equilibrium=last_report.equilibrium, unchanged=True)
    report.x_free = x_free
    report.forces = last_report.forces
    report.projection_forces = last_report.projection_forces
    report.signature = last_report.signature
    return report


def check_state(problem, x: np.ndarray, *, inversion: bool = True) -> str:
    """Why the positions ``x`` (n, 3) cannot be a solution, or "" when they can: non-finite values, a
    displacement larger than :data:`MAX_DISPLACEMENT_FACTOR` times the body's size (no solid body deforms
    that far: the solve ran away), or (``inversion``) an inverted element (det F <= 0) of a model whose forces
    are not defined there (``elasticity.inversion_admissible`` False: the hyperelastic laws, the polar
    rotations; SOFA's ``large`` corotational model accepts inverted elements, and so does softsim, saying so in
    the frame's message: :func:`inverted_elements_note`)."""
    if not np.all(np.isfinite(x)):
        return "the solve produced non-finite positions"
    rest = problem.elasticity.rest_positions
    size = body_size(rest)
    displacement = np.linalg.norm(x - rest, axis=1)
    node = int(np.argmax(displacement)) if displacement.size else 0
    if displacement.size and displacement[node] > MAX_DISPLACEMENT_FACTOR * size:
        return (f"the solve ran away: node {node} moved {displacement[node]:.4g}, more than "
                f"{MAX_DISPLACEMENT_FACTOR:g} times the body's size ({size:.4g})")
    admissible = getattr(problem.elasticity, "inversion_admissible", False)
    inverted = count_new_inversions(rest, x, problem.elasticity.tets) if inversion and not admissible else 0
    if inverted:
        return (f"{inverted} element(s) inverted (det F <= 0): the actuation or load is beyond what the mesh "
                f"can take")
    return ""


def inverted_elements_note(problem, x: np.ndarray) -> str:
    """The frame's note about elements inverted at ``x`` (n, 3) by a model that allows them (see
    :func:`check_state`), or ""."""
    elasticity = problem.elasticity
    if not getattr(elasticity, "inversion_admissible", False):
        return ""
    inverted = count_new_inversions(elasticity.rest_positions, x, elasticity.tets)
    if not inverted:
        return ""
    return (f"{inverted} element(s) inverted at the equilibrium (det F <= 0; the {elasticity.model} model with the "
            f"'{elasticity.rotation_method}' rotation computes their forces as SOFA does): refine the mesh there "
            f"for a trustworthy stress")


def _report(frame, newton_report, constraint_report, n_rows, times, equilibrium=None) -> FrameReport:
    warnings = []
    if equilibrium is not None:
        if not equilibrium.converged:
            warnings.append(f"constrained equilibrium {equilibrium.reason}")
    elif not newton_report.converged:
        warnings.append(f"Newton did not converge ({newton_report.reason})")
    if constraint_report is not None and not constraint_report.converged:
        warnings.append(f"constraint solver did not converge (error {constraint_report.currentError:.3g} "
                        f"after {constraint_report.currentIterations} iterations)")
    return FrameReport(frame, True, "; ".join(warnings), newton=newton_report, constraint=constraint_report,
                       n_constraint_rows=n_rows, times=times, equilibrium=equilibrium)
