"""Linear solvers for the symmetric systems of the static Newton solver and the constraint step.

Every solver has the same small interface:

- ``factorize(A)``: take a square, symmetric ``scipy.sparse.csr_matrix`` (both triangles stored) and
  prepare to solve with it (a sparse factorization for :class:`DirectSolver`, the matrix and its
  preconditioner for :class:`CGSolver`);
- ``solve(b) -> x``: ``b`` of shape ``(n,)`` or ``(n, k)``; ``k`` right-hand sides are solved in one call
  (one Pardiso call for the direct solver), ``x`` has the shape of ``b``;
- ``name`` (str) and ``stats`` (dict of counters and accumulated times in seconds).

Solvers:

- :class:`DirectSolver`: MKL Pardiso through ``pypardiso`` (real SPD Cholesky, ``mtype=2``, upper triangle),
  falling back to symmetric indefinite LDL^T (``mtype=-2``, Bunch-Kaufman pivoting) when the Cholesky
  factorization meets a non-positive pivot; or SciPy's SuperLU. The Pardiso symbolic analysis (phase 11,
  METIS ordering) is kept while the sparsity pattern (``indptr``/``indices``) is unchanged, so a new
  tangent of the same mesh only costs a numeric factorization (phase 22).
- :class:`CGSolver`: preconditioned conjugate gradient with Caribou's ``ConjugateGradientSolver`` semantics
  (stop when ``||r_k|| / ||b|| < residual_tolerance_threshold``; squared residuals recorded per iteration).
- :class:`ReusedFactorizationSolver`: CG preconditioned by the direct factorization of an *earlier*
  matrix ("LastFactorization"); the matrix is refactorized only when CG needs more than
  ``refactorization_iteration_threshold`` iterations. This is the factorization-reuse-across-frames policy:
  while the tangent changes little between frames, each frame costs a few CG iterations (each one a
  triangular solve pair) instead of a numeric factorization.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

# MKL's OpenMP threads spin for 200 ms after each Pardiso call by default and then compete with the element
# assembly of the next Newton iteration for the cores; 0 would make every small solve pay a thread wake-up;
# 20 ms keeps them awake within an interactive frame. Read by the OpenMP runtime when MKL loads, which happens
# after this module is imported.
os.environ.setdefault("KMP_BLOCKTIME", "20")

__all__ = [
    "CGSolver",
    "DirectSolver",
    "LinearSolverError",
    "ReusedFactorizationSolver",
    "make_linear_solver",
]

DIRECT_BACKENDS = ("auto", "pardiso", "scipy")
PRECONDITIONING_METHODS = ("None", "Identity", "Diagonal", "IncompleteCholesky", "LastFactorization")

# MKL Pardiso error codes (MKL reference manual, "pardiso" error table).
_PARDISO_ERRORS = {
    -1: "input inconsistent",
    -2: "not enough memory",
    -3: "reordering problem",
    -4: "zero pivot, numerical factorization or iterative refinement problem",
    -5: "unclassified (internal) error",
    -6: "reordering failed",
    -7: "diagonal matrix is singular",
    -8: "32-bit integer overflow problem",
    -9: "not enough memory for out-of-core solver",
    -10: "error opening out-of-core files",
    -11: "read/write error with out-of-core files",
    -12: "pardiso_64 called from 32-bit library",
}


class LinearSolverError(RuntimeError):
    """A factorization or solve failed (singular or non-symmetric matrix, Pardiso error, ...)."""


def _new_stats() -> dict:
    return {
        "analyses": 0,
        "factorizations": 0,
        "solves": 0,
        "right_hand_sides": 0,
        "analysis_time": 0.0,
        "factorization_time": 0.0,
        "solve_time": 0.0,
    }


def _check_square_csr(A, who: str) -> sp.csr_matrix:
    if not sp.issparse(A):
        raise ParameterError(f"{who}: the matrix must be a scipy.sparse matrix, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ParameterError(f"{who}: the matrix must be square and non-empty, got shape {A.shape}")
    if A.format != "csr":
        A = A.tocsr()
    if A.dtype != np.float64:
        A = A.astype(np.float64)
    return A


def _check_rhs(b, n: int, who: str) -> np.ndarray:
    b = np.asarray(b, dtype=np.float64)
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ParameterError(f"{who}: right-hand side must have shape ({n},) or ({n}, k), got {b.shape}")
    return b


def _same_pattern(A: sp.csr_matrix, indptr: np.ndarray | None, indices: np.ndarray | None) -> bool:
    if indptr is None or indices is None:
        return False
    if A.indptr is indptr and A.indices is indices:
        return True
    return (
        A.indptr.shape == indptr.shape
        and A.indices.shape == indices.shape
        and np.array_equal(A.indptr, indptr)
        and np.array_equal(A.indices, indices)
    )


class _UpperTrianglePattern:
    """Upper triangle (diagonal always present) of a CSR pattern, with the map from the input's values.

    ``upper_data[target] = A.data[source]`` rewrites the upper-triangle values of a new matrix with the
    same pattern without any re-slicing. Indices are zero-based int32 as Pardiso (iparm[34] = 1) wants.
    """

    def __init__(self, A: sp.csr_matrix):
        n = A.shape[0]
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(A.indptr))
        cols = A.indices.astype(np.int64)
        upper = cols >= rows
        source = np.flatnonzero(upper)
        keys = rows[source] * n + cols[source]
        diagonal_keys = np.arange(n, dtype=np.int64) * (n + 1)
        all_keys = np.union1d(keys, diagonal_keys)
        self.source = source
        self.target = np.searchsorted(all_keys, keys)
        upper_rows = all_keys // n
        self.indices = (all_keys % n).astype(np.int32)
        self.indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(upper_rows, minlength=n), out=self.indptr[1:])
        self.data = np.zeros(all_keys.shape[0], dtype=np.float64)
        self.pattern_indptr = A.indptr
        self.pattern_indices = A.indices
        # every diagonal entry stored (any stiffness matrix): the values are a plain gather (twice as fast)
        self.gather_only = bool(np.array_equal(self.target, np.arange(len(all_keys))))

    def fill(self, A: sp.csr_matrix) -> np.ndarray:
        if self.gather_only:
            np.take(A.data, self.source, out=self.data, mode="clip")  # indices valid by construction
        else:
            self.data[self.target] = A.data[self.source]
        return self.data


class _FullPattern:
    """The whole CSR pattern of a matrix, as Pardiso's unsymmetric type reads it. Indices are zero-based int32
    (iparm[34] = 1)."""

    def __init__(self, A: sp.csr_matrix):
        self.indptr = A.indptr.astype(np.int32)
        self.indices = A.indices.astype(np.int32)
        self.pattern_indptr = A.indptr
        self.pattern_indices = A.indices
        self.data = np.zeros(A.nnz, dtype=np.float64)

    def fill(self, A: sp.csr_matrix) -> np.ndarray:
        np.copyto(self.data, A.data)
        return self.data


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
    """max |A - A^T| / max |A| of a CSR matrix with sorted indices (inf when its pattern is not symmetric)."""
    transpose = transpose_map(A) if transpose is None else transpose
    if transpose is None:
        return np.inf
    scale = float(np.max(np.abs(A.data), initial=0.0))
    if scale == 0.0:
        return 0.0
    return float(np.max(np.abs(A.data - A.data[transpose]), initial=0.0)) / scale


def _single_threaded_openblas() -> None:
    """Limit numpy's OpenBLAS to one thread while MKL Pardiso factorizes.

    After any numpy BLAS call (a vector norm in the residual), OpenBLAS's idle threads keep spinning and take
    the cores MKL's threads need, which slows the numeric factorization that follows. numpy's BLAS work here is
    small (norms, dense products of the constraint-space matrices), so one thread costs nothing measurable.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        logger.info("threadpoolctl is missing: OpenBLAS threads may slow the Pardiso factorization down")
        return
    ThreadpoolController().select(internal_api="openblas").limit(limits=1)



