"""The sparse direct solver: MKL Pardiso (:mod:`.pardiso`) or SciPy's SuperLU, symmetric or not."""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers.base import (
    Capabilities,
    LinearSolverError,
    _check_rhs,
    _check_square_csr,
    _new_stats,
    _same_pattern,
)
from softsim.mechanics.linear_solvers.pardiso import _PardisoBackend

logger = logging.getLogger(__name__)

DIRECT_BACKENDS = ("auto", "pardiso", "scipy")


def transpose_map(A: sp.csr_matrix) -> np.ndarray | None:
    """``(nnz,) int64`` with ``A.data[map]`` the values of A^T in the order of A's entries, for a CSR matrix
    with sorted indices whose pattern is symmetric; None when the pattern is not symmetric."""
    n = A.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(A.indptr))
    cols = A.indices.astype(np.int64)
    keys = rows * n + cols
    transposed = cols * n + rows
    position = np.searchsorted(keys, transposed)
    position = np.minimum(position, keys.size - 1)
    if keys.size and not np.array_equal(keys[position], transposed):
        return None
    return position


#: relative asymmetry max|A - A^T| / max|A| above which a matrix is factorized as unsymmetric
SYMMETRY_TOLERANCE = 1e-12


def relative_asymmetry(A: sp.csr_matrix, transpose: np.ndarray | None = None) -> float:
    """max |A - A^T| / max |A| of a CSR matrix with sorted indices (inf when its pattern is not symmetric or a
    value is not finite)."""
    transpose = transpose_map(A) if transpose is None else transpose
    if transpose is None:
        return np.inf
    difference, scale, finite = _asymmetry(A.data, transpose)
    if not finite:
        return np.inf
    return 0.0 if scale == 0.0 else difference / scale


class SymmetryCheck:
    """Whether CSR matrices with sorted indices are symmetric (relative asymmetry at most
    :data:`SYMMETRY_TOLERANCE`) and finite, keeping the transpose map of their pattern while it stays: a Newton
    step's tangent is checked before each factorization (the direct solver and the asynchronous preconditioner)."""

    def __init__(self) -> None:
        self._key: tuple | None = None  # (indptr, indices, transpose map) of the last pattern

    def __call__(self, A: sp.csr_matrix) -> tuple[bool, bool]:
        """``(symmetric, finite)`` of ``A``; a pattern that is not symmetric makes it unsymmetric."""
        if self._key is None or not _same_pattern(A, *self._key[:2]):
            self._key = (A.indptr, A.indices, transpose_map(A))
        transpose = self._key[2]
        if transpose is None:
            return False, bool(np.all(np.isfinite(A.data)))
        difference, scale, finite = _asymmetry(A.data, transpose)
        return bool(difference <= SYMMETRY_TOLERANCE * scale), bool(finite)


@njit(cache=True, nogil=True)
def _asymmetry(data, transpose):
    """(max |data - data[transpose]|, max |data|, whether every value is finite), in one pass without a
    temporary (a Newton step's tangent is checked before each factorization)."""
    difference, scale, finite = 0.0, 0.0, True
    for i in range(data.size):
        value = data[i]
        if not np.isfinite(value):
            finite = False
        magnitude = abs(value)
        if magnitude > scale:
            scale = magnitude
        gap = abs(value - data[transpose[i]])
        if gap > difference:
            difference = gap
    return difference, scale, finite


