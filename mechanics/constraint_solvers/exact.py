"""Exact (pivoting) constraint solver: Lemke's algorithm on the mixed problem, used as the reference in tests.

EQUALITY rows (and BOUNDED rows with no finite bound) are eliminated through the Schur complement of W; every
other row becomes one or two complementarity variables ``u >= 0`` with ``f = f0 + sign * u``:

- BOUNDED [lo, +inf): f = lo + u, u _|_ d - target >= 0.  (-inf, hi]: f = hi - u, u _|_ target - d >= 0.
  [lo, hi] both finite: f = lo + u, u _|_ d - target + v >= 0 and v _|_ hi - lo - u >= 0.
- FORCE (target F, violation range [lo, hi]): f = F + u_lo - u_hi with u_lo _|_ d - lo >= 0 and
  u_hi _|_ hi - d >= 0 (each only when the bound is finite).

The resulting LCP ``w = M z + q`` has a positive semi-definite M (the Schur complement of W plus a skew box
coupling), for which Lemke's algorithm with a lexicographic tie-break terminates with a solution. The basic
set it finds is then re-solved directly to polish the solution to machine precision.

FRICTION blocks (Coulomb disk, not polyhedral) have no pivoting method here: problems that contain them are
solved by block Gauss-Seidel run to a tight tolerance (1e-14 relative, up to ``FRICTION_SWEEPS`` sweeps), and
the result is certified by :func:`mechanics.resolutions.complementarity_residual`, which is
solver-independent.
"""

from __future__ import annotations

import logging

import numpy as np

from softsim.mechanics.constraint_solvers.base import ConstraintSolver
from softsim.mechanics.constraint_solvers.gauss_seidel import block_arrays, block_gauss_seidel
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FORCE, Blocks, complementarity_residual

logger = logging.getLogger(__name__)

FRICTION_SWEEPS = 200_000
#: sweeps between two checks of the certificate
FRICTION_CHUNK = 2_000


def lemke(M: np.ndarray, q: np.ndarray, max_pivots: int) -> tuple[np.ndarray, int, bool]:
    """Solve the LCP ``w = M z + q, z >= 0, w >= 0, z.w = 0`` (M (n, n), q (n,)) with Lemke's method.

    Covering vector of ones, lexicographic ratio test. Returns (z, pivots, success); success is False on a
    secondary ray (no solution found) or when the pivot budget runs out."""
    n = q.size
    if n == 0 or np.all(q >= 0.0):
        return np.zeros(n), 0, True
    # Tableau of  I w - M z - e z0 = q ; columns: w (0..n-1), z (n..2n-1), z0 (2n), rhs (2n+1).
    tableau = np.hstack([np.eye(n), -M, -np.ones((n, 1)), q[:, None]])
    basis = np.arange(n)
    z0 = 2 * n
    scale = max(1.0, float(np.abs(M).max()))
    pivot_tol = 1e-13 * scale

    def pivot(row: int, col: int) -> None:
        tableau[row] /= tableau[row, col]
        column = tableau[:, col].copy()
        column[row] = 0.0
        tableau[:] -= np.outer(column, tableau[row])

    row = int(np.argmin(q))
    pivot(row, z0)
    leaving = basis[row]
    basis[row] = z0
    for pivots in range(1, max_pivots + 1):
        entering = leaving + n if leaving < n else leaving - n
        column = tableau[:, entering]
        candidates = np.flatnonzero(column > pivot_tol)
        if candidates.size == 0:
            return _extract(tableau, basis, n), pivots, False
        ratios = tableau[candidates, -1] / column[candidates]
        best = ratios.min()
        ties = candidates[ratios <= best + 1e-12 * max(1.0, abs(best))]
        if np.any(basis[ties] == z0):
            row = int(ties[basis[ties] == z0][0])
        elif ties.size == 1:
            row = int(ties[0])
        else:
            # Lexicographic rule on the rows of B^-1 (the identity columns of the tableau) / pivot column.
            lex = tableau[ties, :n] / column[ties, None]
            order = np.lexsort(lex.T[::-1])
            row = int(ties[order[0]])
        pivot(row, entering)
        leaving = basis[row]
        basis[row] = entering
        if leaving == z0:
            return _extract(tableau, basis, n), pivots, True
    return _extract(tableau, basis, n), max_pivots, False


def _extract(tableau, basis, n):
    z = np.zeros(n)
    is_z = (basis >= n) & (basis < 2 * n)
    z[basis[is_z] - n] = np.maximum(tableau[is_z, -1], 0.0)
    return z


def _polish(M, q, z):
    """Re-solve ``M_BB z_B = -q_B`` on the support of z; keep it if it stays a valid complementary
    solution.
    """
    support = z > 0.0
    if not np.any(support):
        return z
    sub = M[np.ix_(support, support)]
    z_b = np.linalg.lstsq(sub, -q[support], rcond=None)[0]
    candidate = np.zeros_like(z)
    candidate[support] = z_b
    w = M @ candidate + q
    scale = max(1.0, float(np.abs(q).max()))
    if np.all(z_b >= -1e-12 * scale) and np.all(w[~support] >= -1e-10 * scale):
        candidate[support] = np.maximum(z_b, 0.0)
        return candidate
    return z


