"""Static Newton solver on a nonlinear spring network with analytic energy, force and tangent."""

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers import CGSolver, DirectSolver, ReusedFactorizationSolver
from softsim.mechanics.loads import NodalForce
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.static_problem import StaticProblem


class SpringNetwork:
    """Springs with energy ``k/2 (l-L)^2 + c/4 (l-L)^4`` per edge: analytic energy, force, tangent.

    Same interface as TetElasticity: ``energy(x)``, ``forces(x) = -dE/dx``, ``tangent(x) = d2E/dx2`` (csr,
    the same object every call), ``forces_and_tangent(x)``. ``nan_above`` makes forces NaN when a spring
    stretches beyond that length (to test divergence reporting).
    """

    def __init__(self, X, edges, stiffness=1.0, cubic=0.0, nan_above=None):
        self.X = np.asarray(X, dtype=float)
        self.edges = np.asarray(edges, dtype=np.int64)
        self.rest_lengths = np.linalg.norm(self.X[self.edges[:, 1]] - self.X[self.edges[:, 0]], axis=1)
        self.stiffness, self.cubic, self.nan_above = stiffness, cubic, nan_above
        n_dofs = 3 * self.X.shape[0]
        dofs = 3 * self.edges[:, :, None] + np.arange(3)  # (s, 2, 3)
        block_dofs = dofs.reshape(-1, 6)
        rows = np.repeat(block_dofs, 6, axis=1).reshape(-1)
        cols = np.tile(block_dofs, (1, 6)).reshape(-1)
        pattern = sp.csr_matrix((np.arange(rows.size) + 1.0, (rows, cols)), shape=(n_dofs, n_dofs))
        pattern.sum_duplicates()
        pattern.sort_indices()
        # scatter map: position in pattern.data of each (row, col) contribution
        keys = rows * n_dofs + cols
        pattern_rows = np.repeat(np.arange(n_dofs), np.diff(pattern.indptr))
        pattern_keys = pattern_rows * n_dofs + pattern.indices
        self._scatter = np.searchsorted(pattern_keys, keys)
        self._matrix = pattern

    def _geometry(self, x):
        d = x[self.edges[:, 1]] - x[self.edges[:, 0]]
        length = np.linalg.norm(d, axis=1)
        stretch = length - self.rest_lengths
        return d, length, stretch

    def energy(self, x):
        _, _, s = self._geometry(x)
        return float(np.sum(self.stiffness / 2 * s**2 + self.cubic / 4 * s**4))

    def forces(self, x):
        d, length, s = self._geometry(x)
        tension = self.stiffness * s + self.cubic * s**3
        if self.nan_above is not None:
            tension = np.where(length > self.nan_above, np.nan, tension)
        pull = (tension / length)[:, None] * d
        f = np.zeros_like(x)
        np.add.at(f, self.edges[:, 0], pull)
        np.add.at(f, self.edges[:, 1], -pull)
        return f

    def tangent(self, x):
        d, length, s = self._geometry(x)
        n = d / length[:, None]
        tension = self.stiffness * s + self.cubic * s**3
        axial = self.stiffness + 3 * self.cubic * s**2
        nn = n[:, :, None] * n[:, None, :]
        block = axial[:, None, None] * nn + (tension / length)[:, None, None] * (np.eye(3) - nn)
        local = np.block([[block, -block], [-block, block]])  # (s, 6, 6)
        self._matrix.data[:] = np.bincount(
            self._scatter, weights=local.reshape(-1), minlength=self._matrix.nnz
        )
        return self._matrix

    def forces_and_tangent(self, x):
        return self.forces(x), self.tangent(x)


def lattice(nx=6, ny=2, nz=2, spacing=1.0):
    """Cubic lattice of nodes with edges to all neighbours within one cell (faces and body diagonals)."""
    grid = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), -1).reshape(
        -1, 3
    )
    X = grid * spacing
    distance = np.linalg.norm(grid[:, None, :] - grid[None, :, :], axis=2)
    i, j = np.nonzero((distance > 0) & (distance < 1.8))
    edges = np.stack([i[i < j], j[i < j]], axis=1)
    return X, edges


