"""Conjugate gradients (Caribou's ConjugateGradientSolver) and CG preconditioned by an earlier factorization."""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers.base import (
    Capabilities,
    LinearSolverError,
    _check_rhs,
    _check_square_csr,
    _new_stats,
)
from softsim.mechanics.linear_solvers.direct import DirectSolver

logger = logging.getLogger(__name__)

PRECONDITIONING_METHODS = ("None", "Identity", "Diagonal", "IncompleteCholesky", "LastFactorization")


class CGSolver:
    """Preconditioned conjugate gradient with Caribou's ``ConjugateGradientSolver`` semantics.

    Parameters
    ----------
    maximum_number_of_iterations:
        At most this many CG iterations per right-hand side (>= 1).
    residual_tolerance_threshold:
        Stop when ``||r_k|| / ||b|| < threshold`` (relative to the right-hand side, not to ``r_0``); > 0.
    preconditioning_method:
        ``"None"`` / ``None`` (Caribou's matrix-free mode; the matrix is assembled here, so it equals
        ``"Identity"``), ``"Identity"``, ``"Diagonal"`` (Jacobi), ``"IncompleteCholesky"`` (SciPy ``spilu``
        incomplete factorization with symmetric ordering and diagonal pivoting, used as an approximate
        Cholesky), ``"LastFactorization"`` (see :class:`ReusedFactorizationSolver`). Names are matched
        case-insensitively as in Caribou.
    refactorization_iteration_threshold:
        LastFactorization only: refactorize the current matrix when CG needs more iterations than this.
    backend:
        LastFactorization only: backend of the internal :class:`DirectSolver`.

    After each ``solve`` of a vector: ``squared_residuals`` (``|r_k|^2`` per iteration), ``squared_rhs_norm``
    (``|b|^2``), ``iterations`` and ``converged``. ``solve(b, x0=...)`` starts from ``x0`` (warm start).
    A zero ``b`` returns 0; Caribou returns 0 whenever ``|b|^2 < machine epsilon``, an absolute test that
    silently stalls Newton near convergence in small units, so we do not copy it.
    """

    capabilities = Capabilities(iterative=True)
    #: CG needs a symmetric (positive definite) matrix
    symmetric = True

    def __init__(
        self,
        *,
        maximum_number_of_iterations: int = 25,
        residual_tolerance_threshold: float = 1e-5,
        preconditioning_method: str | None = "Identity",
        refactorization_iteration_threshold: int = 10,
        backend: str = "auto",
    ):
        if isinstance(maximum_number_of_iterations, bool) or not isinstance(
            maximum_number_of_iterations, int | np.integer
        ):
            raise ParameterError(
                f"maximum_number_of_iterations must be an integer >= 1, got {maximum_number_of_iterations!r}"
            )
        if maximum_number_of_iterations < 1:
            raise ParameterError(
                f"maximum_number_of_iterations must be >= 1, got {maximum_number_of_iterations}"
            )
        residual_tolerance_threshold = float(residual_tolerance_threshold)
        if not np.isfinite(residual_tolerance_threshold) or residual_tolerance_threshold <= 0.0:
            raise ParameterError(
                "residual_tolerance_threshold must be a finite number > 0, got "
                f"{residual_tolerance_threshold}"
            )
        method = "None" if preconditioning_method is None else str(preconditioning_method)
        matches = [name for name in PRECONDITIONING_METHODS if name.lower() == method.lower()]
        if not matches:
            raise ParameterError(
                f"preconditioning_method must be one of {PRECONDITIONING_METHODS}, "
                f"got {preconditioning_method!r}"
            )
        if int(refactorization_iteration_threshold) < 0:
            raise ParameterError(
                f"refactorization_iteration_threshold must be >= 0, got {refactorization_iteration_threshold}"
            )
        self.maximum_number_of_iterations = int(maximum_number_of_iterations)
        self.residual_tolerance_threshold = residual_tolerance_threshold
        self.preconditioning_method = matches[0]
        self.refactorization_iteration_threshold = int(refactorization_iteration_threshold)
        self.backend = backend
        self.name = f"CGSolver({self.preconditioning_method})"
        self.stats = _new_stats()
        self.stats["iterations"] = 0
        self.stats["refactorizations"] = 0
        self.matrix: sp.csr_matrix | None = None
        self.squared_residuals: list[float] = []
        self.squared_rhs_norm = 0.0
        self.iterations = 0
        self.converged = False
        self._preconditioner = None
        self._direct = (
            DirectSolver(backend=backend) if self.preconditioning_method == "LastFactorization" else None
        )

    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

    def like(self) -> CGSolver:
        """A new, unfactorized CG solver with the same settings."""
        return CGSolver(maximum_number_of_iterations=self.maximum_number_of_iterations,
                        residual_tolerance_threshold=self.residual_tolerance_threshold,
                        preconditioning_method=self.preconditioning_method,
                        refactorization_iteration_threshold=self.refactorization_iteration_threshold,
                        backend=self.backend)

    def factorize(self, A) -> None:
        A = _check_square_csr(A, self.name)
        start = time.perf_counter()
        method = self.preconditioning_method
        if method in ("None", "Identity"):
            self._preconditioner = None
        elif method == "Diagonal":
            diagonal = A.diagonal()
            if np.any(diagonal <= 0.0):
                raise LinearSolverError(
                    f"{self.name}: Jacobi preconditioner needs a positive diagonal; "
                    f"{int(np.sum(diagonal <= 0.0))} entries are <= 0"
                )
            inverse_diagonal = 1.0 / diagonal
            self._preconditioner = lambda r: inverse_diagonal * r
        elif method == "IncompleteCholesky":
            try:
                ilu = spla.spilu(
                    A.tocsc(),
                    drop_tol=1e-4,
                    fill_factor=10.0,
                    permc_spec="MMD_AT_PLUS_A",
                    diag_pivot_thresh=0.0,
                    options={"SymmetricMode": True},
                )
            except RuntimeError as error:
                raise LinearSolverError(f"{self.name}: incomplete factorization failed: {error}") from error
            self._preconditioner = ilu.solve
        else:  # LastFactorization: keep an earlier matrix's factorization while it is a good preconditioner
            direct = self._direct
            if direct.matrix is None or direct.matrix.shape != A.shape:
                direct.factorize(A)
                self.stats["refactorizations"] += 1
            self._preconditioner = direct.solve
        self.stats["factorization_time"] += time.perf_counter() - start
        self.stats["factorizations"] += 1
        self.matrix = A

    def _pcg(self, b: np.ndarray, x0: np.ndarray | None) -> np.ndarray:
        A = self.matrix
        precondition = self._preconditioner
        squared_rhs_norm = float(b @ b)
        self.squared_rhs_norm = squared_rhs_norm
        self.squared_residuals = []
        self.iterations = 0
        self.converged = False
        if squared_rhs_norm == 0.0:
            self.converged = True
            return np.zeros_like(b)
        threshold_squared = self.residual_tolerance_threshold**2 * squared_rhs_norm
        if x0 is None:
            x = np.zeros_like(b)
            r = b.copy()
        else:
            x = np.array(x0, dtype=np.float64, copy=True).reshape(b.shape)
            r = b - A @ x
        squared_residual = float(r @ r)
        # a residual whose square is 0 is converged whatever the threshold (a threshold such as 1e-300
        # underflows to 0 when squared, and nothing is below 0)
        if squared_residual < threshold_squared or squared_residual == 0.0:
            self.converged = True
            return x
        z = r if precondition is None else precondition(r)
        p = np.array(z, copy=True)
        rho = float(r @ z)
        if rho == 0.0 or not np.isfinite(rho):
            return x  # the preconditioned residual vanished or overflowed: no step can be computed
        for _ in range(self.maximum_number_of_iterations):
            Ap = A @ p
            curvature = float(p @ Ap)
            if not curvature > 0.0:
                # Breakdown. When |p^T A p| is at the round-off level of ||A|| |p|^2 the iterate has simply
                # stagnated at machine precision; otherwise the matrix is not positive definite.
                round_off = 1e3 * np.finfo(np.float64).eps * float(p @ p) * abs(A.diagonal()).max()
                if abs(curvature) > round_off or not np.isfinite(curvature):
                    logger.warning(
                        "%s: p^T A p = %g <= 0, the matrix is not positive definite", self.name, curvature
                    )
                break
            alpha = rho / curvature
            x += alpha * p
            r -= alpha * Ap
            squared_residual = float(r @ r)
            self.squared_residuals.append(squared_residual)
            self.iterations += 1
            if squared_residual < threshold_squared or squared_residual == 0.0:
                self.converged = True
                break
            z = r if precondition is None else precondition(r)
            rho_new = float(r @ z)
            if rho_new == 0.0 or not np.isfinite(rho_new):
                break  # r^T z underflowed to 0 (or overflowed): the next direction cannot be formed
            p *= rho_new / rho
            p += z
            rho = rho_new
        return x

    def _solve_vector(self, b: np.ndarray, x0: np.ndarray | None) -> np.ndarray:
        x = self._pcg(b, x0)
        if self.preconditioning_method == "LastFactorization" and (
            not self.converged or self.iterations > self.refactorization_iteration_threshold
        ):
            # The old factorization is no longer a good preconditioner: factorize the current matrix.
            self._direct.factorize(self.matrix)
            self.stats["refactorizations"] += 1
            if not self.converged:
                x = self._pcg(b, x)
        elif not self.converged:
            logger.warning(
                "%s did not converge in %d iterations: |r|/|b| = %.3e (threshold %.3e)",
                self.name,
                self.iterations,
                np.sqrt(self.squared_residuals[-1] / self.squared_rhs_norm)
                if self.squared_residuals
                else np.nan,
                self.residual_tolerance_threshold,
            )
        self.stats["iterations"] += self.iterations
        return x

    def solve(self, b, x0=None) -> np.ndarray:
        if self.matrix is None:
            raise LinearSolverError(f"{self.name}.solve called before factorize()")
        b = _check_rhs(b, self.matrix.shape[0], self.name)
        start = time.perf_counter()
        if b.ndim == 1:
            x = self._solve_vector(b, x0)
        else:
            initial = None if x0 is None else np.asarray(x0, dtype=np.float64).reshape(b.shape)
            x = np.empty_like(b)
            for column in range(b.shape[1]):
                x[:, column] = self._solve_vector(
                    np.ascontiguousarray(b[:, column]), None if initial is None else initial[:, column]
                )
        self.stats["solve_time"] += time.perf_counter() - start
        self.stats["solves"] += 1
        self.stats["right_hand_sides"] += 1 if b.ndim == 1 else b.shape[1]
        return x

    def close(self) -> None:
        if self._direct is not None:
            self._direct.close()
        self.matrix = None


