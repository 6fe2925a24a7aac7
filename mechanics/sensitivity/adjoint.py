"""Exact gradients at a converged static equilibrium by the implicit function theorem, one adjoint solve per
output.

At the equilibrium the force balance and the active rows' laws hold:

    G(x, lambda; p) = f_int(x) + f_ext(x) + J(x)^T lambda = 0        (free DOFs)
    c_D(x, lambda; p) = d_D(x) + C_D lambda_D - target_D(p) = 0      (HELD rows, mechanics.sensitivity.active_set)
    lambda_F = its target (a force actuator's value, a bound, or 0)   (FORCED rows)

Differentiating, with A = -dG/dx = K + S (K the exact material tangent, S = -d(J^T lambda)/dx the constraint
forces' stiffness, plus a follower load's tangent):

    [ A     -J_D^T ] [ dx       ]   [ dG/dp + J_F^T dlambda_F ]
    [ L_D    C_D   ] [ dlambda_D] = [ -(dd_D/dp - dtarget_D/dp) ]

(L_D = dd_D/dx, the laws' derivative, is J_D except for a friction contact on a curved obstacle, whose tangent
frame turns with the node: :func:`law_rows`.)

For an output o(x, lambda), do/dp = y . (right-hand side) + do/dlambda_F . dlambda_F/dp + do/dp|explicit with the
adjoint y of the transposed system, solved by its Schur complement in constraint space:

    Z = A^-T [g_x, L_D^T]            (one multi-right-hand-side solve: one column per output, one per HELD row)
    (J_D Z_L + C_D) y_D = g_D + J_D Z_g,    y_x = Z_g - Z_L y_D.

A^-T is applied with the factorization the frame's last equilibrium step left (the constrained tangent's), by a
Galerkin projection of A^T Y = B on the blocks that factorization solves (:meth:`TransposedSolve._refine`); a
factorization of A itself is made only when that does not converge (a factorization made far from the
equilibrium, or of SOFA's approximate tangent).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.equilibrium import body_size
from softsim.mechanics.linear_solvers import DirectSolver, LinearSolverError
from softsim.mechanics.resolutions import FORCE
from softsim.mechanics.sensitivity.active_set import ActiveSet, classify
from softsim.mechanics.sensitivity.errors import GradientError, NotDifferentiableError, solved_frame
from softsim.mechanics.sensitivity.outputs import output_gradient
from softsim.mechanics.sensitivity.parameters import parameter

logger = logging.getLogger(__name__)

#: A^-T through a nearby factorization: stop when the estimated forward error of every column (relative to its
#: size) is below this (a derivative then carries about this relative error; the checks ask 1e-6) ...
FORWARD_TOLERANCE = 1e-8
#: ... and its backward error (residual over |A| |Y| + |B|, per column) below this
REFINEMENT_TOLERANCE = 1e-11
#: a first solve whose backward error is below this was made with a factorization of A itself: it is the answer
ROUND_OFF_BACKWARD_ERROR = 1e-14
#: ... after at most this many solves; a solve whose update does not halve the last one ends the iterations
MAX_REFINEMENTS = 12


@dataclass
class EquilibriumState:
    """The converged static frame the gradients are taken at: ``x (N, 3)``, the final constraint ``system`` and
    its multipliers ``force (m,)``, ``free_dofs``; ``size`` the body's bounding-box diagonal."""

    scene: object
    x: np.ndarray
    system: object
    force: np.ndarray
    free_dofs: np.ndarray
    size: float
    #: values the parameters share (a body's internal force at x, per element set)
    cache: dict = field(default_factory=dict)

    @property
    def n_dofs(self) -> int:
        return int(self.x.size)

    @property
    def n_rows(self) -> int:
        return 0 if self.system is None else self.system.n_rows

    def rows_of(self, name: str) -> slice | None:
        if self.system is None:
            return None
        for constraint, rows in zip(self.system.constraints, self.system.row_ranges):
            if constraint.name == name:
                return rows
        return None


@dataclass
class GradientReport:
    """What :func:`gradients` computed: ``values`` {output: {key: d output / d key}}, ``outputs`` {output:
    value}, ``parameters`` {key: value}, the active set's counts, how A^-T was applied (``reused``: the frame's
    factorization with ``refinements`` more solves, else a new factorization) and ``times`` in seconds. For an
    inverse frame, ``corrections`` {output: its first-order change from the frame's state to the exact fixed point
    of the QP} (the frame stops within ``solver.inverse.linearizationTolerance`` of it)."""

    values: dict
    outputs: dict
    parameters: dict
    held_rows: int = 0
    forced_rows: int = 0
    reused: bool = False
    refinements: int = 0
    times: dict = field(default_factory=dict)
    corrections: dict = field(default_factory=dict)


