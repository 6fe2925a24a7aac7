"""One static frame of the inverse model: the actuation that brings the effectors closest to their goals.

SoftRobots.Inverse solves one QP per time step, about the free configuration, and applies its linear
correction; the next step starts from there. softsim does that with ``correction = "linear"``. By default
(``correction = "equilibrium"``) a frame ends where both hold within the Newton tolerances: the body is at its
nonlinear constrained equilibrium, and the actuation is the QP's optimum about that equilibrium (a Gauss-Newton
fixed point: a goal the actuators can reach is reached, up to the epsilon term, in one frame).

1. **Linearisation** (:func:`_linearize`) about a state x with its multipliers lambda: the tangent K at x (with
   the constraint forces' stiffness when the material tangent is exact), the free step K^-1 R(x), the rows
   (actuators, contacts, equalities and the effectors with a goal) linearised to x + K^-1 R(x) (``dfree``) and
   W = J K^-1 J^T. The first one is about the last frame's equilibrium (about the free configuration on a first
   frame, where lambda = 0).
2. **Fast path** (:func:`_sqp`): constrained Newton steps whose multipliers come from the QP of
   :mod:`mechanics.inverse.problem` instead of the complementarity solve, ``x <- x + K^-1 (R + J^T lambda)``,
   one factorization per step at most (kept while the steps converge well), with Aitken's relaxation of the
   multipliers when the QP's answers alternate (an approximate tangent). It ends when the unbalanced force
   meets the Newton tolerance and a new QP would move no node farther than ``linearizationTolerance`` times
   the body's size. A goal that moves a little costs a few steps.
3. **Robust path**, when the fast one does not converge in :data:`SQP_STEPS` steps or runs away: QPs each
   followed by the forward frame they imply (each actuator driven to the QP's displacement or volume growth,
   :func:`mechanics.frame_step.solve_frame`, contacts re-detected), with a line search on the QP's objective
   measured at the forward equilibrium, at most ``linearizations`` forward frames. When no step lowers the
   objective (an approximate tangent makes W, and so the QP's direction, approximate) the frame keeps its state
   and says so (``stalled``).

The effector positions reported are the equilibrium's, not the QP's linear prediction. The limits hold in every
QP; they are computed once per frame, from the state at its start, as SoftRobots' ``updateLimit``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from softsim.mechanics.constrained_tangent import ConstrainedTangent
from softsim.mechanics.constraint_system import build_constraint_system, compliance_in_constraint_space, store_forces
from softsim.mechanics.equilibrium import (
    EXACT_REUSE_RATE,
    FAR_FROM_EQUILIBRIUM_EXACT,
    ROUND_OFF_FACTOR,
    body_size,
    force_stiffness,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.frame_report import FrameReport, unchanged_report
from softsim.mechanics.frame_step import check_state, free_configuration, solve_frame
from softsim.mechanics.inverse.problem import (
    InverseParameters,
    energy_weight,
    merit,
    row_roles,
    solve_inverse_qp,
)

logger = logging.getLogger(__name__)

__all__ = ["InverseReport", "InverseSettings", "solve_inverse_frame"]


@dataclass
class _Move:
    """One converged inverse frame's move: positions (n, 3) and multipliers ((constraint, lambda) pairs) at its
    start and end, the effectors' goals (k,) at its end and start (None: unknown, the move after an edit).
    """

    x_start: np.ndarray
    forces_start: list
    x_end: np.ndarray
    forces_end: list
    goal_end: np.ndarray
    #: W (m, m) of the last linearisation, at x_end (the next frame's energy weight is computed from it)
    W: np.ndarray
    goal_start: np.ndarray | None = None


@dataclass
class InverseSettings:
    """The inverse mode of a simulation: ``active`` (False: forward frames), the QP's parameters and the
    linearisation loop's ``linearizations`` (most forward frames, each after a QP) and ``linearization_tolerance``
    (relative to the body's size)."""

    active: bool = True
    qp: InverseParameters = field(default_factory=InverseParameters)
    linearizations: int = 20
    linearization_tolerance: float = 1e-6
    #: the energy term's scale w, computed on the first frame after a reset or an edit and kept with the rows it
    #: was computed for (SoftRobots recomputes it every step, which moves the optimum of a goal that stands still)
    weight: float | None = None
    weight_rows: tuple = ()
    #: the QP's proposal (m,) that the last frame could not follow (its line search stalled); a frame that starts
    #: there and gets the same proposal ends at once
    stalled_force: np.ndarray | None = None
    #: the last converged frame's move (:class:`_Move`), for the next frame's predictor
    last_move: _Move | None = None
    #: the inputs of the last frame when it ended where it started with the multipliers it started with
    #: (:class:`_Still`): the same inputs again give the same answer, so the next such frame is not solved
    still: _Still | None = None

    def forget_weight(self) -> None:
        """Forget the cached weight, the stalled proposal and the still state (after an edit or a reset). The last
        move is kept: a goal edit is an edit too, and the predictor checks that the next frame starts where the
        move ended."""
        self.weight, self.weight_rows, self.stalled_force, self.still = None, (), None, None


@dataclass
class _Still:
    """A frame's inputs (positions (n, 3), start multipliers (m,), goals (k,), actuator limits) when it ended at
    those positions with those multipliers: a fixed point of the inverse frame."""

    x: np.ndarray
    force: np.ndarray
    goals: np.ndarray
    limits: dict

    def matches(self, x: np.ndarray, force: np.ndarray, goals: np.ndarray, limits: dict) -> bool:
        return (np.array_equal(self.x, x) and np.array_equal(self.force, force) and np.array_equal(self.goals, goals)
                and self.limits == limits)


def _multipliers(report) -> np.ndarray:
    """A report's multipliers, every constraint's in turn, as one vector."""
    forces = [] if report is None or not report.forces else [np.ravel(force) for _, force in report.forces]
    return np.concatenate(forces) if forces else np.zeros(0)


@dataclass
class InverseReport:
    """What the inverse part of a frame did.

    linearizations: QPs solved; forward_frames: forward frames run; converged: the last QP would not move the
    state (within the tolerance); change: how far (length) the last QP would still move a node; objective:
    ``1/2 |delta_E|^2`` of the last QP (weighted length squared); pivots: contact state changes over all QPs;
    qp_time (s): time in the QP backend; backend: the one that solved the last QP; active: ``(actuator, key)``
    of the limits the answer sits on.
    """

    linearizations: int = 0
    forward_frames: int = 0
    converged: bool = False
    message: str = ""
    change: float = float("nan")
    objective: float = float("nan")
    pivots: int = 0
    qp_time: float = 0.0
    backend: str = ""
    active: list = field(default_factory=list)
    #: the largest distance of an effector point to its goal after the frame; within GOAL_TOLERANCE of the body's
    #: size it is ``reached``; otherwise ``limiting`` lists the limits (actuator, key) that stop the actuators
    goal_distance: float = float("nan")
    reached: bool = True
    limiting: list = field(default_factory=list)
    #: no step along the last QP's actuation lowers the objective measured on the forward model (a stationary
    #: point of it where the tangent, and so W, is approximate); the frame then keeps its last state
    stalled: bool = False
    #: the constrained Newton steps with the QP did not converge: the frame took QPs each followed by a forward
    #: frame and a line search
    sqp_fallback: bool = False
    #: the steps started from the last frame's move extrapolated (a dragged goal), not from the last equilibrium
    predicted: bool = False


@dataclass
class _Linearization:
    """The rows about a state: ``system`` (J at the state), ``dfree`` about the free step, W (with compliances),
    K^-1 J^T (n_free, m), the state's multipliers ``force`` (m,), its unbalanced internal and external forces
    ``residual`` (n_free,) (without the constraint forces) and the free step K^-1 R (n_free,)."""

    system: object
    dfree: np.ndarray
    W: np.ndarray
    KinvJt: np.ndarray
    force: np.ndarray
    residual: np.ndarray
    free_step: np.ndarray

    def pairs(self, force: np.ndarray) -> list:
        """``(constraint, multipliers)`` of the multipliers ``force`` (m,) of these rows."""
        return [(c, force[rows].copy()) for c, rows in zip(self.system.constraints, self.system.row_ranges)]


def _linearize(problem, newton, rows, x_last, x_cur, force_pairs, tangent: ConstrainedTangent,
               refactorize: bool = True) -> _Linearization:
    """The rows ``rows`` linearised about ``x_cur`` (n, 3) with the multipliers ``force_pairs`` (constraint,
    lambda) (see the module docstring, step 1). ``refactorize=False`` keeps the tangent factorized at a nearby
    state (the steps of :func:`_sqp` that converge well)."""
    system = build_constraint_system(rows, x_last, x_cur, problem.free_dofs, linearize_at=x_cur)
    force = system.initial_force(force_pairs)
    force = np.zeros(system.n_rows) if force is None else force
    solver = tangent.solver(newton.linear_solver)
    residual = None
    if refactorize or not solver.is_factorized:
        exact = bool(getattr(problem.elasticity, "exact_tangent", False))
        terms = force_stiffness(system, x_cur, force) if exact else []
        if hasattr(problem, "system"):  # the forces and the tangent from one pass over the elements
            residual, K_free = problem.system(x_cur)
        else:
            K_free = problem.tangent(x_cur)
        solver.factorize(tangent.matrix(K_free, terms))
    if residual is None:
        residual = problem.residual(x_cur)
    # the free step and K^-1 J^T in one multi-right-hand-side solve (only the changed rows' columns when the
    # factorization is the last step's)
    KinvJt, free_step = tangent.responses.solve(solver, system.J_free.T.toarray(), extra=residual)
    dfree = system.dfree + system.J_free @ free_step
    W, KinvJt = compliance_in_constraint_space(solver, system.J_free, KinvJt=KinvJt)
    W[np.diag_indices_from(W)] += system.compliance
    return _Linearization(system, dfree, W, KinvJt, force, residual, np.asarray(free_step).reshape(-1))


#: a predicted start is tried when the goals' move lies along the last frame's: its projection on that move is
#: between these multiples of it (a drag that goes on; a reversed or a far jump starts from the last equilibrium)
PREDICTOR_RANGE = (0.0, 2.0)


def _goals(effectors) -> np.ndarray:
    """The effectors' goals, flattened (k,)."""
    parts = [np.ravel(np.asarray(e.effectorGoal, dtype=np.float64)) for e in effectors]
    return np.concatenate(parts) if parts else np.zeros(0)


def _predict(problem, move: _Move | None, x: np.ndarray, last_report, goals: np.ndarray):
    """A start for a frame whose goals moved on as in the last frame (a drag): the last frame's move of the
    positions and multipliers extrapolated, ``x + s (x - x_0)``, ``lambda + s (lambda - lambda_0)``, with ``s`` the
    new goal move projected on the last one over its length squared. Returns ``(x (n, 3), (constraint, lambda)
    pairs)`` or None (no last move ending here, goals that did not move or turned back, an implausible state).
    The answer does not depend on it: the steps from there end at the same fixed point, and a frame whose
    predicted start fails starts again from the last equilibrium."""
    if (move is None or move.goal_start is None or move.x_end.shape != x.shape or not np.array_equal(move.x_end, x)
            or move.goal_end.shape != goals.shape or move.goal_start.shape != goals.shape):
        return None
    last, new = move.goal_end - move.goal_start, goals - move.goal_end
    length = float(last @ last)
    if length <= 0.0 or not np.any(new):
        return None
    s = float(new @ last) / length
    if not PREDICTOR_RANGE[0] < s <= PREDICTOR_RANGE[1]:
        return None
    start = dict((id(c), f) for c, f in move.forces_start)
    end = dict((id(c), f) for c, f in move.forces_end)
    pairs = []
    for constraint, force in last_report.forces:
        key = id(constraint)
        if key not in start or key not in end or not (start[key].shape == end[key].shape == force.shape):
            return None
        if not np.array_equal(end[key], force):
            return None
        pairs.append((constraint, force + s * (force - start[key])))
    x_predicted = x + s * (x - move.x_start)
    if check_state(problem, x_predicted):
        return None
    return x_predicted, pairs


#: constrained Newton steps with the QP in place of the complementarity solve (:func:`_sqp`) before the frame
#: falls back to QPs each followed by a forward frame (an approximate tangent, SOFA's corotational one,
#: converges linearly: about a third of the unbalanced force per step)
SQP_STEPS = 40
#: unbalanced force (relative to the force scale) above which every SQP step refactorizes the tangent
SQP_FAR = 1e-3


def _sqp(problem, newton, constraints, linearize, linear, roles, limits, settings, weight, x_cur, tolerance, info):
    """The fast path: constrained Newton steps whose multipliers come from the QP (an SQP). From the state of
    ``linear`` (x_cur with its multipliers): solve the QP, step to ``x + K^-1 (R + J^T lambda)``, linearise
    there, until the unbalanced force |R + J^T lambda| meets the Newton tolerance and a new QP would move no
    node farther than ``tolerance``: both the constrained equilibrium and the QP's optimum about it. One
    factorization per step, so a goal that moves a little costs a few steps. Returns ``(x, linearisation,
    roles, solution)`` at convergence, or None (too many steps, a growing unbalanced force, an implausible
    state, a contact the rows miss): the caller then takes the robust path."""
    residual_tolerance = max(newton.residual_tolerance_threshold, ROUND_OFF_FACTOR)
    reference, previous, refactorized = None, None, True
    relaxation, last_proposal, alternations = 1.0, None, 0
    exact = bool(getattr(problem.elasticity, "exact_tangent", False))
    for step in range(SQP_STEPS):
        solution = solve_inverse_qp(linear.W, linear.dfree, roles, limits, settings.qp, linear.force, weight)
        info.linearizations += 1
        info.qp_time += solution.qp_time
        info.pivots += solution.pivots
        if not solution.ok:
            return None
        system = linear.system
        unbalanced = float(np.linalg.norm(linear.residual + system.J_free.T @ linear.force))
        if step <= 1:  # a start at the last equilibrium is balanced whatever the new goal: the first step sets it
            reference = max(unbalanced, reference or 0.0, ROUND_OFF_FACTOR * problem.last_force_scale)
        change = float(np.max(np.linalg.norm(problem.expand(linear.KinvJt @ (solution.force - linear.force)),
                                             axis=1), initial=0.0))
        info.change, info.backend, info.objective = change, solution.backend, solution.objective
        if unbalanced <= residual_tolerance * problem.last_force_scale and change <= tolerance:
            if any(getattr(c, "missed_contacts", None) and c.missed_contacts(x_cur) for c in constraints):
                return None
            return x_cur, linear, roles, solution
        if unbalanced > 1e3 * reference:
            return None
        # Aitken's dynamic relaxation of the multipliers (Kuttler & Wall 2008): with an approximate W the QP's
        # answers about successive states can alternate around the fixed point; relaxing the step by the
        # secant estimate of that rate makes it converge in a few steps instead of tens
        proposal = solution.force - linear.force
        turned = last_proposal is not None and proposal.shape == last_proposal.shape and proposal @ last_proposal < 0
        alternations = alternations + 1 if turned else 0
        if alternations >= 2:  # the answers keep alternating around the fixed point
            difference = proposal - last_proposal
            relaxation = float(np.clip(-relaxation * (last_proposal @ difference) / (difference @ difference),
                                       0.1, 1.0))
        elif not turned:  # the answers move one way: no relaxation
            relaxation = 1.0
        last_proposal = proposal
        force = linear.force + relaxation * proposal
        x_next = x_cur + problem.expand(linear.free_step + linear.KinvJt @ force)
        if check_state(problem, x_next):
            return None
        # as the forward equilibrium: a new factorization far from the equilibrium, or when a step with the old
        # one did not cut the unbalanced force enough; else the old factorization (the same rate with an
        # approximate tangent, at the cost of a solve instead of an assembly and a factorization)
        # with the exact tangent as the static frames' equilibrium (mechanics.equilibrium): a new factorization
        # unless the imbalance is below FAR_FROM_EQUILIBRIUM_EXACT and the last step cut it by EXACT_REUSE_RATE
        # (a chord step then still gains a lot; otherwise Newton's quadratic step is worth a factorization)
        if exact:
            refactorize = (unbalanced > FAR_FROM_EQUILIBRIUM_EXACT * problem.last_force_scale
                           or (previous is not None and unbalanced > EXACT_REUSE_RATE * previous))
        else:
            refactorize = (unbalanced > SQP_FAR * problem.last_force_scale or (
                previous is not None and unbalanced > 0.9 * previous and not refactorized))
        previous, refactorized = unbalanced, refactorize
        linear, roles = linearize(x_next, linear.pairs(force), refactorize)
        x_cur = x_next
    return None


def solve_inverse_frame(*, problem, newton, constraint_solver, constraints, x: np.ndarray, frame: int,
                        settings: InverseSettings, free_start: np.ndarray | None = None,
                        correction: str = "equilibrium", x_is_equilibrium: bool = False,
                        last_report: FrameReport | None = None, reuse_unchanged: bool = False,
                        constrained_tangent: ConstrainedTangent | None = None
                        ) -> tuple[np.ndarray | None, FrameReport]:
    """One inverse frame from the positions ``x`` (n, 3) (the arguments are :func:`solve_frame`'s).

    Returns the new positions (None when the frame failed: a diverged solve, an infeasible QP) and the report,
    whose ``inverse`` field is an :class:`InverseReport`. Sets each actuator's ``inverse_target`` and
    ``inverse_bound``.

    ``reuse_unchanged`` (nothing was edited since the last frame): when the last frame started at ``x`` with the
    multipliers it ended with, the goals and the actuators' limits it had, and converged there, this frame would
    repeat its computation to the bit: its answer is the last frame's (``report.unchanged``, with the last
    frame's inverse report). A goal at rest thus costs nothing per frame, and a playing window comes to rest."""
    on_equilibrium = x_is_equilibrium and last_report is not None and correction == "equilibrium"
    effectors = [c for c in constraints if getattr(c, "has_goal", False) and c.active and not c.enforced]
    for effector in effectors:
        effector.begin_frame(x)
    limits = {c: c.inverse_limits(*c.inverse_state) for c in constraints if hasattr(c, "inverse_limits") and c.active}
    goals = _goals(effectors)
    start_force = _multipliers(last_report)
    if (reuse_unchanged and on_equilibrium and settings.still is not None and last_report.converged
            and last_report.inverse is not None and settings.still.matches(x, start_force, goals, limits)):
        report = unchanged_report(frame, last_report, last_report.newton, constraints, x, last_report.x_free, {})
        report.inverse, report.message = last_report.inverse, last_report.message
        return x, report
    x_new, report = _inverse_frame(problem=problem, newton=newton, constraint_solver=constraint_solver,
                                   constraints=constraints, x=x, frame=frame, settings=settings,
                                   free_start=free_start, correction=correction, on_equilibrium=on_equilibrium,
                                   last_report=last_report, constrained_tangent=constrained_tangent,
                                   effectors=effectors, limits=limits, goals=goals)
    ended_still = (on_equilibrium and x_new is not None and report.converged and not report.inverse.predicted
                   and np.array_equal(x_new, x) and np.array_equal(_multipliers(report), start_force))
    settings.still = _Still(x.copy(), start_force, goals, limits) if ended_still else None
    return x_new, report


def _inverse_frame(*, problem, newton, constraint_solver, constraints, x, frame, settings, free_start, correction,
                   on_equilibrium, last_report, constrained_tangent, effectors, limits, goals):
    """The inverse frame itself (:func:`solve_inverse_frame`, which may find it need not run, and which gives the
    active ``effectors``, the actuators' ``limits`` (a dict, the actuators its keys) and the ``goals`` (k,))."""
    tangent = constrained_tangent or ConstrainedTangent(problem.dof_to_free)
    actuators = list(limits)
    info = InverseReport()
    newton_report, free_times, failed = free_configuration(problem, newton, constraints, x, free_start, frame)
    if failed is not None:
        failed.inverse = info
        return None, failed
    x_free = newton_report.x
    rows = [c for c in constraints if c.enforced and c.active] + effectors
    size = body_size(problem.elasticity.rest_positions)
    tolerance = settings.linearization_tolerance * size
    x_cur, report = (x, None)
    times: dict[str, float] = {"free_solve": sum(free_times.values())}

    def linearize(x_at, pairs, refactorize=True):
        begun = time.perf_counter()
        linear = _linearize(problem, newton, rows, x, x_at, pairs, tangent, refactorize)
        times["inverse_linearization"] = times.get("inverse_linearization", 0.0) + time.perf_counter() - begun
        return linear, row_roles(linear.system, settings.qp)

    move = settings.last_move
    settings.last_move = None
    predicted = (_predict(problem, move, x, last_report, goals)
                 if on_equilibrium and correction == "equilibrium" else None)
    try:
        if predicted is not None:
            linear, roles = linearize(*predicted)
            x_cur, info.predicted = predicted[0], True
        else:
            linear, roles = linearize(x, last_report.forces) if on_equilibrium else linearize(x_free, [])
            if not on_equilibrium:
                x_cur = x_free
        structure = (tuple(id(c) for c, _row in roles.actuators), roles.effectors.size)
        if settings.weight is None or settings.weight_rows != structure:
            # the scale is W's at the frame's start: the last frame's end, whose rows a predicted start lacks
            at_start = move.W if predicted is not None and move.W.shape == linear.W.shape else linear.W
            settings.weight, settings.weight_rows = energy_weight(at_start, roles, settings.qp), structure
        weight = settings.weight
    except (ValueError, ParameterError) as error:
        return None, _failed(frame, f"inverse model: {error}", newton_report, info, times)
    if correction == "equilibrium":
        try:
            fast = _sqp(problem, newton, constraints, linearize, linear, roles, limits, settings, weight,
                        x_cur, tolerance, info)
            if fast is None and predicted is not None:  # a bad prediction: the steps from the frame's start
                info.predicted = False
                linear, roles = linearize(x, last_report.forces)
                x_cur = x
                fast = _sqp(problem, newton, constraints, linearize, linear, roles, limits, settings, weight,
                            x_cur, tolerance, info)
        except (ValueError, ParameterError):
            fast = None
        if fast is not None:
            if on_equilibrium:
                goal_start = (move.goal_end if move is not None and move.x_end.shape == x.shape
                              and np.array_equal(move.x_end, x) else None)
                settings.last_move = _Move(x.copy(), last_report.forces, fast[0].copy(),
                                           fast[1].pairs(fast[1].force), goals, fast[1].W, goal_start)
            return _sqp_answer(fast, constraints, actuators, effectors, x_free, frame, newton_report, info, times,
                               size)
        info.sqp_fallback = True
        if predicted is not None:
            try:
                linear, roles = linearize(x, last_report.forces)
            except (ValueError, ParameterError) as error:
                return None, _failed(frame, f"inverse model: {error}", newton_report, info, times)
            x_cur = x
    while True:
        solution = solve_inverse_qp(linear.W, linear.dfree, roles, limits, settings.qp, linear.force, weight)
        info.linearizations += 1
        info.qp_time += solution.qp_time
        info.pivots += solution.pivots
        info.backend, info.objective = solution.backend, solution.objective
        if not solution.ok:
            return None, _failed(frame, f"inverse model: {solution.message}", newton_report, info, times)
        change = linear.KinvJt @ (solution.force - linear.force)
        info.change = float(np.max(np.linalg.norm(problem.expand(change), axis=1), initial=0.0))
        settled = info.change <= tolerance and (report is not None or on_equilibrium)
        if settled or correction == "linear" or info.forward_frames >= settings.linearizations:
            break
        if (report is None and on_equilibrium and settings.stalled_force is not None
                and settings.stalled_force.shape == solution.force.shape
                and np.allclose(solution.force, settings.stalled_force, rtol=1e-6,
                                atol=1e-9 * float(np.max(np.abs(solution.force), initial=1.0)))):
            info.stalled = True  # the last frame found no step along this very proposal
            break
        step = _line_search(problem, newton, constraint_solver, constraints, x, x_free, frame, tangent, linear,
                            roles, solution, x_cur, report or last_report, settings, weight, linearize, info, times,
                            must_move=report is None and not on_equilibrium)
        if step == "stalled":
            info.stalled = True
            settings.stalled_force = solution.force.copy()
            _restore(constraints, linear, roles, report or last_report, x_cur)
            break
        if step is None or isinstance(step, FrameReport):
            failed = step if isinstance(step, FrameReport) else _failed(
                frame, "inverse model: no step along the QP's actuation gives a plausible state", newton_report,
                info, times)
            failed.inverse = info
            return None, failed
        x_cur, report, linear, roles = step
    info.active = [(c.name, key) for c, key in solution.active]
    if correction == "linear":
        return _linear_answer(problem, constraints, linear, roles, solution, x_free, frame, newton_report, info,
                              times)
    if not info.stalled:
        settings.stalled_force = None
    info.converged = info.change <= tolerance or info.stalled
    if not info.converged:
        info.message = (f"inverse model not converged after {info.linearizations} linearisation(s): a new QP would "
                        f"still move a node by {info.change:.3g}")
    elif solution.message:
        info.message = f"inverse model: {solution.message}"
    if report is None:  # the first QP kept the last frame's actuation: its state stands
        report = unchanged_report(frame, last_report, newton_report, constraints, x, x_free, {})
        x_cur = x
    report.times = {**times, "inverse_qp": info.qp_time}
    _goal_reached(info, effectors, actuators, solution, size)
    report.inverse = info
    if info.message:
        report.message = "; ".join(m for m in (report.message, info.message) if m)
    return x_cur, report


#: a goal within this fraction of the body's size counts as reached
GOAL_TOLERANCE = 1e-3
#: halvings of a step toward the QP's actuation that does not lower the objective
MAX_HALVINGS = 4


def _restore(constraints, linear, roles, report, x_cur) -> None:
    """Put the constraints back at the accepted state ``x_cur`` after rejected trial steps: their outputs and the
    actuators' targets."""
    for constraint, force in report.forces:
        constraint.store(force, x_cur)
    actual = linear.dfree + linear.W @ linear.force
    for constraint, row in roles.actuators:
        constraint.inverse_target = float(actual[row])


def _line_search(problem, newton, constraint_solver, constraints, x, x_free, frame, tangent, linear, roles, solution,
                 x_cur, last, settings, weight, linearize, info, times, must_move):
    """Drive the actuators a fraction alpha = 1, 1/2, ... of the way from their current values to the QP's and
    solve the forward frame, until the objective (:func:`merit`, measured at the new equilibrium) falls, at most
    :data:`MAX_HALVINGS` halvings. Returns ``(x, report, linearisation, roles)`` of the accepted state,
    ``"stalled"`` when no step lowered the objective (``must_move``: the current state is the free configuration,
    not an equilibrium; the first plausible step is taken), the failed forward report when every step failed,
    or None."""
    current = merit(linear.W, linear.dfree, linear.force, roles, settings.qp, weight)
    actual = linear.dfree + linear.W @ linear.force
    failure = None
    for halving in range(MAX_HALVINGS + 1):
        alpha = 0.5 ** halving
        for constraint, row in roles.actuators:
            constraint.inverse_target = float(actual[row] + alpha * (solution.delta[row] - actual[row]))
        x_new, forward = solve_frame(problem=problem, newton=newton, constraint_solver=constraint_solver,
                                     constraints=constraints, x=x, frame=frame, free_start=x_free,
                                     correction="equilibrium", x_is_equilibrium=True, equilibrium_start=x_cur,
                                     last_report=last, reuse_unchanged=False, constrained_tangent=tangent)
        info.forward_frames += 1
        for phase, seconds in forward.times.items():
            times[phase] = times.get(phase, 0.0) + seconds
        if x_new is None:
            failure = forward
            continue
        try:
            new_linear, new_roles = linearize(x_new, forward.forces)
        except (ValueError, ParameterError):
            continue
        value = merit(new_linear.W, new_linear.dfree, new_linear.force, new_roles, settings.qp, weight)
        if value < current or must_move:
            return x_new, forward, new_linear, new_roles
        failure = "stalled"
    if isinstance(failure, FrameReport):
        failure.message = f"inverse model: the forward frame failed: {failure.message}"
    return failure


def _linear_answer(problem, constraints, linear, roles, solution, x_free, frame, newton_report, info, times):
    """SoftRobots' step: x_free + K^-1 J^T lambda of the single QP about the free configuration."""
    x_new = x_free + problem.expand(linear.KinvJt @ solution.force)
    found = check_state(problem, x_new)
    if found:
        return None, _failed(frame, found, newton_report, info, times)
    system = linear.system
    forces = store_forces(constraints, system, solution.force, x_new)
    for constraint, row in roles.actuators:
        constraint.inverse_target = float(solution.delta[row])
    info.converged = solution.converged_pivots
    info.message = solution.message
    report = FrameReport(frame, True, info.message, newton=newton_report, n_constraint_rows=system.n_rows,
                         times={**times, "inverse_qp": info.qp_time})
    report.x_free, report.forces, report.inverse = x_free, forces, info
    _goal_reached(info, [c for c in constraints if getattr(c, "has_goal", False) and not c.enforced],
                  [c for c, _row in roles.actuators], solution, body_size(problem.elasticity.rest_positions))
    return x_new, report


def _sqp_answer(fast, constraints, actuators, effectors, x_free, frame, newton_report, info, times, size):
    """The frame's state and report when the SQP converged: every constraint stores its multipliers at x."""
    x_new, linear, roles, solution = fast
    system, force = linear.system, linear.force
    forces = store_forces(constraints, system, force, x_new)
    actual = linear.dfree + linear.W @ force
    for constraint, row in roles.actuators:
        constraint.inverse_target = float(actual[row])
    info.converged, info.active = True, [(c.name, key) for c, key in solution.active]
    if solution.message:
        info.message = f"inverse model: {solution.message}"
    report = FrameReport(frame, True, info.message, newton=newton_report, n_constraint_rows=system.n_rows,
                         times={**times, "inverse_qp": info.qp_time})
    report.x_free, report.forces, report.inverse = x_free, forces, info
    _goal_reached(info, effectors, actuators, solution, size)
    return x_new, report


def _goal_reached(info: InverseReport, effectors, actuators, solution, size: float) -> None:
    """Fill ``goal_distance``, ``reached`` and ``limiting`` and mark the limiting actuators (``inverse_bound``):
    a goal farther than :data:`GOAL_TOLERANCE` of the body's size is not reached, and the actuator limits the
    answer sits on (other than a lower force bound: a cable that cannot push, an unused cavity) are what stops
    it."""
    distances = [float(np.max(np.linalg.norm((e.current_positions - e.effectorGoal)[:, e.directions], axis=1),
                              initial=0.0)) for e in effectors]
    info.goal_distance = max(distances, default=0.0)
    info.reached = info.goal_distance <= GOAL_TOLERANCE * size
    info.limiting = [] if info.reached else [(c.name, key) for c, key in solution.active
                                             if key not in ("minForce", "minPressure")]
    names = {name: key for name, key in info.limiting}
    for constraint in actuators:
        constraint.inverse_bound = names.get(constraint.name, "")


def _failed(frame, message, newton_report, info, times) -> FrameReport:
    info.message = message
    return FrameReport(frame, False, message, newton=newton_report, times=dict(times), inverse=info)
