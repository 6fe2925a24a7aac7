"""The model of N bodies: concatenated DOFs for both modes, no wrapping for one body, and two bodies glued by an
attachment model in dynamic mode (both KKT paths)."""

import numpy as np
import pytest

from softsim.mechanics.constraints import BilateralAttachment, ContactConstraint, PlaneObstacle
from softsim.mechanics.dynamics import DynamicSolver, DynamicState
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.loads import Gravity
from softsim.mechanics.mass import TetMass
from softsim.mechanics.model import Body, Model
from softsim.meshes.generate import beam, cube

G = np.array([0.0, -9.81, 0.0])


def make_body(name, mesh, *, young=1e5, fixed=(), offset=(0, 0, 0), mass=True):
    X = mesh.points + np.asarray(offset, dtype=float)
    elasticity = TetElasticity(X, mesh.tets, model="linear", young=young, poisson=0.3)
    tet_mass = TetMass(X, mesh.tets, massDensity=100.0)
    return Body(name, elasticity, tet_mass if mass else None, fixed_nodes=np.asarray(fixed, dtype=np.int64),
                loads=[Gravity(tet_mass.nodal_masses, G)])


def two_beams(young_b=2e4):
    """Beam A (cantilever along x, fixed at x = 0) and beam B along x from A's tip, each with its material;
    the node ids of A's tip face and of B's root face, paired by position."""
    mesh_a = beam(length=1.0, width=0.1, height=0.1, nx=5, ny=1, nz=1)
    mesh_b = beam(length=0.5, width=0.1, height=0.1, nx=3, ny=1, nz=1)
    model = Model([make_body("a", mesh_a, fixed=np.flatnonzero(mesh_a.points[:, 0] < 1e-9)),
                   make_body("b", mesh_b, young=young_b, offset=(1.0, 0.0, 0.0))])
    tip_a = np.flatnonzero(mesh_a.points[:, 0] > 1.0 - 1e-9)
    root_b = np.flatnonzero(mesh_b.points[:, 0] < 1e-9)
    return (model, tip_a[np.lexsort(mesh_a.points[tip_a][:, 1:].T)],
            root_b[np.lexsort(mesh_b.points[root_b][:, 1:].T)])


def run(solver, model, steps):
    states = [DynamicState(model.rest_positions.copy(), np.zeros((model.n_nodes, 3)))]
    for _ in range(steps):
        report = solver.step(states[-1])
        assert report.ok, report.message
        states.append(report.state)
    return states


def test_two_bodies_concatenate_without_coupling():
    model, _, _ = two_beams()
    a, b = model.bodies
    assert model.n_nodes == a.n_nodes + b.n_nodes and list(model.node_offsets) == [0, a.n_nodes, model.n_nodes]
    assert abs(model.mass_matrix[:3 * a.n_nodes, :3 * a.n_nodes] - a.mass_matrix).max() == 0.0
    f, K = model.forces_and_tangent(model.rest_positions)
    n_a = 3 * a.n_nodes
    assert K[:n_a, n_a:].nnz == 0 and K.shape == (model.n_dofs, model.n_dofs)
    # gravity of both bodies: rho g V, V = 0.01 * (1.0 + 0.5)
    assert f[:, 1].sum() == pytest.approx(-9.81 * 100.0 * (0.01 * 1.0 + 0.01 * 0.5), rel=1e-12)
    assert model.free_dofs.size == model.n_dofs - 3 * a.fixed_nodes.size
    problem = model.static_problem()  # the static problem sees the same forces on the free DOFs
    R = problem.residual(model.rest_positions)
    assert np.allclose(R, f.reshape(-1)[model.free_dofs], rtol=1e-12, atol=1e-12)


def test_one_body_is_not_wrapped():
    mesh = cube(size=0.1, n=2)
    body = make_body("cube", mesh, fixed=[0], mass=False)
    model = Model([body])
    assert model.elasticity is body.elasticity and model.loads == body.loads
    floor = ContactConstraint(np.arange(mesh.n_points), [PlaneObstacle([0, -1, 0], [0, 1, 0])], alarmDistance=0.05)
    assert model.place(floor, 0) is floor
    assert model.mass_matrix is None  # a body without mass: static mode only


