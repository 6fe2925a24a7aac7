"""The kept-factorization solver of benchmarks/bench_newton_krylov.py (the Newton-Krylov route it measures)."""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_newton_krylov import KeptFactorizationGMRES  # noqa: E402


def _unsymmetric_system(n=200, seed=0):
    """A sparse, diagonally dominant, unsymmetric matrix and two right-hand sides."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.03, random_state=seed, format="csr") + sp.diags(np.full(n, 4.0))
    return sp.csr_matrix(A), rng.standard_normal((n, 2))


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
