"""The inverse problem in constraint space (SoftRobots.Inverse ``QPInverseProblemImpl``).

Rows of one linearisation (``W`` (m, m) with compliances on its diagonal, ``dfree`` (m,)) play three parts:

- **effector rows** E (position effectors with a goal): ``delta_E = dfree_E + W_EU lambda_U`` is the weighted
  offset to the goal, the objective;
- **unknown rows** U: the actuators (one row each: a cable's tension, a cavity's pressure), the equality rows of
  other constraints (attachments, the mouse drag) and the contact rows;
- nothing else: every enforced row is an unknown.

The QP over ``lambda_U`` minimises ``1/2 |delta_E|^2 + epsilon w 1/2 lambda^T W_energy lambda`` with
``w = |Q|_inf / |W_energy|_inf`` (SoftRobots' scaling, so that epsilon is relative), ``W_energy`` the actuator
block of W (``actuatorsOnly``) or the whole U block. Constraints: each actuator's multiplier and constraint
value within its :class:`~mechanics.constraints.base.InverseLimits`; each equality row at its target.

An actuator with a lower force bound (``minForce = 0``: a cable that cannot push) may go *slack*: its
multiplier then stays at that bound and its upper displacement limit no longer binds the path (the motor stops
at its limit, the cable path may shorten further, as in the forward law). An actuator starts slack when it is
at its lower force bound and the current state would carry it beyond its upper limit; it changes state by the
same pivots as the contacts. A QP that still has no solution (limits that cannot all hold, e.g. a per-frame
variation smaller than what gravity alone imposes) is solved with each actuator's displacement limits widened
by the least amounts that make it feasible (a first least-squares QP), and the answer says by how much.

Contacts follow Coevoet et al. (RA-L 2017): each contact is in a state, *inactive* (``lambda = 0``, the QP must
keep ``delta_n >= target``) or *active* (``delta_n = target`` and, with friction, no slip ``delta_t = delta_s =
0``; the QP must keep ``lambda_n >= 0`` and, with ``allowSliding``, the tangential forces in the friction pyramid
``|lambda_t|, |lambda_s| <= mu lambda_n``). Each state is complementary by construction. When the QP's answer
presses on the condition that keeps a state valid (its dual is positive), the most blocking contact changes
state and the QP is solved again, at most ``maxIterations`` times, a repeated set of states ending the
pivots (SoftRobots' cycling test). Where softsim departs: the contact's own friction applies unless
``responseFriction`` is set, and a sliding contact is not a state of the QP (the pyramid only bounds a sticking
one); the forward re-equilibration that follows each QP applies Coulomb's law exactly.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.inverse.qp import QPProblem, solve_qp
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FRICTION

logger = logging.getLogger(__name__)

__all__ = ["InverseParameters", "RowRoles", "InverseSolution", "energy_weight", "merit", "row_roles",
           "solve_inverse_qp"]

#: relative diagonal regularisation that keeps the QP strictly convex when epsilon = 0 or contacts carry no
#: energy (an active-set backend needs a positive definite P)
REGULARIZATION = 1e-10


@dataclass(frozen=True)
class InverseParameters:
    """The ``[solver.inverse]`` values the QP uses."""

    epsilon: float = 1e-3
    actuatorsOnly: bool = False
    maxIterations: int = 250
    tolerance: float = 1e-10
    allowSliding: bool = False
    responseFriction: float | None = None
    qpSolver: str = "daqp"


@dataclass
class RowRoles:
    """What each row of a linearisation is to the QP.

    actuators: ``(constraint, row)`` per actuator; effectors: effector rows (e,); equalities: rows with an
    EQUALITY law (q,) and their targets (q,); contacts: ``(first row, rows, mu, target)`` per contact block;
    ``unknowns`` (u,): the rows of lambda_U in QP order (actuators, then equalities, then contacts).
    """

    actuators: list = field(default_factory=list)
    effectors: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    equalities: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    equality_targets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    contacts: list = field(default_factory=list)

    @property
    def unknowns(self) -> np.ndarray:
        contact_rows = [np.arange(start, start + size) for start, size, _mu, _target in self.contacts]
        return np.concatenate([np.array([row for _c, row in self.actuators], dtype=np.int64), self.equalities,
                               *contact_rows]).astype(np.int64)


def row_roles(system, params: InverseParameters) -> RowRoles:
    """Classify the rows of a :class:`~mechanics.constraint_system.ConstraintSystem` (ParameterError for a row law the
    inverse problem does not handle)."""
    roles = RowRoles()
    effectors, equalities, targets = [], [], []
    blocks = system.blocks
    block_of_row = np.repeat(np.arange(blocks.n_blocks), blocks.size)
    for constraint, rows in zip(system.constraints, system.row_ranges):
        if hasattr(constraint, "inverse_limits"):
            roles.actuators.append((constraint, rows.start))
            continue
        if not constraint.enforced:
            if getattr(constraint, "has_goal", False):
                effectors.extend(range(rows.start, rows.stop))
            continue
        for b in np.unique(block_of_row[rows]):
            start, size, kind = int(blocks.start[b]), int(blocks.size[b]), int(blocks.kind[b])
            if kind == EQUALITY:
                equalities.extend(range(start, start + size))
                targets.extend([float(blocks.target[b])] * size)
            elif kind == FRICTION or (kind == BOUNDED and blocks.lo[b] == 0.0 and blocks.hi[b] == np.inf):
                mu = float(blocks.mu[b]) if params.responseFriction is None else float(params.responseFriction)
                roles.contacts.append((start, size, mu if size == 3 else 0.0, float(blocks.target[b])))
            else:
                raise ParameterError(f"inverse mode: {constraint.name} has rows the inverse problem cannot take "
                                     f"(a {kind} law); only actuators, effectors, equalities and contacts")
    roles.effectors = np.asarray(effectors, dtype=np.int64)
    roles.equalities = np.asarray(equalities, dtype=np.int64)
    roles.equality_targets = np.asarray(targets, dtype=np.float64)
    return roles


@dataclass
class InverseSolution:
    """force (m,): lambda of every row (0 on effector rows); delta (m,): ``dfree + W force``, the linear
    prediction; objective: the QP's (:func:`merit` at ``force``); pivots: state changes; active:
    ``(constraint, key)`` of every actuator limit the answer sits on; qp_time (s): the whole call (building the
    QPs, the pivots, the backend); backend_time (s): the backend's share; backend; ok / message."""

    force: np.ndarray
    delta: np.ndarray
    objective: float
    pivots: int
    active: list
    qp_time: float
    backend: str
    ok: bool
    message: str = ""
    converged_pivots: bool = True
    backend_time: float = 0.0