@pytest.mark.parametrize("kkt", ["direct", "schur"])
def test_hard_attachment_between_two_bodies_holds_while_they_fall(kkt):
    model, tip_a, root_b = two_beams()
    n_a = model.bodies[0].n_nodes
    glue = BilateralAttachment(tip_a, root_b, dof_offset_a=0, dof_offset_b=3 * n_a, n_dofs=model.n_dofs)
    solver = DynamicSolver(model, constraints=[glue], dt=0.005, implicitVelocity=0.5, implicitPosition=1.0, kkt=kkt)
    states = run(solver, model, 200)
    gaps = [np.abs(s.x[n_a + root_b] - s.x[tip_a]).max() for s in states]
    assert max(gaps) < 1e-8 * 1.5
    tip_b = n_a + np.flatnonzero(model.bodies[1].rest_positions[:, 0] > 1.5 - 1e-9)
    drop = np.max(model.rest_positions[tip_b, 1] - np.min([s.x[tip_b, 1] for s in states], axis=0))
    assert drop > 0.05  # the pair swings down substantially
    assert glue.outputs["force"] > 0.0 and glue.outputs["maxViolation"] < 1e-8


@pytest.mark.parametrize("compliance", [0.0, 2e-4])
def test_the_schur_projection_and_the_direct_kkt_solve_take_the_same_steps(compliance):
    """Two independent solves of each step of the glued pair: the sparse LU of the KKT matrix, and the shared
    projection (mechanics.constraint_system: W = s h J H^-1 J^T + (s / l) C, Gauss-Seidel to 1e-12), with a
    hard and a compliant glue (the compliance scaled by s / l there, by h / l in the KKT matrix)."""
    model, tip_a, root_b = two_beams()
    n_a = model.bodies[0].n_nodes
    ends = {}
    for kkt in ("direct", "schur"):
        glue = BilateralAttachment(tip_a, root_b, dof_offset_a=0, dof_offset_b=3 * n_a, n_dofs=model.n_dofs,
                                   compliance=compliance)
        solver = DynamicSolver(model, constraints=[glue], dt=0.005, implicitVelocity=0.5, implicitPosition=1.0,
                               kkt=kkt)
        states = run(solver, model, 40)
        ends[kkt] = (states[-1].x, states[-1].v, glue.pair_forces.copy())
    x_direct, v_direct, force_direct = ends["direct"]
    x_schur, v_schur, force_schur = ends["schur"]
    assert np.max(np.abs(x_direct - model.rest_positions)) > 0.01  # the pair has fallen a good way
    np.testing.assert_allclose(x_schur, x_direct, rtol=0, atol=1e-10)  # measured 1e-12
    np.testing.assert_allclose(v_schur, v_direct, rtol=0, atol=1e-8)
    np.testing.assert_allclose(force_schur, force_direct, rtol=0, atol=1e-8 * np.abs(force_direct).max())
    gap = np.abs(x_direct[n_a + root_b] - x_direct[tip_a]).max()
    assert (gap < 1e-8) if compliance == 0.0 else (gap > 1e-6)  # the compliant glue stretches


def test_unilateral_contact_model_stops_a_falling_cube():
    mesh = cube(size=0.1, n=2)
    model = Model([make_body("cube", mesh, young=1e4, offset=(0.0, 0.02, 0.0))])
    floor = ContactConstraint(np.arange(mesh.n_points), [PlaneObstacle([0, 0, 0], [0, 1, 0])], alarmDistance=0.05)
    solver = DynamicSolver(model, constraints=[floor], dt=0.005, rayleighMass=2.0)
    states = run(solver, model, 120)
    lowest = np.array([s.x[:, 1].min() for s in states])
    assert lowest[0] == pytest.approx(0.02)
    assert lowest.min() > -1e-6  # never through the floor
    assert lowest[-1] < 1e-3  # it landed
    assert solver.step(states[-1]).kkt == "schur"


def test_bad_inputs():
    model, _, _ = two_beams()
    with pytest.raises(ParameterError, match="unique"):
        Model([model.bodies[0], model.bodies[0]])
    with pytest.raises(ParameterError, match="at least one body"):
        Model([])
    with pytest.raises(ParameterError, match="fixed_nodes must lie in"):
        make_body("x", cube(size=0.1, n=1), fixed=[99])
    with pytest.raises(ParameterError, match="positions must have shape"):
        model.forces_and_tangent(np.zeros((3, 3)))


def test_several_bodies_admit_inverted_elements_only_when_every_model_does():
    """The frame accepts an equilibrium with inverted elements where the model defines their forces; with several
    bodies, only when every body's does (two linear beams: yes; a neo-Hookean second beam: no): a state with
    inverted elements (two nodes of one element swapped) passes check_state for the first pair only."""
    from softsim.mechanics.frame_step import check_state

    model, _, _ = two_beams()
    assert model.elasticity.inversion_admissible
    problem = model.static_problem()
    x = model.rest_positions.copy()
    tet = model.elasticity.tets[0]
    x[tet[0]], x[tet[1]] = x[tet[1]].copy(), x[tet[0]].copy()  # swapping two nodes inverts that element
    assert check_state(problem, x) == ""
    model.bodies[1].elasticity.set_material(model="neohookean")
    assert not model.elasticity.inversion_admissible
    assert "element(s) inverted" in check_state(model.static_problem(), x)
