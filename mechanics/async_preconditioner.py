"""The asynchronous preconditioner (Courtecuisse, Allard, Duriez, Cotin, VRIPHYS 2010).

A large mesh spends nearly all of a Newton iteration in the numeric factorization of the tangent (measured in
benchmarks/RESULTS.md). Between two interactive frames the tangent changes little, so the factorization of an
earlier tangent is an excellent preconditioner for the current one: a conjugate gradient on the *current*
matrix, preconditioned by it, converges in a few iterations, each one a pair of triangular solves. Meanwhile a
background thread factorizes the latest matrix; when it finishes, the next solve picks that factorization up.
No frame waits for a factorization except the very first one (nothing to precondition with yet).

The conjugate gradient needs a symmetric positive definite matrix. The exact tangent (the default,
``corotationalTangent = "exact"``) is not symmetric with SOFA's rotations and can be indefinite with any: such a
matrix is solved by GMRES with the same preconditioner (an LU when the factorized matrix was not symmetric).
That is Newton-Krylov on the exact tangent, with a factorization kept across frames and refreshed behind them.

Every solve is a solve of the current matrix to ``residual_tolerance_threshold`` (``|A x - b| <= threshold
|b|``, checked on the true residual), so the Newton iterations and the constraint projection built on it meet
their own tolerances as with the direct solver; only the cost changes. A solve that does not reach the
threshold in ``maximum_number_of_iterations`` (the preconditioner is too old after a sudden change) factorizes
the current matrix in the foreground and finishes with it: slow, never wrong.

The background factorization runs in a Python thread: MKL Pardiso releases the GIL (ctypes), and the thread
asks MKL for one OpenMP thread so that it takes one core and leaves the other to the frames. Pardiso handles
alternate: the one the solves use and the one being factorized; they swap only at the start of a solve.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import threading
import time
import weakref

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers.base import (
    Capabilities,
    LinearSolverError,
    _check_rhs,
    _check_square_csr,
    _new_stats,
)
from softsim.mechanics.linear_solvers.direct import SymmetryCheck
from softsim.mechanics.linear_solvers.pardiso import _pardiso_library, _PardisoBackend

logger = logging.getLogger(__name__)

__all__ = ["AsyncPreconditionedSolver", "preconditioned_cg", "preconditioned_gmres"]

#: every solver with a background thread, closed at exit (a thread left inside MKL aborts the interpreter)
_LIVE: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for solver in list(_LIVE):
        solver.close()


def preconditioned_cg(A: sp.csr_matrix, B: np.ndarray, precondition, *, tolerance: float, max_iterations: int,
                      X0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Conjugate gradient on ``A X = B`` for every column of ``B`` (n, k) at once.

    The columns are independent CG runs that share each application of ``precondition`` (a function of an
    (n, j) block, one multi-right-hand-side triangular solve for all unfinished columns) and each sparse product.
    A column stops when its true residual ``|b - A x| <= tolerance |b|``. Returns ``(X (n, k), iterations per
    column (k,), status)``: "converged", "unconverged" (``max_iterations`` reached) or "indefinite" (a direction
    of non-positive curvature: CG cannot solve with this matrix).
    """
    n, k = B.shape
    X = np.zeros((n, k)) if X0 is None else np.array(X0, dtype=np.float64, copy=True).reshape(n, k)
    R = B - A @ X if X0 is not None else B.copy()
    b_norms = np.linalg.norm(B, axis=0)
    thresholds = tolerance * b_norms
    iterations = np.zeros(k, dtype=np.int64)
    active = np.flatnonzero(np.linalg.norm(R, axis=0) > thresholds)
    if active.size == 0:
        return X, iterations, "converged"
    Z = precondition(R[:, active])
    P = Z.copy()
    rho = np.einsum("ij,ij->j", R[:, active], Z)
    for _ in range(max_iterations):
        AP = A @ P
        curvature = np.einsum("ij,ij->j", P, AP)
        if np.any(~(curvature > 0.0)):
            return X, iterations, "indefinite"
        alpha = rho / curvature
        X[:, active] += P * alpha
        R_active = R[:, active] - AP * alpha
        R[:, active] = R_active
        iterations[active] += 1
        keep = np.linalg.norm(R_active, axis=0) > thresholds[active]
        if not np.any(keep):
            break
        active, R_active, P, rho = active[keep], R_active[:, keep], P[:, keep], rho[keep]
        Z = precondition(R_active)
        rho_new = np.einsum("ij,ij->j", R_active, Z)
        P = Z + P * (rho_new / rho)
        rho = rho_new
    # the recurrence's residual drifts from the true one: check the true residual of every column
    final = np.linalg.norm(B - A @ X, axis=0)
    return X, iterations, "converged" if np.all(final <= thresholds) else "unconverged"