def solve_inverse_qp(W: np.ndarray, dfree: np.ndarray, roles: RowRoles, limits: dict, params: InverseParameters,
                     start_force: np.ndarray | None = None, weight: float | None = None) -> InverseSolution:
    """The QP of one linearisation, with the contacts' and the actuators' state pivots.

    W (m, m), dfree (m,); ``limits`` maps each actuator constraint to its InverseLimits; ``start_force`` (m,)
    (the current multipliers) decides the first states (contacts active where lambda_n > 0, actuators slack
    where described in the module docstring) and warm-starts the backend."""
    started = time.perf_counter()
    m = dfree.size
    U, E = roles.unknowns, roles.effectors
    n_act = len(roles.actuators)
    start = np.zeros(m) if start_force is None or start_force.size != m else start_force
    if weight is None:
        weight = energy_weight(W, roles, params)
    P, q = _objective(W, dfree, U, E, n_act, weight, params)
    states = np.concatenate([_initial_contacts(W, dfree, roles, start), _initial_taut(W, dfree, roles, limits, start)])
    visited = {states.tobytes()}
    pivots, qp_time, pivots_ended, widened, widened_for, good = 0, 0.0, True, None, None, None
    while True:
        problem, conditions = _constraints(W, dfree, roles, limits, U, P, q, states, params, widened)
        solution = solve_qp(problem, params.qpSolver, tolerance=params.tolerance, initvals=start[U])
        qp_time += solution.time
        if not solution.ok and widened_for != states.tobytes():
            widened_for = states.tobytes()
            widening, extra_time = _least_widening(W, dfree, roles, limits, U, states, params)
            qp_time += extra_time
            if widening is not None:
                # an actuator that can go slack and had to pass its upper limit is slack; the others' limits
                # are widened only when no such actuator remains
                slack = _can_slacken(roles, limits, states) & (widening[:, 1] > 0.0)
                if np.any(slack):
                    states[len(roles.contacts):][slack] = False
                    visited.add(states.tobytes())
                    widened = None
                else:
                    widened = widening
                continue
        if not solution.ok and good is not None:  # the last pivot made the QP infeasible: undo it and stop
            solution, states, widened = good
            pivots_ended = False
            break
        if not solution.ok:
            return InverseSolution(np.zeros(m), dfree.copy(), float("nan"), pivots, [],
                                   time.perf_counter() - started, solution.backend, False,
                                   f"the inverse QP has no solution ({solution.message})", backend_time=qp_time)
        good = (solution, states.copy(), widened)
        candidate = _most_blocking(solution, conditions, params.tolerance, dfree + W[:, U] @ solution.x)
        if candidate is None:
            break
        if pivots >= params.maxIterations:
            pivots_ended = False
            break
        states[candidate] = not states[candidate]
        if states.tobytes() in visited:  # cycling: keep the last answer
            states[candidate] = not states[candidate]
            pivots_ended = False
            break
        visited.add(states.tobytes())
        pivots += 1
        widened = None  # new states: the limits hold again unless these states need a widening too
    force = np.zeros(m)
    force[U] = solution.x
    delta = dfree + W @ force
    objective = merit(W, dfree, force, roles, params, weight)
    bounds = _active_limits(roles, limits, force, delta, states[len(roles.contacts):])
    messages = [] if pivots_ended else [f"the contact and slack pivots did not settle after {pivots} change(s)"]
    if widened is not None:
        beyond = _beyond_limits(roles, limits, delta, states[len(roles.contacts):])
        if beyond:
            messages.append("the actuators' limits cannot all hold; beyond them: " + ", ".join(
                f"{name} by {amount:.3g}" for name, amount in beyond))
    return InverseSolution(force, delta, objective, pivots, bounds, time.perf_counter() - started, solution.backend,
                           True, "; ".join(messages), pivots_ended, backend_time=qp_time)


