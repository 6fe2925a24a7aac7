"""Improved projected Jacobi (SOFA ImprovedJacobiConstraintSolver, Francu & Moldoveanu, VRPHYS 2014).

Each iteration is one Jacobi step for every block at once, ``f <- proj(f - rho D^-1 (d - target))`` with
``D = diag(W)``, plus the optional momentum ``beta * deltaF_prev`` (SOFA's "conjugate residue"). The step is
vectorised with numpy (:func:`mechanics.resolutions.project_all`).

Spectral correction. Before projection the iteration matrix is ``I - rho D^-1 W``, which contracts only
when ``rho < 2 / spr(D^-1 W)``. The default here is
``rho = spectralCorrectionFactor * min(1, 1.8 / spr(D^-1 W))``: ``D^-1 W`` is dimensionless, so the same
problem expressed in other units (W scaled by s, forces by 1/s) runs the same iterations. SOFA computes
``rho = factor * min(1, 1.8 / spr)`` from W itself, and its code takes ``std::norm`` of the complex
eigenvalues (the *squared* modulus), so ``spr = lambda_max(W)^2``: its rho depends on the unit system (plain
Jacobi when W is small, a vanishing step when W is large). ``sofaSpectralRadius=True`` reproduces SOFA's code
as written. spr(D^-1 W) = lambda_max(D^-1/2 W D^-1/2) is computed with a dense symmetric eigenvalue solver
for m <= 200 and Lanczos (scipy eigsh, largest eigenvalue only) above; it is cached per W.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse.linalg as spla

from softsim.mechanics.constraint_solvers.base import ConstraintSolver
from softsim.mechanics.resolutions import project_all

logger = logging.getLogger(__name__)

DENSE_EIGEN_LIMIT = 200
# The iteration is reported as diverged (and stopped) once its error exceeds this factor times its first error
DIVERGENCE_FACTOR = 1e12


def scaled_spectral_radius(W: np.ndarray) -> float:
    """spr(D^-1 W) for W (m, m) with positive diagonal, via the symmetric D^-1/2 W D^-1/2 (symmetrised)."""
    inv_sqrt = 1.0 / np.sqrt(np.diag(W))
    scaled = inv_sqrt[:, None] * (0.5 * (W + W.T)) * inv_sqrt[None, :]
    if scaled.shape[0] <= DENSE_EIGEN_LIMIT:
        eigenvalues = np.linalg.eigvalsh(scaled)
        return float(np.max(np.abs(eigenvalues)))
    largest = spla.eigsh(scaled, k=1, which="LM", return_eigenvectors=False, tol=1e-8)
    return float(abs(largest[0]))


def sofa_spectral_radius(W: np.ndarray) -> float:
    """SOFA's value as coded: max over the (complex) eigenvalues of W of std::norm = |lambda|^2."""
    return float(np.max(np.abs(np.linalg.eigvals(W)) ** 2))


