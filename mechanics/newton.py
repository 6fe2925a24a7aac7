"""Static Newton-Raphson solver with Caribou's ``LegacyStaticODESolver`` parameters and diagnostics.

Each iteration ``k`` (Caribou's order of operations):

1. assemble ``K_free(x_k)``; factorize it (the linear solver keeps the symbolic analysis);
2. solve ``K_free dx = R(x_k)`` with ``R = (f_int + f_ext + extra_force)[free]``;
3. ``x_{k+1} = x_k + alpha dx`` (``alpha = 1`` unless the line search is on), ``U += alpha dx``;
4. recompute ``R(x_{k+1})``, record ``|R|^2`` and the iteration time;
5. tests, in this order: failed line search or safeguard, NaN -> diverged;
   ``|alpha dx| < correction_tolerance_threshold * |U|`` -> converged; ``|R_{k+1}| < residual_tolerance_threshold
   * |R_0|`` -> converged; ``|R_{k+1}|`` or ``dx`` at the round-off floor -> converged; growing residual
   (option, from the second iteration on) -> diverged.

Choices where Caribou's code and documentation disagree, and why:

- ``R_ref = R_0``, the residual at ``x0`` before any correction (Caribou's documented intent, and SOFA's
  NewtonRaphsonSolver since v25.06). Caribou's code divides by the residual *after the first correction*,
  which makes the first ratio always 1 and lets an inaccurate first step loosen the test.
- Unsquared relative norms: ``|R_k| / |R_0| < thr`` and ``|dx| / |U| < thr`` (Caribou compares
  ``R^2 < thr^2 R_ref^2``, the same thing; its "already in equilibrium" pre-check compares a *squared*
  absolute norm to the relative threshold, which we do not copy). Before iterating, the solve returns
  converged at once when ``|R_0| <= absolute_residual_tolerance_threshold`` (Caribou StaticODESolver's data,
  default 1e-15) or when ``|R_0|`` is at the round-off floor ``64 eps (|f_int[free]| + |f_ext[free]|)``:
  a warm-started frame whose loads did not change must not spend ``newton_iterations`` chasing noise
  that no relative test can ever pass. The residual's true round-off floor is higher (element forces
  cancel in the sum), so an extra test ends the iterations when the correction can no longer move the
  positions (``max|dx| <= 1000 eps max|x|``, "correction at round-off level"). Relative residual
  thresholds below ~1e-10 are therefore rarely reachable; the default 1e-8 is.
- Caribou declares divergence when ``|U|^2 < EPSILON``; we do not (a zero increment with a non-zero residual
  cannot happen with a non-singular tangent, and a zero residual is caught by the pre-check).
- "max iterations reached" is neither converged nor diverged: the last iterate is returned (with Caribou's
  default ``newton_iterations = 1`` this is the normal interactive outcome). A diverged solve (NaN,
  growing residual, failed line search or safeguard) returns a *copy of x0* so the caller keeps its state untouched.

``warm_start``: in Caribou it means that an *iterative* linear solver starts from the previous Newton
increment instead of zero; here too (the first iteration starts from zero). Independently of it, the Newton
iterations always start from the ``x0`` given by the caller: the frame step passes the previous frame's
positions, which is the warm start of the nonlinear solve.

Beyond Caribou, on by default: ``backtrack_invalid_steps`` (the step safeguard). A trial ``x_k + alpha dx`` is
invalid when it turns an element inside out (``det F`` from > 0 at ``x_k`` to <= 0; elements already inverted
at ``x_k`` do not count) or when its residual is not finite (the neo-Hookean energy and forces are NaN for
inverted elements). The inversion test reads the positions only, before the residual is evaluated, so an
inverting trial costs no assembly. At the first invalid trial of a load step the rest of that load step runs
with the line search below, started from the load step's iterate of least residual (when that is not ``x_k``,
the iteration only goes back to it); the line search then also rejects invalid trials. Cutting the invalid
step alone is not enough: under a large load the first full step from rest is often valid but lands far from
the equilibrium (a bent cantilever's tip beyond the beam's length, the residual thousands of times the
initial one), and shortened Newton steps from there wander instead of converging. No valid step length after
``maximum_line_search_iterations`` cuts -> diverged ("NaN in residual at every step length down to ..." or
"step inverts k element(s) at every ..."). ``NewtonReport.backtracks`` records the invalid steps. A load step
that meets no invalid trial runs exactly as without the safeguard. ``backtrack_invalid_steps = False`` is
Caribou's plain Newton: a NaN residual ends the solve as diverged, and an inverting step is taken.

Beyond Caribou (both off by default): ``line_search`` backtracks ``alpha <- line_search_coefficient * alpha``
(SOFA NewtonRaphsonSolver's ``lineSearchCoefficient``) until ``|R(x + alpha dx)| < |R(x)|`` or, when the
problem has a total potential energy (every load conservative), the potential decreases enough (Armijo),
at most ``maximum_line_search_iterations`` times (else "line search failed", diverged). With the safeguard on
it also rejects invalid trials (without evaluating an inverting one).
``load_steps = s > 1`` solves ``s`` problems with the external load and ``extra_force`` scaled by ``j / s``
(``j = 1..s``), each with up to ``newton_iterations`` iterations and its own ``R_0``; the report's
``squared_initial_residual`` is the first step's.

Assembly: when another iteration may follow, the line search is off and the step is valid, the residual at
the new iterate is computed together with the tangent there (one pass over the elements), and that tangent is
used by the next iteration; otherwise only the residual is computed. A solve that converges at iteration ``k`` therefore
assembled one tangent it did not factorize (cheaper than a separate force pass per iteration whenever
``k >= 2``, or always for the corotational model whose force pass costs as much as its tangent).

After a solve, ``solver.linear_solver`` holds the factorization of the last *factorized* tangent (at the
start of the last iteration, as in Caribou; the constraint step reuses it for ``K^-1 J^T``) and
``solver.last_tangent`` that matrix (one of the problem's two ``K_free`` objects: a fused assembly writes
the other one, see :meth:`mechanics.static_problem.StaticProblem.tangent`).
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers import DirectSolver, LinearSolverError
from softsim.mechanics.scene.schema import NewtonSpec, check_parameters, declarations, defaults

logger = logging.getLogger(__name__)

__all__ = ["NewtonReport", "StaticNewtonSolver"]

_UNSET = object()
#: a residual below this multiple of |f_int| + |f_ext| is at its round-off floor (converged, whatever the tolerance)
ROUND_OFF_FACTOR = 64.0 * np.finfo(np.float64).eps
#: a correction below this multiple of |x| changes nothing representable
CORRECTION_ROUND_OFF = 1e3 * np.finfo(np.float64).eps


@dataclasses.dataclass
class NewtonReport:
    """Outcome of one :meth:`StaticNewtonSolver.solve` call.

    ``x`` is a new ``(n, 3)`` array (the input copy when ``diverged``). Residual lists hold squared norms of
    the free-DOF residual after each iteration; ``iteration_times`` are nanoseconds; ``*_time`` seconds
    summed over the solve (``assembly_time`` = tangent assembly and free-submatrix extraction,
    ``residual_time`` = force evaluations). ``line_search_steps``: the step length of every iteration that ran
    the line search. ``backtracks``: one ``(iteration, step length, reason)`` per iteration whose full step was
    invalid (the safeguard, ``reason`` e.g. "NaN in residual" or "step inverts 3 element(s)"); step length 0
    when the iteration went back to the load step's iterate of least residual.
    """

    x: np.ndarray
    converged: bool
    diverged: bool
    reason: str
    iterations: int
    iteration_times: list[int]
    squared_residuals: list[float]
    squared_initial_residual: float
    iterative_linear_solver_squared_residuals: list[list[float]]
    iterative_linear_solver_squared_rhs_norms: list[float]
    assembly_time: float = 0.0
    factorization_time: float = 0.0
    solve_time: float = 0.0
    residual_time: float = 0.0
    line_search_steps: list[float] = dataclasses.field(default_factory=list)
    load_step_iterations: list[int] = dataclasses.field(default_factory=list)
    linear_solver_iterations: list[int] = dataclasses.field(default_factory=list)
    backtracks: list[tuple[int, float, str]] = dataclasses.field(default_factory=list)

    @property
    def residual_norms(self) -> np.ndarray:
        """``|R_k|`` after each iteration, ``(iterations,)``."""
        return np.sqrt(np.asarray(self.squared_residuals, dtype=np.float64))

    @property
    def relative_residuals(self) -> np.ndarray:
        """``|R_k| / |R_0|`` after each iteration (``R_0`` of the first load step)."""
        if self.squared_initial_residual <= 0.0:
            return np.zeros(len(self.squared_residuals))
        return self.residual_norms / np.sqrt(self.squared_initial_residual)


def _linear_solver(value):
    if value is None:
        return DirectSolver()
    if not (callable(getattr(value, "factorize", None)) and callable(getattr(value, "solve", None))):
        raise ParameterError(f"linear_solver must have factorize(A) and solve(b) methods, got {value!r}")
    return value


#: the ``[solver.newton]`` keys this solver reads (``correction`` belongs to the frame step)
NEWTON_KEYS = frozenset(d.key for d in declarations(NewtonSpec)) - {"correction"}


class StaticNewtonSolver:
    """Newton-Raphson on a :class:`mechanics.static_problem.StaticProblem` (see the module docstring).

    Parameters: the keys of ``[solver.newton]`` (:class:`mechanics.scene.schema.NewtonSpec`: Caribou's names,
    ranges and defaults) except ``correction``, validated by :meth:`set_parameters`; ``linear_solver``: an object
    with ``factorize``/``solve``, a :class:`DirectSolver` by default.
    """

    def __init__(self, *, linear_solver=None, **parameters):
        self.linear_solver = None
        self.last_tangent = None
        self.last_report: NewtonReport | None = None
        for name, value in defaults(NewtonSpec, NEWTON_KEYS).items():
            setattr(self, name, value)
        self.set_parameters(linear_solver=linear_solver, **parameters)

    def set_parameters(self, **parameters) -> None:
        """Validate and set parameters by name; they take effect at the next :meth:`solve`. Nothing changes when
        one is invalid (ParameterError with the scene loader's message)."""
        linear = parameters.pop("linear_solver", _UNSET)
        validated = check_parameters(NewtonSpec, "StaticNewtonSolver", parameters, allowed=NEWTON_KEYS)
        if linear is not _UNSET:
            validated["linear_solver"] = _linear_solver(linear)
        for name, value in validated.items():
            setattr(self, name, value)

    def _log(self, message: str, *args) -> None:
        logger.log(logging.INFO if self.printLog else logging.DEBUG, message, *args)

    def solve(self, problem, x0, *, extra_force=None) -> NewtonReport:
        """Solve ``R(x) = 0`` from ``x0`` (``(n, 3)``, never modified); returns a :class:`NewtonReport`."""
        x_start = np.array(x0, dtype=np.float64, copy=True)
        if x_start.shape != (problem.n_nodes, 3):
            raise ParameterError(f"x0 must have shape ({problem.n_nodes}, 3), got {x_start.shape}")
        report = NewtonReport(
            x=x_start.copy(),
            converged=False,
            diverged=False,
            reason="",
            iterations=0,
            iteration_times=[],
            squared_residuals=[],
            squared_initial_residual=0.0,
            iterative_linear_solver_squared_residuals=[],
            iterative_linear_solver_squared_rhs_norms=[],
        )
        self._log(
            "Starting static Newton solve: %d load step(s), max %d iterations, residual tolerance %g, "
            "correction tolerance %g, linear solver %s",
            self.load_steps,
            self.newton_iterations,
            self.residual_tolerance_threshold,
            self.correction_tolerance_threshold,
            getattr(self.linear_solver, "name", type(self.linear_solver).__name__),
        )
        x = x_start.copy()
        for step in range(1, self.load_steps + 1):
            load_factor = step / self.load_steps
            x, status = self._solve_load_step(problem, x, extra_force, load_factor, report, first=step == 1)
            if status == "diverged":
                report.diverged = True
                report.converged = False
                report.x = x_start.copy()
                self._log("[DIVERGED] %s after %d iteration(s)", report.reason, report.iterations)
                break
            if status == "converged" and step == self.load_steps:
                report.converged = True
        if not report.diverged:
            report.x = x
            if report.converged:
                self._log("[CONVERGED] %s after %d iteration(s)", report.reason, report.iterations)
            else:
                self._log("[NOT CONVERGED] %s after %d iteration(s)", report.reason, report.iterations)
        self.last_report = report
        return report

    def _evaluate_residual(self, problem, x, extra_force, load_factor, report) -> np.ndarray:
        start = time.perf_counter()
        residual = problem.residual(x, extra_force, load_factor=load_factor)
        report.residual_time += time.perf_counter() - start
        return residual

    def _solve_load_step(self, problem, x, extra_force, load_factor, report, *, first: bool):
        residual = self._evaluate_residual(problem, x, extra_force, load_factor, report)
        initial_norm = float(np.linalg.norm(residual))
        if first:
            report.squared_initial_residual = initial_norm**2
        if not np.isfinite(initial_norm):
            report.reason = "NaN in residual"
            return x, "diverged"
        if initial_norm <= self.absolute_residual_tolerance_threshold:
            report.reason = "residual below absolute threshold"
            return x, "converged"
        force_scale = getattr(problem, "last_force_scale", 0.0)
        if initial_norm <= ROUND_OFF_FACTOR * force_scale:
            report.reason = "residual at round-off level"
            return x, "converged"
        if self.residual_tolerance_threshold > 0 and initial_norm <= self.residual_tolerance_threshold * force_scale:
            # A warm start that is already balanced (|R| small against |f_int| + |f_ext|): the relative test
            # against R0 can never pass from such a start, and iterating would only refactorize.
            report.reason = "already in equilibrium (residual below threshold x force scale)"
            return x, "converged"
        increment_total = np.zeros_like(residual)
        previous_correction = None
        previous_norm = initial_norm
        step_iterations = 0
        status = "running"
        next_tangent = None
        # the safeguard: whether it switched the line search on, and the iterate of least residual so far
        # (x, R, |R|, increment), where the line search starts when a step turns out invalid
        safeguarded = False
        best = (x, residual, initial_norm, increment_total.copy())
        for iteration in range(1, self.newton_iterations + 1):
            iteration_start = time.perf_counter_ns()
            if next_tangent is None:
                start = time.perf_counter()
                tangent = problem.tangent(x)
                report.assembly_time += time.perf_counter() - start
            else:
                tangent = next_tangent
            self.last_tangent = tangent
            start = time.perf_counter()
            try:
                self.linear_solver.factorize(tangent)
            except LinearSolverError as error:
                report.reason = f"factorization failed: {error}"
                return x, "diverged"
            report.factorization_time += time.perf_counter() - start
            start = time.perf_counter()
            try:
                if self.linear_solver.capabilities.iterative:
                    warm = previous_correction if self.warm_start else None
                    correction = self.linear_solver.solve(residual, x0=warm)
                    report.iterative_linear_solver_squared_residuals.append(
                        list(self.linear_solver.squared_residuals)
                    )
                    report.iterative_linear_solver_squared_rhs_norms.append(
                        self.linear_solver.squared_rhs_norm
                    )
                    report.linear_solver_iterations.append(self.linear_solver.iterations)
                else:
                    correction = self.linear_solver.solve(residual)
            except LinearSolverError as error:
                report.reason = f"linear solve failed: {error}"
                return x, "diverged"
            report.solve_time += time.perf_counter() - start
            if not np.all(np.isfinite(correction)):
                report.iterations += 1
                report.reason = "NaN in correction"
                return x, "diverged"

            step_length = 1.0
            x_trial = x + problem.expand(correction)
            searching = self.line_search or safeguarded
            # The safeguard's inversion test reads positions only: an inverting step costs no assembly.
            invalid = self._invalid_step(problem, x, x_trial) if self.backtrack_invalid_steps else None
            # Fused evaluation: when another iteration may follow and no line search can reject the step,
            # compute the residual and the next tangent in one pass over the elements (saves the separate
            # force pass, which costs as much as the tangent for the corotational model). The problem
            # assembles into its other K_free buffer: the factorized matrix keeps its values.
            next_tangent = None
            residual_trial, trial_norm = None, float("nan")
            if invalid is None:
                if not searching and iteration < self.newton_iterations and hasattr(problem, "system"):
                    start = time.perf_counter()
                    residual_trial, next_tangent = problem.system(x_trial, extra_force, load_factor=load_factor)
                    report.assembly_time += time.perf_counter() - start
                else:
                    residual_trial = self._evaluate_residual(problem, x_trial, extra_force, load_factor, report)
                trial_norm = float(np.linalg.norm(residual_trial))
                if self.backtrack_invalid_steps and not np.isfinite(trial_norm):
                    invalid = "NaN in residual"
                    next_tangent = None  # assembled at the rejected trial
            if invalid is not None and not searching:
                # The safeguard: the rest of this load step runs with the line search, from its best iterate.
                safeguarded = searching = True
                self._log("Newton iteration #%d: invalid step (%s); line search from here on", iteration, invalid)
                if best[0] is not x:
                    x, residual, previous_norm = best[0], best[1], best[2]
                    increment_total = best[3].copy()
                    previous_correction = None
                    step_iterations += 1
                    report.iterations += 1
                    report.squared_residuals.append(previous_norm**2)
                    report.iteration_times.append(time.perf_counter_ns() - iteration_start)
                    report.backtracks.append((report.iterations, 0.0, invalid))
                    self._log("Newton iteration #%d: back to the iterate of least residual, |R| = %.6e",
                              iteration, previous_norm)
                    continue
            line_search_failure = None
            if searching:
                step_length, x_trial, residual_trial, trial_norm, line_search_failure = self._line_search(
                    problem, x, residual, correction, previous_norm, x_trial, residual_trial, trial_norm,
                    extra_force, load_factor, report, invalid,
                )  # fmt: skip
                report.line_search_steps.append(step_length)
                if invalid is not None:
                    report.backtracks.append((report.iterations + 1, step_length, invalid))
            x = x_trial
            residual = residual_trial
            applied = correction if step_length == 1.0 else step_length * correction
            increment_total += applied
            previous_correction = correction
            step_iterations += 1
            report.iterations += 1
            report.squared_residuals.append(trial_norm**2)
            elapsed = time.perf_counter_ns() - iteration_start
            report.iteration_times.append(elapsed)

            correction_norm = float(np.linalg.norm(applied))
            increment_norm = float(np.linalg.norm(increment_total))
            relative_residual = trial_norm / initial_norm
            relative_correction = correction_norm / increment_norm if increment_norm > 0.0 else np.inf
            if report.linear_solver_iterations and self.linear_solver.capabilities.iterative:
                self._log(
                    "Newton iteration #%d: |R| = %.6e, |R|/|R0| = %.6e, |du|/|U| = %.6e, "
                    "CG iterations = %d, time = %.3f ms",
                    iteration, trial_norm, relative_residual, relative_correction,
                    report.linear_solver_iterations[-1], elapsed * 1e-6,
                )  # fmt: skip
            else:
                self._log(
                    "Newton iteration #%d: |R| = %.6e, |R|/|R0| = %.6e, |du|/|U| = %.6e, time = %.3f ms",
                    iteration, trial_norm, relative_residual, relative_correction, elapsed * 1e-6,
                )  # fmt: skip

            if line_search_failure is not None and (self.backtrack_invalid_steps or np.isfinite(trial_norm)):
                report.reason = line_search_failure
                status = "diverged"
                break
            if not np.isfinite(trial_norm):
                report.reason = "NaN in residual"
                status = "diverged"
                break
            if self.correction_tolerance_threshold > 0.0 and correction_norm < (
                self.correction_tolerance_threshold * increment_norm
            ):
                report.reason = "correction below threshold"
                status = "converged"
                break
            if (
                self.residual_tolerance_threshold > 0.0
                and trial_norm < self.residual_tolerance_threshold * initial_norm
            ):
                report.reason = "residual below threshold"
                status = "converged"
                break
            if trial_norm <= self.absolute_residual_tolerance_threshold:
                report.reason = "residual below absolute threshold"
                status = "converged"
                break
            if trial_norm <= ROUND_OFF_FACTOR * getattr(problem, "last_force_scale", 0.0):
                report.reason = "residual at round-off level"
                status = "converged"
                break
            if np.abs(applied).max() <= CORRECTION_ROUND_OFF * np.abs(x).max():
                report.reason = "correction at round-off level"
                status = "converged"
                break
            if self.shoud_diverge_when_residual_is_growing and iteration > 1 and trial_norm > previous_norm:
                report.reason = "residual growing"
                status = "diverged"
                break
            previous_norm = trial_norm
            if self.backtrack_invalid_steps and not safeguarded and trial_norm < best[2]:
                best = (x, residual, trial_norm, increment_total.copy())
        else:
            report.reason = "max iterations reached"
        report.load_step_iterations.append(step_iterations)
        return x, status

    @staticmethod
    def _invalid_step(problem, x, x_trial) -> str | None:
        """Why the move from ``x`` to ``x_trial`` is invalid ("step inverts k element(s)"), or None."""
        counter = getattr(problem, "new_inversions", None)
        count = counter(x, x_trial) if counter is not None else 0
        return f"step inverts {count} element(s)" if count else None

    def _line_search(
        self, problem, x, residual, correction, current_norm, x_trial, residual_trial, trial_norm,
        extra_force, load_factor, report, invalid=None,
    ):  # fmt: skip
        """Backtrack until the residual norm decreases or, when the problem has a total potential, the
        potential satisfies Armijo's condition ``Pi(x + a dx) <= Pi(x) - 1e-4 a R.dx``; with the safeguard on,
        until the trial is valid as well. ``invalid``: why the full step is invalid (its residual is then not
        evaluated, ``residual_trial`` None).

        The energy test accepts the full Newton steps that raise the residual on the way to convergence
        (pure residual backtracking stalls on them); the residual test accepts steps whose energy change is
        lost in round-off near convergence. Returns ``(alpha, x, R, |R|, failure)``, ``failure`` None or why
        no step length was accepted.
        """
        energy_start = None
        slope = float(residual @ correction)  # -dPi/dalpha at alpha = 0, > 0 for an SPD tangent
        if getattr(problem, "has_energy", False) and slope > 0.0:
            energy_start = problem.energy(x, extra_force, load_factor=load_factor)

        def acceptable(alpha, x_candidate, candidate_norm):
            if not np.isfinite(candidate_norm):
                return False
            if candidate_norm < current_norm:
                return True
            if energy_start is None:
                return False
            energy = problem.energy(x_candidate, extra_force, load_factor=load_factor)
            return bool(np.isfinite(energy) and energy <= energy_start - 1e-4 * alpha * slope)

        step_length = 1.0
        backtracks = 0
        while invalid is not None or not acceptable(step_length, x_trial, trial_norm):
            if backtracks == self.maximum_line_search_iterations:
                failure = "line search failed" if invalid is None else (
                    f"{invalid} at every step length down to {step_length:g}")
                return step_length, x_trial, residual_trial, trial_norm, failure
            backtracks += 1
            step_length *= self.line_search_coefficient
            x_trial = x + problem.expand(step_length * correction)
            invalid = self._invalid_step(problem, x, x_trial) if self.backtrack_invalid_steps else None
            if invalid is not None:
                residual_trial, trial_norm = None, float("nan")
                continue
            residual_trial = self._evaluate_residual(problem, x_trial, extra_force, load_factor, report)
            trial_norm = float(np.linalg.norm(residual_trial))
            if self.backtrack_invalid_steps and not np.isfinite(trial_norm):
                invalid = "NaN in residual"
        return step_length, x_trial, residual_trial, trial_norm, None