def _inf_norm(matrix: np.ndarray) -> float:
    return float(np.max(np.abs(matrix).sum(axis=1), initial=0.0))


def _energy_rows(roles: RowRoles, params: InverseParameters) -> np.ndarray:
    """The rows the energy term covers: the actuators (``actuatorsOnly``) or every unknown row."""
    U = roles.unknowns
    return U[:len(roles.actuators)] if params.actuatorsOnly else U


def energy_weight(W: np.ndarray, roles: RowRoles, params: InverseParameters) -> float:
    """SoftRobots' scale of the energy term, ``|W_EU^T W_EU|_inf / |W_energy|_inf`` (1 without effector rows, 0
    when W_energy vanishes)."""
    U, E, rows = roles.unknowns, roles.effectors, _energy_rows(roles, params)
    W_EU = W[np.ix_(E, U)]
    norm_q, norm_w = _inf_norm(W_EU.T @ W_EU), _inf_norm(W[np.ix_(rows, rows)])
    if norm_w <= 1e-14:
        return 0.0
    return norm_q / norm_w if norm_q > 0.0 else 1.0


def merit(W: np.ndarray, dfree: np.ndarray, force: np.ndarray, roles: RowRoles, params: InverseParameters,
          weight: float) -> float:
    """The QP's objective at the multipliers ``force`` (m,): ``1/2 |delta_E|^2 + epsilon w 1/2 lambda^T W_energy
    lambda`` (without the regularisation). At a constrained equilibrium, ``delta_E`` is the effectors' actual
    weighted offset to their goals."""
    E, rows = roles.effectors, _energy_rows(roles, params)
    delta_E = dfree[E] + W[E] @ force
    energy = force[rows] @ W[np.ix_(rows, rows)] @ force[rows]
    return 0.5 * float(delta_E @ delta_E) + 0.5 * params.epsilon * weight * float(energy)


def _objective(W, dfree, U, E, n_act, weight, params) -> tuple[np.ndarray, np.ndarray]:
    """P (u, u) and q (u,): the effector term plus SoftRobots' scaled energy term and a tiny regularisation."""
    W_EU = W[np.ix_(E, U)]
    P = W_EU.T @ W_EU
    q = W_EU.T @ dfree[E]
    energy_rows = n_act if params.actuatorsOnly else U.size
    P[:energy_rows, :energy_rows] += params.epsilon * weight * W[np.ix_(U[:energy_rows], U[:energy_rows])]
    diagonal = float(np.max(np.abs(np.diag(P)), initial=0.0))
    P[np.diag_indices_from(P)] += REGULARIZATION * (diagonal if diagonal > 0.0 else 1.0)
    return 0.5 * (P + P.T), q


def _initial_contacts(W, dfree, roles, start) -> np.ndarray:
    """Active (True) per contact: where the current multipliers press (lambda_n > 0) or the current ones would
    make the contact penetrate."""
    active = np.zeros(len(roles.contacts), dtype=bool)
    for k, (row, _size, _mu, target) in enumerate(roles.contacts):
        active[k] = start[row] > 0.0 or dfree[row] + W[row] @ start < target
    return active