def cantilever(load, cubic=0.0, nan_above=None, nx=6):
    X, edges = lattice(nx=nx)
    network = SpringNetwork(X, edges, stiffness=1.0, cubic=cubic, nan_above=nan_above)
    fixed = np.flatnonzero(X[:, 0] == 0)
    tip = np.flatnonzero(X[:, 0] == X[:, 0].max())
    problem = StaticProblem(network, fixed_nodes=fixed, loads=[NodalForce(tip, load)])
    return network, problem


def central_difference(function, x, h=1e-6):
    flat = x.reshape(-1)
    columns = []
    for dof in range(flat.size):
        step = np.zeros_like(flat)
        step[dof] = h
        plus = np.asarray(function((flat + step).reshape(x.shape)), dtype=float).reshape(-1)
        minus = np.asarray(function((flat - step).reshape(x.shape)), dtype=float).reshape(-1)
        columns.append((plus - minus) / (2 * h))
    return np.stack(columns, axis=-1)


def test_spring_network_force_and_tangent_match_finite_differences():
    X, edges = lattice(nx=3, ny=2, nz=2)
    network = SpringNetwork(X, edges, stiffness=2.0, cubic=0.7)
    x = X + 0.2 * np.random.default_rng(0).standard_normal(X.shape)
    force_fd = -central_difference(network.energy, x).reshape(x.shape)
    tangent_fd = -central_difference(network.forces, x)
    assert np.abs(network.forces(x) - force_fd).max() < 1e-7
    assert np.abs(network.tangent(x).toarray() - tangent_fd).max() < 1e-7


def test_static_problem_eliminates_fixed_dofs():
    network, problem = cantilever((0.0, 0.3, -1.0))
    x = network.X + 0.05 * np.random.default_rng(1).standard_normal(network.X.shape)
    residual, K_free = problem.system(x)
    K = network.tangent(x).toarray()
    free = problem.free_dofs
    assert problem.n_free == 3 * (network.X.shape[0] - 4)
    assert np.array_equal(free, np.flatnonzero(np.repeat(network.X[:, 0] > 0, 3)))
    assert np.abs(K_free.toarray() - K[np.ix_(free, free)]).max() == 0.0
    f_ext = problem.external_force(x)
    assert np.abs(f_ext.sum(axis=0) - [0.0, 0.3, -1.0]).max() < 1e-15
    assert np.abs(residual - (network.forces(x) + f_ext).reshape(-1)[free]).max() < 1e-14
    # two K_free objects sharing the pattern take turns: the previous one keeps its values
    kept = K_free.toarray()
    K_again = problem.tangent(network.X)
    assert np.array_equal(K_again.indptr, K_free.indptr) and np.array_equal(K_again.indices, K_free.indices)
    assert np.array_equal(K_free.toarray(), kept)
    assert np.abs(K_again.toarray() - network.tangent(network.X).toarray()[np.ix_(free, free)]).max() == 0.0
    assert np.array_equal(problem.tangent(x).toarray(), kept)
    expanded = problem.expand(np.arange(problem.n_free, dtype=float))
    assert np.all(expanded[problem.fixed_nodes] == 0.0)
    assert np.array_equal(expanded.reshape(-1)[free], np.arange(problem.n_free))
    # energy gradient is -residual (conservative nodal load)
    gradient = central_difference(problem.energy, x).reshape(-1)[free]
    assert np.abs(gradient + problem.residual(x)).max() < 1e-7
    with pytest.raises(ParameterError, match="fixed_nodes must lie in"):
        StaticProblem(network, fixed_nodes=[network.X.shape[0]])
    with pytest.raises(ParameterError, match="positions must have shape"):
        problem.residual(np.zeros((3, 3)))


