"""The interface every linear solver implements, the error they raise and the argument checks they share.

A linear solver prepares to solve with a square sparse matrix (``factorize``) and then solves for one or many
right-hand sides (``solve``). :class:`LinearSolver` declares that interface; :class:`Capabilities` says what a
solver can do beyond it, so that callers ask a solver instead of testing its class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError


class LinearSolverError(RuntimeError):
    """A factorization or solve failed (singular or non-symmetric matrix, Pardiso error, ...)."""


@dataclass(frozen=True)
class Capabilities:
    """What a linear solver can do beyond ``factorize``/``solve``.

    ``direct``: solves to round-off with a factorization of the matrix itself, and offers
    ``solve_transposed(b)`` (A^T x = b with the same factorization);
    ``iterative``: ``solve(b, x0=...)`` runs Krylov iterations from ``x0`` and leaves ``iterations``,
    ``converged``, ``squared_residuals`` (|r_k|^2 per iteration) and ``squared_rhs_norm`` (|b|^2) of the last
    vector it solved;
    ``inexact``: ``solve(b, tolerance=...)`` accepts a per-call relative tolerance (an inexact Newton step);
    ``unsymmetric``: factorizes matrices that are not symmetric (the others need a symmetric, and for the
    conjugate gradients positive definite, matrix);
    ``background``: factorizes in a background thread (``wait()`` blocks until the newest one is done).
    """

    direct: bool = False
    iterative: bool = False
    inexact: bool = False
    unsymmetric: bool = False
    background: bool = False


@runtime_checkable
class LinearSolver(Protocol):
    """The interface of every linear solver (DirectSolver, CGSolver, ReusedFactorizationSolver,
    AsyncPreconditionedSolver).

    - ``factorize(A)``: take a square ``scipy.sparse.csr_matrix`` (n, n), both triangles stored, and prepare to
      solve with it; raises :class:`LinearSolverError` when it cannot (singular, non-finite entries);
    - ``solve(b) -> x``: ``b`` of shape ``(n,)`` or ``(n, k)``, ``x`` of the same shape;
    - ``is_factorized``: whether ``solve`` may be called;
    - ``symmetric``: whether the last matrix was treated as symmetric (an unsymmetric one gives an unsymmetric
      ``J A^-1 J^T``);
    - ``like()``: a new, unfactorized solver of the same kind and settings;
    - ``close()``: free the factorization's memory;
    - ``name`` (str), ``stats`` (dict of counters and accumulated seconds) and ``capabilities``.
    """

    name: str
    stats: dict
    capabilities: Capabilities
    symmetric: bool

    @property
    def is_factorized(self) -> bool: ...

    def factorize(self, A: sp.csr_matrix) -> None: ...

    def solve(self, b: np.ndarray) -> np.ndarray: ...

    def like(self) -> LinearSolver: ...

    def close(self) -> None: ...


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