def _can_slacken(roles, limits, states) -> np.ndarray:
    """Per actuator: taut now, with a finite lower force bound and upper displacement limit."""
    taut = states[len(roles.contacts):]
    finite = np.array([np.isfinite(limits[c].force_lo) and np.isfinite(limits[c].delta_hi)
                       for c, _row in roles.actuators], dtype=bool)
    return taut & finite


def _initial_taut(W, dfree, roles, limits, start) -> np.ndarray:
    """Taut (True) per actuator; slack where the actuator is at its lower force bound and the current state
    carries it beyond its upper limit."""
    taut = np.ones(len(roles.actuators), dtype=bool)
    for k, (constraint, row) in enumerate(roles.actuators):
        limit = limits[constraint]
        if np.isfinite(limit.force_lo) and np.isfinite(limit.delta_hi):
            at_lower = start[row] <= limit.force_lo + 1e-12 * max(1.0, abs(limit.force_lo))
            taut[k] = not (at_lower and dfree[row] + W[row] @ start > limit.delta_hi)
    return taut


def _constraints(W, dfree, roles, limits, U, P, q, states, params, widened=None):
    """The QPProblem for the ``states`` (per contact: active; then per actuator: taut), and per state the
    condition whose positive dual asks to change it: ``("box", u, sign)`` (a multiplier's bound, sign +1 for the
    upper side), ``("G", row, 1)`` (a constraint row), ``("lower", u, row)`` (a taut actuator whose force sits
    on its lower bound while its upper displacement limit presses) or ``("slack", u, (row, upper limit))`` (a
    slack actuator that pulling would help while it is short of its upper limit)."""
    u = U.size
    position = {int(row): i for i, row in enumerate(U)}
    lb, ub = np.full(u, -np.inf), np.full(u, np.inf)
    G_rows, h, A_rows, b = [], [], [], []
    n_contacts = len(roles.contacts)
    conditions = [None] * (n_contacts + len(roles.actuators))
    for k, (constraint, row) in enumerate(roles.actuators):
        i, limit, taut = position[row], limits[constraint], states[n_contacts + k]
        below, above = (0.0, 0.0) if widened is None else widened[k]
        lb[i], ub[i] = limit.force_lo, limit.force_hi
        if not taut:
            ub[i] = limit.force_lo
            conditions[n_contacts + k] = ("slack", i, (row, limit.delta_hi))
        elif np.isfinite(limit.delta_hi):
            if np.isfinite(limit.force_lo):
                conditions[n_contacts + k] = ("lower", i, len(G_rows))
            G_rows.append(W[row, U])
            h.append(limit.delta_hi + above - dfree[row])
        if np.isfinite(limit.delta_lo):
            G_rows.append(-W[row, U])
            h.append(dfree[row] - limit.delta_lo + below)
    for row, target in zip(roles.equalities, roles.equality_targets):
        A_rows.append(W[row, U])
        b.append(target - dfree[row])
    for k, (row, size, mu, target) in enumerate(roles.contacts):
        n = position[row]
        if not states[k]:
            lb[n:n + size] = ub[n:n + size] = 0.0
            conditions[k] = ("G", len(G_rows), 1.0)
            G_rows.append(-W[row, U])
            h.append(dfree[row] - target)
            continue
        lb[n] = 0.0
        conditions[k] = ("box", n, -1.0)
        A_rows.append(W[row, U])
        b.append(target - dfree[row])
        if size == 3 and mu == 0.0:
            lb[n + 1:n + 3] = ub[n + 1:n + 3] = 0.0
        elif size == 3:
            for tangent in (row + 1, row + 2):
                A_rows.append(W[tangent, U])
                b.append(-dfree[tangent])
                if params.allowSliding:
                    t = position[tangent]
                    for sign in (1.0, -1.0):
                        pyramid = np.zeros(u)
                        pyramid[t], pyramid[n] = sign, -mu
                        G_rows.append(pyramid)
                        h.append(0.0)
    problem = QPProblem(P, q, _stack(G_rows, u), np.asarray(h, dtype=np.float64), _stack(A_rows, u),
                        np.asarray(b, dtype=np.float64), lb, ub)
    return problem, conditions