def test_quadratic_convergence_on_spring_network():
    network, problem = cantilever((0.0, 0.0, -10.0))
    x0 = network.X.copy()
    solver = StaticNewtonSolver(newton_iterations=20, correction_tolerance_threshold=-1,
                                residual_tolerance_threshold=1e-12)  # fmt: skip
    report = solver.solve(problem, x0)
    relative = report.relative_residuals
    above_round_off = relative[1:] > 1e-13  # ratios with a round-off-level numerator say nothing
    ratios = (relative[1:] / relative[:-1] ** 2)[above_round_off]
    assert report.converged and not report.diverged
    assert report.reason == "residual below threshold"
    assert relative[-1] < 1e-12
    assert np.all(ratios[-3:] < 2.0)  # quadratic: the error squares at every step near the solution
    assert np.array_equal(x0, network.X)  # input not mutated
    assert report.x is not x0
    assert np.linalg.norm(problem.residual(report.x)) < 1e-12 * np.sqrt(report.squared_initial_residual)
    assert len(report.iteration_times) == report.iterations == len(report.squared_residuals)
    assert all(isinstance(t, int) and t > 0 for t in report.iteration_times)
    assert report.assembly_time > 0 and report.factorization_time > 0 and report.solve_time > 0
    # one factorization per iteration (Pardiso's one symbolic analysis per solve is tested with the backend, in
    # test_linear_solvers.py, so that this test runs on the SciPy fallback too)
    assert solver.linear_solver.stats["factorizations"] == report.iterations
    # the linear solver holds the factorization of the last assembled tangent
    b = np.random.default_rng(2).standard_normal((problem.n_free, 3))
    assert np.abs(solver.last_tangent @ solver.linear_solver.solve(b) - b).max() < 1e-9
    # ... which is the tangent at the start of the last iteration (x_{N-1}), kept although the fused
    # assembly at x_N wrote the problem's other K_free
    last_tangent = solver.last_tangent.toarray()
    previous = StaticNewtonSolver(newton_iterations=report.iterations - 1).solve(problem, x0)
    assert np.abs(problem.tangent(previous.x).toarray() - last_tangent).max() < 1e-12


def test_max_iterations_report_returns_last_iterate():
    network, problem = cantilever((0.0, 0.0, -10.0))
    report = StaticNewtonSolver(newton_iterations=3).solve(problem, network.X)
    assert (report.converged, report.diverged, report.reason) == (False, False, "max iterations reached")
    assert report.iterations == 3 and len(report.squared_residuals) == 3
    assert np.abs(report.x - network.X).max() > 0.1  # the state moved: accepted by the caller


def test_nan_force_reports_divergence_and_keeps_input():
    network, problem = cantilever((0.0, 0.0, -3.0), nan_above=3.0)
    x0 = network.X.copy()
    report = StaticNewtonSolver(backtrack_invalid_steps=False).solve(problem, x0)  # Caribou's plain Newton
    assert report.diverged and not report.converged
    assert report.reason == "NaN in residual"
    assert report.iterations == 1
    assert np.array_equal(report.x, x0) and report.x is not x0
    assert np.array_equal(x0, network.X)
    # the backtracking line search rejects the NaN step and reaches the equilibrium
    searched = StaticNewtonSolver(line_search=True, backtrack_invalid_steps=False).solve(problem, x0)
    assert searched.converged and searched.line_search_steps[0] < 1.0
    # so does the default safeguard, which switches the line search on at the NaN step
    guarded = StaticNewtonSolver().solve(problem, x0)
    assert guarded.converged and guarded.backtracks[0][0] == 1 and guarded.backtracks[0][2] == "NaN in residual"
    assert 0.0 < guarded.backtracks[0][1] < 1.0
    assert np.allclose(guarded.x, searched.x, rtol=0, atol=1e-9)


def test_safeguard_fails_when_no_step_length_is_valid():
    class DefinedAtRestOnly(SpringNetwork):
        def forces(self, x):
            return super().forces(x) if np.array_equal(x, self.X) else np.full(x.shape, np.nan)

    X, edges = lattice()
    network = DefinedAtRestOnly(X, edges)
    problem = StaticProblem(network, fixed_nodes=np.flatnonzero(X[:, 0] == 0),
                            loads=[NodalForce(np.flatnonzero(X[:, 0] == X[:, 0].max()), (0.0, 0.0, -1.0))])
    report = StaticNewtonSolver(maximum_line_search_iterations=4).solve(problem, network.X)
    assert report.diverged and report.iterations == 1
    assert report.reason == "NaN in residual at every step length down to 0.0625"
    assert np.array_equal(report.x, network.X)