def preconditioned_gmres(A: sp.csr_matrix, B: np.ndarray, precondition, *, tolerance: float, max_iterations: int,
                         X0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Right-preconditioned GMRES on ``A X = B`` for every column of ``B`` (n, k): for a matrix that is not
    symmetric positive definite (the exact tangent of SOFA's rotations, an indefinite tangent).

    The columns run in lockstep, so that each iteration applies ``precondition`` (a function of an (n, j)
    block: one multi-right-hand-side triangular solve) once for all unfinished columns. Arnoldi with classical
    Gram-Schmidt done twice; a column stops at the first iteration whose least-squares residual is at most
    ``tolerance |b|``. Returns ``(X (n, k), iterations per column (k,), status)``: "converged" (judged on the true
    residual ``|b - A x|``) or "unconverged".
    """
    n, k = B.shape
    X = np.zeros((n, k)) if X0 is None else np.array(X0, dtype=np.float64, copy=True).reshape(n, k)
    R = B - A @ X if X0 is not None else B.copy()
    thresholds = tolerance * np.linalg.norm(B, axis=0)
    beta = np.linalg.norm(R, axis=0)
    iterations = np.zeros(k, dtype=np.int64)
    columns = np.flatnonzero(beta > thresholds)
    if columns.size == 0:
        return X, iterations, "converged"
    basis = [R[:, columns] / beta[columns]]  # the Arnoldi vectors, (n, c) each
    preconditioned = []  # M^-1 of each basis block
    hessenberg = np.zeros((max_iterations + 1, max_iterations, columns.size))
    finished: dict[int, tuple[np.ndarray, int]] = {}  # slot -> (least-squares coefficients y, iterations)
    for j in range(max_iterations):
        Z = precondition(np.ascontiguousarray(basis[j]))
        W = A @ Z
        V = np.stack(basis)  # (j + 1, n, c)
        for _ in range(2):
            h = np.einsum("inc,nc->ic", V, W)
            W = W - np.einsum("inc,ic->nc", V, h)
            hessenberg[: j + 1, j, :] += h
        norms = np.linalg.norm(W, axis=0)
        hessenberg[j + 1, j, :] = norms
        basis.append(W / np.where(norms > 0.0, norms, 1.0))
        preconditioned.append(Z)
        for slot, column in enumerate(columns):
            if slot in finished:
                continue
            rhs = np.zeros(j + 2)
            rhs[0] = beta[column]
            H = hessenberg[: j + 2, : j + 1, slot]
            y = np.linalg.lstsq(H, rhs, rcond=None)[0]
            if np.linalg.norm(H @ y - rhs) <= thresholds[column] or norms[slot] == 0.0 or j == max_iterations - 1:
                finished[slot] = (y, j + 1)
        if len(finished) == columns.size:
            break
    for slot, (y, used) in finished.items():
        X[:, columns[slot]] += np.stack(preconditioned[:used], axis=-1)[:, slot, :] @ y
        iterations[columns[slot]] = used
    final = np.linalg.norm(B - A @ X, axis=0)
    return X, iterations, "converged" if np.all(final <= thresholds) else "unconverged"


class _Factorization:
    """One Pardiso handle, the thread that owns it ("foreground" or "background": a handle is analysed and
    factorized by its owner only, whichever thread solves with it or frees it), the generation of the matrix
    it factorized and whether that matrix was symmetric (Cholesky / LDL^T) or not (LU)."""

    def __init__(self, owner: str):
        self.owner = owner
        self.backend = _PardisoBackend()
        self.stats = _new_stats()
        self.generation = -1
        self.symmetric = True
        self.seconds = 0.0

    def factorize(self, A: sp.csr_matrix, generation: int, symmetric: bool) -> None:
        started = time.perf_counter()
        self.backend.factorize(A, self.stats, symmetric)
        self.generation = generation
        self.symmetric = symmetric
        self.seconds = time.perf_counter() - started

    def solve(self, R: np.ndarray) -> np.ndarray:
        return self.backend.solve(np.asarray(R))


class AsyncPreconditionedSolver:
    """CG (GMRES for a matrix that is not symmetric) on the current matrix, preconditioned by the newest
    factorization a background thread finished.

    Parameters
    ----------
    residual_tolerance_threshold:
        Each solve stops when ``|A x - b| <= threshold |b|`` (true residual; in (0, 1e-2]).
    maximum_number_of_iterations:
        CG (or GMRES) iterations per solve before the current matrix is factorized in the foreground (>= 1).
    background:
        False factorizes each new matrix in the foreground at its first solve (the same iterations as the
        direct solver, for tests and comparisons).

    ``factorize(A)`` records a copy of ``A``'s values (the assembly rewrites its matrix in place) and hands it
    to the background thread when that is idle. A matrix that is not symmetric (the exact tangent of SOFA's
    rotations), or one preconditioned by the factorization of such a matrix, is solved by GMRES, and so is a
    symmetric one where CG meets a direction of non-positive curvature (an indefinite exact tangent); ``symmetric``
    tells whether the current matrix is. After each solve: ``iterations`` (CG or GMRES iterations of the
    slowest right-hand side) and ``age`` (how many ``factorize`` calls ago the preconditioner's matrix was
    given). ``stats`` adds ``iterations`` (total), ``background_factorizations``, ``foreground_factorizations``,
    ``last_background_seconds``, ``age`` and ``memo_hits`` (a two-dimensional right-hand side equal to the last
    one, with the same matrix, returns the last solution, as :class:`~mechanics.linear_solvers.DirectSolver`).
    """

    #: solve() takes a per-call tolerance (the equilibrium iterations' inexact Newton steps); factorizations
    #: run in a background thread; GMRES solves matrices that are not symmetric
    capabilities = Capabilities(inexact=True, unsymmetric=True, background=True)

    def __init__(self, *, residual_tolerance_threshold: float = 1e-8, maximum_number_of_iterations: int = 20,
                 background: bool = True):
        tolerance = float(residual_tolerance_threshold)
        if not np.isfinite(tolerance) or not 0.0 < tolerance <= 1e-2:
            raise ParameterError(
                f"residual_tolerance_threshold must be in (0, 1e-2], got {residual_tolerance_threshold}")
        if isinstance(maximum_number_of_iterations, bool) or int(maximum_number_of_iterations) < 1:
            raise ParameterError(f"maximum_number_of_iterations must be an integer >= 1, got "
                                 f"{maximum_number_of_iterations!r}")
        self.residual_tolerance_threshold = tolerance
        self.maximum_number_of_iterations = int(maximum_number_of_iterations)
        self.background = bool(background)
        self.name = "AsyncPreconditionedSolver"
        self.stats = _new_stats()
        self.stats.update(iterations=0, background_factorizations=0, foreground_factorizations=0,
                          last_background_seconds=0.0, age=0, memo_hits=0)
        self.matrix: sp.csr_matrix | None = None
        #: whether the current matrix is symmetric (to SYMMETRY_TOLERANCE; its factorization is then LDL^T)
        self.symmetric = True
        self._symmetry = SymmetryCheck()
        self.iterations = 0
        self.age = 0
        self._generation = 0
        self._memo: tuple[np.ndarray, np.ndarray, float] | None = None  # (b, x, tolerance) of the last block solve
        self._ready: _Factorization | None = None  # the preconditioner in use (only the foreground touches it)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        # shared with the thread, under the lock:
        self._job: tuple[sp.csr_matrix, int] | None = None
        self._running = False
        self._finished: _Factorization | None = None  # done by the thread, not yet in use
        self._background_spare: _Factorization | None = None  # retired background handles, for the thread
        self._failure: str | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- the interface of the linear solvers --------------------------------------------------------------
    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

    def like(self) -> AsyncPreconditionedSolver:
        """A new, unfactorized solver with the same settings (and a thread of its own)."""
        return AsyncPreconditionedSolver(residual_tolerance_threshold=self.residual_tolerance_threshold,
                                         maximum_number_of_iterations=self.maximum_number_of_iterations,
                                         background=self.background)

    def factorize(self, A) -> None:
        A = _check_square_csr(A, self.name)
        if not A.has_sorted_indices:
            A = A.sorted_indices()
        self.matrix = sp.csr_matrix((A.data.copy(), A.indices, A.indptr), shape=A.shape)
        self.symmetric = self._symmetry(A)[0]
        self._generation += 1
        self._memo = None
        self.stats["factorizations"] += 1  # a new operator (ResponseCache keys on this count)
        if self._ready is None or self._ready.backend.n != A.shape[0]:
            self._factorize_now()
        elif self.background:
            self._request(self.matrix)

    def solve(self, b, x0=None, *, tolerance: float | None = None) -> np.ndarray:
        """Solve ``A x = b`` (b of shape (n,) or (n, k)) to ``|A x - b| <= tolerance |b|`` (default
        ``residual_tolerance_threshold``; a caller that checks its own convergence, as the equilibrium
        iterations do, may ask for less while it is far from its answer: an inexact Newton step)."""
        if self.matrix is None:
            raise LinearSolverError(f"{self.name}.solve called before factorize()")
        b = _check_rhs(b, self.matrix.shape[0], self.name)
        started = time.perf_counter()
        tolerance = self.residual_tolerance_threshold if tolerance is None else float(tolerance)
        memo = self._memo
        # the last block solve, when it was at least as accurate as asked (the memo is cleared by factorize)
        if (b.ndim == 2 and memo is not None and memo[0].shape == b.shape and memo[2] <= tolerance
                and np.array_equal(memo[0], b)):
            self.stats["memo_hits"] += 1
            return memo[1].copy()
        self._pick_up()
        if not self.background and self._ready.generation != self._generation:
            self._factorize_now()
        B = b.reshape(b.shape[0], -1)
        X0 = None if x0 is None else np.asarray(x0, dtype=np.float64).reshape(B.shape)
        ready = self._ready
        options = dict(tolerance=tolerance, max_iterations=self.maximum_number_of_iterations, X0=X0)
        status = "indefinite"
        used = 0
        if self.symmetric and ready.symmetric:
            X, iterations, status = preconditioned_cg(self.matrix, B, ready.solve, **options)
            used = int(iterations.max(initial=0))
        if status == "indefinite":  # not symmetric, or CG met a direction of non-positive curvature
            X, iterations, status = preconditioned_gmres(self.matrix, B, ready.solve, **options)
            used += int(iterations.max(initial=0))
        if status != "converged":
            # The preconditioner is too old for this matrix: factorize the current matrix here and solve with
            # it directly.
            logger.info("%s: Krylov solve %s after %d iterations with a preconditioner %d matrices old; "
                        "factorizing the current matrix", self.name, status, used, self._generation - ready.generation)
            self._factorize_now()
            ready = self._ready
            X = self._direct_solve(B)
            used += 1
        self.iterations = used
        self.age = self._generation - ready.generation
        self.stats["iterations"] += used
        self.stats["age"] = self.age
        self.stats["solve_time"] += time.perf_counter() - started
        self.stats["solves"] += 1
        self.stats["right_hand_sides"] += B.shape[1]
        X = X.reshape(b.shape)
        if b.ndim == 2:
            self._memo = (b.copy(), X.copy(), tolerance)
        return X

    def _direct_solve(self, B: np.ndarray) -> np.ndarray:
        """Solve with the current matrix's own factorization, refined with the true residual until the
        tolerance holds (Pardiso's own refinement stops earlier on an LDL^T with perturbed pivots)."""
        X = self._ready.solve(B)
        thresholds = self.residual_tolerance_threshold * np.linalg.norm(B, axis=0)
        for _ in range(self.maximum_number_of_iterations):
            R = B - self.matrix @ X
            if np.all(np.linalg.norm(R, axis=0) <= thresholds):
                return X
            X += self._ready.solve(R)
        raise LinearSolverError(f"{self.name}: the solve with the current matrix's factorization does not reach "
                                f"|r| <= {self.residual_tolerance_threshold:g} |b| (a singular matrix?)")

    def close(self) -> None:
        """Stop the background thread (after its current factorization) and free the factorizations."""
        with self._lock:
            self._closed = True
            self._job = None
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=120.0)
        for factorization in (self._ready, self._finished, self._background_spare):
            if factorization is not None:
                factorization.backend.release()
        self._ready = self._finished = self._background_spare = None
        self.matrix = None
        self._memo = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def wait(self, timeout: float = 120.0) -> bool:
        """Block until the background thread is idle (for tests and benchmarks); True when it is."""
        deadline = time.perf_counter() + timeout
        with self._lock:
            while self._job is not None or self._running:
                remaining = deadline - time.perf_counter()
                if remaining <= 0.0:
                    return False
                self._wake.wait(remaining)
        return True

    # -- the factorizations ---------------------------------------------------------------------------
    def _retire(self, factorization: _Factorization | None) -> None:
        """Free a handle no longer in use, or keep a background one for the thread's next factorization (it
        then skips the symbolic analysis). Foreground handles are freed: they are made only for the first
        matrix and after a failed CG, and a factorization of a large mesh takes gigabytes."""
        if factorization is None:
            return
        if factorization.owner == "background":
            with self._lock:
                if self._background_spare is None:
                    self._background_spare = factorization
                    return
        factorization.backend.release()

    def _factorize_now(self) -> None:
        """Factorize the current matrix in the foreground (the first matrix, a failed CG, or no background)."""
        started = time.perf_counter()
        fresh = _Factorization("foreground")
        try:
            fresh.factorize(self.matrix, self._generation, self.symmetric)
        except LinearSolverError:
            fresh.backend.release()
            raise
        self._retire(self._ready)
        self._ready = fresh
        self.stats["foreground_factorizations"] += 1
        self.stats["factorization_time"] += time.perf_counter() - started

    def _request(self, A: sp.csr_matrix) -> None:
        """Hand ``A`` to the background thread unless it is busy (then a later matrix is given)."""
        with self._lock:
            if self._running or self._job is not None or self._closed:
                return
            self._job = (A, self._generation, self.symmetric)  # this solver's own copy, never rewritten
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="softsim-factorization", daemon=True)
                self._thread.start()
                _LIVE.add(self)
            self._wake.notify_all()

    def _pick_up(self) -> None:
        """Start using a factorization the thread finished (only here: never in the middle of a solve)."""
        with self._lock:
            finished, self._finished = self._finished, None
            failure, self._failure = self._failure, None
        if finished is not None:
            if finished.generation > self._ready.generation:
                self._retire(self._ready)
                self._ready = finished
                self.stats["background_factorizations"] += 1
                self.stats["last_background_seconds"] = finished.seconds
            else:  # older than a foreground factorization made meanwhile
                self._retire(finished)
        if failure:
            logger.warning("%s: the background factorization failed (%s); the older one stays in use",
                           self.name, failure)

    def _work(self) -> None:
        # One MKL thread here, so that the frames keep the other core. A Pardiso handle must be analysed,
        # factorized and released under one thread count (a handle analysed with MKL's default threads and
        # factorized after MKL_Set_Num_Threads_Local(1) crashed), so the thread makes its own handles and the
        # foreground only solves with them.
        try:
            _pardiso_library().libmkl.MKL_Set_Num_Threads_Local(ctypes.c_int(1))
        except (AttributeError, OSError) as error:  # pragma: no cover - an MKL without the function
            logger.info("could not limit the background factorization to one MKL thread: %s", error)
        while True:
            with self._lock:
                while self._job is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    spare, self._background_spare = self._background_spare, None
                    if spare is not None:
                        spare.backend.release()
                    return
                A, generation, symmetric = self._job
                self._job = None
                self._running = True
                target, self._background_spare = self._background_spare, None
            failure = None
            try:
                target = target or _Factorization("background")
                target.factorize(A, generation, symmetric)
            except Exception as error:  # noqa: BLE001 - reported to the foreground, which keeps its preconditioner
                failure = str(error)
            with self._lock:
                self._running = False
                if failure is None:
                    stale, self._finished = self._finished, target
                else:
                    stale, self._failure = None, failure
                    self._background_spare = target
                self._wake.notify_all()
            if stale is not None:
                stale.backend.release()
