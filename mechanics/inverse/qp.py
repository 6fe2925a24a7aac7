"""Small dense quadratic programs through qpsolvers' maintained backends.

The inverse problem's QP has one unknown per actuator (plus contact and equality rows), so it is small and
dense: an active-set method (DAQP) solves it exactly in tens of microseconds, where interior-point and ADMM
solvers spend hundreds (``benchmarks/bench_inverse.py`` compares them). A backend that is not installed, fails
or returns a non-finite or infeasible answer is followed by the next one of :data:`FALLBACKS`; the answer
names the backend that solved it.

Problem: minimise ``1/2 x^T P x + q^T x`` subject to ``G x <= h``, ``A x = b`` and ``lb <= x <= ub``.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["QPProblem", "QPSolution", "solve_qp", "FALLBACKS", "available_backends"]

#: backends tried after the chosen one fails, in order (exact active-set first, then robust interior-point)
FALLBACKS = ("daqp", "quadprog", "proxqp", "clarabel")
#: keywords of each backend's tolerances (the others use their own defaults)
_TOLERANCE_KEYS = {"proxqp": ("eps_abs", "eps_rel"), "osqp": ("eps_abs", "eps_rel"), "piqp": ("eps_abs", "eps_rel")}
#: other settings: OSQP polishes its ADMM answer into an exact one on the active set
_SETTINGS = {"osqp": {"polish": True, "max_iter": 100_000}}
#: a solution may break a constraint by this much (relative to the constraint's scale) and still be accepted
FEASIBILITY = 1e-7


@dataclass
class QPProblem:
    """The matrices of one QP (dense numpy arrays; G, A may have zero rows)."""

    P: np.ndarray  # (n, n) symmetric positive semi-definite
    q: np.ndarray  # (n,)
    G: np.ndarray  # (k, n)
    h: np.ndarray  # (k,)
    A: np.ndarray  # (e, n)
    b: np.ndarray  # (e,)
    lb: np.ndarray  # (n,), may hold -inf
    ub: np.ndarray  # (n,), may hold +inf

    def violation(self, x: np.ndarray) -> float:
        """The largest constraint violation of ``x``, relative to the constraints' scale."""
        scale = 1.0 + np.max(np.abs(np.concatenate([self.h, self.b, np.zeros(1)])))
        worst = 0.0
        if self.G.shape[0]:
            worst = max(worst, float(np.max(self.G @ x - self.h)))
        if self.A.shape[0]:
            worst = max(worst, float(np.max(np.abs(self.A @ x - self.b))))
        worst = max(worst, float(np.max(self.lb - x, initial=0.0)), float(np.max(x - self.ub, initial=0.0)))
        return worst / scale


@dataclass
class QPSolution:
    """x (n,); z (k,) >= 0 duals of G x <= h; y (e,) duals of A x = b; z_box (n,) duals of the bounds (< 0 at an
    active lower bound, > 0 at an active upper one); ``backend`` that solved it; ``time`` in seconds;
    ``message`` why it failed (``ok`` False)."""

    x: np.ndarray
    z: np.ndarray
    y: np.ndarray
    z_box: np.ndarray
    ok: bool
    backend: str
    time: float
    message: str = ""


def available_backends() -> list[str]:
    """The qpsolvers backends installed here."""
    import qpsolvers

    return list(qpsolvers.available_solvers)


def solve_qp(problem: QPProblem, backend: str, *, tolerance: float = 1e-10,
             initvals: np.ndarray | None = None) -> QPSolution:
    """Solve ``problem`` with ``backend``, then with each of :data:`FALLBACKS` until one gives a feasible,
    finite answer. ``initvals`` (n,) warm-starts the backends that take one."""
    import qpsolvers

    started = time.perf_counter()
    installed = set(qpsolvers.available_solvers)
    has_g, has_a = problem.G.shape[0] > 0, problem.A.shape[0] > 0
    qp = qpsolvers.Problem(problem.P, problem.q, problem.G if has_g else None, problem.h if has_g else None,
                           problem.A if has_a else None, problem.b if has_a else None, problem.lb, problem.ub)
    tried, reasons = [], []
    for name in (backend, *FALLBACKS):
        if name in tried:
            continue
        tried.append(name)
        if name not in installed:
            reasons.append(f"{name} is not installed")
            continue
        kwargs = {key: tolerance for key in _TOLERANCE_KEYS.get(name, ())} | _SETTINGS.get(name, {})
        try:
            with warnings.catch_warnings():  # the backends' own warnings become this function's answer
                warnings.simplefilter("ignore")
                solution = qpsolvers.solve_problem(qp, solver=name, initvals=initvals, **kwargs)
        except Exception as error:  # noqa: BLE001 - a backend's own exception types are not shared
            reasons.append(f"{name} failed: {error}")
            continue
        x = None if solution.x is None else np.asarray(solution.x, dtype=np.float64)
        if not solution.found or x is None or not np.all(np.isfinite(x)):
            reasons.append(f"{name} found no solution")
            continue
        violation = problem.violation(x)
        if violation > FEASIBILITY:
            reasons.append(f"{name}'s answer breaks a constraint by {violation:.3g}")
            continue
        if name != backend:
            logger.info("QP backend %s did not solve the problem (%s); %s did", backend, "; ".join(reasons), name)
        n, k, e = x.size, problem.G.shape[0], problem.A.shape[0]
        return QPSolution(x, _dual(solution.z, k), _dual(solution.y, e), _dual(solution.z_box, n), True, name,
                          time.perf_counter() - started)
    n = problem.q.size
    return QPSolution(np.zeros(n), np.zeros(problem.G.shape[0]), np.zeros(problem.A.shape[0]), np.zeros(n), False,
                      backend, time.perf_counter() - started, "; ".join(reasons))


def _dual(values, size: int) -> np.ndarray:
    """A backend's duals as a float array of ``size`` (zeros when it gives none)."""
    if values is None:
        return np.zeros(size)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return values if values.size == size else np.zeros(size)
