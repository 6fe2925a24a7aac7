"""BlockDiagonalSolver: one direct factorization per body, checked against one factorization of the whole
matrix (SciPy's LU), and the dynamic step of a three-body scene against the single direct solver."""

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.block_solver import BlockDiagonalSolver
from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.scene_runtime import Scene

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"


def _spd(n: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.1, random_state=rng)
    return (A @ A.T + n * sp.identity(n)).tocsr()


def test_block_solves_equal_the_whole_solve_and_skip_untouched_blocks():
    A = sp.block_diag([_spd(30, 1), _spd(20, 2), _spd(25, 3)], format="csr")
    solver = BlockDiagonalSolver([0, 30, 50, 75])
    solver.factorize(A)
    rng = np.random.default_rng(4)
    B = np.zeros((75, 4))
    B[:30, 0] = rng.standard_normal(30)  # touches block 0 only
    B[50:, 1] = rng.standard_normal(25)  # block 2 only
    B[:, 2] = rng.standard_normal(75)  # every block
    X = solver.solve(B)
    np.testing.assert_allclose(X, spla.spsolve(A.tocsc(), B), atol=1e-12)
    assert np.all(X[30:, 0] == 0.0) and np.all(X[:50, 1] == 0.0) and np.all(X[:, 3] == 0.0)
    b = rng.standard_normal(75)
    np.testing.assert_allclose(solver.solve(b), spla.spsolve(A.tocsc(), b), atol=1e-12)
    # each block solved only the columns that touch it: columns 0 and 2, column 2, columns 1 and 2 (5, not 3 x 4),
    # then b on each block; one factorization per block
    assert solver.stats["right_hand_sides"] == 5 + 3 and solver.stats["factorizations"] == 3


def test_a_coupled_matrix_is_factorized_whole():
    A = sp.block_diag([_spd(10, 5), _spd(10, 6)], format="lil")
    A[0, 15] = A[15, 0] = 0.5  # a coupling between the blocks
    A = A.tocsr()
    solver = BlockDiagonalSolver([0, 10, 20])
    solver.factorize(A)
    b = np.random.default_rng(7).standard_normal(20)
    np.testing.assert_allclose(solver.solve(b), spla.spsolve(A.tocsc(), b), atol=1e-12)
    assert solver.stats["factorizations"] == 1  # the whole matrix, once (not one per block)


def test_three_body_dynamic_scene_matches_the_single_direct_solver():
    """gripper_object (two fingers and a glued cube, 221 rows): 8 steps with one factorization per body and
    with one of the whole H give the same positions to 1e-9 mm."""
    per_body = Scene.load(SCENES / "gripper_object.toml")
    whole = Scene.load(SCENES / "gripper_object.toml")
    assert isinstance(per_body.simulation.dynamic_solver.linear_solver, BlockDiagonalSolver)
    whole.simulation.dynamic_solver.linear_solver = DirectSolver()
    for _ in range(8):
        assert per_body.step().converged and whole.step().converged
    assert np.max(np.abs(per_body.simulation.x - whole.simulation.x)) <= 1e-9