@functools.cache
def _pardiso_library():
    """pypardiso's wrapper, made once per process: it finds MKL's library by a recursive glob over the
    environment (0.3 s each time, twice per scene load before this cache); only its library handle, its
    ``pardiso`` function and its pointer type are used."""
    from pypardiso.pardiso_wrapper import PyPardisoSolver

    return PyPardisoSolver()

class _PardisoBackend:
    """Direct calls to MKL ``pardiso`` through the library handle that pypardiso loads.

    pypardiso's own ``PyPardisoSolver.factorize`` always runs phase 12 (analysis + factorization) and copies
    the matrix to compare it at solve time; calling ``_mkl_pardiso`` directly lets us run phase 11 once per
    sparsity pattern, phase 22 per matrix and phase 33 per solve with many right-hand sides.
    """

    SPD = 2
    SYMMETRIC_INDEFINITE = -2
    UNSYMMETRIC = 11

    def __init__(self):
        _single_threaded_openblas()
        wrapper = _pardiso_library()
        self._library = wrapper.libmkl  # keep the shared library alive as long as the function pointer
        self._pardiso = wrapper._mkl_pardiso
        self._pt_ctype = wrapper._pt_type[0]
        self.pt = np.zeros(64, dtype=wrapper._pt_type[1])
        self.iparm = np.zeros(64, dtype=np.int32)
        self.mtype = self.SPD
        self.n = 0
        self.pattern: _UpperTrianglePattern | None = None
        self.analysed = False
        self.factorized = False
        self._perm = np.zeros(1, dtype=np.int32)
        self._set_iparm()

    def _set_iparm(self) -> None:
        iparm = self.iparm
        iparm[:] = 0
        iparm[0] = 1  # supply all values below instead of MKL defaults
        iparm[1] = 2  # METIS nested dissection ordering
        iparm[7] = 0  # iterative refinement steps: automatic (2 when pivots were perturbed)
        iparm[9] = 8  # pivot perturbation 1e-8 (symmetric types)
        iparm[10] = 0  # no scaling (keeps phase 11 independent of the values)
        iparm[12] = 0  # no weighted matching (same reason)
        iparm[17] = -1  # report the number of non-zeros of the factor in iparm[17]
        iparm[20] = 1  # Bunch-Kaufman pivoting for symmetric indefinite matrices
        iparm[34] = 1  # zero-based indices

    def _call(self, phase: int, data: np.ndarray, b: np.ndarray, x: np.ndarray, nrhs: int) -> int:
        error = ctypes.c_int32(0)
        int_p = ctypes.POINTER(ctypes.c_int32)
        pattern = self.pattern
        indptr = pattern.indptr if pattern is not None else np.zeros(1, dtype=np.int32)
        indices = pattern.indices if pattern is not None else np.zeros(1, dtype=np.int32)
        self._pardiso(
            self.pt.ctypes.data_as(ctypes.POINTER(self._pt_ctype)),
            ctypes.byref(ctypes.c_int32(1)),  # maxfct
            ctypes.byref(ctypes.c_int32(1)),  # mnum
            ctypes.byref(ctypes.c_int32(self.mtype)),
            ctypes.byref(ctypes.c_int32(phase)),
            ctypes.byref(ctypes.c_int32(self.n)),
            data.ctypes.data_as(ctypes.c_void_p),
            indptr.ctypes.data_as(int_p),
            indices.ctypes.data_as(int_p),
            self._perm.ctypes.data_as(int_p),
            ctypes.byref(ctypes.c_int32(nrhs)),
            self.iparm.ctypes.data_as(int_p),
            ctypes.byref(ctypes.c_int32(0)),  # msglvl
            b.ctypes.data_as(ctypes.c_void_p),
            x.ctypes.data_as(ctypes.c_void_p),
            ctypes.byref(error),
        )
        return int(error.value)

    def release(self) -> None:
        if self.analysed or self.factorized:
            dummy = np.zeros(1, dtype=np.float64)
            self._call(-1, dummy, dummy, dummy, 1)
        self.analysed = False
        self.factorized = False

    def _analyse(self) -> None:
        dummy = np.zeros(1, dtype=np.float64)
        error = self._call(11, self.pattern.data, dummy, dummy, 1)
        if error != 0:
            raise LinearSolverError(
                f"Pardiso symbolic analysis failed (error {error}: {_PARDISO_ERRORS.get(error, 'unknown')})"
            )
        self.analysed = True

    def factorize(self, A: sp.csr_matrix, stats: dict, symmetric: bool = True) -> None:
        wanted = _UpperTrianglePattern if symmetric else _FullPattern
        if self.pattern is None or not isinstance(self.pattern, wanted) or not _same_pattern(
            A, self.pattern.pattern_indptr, self.pattern.pattern_indices
        ):
            self.release()
            self.pattern = wanted(A)
            self.n = A.shape[0]
            self.mtype = self.SPD if symmetric else self.UNSYMMETRIC
            # unsymmetric: pivot perturbation 1e-13 (MKL's default for this type), symmetric: 1e-8
            self.iparm[9] = 8 if symmetric else 13
        self.pattern.fill(A)
        if not self.analysed:
            start = time.perf_counter()
            self._analyse()
            stats["analysis_time"] += time.perf_counter() - start
            stats["analyses"] += 1
        start = time.perf_counter()
        dummy = np.zeros(1, dtype=np.float64)
        self.factorized = False
        error = self._call(22, self.pattern.data, dummy, dummy, 1)
        if error != 0 and self.mtype == self.SPD:
            logger.info(
                "Pardiso Cholesky failed (error %d: %s, equation %d): matrix is not positive definite, "
                "switching to symmetric indefinite LDL^T",
                error,
                _PARDISO_ERRORS.get(error, "unknown"),
                int(self.iparm[29]),
            )
            stats["spd_fallbacks"] = stats.get("spd_fallbacks", 0) + 1
            self.release()
            self.mtype = self.SYMMETRIC_INDEFINITE
            analysis_start = time.perf_counter()
            self._analyse()
            stats["analysis_time"] += time.perf_counter() - analysis_start
            stats["analyses"] += 1
            error = self._call(22, self.pattern.data, dummy, dummy, 1)
        stats["factorization_time"] += time.perf_counter() - start
        stats["factorizations"] += 1
        if error != 0:
            raise LinearSolverError(
                f"Pardiso numerical factorization failed (error {error}: "
                f"{_PARDISO_ERRORS.get(error, 'unknown')}) for a {self.n}x{self.n} matrix with matrix type "
                f"{self.mtype}; the matrix is singular{' or not symmetric' if self.mtype != self.UNSYMMETRIC else ''}"
            )
        self.factorized = True
        perturbed_pivots = int(self.iparm[13])
        stats["perturbed_pivots"] = perturbed_pivots
        if perturbed_pivots > 0:
            logger.warning(
                "Pardiso perturbed %d pivot(s) of a %dx%d matrix: it is singular or nearly so, solutions may "
                "be meaningless (free rigid-body modes? missing fixed nodes?)",
                perturbed_pivots,
                self.n,
                self.n,
            )
        if self.mtype == self.SYMMETRIC_INDEFINITE:
            stats["positive_eigenvalues"] = int(self.iparm[21])
            stats["negative_eigenvalues"] = int(self.iparm[22])
        stats["factor_nonzeros"] = int(self.iparm[17])

    def solve(self, b: np.ndarray) -> np.ndarray:
        rhs = np.asfortranarray(b.reshape(self.n, -1))
        x = np.empty_like(rhs, order="F")
        error = self._call(33, self.pattern.data, rhs, x, rhs.shape[1])
        if error != 0:
            raise LinearSolverError(
                f"Pardiso solve failed (error {error}: {_PARDISO_ERRORS.get(error, 'unknown')})"
            )
        return np.ascontiguousarray(x).reshape(b.shape)

    def solve_transposed(self, b: np.ndarray) -> np.ndarray:
        """A^T x = b with the factorization of A (iparm[11] = 2; a symmetric type solves A x = b)."""
        if self.mtype != self.UNSYMMETRIC:
            return self.solve(b)
        self.iparm[11] = 2
        try:
            return self.solve(b)
        finally:
            self.iparm[11] = 0


