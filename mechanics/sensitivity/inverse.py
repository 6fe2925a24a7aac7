"""The inverse model's sensitivities: how the actuation a converged inverse frame found, and where it put the
body, change with the effectors' goals (a controller's Jacobian).

A converged inverse frame (docs/inverse.md) is a constrained equilibrium whose multipliers are the optimum of
the QP linearised about that same equilibrium. With ``A = K + S(lambda)`` the exact tangent the frame
linearises with, ``W = J A^-1 J^T + C``, the effector rows E (``delta_E = weight (p(x) - goal)``), the unknown
rows U split into N (multiplier free to vary) and B (at a force bound: fixed), the rows A held at a limit or an
equality (their constraint value is fixed; dual ``nu``), and R the rows of the energy term, the frame satisfies

    f(x) + J_U(x)^T lambda_U = 0                                         (equilibrium, free DOFs)
    A(x, lambda) v = J_E^T delta_E(x, goal) + eps w J_R^T lambda_R + J_Act^T nu        (v: an auxiliary field)
    J_N v + eps w C_N lambda_N [N in R] + C_N nu [N in Act] + r lambda_N = 0           (the QP's stationarity)
    d_i(x) + C_i lambda_i = its limit or target                            (i held at a limit, an equality)
    lambda_i = its bound                                                   (i at a force bound)

(the stationarity ``P lambda + q + W_U,Act nu = 0`` of the QP, with ``W = J A^-1 J^T + C`` written through
``v = A^-1 (...)``; ``r`` is the QP's regularisation, ``w`` the energy weight the frame kept). Differentiating
with respect to one goal coordinate gives one sparse linear system in (dx, dlambda_U, dv, dnu) of size
2 n_free + u + a. Its coefficients are exact except ``M = d(A(x) v)/dx``, the third derivative of the energy
along v, which is the directional derivative of the tangent along v (the tangent is a Hessian: its derivative is
symmetric in its two directions), taken by central differences of the assembled tangent at x +- h v and
x +- h/2 v combined by Richardson extrapolation (error O(h^4), h = 1e-4 of the body's size over |v|).

Rows at a force bound have zero sensitivity (their multiplier is the bound); a row held at a displacement limit
keeps its value (zero sensitivity of its displacement) and its force varies. A row on a bound with a zero
multiplier of that bound is a non-differentiable point. A touching frictionless contact holds its gap with its
force free (a row of both the held set and N), one apart has zero force (:func:`_contact_rows`). Touching
friction contacts and frames whose limits had to be widened are refused.

A corotational body's inverse frame with SOFA's rotations (``large``/``polar``/``svd``) or a single linear
correction builds its QP on SOFA's tangent R K0 R^T (no constraint-force stiffness; with ``polarF``/``svdF`` it
uses their exact, symmetric tangent, a Hessian, and none of what follows applies): that is the W whose fixed point
the frame reaches, so the equations of v and the stationarity use it, while the
equilibrium's row uses the exact tangent. R K0 R^T is no Hessian, so ``d(A(x) v)/dx`` is not the derivative of A
along v: the system built on the latter is refined by defect correction with directional derivatives of
``A(x) v`` along the current dx (:func:`_refine_with_directional_derivatives`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.constraint_system import build_constraint_system
from softsim.mechanics.equilibrium import body_size
from softsim.mechanics.inverse.problem import REGULARIZATION, row_roles
from softsim.mechanics.sensitivity.errors import (
    GradientError,
    NotConvergedError,
    NotDifferentiableError,
    solved_frame,
)
from softsim.mechanics.sensitivity.outputs import output_gradient

_GOAL = re.compile(r"^body\.(?P<body>[^.\[\]]+)\.effector\.(?P<effector>[^.\[\]]+)\.effectorGoal"
                   r"(?:\[(?P<point>\d+)\])?(?:\.(?P<axis>[xyz])|\[(?P<axis_index>[0-2])\])$")
#: the force-type limits of an actuator (the others bound its displacement or volume growth)
FORCE_LIMITS = frozenset({"minForce", "maxForce", "minPressure", "maxPressure", "maxPressureVariation"})
#: the QP's stationarity must hold to this fraction of its terms' scale at the frame's state
STATIONARITY_TOLERANCE = 1e-6
#: a bound's multiplier below this fraction of the stationarity scale is zero (the bound is on its edge)
DUAL_EDGE = 1e-8
#: Richardson step of the tangent's directional derivative, as a fraction of the body's size
TANGENT_STEP = 1e-4
#: defect corrections of the sensitivity system with SOFA's corotational tangent, and the relative change of
#: dx at which they stop
MAX_REFINEMENTS = 30
REFINEMENT_TOLERANCE = 1e-10


@dataclass
class GoalParameter:
    """One goal coordinate: ``key``, its ``value``, the effector ``name``, its ``point`` and ``axis``."""

    key: str
    value: float
    name: str
    point: int
    axis: int


def goal_parameter(scene, key: str) -> GoalParameter:
    """The :class:`GoalParameter` of ``key`` (GradientError naming what is wrong)."""
    match = _GOAL.match(key.strip())
    if match is None:
        raise GradientError(f"wrt {key!r}: in inverse mode, gradients are taken with respect to the effectors' "
                            "goals: body.B.effector.E.effectorGoal[k].x (.y, .z; or [k][0..2]; "
                            "effectorGoal.x for an effector with one point)")
    body = next((b for b in scene.spec.bodies if b.name == match.group("body")), None)
    if body is None:
        raise GradientError(f"wrt {key!r}: no body {match.group('body')!r}; bodies: "
                            f"{', '.join(b.name for b in scene.spec.bodies)}")
    effector = next((e for e in body.effectors if e.name == match.group("effector")), None)
    if effector is None:
        raise GradientError(f"wrt {key!r}: body {body.name} has no effector {match.group('effector')!r}; "
                            f"effectors: {', '.join(e.name for e in body.effectors) or 'none'}")
    if effector.effectorGoal is None:
        raise GradientError(f"wrt {key!r}: effector {effector.name} has no effectorGoal")
    goals = np.broadcast_to(np.asarray(effector.effectorGoal, dtype=np.float64), (effector.n_points, 3))
    point = int(match.group("point") or 0)
    if match.group("point") is None and effector.n_points != 1:
        raise GradientError(f"wrt {key!r}: effector {effector.name} has {effector.n_points} points: name one, "
                            f"effectorGoal[k].x with k in 0..{effector.n_points - 1}")
    if point >= effector.n_points:
        raise GradientError(f"wrt {key!r}: effector {effector.name} has {effector.n_points} point(s) "
                            f"(0..{effector.n_points - 1})")
    axis = "xyz".index(match.group("axis")) if match.group("axis") else int(match.group("axis_index"))
    return GoalParameter(key, float(goals[point, axis]), effector.name, point, axis)


def inverse_gradient_report(scene, outputs: list[str], wrt: list[str]):
    """{output: {goal key: d output / d goal}} at the scene's last inverse frame, as a
    :class:`~mechanics.sensitivity.adjoint.GradientReport` (see the module docstring)."""
    from softsim.mechanics.sensitivity.adjoint import EquilibriumState, GradientReport, law_rows, tangent

    started = time.perf_counter()
    sim = scene.simulation
    _check_frame(scene)
    params = [goal_parameter(scene, key) for key in wrt]
    problem = sim.problem
    settings = sim.inverse
    free = problem.free_dofs
    x = np.array(sim.x, dtype=np.float64)
    constraints = sim.constraints
    effectors = [c for c in constraints if getattr(c, "has_goal", False) and c.active and not c.enforced]
    rows = [c for c in constraints if c.enforced and c.active] + effectors
    system = build_constraint_system(rows, x, x, free, linearize_at=x)
    force = system.initial_force(sim.last_report.forces)
    force = np.zeros(system.n_rows) if force is None else force
    roles = row_roles(system, settings.qp)
    for effector in effectors:
        if effector.limitShiftToTarget:
            raise GradientError(f"{effector.name}: limitShiftToTarget clips the goal each frame: its "
                                "sensitivity is not available (turn it off)")
    state = EquilibriumState(scene, x, system, force, free, body_size(problem.elasticity.rest_positions))
    grads = [output_gradient(state, name) for name in outputs]
    m, n = system.n_rows, free.size
    U, E = roles.unknowns, roles.effectors
    n_act = len(roles.actuators)
    R = U[:n_act] if settings.qp.actuatorsOnly else U
    at_force, at_limit = _active_rows(sim.last_report.inverse.active, roles)
    touching, free_contacts = _contact_rows(system, force, roles, state)
    held = np.concatenate([np.asarray(sorted(at_limit), dtype=np.int64), roles.equalities,
                           touching]).astype(np.int64)
    fixed = np.concatenate([np.asarray(sorted(at_force), dtype=np.int64), free_contacts]).astype(np.int64)
    both = set(at_force) & set(at_limit)
    if both:
        names = [c.name for c, row in roles.actuators if row in both]
        raise NotDifferentiableError([f"{name}: on a force bound and a displacement limit at once"
                                      for name in names])
    varied = np.array([i for i in U if i not in set(fixed)], dtype=np.int64)
    times = {"setup": time.perf_counter() - started}

    started = time.perf_counter()
    J = system.J_free.tocsr()
    C = np.asarray(system.compliance, dtype=np.float64)
    eps_w = settings.qp.epsilon * float(settings.weight or 0.0)
    in_R = np.zeros(m, dtype=bool)
    in_R[R] = True
    # the equilibrium's exact tangent, and the tangent the frame's QP was built on: the same with exact
    # tangents; SOFA's R K0 R^T (without the constraint forces' stiffness) for a corotational body, whose W
    # defines the frame's fixed point
    frame_exact = bool(getattr(problem.elasticity, "exact_tangent", False))
    qp_tangent = tangent if frame_exact else _frame_tangent
    A_mat = tangent(state)
    A_qp = A_mat if frame_exact else qp_tangent(state)
    lu = spla.splu(A_qp.tocsc())
    cols = np.concatenate([E, U])
    KinvJt = lu.solve(np.asarray(J[cols].T.todense()))
    W = np.zeros((m, m))
    W[np.ix_(cols, cols)] = J[cols] @ KinvJt
    W[np.diag_indices_from(W)] += C
    # the QP's regularisation r, relative to P's largest diagonal entry (P = W_UE W_EU + eps w W_RR)
    P_diag = np.sum(W[np.ix_(U, E)] ** 2, axis=1) + eps_w * np.where(in_R[U], np.diag(W)[U], 0.0)
    reg = REGULARIZATION * (float(np.max(np.abs(P_diag), initial=0.0)) or 1.0)
    delta_E = system.dfree[E]
    e_index = {int(r): i for i, r in enumerate(E)}
    u_index = {int(r): i for i, r in enumerate(U)}
    base = J[E].T @ delta_E + eps_w * (J[R].T @ force[R])
    v0 = lu.solve(np.asarray(base).reshape(-1))
    gradient = W[np.ix_(U, E)] @ delta_E + eps_w * W[np.ix_(U, R)] @ force[R] + reg * force[U]
    W_Uh = W[np.ix_(U, held)]
    Ni = np.array([u_index[int(i)] for i in varied], dtype=np.int64)
    nu = np.linalg.lstsq(W_Uh[Ni], -gradient[Ni], rcond=None)[0] if held.size else np.zeros(0)
    stationarity = gradient + W_Uh @ nu
    scale = float(np.max(np.abs(np.concatenate([W[np.ix_(U, E)] @ delta_E, eps_w * W[np.ix_(U, R)] @ force[R],
                                                 np.zeros(1)]))))
    scale = scale if scale > 0.0 else 1.0
    residual = float(np.max(np.abs(stationarity[Ni]), initial=0.0)) / scale
    if residual > STATIONARITY_TOLERANCE:
        raise NotConvergedError(f"the QP's optimality conditions hold only to {residual:.3g} of their scale at the "
                                "frame's state: its actuation is not the QP's optimum about its equilibrium "
                                "(tighten solver.inverse.linearizationTolerance and the Newton tolerance)")
    _check_edges(roles, fixed, held, stationarity, u_index, nu, W_Uh, scale)
    v = v0 + (lu.solve(np.asarray(J[held].T.todense())) @ nu if held.size else 0.0)
    times["fixed_point"] = time.perf_counter() - started

    started = time.perf_counter()
    M = _tangent_derivative(state, v, qp_tangent)
    A_mat = tangent(state)  # the tangent at x again: the last assembly leaves the problem's buffers at x
    A_qp = A_mat if frame_exact else qp_tangent(state)
    times["tangent_derivative"] = time.perf_counter() - started

    started = time.perf_counter()
    S_unit = [(_stiffness(system, x, _unit(m, int(i)), free) @ v) for i in U]
    # d(A_qp(x, lambda) v)/dlambda: the constraint forces' stiffness is in the QP's tangent when it is exact
    S_in_A = S_unit if frame_exact else [np.zeros(n) for _ in U]
    multipliers = np.zeros(m)
    multipliers[R] += eps_w * force[R]
    multipliers[held] += nu
    S_mult = _stiffness(system, x, multipliers, free)
    u, a = U.size, held.size
    J_E, J_U, J_R, J_h = J[E], J[U], J[R], J[held]
    S_cols = sp.csr_matrix(np.column_stack(S_in_A)) if u else sp.csr_matrix((n, 0))
    R_in_U = sp.csr_matrix((np.ones(R.size), (np.arange(R.size), [u_index[int(r)] for r in R])), shape=(R.size, u))
    # block rows: equilibrium (n), v's equation (n), stationarity on N, limits held, fixed multipliers
    row_eq = sp.hstack([-A_mat, J_U.T, sp.csr_matrix((n, n)), sp.csr_matrix((n, a))])
    row_v = sp.hstack([M + S_mult - J_E.T @ J_E, S_cols - eps_w * (J_R.T @ R_in_U), A_qp, -J_h.T])
    pick_N = sp.csr_matrix((np.ones(Ni.size), (np.arange(Ni.size), Ni)), shape=(Ni.size, u))
    diag_N = np.array([(eps_w * C[i] if in_R[i] else 0.0) + reg for i in varied])
    held_position = {int(r): k for k, r in enumerate(held)}
    C_N_nu = sp.csr_matrix((n_rows := Ni.size, a))
    if a:
        entries = [(k, held_position[int(i)], C[i]) for k, i in enumerate(varied) if int(i) in held_position]
        if entries:
            r_, c_, d_ = zip(*entries)
            C_N_nu = sp.csr_matrix((d_, (r_, c_)), shape=(n_rows, a))
    S_N = sp.csr_matrix(np.vstack([S_unit[u_index[int(i)]] for i in varied])) if Ni.size else sp.csr_matrix((0, n))
    row_N = sp.hstack([-S_N, sp.diags(diag_N) @ pick_N, J[varied], C_N_nu])
    pick_h = sp.csr_matrix((np.ones(a), (np.arange(a), [u_index[int(i)] for i in held])), shape=(a, u))
    # the held rows' laws: their rows, except a friction contact's on a curved obstacle, whose frame turns
    L_h = law_rows(state, J)[held]
    row_h = sp.hstack([L_h, sp.diags(C[held]) @ pick_h, sp.csr_matrix((a, n)), sp.csr_matrix((a, a))])
    pick_B = sp.csr_matrix((np.ones(fixed.size), (np.arange(fixed.size), [u_index[int(i)] for i in fixed])),
                           shape=(fixed.size, u))
    row_B = sp.hstack([sp.csr_matrix((fixed.size, n)), pick_B, sp.csr_matrix((fixed.size, n + a))])
    system_matrix = sp.vstack([row_eq, row_v, row_N, row_h, row_B]).tocsc()
    rhs = np.zeros((system_matrix.shape[0], len(params)))
    for k, p in enumerate(params):
        r = _goal_row(system, effectors, p)
        if r is not None:
            rhs[n:2 * n, k] = np.asarray(J_E[e_index[r]].todense()).reshape(-1) * -_row_weight(effectors, p)
    factor = spla.splu(system_matrix) if params else None
    solution = factor.solve(rhs) if params else np.zeros((system_matrix.shape[0], 0))
    if params and not frame_exact:
        solution = _refine_with_directional_derivatives(state, qp_tangent, v, M, factor, system_matrix, rhs,
                                                        solution, n)
    dx, dlambda_U = solution[:n], solution[n:n + u]
    factor = factor if factor is not None else spla.splu(system_matrix)
    corrections = _fixed_point_corrections(grads, factor, stationarity[Ni], n, u, m, U, free)
    times["solve"] = time.perf_counter() - started

    values = {g.name: {} for g in grads}
    for k, p in enumerate(params):
        dlambda = np.zeros(m)
        dlambda[U] = dlambda_U[:, k]
        for g in grads:
            value = float(g.dx[free] @ dx[:, k] + g.dlambda @ dlambda)
            values[g.name][p.key] = value + _explicit(g.name, effectors, p)
    return GradientReport(values, {g.name: g.value for g in grads}, {p.key: p.value for p in params},
                          int(varied.size), int(fixed.size), False, 0, times, corrections)


def _fixed_point_corrections(grads, factor, stationarity_N: np.ndarray, n: int, u: int, m: int, U: np.ndarray,
                             free: np.ndarray) -> dict:
    """{output: its first-order change from the frame's state to the exact fixed point of the QP}: one Newton step
    of the frame's equations (the sensitivity system's matrix, ``factor``) whose only residual is the QP's
    stationarity on the rows whose force varies (``stationarity_N``; the equilibrium and the held laws hold to the
    Newton tolerance). An inverse frame stops once a new QP would move the state by less than
    ``linearizationTolerance``: on the finger pressing a plane it stops 6.6e-9 mm short, and that shortfall
    varies with the goal by 1e-7 mm per mm, which differences of re-solved frames see and the derivative (of the
    fixed point) does not."""
    rhs = np.zeros(factor.shape[0])
    rhs[2 * n:2 * n + stationarity_N.size] = -stationarity_N
    step = factor.solve(rhs)
    dlambda = np.zeros(m)
    dlambda[U] = step[n:n + u]
    return {g.name: float(g.dx[free] @ step[:n] + g.dlambda @ dlambda) for g in grads}


def _contact_rows(system, force: np.ndarray, roles, state) -> tuple[np.ndarray, np.ndarray]:
    """(rows held, rows whose multiplier is fixed at 0) of the frame's frictionless contacts, as its QP's states
    hold them: a touching contact (lambda_n > 0) holds its normal row at its gap, its force free in the QP (like
    an equality row, with a dual); a contact apart from the body has zero force on all its rows. NotDifferentiable
    Error for a contact touching with zero force (on the edge of separating); GradientError for a touching
    friction contact (not differentiated yet)."""
    from softsim.mechanics.sensitivity.adjoint import _force_scale

    if not roles.contacts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    f_tol = 1e-7 * max(_force_scale(state), float(np.max(np.abs(force), initial=0.0)))
    d_tol = 1e-6 * state.size
    held, fixed, edges = [], [], []
    for row, size, mu, target in roles.contacts:  # mu: the QP's (responseFriction when it is set)
        if force[row] > f_tol:
            held.append(row)
            if size == 3 and mu > 0.0:
                raise GradientError("touching friction contacts in an inverse frame are not differentiated: the "
                                    "inverse QP has no sliding state (an active contact sticks, its tangential "
                                    "forces bounded by a pyramid) while the frame's forward re-equilibration "
                                    "applies Coulomb's disk, so the frames tried (the finger pressing a plane "
                                    "with mu = 0.5) never reach the QP's fixed point: their contact pivots do "
                                    "not settle (docs/gradients.md)")
            fixed.extend(range(row + 1, row + size))  # a frictionless contact's tangential rows carry no force
        else:
            fixed.extend(range(row, row + size))
            if abs(system.dfree[row] - target) <= d_tol:
                edges.append(f"contact row {row}: touching with zero force (on the edge of separating)")
    if edges:
        raise NotDifferentiableError(edges)
    return np.asarray(held, dtype=np.int64), np.asarray(fixed, dtype=np.int64)


def _check_frame(scene) -> None:
    report = solved_frame(scene.simulation)
    info = report.inverse
    if scene.spec.solver.newton.correction == "linear":
        raise GradientError("the frame ended with the linear correction (solver.newton.correction = \"linear\"), "
                            "not at the constrained equilibrium: no gradient")
    if not info.converged or info.stalled:
        why = "its line search stalled" if info.stalled else "a new QP would still move the state"
        raise NotConvergedError(f"the inverse frame {report.frame} did not reach the QP's fixed point ({why}): "
                                "it has no gradient")
    if "did not settle" in info.message or "cannot all hold" in info.message:
        raise NotConvergedError(f"the inverse frame {report.frame} has no clean optimum: {info.message}")


def _active_rows(active: list, roles) -> tuple[set, set]:
    """(rows at a force bound, rows held at a displacement limit) from the frame's active limits
    ``(actuator name, key)``."""
    by_name = {c.name: row for c, row in roles.actuators}
    at_force, at_limit = set(), set()
    for name, key in active:
        row = by_name.get(name)
        if row is not None:
            (at_force if key in FORCE_LIMITS else at_limit).add(int(row))
    return at_force, at_limit


def _check_edges(roles, fixed, held, stationarity, u_index, nu, W_Uh, scale) -> None:
    """NotDifferentiableError for a bound or a limit that holds with a zero multiplier."""
    names = {int(row): c.name for c, row in roles.actuators}
    edges = []
    for i in fixed:
        if abs(stationarity[u_index[int(i)]]) <= DUAL_EDGE * scale:
            edges.append(f"{names.get(int(i), i)}: on its force bound with a zero multiplier of that bound "
                         "(on the edge of leaving it)")
    for k, i in enumerate(held):
        if int(i) in names and float(np.max(np.abs(W_Uh[:, k] * nu[k]), initial=0.0)) <= DUAL_EDGE * scale:
            edges.append(f"{names[int(i)]}: on its displacement limit with a zero multiplier of that limit "
                         "(on the edge of leaving it)")
    if edges:
        raise NotDifferentiableError(edges)


def _unit(m: int, i: int) -> np.ndarray:
    e = np.zeros(m)
    e[i] = 1.0
    return e


def _stiffness(system, x: np.ndarray, multipliers: np.ndarray, free: np.ndarray) -> sp.csr_matrix:
    """S = -d(J(x)^T multipliers)/dx on the free DOFs ``(n_free, n_free)``."""
    n = 3 * x.shape[0]
    total = sp.csr_matrix((n, n))
    for constraint, rows in zip(system.constraints, system.row_ranges):
        if not np.any(multipliers[rows]):
            continue
        term = constraint.force_stiffness(x, multipliers[rows])
        if term is not None:
            r, c, values = term
            total = total + sp.csr_matrix((values, (r, c)), shape=(n, n))
    return total.tocsr()[free][:, free]


def _frame_tangent(state) -> sp.csr_matrix:
    """The tangent the inverse frame linearised with when a body's is SOFA's corotational R K0 R^T (``(n_free,
    n_free)``, a copy): the problem's own assembly at the state, without the constraint forces' stiffness (the
    frame adds it only with exact tangents)."""
    return sp.csr_matrix(state.scene.simulation.problem.tangent(state.x), copy=True)


def _tangent_derivative(state, v: np.ndarray, tangent) -> sp.csr_matrix:
    """d(A(x) v)/dx = dA/dx[v] (A a Hessian: its derivative is symmetric in its directions), by central
    differences at x +- h v and x +- h/2 v combined by Richardson extrapolation."""
    from softsim.mechanics.sensitivity.adjoint import EquilibriumState

    problem = state.scene.simulation.problem
    direction = problem.expand(v)
    largest = float(np.max(np.abs(direction), initial=0.0))
    if largest == 0.0:
        return sp.csr_matrix((v.size, v.size))
    h = TANGENT_STEP * state.size / largest

    def at(shift):
        moved = EquilibriumState(state.scene, state.x + shift * direction, state.system, state.force,
                                 state.free_dofs, state.size)
        return sp.csr_matrix(tangent(moved), copy=True)

    def difference(step):
        return (at(step) - at(-step)) / (2.0 * step)

    return ((4.0 * difference(0.5 * h) - difference(h)) / 3.0).tocsr()


def _directional_product(state, tangent, direction_free: np.ndarray, v: np.ndarray) -> np.ndarray:
    """d(A(x) v)/dx applied to ``direction_free`` (n_free,): the derivative of A(x + t d) v at t = 0, by central
    differences at t = +-h, +-h/2 combined by Richardson extrapolation (no symmetry of A's derivative assumed)."""
    from softsim.mechanics.sensitivity.adjoint import EquilibriumState

    direction = state.scene.simulation.problem.expand(direction_free)
    largest = float(np.max(np.abs(direction), initial=0.0))
    if largest == 0.0:
        return np.zeros(v.size)
    h = TANGENT_STEP * state.size / largest

    def at(shift):
        moved = EquilibriumState(state.scene, state.x + shift * direction, state.system, state.force,
                                 state.free_dofs, state.size)
        return tangent(moved) @ v

    def difference(step):
        return (at(step) - at(-step)) / (2.0 * step)

    return (4.0 * difference(0.5 * h) - difference(h)) / 3.0


def _refine_with_directional_derivatives(state, tangent, v, M, factor, system_matrix, rhs, solution, n):
    """The sensitivity system solved with the exact d(A(x) v)/dx of a tangent that is no Hessian (SOFA's
    corotational R K0 R^T, whose derivative is not symmetric in its two directions, so that ``M``, the
    derivative along v, is only an approximation of it): defect correction, each residual evaluated with the
    directional derivative along the current dx (:func:`_directional_product`), each correction solved with the
    factorized system built on ``M``. Converged when a correction changes the unknowns by less than
    :data:`REFINEMENT_TOLERANCE` of their size; GradientError when it does not within :data:`MAX_REFINEMENTS`."""
    for _ in range(MAX_REFINEMENTS):
        residual = rhs - system_matrix @ solution
        for k in range(rhs.shape[1]):
            dx = solution[:n, k]
            residual[n:2 * n, k] -= _directional_product(state, tangent, dx, v) - M @ dx
        step = factor.solve(residual)
        solution = solution + step
        # per goal coordinate, on the whole unknown (dx, dlambda, dv, dnu): dx alone is 0 when every actuator is
        # held at a limit
        size = np.max(np.abs(solution), axis=0, initial=0.0)
        if np.all(np.max(np.abs(step), axis=0, initial=0.0) <= REFINEMENT_TOLERANCE * np.maximum(size, 1e-300)):
            return solution
    raise GradientError("the inverse sensitivity's refinement with the corotational tangent's derivative did not "
                        "converge")


def _goal_row(system, effectors, p: GoalParameter) -> int | None:
    """The constraint row that measures the goal coordinate ``p`` (None when its axis is not used)."""
    effector = next((e for e in effectors if e.name == p.name), None)
    if effector is None:
        return None
    axes = list(effector.directions)
    if p.axis not in axes:
        return None
    for constraint, rows in zip(system.constraints, system.row_ranges):
        if constraint.name == p.name:
            return rows.start + p.point * len(axes) + axes.index(p.axis)
    return None


def _row_weight(effectors, p: GoalParameter) -> float:
    effector = next(e for e in effectors if e.name == p.name)
    return float(effector.weight[p.axis])


def _explicit(output: str, effectors, p: GoalParameter) -> float:
    """The explicit dependence of an output on the goal: an effector's distance to it."""
    if output != f"{p.name}.distance":
        return 0.0
    effector = next((e for e in effectors if e.name == p.name), None)
    if effector is None or p.axis not in list(effector.directions):
        return 0.0
    offset = (effector.current_positions - effector.effectorGoal)[:, effector.directions]
    norm = float(np.linalg.norm(offset))
    return -float((effector.current_positions - effector.effectorGoal)[p.point, p.axis]) / norm if norm else 0.0
