"""Multi-body assembly, mappings and Compliant constraints in dynamic mode."""

import numpy as np
import pytest
import scipy.sparse as sp
from softsim.mechanics.dynamics import DynamicSolver, DynamicState
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.loads import Gravity
from softsim.mechanics.mapping import BarycentricMapping
from softsim.mechanics.mass import TetMass
from softsim.mechanics.multibody import (
    Body,
    CompliantConstraint,
    DifferenceMapping,
    DistanceMapping,
    MultiBodySystem,
    SpringForceField,
    StrainMapping,
    linear_elasticity_as_compliance,
)
from softsim.meshes.generate import beam, cube

G = np.array([0.0, -9.81, 0.0])


def make_body(name, mesh, *, young=1e5, model="linear", fixed=(), gravity=True, elastic=True, offset=(0, 0, 0)):
    X = mesh.points + np.asarray(offset, dtype=float)
    elasticity = TetElasticity(X, mesh.tets, model=model, young=young, poisson=0.3)
    mass = TetMass(X, mesh.tets, massDensity=100.0)
    loads = [Gravity(mass.nodal_masses, G)] if gravity else []
    return Body(
        name,
        elasticity if elastic else None,
        mass,
        fixed_nodes=np.asarray(fixed, dtype=np.int64),
        loads=loads,
        rest_positions=X,
    ), elasticity


def two_beams(young_b=2e4):
    """Beam A (cantilever along x, fixed at x = 0) and beam B hanging below A's tip, each with its material."""
    mesh_a = beam(length=1.0, width=0.1, height=0.1, nx=5, ny=1, nz=1)
    mesh_b = beam(length=0.5, width=0.1, height=0.1, nx=3, ny=1, nz=1)
    body_a, _ = make_body("a", mesh_a, fixed=np.flatnonzero(mesh_a.points[:, 0] < 1e-9))
    # B lies along x from x = 1.0 to 1.5: its first face touches A's tip face
    body_b, _ = make_body("b", mesh_b, young=young_b, offset=(1.0, 0.0, 0.0))
    system = MultiBodySystem([body_a, body_b])
    tip_a = np.flatnonzero(mesh_a.points[:, 0] > 1.0 - 1e-9)
    root_b = np.flatnonzero(mesh_b.points[:, 0] < 1e-9)
    order_a = np.lexsort(mesh_a.points[tip_a][:, 1:].T)
    order_b = np.lexsort(mesh_b.points[root_b][:, 1:].T)
    return system, system.points("a", indices=tip_a[order_a]), system.points("b", indices=root_b[order_b])


def rest_state(system):
    return DynamicState(system.rest_positions.copy(), np.zeros((system.n_nodes, 3)))


def run(solver, state, steps):
    states = [state]
    for _ in range(steps):
        report = solver.step(state)
        assert report.ok, report.message
        state = report.state
        states.append(state)
    return states


# ---------------------------------------------------------------------- assembly and mappings
def test_block_diagonal_assembly_with_shift_matrices():
    system, _, _ = two_beams()
    assembled = sum(
        system.shift_matrix(b).T @ body.mass_matrix @ system.shift_matrix(b) for b, body in enumerate(system.bodies)
    )
    assert abs(assembled - system.mass_matrix).max() == 0.0
    assert system.n_nodes == system.bodies[0].n_nodes + system.bodies[1].n_nodes
    f, K = system.forces_and_tangent(system.rest_positions)
    n_a = 3 * system.bodies[0].n_nodes
    assert K[:n_a, n_a:].nnz == 0 and K.shape == (system.n_dofs, system.n_dofs)  # no coupling
    assert f[:, 1].sum() == pytest.approx(-9.81 * 100.0 * (0.01 * 1.0 + 0.01 * 0.5), rel=1e-12)
    fixed_a = system.bodies[0].fixed_nodes
    assert system.free_dofs.size == system.n_dofs - 3 * fixed_a.size