def equilibrium_state(scene) -> EquilibriumState:
    """The scene's last frame as an :class:`EquilibriumState`, or the typed error saying why it has none."""
    sim = scene.simulation
    report = solved_frame(sim)
    if sim.mode != "static":
        raise GradientError("gradients are available in static mode only (scene.mode = \"static\"); dynamic mode's "
                            "sensitivities depend on the whole trajectory (docs/gradients.md)")
    if report.inverse is not None:
        raise GradientError("an inverse frame's sensitivities are taken with respect to its goals: "
                            "gradient_report (mechanics.sensitivity.inverse, docs/gradients.md)")
    system, force = None, np.zeros(0)
    if report.n_constraint_rows:
        if report.equilibrium is None:
            raise GradientError("the frame ended with the linear correction (solver.newton.correction = "
                                "\"linear\"), not at the constrained equilibrium: no gradient")
        system, force = report.equilibrium.system, np.asarray(report.equilibrium.force, dtype=np.float64)
        if system is None or system.n_rows != force.size:
            raise GradientError("the frame's constraint rows do not match its multipliers")
    problem = sim.problem
    return EquilibriumState(scene, np.array(sim.x, dtype=np.float64), system, force, problem.free_dofs,
                            body_size(problem.elasticity.rest_positions))


def tangent(state: EquilibriumState) -> sp.csr_matrix:
    """A = K + S (+ follower loads' tangents) on the free DOFs at the equilibrium, with the exact material
    tangent (the bodies' elasticities are switched to it for the assembly and back). The same assembly leaves
    the force scale at the equilibrium in ``problem.last_force_scale``."""
    sim = state.scene.simulation
    problem = sim.problem
    switched = []
    for body in state.scene.model.bodies:
        elasticity = body.elasticity
        if not elasticity.exact_tangent:
            switched.append((elasticity, elasticity.corotational_tangent, elasticity.spd_projection))
            elasticity.set_material(corotational_tangent="exact", spd_projection=False)
    try:  # forces and tangent in one assembly: the forces give the force scale (problem.last_force_scale)
        K = problem.system(state.x)[1]
    finally:
        for elasticity, kind, projection in switched:
            elasticity.set_material(corotational_tangent=kind, spd_projection=projection)
    terms = []
    if state.system is not None:
        for constraint, rows in zip(state.system.constraints, state.system.row_ranges):
            term = constraint.force_stiffness(state.x, state.force[rows])
            if term is not None:
                terms.append(term)
    # the frame's own constrained tangent adds the terms (the same terms as its equilibrium steps, so its cached
    # pattern serves both); a new matrix with the terms, K alone is the problem's buffer, which the next
    # assembly rewrites
    A = sim.constrained_tangent.matrix(K, terms) if terms else sp.csr_matrix(K, copy=True)
    free = state.free_dofs
    for load in problem.loads:
        load_tangent = getattr(load, "tangent", None)
        extra = load_tangent(state.x) if callable(load_tangent) else None
        if extra is not None:
            A = (A + sp.csr_matrix(extra)[free][:, free]).tocsr()
    if not A.has_sorted_indices:
        A.sort_indices()
    return A


