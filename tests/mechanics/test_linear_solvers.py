"""Linear solvers: direct (Pardiso, SciPy), CG with Caribou's semantics, factorization reuse.

Pardiso's tests are skipped where pypardiso is not installed (it is only on x86_64); the backend-specific checks
of the Newton solver (one symbolic analysis per solve) are here too, so that the Newton tests run on either
backend."""

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers import (
    CGSolver,
    DirectSolver,
    LinearSolverError,
    ReusedFactorizationSolver,
    make_linear_solver,
)

#: pypardiso (MKL) is installed only on x86_64; elsewhere DirectSolver falls back to SciPy
HAS_PARDISO = importlib.util.find_spec("pypardiso") is not None
needs_pardiso = pytest.mark.skipif(not HAS_PARDISO, reason="pypardiso is not installed (x86_64 only)")
BACKENDS = [pytest.param("pardiso", marks=needs_pardiso), "scipy"]


def random_spd(n=400, density=0.01, shift=1.0, seed=0):
    B = sp.random(n, n, density=density, random_state=seed, format="csr")
    return (B @ B.T + shift * sp.eye(n)).tocsr()


def laplacian_3d(m=8):
    """SPD 7-point Laplacian on an m^3 grid (condition number ~ m^2: CG needs many iterations)."""
    one_d = sp.diags([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    eye = sp.eye(m)
    return (sp.kron(sp.kron(one_d, eye), eye) + sp.kron(sp.kron(eye, one_d), eye)
            + sp.kron(sp.kron(eye, eye), one_d)).tocsr()  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_matches_dense_solve(backend):
    A = random_spd()
    rng = np.random.default_rng(1)
    b = rng.standard_normal(A.shape[0])
    solver = DirectSolver(backend=backend)
    solver.factorize(A)
    x = solver.solve(b)
    reference = np.linalg.solve(A.toarray(), b)
    error = np.abs(x - reference).max() / np.abs(reference).max()
    assert x.shape == b.shape
    assert error < 1e-10


@pytest.mark.parametrize("backend", BACKENDS)
def test_multiple_right_hand_sides_equal_column_solves(backend):
    A = random_spd(seed=3)
    B = np.random.default_rng(2).standard_normal((A.shape[0], 7))
    solver = DirectSolver(backend=backend)
    solver.factorize(A)
    X = solver.solve(B)
    columns = np.stack([solver.solve(B[:, k]) for k in range(B.shape[1])], axis=1)
    assert X.shape == B.shape
    assert np.abs(X - columns).max() < 1e-12 * np.abs(X).max()
    assert np.abs(A @ X - B).max() < 1e-10 * np.abs(B).max()
    assert solver.stats["solves"] == 1 + B.shape[1]
    assert solver.stats["right_hand_sides"] == 2 * B.shape[1]


@needs_pardiso
def test_pardiso_reuses_symbolic_analysis_for_same_pattern():
    A = random_spd(seed=4)
    solver = DirectSolver(backend="pardiso")
    solver.factorize(A)
    assert (solver.stats["analyses"], solver.stats["factorizations"]) == (1, 1)
    A.data *= 3.0  # same CSR object, new values
    solver.factorize(A)
    other_values = A.copy()  # equal pattern in new arrays
    other_values.data += 0.5 * (other_values.indices == np.repeat(np.arange(A.shape[0]), np.diff(A.indptr)))
    solver.factorize(other_values)
    assert (solver.stats["analyses"], solver.stats["factorizations"]) == (1, 3)
    b = np.ones(A.shape[0])
    assert np.abs(other_values @ solver.solve(b) - b).max() < 1e-10
    solver.factorize(random_spd(seed=5))  # new pattern: analyse again
    assert solver.stats["analyses"] == 2
    solver.close()
    with pytest.raises(LinearSolverError, match="before a successful factorize"):
        solver.solve(b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_indefinite_matrix_is_solved_with_ldlt(backend):
    A = (random_spd(seed=6) - 2.0 * sp.eye(400)).tocsr()  # symmetric, eigenvalues of both signs
    eigenvalues = np.linalg.eigvalsh(A.toarray())
    assert eigenvalues.min() < 0 < eigenvalues.max()
    b = np.random.default_rng(7).standard_normal((400, 2))
    solver = DirectSolver(backend=backend)
    solver.factorize(A)
    residual = np.abs(A @ solver.solve(b) - b).max()
    assert residual < 1e-9
    if backend == "pardiso":
        assert solver.matrix_type == "symmetric indefinite"
        assert solver.stats["spd_fallbacks"] == 1
        assert solver.stats["negative_eigenvalues"] == int(np.sum(eigenvalues < 0))


def test_singular_matrix_is_reported():
    A = sp.csr_matrix(np.diag(np.r_[np.ones(9), 0.0]))
    solver = DirectSolver(backend="scipy")
    with pytest.raises(LinearSolverError, match="singular"):
        solver.factorize(A)


@needs_pardiso
def test_pardiso_perturbs_the_pivot_of_a_singular_matrix():
    A = sp.csr_matrix(np.diag(np.r_[np.ones(9), 0.0]))
    pardiso = DirectSolver(backend="pardiso")
    pardiso.factorize(A)
    assert pardiso.stats["perturbed_pivots"] == 1


@needs_pardiso
def test_a_newton_solve_analyses_the_pattern_once_with_pardiso():
    """The Newton iterations hand Pardiso tangents of one sparsity pattern: one symbolic analysis for the whole
    solve, one numerical factorization per iteration."""
    from softsim.mechanics.newton import StaticNewtonSolver
    from tests.mechanics.test_newton_fem import beam_problem

    X, _, _tip, _, problem = beam_problem((20, 2, 2), 10.0, 1.0, "neohookean", 1000.0, 0.3, (0.0, 0.0, -0.3))
    solver = StaticNewtonSolver(linear_solver=DirectSolver(backend="pardiso"), newton_iterations=15,
                                residual_tolerance_threshold=1e-10, correction_tolerance_threshold=0)
    report = solver.solve(problem, X)
    assert report.converged
    stats = solver.linear_solver.stats
    assert stats["analyses"] == 1 + stats.get("spd_fallbacks", 0) and stats.get("spd_fallbacks", 0) <= 1
    assert stats["factorizations"] == report.iterations


@pytest.mark.parametrize(
    "method", ["None", "Identity", "Diagonal", "IncompleteCholesky", "LastFactorization"]
)
def test_cg_converges_with_each_preconditioner(method):
    A = laplacian_3d()
    b = np.random.default_rng(8).standard_normal(A.shape[0])
    solver = CGSolver(maximum_number_of_iterations=500, residual_tolerance_threshold=1e-10,
                      preconditioning_method=method)  # fmt: skip
    solver.factorize(A)
    x = solver.solve(b)
    relative = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    assert solver.converged
    assert relative < 1e-10 * 1.0001
    assert len(solver.squared_residuals) == solver.iterations
    assert solver.squared_rhs_norm == pytest.approx(b @ b)
    # the recorded residual of the last iteration is the true residual (up to recurrence drift)
    assert np.sqrt(solver.squared_residuals[-1]) == pytest.approx(
        np.linalg.norm(b - A @ x), rel=1e-3, abs=1e-12
    )
    if method == "IncompleteCholesky":
        assert solver.iterations < 15
    if method == "LastFactorization":
        assert solver.iterations <= 2


def test_cg_stopping_rule_is_relative_to_rhs_norm():
    A = laplacian_3d()
    b = np.random.default_rng(9).standard_normal(A.shape[0])
    iterations = []
    for scale in (1.0, 1e6):
        solver = CGSolver(maximum_number_of_iterations=500, residual_tolerance_threshold=1e-4)
        solver.factorize(A)
        solver.solve(scale * b)
        ratios = np.sqrt(np.array(solver.squared_residuals) / solver.squared_rhs_norm)
        # stops at the first iteration with |r_k|/|b| < 1e-4, not before
        assert ratios[-1] < 1e-4 and np.all(ratios[:-1] >= 1e-4)
        iterations.append(solver.iterations)
    assert iterations[0] == iterations[1]  # scale invariant
    # at most maximum_number_of_iterations, reported as not converged
    capped = CGSolver(maximum_number_of_iterations=3)
    capped.factorize(A)
    capped.solve(b)
    assert capped.iterations == 3 and not capped.converged
    # zero right-hand side returns zero without iterating (Caribou)
    assert np.all(capped.solve(np.zeros(A.shape[0])) == 0.0) and capped.iterations == 0


def test_cg_warm_start_and_multiple_rhs():
    A = laplacian_3d(6)
    rng = np.random.default_rng(10)
    B = rng.standard_normal((A.shape[0], 3))
    solver = CGSolver(maximum_number_of_iterations=300, residual_tolerance_threshold=1e-10,
                      preconditioning_method="Diagonal")  # fmt: skip
    solver.factorize(A)
    X = solver.solve(B)
    assert np.abs(A @ X - B).max() < 1e-8
    exact = np.linalg.solve(A.toarray(), B[:, 0])
    solver.solve(B[:, 0])
    cold_iterations = solver.iterations
    solver.solve(B[:, 0], x0=exact + 1e-9 * rng.standard_normal(A.shape[0]))
    assert solver.converged and solver.iterations < cold_iterations / 3


@pytest.mark.parametrize("method", ["Identity", "Diagonal"])
def test_cg_with_a_tolerance_below_the_float_range_stops_instead_of_dividing_by_zero(method):
    """``residual_tolerance_threshold = 1e-300`` squares to 0: a residual whose square underflows (here the warm
    start's, 1e-170) made r^T z = 0 and the next direction 0 / 0 (ZeroDivisionError); a zero squared residual is
    converged, and a vanishing r^T z ends the iteration."""
    A = (1e100 * sp.eye(3)).tocsr()
    b = np.array([1e-160, 2e-160, 3e-160])
    solver = CGSolver(maximum_number_of_iterations=10**12, residual_tolerance_threshold=1e-300,
                      preconditioning_method=method)
    solver.factorize(A)
    x = solver.solve(b, x0=b / 1e100 * (1.0 + 1e-10))
    assert solver.converged and solver.iterations == 0
    np.testing.assert_allclose(x, b / 1e100, rtol=1e-9)
    # from zero: the iteration ends once the residual cannot decrease any more, not after 10^12 iterations
    solver = CGSolver(maximum_number_of_iterations=10**12, residual_tolerance_threshold=1e-300,
                      preconditioning_method=method)
    solver.factorize(laplacian_3d(4))
    rhs = np.ones(64)
    x = solver.solve(rhs)
    assert solver.iterations < 1000
    np.testing.assert_allclose(laplacian_3d(4) @ x, rhs, atol=1e-12)


def test_reused_factorization_refactors_only_when_needed():
    A = laplacian_3d(6)
    b = np.ones(A.shape[0])
    solver = ReusedFactorizationSolver(
        residual_tolerance_threshold=1e-10, refactorization_iteration_threshold=5
    )
    solver.factorize(A)
    solver.solve(b)
    assert solver.stats["refactorizations"] == 1 and solver.iterations <= 1
    near = (A + 1e-3 * sp.eye(A.shape[0])).tocsr()  # a slightly changed tangent: old factor still good
    solver.factorize(near)
    x = solver.solve(b)
    assert solver.stats["refactorizations"] == 1 and 1 <= solver.iterations <= 5
    assert np.linalg.norm(near @ x - b) < 1e-10 * np.linalg.norm(b)
    far = (A + 2.0 * sp.diags(np.linspace(0, 5, A.shape[0]))).tocsr()
    solver.factorize(far)
    x = solver.solve(b)
    assert solver.stats["refactorizations"] == 2
    assert np.linalg.norm(far @ x - b) < 1e-10 * np.linalg.norm(b)


def test_parameter_validation():
    with pytest.raises(ParameterError, match="maximum_number_of_iterations must be >= 1"):
        CGSolver(maximum_number_of_iterations=0)
    with pytest.raises(ParameterError, match="residual_tolerance_threshold"):
        CGSolver(residual_tolerance_threshold=-1.0)
    with pytest.raises(ParameterError, match="preconditioning_method"):
        CGSolver(preconditioning_method="Jacobi")
    assert CGSolver(preconditioning_method="diagonal").preconditioning_method == "Diagonal"
    assert CGSolver(preconditioning_method=None).preconditioning_method == "None"
    with pytest.raises(ParameterError, match="backend"):
        DirectSolver(backend="mumps")
    with pytest.raises(ParameterError, match="square"):
        DirectSolver().factorize(sp.csr_matrix(np.ones((2, 3))))
    solver = DirectSolver()
    solver.factorize(random_spd(20, 0.2))
    with pytest.raises(ParameterError, match="right-hand side"):
        solver.solve(np.ones(21))
    assert isinstance(make_linear_solver("cg", maximum_number_of_iterations=4), CGSolver)
    with pytest.raises(ParameterError, match="linear solver kind"):
        make_linear_solver("lu")


def random_unsymmetric(n=300, seed=3):
    """A structurally symmetric, numerically unsymmetric, non-singular matrix (like the consistent Jacobian of
    SOFA's corotational force: an SPD part plus an unsymmetric perturbation on the same pattern)."""
    A = random_spd(n, seed=seed)
    perturbation = A.copy()
    perturbation.data = np.random.default_rng(seed).uniform(-0.3, 0.3, A.nnz) * np.abs(A.data)
    return (A + perturbation).tocsr()


@pytest.mark.parametrize("backend", BACKENDS)
def test_unsymmetric_matrix_is_factorized_as_general(backend):
    A = random_unsymmetric()
    assert np.abs((A - A.T).toarray()).max() > 0.01 * np.abs(A.toarray()).max()
    b = np.random.default_rng(4).standard_normal((A.shape[0], 3))
    solver = DirectSolver(backend=backend)
    solver.factorize(A)
    x = solver.solve(b)
    reference = np.linalg.solve(A.toarray(), b)
    assert not solver.symmetric
    assert np.abs(x - reference).max() <= 1e-10 * np.abs(reference).max()
    if backend == "pardiso":
        assert solver.matrix_type == "unsymmetric"
    # the same solver then takes a symmetric matrix of the same pattern again, with Cholesky
    S = random_spd(A.shape[0], seed=3)
    solver.factorize(S)
    assert solver.symmetric
    assert np.abs(solver.solve(b) - np.linalg.solve(S.toarray(), b)).max() <= 1e-10 * np.abs(
        np.linalg.solve(S.toarray(), b)).max()
    if backend == "pardiso":
        assert solver.matrix_type == "spd"


def test_relative_asymmetry_and_transpose_map():
    from softsim.mechanics.linear_solvers import relative_asymmetry, transpose_map

    A = random_unsymmetric(50, seed=5)
    dense = A.toarray()
    expected = np.abs(dense - dense.T).max() / np.abs(dense).max()
    assert relative_asymmetry(A) == pytest.approx(expected, rel=1e-14)
    assert relative_asymmetry(random_spd(50, seed=5)) == 0.0
    upper = sp.triu(A, format="csr")  # an unsymmetric pattern has no transpose map
    assert transpose_map(upper) is None and relative_asymmetry(upper) == np.inf
    broken = A.copy()
    broken.data[7] = np.nan  # a runaway state's tangent: not finite, never measured as symmetric
    assert relative_asymmetry(broken) == np.inf


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_tangent_with_a_non_finite_entry_is_refused_before_the_factorization(value):
    from softsim.mechanics.linear_solvers import DirectSolver

    for A in (random_spd(30, seed=2), random_unsymmetric(30, seed=2)):
        A = A.tocsr()
        A.data[A.data.size // 2] = value
        with pytest.raises(LinearSolverError, match="non-finite"):
            DirectSolver().factorize(A)


def _every_solver():
    from softsim.mechanics.async_preconditioner import AsyncPreconditionedSolver
    from softsim.mechanics.block_solver import BlockDiagonalSolver

    return [DirectSolver(backend="scipy"), CGSolver(preconditioning_method="Diagonal",
                                                     residual_tolerance_threshold=1e-12,
                                                     maximum_number_of_iterations=500),
            ReusedFactorizationSolver(residual_tolerance_threshold=1e-12),
            AsyncPreconditionedSolver(residual_tolerance_threshold=1e-10, background=False),
            BlockDiagonalSolver([0, 200, 400], backend="scipy")]


@pytest.mark.parametrize("index", range(5), ids=["direct", "cg", "reused", "async", "block"])
def test_every_solver_implements_the_protocol_and_its_copy_solves_alike(index):
    """Each solver is a LinearSolver with declared capabilities; ``like()`` gives an unfactorized solver of the same
    kind that solves the same SPD system (400 unknowns) to 1e-8 of the exact solution, as the original does; a
    solver that declares ``direct`` solves A^T x = b too (here an unsymmetric A, to 1e-10)."""
    from softsim.mechanics.linear_solvers import LinearSolver

    solver = _every_solver()[index]
    assert isinstance(solver, LinearSolver)
    A = random_spd(seed=3)
    b = np.random.default_rng(3).standard_normal(400)
    exact = np.linalg.solve(A.toarray(), b)
    copy = solver.like()
    assert type(copy) is type(solver) and copy is not solver and not copy.is_factorized
    for each in (solver, copy):
        each.factorize(A)
        assert each.is_factorized and each.symmetric
        np.testing.assert_allclose(each.solve(b), exact, rtol=1e-8, atol=1e-8 * np.abs(exact).max())
    if solver.capabilities.direct:
        U = (A + sp.triu(sp.random(400, 400, density=0.005, random_state=4), k=1)).tocsr()
        solver.factorize(U)
        assert not solver.symmetric
        np.testing.assert_allclose(solver.solve_transposed(b), np.linalg.solve(U.toarray().T, b), rtol=1e-10,
                                   atol=1e-10)
    for each in (solver, copy):
        each.close()


def test_capabilities_say_what_each_solver_can_do():
    """The capabilities that callers branch on instead of classes: CG reports its iterations, the asynchronous
    preconditioner takes a per-call tolerance, factorizes in a thread and solves unsymmetric matrices (GMRES), the
    direct solvers factorize unsymmetric matrices."""
    direct, cg, reused, asynchronous, block = _every_solver()
    assert direct.capabilities.direct and direct.capabilities.unsymmetric and not direct.capabilities.iterative
    assert cg.capabilities.iterative and reused.capabilities.iterative and not cg.capabilities.unsymmetric
    assert asynchronous.capabilities.inexact and asynchronous.capabilities.background
    assert asynchronous.capabilities.unsymmetric and not asynchronous.capabilities.direct
    assert block.capabilities.direct and not block.capabilities.background


def test_no_module_branches_on_a_solver_class():
    """Callers ask a solver's capabilities: no ``isinstance(..., <solver class>)`` outside the solvers' own
    modules."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    pattern = re.compile(r"isinstance\([^)]*\b(DirectSolver|CGSolver|ReusedFactorizationSolver|"
                         r"AsyncPreconditionedSolver|BlockDiagonalSolver)\b")
    offenders = [str(path.relative_to(root)) for folder in ("mechanics", "app")
                 for path in (root / folder).rglob("*.py")
                 if "linear_solvers" not in path.parts and pattern.search(path.read_text())]
    assert offenders == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_transposed_solve_with_each_backend(backend):
    """The adjoint's A^T x = b with an unsymmetric A's factorization (40 x 40, three right-hand sides), per
    backend, to 1e-12."""
    rng = np.random.default_rng(3)
    A = sp.csr_matrix(sp.random(40, 40, density=0.2, random_state=4) + 6.0 * sp.eye(40))
    solver = DirectSolver(backend=backend)
    solver.factorize(A)
    assert not solver.symmetric
    b = rng.standard_normal((40, 3))
    assert np.abs(A.T @ solver.solve_transposed(b) - b).max() < 1e-12
