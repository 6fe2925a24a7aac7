"""Semi-smooth Newton on the constraint laws: an accurate solve of small problems, friction included.

Every law is written as a projection (Alart and Curnier's form), with the row's violation ``d = dfree + W f``
(m,) and per-row weights ``w`` (m,) (``W_ii``; a friction block's tangential rows the mean of their two)::

    Phi(f) = f - P(f - (d - target) / w)

- EQUALITY: ``P`` the identity (``Phi = (d - target) / w``);
- BOUNDED [lo, hi]: ``P`` the clamp to [lo, hi];
- FORCE (target F, violation range [lo, hi]): ``Phi = f - F`` while ``lo <= d + w (F - f) <= hi``, else
  ``(d - bound) / w`` for the bound it leaves;
- FRICTION (n, t, s): ``P_n = max(0, g_n)``; ``(P_t, P_s)`` the radial projection of ``(g_t, g_s)`` onto the disk
  of radius ``mu max(f_n, 0)``.

``Phi = 0`` exactly at a solution (the same residuals as :func:`mechanics.resolutions.row_residuals`, which is
``w |Phi|``). Newton steps solve ``G delta = -Phi`` with ``G`` an element of Clarke's generalised Jacobian (a
least-squares solve: redundant contacts, such as a box's four corners on a floor, make ``G`` singular, and any
force that meets the laws is a solution), with a backtracking line search on ``|Phi|^2 / 2``. Each iteration
costs a dense ``(m, m)`` solve, so this is for problems of a few hundred rows; near the solution it converges
quadratically, where projected Gauss-Seidel's rate depends on W's conditioning (a light rigid body's rotations
make it crawl).
"""

from __future__ import annotations

import time

import numpy as np

from softsim.mechanics.constraint_solvers.base import ConstraintReport
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FORCE, FRICTION, Blocks

__all__ = ["NEWTON_MAX_ROWS", "semismooth_newton", "solve_with_newton_fallback"]


class _Laws:
    """The rows' laws: per row ``kind``, ``target``, ``lo``, ``hi`` and weight ``w`` (m,); the friction blocks'
    first rows ``n`` and coefficients ``mu`` (k,)."""

    def __init__(self, W: np.ndarray, blocks: Blocks):
        m = blocks.n_rows
        self.m = m
        self.kind = np.repeat(blocks.kind, blocks.size)
        fric = blocks.kind == FRICTION
        self.n, self.mu = blocks.start[fric], blocks.mu[fric]
        self.target = np.repeat(blocks.target, blocks.size)
        self.target[self.n + 1] = 0.0  # the tangential rows have no target
        self.target[self.n + 2] = 0.0
        self.lo, self.hi = np.repeat(blocks.lo, blocks.size), np.repeat(blocks.hi, blocks.size)
        self.w = np.diag(W).copy()
        mean = 0.5 * (self.w[self.n + 1] + self.w[self.n + 2])
        self.w[self.n + 1] = mean
        self.w[self.n + 2] = mean
        # any positive weights give the same solutions (Phi = 0 exactly where the laws hold); W_ii is a good scale
        # where it is positive, but the Schur complement of an exact tangent can have W_ii <= 0 (a contact on a
        # soft body past a limit point): there its magnitude, and at least a thousandth of the largest
        bad = ~(self.w > 0.0)
        if bad.any():
            floor = 1e-3 * float(np.max(np.abs(self.w[np.isfinite(self.w)]), initial=0.0))
            self.w[bad] = np.maximum(np.nan_to_num(np.abs(self.w[bad])), floor if floor > 0.0 else 1.0)
        self.eq, self.bnd, self.force = (self.kind == EQUALITY), (self.kind == BOUNDED), (self.kind == FORCE)

    def residual(self, W, dfree, f, want_jacobian: bool):
        """``Phi (m,)`` and, when asked, a generalised Jacobian ``G (m, m)`` (else None) at ``f`` (m,)."""
        m, w, target, lo, hi = self.m, self.w, self.target, self.lo, self.hi
        d = dfree + W @ f
        g = f - (d - target) / w
        phi = np.zeros(m)
        phi[self.eq] = f[self.eq] - g[self.eq]
        phi[self.bnd] = f[self.bnd] - np.clip(g, lo, hi)[self.bnd]
        d_if_target = d + w * (target - f)
        below, above = self.force & (d_if_target < lo), self.force & (d_if_target > hi)
        inside = self.force & ~below & ~above
        phi[inside] = f[inside] - target[inside]
        phi[below] = (d[below] - lo[below]) / w[below]
        phi[above] = (d[above] - hi[above]) / w[above]
        n, t, s = self.n, self.n + 1, self.n + 2
        phi[n] = f[n] - np.maximum(0.0, g[n])
        radius = self.mu * np.maximum(f[n], 0.0)
        norm = np.hypot(g[t], g[s])
        sliding = norm > radius
        scale = np.where(sliding, np.divide(radius, norm, out=np.zeros_like(norm), where=norm > 0), 1.0)
        phi[t] = f[t] - scale * g[t]
        phi[s] = f[s] - scale * g[s]
        if not want_jacobian:
            return phi, None

        identity = np.eye(m)
        dg = identity - W / w[:, None]
        G = identity.copy()
        G[self.eq] -= dg[self.eq]
        passing = self.bnd & (g > lo) & (g < hi)
        G[passing] -= dg[passing]
        for mask in (below, above):
            G[mask] = W[mask] / w[mask][:, None]
        for k in range(n.size):
            rn, rows = n[k], [t[k], s[k]]
            if g[rn] > 0:
                G[rn] -= dg[rn]
            if not sliding[k]:
                G[rows] -= dg[rows]
            elif norm[k] > 0:
                u = np.array([g[t[k]], g[s[k]]]) / norm[k]
                G[rows] -= ((np.eye(2) - np.outer(u, u)) * scale[k]) @ dg[rows]
                if f[rn] > 0:
                    G[rows, rn] -= self.mu[k] * u
        return phi, G


