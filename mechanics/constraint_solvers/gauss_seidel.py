"""Projected block Gauss-Seidel (SOFA's BlockGaussSeidelConstraintSolver) and NNCG (NNCGConstraintSolver).

Both run entirely in numba kernels over the block arrays of :class:`mechanics.resolutions.Blocks`.
"""

from __future__ import annotations

import numba
import numpy as np

from softsim.mechanics.constraint_solvers.base import ConstraintSolver
from softsim.mechanics.resolutions import resolve_block


@numba.njit(cache=True, nogil=True)
def gauss_seidel_sweep(W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol):
    """One sweep over the blocks in order (SOFA ``gaussSeidel_increment``); returns (error, all_verified).

    For each block: d = dfree + W f over the whole row (the block's own f included), resolution, then the
    block error: ``|W_jj df|`` for 1 row, ``sum_l sqrt(sum_m (W[j+l, j+m] df_m)^2)`` for 3 rows."""
    m = W.shape[0]
    d_local = np.empty(3)
    f_old = np.empty(3)
    error = 0.0
    verified = True
    for k in range(start.size):
        j = start[k]
        nb = size[k]
        for l in range(nb):
            f_old[l] = f[j + l]
            acc = dfree[j + l]
            for c in range(m):
                acc += W[j + l, c] * f[c]
            d_local[l] = acc
        resolve_block(k, W, d_local, f, start, size, kind, target, lo, hi, mu, inv3)
        if nb == 1:
            block_error = abs(W[j, j] * (f[j] - f_old[0]))
            if block_error > tol:
                verified = False
        else:
            block_error = 0.0
            for l in range(nb):
                line = 0.0
                for c in range(nb):
                    term = W[j + l, j + c] * (f[j + c] - f_old[c])
                    line += term * term
                line = np.sqrt(line)
                if line > tol:
                    verified = False
                block_error += line
        error += block_error
    return error, verified


@numba.njit(cache=True, nogil=True)
def block_gauss_seidel(
    W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol, max_it, sor, all_verified, graph
):
    """SOFA BlockGS doSolve loop; f (m,) is updated in place. Returns (sweeps done, last error, converged)."""
    saved = np.empty_like(f)
    error = 0.0
    converged = False
    sweeps = 0
    for it in range(max_it):
        if sor != 1.0:
            saved[:] = f
        error, verified = gauss_seidel_sweep(W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol)
        if sor != 1.0:
            for r in range(f.size):
                f[r] = sor * f[r] + (1.0 - sor) * saved[r]
        graph[it] = error
        sweeps = it + 1
        if all_verified:
            if verified:
                converged = True
                break
        elif error < tol:
            converged = True
            break
    return sweeps, error, converged


@numba.njit(cache=True, nogil=True)
def nncg(W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol, max_it, all_verified, graph):
    """SOFA NNCG (reference section 1.7): GS sweeps accelerated by a non-linear conjugate gradient step.

    Returns (sweeps done, last error, converged); f (m,) is updated in place."""
    lam = f.copy()
    error, verified = gauss_seidel_sweep(W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol)
    graph[0] = error
    delta = lam - f
    p = -delta
    converged = False
    sweeps = 1
    for i in range(1, max_it):
        lam[:] = f
        error, verified = gauss_seidel_sweep(W, dfree, f, start, size, kind, target, lo, hi, mu, inv3, tol)
        graph[i] = error
        sweeps = i + 1
        if (all_verified and verified) or (not all_verified and error < tol):
            converged = True
            break
        delta_new = lam - f
        norm_new = np.dot(delta_new, delta_new)
        norm_old = np.dot(delta, delta)
        beta = norm_new / norm_old if norm_old > 0.0 else 0.0
        delta = delta_new
        if beta > 1.0:
            p[:] = 0.0
        else:
            for r in range(f.size):
                f[r] += beta * p[r]
                p[r] = beta * p[r] - delta[r]
        if np.sqrt(norm_new) < tol:
            break
    return sweeps, error, converged


def block_arrays(blocks, W):
    """The per-block arrays the numba sweeps take, in their argument order."""
    return (
        blocks.start,
        blocks.size,
        blocks.kind,
        blocks.target,
        blocks.lo,
        blocks.hi,
        blocks.mu,
        blocks.local_inverses(W),
    )


def _sweeps(solver, kernel, W, dfree, blocks, f0, *options):
    """``solver``'s ``_solve`` by a sweeping ``kernel`` (block_gauss_seidel or nncg, with its ``options``):
    forces (m,), sweeps, error, converged and the error of each sweep."""
    graph = np.zeros(solver.maxIterations)
    f = f0.copy()
    sweeps, error, converged = kernel(W, dfree, f, *block_arrays(blocks, W), solver.effective_tolerance(blocks.n_rows),
                                      solver.maxIterations, *options, graph)
    return f, sweeps, error, converged, graph[:sweeps]


class BlockGaussSeidel(ConstraintSolver):
    """Projected block Gauss-Seidel with per-block resolutions (SOFA BlockGaussSeidelConstraintSolver).

    Parameters (SOFA names and defaults): maxIterations 1000, tolerance 1e-3, sor 1.0 (blend
    ``f = sor f_sweep + (1-sor) f_prev`` after each full sweep), regularizationTerm 0, scaleTolerance true
    (tol = tolerance * m unless allVerified), allVerified false (then stop when every block error <= tol),
    computeConstraintForces false. The error is SOFA's (sum of block errors, ``|W_jj df|``), a change of
    displacement, not a complementarity residual; like SOFA the loop may stop after the first sweep.
    ``iterations`` is the exact number of sweeps: SOFA's BlockGS reports one more (off-by-one in
    ``result_output``), which is not copied. Per-resolution tolerances of SOFA are not supported.
    A warm start (``initial_force``) is used as in SOFA's Bilateral ``init``.
    """

    type_name = "BlockGaussSeidel"

    def _solve(self, W, dfree, blocks, f0):
        return _sweeps(self, block_gauss_seidel, W, dfree, blocks, f0, float(self.sor), bool(self.allVerified))


class NNCG(ConstraintSolver):
    """Non-smooth non-linear conjugate gradient (SOFA NNCGConstraintSolver, reference section 1.7).

    One GS sweep, then GS sweeps each followed by the Fletcher-Reeves-like step ``beta = |df_new|^2/|df|^2``
    (restart with p = 0 when beta > 1; the step is not re-projected, as in SOFA). Stops with convergence when
    the sweep error (or every block with allVerified) is below tol, and without convergence when
    ``|df_new| < tol`` (SOFA compares this force-unit norm with the displacement tol; kept as is). ``sor`` is
    not used (SOFA's NNCG does not apply it). iterations counts every sweep, the first one included.
    """

    type_name = "NNCG"

    def _solve(self, W, dfree, blocks, f0):
        return _sweeps(self, nncg, W, dfree, blocks, f0, bool(self.allVerified))
