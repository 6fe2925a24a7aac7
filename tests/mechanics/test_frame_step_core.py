"""The frame step's algebra (Steps I-III) on problems with known answers."""

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.constraint_system import build_constraint_system, compliance_in_constraint_space
from softsim.mechanics.constraints import BilateralAttachment, CableConstraint
from softsim.mechanics.constraints.base import Constraint
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.frame_step import solve_frame
from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.loads import Gravity, lumped_masses
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.static_problem import StaticProblem
from softsim.meshes.generate import beam


def _beam_problem(model="linear", young=1e4, gravity=(0.0, -9.81, 0.0)):
    mesh = beam(length=10.0, width=1.0, height=1.0, nx=10, ny=2, nz=2)
    elasticity = TetElasticity(mesh.points, mesh.tets, model=model, young=young, poisson=0.3)
    masses = lumped_masses(mesh.points, mesh.tets, 1.0)
    problem = StaticProblem(elasticity, fixed_nodes=mesh.point_sets["fixed"], loads=[Gravity(masses, gravity)])
    return mesh, problem


def _solver(**newton):
    return StaticNewtonSolver(linear_solver=DirectSolver(), **newton), make_constraint_solver(
        "BlockGaussSeidel", tolerance=1e-12, maxIterations=10000)


def test_W_is_J_Kinv_Jt_from_one_multi_rhs_solve():
    A = sp.random(40, 40, density=0.2, random_state=4)
    K = (A @ A.T + 40 * sp.identity(40)).tocsr()
    J = sp.random(5, 40, density=0.3, random_state=5).tocsr()
    solver = DirectSolver()
    solver.factorize(K)
    W, KinvJt = compliance_in_constraint_space(solver, J)
    dense = J.toarray() @ np.linalg.solve(K.toarray(), J.toarray().T)
    np.testing.assert_allclose(W, dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(KinvJt, np.linalg.solve(K.toarray(), J.toarray().T), rtol=1e-10, atol=1e-12)
    # a dynamic step's W = s h J H^-1 J^T (mechanics.dynamics): the scale multiplies the whole product
    W_scaled, _ = compliance_in_constraint_space(solver, J, KinvJt=KinvJt, scale=0.37)
    np.testing.assert_allclose(W_scaled, 0.37 * dense, rtol=1e-10, atol=1e-12)


def test_hard_attachment_on_a_linear_beam_equals_the_prescribed_displacement_solution():
    mesh, problem = _beam_problem()
    tip = int(np.argmax(mesh.points[:, 0] + mesh.points[:, 1] + mesh.points[:, 2]))
    target = mesh.points[tip] + np.array([0.0, 0.2, 0.05])
    attachment = BilateralAttachment([tip], targets=target[None, :], n_dofs=3 * mesh.n_points)
    newton, constraint_solver = _solver()
    x, report = solve_frame(problem=problem, newton=newton, constraint_solver=constraint_solver,
                            constraints=[attachment], x=mesh.points.copy(), frame=1)
    assert report.ok and report.n_constraint_rows == 3
    np.testing.assert_allclose(x[tip], target, atol=1e-9)

    # Reference: the same linear problem with the tip node's displacement prescribed (eliminated).
    K = problem.elasticity.tangent(mesh.points).toarray()
    f = problem.external_force(mesh.points).reshape(-1)
    u = np.zeros(3 * mesh.n_points)
    u[3 * tip:3 * tip + 3] = target - mesh.points[tip]
    prescribed = np.zeros(3 * mesh.n_points, bool)
    prescribed[(3 * problem.fixed_nodes[:, None] + np.arange(3)).ravel()] = True
    prescribed[3 * tip:3 * tip + 3] = True
    free = ~prescribed
    u[free] = np.linalg.solve(K[np.ix_(free, free)], f[free] - K[np.ix_(free, prescribed)] @ u[prescribed])
    np.testing.assert_allclose(x - mesh.points, u.reshape(-1, 3), atol=1e-9 * np.abs(u).max())
    # The reaction in the attachment balances the load carried by the tip: it is reported per row.
    assert np.all(np.isfinite(report.constraint.force)) and np.abs(report.constraint.force).max() > 0


def test_a_failed_newton_solve_fails_the_frame_and_returns_no_state():
    mesh, problem = _beam_problem(model="neohookean", gravity=(0.0, -1e9, 0.0))
    newton, constraint_solver = _solver(newton_iterations=3, shoud_diverge_when_residual_is_growing=True)
    x0 = mesh.points.copy()
    x, report = solve_frame(problem=problem, newton=newton, constraint_solver=constraint_solver,
                            constraints=[], x=x0, frame=7)
    assert x is None and not report.ok and report.frame == 7
    assert "diverged" in report.message
    np.testing.assert_array_equal(x0, mesh.points)


@pytest.fixture(scope="module")
def pulled_finger():
    from softsim.mechanics.scene_runtime import Scene

    return Scene.load


def test_reequilibration_makes_a_large_cable_pull_exact(pulled_finger):
    """SOFA's single linear correction about x_free misses a large pull; the outer iterations reach it."""
    results = {}
    for iterations, correction in ((0, "linear"), (20, "equilibrium")):
        scene = pulled_finger("resources/scenes/finger.toml")
        scene.set("solver.newton.correction", correction)
        scene.set("body.finger.cable.cable.value", 10.0)
        report = scene.step()
        assert report.ok
        results[iterations] = scene.outputs()["cable.displacement"]
    assert abs(results[0] - 10.0) > 1.0  # the linearisation error of one correction is large here
    assert results[20] == pytest.approx(10.0, abs=1e-4)


def test_cable_rows_are_built_at_x_free_and_the_violation_is_exact_there():
    mesh, problem = _beam_problem()
    points = np.array([[9.0, 0.8, 0.5], [5.0, 0.8, 0.5], [1.0, 0.8, 0.5]])
    cable = CableConstraint(mesh.points, mesh.tets, points=points, pullPoint=np.array([-1.0, 0.8, 0.5]),
                            value=0.0)
    x_free = mesh.points + np.array([0.0, 0.01, 0.0]) * mesh.points[:, [0]]  # a bent state
    system = build_constraint_system([cable], mesh.points, x_free, problem.free_dofs)
    # violation at x_free is exact: L0 - L(x_free) (positive when the cable is shorter than at rest)
    assert system.dfree[0] == pytest.approx(cable.L0 - cable.length(x_free), abs=1e-12)


class _GivenRows(Constraint):
    """Equality rows with a given sparse Jacobian (r, 3n), in any scipy format."""

    def __init__(self, J) -> None:
        super().__init__("given")
        self.J = J

    @property
    def n_rows(self) -> int:
        return self.J.shape[0]

    def jacobian(self, x):
        return self.J

    def violation(self, x, x_free, J):
        return np.zeros(self.n_rows)

    def blocks(self, x):
        return Blocks.equality(self.n_rows)

    def store(self, force, x_new):
        pass

    @property
    def outputs(self):
        return {}


def test_the_system_stacks_the_rows_on_the_free_columns_as_vstack_and_column_slicing():
    parts = [sp.random(rows, 30, density=0.3, random_state=seed, format=fmt)
             for rows, seed, fmt in ((7, 2, "csr"), (1, 3, "csr"), (4, 5, "coo"))]
    x = np.zeros((10, 3))
    free = np.array([0, 2, 3, 7, 8, 9, 15, 21, 29])
    system = build_constraint_system([_GivenRows(J) for J in parts], x, x, free)
    expected = sp.vstack(parts).toarray()[:, free]
    np.testing.assert_array_equal(system.J_free.toarray(), expected)
    other = np.array([1, 4, 5, 29])  # another problem's free DOFs: its own map
    system = build_constraint_system([_GivenRows(J) for J in parts], x, x, other)
    np.testing.assert_array_equal(system.J_free.toarray(), sp.vstack(parts).toarray()[:, other])


def test_a_refused_complementarity_problem_is_named_in_the_frame_message():
    """A friction problem whose W has a non-positive diagonal is refused by the iterative solvers and handed to
    semi-smooth Newton; when that finds no answer the report carries error inf after 0 iterations, which the
    frame's message used to print as such ("error inf after 0 iterations"). It now says what happened; a solver
    that ran and stopped short keeps its error and iterations."""
    from softsim.mechanics.constraint_solvers.base import ConstraintReport
    from softsim.mechanics.frame_report import make_report
    from softsim.mechanics.newton import NewtonReport

    newton = NewtonReport(x=np.zeros((1, 3)), converged=True, diverged=False, reason="converged", iterations=0,
                          iteration_times=[], squared_residuals=[], squared_initial_residual=0.0,
                          iterative_linear_solver_squared_residuals=[], iterative_linear_solver_squared_rhs_norms=[])
    refused = ConstraintReport(np.zeros(3), np.zeros(3), 0, np.inf, False, np.array([np.inf]), 0.0,
                               solver="refused (W has a non-positive diagonal)")
    message = make_report(1, newton, refused, 3, {}).message
    assert message == ("constraint solver did not converge: refused (W has a non-positive diagonal), and "
                       "semi-smooth Newton found no answer to those rows")
    stopped = ConstraintReport(np.zeros(3), np.zeros(3), 1000, 0.157, False, np.array([0.157]), 0.0,
                               solver="BlockGaussSeidel")
    assert make_report(1, newton, stopped, 3, {}).message == (
        "constraint solver did not converge (error 0.157 after 1000 iterations)")