def test_residual_growing_option():
    network, problem = cantilever((0.0, 0.0, -0.5))
    plain = StaticNewtonSolver(newton_iterations=20).solve(problem, network.X)
    relative = plain.relative_residuals
    growth = np.flatnonzero(relative[1:] > relative[:-1])
    assert plain.converged and growth.size > 0
    stopping = StaticNewtonSolver(newton_iterations=20, shoud_diverge_when_residual_is_growing=True)
    report = stopping.solve(problem, network.X)
    assert report.diverged and report.reason == "residual growing"
    assert report.iterations == growth[0] + 2
    assert np.array_equal(report.x, network.X)
    alias = StaticNewtonSolver(newton_iterations=20, should_diverge_when_residual_is_growing=True)
    assert alias.shoud_diverge_when_residual_is_growing
    assert alias.solve(problem, network.X).reason == "residual growing"


def test_line_search_and_load_steps_converge_where_plain_newton_fails():
    network, problem = cantilever((0.0, 0.0, -50.0), cubic=1.0)
    plain = StaticNewtonSolver(newton_iterations=10).solve(problem, network.X)
    searched = StaticNewtonSolver(newton_iterations=10, line_search=True).solve(problem, network.X)
    stepped = StaticNewtonSolver(newton_iterations=10, load_steps=5).solve(problem, network.X)
    assert not plain.converged and plain.reason == "max iterations reached", plain.reason
    assert plain.relative_residuals[-1] > 1.0, plain.relative_residuals
    assert searched.converged and min(searched.line_search_steps) < 1.0, (searched.reason, searched.line_search_steps)
    assert stepped.converged and len(stepped.load_step_iterations) == 5, (stepped.reason, stepped.load_step_iterations)
    # both reach an equilibrium (the lattice has several under this load: they need not be the same one)
    residual_scale = np.sqrt(searched.squared_initial_residual)
    assert np.linalg.norm(problem.residual(searched.x)) < 1e-8 * residual_scale
    assert np.linalg.norm(problem.residual(stepped.x)) < 1e-8 * residual_scale


def test_extra_force_equals_an_equivalent_load():
    network, problem = cantilever((0.0, 0.0, -2.0))
    _, unloaded = cantilever((0.0, 0.0, 0.0))
    tip = np.flatnonzero(network.X[:, 0] == network.X[:, 0].max())
    extra = np.zeros_like(network.X)
    extra[tip] = np.array([0.0, 0.0, -2.0]) / tip.size
    solver = StaticNewtonSolver()
    loaded = solver.solve(problem, network.X)
    pushed = solver.solve(unloaded, network.X, extra_force=extra)
    assert loaded.converged and pushed.converged
    assert np.abs(loaded.x - pushed.x).max() < 1e-10


def test_equilibrium_start_returns_without_iterating():
    network, problem = cantilever((0.0, 0.0, -1.0))
    solver = StaticNewtonSolver(residual_tolerance_threshold=1e-16, correction_tolerance_threshold=0)
    first = solver.solve(problem, network.X)
    assert first.converged and first.reason == "residual at round-off level"
    again = solver.solve(problem, first.x)  # warm start from the previous frame's solution
    assert again.converged and again.iterations == 0
    assert again.reason in ("residual below absolute threshold", "residual at round-off level")
    assert np.array_equal(again.x, first.x)
    _, unloaded = cantilever((0.0, 0.0, 0.0))
    rest = solver.solve(unloaded, network.X)
    assert rest.converged and rest.iterations == 0 and rest.squared_initial_residual == 0.0


@pytest.mark.parametrize("linear_solver", [CGSolver(maximum_number_of_iterations=400,
                                                    residual_tolerance_threshold=1e-11,
                                                    preconditioning_method="Diagonal"),
                                           ReusedFactorizationSolver(residual_tolerance_threshold=1e-11),
                                           DirectSolver(backend="scipy")])  # fmt: skip