def test_barycentric_mapped_points_on_second_body():
    system, _, _ = two_beams()
    body_b = system.bodies[1]
    points = np.array([[1.2, 0.05, 0.03], [1.41, 0.02, 0.07]])
    mapped = system.points("b", points=points)
    assert mapped.matrix.shape == (6, system.n_dofs)
    assert np.allclose(mapped.apply(system.rest_positions), points, atol=1e-12)
    reference = BarycentricMapping(body_b.rest_positions, body_b.elasticity.tets, points)
    x = system.rest_positions + 0.01 * np.random.default_rng(0).standard_normal((system.n_nodes, 3))
    n_a = system.bodies[0].n_nodes
    assert np.allclose(mapped.apply(x), reference.apply(x[n_a:]), atol=1e-14)
    assert mapped.matrix[:, : 3 * n_a].nnz == 0  # the first body's columns stay empty


def test_distance_multimapping_jacobian_and_geometric_stiffness_by_finite_differences():
    system, tip_a, root_b = two_beams()
    x = system.rest_positions + 0.05 * np.random.default_rng(1).standard_normal((system.n_nodes, 3))
    mapping = DistanceMapping(tip_a, root_b, rest_length=0.01)
    J = mapping.jacobian(x).toarray()
    weights = np.array([0.3, -1.2, 0.7, 2.0])
    Kg = mapping.geometric_stiffness(x, weights).toarray()
    eps = 1e-6
    flat = x.reshape(-1)
    for dof in (tip_a.matrix.indices[0], tip_a.matrix.indices[4], root_b.matrix.indices[2], root_b.matrix.indices[7]):
        plus, minus = flat.copy(), flat.copy()
        plus[dof] += eps
        minus[dof] -= eps
        fd = (mapping.value(plus) - mapping.value(minus)) / (2 * eps)
        assert np.allclose(J[:, dof], fd, atol=1e-8)
        fd_k = (weights @ mapping.jacobian(plus).toarray() - weights @ mapping.jacobian(minus).toarray()) / (2 * eps)
        assert np.allclose(Kg[:, dof], fd_k, atol=1e-6)


def test_strain_mapping_compliance_reproduces_linear_stiffness():
    mesh = cube(size=1.0, n=2)
    body, elasticity = make_body("c", mesh, young=3e3)
    system = MultiBodySystem([body])
    constraint = linear_elasticity_as_compliance(system, "c", elasticity)
    J = constraint.jacobian(None)
    C = constraint.compliance_matrix()
    stiffness = (J.T @ sp.csr_matrix(np.linalg.inv(C.toarray())) @ J).toarray()
    K = elasticity.tangent(body.rest_positions).toarray()
    assert np.abs(stiffness - K).max() < 1e-10 * np.abs(K).max()
    # strains of a uniform stretch: e_xx = 0.01, others 0
    x = body.rest_positions * np.array([1.01, 1.0, 1.0])
    strains = StrainMapping(system, "c", elasticity).value(x).reshape(-1, 6)
    assert np.allclose(strains, [0.01, 0, 0, 0, 0, 0], atol=1e-14)


# ---------------------------------------------------------------------- hard constraints
@pytest.mark.parametrize("kkt", ["direct", "schur"])
def test_hard_attachment_between_two_bodies_holds_while_they_fall(kkt):
    system, tip_a, root_b = two_beams()
    glue = CompliantConstraint(DifferenceMapping(tip_a, root_b), compliance=0.0, name="glue")
    solver = DynamicSolver(system, constraints=[glue], dt=0.005, implicitVelocity=0.5, implicitPosition=1.0, kkt=kkt)
    states = run(solver, rest_state(system), 200)
    gaps = [np.abs(root_b.apply(s.x) - tip_a.apply(s.x)).max() for s in states]
    assert max(gaps) < 1e-8 * 1.5
    tip_b = system.node_offsets[1] + np.flatnonzero(system.bodies[1].rest_positions[:, 0] > 1.5 - 1e-9)
    drop = np.max(system.rest_positions[tip_b, 1] - np.min([s.x[tip_b, 1] for s in states], axis=0))
    assert drop > 0.05  # the pair swings down substantially
    assert np.abs(glue.force).max() > 0.0 and glue.outputs["maxViolation"] < 1e-8