def semismooth_newton(W: np.ndarray, dfree: np.ndarray, blocks: Blocks, f0: np.ndarray, *,
                      max_iterations: int = 50, tolerance: float = 1e-12) -> tuple[np.ndarray, int, float]:
    """Solve ``d = dfree + W f`` (W (m, m), dfree (m,)) under the laws of ``blocks`` from ``f0`` (m,).

    Stops when the largest row residual ``w |Phi|`` (displacement units, as
    :func:`mechanics.resolutions.row_residuals`) is below ``tolerance``, when no step along the Newton direction
    or a Levenberg-Marquardt one lowers ``|Phi|``, or after ``max_iterations``; returns (f (m,), iterations, that
    residual)."""
    W = np.asarray(W, dtype=np.float64)
    laws = _Laws(W, blocks)
    f = np.array(f0, dtype=np.float64)
    phi, G = laws.residual(W, dfree, f, True)
    iterations = 0
    while iterations < max_iterations and float(np.max(laws.w * np.abs(phi), initial=0.0)) >= tolerance:
        iterations += 1
        merit = 0.5 * float(phi @ phi)
        accepted = None
        for damping in (0.0, 1e-8, 1e-6, 1e-4, 1e-2, 1.0):
            # the Newton direction (least squares: G is singular with redundant rows), then Levenberg-Marquardt
            # directions, closer to steepest descent as the damping grows
            if damping == 0.0:
                delta = np.linalg.lstsq(G, -phi, rcond=1e-13)[0]
            else:
                size = damping * float(np.max(np.abs(G), initial=1.0)) ** 2
                delta = np.linalg.solve(G.T @ G + size * np.eye(laws.m), -(G.T @ phi))
            step = 1.0
            while step > 1e-4 and accepted is None:
                trial = f + step * delta
                phi_trial, _ = laws.residual(W, dfree, trial, False)
                if 0.5 * float(phi_trial @ phi_trial) <= (1.0 - 1e-4 * step) * merit:
                    accepted = trial
                step *= 0.5
            if accepted is not None:
                break
        if accepted is None:
            break  # no descent: stop where it is
        f = accepted
        phi, G = laws.residual(W, dfree, f, True)
    return f, iterations, float(np.max(laws.w * np.abs(phi), initial=0.0))