class TransposedSolve:
    """A^-T through the frame's factorization ``factorized`` (a DirectSolver of a nearby matrix) refined against
    the exact ``A``, or through a factorization of A made here when that does not converge."""

    def __init__(self, A: sp.csr_matrix, factorized=None) -> None:
        self.A = A
        self.AT = A.T  # CSC: its products are as fast as a CSR's, without the conversion
        self.norm = infinity_norm(A)
        usable = (factorized is not None and factorized.capabilities.direct and factorized.is_factorized
                  and factorized.matrix.shape == A.shape)
        self.solver = factorized if usable else None
        self.reused = usable
        self.refinements = 0

    def _fresh(self) -> None:
        self.solver = DirectSolver()
        self.solver.factorize(self.A)
        self.reused = False

    def solve(self, B: np.ndarray) -> np.ndarray:
        if B.shape[1] == 0:
            return np.zeros(B.shape)
        if self.solver is None:
            self._fresh()
        Y, converged = self._refine(B)
        if not converged and self.reused:
            logger.debug("the frame's factorization does not converge as a preconditioner: factorizing A")
            self._fresh()
            Y, converged = self._refine(B)
        if not converged:
            raise GradientError("the adjoint solve did not converge: the tangent at the equilibrium is singular "
                                "or nearly so")
        return Y

    def _refine(self, B: np.ndarray) -> tuple[np.ndarray, bool]:
        """A^-T B by a Galerkin projection on the blocks the factorization gives: the first solve M^-T B, then
        M^-T of each residual. The frame's factorization M is of the tangent at an earlier Newton iterate (a
        slider frame ends with a chord step), and M^-1 A - I is largest on the body's soft modes, where the
        derivatives live: iterative refinement (Y += M^-T R) cut the forward error by about 2e-3 a step on the
        trunk (three or four solves for 1e-8). Projecting A^T Y = B on all the blocks solved so far reaches that
        in three (benchmarks/RESULTS.md, "Gradients"). The forward error is estimated from the last two
        updates of Y (their ratio is the contraction)."""
        tiny = np.finfo(float).tiny
        try:
            first = np.asarray(self.solver.solve_transposed(B)).reshape(B.shape)
        except LinearSolverError:
            return np.zeros(B.shape), False
        scale_b = np.linalg.norm(B, axis=0)
        if not np.all(np.isfinite(first)):
            return np.zeros(B.shape), False
        basis = np.zeros((B.shape[0], 0))  # orthonormal columns spanning every block solved so far
        image = np.zeros((B.shape[0], 0))  # A^T basis
        block = first
        Y_last, updates = np.zeros(B.shape), []
        for _ in range(MAX_REFINEMENTS):
            basis, image = _extend(basis, image, block, self.AT)
            projected = basis.T @ image
            try:
                coefficients = np.linalg.solve(projected, basis.T @ B)
            except np.linalg.LinAlgError:
                return Y_last, False
            Y = basis @ coefficients
            R = B - image @ coefficients
            error = self._backward_error(R, Y, scale_b)
            size = np.linalg.norm(Y, axis=0)
            update = float(np.max(np.linalg.norm(Y - Y_last, axis=0) / (size + tiny)))
            updates.append(update)
            Y_last = Y
            if len(updates) == 1 and error <= ROUND_OFF_BACKWARD_ERROR:
                return Y, True  # a factorization of A itself
            if len(updates) >= 2:
                rate = updates[-1] / (updates[-2] + tiny)
                if rate * updates[-1] <= FORWARD_TOLERANCE and error <= REFINEMENT_TOLERANCE:
                    return Y, True
                if rate > 0.5:  # stalled at round-off
                    return Y, error <= 1e3 * REFINEMENT_TOLERANCE and updates[-1] <= 1e3 * FORWARD_TOLERANCE
            try:
                block = np.asarray(self.solver.solve_transposed(R)).reshape(B.shape)
            except LinearSolverError:
                return Y, False
            self.refinements += 1
        return Y_last, False

    def _backward_error(self, R: np.ndarray, Y: np.ndarray, scale_b: np.ndarray) -> float:
        return float(np.max(np.linalg.norm(R, axis=0) / (self.norm * np.linalg.norm(Y, axis=0) + scale_b
                                                          + np.finfo(float).tiny)))


def infinity_norm(A: sp.csr_matrix) -> float:
    """max_i sum_j |A_ij| of a CSR matrix (0 without entries): the row sums of the rows that have entries, each
    summed over its slice of ``A.data``."""
    if not A.nnz:
        return 0.0
    starts = A.indptr[:-1][np.diff(A.indptr) > 0]
    return float(np.max(np.add.reduceat(np.abs(A.data[:A.indptr[-1]]), starts)))


def _extend(basis: np.ndarray, image: np.ndarray, block: np.ndarray, AT) -> tuple[np.ndarray, np.ndarray]:
    """``basis`` (n, k) orthonormal and ``image`` = A^T basis, extended by the directions of ``block`` (n, s)
    not yet in it: two passes of block Gram-Schmidt, then a QR whose columns below 1e-12 of the block's size
    are dropped (a column already spanned, or zero)."""
    norms = np.linalg.norm(block, axis=0)
    keep = norms > 0.0
    if not keep.any():
        return basis, image
    V = block[:, keep] / norms[keep]
    for _ in range(2 if basis.shape[1] else 0):
        V = V - basis @ (basis.T @ V)
    Q, Rq = np.linalg.qr(V)
    independent = np.abs(np.diag(Rq)) > 1e-12
    if not independent.any():
        return basis, image
    Q = Q[:, independent]
    return np.hstack([basis, Q]), np.hstack([image, AT @ Q])