def test_direct_and_schur_paths_give_the_same_motion():
    system, tip_a, root_b = two_beams()
    finals = []
    for kkt in ("direct", "schur"):
        glue = CompliantConstraint(DifferenceMapping(tip_a, root_b), compliance=1e-6, damping=0.001)
        solver = DynamicSolver(system, constraints=[glue], dt=0.005, kkt=kkt)
        finals.append(run(solver, rest_state(system), 40)[-1].x)
    assert np.abs(finals[0] - finals[1]).max() < 1e-9


def test_hard_distance_constraint_pendulum_keeps_its_length():
    mesh = cube(size=0.1, n=1)
    body, _ = make_body("bob", mesh, young=1e6)
    system = MultiBodySystem([body])
    corner = int(np.argmin(np.linalg.norm(mesh.points - [0.1, 0.1, 0.1], axis=1)))
    anchor = np.array([0.6, 0.6, 0.1])  # the bob starts 0.5 * sqrt(2) away, swings under gravity
    rod = CompliantConstraint(DistanceMapping(system.points("bob", indices=[corner]), anchor[None]), name="rod")
    solver = DynamicSolver(
        system,
        constraints=[rod],
        dt=0.005,
        implicitVelocity=0.5,
        implicitPosition=1.0,
        newton_iterations=6,
        newton_tolerance=1e-13,
    )
    states = run(solver, rest_state(system), 150)
    lengths = np.array([np.linalg.norm(s.x[corner] - anchor) for s in states])
    assert np.abs(lengths / lengths[0] - 1.0).max() < 1e-8
    assert np.ptp([s.x[corner, 1] for s in states]) > 0.05  # it did swing


# ---------------------------------------------------------------------- force or constraint
def _anchored_body():
    mesh = cube(size=0.1, n=1)
    body, _ = make_body("bob", mesh, young=1e5)
    system = MultiBodySystem([body])
    top = np.flatnonzero(mesh.points[:, 1] > 0.1 - 1e-9)
    anchors = mesh.points[top] + np.array([0.02, 0.05, 0.0])
    return system, system.points("bob", indices=top), anchors


def test_soft_attachment_equals_linear_springs_of_stiffness_inverse_compliance():
    stiffness = 400.0
    system, top, anchors = _anchored_body()
    soft = CompliantConstraint(DifferenceMapping(top, anchors), compliance=1.0 / stiffness)
    as_constraint = run(
        DynamicSolver(system, constraints=[soft], dt=0.01, implicitVelocity=0.5, implicitPosition=1.0),
        rest_state(system),
        100,
    )
    spring_system = MultiBodySystem(
        system.bodies, interactions=[SpringForceField(DifferenceMapping(top, anchors), stiffness)]
    )
    as_force = run(
        DynamicSolver(spring_system, dt=0.01, implicitVelocity=0.5, implicitPosition=1.0),
        rest_state(spring_system),
        100,
    )
    motion = np.abs(as_force[-1].x - system.rest_positions).max()
    assert motion > 0.01
    assert max(np.abs(a.x - b.x).max() for a, b in zip(as_constraint, as_force)) < 1e-10 * motion


def test_soft_distance_constraint_equals_nonlinear_spring_when_newton_converges():
    stiffness = 300.0
    system, top, anchors = _anchored_body()
    mapping = DistanceMapping(top, anchors, rest_length=0.02)
    params = dict(dt=0.01, implicitVelocity=1.0, implicitPosition=1.0, newton_iterations=15, newton_tolerance=1e-13)
    as_constraint = run(
        DynamicSolver(system, constraints=[CompliantConstraint(mapping, compliance=1 / stiffness)], **params),
        rest_state(system),
        60,
    )
    spring_system = MultiBodySystem(system.bodies, interactions=[SpringForceField(mapping, stiffness)])
    as_force = run(DynamicSolver(spring_system, **params), rest_state(spring_system), 60)
    motion = np.abs(as_force[-1].x - system.rest_positions).max()
    assert motion > 0.01
    assert max(np.abs(a.x - b.x).max() for a, b in zip(as_constraint, as_force)) < 1e-8
    # one linearised step per frame: the formulations differ by the geometric stiffness that the compliance
    # form neglects within a step, an O(h) difference at a fixed time (here t = 0.02)
    differences = []
    for dt in (0.000625, 0.0003125):
        params = dict(dt=dt, implicitVelocity=0.5, implicitPosition=1.0)
        steps = int(round(0.02 / dt))
        constraint = CompliantConstraint(mapping, compliance=1 / stiffness)
        one_constraint = run(DynamicSolver(system, constraints=[constraint], **params), rest_state(system), steps)
        one_force = run(DynamicSolver(spring_system, **params), rest_state(spring_system), steps)
        differences.append(np.abs(one_constraint[-1].x - one_force[-1].x).max())
    motion = np.abs(one_force[-1].x - system.rest_positions).max()
    assert differences[1] < 0.55 * differences[0]
    assert differences[1] < 5e-3 * motion