class _ScipyBackend:
    """SciPy SuperLU on the full symmetric matrix (symmetric mode: diagonal pivots, A+A^T ordering)."""

    name = "scipy"

    def __init__(self):
        self.lu = None
        self.n = 0
        self.mtype = 0

    def release(self) -> None:
        self.lu = None

    def factorize(self, A: sp.csr_matrix, stats: dict, symmetric: bool = True) -> None:
        start = time.perf_counter()
        self.n = A.shape[0]
        options = dict(permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
        if not symmetric:  # partial pivoting for a general matrix
            options = dict(permc_spec="COLAMD")
        try:
            self.lu = spla.splu(A.tocsc(), **options)
        except RuntimeError as error:
            self.lu = None
            raise LinearSolverError(
                f"SuperLU factorization of a {self.n}x{self.n} matrix failed: {error}"
            ) from error
        finally:
            stats["factorization_time"] += time.perf_counter() - start
            stats["factorizations"] += 1
            # SuperLU has no separate symbolic phase: every factorization is also an analysis.
            stats["analyses"] += 1

    def solve(self, b: np.ndarray) -> np.ndarray:
        x = self.lu.solve(b)
        if not np.all(np.isfinite(x)):
            raise LinearSolverError("SuperLU solve produced non-finite values: the matrix is singular")
        return x

    def solve_transposed(self, b: np.ndarray) -> np.ndarray:
        x = self.lu.solve(b, trans="T")
        if not np.all(np.isfinite(x)):
            raise LinearSolverError("SuperLU solve produced non-finite values: the matrix is singular")
        return x


class DirectSolver:
    """Sparse direct solver: Cholesky, or LDL^T when not positive definite, for symmetric matrices; LU otherwise.

    Parameters
    ----------
    backend:
        ``"pardiso"`` (MKL Pardiso through pypardiso), ``"scipy"`` (SuperLU) or ``"auto"`` (Pardiso when it
        can be loaded, else SciPy with a logged note).

    ``factorize(A)`` expects the full symmetric matrix (both triangles); the Pardiso backend reads its upper
    triangle only. The symbolic analysis is reused while ``A.indptr``/``A.indices`` are unchanged (the Newton
    solver passes the same CSR object with rewritten values, so the check is an identity test). Once a
    matrix of a pattern was found indefinite, later matrices of the same pattern are factorized with LDL^T
    directly (a new pattern starts again with Cholesky). ``stats`` holds ``analyses``, ``factorizations``,
    ``solves``, ``right_hand_sides`` (counts), ``analysis_time``, ``factorization_time``, ``solve_time``
    (seconds), ``spd_fallbacks`` and, after an LDL^T factorization, the inertia
    (``positive_eigenvalues``, ``negative_eigenvalues``).

    Two-dimensional solves (``b`` of shape ``(n, k)``: the ``K^-1 J^T`` of the constraint step) are
    memoised: when the factorization has not changed and ``b`` equals the last such ``b`` exactly,
    a copy of the last solution is returned without calling the backend (``stats["memo_hits"]``). In static
    mode a converged frame keeps both the tangent and the constraint rows, so W costs one comparison.
    """

    capabilities = Capabilities(direct=True, unsymmetric=True)

    def __init__(self, *, backend: str = "auto"):
        if backend not in DIRECT_BACKENDS:
            raise ParameterError(f"DirectSolver backend must be one of {DIRECT_BACKENDS}, got {backend!r}")
        self.requested_backend = backend
        self.stats = _new_stats()
        self._backend = None
        if backend in ("auto", "pardiso"):
            try:
                self._backend = _PardisoBackend()
            except (ImportError, OSError, AttributeError) as error:
                if backend == "pardiso":
                    raise ParameterError(
                        f"DirectSolver backend 'pardiso' is not available: {error}"
                    ) from error
                logger.info("MKL Pardiso is not available (%s); using SciPy SuperLU", error)
        if self._backend is None:
            self._backend = _ScipyBackend()
        self.backend = self._backend.name
        self.name = f"DirectSolver({self.backend})"
        self.matrix: sp.csr_matrix | None = None
        #: whether the last factorized matrix was symmetric (Cholesky/LDL^T) or not (LU)
        self.symmetric = True
        self._symmetry = SymmetryCheck()
        self.stats["memo_hits"] = 0
        self._memo_rhs: np.ndarray | None = None
        self._memo_solution: np.ndarray | None = None

    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

    def like(self) -> DirectSolver:
        """A new, unfactorized direct solver with the same requested backend."""
        return DirectSolver(backend=self.requested_backend)

    @property
    def matrix_type(self) -> str:
        """``"spd"`` (Cholesky), ``"symmetric indefinite"`` (LDL^T) or ``"unsymmetric"`` (LU) for Pardiso,
        ``"general"`` for SciPy."""
        if self.backend == "scipy":
            return "general"
        return {_PardisoBackend.SPD: "spd", _PardisoBackend.UNSYMMETRIC: "unsymmetric"}.get(
            self._backend.mtype, "symmetric indefinite")

    def factorize(self, A) -> None:
        """Factorize the square CSR matrix ``A`` (n, n) with both triangles stored. A matrix whose values are
        not symmetric (relative asymmetry above :data:`SYMMETRY_TOLERANCE`: the consistent Jacobian of SOFA's
        corotational force) is factorized as a general matrix (Pardiso's LU, or SuperLU with partial
        pivoting); ``symmetric`` tells which was used."""
        A = _check_square_csr(A, self.name)
        if not A.has_sorted_indices:
            A = A.sorted_indices()
        self.matrix = None
        self._memo_rhs = self._memo_solution = None
        self.symmetric, finite = self._symmetry(A)
        if not finite:  # a runaway state: never hand NaN/inf to the native factorization
            raise LinearSolverError(f"{self.name}: the matrix has non-finite entries (the state ran away)")
        self._backend.factorize(A, self.stats, self.symmetric)
        self.matrix = A

    def _right_hand_side(self, b, what: str) -> np.ndarray:
        """``b`` checked for a solve of the factorized matrix: its shape, and finite entries (a runaway state's
        non-finite values never reach the native solve)."""
        if self.matrix is None:
            raise LinearSolverError(f"{self.name}.{what} called before a successful factorize()")
        b = _check_rhs(b, self.matrix.shape[0], self.name)
        if not np.all(np.isfinite(b)):
            raise LinearSolverError(f"{self.name}: the right-hand side has non-finite entries (the state ran away)")
        return b

    def _count(self, b: np.ndarray, start: float) -> None:
        self.stats["solve_time"] += time.perf_counter() - start
        self.stats["solves"] += 1
        self.stats["right_hand_sides"] += 1 if b.ndim == 1 else b.shape[1]

    def solve(self, b) -> np.ndarray:
        b = self._right_hand_side(b, "solve")
        start = time.perf_counter()
        many = b.ndim == 2
        memo = self._memo_rhs
        if many and memo is not None and memo.shape == b.shape and np.array_equal(memo, b):
            x = self._memo_solution.copy()
            self.stats["memo_hits"] += 1
        else:
            x = self._backend.solve(b)
            if many:
                self._memo_rhs, self._memo_solution = b.copy(), x.copy()
        self._count(b, start)
        return x

    def solve_transposed(self, b) -> np.ndarray:
        """Solve ``A^T x = b`` with the factorization of the last ``A`` (the adjoint solves of
        :mod:`mechanics.sensitivity`); ``b`` of shape ``(n,)`` or ``(n, k)``. Not memoised."""
        b = self._right_hand_side(b, "solve_transposed")
        start = time.perf_counter()
        x = self._backend.solve_transposed(np.ascontiguousarray(b))
        self._count(b, start)
        return x

    def close(self) -> None:
        """Free the factorization memory (Pardiso's internal storage)."""
        if self._backend is not None:
            self._backend.release()
        self.matrix = None
        self._memo_rhs = self._memo_solution = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer (interpreter shutdown)
            pass
