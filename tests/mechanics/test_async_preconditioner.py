"""The asynchronous preconditioner: CG on the current matrix preconditioned by an older factorization that a
background thread refreshes. Every solve is checked against SciPy's sparse LU of the same matrix, and whole
frames against the direct solver."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from softsim.mechanics.async_preconditioner import (
    AsyncPreconditionedSolver,
    preconditioned_cg,
    preconditioned_gmres,
)
from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.constraints import CableConstraint
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.linear_solvers import Capabilities, DirectSolver, make_linear_solver
from softsim.mechanics.loads import Gravity, lumped_masses
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.scene_runtime import Scene
from softsim.mechanics.simulation import Simulation
from softsim.mechanics.static_problem import StaticProblem
from softsim.meshes.generate import hex_grid_tets

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def _beam_tangents():
    """Two free tangents of a 6x2x2-cell corotational beam: at rest and bent (x displaced)."""
    X, tets = hex_grid_tets(np.linspace(0, 6, 7), np.linspace(0, 2, 3), np.linspace(0, 2, 3))
    elasticity = TetElasticity(X, tets, model="corotational", young=1000.0, poisson=0.3)
    problem = StaticProblem(elasticity, fixed_nodes=np.flatnonzero(X[:, 0] == 0.0))
    bent = X.copy()
    bent[:, 2] += 0.02 * X[:, 0] ** 2  # a parabolic bend: every element rotates a little
    return problem.tangent(X).copy(), problem.tangent(bent).copy()


def _spd(n: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.05, random_state=rng)
    return (A @ A.T + n * sp.identity(n)).tocsr()


def test_cg_with_the_exact_inverse_converges_in_one_iteration_and_matches_lu() -> None:
    A = _spd(200, 0)
    B = np.random.default_rng(1).standard_normal((200, 3))
    lu = spla.splu(A.tocsc())
    X, iterations, status = preconditioned_cg(A, B, lu.solve, tolerance=1e-12, max_iterations=10)
    assert status == "converged"
    assert list(iterations) == [1, 1, 1]
    assert np.max(np.abs(X - lu.solve(B))) <= 1e-12 * np.max(np.abs(lu.solve(B)))


def test_cg_with_an_older_matrix_reaches_the_tolerance_on_the_true_residual() -> None:
    A = _spd(300, 2)
    older = (A + 0.05 * sp.diags(A.diagonal())).tocsr()  # 5 % stiffer diagonal
    B = np.random.default_rng(3).standard_normal((300, 2))
    X, iterations, status = preconditioned_cg(A, B, spla.splu(older.tocsc()).solve, tolerance=1e-10,
                                              max_iterations=50)
    assert status == "converged"
    assert np.all(np.linalg.norm(B - A @ X, axis=0) <= 1e-10 * np.linalg.norm(B, axis=0))
    assert 2 <= iterations.max() <= 10  # an older preconditioner costs a few iterations, not hundreds


def test_cg_reports_an_indefinite_matrix() -> None:
    A = sp.diags([1.0, 2.0, -3.0, 4.0]).tocsr()
    _, _, status = preconditioned_cg(A, np.ones((4, 1)), lambda r: r, tolerance=1e-12, max_iterations=10)
    assert status == "indefinite"


def _unsymmetric(n: int, seed: int) -> sp.csr_matrix:
    """A sparse, diagonally dominant matrix that is not symmetric."""
    A = sp.random(n, n, density=0.03, random_state=seed, format="csr") + sp.diags(np.full(n, 4.0))
    return sp.csr_matrix(A)


def test_gmres_with_a_poor_preconditioner_matches_a_direct_solve() -> None:
    A = _unsymmetric(200, 0)
    B = np.random.default_rng(0).standard_normal((200, 2))
    diagonal = A.diagonal()
    X, iterations, status = preconditioned_gmres(A, B, lambda R: R / diagonal[:, None], tolerance=1e-10,
                                                 max_iterations=60)
    exact = spla.spsolve(A.tocsc(), B)
    assert status == "converged"
    assert np.max(np.abs(X - exact)) <= 1e-9 * np.max(np.abs(exact))
    assert np.all(iterations > 3)  # the diagonal is a poor preconditioner: several iterations
    assert np.all(np.linalg.norm(B - A @ X, axis=0) <= 1e-10 * np.linalg.norm(B, axis=0))


def test_gmres_with_the_exact_inverse_takes_one_iteration_and_a_warm_start_none() -> None:
    A = _unsymmetric(150, 1)
    B = np.random.default_rng(1).standard_normal((150, 2))
    lu = spla.splu(A.tocsc())
    X, iterations, status = preconditioned_gmres(A, B, lu.solve, tolerance=1e-12, max_iterations=10)
    assert status == "converged" and list(iterations) == [1, 1]
    assert np.max(np.abs(X - lu.solve(B))) <= 1e-12 * np.max(np.abs(lu.solve(B)))
    again, iterations, status = preconditioned_gmres(A, B, lu.solve, tolerance=1e-10, max_iterations=10, X0=X)
    assert status == "converged" and list(iterations) == [0, 0] and np.array_equal(again, X)


def test_gmres_stops_at_its_limit_and_says_so() -> None:
    A = _unsymmetric(200, 2)
    _, iterations, status = preconditioned_gmres(A, np.ones((200, 1)), lambda R: R, tolerance=1e-14,
                                                 max_iterations=2)
    assert status == "unconverged" and list(iterations) == [2]


def _bent_exact_tangents(rotation: str):
    """The exact free tangents of the 6x2x2-cell beam at two bent states (rotation ``large``: not symmetric)."""
    X, tets = hex_grid_tets(np.linspace(0, 6, 7), np.linspace(0, 2, 3), np.linspace(0, 2, 3))
    elasticity = TetElasticity(X, tets, model="corotational", young=1000.0, poisson=0.3,
                               rotation_method=rotation, corotational_tangent="exact")
    problem = StaticProblem(elasticity, fixed_nodes=np.flatnonzero(X[:, 0] == 0.0))
    tangents = []
    for bend in (0.02, 0.025):
        bent = X.copy()
        bent[:, 2] += bend * X[:, 0] ** 2
        bent[:, 1] += 0.3 * bend * X[:, 0] ** 2
        tangents.append(problem.tangent(bent).copy())
    return tangents


def test_a_matrix_that_is_not_symmetric_is_solved_by_gmres_on_an_older_lu() -> None:
    first, second = _bent_exact_tangents("large")
    asymmetry = abs(second - second.T).max() / abs(second).max()
    assert asymmetry > 1e-6  # the exact tangent of SOFA's rotation is not symmetric
    solver = AsyncPreconditionedSolver(residual_tolerance_threshold=1e-10)
    b = np.random.default_rng(8).standard_normal(first.shape[0])
    try:
        solver.factorize(first)
        assert not solver.symmetric
        solver.solve(b)
        solver.factorize(second)
        x = solver.solve(b)  # preconditioned by the LU of the first tangent (or the second's, if done)
        exact = spla.spsolve(second.tocsc(), b)
        assert np.linalg.norm(second @ x - b) <= 1e-10 * np.linalg.norm(b)
        assert np.max(np.abs(x - exact)) <= 1e-7 * np.max(np.abs(exact))
        assert solver.stats["foreground_factorizations"] == 1  # GMRES did not fall back to a factorization
    finally:
        solver.close()


def test_solver_uses_an_older_factorization_then_picks_up_the_background_one() -> None:
    K_rest, K_bent = _beam_tangents()
    solver = AsyncPreconditionedSolver(residual_tolerance_threshold=1e-10)
    b = np.random.default_rng(4).standard_normal(K_rest.shape[0])
    try:
        solver.factorize(K_rest)  # the first matrix is factorized in the foreground
        assert solver.stats["foreground_factorizations"] == 1
        x = solver.solve(b)
        assert solver.iterations == 1 and solver.age == 0
        solver.factorize(K_bent)
        x = solver.solve(b)  # before or while the thread factorizes K_bent: preconditioned by K_rest
        exact = spla.spsolve(K_bent.tocsc(), b)
        assert np.linalg.norm(K_bent @ x - b) <= 1e-10 * np.linalg.norm(b)
        assert np.max(np.abs(x - exact)) <= 1e-7 * np.max(np.abs(exact))
        assert solver.wait(60.0)
        x = solver.solve(b)
        assert solver.stats["background_factorizations"] == 1
        assert solver.age == 0 and solver.iterations == 1
        assert solver.stats["foreground_factorizations"] == 1  # no frame waited for a factorization
        assert np.max(np.abs(x - exact)) <= 1e-7 * np.max(np.abs(exact))
    finally:
        solver.close()


def test_solver_memoises_a_repeated_block_right_hand_side() -> None:
    K_rest, _ = _beam_tangents()
    solver = AsyncPreconditionedSolver(background=False)
    B = np.random.default_rng(5).standard_normal((K_rest.shape[0], 2))
    solver.factorize(K_rest)
    first = solver.solve(B)
    again = solver.solve(B)
    assert solver.stats["memo_hits"] == 1 and np.array_equal(first, again)
    solver.factorize(K_rest)  # a new operator: the memo is gone
    solver.solve(B)
    assert solver.stats["memo_hits"] == 1
    loose = solver.solve(B, tolerance=0.5)  # a loose block solve of the same B is served by the exact one
    assert solver.stats["memo_hits"] == 2 and np.array_equal(loose, first)
    solver.factorize(K_rest)
    solver.solve(B, tolerance=0.5)
    solves = solver.stats["solves"]
    solver.solve(B)  # an exact request is not served by the loose solution: it solves again
    assert solver.stats["memo_hits"] == 2 and solver.stats["solves"] == solves + 1


def test_indefinite_matrix_is_solved_with_its_own_factorization() -> None:
    A = _spd(120, 6)
    indefinite = (A - 1.5 * A.diagonal().mean() * sp.identity(120)).tocsr()
    solver = AsyncPreconditionedSolver(residual_tolerance_threshold=1e-10, background=False)
    b = np.random.default_rng(7).standard_normal(120)
    solver.factorize(A)
    solver.factorize(indefinite)
    x = solver.solve(b)
    assert np.linalg.norm(indefinite @ x - b) <= 1e-10 * np.linalg.norm(b)


@pytest.mark.parametrize("parameters", [{"residual_tolerance_threshold": 0.0},
                                        {"residual_tolerance_threshold": 0.5},
                                        {"maximum_number_of_iterations": 0}])
def test_invalid_parameters_name_the_parameter(parameters) -> None:
    with pytest.raises(ParameterError, match=next(iter(parameters))):
        AsyncPreconditionedSolver(**parameters)


def _cable_beam(linear_solver):
    X, tets = hex_grid_tets(np.linspace(0, 12, 13), np.linspace(0, 2, 3), np.linspace(0, 2, 3))
    elasticity = TetElasticity(X, tets, model="corotational", young=3000.0, poisson=0.3)
    problem = StaticProblem(elasticity, fixed_nodes=np.flatnonzero(X[:, 0] == 0.0),
                            loads=[Gravity(lumped_masses(X, tets, 1.0), (0.0, 0.0, -0.05))])
    points = np.column_stack([np.linspace(0.5, 11.5, 8), np.full(8, 1.0), np.full(8, 0.5)])
    cable = CableConstraint(X, tets, points=points, pullPoint=np.array([-1.0, 1.0, 0.5]),
                            valueType="displacement", value=0.0, minForce=0.0)
    newton = StaticNewtonSolver(linear_solver=linear_solver, newton_iterations=20)
    simulation = Simulation(problem=problem, newton=newton, constraints=[cable],
                            constraint_solver=make_constraint_solver("BlockGaussSeidel", maxIterations=1000,
                                                                     tolerance=1e-10))
    return simulation, cable


def test_cable_ramp_frames_equal_the_direct_solver_and_report_cg_iterations_and_age() -> None:
    """A slider drag (the cable pulled 0.04 more each frame): every frame converges (unbalanced force <= 1e-8 of
    the force scale: the Newton tolerance), the states equal the direct solver's to 1e-7 of the beam's length
    (both stop within that tolerance of the equilibrium, at different iterates: 2e-8 apart measured), and each
    frame reports its CG iterations and factorization age."""
    direct, direct_cable = _cable_beam(DirectSolver())
    asynchronous, async_cable = _cable_beam(AsyncPreconditionedSolver())
    ages = []
    for frame in range(12):
        for cable in (direct_cable, async_cable):
            cable.set_parameters(value=0.04 * (frame + 1))
        reference = direct.step()
        report = asynchronous.step()
        assert reference.converged and report.converged
        assert report.equilibrium.residual <= 1e-8
        assert np.max(np.abs(asynchronous.x - direct.x)) <= 1e-7 * 12.0
        assert report.preconditioner is not None and report.preconditioner["cg_iterations"] >= 1
        ages.append(report.preconditioner["factorization_age"])
        assert reference.preconditioner is None
    assert abs(async_cable.outputs["displacement"] - 0.48) <= 1e-8
    assert min(ages) >= 0
    for solver in (asynchronous.newton.linear_solver, asynchronous.constrained_tangent.current_solver):
        solver.close()


def test_scene_key_builds_the_solver_and_switches_live(tmp_path) -> None:
    scene = Scene.load(Path(__file__).resolve().parents[2] / "resources" / "scenes" / "finger.toml")
    scene.step()
    scene.set("solver.linear.type", "async")
    scene.set("solver.linear.preconditioner_iterations", 7)
    solver = scene.simulation.newton.linear_solver
    assert isinstance(solver, AsyncPreconditionedSolver) and solver.maximum_number_of_iterations == 7
    report = scene.step()
    assert report.ok
    scene.set("body.finger.cable.cable.value", 2.0)
    assert scene.step().preconditioner["cg_iterations"] >= 1  # the equilibrium steps ran on an async solver
    scene.set("solver.linear.preconditioner_iterations", 8)  # new solvers: counted from zero in the next frame
    scene.set("body.finger.cable.cable.value", 3.0)
    report = scene.step()
    solvers = (scene.simulation.newton.linear_solver, scene.simulation.constrained_tangent.current_solver)
    assert all(isinstance(s, AsyncPreconditionedSolver) for s in solvers)
    assert report.preconditioner["cg_iterations"] >= 1
    assert report.preconditioner["cg_iterations"] == sum(s.stats["iterations"] for s in solvers)
    scene.set("solver.linear.type", "direct")
    assert isinstance(scene.simulation.newton.linear_solver, DirectSolver)
    assert scene.step().ok
    solver.close()


def test_make_linear_solver_knows_async() -> None:
    solver = make_linear_solver("async", preconditioner_iterations=5, residual_tolerance_threshold=1e-9)
    assert isinstance(solver, AsyncPreconditionedSolver)
    assert solver.maximum_number_of_iterations == 5 and solver.residual_tolerance_threshold == 1e-9
    with pytest.raises(ParameterError, match="async"):
        make_linear_solver("asynchronous")


def test_response_cache_does_not_reuse_inexact_columns_for_an_exact_request():
    """The equilibrium steps ask for K^-1 J^T to a loose tolerance; a later exact request with the same matrix
    (the inverse model's W) must solve again rather than reuse them. A stand-in solver answers a request of
    tolerance t with the exact solution scaled by (1 + t)."""
    from softsim.mechanics.constrained_tangent import ResponseCache

    A = _spd(50, 8)
    exact_inverse = np.linalg.inv(A.toarray())

    class Inexact:
        capabilities = Capabilities(inexact=True)
        matrix = A
        stats = {"factorizations": 1}
        calls: list = []

        def solve(self, b, tolerance=None):
            self.calls.append(tolerance)
            return (1.0 + (tolerance or 0.0)) * (exact_inverse @ b)

    solver, cache = Inexact(), ResponseCache()
    Jt = np.random.default_rng(8).standard_normal((50, 3))
    loose = cache.solve(solver, Jt, tolerance=0.5)
    np.testing.assert_allclose(loose, 1.5 * exact_inverse @ Jt)
    again = cache.solve(solver, Jt)  # exact request: solved again, not the loose columns
    np.testing.assert_allclose(again, exact_inverse @ Jt, atol=1e-12)
    cache.solve(solver, Jt, tolerance=0.5)  # exact columns serve a loose request: no new solve
    assert solver.calls == [0.5, None]


def test_a_live_edit_out_of_the_solvers_range_is_refused_with_the_key_and_the_state_kept():
    """The scene key accepts any positive tolerance; the asynchronous solver needs one <= 1e-2. The edit is
    refused with a message naming the key and the range, and the running solver and value stay."""
    from softsim.mechanics.scene.schema import SceneError

    scene = Scene.load(Path(__file__).resolve().parents[2] / "resources" / "scenes" / "finger.toml")
    scene.set("solver.linear.type", "async")
    solver = scene.simulation.newton.linear_solver
    with pytest.raises(SceneError) as caught:
        scene.set("solver.linear.residual_tolerance_threshold", 0.5)
    assert str(caught.value) == ("finger.toml: solver.linear.residual_tolerance_threshold: "
                                 "residual_tolerance_threshold must be in (0, 1e-2], got 0.5")
    assert scene.spec.solver.linear.residual_tolerance_threshold == 1e-8
    assert isinstance(scene.simulation.newton.linear_solver, AsyncPreconditionedSolver)
    assert scene.step().ok
    solver.close()


def test_async_frames_take_the_exact_tangent_and_end_where_the_direct_solver_does() -> None:
    """The shipped finger (SOFA's ``large`` rotation) with ``[solver.linear] type = "async"``: static frames use
    the exact tangent (GMRES on it), converge, and end at the direct solver's states to 1e-7 of the finger's
    length, in a comparable number of Newton steps (quadratic convergence, not SOFA's linear tangent's 20+)."""
    path = Path(__file__).resolve().parents[2] / "resources" / "scenes" / "finger.toml"
    scenes = {kind: Scene.load(path) for kind in ("direct", "async")}
    scenes["async"].set("solver.linear.type", "async")
    for scene in scenes.values():
        assert scene.simulation.problem.elasticity.exact_tangent
        scene.step()
    for value in (10.0, 30.0, 0.0):
        reports = {}
        for kind, scene in scenes.items():
            scene.set("body.finger.cable.cable.value", value)
            reports[kind] = scene.step()
            assert reports[kind].converged
        size = np.ptp(scenes["direct"].simulation.x, axis=0).max()
        assert np.max(np.abs(scenes["async"].simulation.x - scenes["direct"].simulation.x)) <= 1e-7 * size
        assert reports["async"].equilibrium.steps <= 2 * reports["direct"].equilibrium.steps
        assert reports["async"].preconditioner["cg_iterations"] >= 1
    solvers = (scenes["async"].simulation.newton.linear_solver,
               scenes["async"].simulation.constrained_tangent.current_solver)
    assert not solvers[1].symmetric  # the constrained exact tangent of the large rotation
    for solver in solvers:
        solver.close()


def test_the_exact_tangents_forcing_keeps_newton_quadratic_and_finishes_a_slider_frame_in_one_step() -> None:
    """The relative residual an iterative solve may stop at (mechanics.equilibrium._forcing): with SOFA's tangent
    the fixed 0.02; with the exact tangent at most r^2 away from the answer (quadratic convergence: the step's
    error from the solve is below r^2), at most 0.02 far from it, and near it small enough that the solve's error
    (forcing x r) is a tenth of the tolerance, so a slider frame predicted to 3e-4 ends in one step."""
    from types import SimpleNamespace

    from softsim.mechanics.equilibrium import INEXACT_FORCING, _forcing

    tolerance = 1e-8
    exact = SimpleNamespace(exact=True, residual_tolerance=tolerance)
    sofa = SimpleNamespace(exact=False, residual_tolerance=tolerance)
    assert _forcing(sofa, SimpleNamespace(relative=3e-4)) == INEXACT_FORCING
    assert _forcing(exact, SimpleNamespace(relative=1.0)) == INEXACT_FORCING
    for relative in (1e-1, 1e-2, 1e-3):
        forcing = _forcing(exact, SimpleNamespace(relative=relative))
        assert forcing <= max(relative ** 2, 1.0001 * 0.1 * tolerance / relative)
    slider = _forcing(exact, SimpleNamespace(relative=3e-4))
    assert slider * 3e-4 == pytest.approx(0.1 * tolerance, rel=1e-12)
