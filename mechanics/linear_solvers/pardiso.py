"""MKL Pardiso called through ctypes, on the library handle that pypardiso loads.

Phase 11 (symbolic analysis, METIS ordering) runs once per sparsity pattern, phase 22 (numeric factorization)
per matrix and phase 33 per solve with any number of right-hand sides. Symmetric matrices are given as their
upper triangle (Cholesky, falling back to LDL^T), others in full (LU).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import time

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.linear_solvers.base import LinearSolverError, _same_pattern

logger = logging.getLogger(__name__)

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


@functools.cache
def _pardiso_library():
    """pypardiso's wrapper, made once per process: it finds MKL's library by a recursive glob over the
    environment (slow, and twice per scene load before this cache: benchmarks/RESULTS.md); only its library
    handle, its ``pardiso`` function and its pointer type are used."""
    from pypardiso.pardiso_wrapper import PyPardisoSolver

    return PyPardisoSolver()

def _mkl_threads(library) -> int:
    """MKL's thread count (at least 1; 1 when the library cannot say)."""
    try:
        return max(1, int(library.mkl_get_max_threads()))
    except (AttributeError, OSError, ValueError):
        return 1


class _PardisoBackend:
    """Direct calls to MKL ``pardiso`` through the library handle that pypardiso loads.

    pypardiso's own ``PyPardisoSolver.factorize`` always runs phase 12 (analysis + factorization) and copies
    the matrix to compare it at solve time; calling ``_mkl_pardiso`` directly lets us run phase 11 once per
    sparsity pattern, phase 22 per matrix and phase 33 per solve with many right-hand sides.
    """

    name = "pardiso"
    SPD = 2
    SYMMETRIC_INDEFINITE = -2
    UNSYMMETRIC = 11

    def __init__(self):
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
        self._threads = _mkl_threads(self._library)
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
        # conditional numerical reproducibility for MKL's thread count: with two threads and no CNR the same frame
        # of trunk_inverse ended 1e-11 apart from run to run, enough to flip an actuator's bound in its inverse QP
        iparm[33] = self._threads

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
