"""The tangent of the constrained equilibrium iterations: K_free plus the stiffness of the constraint forces.

Newton on ``R(x) + J(x)^T lambda = 0`` needs ``K - d(J^T lambda)/dx`` (the Hessian of the Lagrangian): a
cable under tension stiffens sideways, a pressurised cavity's force follows its walls. Without that term the
iterations still converge, but only linearly. The constraints give the term as triplets over the body DOFs
(:meth:`mechanics.constraints.base.Constraint.force_stiffness`); :class:`ConstrainedTangent` adds them to
``K_free`` on a pattern computed once per structure, so the sparse factorization keeps its symbolic analysis,
and factorizes the sum with a linear solver of its own (the Newton solver's keeps the pattern of ``K_free``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.cable_rows import fast_csr


class ResponseCache:
    """The last K^-1 J^T of one linear solver: a later call with the same factorization solves only for the
    rows of J that changed (contact rows on planes keep theirs while a cavity row moves)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._Jt: np.ndarray | None = None
        self._KinvJt: np.ndarray | None = None
        self._tolerance = 0.0  # the relative residual of the cached columns (0: exact)

    def solve(self, linear_solver, Jt: np.ndarray, extra: np.ndarray | None = None, tolerance: float | None = None):
        """K^-1 Jt (n_free, m) for the dense Jt (n_free, m). With ``extra`` (n_free,), also K^-1 extra, solved in
        the same call (one multi-right-hand-side solve: one preconditioner application per CG iteration for
        an iterative solver) and returned as a second value. ``tolerance``: the relative residual an iterative
        solver that accepts one (the asynchronous preconditioner) may stop at; the cache then keeps the
        columns for later calls only while they are at least as accurate as asked."""
        key = (id(linear_solver), linear_solver.stats.get("factorizations"), getattr(linear_solver, "matrix", None))
        inexact = tolerance is not None and linear_solver.capabilities.inexact
        accuracy = float(tolerance) if inexact else 0.0  # the relative residual of the columns solved now
        same = (self._key is not None and self._key[0] == key[0] and self._key[1] == key[1]
                and self._key[2] is key[2] and self._Jt.shape == Jt.shape and self._tolerance <= accuracy)
        changed = np.flatnonzero(np.any(Jt != self._Jt, axis=0)) if same else np.arange(Jt.shape[1])
        KinvJt = self._KinvJt.copy() if same else np.empty(Jt.shape)
        columns = Jt[:, changed] if extra is None else np.column_stack([Jt[:, changed], extra])
        solved = np.zeros((Jt.shape[0], 0))
        if columns.shape[1]:
            options = {"tolerance": accuracy} if inexact else {}
            solved = np.asarray(linear_solver.solve(np.ascontiguousarray(columns), **options)).reshape(columns.shape)
        KinvJt[:, changed] = solved[:, :changed.size]
        self._tolerance = accuracy  # the reused columns were at least this accurate (same requires it)
        self._key, self._Jt, self._KinvJt = key, Jt, KinvJt
        if extra is None:
            return KinvJt
        return KinvJt, solved[:, -1].copy()


class ConstrainedTangent:
    """``K_free + S_free`` on a fixed pattern, and a linear solver for it.

    ``dof_to_free`` (3n,) maps a body DOF to its free index (-1 for a fixed DOF).
    """

    def __init__(self, dof_to_free: np.ndarray) -> None:
        self.dof_to_free = np.asarray(dof_to_free, dtype=np.int64)
        self._key: tuple | None = None
        self._solver = None
        self._solver_template = None
        #: K^-1 J^T of the last equilibrium steps, per factorization (see ResponseCache)
        self.responses = ResponseCache()
        #: the last frame's move between equilibria (mechanics.equilibrium.Secant), for the next one's predictor
        self.history = None
        #: whether the solver's factorization is of the elasticity's definite tangent, not the exact one
        self.definite = False

    @property
    def current_solver(self):
        """The linear solver of the constrained tangent, or None before the first equilibrium step."""
        return self._solver

    def solver(self, template):
        """The linear solver of the constrained tangent, made like ``template`` (remade when it changes)."""
        if self._solver is None or self._solver_template is not template:
            self._solver, self._solver_template = template.like(), template
        return self._solver

    def matrix(self, K_free: sp.csr_matrix, terms: list) -> sp.csr_matrix:
        if not terms:
            return K_free
        return self._sum(K_free, terms)

    def _sum(self, K_free: sp.csr_matrix, terms: list) -> sp.csr_matrix:
        """``K_free`` (csr, sorted indices) plus the triplets ``terms`` [(rows, cols, values), ...] restricted to
        the free DOFs. The result's ``indptr``/``indices`` are the same arrays while K's pattern and the terms'
        index arrays are the same objects."""
        key = (K_free.indices, K_free.indptr, *[t[0] for t in terms], *[t[1] for t in terms])
        if self._key is None or len(key) != len(self._key) or any(a is not b for a, b in zip(key, self._key)):
            self._build(K_free, terms)
            self._key = key
        data = np.zeros(self._indices.size)
        data[self._k_positions] = K_free.data
        for (_, _, values), (keep, touched, inverse) in zip(terms, self._term_positions):
            # the term's sum on the entries it touches only (a cable's few hundred, not the whole pattern)
            data[touched] += np.bincount(inverse, weights=values[keep], minlength=touched.size)
        return fast_csr(data, self._indices, self._indptr, K_free.shape, canonical=True)

    def _build(self, K_free: sp.csr_matrix, terms: list) -> None:
        n = K_free.shape[0]
        k_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(K_free.indptr))
        k_keys = k_rows * n + K_free.indices
        term_keys = []
        for rows, cols, _ in terms:
            free_rows, free_cols = self.dof_to_free[rows], self.dof_to_free[cols]
            keep = (free_rows >= 0) & (free_cols >= 0)
            term_keys.append((keep, free_rows[keep] * n + free_cols[keep]))
        if K_free.has_sorted_indices:
            # K's keys are sorted: only the few term entries outside K's pattern are merged in (contact rows
            # change the terms' pattern at every touch and move; sorting all of K's keys again took most of
            # a rebuild)
            extra = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *[k for _, k in term_keys]]))
            at = np.minimum(np.searchsorted(k_keys, extra), max(k_keys.size - 1, 0))
            extra = extra[k_keys[at] != extra] if k_keys.size else extra
            keys = np.insert(k_keys, np.searchsorted(k_keys, extra), extra)
            self._k_positions = np.arange(k_keys.size) + np.searchsorted(extra, k_keys)
        else:
            keys = np.unique(np.concatenate([k_keys, *[k for _, k in term_keys]]))
            self._k_positions = np.searchsorted(keys, k_keys)
        rows = keys // n
        self._indices = (keys % n).astype(K_free.indices.dtype)
        self._indptr = np.zeros(n + 1, dtype=K_free.indptr.dtype)
        np.cumsum(np.bincount(rows, minlength=n), out=self._indptr[1:])
        self._term_positions = [(keep, *np.unique(np.searchsorted(keys, k), return_inverse=True))
                                for keep, k in term_keys]