class ReusedFactorizationSolver(CGSolver):
    """CG preconditioned by the direct factorization of an earlier matrix (factorization reuse across frames).

    The first ``factorize`` factorizes; later ones only store the new matrix. ``solve`` runs CG with the old
    factorization as preconditioner (exact for the matrix it was computed from, so CG converges in one
    iteration for it and in few for nearby tangents); when CG needs more than
    ``refactorization_iteration_threshold`` iterations, or does not converge, the current matrix is
    refactorized (and the solve finished with it). Solutions are therefore accurate to
    ``residual_tolerance_threshold`` relative to ``||b||``, not to machine precision.
    """

    def __init__(
        self,
        *,
        maximum_number_of_iterations: int = 25,
        residual_tolerance_threshold: float = 1e-10,
        refactorization_iteration_threshold: int = 5,
        backend: str = "auto",
    ):
        super().__init__(
            maximum_number_of_iterations=maximum_number_of_iterations,
            residual_tolerance_threshold=residual_tolerance_threshold,
            preconditioning_method="LastFactorization",
            refactorization_iteration_threshold=refactorization_iteration_threshold,
            backend=backend,
        )
        self.name = "ReusedFactorizationSolver"

    def like(self) -> ReusedFactorizationSolver:
        """A new, unfactorized solver with the same settings."""
        return ReusedFactorizationSolver(maximum_number_of_iterations=self.maximum_number_of_iterations,
                                         residual_tolerance_threshold=self.residual_tolerance_threshold,
                                         refactorization_iteration_threshold=self.refactorization_iteration_threshold,
                                         backend=self.backend)