#: the largest problem (rows) :func:`solve_with_newton_fallback` runs Newton on: each Newton iteration is a dense
#: (m, m) least-squares solve
NEWTON_MAX_ROWS = 300
#: Newton iterations per start in :func:`solve_with_newton_fallback` (the PneunetGripper's grasp, zero tried
#: first: 85 of 95 frames converged with 100, 94 with 400, all 95 with 1000; with the solver's own answer tried
#: first, its frame 51, where the lift starts, needs more than 1000 and converges with 4000; the line search's short
#: steps across stick-slip changes make the slowest problems take several hundred)
NEWTON_ITERATIONS = 4000
#: ... at most NEWTON_WORK / m^3 of them (at least 20) on a problem of m rows: each is a dense least-squares solve
#: of O(m^3), so a 300-row problem that never converges costs about a second, not a minute
NEWTON_WORK = 4e8


def solve_with_newton_fallback(solver, W: np.ndarray, dfree: np.ndarray, blocks: Blocks, *,
                               initial_force: np.ndarray | None = None, max_rows: int = NEWTON_MAX_ROWS,
                               report: ConstraintReport | None = None, accept: str = "solver") -> ConstraintReport:
    """``solver.solve`` (a :class:`mechanics.constraint_solvers.ConstraintSolver`; ``report``: its report on this
    problem when it has run already), and when it did not converge on a problem of at most ``max_rows`` rows,
    :func:`semismooth_newton` from several starts in turn. ``accept`` is the rule that judges Newton's answer:

    - "solver": the solver runs again from Newton's answer, so convergence is judged by the solver's own error
      measure and tolerance. Starts: the solver's answer, ``initial_force`` (the last frame's forces), zero.
      Returns the first of these reports that converged, else the one with the smallest error (the first
      solve's when none is smaller); a report from Newton's answer has ``solver`` "<type> from semi-smooth
      Newton" and counts the second run's iterations. The solver's answer comes first because it is the start
      nearest the answer, and the cheapest (benchmarks/RESULTS.md, "Measurements moved out of docstrings").
    - "residual": Newton's answer is accepted when its largest row residual meets the solver's tolerance
      (``effective_tolerance``), for a problem the solver diverges on, which running it again would repeat.
      Starts: ``initial_force`` when it is finite, zero (not the solver's answer: it may be non-finite), each
      with Newton's default iteration count. Returns a "semi-smooth Newton" report, or the solver's when no
      start is accepted."""
    if accept not in ("solver", "residual"):
        raise ValueError(f"accept must be 'solver' or 'residual', got {accept!r}")
    if report is None:
        report = solver.solve(W, dfree, blocks, initial_force=initial_force)
    m = dfree.size
    if report.converged or m == 0 or m > max_rows:
        return report
    if accept == "residual":
        started = time.perf_counter()
        tolerance = solver.effective_tolerance(m)
        usable = initial_force is not None and initial_force.size == m and np.all(np.isfinite(initial_force))
        for start in ([initial_force] if usable else []) + [np.zeros(m)]:
            force, iterations, residual = semismooth_newton(W, dfree, blocks, start, tolerance=tolerance)
            if residual <= tolerance:
                return ConstraintReport(force, dfree + W @ force, iterations, residual, True, np.array([residual]),
                                        time.perf_counter() - started, num_constraints=m, solver="semi-smooth Newton")
        return report
    best = report
    iterations = min(NEWTON_ITERATIONS, max(20, int(NEWTON_WORK / m**3)))
    starts = [report.force] + ([] if initial_force is None else [np.asarray(initial_force)]) + [np.zeros(m)]
    for start in starts:
        force, _, _ = semismooth_newton(W, dfree, blocks, start, max_iterations=iterations)
        again = solver.solve(W, dfree, blocks, initial_force=force)
        if again.converged or again.error < best.error:
            again.solver = f"{again.solver} from semi-smooth Newton"
            best = again
        if best.converged:
            break
    return best