def _least_widening(W, dfree, roles, limits, U, states, params) -> tuple[np.ndarray | None, float]:
    """The least widening (a, 2) >= 0 of the actuators' displacement limits, ``[lo - w[:, 0], hi + w[:, 1]]``,
    that makes the constraints feasible: a QP in (lambda_U, w) minimising |w|^2 (plus a tiny regularisation);
    None when even that has no solution. Also returns the time spent."""
    n_act, u = len(roles.actuators), U.size
    P0 = np.eye(u) * 1e-12
    problem, _conditions = _constraints(W, dfree, roles, limits, U, P0, np.zeros(u), states, params)
    columns = np.zeros((problem.G.shape[0], 2 * n_act))  # the actuator rows come first in G, in this order
    row_of_g, n_contacts = 0, len(roles.contacts)
    for k, (constraint, _row) in enumerate(roles.actuators):
        limit, taut = limits[constraint], states[n_contacts + k]
        if taut and np.isfinite(limit.delta_hi):
            columns[row_of_g, 2 * k + 1] = -1.0
            row_of_g += 1
        if np.isfinite(limit.delta_lo):
            columns[row_of_g, 2 * k] = -1.0
            row_of_g += 1
    P = np.zeros((u + 2 * n_act, u + 2 * n_act))
    P[:u, :u] = P0
    P[u:, u:] = np.eye(2 * n_act)
    widening = QPProblem(P, np.zeros(u + 2 * n_act), np.hstack([problem.G, columns]), problem.h,
                         np.hstack([problem.A, np.zeros((problem.A.shape[0], 2 * n_act))]), problem.b,
                         np.concatenate([problem.lb, np.zeros(2 * n_act)]),
                         np.concatenate([problem.ub, np.full(2 * n_act, np.inf)]))
    solution = solve_qp(widening, params.qpSolver, tolerance=params.tolerance)
    if not solution.ok:
        return None, solution.time
    scale = max(1.0, float(np.max(np.abs(dfree), initial=0.0)))
    w = np.maximum(solution.x[u:], 0.0).reshape(n_act, 2)
    return w * (1.0 + 1e-9) + 1e-12 * scale * (w > 0.0), solution.time


def _stack(rows: list, width: int) -> np.ndarray:
    return np.vstack(rows) if rows else np.zeros((0, width))


def _most_blocking(solution, conditions, tolerance: float, delta: np.ndarray) -> int | None:
    """The state whose condition the answer presses on hardest (positive dual), or None; ``delta`` (m,) is the
    answer's prediction of every row."""
    duals = np.concatenate([np.abs(solution.z), np.abs(solution.z_box), np.zeros(1)])
    threshold = max(tolerance, 1e-9) * max(1.0, float(np.max(duals)))
    best, strength = None, threshold
    for k, condition in enumerate(conditions):
        if condition is None:
            continue
        kind, index, extra = condition
        if kind == "box":
            dual = extra * solution.z_box[index]
        elif kind == "slack":  # pulling would help, and the cable is short of its upper limit: it is taut
            row, upper = extra
            dual = solution.z_box[index] if delta[row] < upper - 1e-9 * max(1.0, abs(upper)) else 0.0
        elif kind == "G":
            dual = solution.z[index]
        else:  # a taut actuator on its lower force bound whose upper displacement limit presses
            dual = solution.z[extra] if solution.z_box[index] < -threshold else 0.0
        if dual > strength:
            best, strength = k, dual
    return best


def _beyond_limits(roles, limits, delta, taut) -> list:
    """``(actuator name, amount)`` of every actuator whose predicted value ``delta`` lies beyond its displacement
    limits (a slack one: below its lower limit only) by more than 1e-9 of the limit's scale."""
    beyond = []
    for k, (constraint, row) in enumerate(roles.actuators):
        limit = limits[constraint]
        above = delta[row] - limit.delta_hi if taut[k] else -np.inf
        amount = max(above, limit.delta_lo - delta[row])
        if amount > 1e-9 * max(1.0, abs(limit.delta_lo) if np.isfinite(limit.delta_lo) else 1.0,
                               abs(limit.delta_hi) if np.isfinite(limit.delta_hi) else 1.0):
            beyond.append((constraint.name, float(amount)))
    return beyond


def _active_limits(roles, limits, force, delta, taut) -> list:
    """``(constraint, key)`` of each actuator limit the answer sits on (within 1e-9 of the limit's scale); a
    slack actuator sits on its lower force bound only."""
    active = []
    for k, (constraint, row) in enumerate(roles.actuators):
        limit = limits[constraint]
        lo_f, hi_f, lo_d, hi_d = limit.names
        if not taut[k]:
            hi_d = ""
        for value, bound, key in ((force[row], limit.force_lo, lo_f), (force[row], limit.force_hi, hi_f),
                                  (delta[row], limit.delta_lo, lo_d), (delta[row], limit.delta_hi, hi_d)):
            if key and np.isfinite(bound) and abs(value - bound) <= 1e-9 * max(1.0, abs(bound), abs(value)):
                active.append((constraint, key))
    return active