def _frame_factorization(state: EquilibriumState):
    sim = state.scene.simulation
    if state.system is not None and state.system.n_rows:
        return sim.constrained_tangent.current_solver
    return getattr(sim.newton, "linear_solver", None)


def gradient_report(scene, outputs, wrt) -> GradientReport:
    """{output: {key: d output / d key}} at the scene's last frame, with what it took (:class:`GradientReport`).

    Raises NotConvergedError (no converged frame), NotDifferentiableError (an edge of the active set or a
    sliding contact), GradientError (a name that is not an output or a parameter, a mode without gradients).
    """
    started = time.perf_counter()
    outputs, wrt = _names(outputs, "outputs"), _names(wrt, "wrt")
    last = scene.simulation.last_report
    if last is not None and last.inverse is not None:  # the inverse model: sensitivities to the goals
        from softsim.mechanics.sensitivity.inverse import inverse_gradient_report

        return inverse_gradient_report(scene, outputs, wrt)
    state = equilibrium_state(scene)
    grads = [output_gradient(state, name) for name in outputs]
    params = [parameter(scene, key) for key in wrt]
    times = {"setup": time.perf_counter() - started}
    started = time.perf_counter()
    A = tangent(state)
    times["tangent"] = time.perf_counter() - started
    started = time.perf_counter()
    force_scale = float(scene.simulation.problem.last_force_scale)
    active = classify(state.system, state.force, force_scale, state.size) if state.system is not None else \
        ActiveSet(np.zeros(0, bool), np.zeros(0, bool), [])
    if active.edges:
        raise NotDifferentiableError(active.edges)
    _check_contacts(state, active)
    times["setup"] += time.perf_counter() - started
    started = time.perf_counter()
    free = state.free_dofs
    m = state.n_rows
    held = active.held
    J = state.system.J_free.tocsr() if m else sp.csr_matrix((0, free.size))
    J_held = J[np.flatnonzero(held)]
    L_held = law_rows(state, J)[np.flatnonzero(held)]
    g_x = np.column_stack([g.dx[free] for g in grads]) if grads else np.zeros((free.size, 0))
    g_l = np.column_stack([g.dlambda for g in grads]) if grads else np.zeros((m, 0))
    solve = TransposedSolve(A, _frame_factorization(state))
    Z = solve.solve(np.column_stack([g_x, L_held.T.toarray()]))
    n_out = len(grads)
    Z_g, Z_L = Z[:, :n_out], Z[:, n_out:]
    compliance = state.system.compliance[held] if m else np.zeros(0)
    schur = J_held @ Z_L + np.diag(compliance)
    y_held = np.linalg.solve(schur, g_l[held] + J_held @ Z_g) if held.any() else np.zeros((0, n_out))
    y_x = Z_g - Z_L @ y_held
    times["adjoint"] = time.perf_counter() - started

    started = time.perf_counter()
    kinds = np.repeat(state.system.blocks.kind, state.system.blocks.size) if m else np.zeros(0, np.int8)
    target_held = held & (kinds != FORCE)
    values = {g.name: {} for g in grads}
    for p in params:
        partial = p.partial(state)
        d_lambda = np.where(active.force_target, partial.target, 0.0)
        b_force = partial.force[free] + (d_lambda @ J if m and d_lambda.any() else 0.0)
        b_law = -(partial.violation[held] - np.where(target_held, partial.target, 0.0)[held])
        column = y_x.T @ b_force + y_held.T @ b_law + g_l.T @ d_lambda
        for g, value in zip(grads, column):
            values[g.name][p.key] = float(value + partial.outputs.get(g.name, 0.0))
    times["parameters"] = time.perf_counter() - started
    return GradientReport(values, {g.name: g.value for g in grads}, {p.key: p.value for p in params},
                          int(held.sum()), int(m - held.sum()), solve.reused, solve.refinements, times)


def law_rows(state: EquilibriumState, J: sp.csr_matrix) -> sp.csr_matrix:
    """The derivative (m, n_free) of the rows' laws at the equilibrium: J itself, except for friction contacts
    against a curved obstacle, whose tangential laws ``t(x) . (x - x_start)`` turn with the frame
    (``law_jacobian``). GradientError when such a contact does not know its frame's start."""
    if state.system is None or not state.n_rows:
        return J
    turning = [_turning_frames(constraint) for constraint in state.system.constraints]
    if not any(turning):  # J's rows (slicing them per constraint cost as much as the parameters' partials)
        return J
    blocks = []
    for constraint, rows, turns in zip(state.system.constraints, state.system.row_ranges, turning):
        block = J[rows]
        if turns:
            try:
                block = sp.csr_matrix(constraint.law_jacobian(state.x))[:, state.free_dofs]
            except ValueError as error:
                raise GradientError(f"{error}: the tangential rows' origin is unknown, no gradient") from None
        blocks.append(block)
    return sp.vstack(blocks, format="csr")


