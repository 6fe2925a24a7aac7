"""The adjoint's solve A^-T B through a factorization of a nearby matrix (mechanics.sensitivity.adjoint.
TransposedSolve), against a direct solve with A itself."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.sensitivity.adjoint import TransposedSolve


def _laplacian(n: int) -> sp.csr_matrix:
    """A 1-D chain of springs fixed at one end: SPD, its smallest eigenvalue about (pi / 2n)^2 (soft modes)."""
    main = np.full(n, 2.0)
    main[-1] = 1.0
    return sp.diags([main, -np.ones(n - 1), -np.ones(n - 1)], [0, 1, -1], format="csr")


def _nearby(A: sp.csr_matrix, size: float, seed: int) -> DirectSolver:
    """A factorization of A with every stored entry moved by up to ``size`` of the largest (a tangent one Newton
    step away), its pattern (and symmetry) kept."""
    rng = np.random.default_rng(seed)
    M = A.copy()
    M.data = M.data * (1.0 + size * rng.uniform(-1.0, 1.0, M.nnz))
    M = sp.csr_matrix(0.5 * (M + M.T)) if (abs(A - A.T) > 0).nnz == 0 else M
    solver = DirectSolver()
    solver.factorize(M.tocsr())
    return solver


def test_a_nearby_factorization_gives_a_to_1e_8():
    """A chain of 400 springs (condition number about 2.6e5) and a factorization of it with entries 1e-4 apart:
    one solve is off by about 1e-2 on the soft modes; the projection on the solved blocks reaches the direct solve
    of A^T to 1e-8 of each column in five solves (measured 4e-11)."""
    A = _laplacian(400)
    B = np.random.default_rng(0).normal(size=(400, 3))
    exact = spla.spsolve(A.T.tocsc(), B)
    solve = TransposedSolve(A, _nearby(A, 1e-4, 1))
    assert solve.reused
    first = solve.solver.solve_transposed(B)
    assert np.max(np.linalg.norm(first - exact, axis=0) / np.linalg.norm(exact, axis=0)) > 1e-3
    Y = solve.solve(B)
    assert solve.reused and 1 <= solve.refinements <= 4
    np.testing.assert_array_less(np.linalg.norm(Y - exact, axis=0) / np.linalg.norm(exact, axis=0), 1e-8)


def test_an_unsymmetric_matrix_and_a_zero_column():
    """The same with a chain made unsymmetric (a follower term) and a right-hand side with a zero column."""
    A = (_laplacian(300) + sp.diags([0.3 * np.ones(299)], [1])).tocsr()
    B = np.random.default_rng(2).normal(size=(300, 3))
    B[:, 1] = 0.0
    exact = spla.spsolve(A.T.tocsc(), B)
    solve = TransposedSolve(A, _nearby(A, 1e-4, 3))
    Y = solve.solve(B)
    assert solve.reused
    assert np.all(Y[:, 1] == 0.0)
    for k in (0, 2):
        assert np.linalg.norm(Y[:, k] - exact[:, k]) <= 1e-8 * np.linalg.norm(exact[:, k])


def test_a_factorization_of_a_itself_takes_one_solve():
    A = _laplacian(200)
    solver = DirectSolver()
    solver.factorize(A)
    B = np.random.default_rng(4).normal(size=(200, 2))
    solve = TransposedSolve(A, solver)
    Y = solve.solve(B)
    assert solve.refinements == 0
    np.testing.assert_allclose(Y, spla.spsolve(A.tocsc(), B), rtol=1e-9)


def test_a_factorization_too_far_from_a_is_replaced_by_one_of_a():
    """Entries 30 % apart: the projection's updates stop shrinking, so A is factorized and solved once."""
    A = _laplacian(300)
    B = np.random.default_rng(5).normal(size=(300, 2))
    solve = TransposedSolve(A, _nearby(A, 0.3, 6))
    Y = solve.solve(B)
    assert not solve.reused
    exact = spla.spsolve(A.tocsc(), B)
    assert np.max(np.linalg.norm(Y - exact, axis=0) / np.linalg.norm(exact, axis=0)) < 1e-8


def test_the_infinity_norm_of_the_backward_error_against_scipy():
    """The largest absolute row sum (infinity_norm) against scipy's norm of the same matrix, with rows that have
    no entries (a fixed DOF's row in a matrix assembled on every DOF), negative entries and an empty matrix."""
    from softsim.mechanics.sensitivity.adjoint import infinity_norm

    for seed in range(20):
        rng = np.random.default_rng(seed)
        A = sp.random(60, 60, density=0.08, random_state=seed, format="csr")
        A.data = rng.uniform(-3.0, 3.0, A.nnz)
        A = sp.csr_matrix(sp.diags(rng.integers(0, 2, 60).astype(float)) @ A)  # about half the rows emptied
        A.eliminate_zeros()
        assert np.diff(A.indptr).min() == 0
        expected = spla.norm(A, np.inf)
        assert abs(infinity_norm(A) - expected) <= 1e-14 * expected
    assert infinity_norm(_laplacian(5)) == 4.0  # |-1| + 2 + |-1| in the inner rows
    assert infinity_norm(sp.csr_matrix((4, 4))) == 0.0