def test_newton_with_other_linear_solvers(linear_solver):
    network, problem = cantilever((50.0, 0.0, 0.0))  # pulled: all tangents stay SPD (needed by CG)
    reference = StaticNewtonSolver().solve(problem, network.X)
    report = StaticNewtonSolver(linear_solver=linear_solver).solve(problem, network.X)
    assert report.converged
    assert np.abs(report.x - reference.x).max() < 1e-8
    if isinstance(linear_solver, CGSolver):
        assert len(report.iterative_linear_solver_squared_residuals) == report.iterations
        assert len(report.iterative_linear_solver_squared_rhs_norms) == report.iterations
        first_rhs = report.iterative_linear_solver_squared_rhs_norms[0]
        assert first_rhs == pytest.approx(report.squared_initial_residual)
        for history, rhs in zip(report.iterative_linear_solver_squared_residuals,
                                report.iterative_linear_solver_squared_rhs_norms):  # fmt: skip
            assert len(history) == 0 or history[-1] < 1e-22 * rhs


class RecordingCG(CGSolver):
    """CG that records the initial guess Newton passes to it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.initial_guesses = []
        self.solutions = []

    def solve(self, b, x0=None):
        self.initial_guesses.append(None if x0 is None else np.array(x0, copy=True))
        self.solutions.append(super().solve(b, x0=x0))
        return self.solutions[-1]


def test_cg_warm_start_uses_previous_increment():
    network, problem = cantilever((50.0, 0.0, 0.0))
    for warm in (False, True):
        cg = RecordingCG(maximum_number_of_iterations=400, residual_tolerance_threshold=1e-10)
        report = StaticNewtonSolver(linear_solver=cg, warm_start=warm).solve(problem, network.X)
        assert report.converged and len(cg.initial_guesses) == report.iterations >= 3
        assert cg.initial_guesses[0] is None  # the first increment starts from zero either way
        if warm:
            # each later solve starts from the previous Newton increment
            for guess, previous in zip(cg.initial_guesses[1:], cg.solutions[:-1]):
                assert np.array_equal(guess, previous)
        else:
            assert all(guess is None for guess in cg.initial_guesses)


def test_print_log_lines(caplog):
    network, problem = cantilever((0.0, 0.0, -10.0))
    with caplog.at_level(logging.INFO, logger="softsim.mechanics.newton"):
        StaticNewtonSolver(printLog=False).solve(problem, network.X)
        assert not caplog.records
        report = StaticNewtonSolver(printLog=True).solve(problem, network.X)
    lines = [record.getMessage() for record in caplog.records]
    iteration_lines = [line for line in lines if line.startswith("Newton iteration #")]
    assert len(iteration_lines) == report.iterations
    assert "|R|/|R0| = " in iteration_lines[0] and "|du|/|U| = " in iteration_lines[0] and " ms" in lines[1]
    assert lines[-1].startswith("[CONVERGED] residual below threshold")


def test_set_parameters_validation_and_effect():
    network, problem = cantilever((0.0, 0.0, -10.0))
    solver = StaticNewtonSolver()
    with pytest.raises(ParameterError, match="unknown parameter 'newton_iteration'; did you mean newton_iterations"):
        solver.set_parameters(newton_iteration=3)
    with pytest.raises(ParameterError, match=r"newton_iterations: 0 is outside \[1, 1000\]"):
        solver.set_parameters(newton_iterations=0)
    with pytest.raises(ParameterError, match=r"line_search_coefficient: 1.5 is outside \(0, 1\)"):
        StaticNewtonSolver(line_search_coefficient=1.5)
    with pytest.raises(ParameterError, match="load_steps"):
        solver.set_parameters(load_steps=2.5)
    with pytest.raises(ParameterError, match="linear_solver"):
        solver.set_parameters(linear_solver="pardiso")
    assert solver.newton_iterations == 10
    solver.set_parameters(newton_iterations=2)
    assert solver.solve(problem, network.X).iterations == 2
    solver.set_parameters(newton_iterations=20, residual_tolerance_threshold=1e-3,
                          correction_tolerance_threshold=0)  # fmt: skip
    loose = solver.solve(problem, network.X)
    assert loose.converged and loose.relative_residuals[-1] < 1e-3 and loose.relative_residuals[-2] >= 1e-3
    solver.set_parameters(should_diverge_when_residual_is_growing=True)
    assert solver.shoud_diverge_when_residual_is_growing
