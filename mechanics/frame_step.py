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

This module runs the steps; the rows in constraint space and the projection are :mod:`mechanics.constraint_system`'s,
Step IV is :mod:`mechanics.equilibrium`'s and the frame's report :mod:`mechanics.frame_report`'s.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from softsim.mechanics.constrained_tangent import ConstrainedTangent
from softsim.mechanics.constraint_system import (
    build_constraint_system,
    project_rows,
    same_signature,
    slack_blocks,
    store_forces,
    system_signature,
)
from softsim.mechanics.equilibrium import (
    body_size,
    carry_forces,
    equilibrate,
    solve_accuracy,
    solve_failed,
    solve_failure,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.frame_report import (
    FrameReport,
    contact_sets,
    detached_contacts_note,
    inverted_elements_note,
    make_report,
    unchanged_report,
)
from softsim.mechanics.inversion import count_new_inversions
from softsim.mechanics.linear_solvers import LinearSolverError
from softsim.mechanics.runaway import scan_positions

logger = logging.getLogger(__name__)

#: extra projections per frame for contacts that appear only at the corrected positions
MAX_REDETECTIONS = 3
#: the factorizations (times ``newton_iterations``) the solve with the contact set detected again after touches
#: may take: when it fails the frame keeps the equilibrium found along its path, so a long failing solve is only
#: time. finger_block's 25 mm ramp frame spent 342 factorizations on one and kept its path's equilibrium; the
#: ones that converged took 5 to 20 (and once 110: that frame now keeps its path's equilibrium)
CANONICAL_BUDGET = 3
#: how a static frame ends: at the nonlinear constrained equilibrium, or with SOFA's single linear correction
CORRECTIONS = ("equilibrium", "linear")
#: a node that moves farther than this many times the body's size (bbox diagonal) means a runaway solve
MAX_DISPLACEMENT_FACTOR = 10.0


def _ensure_factorization(problem, newton, x: np.ndarray) -> None:
    """Make sure the Newton solver holds a factorization (a solve that converged at once made none)."""
    solver = newton.linear_solver
    if not solver.is_factorized:
        solver.factorize(problem.tangent(x))


def solve_frame(*, problem, newton, constraint_solver, constraints, x: np.ndarray, frame: int,
                free_start: np.ndarray | None = None, correction: str = "equilibrium",
                x_is_equilibrium: bool = False, last_report: FrameReport | None = None,
                reuse_unchanged: bool = True, keep_contacts: bool = False,
                equilibrium_start: np.ndarray | None = None,
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
    solver tolerance that none of these compare) solves the frame anyway. ``keep_contacts`` (nothing was edited
    since the last frame, or the simulation was rebuilt about its equilibrium): the contacts that pushed at the
    last equilibrium keep their rows (:meth:`~mechanics.constraints.body_contact.BodyContactConstraint.
    keep_held`), so that the same frame solved again ends where it was; after an edit they are detected afresh
    (keeping them then made a 1 mm slider ramp on finger_block take 840 equilibrium steps instead of 233, two
    frames not converged). ``constrained_tangent`` keeps the
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
    if keep_contacts and x_is_equilibrium and last_report is not None and last_report.converged:
        for constraint in enforced:  # the contacts that held the last equilibrium (BodyContactConstraint)
            keep_held = getattr(constraint, "keep_held", None)
            if keep_held is not None:
                keep_held(x)
    system, constraint_report, projection_report, x_new, equilibrium = None, None, None, x_free, None
    started = time.perf_counter()
    if enforced:
        system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
    times["build"] = time.perf_counter() - started
    signature = None if system is None else system_signature(system)
    if (reuse_unchanged and x_is_equilibrium and last_report is not None and last_report.converged
            and newton_report.iterations == 0 and signature is not None and last_report.signature is not None
            and same_signature(signature, last_report.signature, _slack_at_equilibrium(last_report, system))
            and contact_sets(enforced) == last_report.contact_sets):
        return x, unchanged_report(frame, last_report, newton_report, constraints, x, x_free, times)
    if system is not None and system.n_rows:
        started = time.perf_counter()
        _ensure_factorization(problem, newton, x_free)
        times["factorization"] += time.perf_counter() - started
        try:
            # SOFA's linear correction detects again where it lands; the equilibrium iterations find the contacts
            # their steps reach (a jump's linear correction lands deep inside another body, where the nearest
            # triangles are far faces and their rows would hold the start state behind them)
            for detection in range(1 + (MAX_REDETECTIONS if correction == "linear" else 0)):
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
                    signature = system_signature(system)
                warm = None if last_report is None else system.initial_force(last_report.projection_forces)
                correction_dx, constraint_report, W = project_rows(constraint_solver, newton.linear_solver, system,
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
                                      project=project_rows, check_state=check_state)
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
    report = make_report(frame, newton_report, constraint_report, 0 if system is None else system.n_rows, times,
                     equilibrium)
    for note in (inverted_elements_note(problem, x_new), detached_contacts_note(enforced, forces, x_new)):
        if note:
            report.message = f"{report.message}; {note}" if report.message else note
    report.x_free = x_free
    report.forces = forces
    report.projection_forces = projection_forces
    report.signature = signature
    report.contact_sets = contact_sets(enforced)
    return x_new, report


def _slack_at_equilibrium(last_report: FrameReport, system) -> np.ndarray | None:
    """The blocks of ``system`` (this frame's rows about x_free) whose targets may differ from the last frame's
    without changing its equilibrium (:func:`~mechanics.constraint_system.slack_blocks`), or None."""
    equilibrium = last_report.equilibrium
    if equilibrium is None or equilibrium.system is None or equilibrium.force is None:
        return None
    return slack_blocks(equilibrium.system, equilibrium.force, system)


def _redetect_contacts(problem, newton, constraint_solver, enforced, x, x_free, equilibrium, tangent, times):
    """Contacts the equilibrium's positions reach but that have no row (a finger curled onto a plane it did not
    touch at the projection, a node that slid onto another face of a body): give them rows, keeping the others
    and their multipliers, and continue the equilibrium iterations from that state, up to
    :data:`MAX_REDETECTIONS` times, so that a frame ends with a contact set that matches its positions. The whole
    contact set is detected again at the equilibrium (the rows of contacts found again keep their multipliers)
    after steps that touched a surface, and once when rows push nodes that slid past their triangles
    (:func:`_holds_detached`: a finger released from a block it pressed, held 20 mm from the block by the
    plane of a triangle it had left); when the equilibrium with that set cannot be found, the frame keeps the
    one it had. Returns the last equilibrium report (steps and factorizations summed)."""
    steps, factorizations = 0, 0
    canonical_failed = released = False  # a solve with the set detected again failed; detached rows were let go
    for attempt in range(MAX_REDETECTIONS):
        if equilibrium.diverged or equilibrium.x is None:
            break
        contacts = [c for c in enforced if getattr(c, "missed_contacts", None)]
        previous = equilibrium.system
        detached = not released and previous is not None and _holds_detached(contacts, previous, equilibrium)
        released = released or detached
        canonical = previous is not None and not canonical_failed and (
            (attempt == 0 and equilibrium.touches) or detached)
        if canonical:
            # Rows added where the steps touched depend on the path the steps took (which face a node met
            # first): the frame's contact set is detected again at its equilibrium, so that the answer depends
            # on where the frame ends, not on how it got there (and is smooth in the scene's parameters). The
            # rows of contacts found again keep their multipliers.
            # When the equilibrium with those rows cannot be found, the frame keeps the one it found along its path.
            by_key = {c: c.forces_by_key(equilibrium.force[previous.rows_of(c)]) for c in contacts
                      if previous.rows_of(c) is not None}
            saved_sets = [(c, c.contact_state()) for c in contacts]
            for constraint in contacts:
                constraint.remember(equilibrium.x)
                constraint.update(x_free)
            system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
            start_force = carry_forces(equilibrium.force, system, previous)
            system.place_keyed_forces(start_force, by_key)
        else:
            missed = [c for c in contacts if c.missed_contacts(equilibrium.x)]
            if not missed:
                break
            for constraint in missed:
                constraint.add_missed_contacts(equilibrium.x)
            system = build_constraint_system(enforced, x, x_free, problem.free_dofs)
            start_force = carry_forces(equilibrium.force, system, previous)
        _dx, report, W = project_rows(constraint_solver, newton.linear_solver, system, start_force, times=times)
        steps, factorizations = steps + equilibrium.steps, factorizations + equilibrium.iterations
        result = equilibrate(problem, newton, constraint_solver, enforced, x, equilibrium.x, system, report,
                             start_force, W, tangent, build=build_constraint_system, project=project_rows,
                             check_state=check_state,
                             max_factorizations=CANONICAL_BUDGET * newton.newton_iterations if canonical else None)
        if canonical and not result.converged:  # the work counts; the answer is the one found along the path
            for constraint, state in saved_sets:
                constraint.restore_contact_state(state)
            steps += result.steps - equilibrium.steps
            factorizations += result.iterations - equilibrium.iterations
            canonical_failed = True
            continue
        equilibrium = result
    equilibrium.steps += steps
    equilibrium.iterations += factorizations
    return equilibrium


def _holds_detached(contacts, system, equilibrium) -> bool:
    """Whether a contact row of ``system`` pushes a node past its triangle, farther than alarmDistance from the
    other body's surface at the equilibrium (:meth:`~mechanics.constraints.body_contact.BodyContactConstraint.
    detached`): a finger released after curling into a block slides along the block's face, and the plane of
    the triangle each row was found on holds it where the block is not."""
    for constraint in contacts:
        rows = system.rows_of(constraint)
        detached = getattr(constraint, "detached", None)
        if rows is not None and detached is not None and detached(equilibrium.x, equilibrium.force[rows])[0]:
            return True
    return False


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


def check_state(problem, x: np.ndarray, *, inversion: bool = True) -> str:
    """Why the positions ``x`` (n, 3) cannot be a solution, or "" when they can: non-finite values, a
    displacement larger than :data:`MAX_DISPLACEMENT_FACTOR` times the body's size (no solid body deforms
    that far: the solve ran away), or (``inversion``) an inverted element (det F <= 0) of a model whose forces
    are not defined there (``elasticity.inversion_admissible`` False: the hyperelastic laws, the polar
    rotations; SOFA's ``large`` corotational model accepts inverted elements, and so does softsim, saying so in
    the frame's message: :func:`inverted_elements_note`)."""
    rest = problem.elasticity.rest_positions
    finite, node, moved = scan_positions(x, rest)
    if not finite:
        return "the solve produced non-finite positions"
    size = body_size(rest)
    if moved > MAX_DISPLACEMENT_FACTOR * size:
        return (f"the solve ran away: node {node} moved {moved:.4g}, more than "
                f"{MAX_DISPLACEMENT_FACTOR:g} times the body's size ({size:.4g})")
    admissible = getattr(problem.elasticity, "inversion_admissible", False)
    inverted = count_new_inversions(rest, x, problem.elasticity.tets) if inversion and not admissible else 0
    if inverted:
        return (f"{inverted} element(s) inverted (det F <= 0): the actuation or load is beyond what the mesh "
                f"can take")
    return ""
