"""The GMRES of benchmarks/bench_newton_krylov.py (the Newton-Krylov route it measures) against a direct solve."""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_newton_krylov import KeptFactorizationGMRES, block_gmres  # noqa: E402


def _unsymmetric_system(n=200, seed=0):
    """A sparse, diagonally dominant, unsymmetric matrix and two right-hand sides."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.03, random_state=seed, format="csr") + sp.diags(np.full(n, 4.0))
    return sp.csr_matrix(A), rng.standard_normal((n, 2))


def test_gmres_with_a_poor_preconditioner_matches_a_direct_solve():
    A, B = _unsymmetric_system()
    diagonal = A.diagonal()
    X, iterations, converged = block_gmres(A, B, lambda R: R / diagonal[:, None], tolerance=1e-10,
                                           max_iterations=60)
    exact = spla.spsolve(A.tocsc(), B)
    assert converged
    assert np.max(np.abs(X - exact)) / np.max(np.abs(exact)) < 1e-9
    assert np.all(iterations > 3)  # the diagonal is a poor preconditioner: it takes several iterations
    assert np.all(np.linalg.norm(B - A @ X, axis=0) <= 1e-10 * np.linalg.norm(B, axis=0))


def test_gmres_preconditioned_by_the_matrix_itself_takes_one_iteration():
    A, B = _unsymmetric_system(seed=1)
    lu = spla.splu(A.tocsc())
    X, iterations, converged = block_gmres(A, B, lu.solve, tolerance=1e-12, max_iterations=10)
    assert converged and list(iterations) == [1, 1]
    assert np.allclose(X, lu.solve(B), rtol=0, atol=1e-12)


def test_gmres_stops_at_its_limit_and_says_so():
    A, B = _unsymmetric_system(seed=2)
    X, iterations, converged = block_gmres(A, B, lambda R: R, tolerance=1e-14, max_iterations=2)
    assert not converged and list(iterations) == [2, 2]


def test_the_kept_factorization_solver_solves_a_changed_matrix_to_its_tolerance():
    A, B = _unsymmetric_system(seed=3)
    solver = KeptFactorizationGMRES(max_iterations=20)
    solver.factorize(A)
    first = solver.solve(B[:, 0])
    assert np.linalg.norm(A @ first - B[:, 0]) <= 1e-8 * np.linalg.norm(B[:, 0])
    changed = sp.csr_matrix(A + sp.diags(np.full(A.shape[0], 0.3)))  # the next Newton step's tangent
    solver.factorize(changed)
    second = solver.solve(B, tolerance=1e-10)
    assert solver.stats["kept_factorizations"] == 1  # the first matrix's factorization preconditioned it
    assert np.all(np.linalg.norm(B - changed @ second, axis=0) <= 1e-10 * np.linalg.norm(B, axis=0))
    solver.close()
