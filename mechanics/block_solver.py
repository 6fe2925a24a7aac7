"""A direct solver per diagonal block of a block-diagonal matrix: the free DOFs of several bodies.

The implicit step's matrix H of a scene with several bodies has no entries between bodies (their coupling is in
the constraint rows). One factorization per body costs about as much as one of the whole matrix, but the
constraint step's ``H^-1 J^T`` then solves each body only with the rows that touch it: on ``gripper_object``
(three bodies, 221 rows) a finger's cable and floor contacts are 16 right-hand sides on that finger instead of
221 on all three bodies.

:class:`BlockDiagonalSolver` implements :class:`mechanics.linear_solvers.LinearSolver`; a matrix with an entry
outside the blocks is factorized whole (the blocks are checked once per sparsity pattern).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.linear_solvers import Capabilities, DirectSolver


class BlockDiagonalSolver:
    """Direct solves with the diagonal blocks ``[lo, hi)`` of the matrix.

    ``bounds`` (b + 1,): the blocks are ``bounds[k] .. bounds[k+1] - 1`` (increasing, from 0 to n).
    """

    capabilities = Capabilities(direct=True, unsymmetric=True)

    def __init__(self, bounds, *, backend: str = "auto"):
        self.backend = backend
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.name = f"BlockDiagonalSolver({self.bounds.size - 1} blocks)"
        self._solvers = [DirectSolver(backend=backend) for _ in range(self.bounds.size - 1)]
        self._whole = DirectSolver(backend=backend)
        self._pattern: tuple | None = None
        self._block_diagonal = False
        self.matrix: sp.csr_matrix | None = None

    @property
    def stats(self) -> dict:
        """The counters and times of the block solvers (and of the whole-matrix one), summed."""
        total: dict = {}
        for solver in (*self._solvers, self._whole):
            for key, value in solver.stats.items():
                if isinstance(value, int | float):
                    total[key] = total.get(key, 0) + value
        return total

    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

    @property
    def symmetric(self) -> bool:
        """Whether every factorized block (or the whole matrix) was symmetric."""
        if self.matrix is not None and self._block_diagonal and self.matrix.shape[0] == self.bounds[-1]:
            return all(solver.symmetric for solver in self._solvers)
        return self._whole.symmetric

    def like(self) -> BlockDiagonalSolver:
        return BlockDiagonalSolver(self.bounds, backend=self.backend)

    def _is_block_diagonal(self, A: sp.csr_matrix) -> bool:
        key = (A.indptr, A.indices)
        if self._pattern is None or self._pattern[0] is not key[0] or self._pattern[1] is not key[1]:
            rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
            block_of = np.searchsorted(self.bounds, np.arange(A.shape[0]), side="right") - 1
            self._block_diagonal = bool(np.array_equal(block_of[rows], block_of[A.indices]))
            self._pattern = key
        return self._block_diagonal

    def factorize(self, A) -> None:
        A = A.tocsr()
        self.matrix = None
        if A.shape[0] != self.bounds[-1] or not self._is_block_diagonal(A):
            self._whole.factorize(A)
        else:
            for solver, lo, hi in zip(self._solvers, self.bounds[:-1], self.bounds[1:]):
                solver.factorize(A[lo:hi, lo:hi])
        self.matrix = A

    def solve(self, b) -> np.ndarray:
        return self._blockwise(b, transposed=False)

    def solve_transposed(self, b) -> np.ndarray:
        """Solve ``A^T x = b`` with the factorizations of the last ``A``."""
        return self._blockwise(b, transposed=True)

    def _blockwise(self, b, *, transposed: bool) -> np.ndarray:
        b = np.asarray(b, dtype=np.float64)
        if not self._block_diagonal or self.matrix.shape[0] != self.bounds[-1]:
            return self._whole.solve_transposed(b) if transposed else self._whole.solve(b)
        x = np.zeros_like(b)
        for solver, lo, hi in zip(self._solvers, self.bounds[:-1], self.bounds[1:]):
            solve = solver.solve_transposed if transposed else solver.solve
            part = b[lo:hi]
            if b.ndim == 1:
                x[lo:hi] = solve(part)
                continue
            columns = np.flatnonzero(np.any(part != 0.0, axis=0))  # the rows of J that touch this block
            if columns.size:
                x[lo:hi, columns] = solve(np.ascontiguousarray(part[:, columns]))
        return x

    def close(self) -> None:
        for solver in (*self._solvers, self._whole):
            solver.close()
        self.matrix = None