class _ScipyBackend:
    """SciPy SuperLU on the full symmetric matrix (symmetric mode: diagonal pivots, A+A^T ordering)."""

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
    """Sparse direct solver for symmetric matrices (Cholesky, or LDL^T when not positive definite).

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
        self.backend = "pardiso" if isinstance(self._backend, _PardisoBackend) else "scipy"
        self.name = f"DirectSolver({self.backend})"
        self.matrix: sp.csr_matrix | None = None
        #: whether the last factorized matrix was symmetric (Cholesky/LDL^T) or not (LU)
        self.symmetric = True
        self._transpose_key: tuple | None = None
        self.stats["memo_hits"] = 0
        self._memo_rhs: np.ndarray | None = None
        self._memo_solution: np.ndarray | None = None

    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

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
        if not np.all(np.isfinite(A.data)):  # a runaway state: never hand NaN/inf to the native factorization
            raise LinearSolverError(f"{self.name}: the matrix has non-finite entries (the state ran away)")
        if self._transpose_key is None or not _same_pattern(A, *self._transpose_key[:2]):
            self._transpose_key = (A.indptr, A.indices, transpose_map(A))
        self.symmetric = relative_asymmetry(A, self._transpose_key[2]) <= SYMMETRY_TOLERANCE
        self._backend.factorize(A, self.stats, self.symmetric)
        self.matrix = A

    def solve(self, b) -> np.ndarray:
        if self.matrix is None:
            raise LinearSolverError(f"{self.name}.solve called before a successful factorize()")
        b = _check_rhs(b, self.matrix.shape[0], self.name)
        if not np.all(np.isfinite(b)):
            raise LinearSolverError(f"{self.name}: the right-hand side has non-finite entries (the state ran away)")
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
        self.stats["solve_time"] += time.perf_counter() - start
        self.stats["solves"] += 1
        self.stats["right_hand_sides"] += 1 if b.ndim == 1 else b.shape[1]
        return x

    def solve_transposed(self, b) -> np.ndarray:
        """Solve ``A^T x = b`` with the factorization of the last ``A`` (the adjoint solves of
        :mod:`mechanics.sensitivity`); ``b`` of shape ``(n,)`` or ``(n, k)``. Not memoised."""
        if self.matrix is None:
            raise LinearSolverError(f"{self.name}.solve_transposed called before a successful factorize()")
        b = _check_rhs(b, self.matrix.shape[0], self.name)
        if not np.all(np.isfinite(b)):
            raise LinearSolverError(f"{self.name}: the right-hand side has non-finite entries")
        start = time.perf_counter()
        x = self._backend.solve_transposed(np.ascontiguousarray(b))
        self.stats["solve_time"] += time.perf_counter() - start
        self.stats["solves"] += 1
        self.stats["right_hand_sides"] += 1 if b.ndim == 1 else b.shape[1]
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


def make_linear_solver(kind: str = "direct", **parameters):
    """Build a linear solver by name: ``"direct"``, ``"cg"``, ``"reused_factorization"`` or ``"async"``
    (:class:`mechanics.async_preconditioner.AsyncPreconditionedSolver`; its ``preconditioner_iterations`` is
    the solver's ``maximum_number_of_iterations``)."""
    if kind == "async":
        from softsim.mechanics.async_preconditioner import AsyncPreconditionedSolver

        if "preconditioner_iterations" in parameters:
            parameters["maximum_number_of_iterations"] = parameters.pop("preconditioner_iterations")
        return AsyncPreconditionedSolver(**parameters)
    kinds = {"direct": DirectSolver, "cg": CGSolver, "reused_factorization": ReusedFactorizationSolver}
    if kind not in kinds:
        raise ParameterError(f"linear solver kind must be one of {(*kinds, 'async')}, got {kind!r}")
    return kinds[kind](**parameters)