class ImprovedJacobi(ConstraintSolver):
    """Projected Jacobi with spectral correction and momentum (SOFA ImprovedJacobiConstraintSolver).

    Extra parameters: useSpectralCorrection (false), spectralCorrectionFactor (1.0), useConjugateResidue
    (false), conjugateResidueSpeedFactor (10.0, beta = min(1, (i/maxIterations)^factor)), and
    sofaSpectralRadius (false; true = SOFA's unit-dependent rho, see the module docstring).

    Update order of SOFA (reference section 1.6): ``d += W deltaF``; every block resolves from d with its
    correction scaled by rho; then per row ``f += beta deltaF_old``, ``deltaF = f - lastF``, ``lastF = f``
    (the momentum is not re-projected). Block error ``sqrt(sum_{l in block} sum_k (W_lk deltaF_k)^2)``
    where, as in SOFA's sequential loop, the rows after the block still hold the previous iteration's
    deltaF; the error is the sum over blocks and the solve never stops at the first iteration (unless
    allVerified holds).

    Differences from SOFA: rho scales the resolution step instead of d (SOFA resolves from
    ``correctedD = rho d``, whose fixed point is ``d = target / rho`` on rows with a nonzero target, e.g. a
    displacement-driven cable; with zero targets both agree); a warm start (initial_force) is included in d
    from the first iteration (SOFA omits it on iteration 0); the iteration stops, reported as diverged, once
    its error exceeds DIVERGENCE_FACTOR times the first one. ``sor`` is not used (SOFA does not apply it
    here). iterations = iterations done.
    """

    type_name = "ImprovedJacobi"

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._cache_W: np.ndarray | None = None
        self._cache: dict = {}

    def _cached(self, W: np.ndarray) -> dict:
        """Per-W data (spectral radii, error matrices), reset when W changes."""
        same_W = (
            self._cache_W is not None and self._cache_W.shape == W.shape and np.array_equal(self._cache_W, W)
        )
        if not same_W:
            self._cache_W = W.copy()
            self._cache = {}
        return self._cache

    def _error_matrices(self, W: np.ndarray, blocks) -> tuple[np.ndarray, np.ndarray]:
        """(W*W restricted to columns before each row's block end, the rest): SOFA's mixed old/new deltaF."""
        cache = self._cached(W)
        key = ("error", blocks.size.tobytes())
        if key not in cache:
            squared = W * W
            before_end = np.arange(W.shape[0])[None, :] < blocks.block_end[blocks.row_block][:, None]
            cache[key] = (np.where(before_end, squared, 0.0), np.where(before_end, 0.0, squared))
        return cache[key]

    def spectral_rho(self, W: np.ndarray) -> float:
        """The step factor rho used for W (1 without spectral correction)."""
        if not self.useSpectralCorrection:
            return 1.0
        cache = self._cached(W)
        name = "spr_sofa" if self.sofaSpectralRadius else "spr_scaled"
        if name not in cache:
            cache[name] = sofa_spectral_radius(W) if self.sofaSpectralRadius else scaled_spectral_radius(W)
        spr = cache[name]
        return self.spectralCorrectionFactor * (min(1.0, 1.8 / spr) if spr > 0.0 else 1.0)

    def _solve(self, W, dfree, blocks, f0):
        m = blocks.n_rows
        tol = self.effective_tolerance(m)
        max_it = self.maxIterations
        all_verified = self.allVerified
        rho = self.spectral_rho(W)
        error_new, error_old = self._error_matrices(W, blocks)
        w_diag = np.diag(W).copy()
        inv3 = blocks.local_inverses(W)
        use_momentum = self.useConjugateResidue
        speed = self.conjugateResidueSpeedFactor

        f = f0.copy()
        last_f = f.copy()
        d = dfree + W @ f
        delta = np.zeros(m)
        graph = np.zeros(max_it)
        error = 0.0
        converged = False
        iterations = 0
        for i in range(max_it):
            beta = min(1.0, (i / max_it) ** speed) if use_momentum else 0.0
            d += W @ delta
            f = project_all(blocks, W, w_diag, inv3, f, d, step=rho)
            if beta:
                f += beta * delta
            delta_old = delta
            delta = f - last_f
            last_f = f
            row_cst = error_new @ (delta * delta) + error_old @ (delta_old * delta_old)
            block_cst = np.add.reduceat(row_cst, blocks.start)
            error = float(np.sqrt(block_cst).sum())
            graph[i] = error
            iterations = i + 1
            if not np.isfinite(error) or error > DIVERGENCE_FACTOR * max(graph[0], np.finfo(float).tiny):
                logger.warning(
                    "ImprovedJacobi diverged at iteration %d (error %.3g, rho %.3g): enable "
                    "useSpectralCorrection or lower spectralCorrectionFactor",
                    i,
                    error,
                    rho,
                )
                break
            if all_verified:
                if np.all(block_cst < tol * tol):
                    converged = True
                    break
            elif error < tol and i > 0:
                converged = True
                break
        return f, iterations, error, converged, graph[:iterations]