def _turning_frames(constraint) -> bool:
    """Whether a constraint has friction contacts whose tangent frame follows the node."""
    if not (hasattr(constraint, "law_jacobian") and hasattr(constraint, "following")):
        return False
    return bool(np.any(constraint.following() & (np.asarray(constraint.mu) > 0.0)))


def check_names(scene, outputs, wrt) -> None:
    """GradientError naming the first output or parameter that ``scene`` (built, no frame needed) does not
    have: the checks of :func:`gradient_report` made before any frame (a sweep checks its request once)."""
    import re

    from softsim.mechanics.sensitivity.outputs import output_names

    names = set(output_names(scene))
    n_nodes = int(scene.simulation.x.shape[0])
    for name in _names(outputs, "outputs"):
        node = re.match(r"^node\[(\d+)\]\.(x|y|z|displacement)$", name)
        if node is None and name not in names:
            raise GradientError(f"output {name!r}: not a differentiable output of this scene; allowed: "
                                f"{', '.join(sorted(names)) or 'none'}, and node[i].x/y/z/displacement")
        if node is not None and int(node.group(1)) >= n_nodes:
            raise GradientError(f"output {name!r}: node ids are 0..{n_nodes - 1}")
    from softsim.mechanics.sensitivity.inverse import goal_parameter

    inverse = scene.simulation.inverse_active
    for key in _names(wrt, "wrt"):
        if inverse:
            goal_parameter(scene, key)
        else:
            parameter(scene, key)


def column_name(output: str, key: str) -> str:
    """The column of d output / d key in a sweep's results: ``d(OUTPUT)/d(KEY)``."""
    return f"d({output})/d({key})"


def gradients(scene, outputs, wrt) -> dict:
    """{output: {key: d output / d key}} at the scene's last converged static frame (see
    :func:`gradient_report`)."""
    return gradient_report(scene, outputs, wrt).values


def _names(names, what: str) -> list[str]:
    names = [names] if isinstance(names, str) else list(names)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise GradientError(f"{what}: give one or more names, got {names!r}")
    return [n.strip() for n in names]


def _force_scale(state: EquilibriumState) -> float:
    problem = state.scene.simulation.problem
    problem.residual(state.x)
    return float(problem.last_force_scale)


def _check_contacts(state: EquilibriumState, active: ActiveSet) -> None:
    """Contact rows are exact when their rows are functions of the equilibrium (and, for the tangential rows,
    of the frame's start): against planes (one frame), against spheres, boxes and capsules, and between bodies
    (the normal and its tangent frame follow the node, and the triangle's plane for a body, their turning is in
    the tangent and in the law rows, :func:`law_rows`). GradientError when an active contact keeps a frame
    found at detection (a contact model whose rows do not follow the nodes)."""
    if state.system is None:
        return
    for constraint, rows in zip(state.system.constraints, state.system.row_ranges):
        if not active.held[rows].any() or not hasattr(constraint, "contact_nodes"):
            continue
        held = _held_contacts(constraint, active.held[rows])
        follows = constraint.following()
        obstacles = getattr(constraint, "obstacles", None)
        if obstacles is None:
            frozen = [int(i) for i in held if not follows[i]]
            if frozen:
                raise GradientError(f"{constraint.name}: active contacts between bodies {frozen[:5]} keep the "
                                    "contact point, normal and tangent frame found at detection, so the gradient "
                                    "would not be exact (docs/gradients.md)")
            continue
        frozen = [int(i) for i in held if not follows[i]
                  and type(obstacles[constraint.contact_obstacles[i]]).__name__ != "PlaneObstacle"]
        if frozen:
            kind = type(obstacles[constraint.contact_obstacles[frozen[0]]]).__name__
            raise GradientError(f"{constraint.name}: active friction contacts against a {kind}: their normal and "
                                "tangent frame are taken at the frame's detection, so the gradient would not be "
                                "exact (docs/gradients.md)")


def _held_contacts(constraint, held_rows: np.ndarray) -> np.ndarray:
    mask = constraint._row_mask()
    per_contact = np.zeros(mask.shape, dtype=bool)
    per_contact[mask] = held_rows
    return np.flatnonzero(per_contact[:, 0])