def test_fem_as_compliance_gives_the_fem_force_motion():
    mesh = beam(length=1.0, width=0.1, height=0.1, nx=4, ny=1, nz=1)
    fixed = np.flatnonzero(mesh.points[:, 0] < 1e-9)
    force_body, elasticity = make_body("beam", mesh, young=2e4, fixed=fixed)
    compliant_body, _ = make_body("beam", mesh, young=2e4, fixed=fixed, elastic=False)
    force_system = MultiBodySystem([force_body])
    compliant_system = MultiBodySystem([compliant_body])
    material = linear_elasticity_as_compliance(compliant_system, "beam", elasticity)
    params = dict(dt=0.01, implicitVelocity=0.5, implicitPosition=1.0)
    as_force = run(DynamicSolver(force_system, **params), rest_state(force_system), 50)
    as_constraint = run(
        DynamicSolver(compliant_system, constraints=[material], **params), rest_state(compliant_system), 50
    )
    motion = np.abs(as_force[-1].x - force_system.rest_positions).max()
    assert motion > 0.01
    assert max(np.abs(a.x - b.x).max() for a, b in zip(as_force, as_constraint)) < 1e-9 * motion


# ---------------------------------------------------------------------- frame-step constraint models
def test_frame_step_attachment_model_matches_compliant_attachment():
    from softsim.mechanics.constraints import BilateralAttachment

    system, tip_a, root_b = two_beams()
    n_a = system.bodies[0].n_nodes
    nodes_a = tip_a.matrix.indices[::3] // 3
    nodes_b = root_b.matrix.indices[::3] // 3 - n_a
    model = BilateralAttachment(nodes_a, nodes_b, dof_offset_a=0, dof_offset_b=3 * n_a, n_dofs=system.n_dofs)
    glue = CompliantConstraint(DifferenceMapping(tip_a, root_b))
    finals = [
        run(DynamicSolver(system, constraints=[c], dt=0.005), rest_state(system), 30)[-1].x for c in (model, glue)
    ]
    assert np.abs(finals[0] - finals[1]).max() < 1e-10
    assert model.outputs["maxViolation"] < 1e-10 and model.outputs["force"] > 0.0


def test_unilateral_contact_model_stops_a_falling_cube():
    from softsim.mechanics.constraints import ContactConstraint, PlaneObstacle

    mesh = cube(size=0.1, n=2)
    body, _ = make_body("cube", mesh, young=1e4, offset=(0.0, 0.02, 0.0))
    system = MultiBodySystem([body])
    floor = ContactConstraint(np.arange(mesh.n_points), [PlaneObstacle([0, 0, 0], [0, 1, 0])], alarmDistance=0.05)
    solver = DynamicSolver(system, constraints=[floor], dt=0.005, rayleighMass=2.0)
    states = run(solver, rest_state(system), 120)
    lowest = np.array([s.x[:, 1].min() for s in states])
    assert lowest[0] == pytest.approx(0.02)
    assert lowest.min() > -1e-6  # never through the floor
    assert lowest[-1] < 1e-3  # it landed
    assert solver.step(states[-1]).kkt == "schur"


def test_bad_inputs():
    system, tip_a, root_b = two_beams()
    with pytest.raises(ParameterError, match="compliance"):
        CompliantConstraint(DifferenceMapping(tip_a, root_b), compliance=-1.0)
    with pytest.raises(ParameterError, match="as many points"):
        DifferenceMapping(tip_a, system.points("b", indices=[0]))
    with pytest.raises(ParameterError, match="no body named"):
        system.points("c", indices=[0])
    with pytest.raises(ParameterError, match="unique"):
        MultiBodySystem([system.bodies[0], system.bodies[0]])
