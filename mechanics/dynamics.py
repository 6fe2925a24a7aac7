"""Dynamic mode: Compliant-style implicit integration with soft and hard constraints (SOFA's Compliant plugin).

Scheme (alpha = ``implicitVelocity``, beta = ``implicitPosition``, h = ``dt``)::

    v+ = v + h M^-1 (alpha f+ + (1 - alpha) f),     x+ = x + h (beta v+ + (1 - beta) v)

``alpha = beta = 1`` is backward Euler (dissipative). ``alpha = 0.5, beta = 1`` is often called energy
conserving; it is only nearly so: on an undamped mode of frequency omega its amplification matrix has
determinant ``1 / (1 + (h omega)^2 / 2)``, so the energy decays by that factor per step (2.6 % over 1000 steps
at h omega = 0.007, tested against this scalar reference). ``alpha = beta = 0.5`` is the trapezoidal rule and
conserves the energy of a linear model to round-off (tested).

``f = f_int(x) + f_ext - C_damp v + J^T lambda`` with Rayleigh damping ``C_damp = rayleighMass M +
rayleighStiffness K`` (see :mod:`mechanics.mass` for the sign convention; ``K = -df_int/dx`` is SPD, so SOFA's
``H = M - h alpha B - h^2 alpha beta K_sofa`` reads here)::

    H = M + h alpha C_damp + h^2 alpha beta K = (1 + h alpha rayleighMass) M + (h alpha rayleighStiffness
        + h^2 alpha beta) K

First iteration (the linearly implicit scheme: forces linearised at the step start ``x_n``)::

    H dv = h (F_n - h alpha K_n v_n),   F_n = f(x_n) - C_damp v_n

Further iterations (``newton_iterations > 1``) are Newton on ``G(dv) = M dv - h (alpha F(x_k, v_k) + (1 - alpha)
F_n) - h J^T lambda = 0`` at ``x_k = x_n + h (v_n + beta dv_k)``, ``v_k = v_n + dv_k`` with the tangent ``H(x_k)``,
stopping when ``|delta| <= newton_tolerance |dv|``, or when ``delta`` moves the nodes by less than 1e-12 of the
body's size (RMS: ``h beta |delta| <= 1e-12 L sqrt(n_dofs)``; round-off, the test a body at rest passes).

Constraints: every row obeys Compliant's law on the time-averaged multiplier ``lambda`` (a force),
``alpha (phi+ + d phi_dot+) + (1 - alpha)(phi + d phi_dot) = -C lambda``. Linearising ``phi+`` around the iterate
(``phi+ ~ phi(x_k) + J_k h beta delta``, ``phi_dot+ ~ J_k (v_k + delta)``) gives, with ``l = alpha (h beta + d)``::

    l J delta + C lambda = -e,   e = alpha phi(x_k) + alpha d J v_k + (1 - alpha)(phi_n + d phi_dot_n)

(at the first iteration ``phi(x_k)`` is the linear prediction ``phi_n + h J_n v_n``, Compliant's linearised law).
With ``delta = H^-1 (r + h J^T lambda)`` this is solved either

- through the Schur complement, scaled by ``s = alpha h beta`` so that it is in displacement units and has the
  constraint solvers' form ``d = dfree + W lambda`` (``d`` is the time-weighted end-of-step violation
  ``alpha phi+ + (1 - alpha) phi`` for undamped rows)::

      W = s h J H^-1 J^T + (s / l) C,    dfree = (s / l) e + s J H^-1 r

  with any constraint solver and any resolution (unilateral contact, friction, bounded actuators), or
- when every block is EQUALITY, by a sparse LU of the symmetric indefinite KKT matrix::

      | H      -h J^T      | |delta |   | r             |
      | -h J   -(h / l) C  | |lambda| = | (h / l) e_eff |

Fixed nodes are eliminated (the projection P: their rows and columns are dropped, their velocity is zero).

Constraints are the frame step's constraint models (:mod:`mechanics.constraints`), linearised at the step start
exactly as in the static frame step (``update`` at the predicted positions ``x_n + h v_n``, ``J`` at ``x_n``,
``phi(x) = violation(x_n, x, J)``, damping ratio ``d = 0``). The rows, W, the projection and the stored forces
are the static frames' (:mod:`mechanics.constraint_system`): :func:`build_constraint_system` stacks the rows
once per step (J stays ``J_n`` in every iteration), :func:`project_rows` forms ``W`` with the scale ``s h``
and solves, :func:`store_forces` stores the multipliers and gives the next step's warm start.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.block_solver import BlockDiagonalSolver
from softsim.mechanics.constraint_solvers.semismooth import solve_with_newton_fallback
from softsim.mechanics.constraint_system import (
    ConstraintSystem,
    build_constraint_system,
    keyed_forces,
    project_rows,
    store_forces,
)
from softsim.mechanics.linear_solvers import DirectSolver, LinearSolverError
from softsim.mechanics.resolutions import EQUALITY
from softsim.mechanics.scene.schema import DynamicSpec, SceneSettings, check_parameters, defaults

logger = logging.getLogger(__name__)

__all__ = ["DynamicReport", "DynamicSolver", "DynamicState"]


@dataclass
class DynamicState:
    """Positions ``x`` and velocities ``v`` ``(n, 3)`` at time ``time``, after ``step`` steps."""

    x: np.ndarray
    v: np.ndarray
    time: float = 0.0
    step: int = 0


@dataclass
class DynamicReport:
    """What one dynamic step did.

    ``state`` is the new state when ``ok`` (the input state object, untouched, when the step diverged).
    ``correction_norms``: ``|delta|`` of each iteration (velocity units); ``kkt``: "none" (no constraint rows),
    "schur" or "direct"; ``constraint``: the constraint solver's report (Schur path). ``times`` in seconds.
    """

    step: int
    ok: bool
    converged: bool
    diverged: bool
    message: str
    state: DynamicState
    iterations: int = 0
    correction_norms: list[float] = field(default_factory=list)
    constraint: object | None = None
    n_constraint_rows: int = 0
    kkt: str = "none"
    times: dict[str, float] = field(default_factory=dict)
    rigid_states: list = field(default_factory=list)

    @property
    def x(self) -> np.ndarray:
        return self.state.x

    @property
    def v(self) -> np.ndarray:
        return self.state.v

    @property
    def wall_time(self) -> float:
        return sum(self.times.values())


def _default_linear_solver(system):
    """A direct solver, one per body when the system has several (their H blocks are not coupled)."""
    offsets = getattr(system, "node_offsets", None)
    if offsets is None or len(offsets) <= 2:
        return DirectSolver()
    return BlockDiagonalSolver(np.searchsorted(system.free_dofs, 3 * np.asarray(offsets)))


class _RigidBlock:
    """The free rigid bodies during one step: generalised velocities ``q0`` (6 b,), their change ``dq``, mass
    matrix ``M`` and ``H = (1 + h alpha rayleighMass) M`` (6 b, 6 b), forces at the step start, the rows' rigid
    Jacobian ``J`` (m, 6 b) (``parts[i]``: entry i's rows, None when they do not touch a rigid body: a
    constraint touches the bodies of its ``rigid_bodies`` and gives ``rigid_jacobian()`` (rows, 6 per body)),
    and ``delta`` (the last correction of ``dq``)."""

    def __init__(self, bodies, rows: ConstraintSystem, h, alpha, rayleigh_mass):
        self.bodies = bodies
        self.h, self.alpha, self.rm = h, alpha, rayleigh_mass
        size = 6 * len(bodies)
        self.q0 = np.concatenate([b.state.q for b in bodies])
        self.M = np.zeros((size, size))
        for i, body in enumerate(bodies):
            self.M[6 * i:6 * i + 6, 6 * i:6 * i + 6] = body.mass_matrix()
        self.f = np.concatenate([b.forces() for b in bodies])
        self.H = (1.0 + h * alpha * rayleigh_mass) * self.M
        self.dq = np.zeros(size)
        self.delta = np.zeros(size)
        index = {id(b): i for i, b in enumerate(bodies)}
        self.parts = []
        for constraint, row_range in zip(rows.constraints, rows.row_ranges):
            touched = getattr(constraint, "rigid_bodies", ())
            if not touched or not all(id(b) in index for b in touched):
                self.parts.append(None)
                continue
            part = np.zeros((row_range.stop - row_range.start, size))
            J_rigid = constraint.rigid_jacobian()  # (rows, 6 per body it touches)
            for j, body in enumerate(touched):
                i = index[id(body)]
                part[:, 6 * i:6 * i + 6] += J_rigid[:, 6 * j:6 * j + 6]
            self.parts.append(part)
        self.J = np.zeros((rows.n_rows, size))
        for part, row_range in zip(self.parts, rows.row_ranges):
            if part is not None:
                self.J[row_range] = part
        self.coupled = any(p is not None for p in self.parts)
        self.r = np.zeros(size)

    def residual(self, k: int) -> None:
        """The right-hand side of iteration ``k``: ``h (alpha F_k + (1 - alpha) F_0) - M dq`` (``h F_0`` at
        k = 0), ``F = f - rayleighMass M q``."""
        F0 = self.f - self.rm * (self.M @ self.q0)
        Fk = self.f - self.rm * (self.M @ (self.q0 + self.dq))
        self.r = self.h * (self.alpha * Fk + (1.0 - self.alpha) * F0) - self.M @ self.dq

    def solve(self, lam, h: float) -> None:
        """``delta = H^-1 (r + h J^T lambda)`` (no rows: ``H^-1 r``)."""
        rhs = self.r if lam is None or not self.coupled else self.r + h * (self.J.T @ lam)
        self.delta = np.linalg.solve(self.H, rhs)

    def new_states(self, h: float, beta: float) -> list:
        q = self.q0 + self.dq
        return [body.advanced(body.state, q[6 * i:6 * i + 6], h, beta) for i, body in enumerate(self.bodies)]


class DynamicSolver:
    """Implicit dynamics of a :class:`mechanics.model.Model` with constraint models.

    Parameters: the keys of ``[solver.dynamic]`` (:class:`mechanics.scene.schema.DynamicSpec`, with their
    ranges and defaults) and ``dt`` of ``[scene]``, validated by :meth:`set_parameters`.

    system: a :class:`mechanics.model.Model` with masses (or any object with ``n_nodes``, ``n_dofs``,
    ``free_dofs``, ``mass_matrix`` csr ``(N, N)``, ``check_positions`` and ``forces_and_tangent(x) -> (f (n, 3),
    K csr (N, N))``, the total force and K = -df/dx);
    constraints: :mod:`mechanics.constraints` models;
    constraint_solver: used on the Schur path (default: an exact-precision BlockGaussSeidel);
    linear_solver: factorizes H (default :class:`mechanics.linear_solvers.DirectSolver`, or with several bodies
    :class:`mechanics.block_solver.BlockDiagonalSolver`: one factorization per body, so that ``H^-1 J^T`` solves
    each body only with the rows that touch it).
    """

    def __init__(
        self,
        system,
        *,
        constraints=(),
        constraint_solver=None,
        linear_solver=None,
        **parameters,
    ):
        self.system = system
        self.constraints = list(constraints)
        self.constraint_solver = constraint_solver
        self.linear_solver = _default_linear_solver(system) if linear_solver is None else linear_solver
        for name, value in {**defaults(DynamicSpec), **defaults(SceneSettings, {"dt"})}.items():
            setattr(self, name, value)
        self.set_parameters(**parameters)
        #: (constraint, multipliers) of the last step (store_forces), the warm start of the next
        self._last_forces: list = []
        self._last_keyed: dict = {}  # the contact constraints' of them, per contact (keyed_forces)
        #: free rigid bodies (mechanics.rigid_body.RigidBody) integrated with the soft bodies; their contacts
        #: (RigidContact) add their rigid_jacobian; the new states come back in DynamicReport.rigid_states
        self.rigid_bodies: list = []

    def set_parameters(self, **parameters) -> None:
        """Validate every value (ParameterError with the scene loader's message), then apply them all."""
        dt = {"dt": parameters.pop("dt")} if "dt" in parameters else {}
        validated = check_parameters(DynamicSpec, "DynamicSolver", parameters)
        validated.update(check_parameters(SceneSettings, "DynamicSolver", dt, allowed={"dt"}))
        for name, value in validated.items():
            setattr(self, name, value)

    def _constraint_solver(self):
        if self.constraint_solver is None:
            from softsim.mechanics.constraint_solvers import make_constraint_solver

            self.constraint_solver = make_constraint_solver("BlockGaussSeidel", maxIterations=10_000, tolerance=1e-12)
        return self.constraint_solver

    # ------------------------------------------------------------------ the step
    def step(self, state: DynamicState) -> DynamicReport:
        """Advance ``state`` by ``dt``; never mutates ``state``. A diverged step returns ``ok = False``."""
        system = self.system
        x_n = np.array(system.check_positions(state.x), dtype=np.float64).reshape(-1)
        v_n = np.array(system.check_positions(state.v, "velocities"), dtype=np.float64).reshape(-1)
        times = {"assembly": 0.0, "linear_solve": 0.0, "constraints": 0.0, "W": 0.0, "constraint_solve": 0.0}
        try:
            return self._step(state, x_n, v_n, times)
        except (LinearSolverError, RuntimeError, np.linalg.LinAlgError, FloatingPointError) as error:
            message = f"dynamic step failed: {error}"
            logger.warning(message)
            return DynamicReport(state.step + 1, False, False, True, message, state, times=times)

    def _assemble(self, x_flat, times):
        started = time.perf_counter()
        f, K = self.system.forces_and_tangent(x_flat.reshape(-1, 3))
        times["assembly"] += time.perf_counter() - started
        return np.asarray(f, dtype=np.float64).reshape(-1), K

    def _step(self, state, x0, v0, times) -> DynamicReport:
        system = self.system
        h, alpha, beta = self.dt, self.implicitVelocity, self.implicitPosition
        rm, rs = self.rayleighMass, self.rayleighStiffness
        M = system.mass_matrix
        free = system.free_dofs
        fixed_mask = np.ones(system.n_dofs, dtype=bool)
        fixed_mask[free] = False
        v0[fixed_mask] = 0.0

        f_n, K = self._assemble(x0, times)
        F_n = f_n - rm * (M @ v0) - rs * (K @ v0)
        if not np.all(np.isfinite(F_n)):
            return self._fail(state, "non-finite forces at the step start", times)

        rigids = self.rigid_bodies
        for body in rigids:
            body.predict(h)
        started = time.perf_counter()
        rows = self._constraint_rows(x0, x0 + h * v0)
        times["constraints"] += time.perf_counter() - started
        n_rows = rows.n_rows
        rigid = _RigidBlock(rigids, rows, h, alpha, rm) if rigids else None
        l_rows = np.full(n_rows, alpha * h * beta)  # alpha (h beta + d), d = 0
        C = sp.diags(rows.compliance, format="csr") if np.any(rows.compliance) else None
        J_free = rows.J_free

        dv = np.zeros(system.n_dofs)
        # a correction that moves the nodes by less than 1e-12 of the body's size (RMS) is round-off: a body at
        # rest (dv ~ 0) converges on it, where the relative test alone would never pass
        size = float(np.linalg.norm(np.ptp(x0.reshape(-1, 3), axis=0))) or 1.0
        noise_floor = 1e-12 * size * np.sqrt(system.n_dofs) / (h * beta if h * beta > 0 else 1.0)
        norms: list[float] = []
        converged = False
        kkt_used = "none"
        constraint_report = None
        lam = np.zeros(n_rows)
        for k in range(self.newton_iterations):
            v_k = v0 + dv
            if k == 0:
                r = h * (F_n - h * alpha * (K @ v0))
                x_k = x0 + h * v0
            else:
                x_k = x0 + h * (v0 + beta * dv)
                f_k, K = self._assemble(x_k, times)
                F_k = f_k - rm * (M @ v_k) - rs * (K @ v_k)
                r = h * (alpha * F_k + (1.0 - alpha) * F_n) - M @ dv
            if not np.all(np.isfinite(r)):
                return self._fail(state, f"non-finite residual at iteration {k + 1}", times)
            if rigid is not None:
                rigid.residual(k)
            H = ((1.0 + h * alpha * rm) * M + (h * alpha * rs + h * h * alpha * beta) * K).tocsr()
            H_free = H[free][:, free].tocsr()
            r_free = r[free]
            delta = np.zeros(system.n_dofs)
            if n_rows == 0:
                started = time.perf_counter()
                self.linear_solver.factorize(H_free)
                delta[free] = self.linear_solver.solve(r_free)
                times["linear_solve"] += time.perf_counter() - started
                if rigid is not None:
                    rigid.solve(None, h)
            else:
                started = time.perf_counter()
                e = self._violation_law(rows, k, x0, x_k, v_k, v0, h, alpha, beta, rigid)
                times["constraints"] += time.perf_counter() - started
                blocks = rows.blocks
                direct = self.kkt == "direct" or (self.kkt == "auto" and np.all(blocks.kind == EQUALITY))
                direct = direct and (rigid is None or not rigid.coupled)  # the KKT path has no rigid block
                if direct:
                    kkt_used = "direct"
                    delta[free], lam = self._solve_direct(
                        H_free, J_free, r_free, e, l_rows, C, blocks, h, alpha * h * beta, times
                    )
                    if rigid is not None:  # not coupled to these rows
                        rigid.solve(None, h)
                else:
                    kkt_used = "schur"
                    delta[free], lam, constraint_report = self._solve_schur(
                        H_free, rows, r_free, e, l_rows, h, alpha * h * beta, times, rigid
                    )
            dv += delta
            norm = float(np.linalg.norm(delta))
            if rigid is not None:
                norm = float(np.hypot(norm, np.linalg.norm(rigid.delta)))
                rigid.dq += rigid.delta
            norms.append(norm)
            if not np.isfinite(norm):
                return self._fail(state, f"non-finite velocity correction at iteration {k + 1}", times)
            if self.newton_iterations == 1 or (k > 0 and norm <= max(self.newton_tolerance * np.linalg.norm(dv),
                                                                      noise_floor)):
                converged = True
                break

        v_new = v0 + dv
        x_new = x0 + h * (v0 + beta * dv)
        if not (np.all(np.isfinite(v_new)) and np.all(np.isfinite(x_new))):
            return self._fail(state, "non-finite positions or velocities", times)
        x_out, v_out = x_new.reshape(-1, 3), v_new.reshape(-1, 3)
        self._last_forces = store_forces(self.constraints, rows, lam, x_out)
        self._last_keyed = keyed_forces(self._last_forces)
        warnings = []
        if not converged:
            warnings.append(
                f"Newton did not converge in {self.newton_iterations} iterations (last correction {norms[-1]:.3g})"
            )
        if constraint_report is not None and not constraint_report.converged:
            warnings.append(f"constraint solver did not converge (error {constraint_report.error:.3g})")
        new_state = DynamicState(x_out, v_out, state.time + h, state.step + 1)
        rigid_states = [] if rigid is None else rigid.new_states(h, beta)
        if not all(np.all(np.isfinite(s.c)) and np.all(np.isfinite(s.q)) for s in rigid_states):
            return self._fail(state, "non-finite rigid body state", times)
        return DynamicReport(
            state.step + 1,
            True,
            converged,
            False,
            "; ".join(warnings),
            new_state,
            iterations=len(norms),
            correction_norms=norms,
            constraint=constraint_report,
            n_constraint_rows=n_rows,
            kkt=kkt_used,
            times=times,
            rigid_states=rigid_states,
        )

    def _fail(self, state, message, times) -> DynamicReport:
        logger.warning("dynamic step %d diverged: %s", state.step + 1, message)
        return DynamicReport(state.step + 1, False, False, True, message, state, times=times)

    def _constraint_rows(self, x0, x_pred) -> ConstraintSystem:
        """The enforced, active constraints' rows, linearised at the step start: each constraint is updated at the
        predicted positions ``x_pred``, then J, the violations ``phi_n``, the laws and the compliance at ``x0``
        (flat ``(N,)`` arrays)."""
        enforced = [c for c in self.constraints
                    if getattr(c, "enforced", True) and getattr(c, "active", True)]
        x_start = x0.reshape(-1, 3)
        for constraint in enforced:
            constraint.update(x_pred.reshape(-1, 3))
        return build_constraint_system(enforced, x_start, x_start, self.system.free_dofs, linearize_at=x_start)

    @staticmethod
    def _violation_law(rows: ConstraintSystem, k, x0, x_k, v_k, v0, h, alpha, beta, rigid=None) -> np.ndarray:
        """``e (m,) = alpha phi(x_k) + (1 - alpha) phi_n`` (Compliant's law with d = 0), ``phi`` with the step
        start's J: at k = 0 its linear prediction ``phi_n + h J v_n``, later ``violation(x_n, x_k, J_n)``. Rows on
        a rigid body (``rigid``, a :class:`_RigidBlock`) are linear in both motions: ``phi_n + h J (v0 + beta dv)
        + h J_r (q0 + beta dq)``."""
        phi_start = rows.dfree
        e = np.empty(rows.n_rows)
        x_start = x0.reshape(-1, 3)
        for index, (constraint, row_range, J) in enumerate(zip(rows.constraints, rows.row_ranges, rows.jacobians)):
            J_rigid = None if rigid is None else rigid.parts[index]
            if J_rigid is not None:
                phi_k = (phi_start[row_range] + h * (J @ (v0 + beta * (v_k - v0)))
                         + h * (J_rigid @ (rigid.q0 + beta * rigid.dq)))
            elif k == 0:
                phi_k = phi_start[row_range] + h * (J @ v0)
            else:
                phi_k = np.asarray(constraint.violation(x_start, x_k.reshape(-1, 3), J), dtype=np.float64)
            e[row_range] = alpha * phi_k + (1.0 - alpha) * phi_start[row_range]
        return e

    def _solve_direct(self, H_free, J_free, r_free, e, l_rows, C, blocks, h, s, times):
        started = time.perf_counter()
        target = np.repeat(blocks.target, blocks.size)
        e_eff = e - (l_rows / s) * target if np.any(target) else e
        m = J_free.shape[0]
        lower = sp.csr_matrix((m, m)) if C is None else -(sp.diags(h / l_rows) @ C)
        kkt = sp.bmat([[H_free, -h * J_free.T], [-h * J_free, lower]], format="csc")
        rhs = np.concatenate([r_free, (h / l_rows) * e_eff])
        solution = spla.splu(kkt).solve(rhs)
        times["linear_solve"] += time.perf_counter() - started
        n_free = H_free.shape[0]
        return solution[:n_free], solution[n_free:]

    def _solve_schur(self, H_free, rows: ConstraintSystem, r_free, e, l_rows, h, s, times, rigid=None):
        """The Schur complement's solve (the shared projection :func:`project_rows` with ``W = s h J H^-1 J^T +
        (s / l) C`` and ``dfree = (s / l) e + s J H^-1 r``, plus the rigid bodies' block): returns (delta on the
        free DOFs, lambda, the constraint solver's report)."""
        started = time.perf_counter()
        self.linear_solver.factorize(H_free)
        Hinv_r = np.asarray(self.linear_solver.solve(r_free))
        times["linear_solve"] += time.perf_counter() - started
        scale = s / l_rows
        dfree = scale * e + s * (rows.J_free @ Hinv_r)
        coupled = rigid is not None and rigid.coupled
        if coupled:
            dfree += s * (rigid.J @ np.linalg.solve(rigid.H, rigid.r))
        step_rows = replace(rows, dfree=dfree, compliance=scale * rows.compliance)

        def solve(W, system, initial):
            if coupled:  # the rigid bodies' block: W += s h J_r H_r^-1 J_r^T
                W += s * h * (rigid.J @ np.linalg.solve(rigid.H, rigid.J.T))
            W = 0.5 * (W + W.T)
            # projected Gauss-Seidel can crawl (a light rigid body's contacts, see semismooth's docstring; soft
            # fingers squeezing a soft cube while a cable is dragged), so a problem it does not converge on is
            # solved by semi-smooth Newton, then checked by the same solver
            return solve_with_newton_fallback(self._constraint_solver(), W, system.dfree, system.blocks,
                                              initial_force=initial)

        # the warm start: the last step's multipliers, a contact's own where it is found again (the contact set
        # changes from step to step; projected Gauss-Seidel from zeros takes hundreds of sweeps more)
        initial = rows.initial_force(self._last_forces, self._last_keyed)
        Hinv_Jt_lam, report, _W = project_rows(self._constraint_solver(), self.linear_solver, step_rows, initial,
                                               times, solve=solve, scale=s * h)
        lam = np.asarray(report.force, dtype=np.float64)
        if rigid is not None:
            rigid.solve(lam, h)
        return Hinv_r + h * Hinv_Jt_lam, lam, report