def solve_mixed_lcp(W: np.ndarray, dfree: np.ndarray, blocks: Blocks) -> tuple[np.ndarray, int, bool]:
    """Exact solution of a problem without FRICTION blocks; returns (f (m,), pivots, success)."""
    m = blocks.n_rows
    row_kind = np.repeat(blocks.kind, blocks.size)
    row_target = np.repeat(blocks.target, blocks.size)
    row_lo = np.repeat(blocks.lo, blocks.size)
    row_hi = np.repeat(blocks.hi, blocks.size)
    f0 = np.zeros(m)
    free = (row_kind == EQUALITY) | ((row_kind == BOUNDED) & np.isneginf(row_lo) & np.isposinf(row_hi))
    u_row, u_sign, u_offset, box_width, box_partner = [], [], [], [], []
    for r in np.flatnonzero(~free):
        lo, hi, target = row_lo[r], row_hi[r], row_target[r]
        if row_kind[r] == BOUNDED:
            if lo == hi:
                f0[r] = lo
            elif np.isfinite(lo):
                f0[r] = lo
                u_row.append(r), u_sign.append(1.0), u_offset.append(target)
                if np.isfinite(hi):
                    box_width.append(hi - lo), box_partner.append(len(u_row) - 1)
            else:
                f0[r] = hi
                u_row.append(r), u_sign.append(-1.0), u_offset.append(target)
        elif row_kind[r] == FORCE:
            f0[r] = target
            if np.isfinite(lo):
                u_row.append(r), u_sign.append(1.0), u_offset.append(lo)
            if np.isfinite(hi):
                u_row.append(r), u_sign.append(-1.0), u_offset.append(hi)
    free_rows = np.flatnonzero(free)
    g = dfree + W @ f0
    if free_rows.size:
        W_ee = W[np.ix_(free_rows, free_rows)]
        coupling = np.linalg.solve(W_ee, W[free_rows, :]).T  # (m, e) = W[:, E] W_EE^-1 (W symmetric)
        a = g + coupling @ (row_target[free_rows] - g[free_rows])
        schur = W - coupling @ W[free_rows, :]
    else:
        coupling = np.zeros((m, 0))
        a, schur = g, W
    u_row = np.asarray(u_row, dtype=np.int64)
    u_sign = np.asarray(u_sign)
    n_u, n_v = u_row.size, len(box_width)
    M = np.zeros((n_u + n_v, n_u + n_v))
    q = np.zeros(n_u + n_v)
    if n_u:
        M[:n_u, :n_u] = u_sign[:, None] * schur[np.ix_(u_row, u_row)] * u_sign[None, :]
        q[:n_u] = u_sign * (a[u_row] - np.asarray(u_offset))
    if n_v:
        partners = np.asarray(box_partner, dtype=np.int64)
        M[partners, n_u + np.arange(n_v)] = 1.0
        M[n_u + np.arange(n_v), partners] = -1.0
        q[n_u:] = box_width
    z, pivots, success = lemke(M, q, max_pivots=50 * (n_u + n_v) + 100)
    if success:
        z = _polish(M, q, z)
    f = f0.copy()
    if n_u:
        np.add.at(f, u_row, u_sign * z[:n_u])
    if free_rows.size:
        d_part = dfree + W @ f
        f[free_rows] += np.linalg.solve(
            W[np.ix_(free_rows, free_rows)], row_target[free_rows] - d_part[free_rows]
        )
    return f, pivots, success


class ExactSolver(ConstraintSolver):
    """Reference solver: Lemke pivoting on the mixed LCP (module docstring); friction via a tight block GS.

    Common parameters: regularizationTerm and computeConstraintForces apply; maxIterations, tolerance, sor,
    scaleTolerance and allVerified do not (the pivot budget is 50 x the LCP size). iterations is the
    number of pivots (or GS sweeps with friction); error the complementarity residual of the result.
    """

    type_name = "exact"

    def _solve(self, W, dfree, blocks, f0):
        if blocks.has_friction:
            f = f0.copy()
            scale = max(float(np.abs(dfree).max()), 1e-300)
            graph = np.zeros(FRICTION_SWEEPS)
            arrays = block_arrays(blocks, W)
            sweeps, success = 0, False
            while sweeps < FRICTION_SWEEPS and not success:
                # in chunks, each continuing from the last one's forces: the sweeps' own criterion (their change)
                # may stall above 1e-14 at round-off with many coupled friction blocks while the laws already
                # hold to it, which the certificate (complementarity_residual) then says
                chunk = min(FRICTION_CHUNK, FRICTION_SWEEPS - sweeps)
                done, _, success = block_gauss_seidel(W, dfree, f, *arrays, 1e-14 * scale, chunk, 1.0, False,
                                                      graph[sweeps:sweeps + chunk])
                sweeps += done
                success = success or complementarity_residual(W, dfree, f, blocks) <= 1e-14 * scale
            iterations = sweeps
        else:
            f, iterations, success = solve_mixed_lcp(W, dfree, blocks)
        residual = complementarity_residual(W, dfree, f, blocks)
        return f, iterations, residual, success, np.array([residual])
