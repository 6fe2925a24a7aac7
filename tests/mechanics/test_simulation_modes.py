"""Simulation runs the static frame step or the dynamic (Compliant) step on the same body."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.dynamics import DynamicSolver
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.loads import Gravity
from softsim.mechanics.mass import TetMass
from softsim.mechanics.model import Body, Model
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.simulation import Simulation
from softsim.mechanics.static_problem import StaticProblem
from softsim.meshes.generate import beam


def _simulation(mode):
    mesh = beam(length=10.0, width=1.0, height=1.0, nx=8, ny=2, nz=2)
    elasticity = TetElasticity(mesh.points, mesh.tets, model="stvk", young=2e4, poisson=0.3)
    mass = TetMass(mesh.points, mesh.tets, massDensity=1.0, lumped=True)
    gravity = Gravity(mass.nodal_masses, (0.0, -9.81, 0.0))
    fixed = mesh.point_sets["fixed"]
    problem = StaticProblem(elasticity, fixed_nodes=fixed, loads=[gravity])
    system = Model([Body("beam", elasticity, mass, fixed_nodes=fixed, loads=[gravity])])
    dynamic = DynamicSolver(system, dt=0.05, rayleighMass=5.0, rayleighStiffness=0.0, newton_iterations=3)
    return Simulation(problem=problem, newton=StaticNewtonSolver(linear_solver=DirectSolver()),
                      constraint_solver=make_constraint_solver("BlockGaussSeidel"), dynamic_solver=dynamic,
                      mode=mode)


def test_damped_dynamic_frames_settle_on_the_static_frame_result():
    static = _simulation("static")
    assert static.step().ran
    dynamic = _simulation("dynamic")
    tip = int(np.argmax(dynamic.X[:, 0]))
    sag = []
    for _ in range(400):
        report = dynamic.step()
        assert report.ran
        sag.append(dynamic.x[tip, 1] - dynamic.X[tip, 1])
    # it falls, overshoots or creeps, and ends at the static equilibrium
    assert min(sag) < 0.5 * (static.x[tip, 1] - static.X[tip, 1])
    np.testing.assert_allclose(dynamic.x, static.x, atol=1e-6 * np.abs(static.x - static.X).max())
    assert dynamic.time == pytest.approx(20.0)
    assert report.newton is None and report.dynamic is not None  # one report type, the implicit step inside
    assert report.iterations >= 1 and np.isfinite(report.residual_norms).all() and report.residual_norms.size


def test_switching_mode_resets_velocities_and_static_mode_needs_no_dynamic_solver():
    simulation = _simulation("dynamic")
    simulation.step()
    assert np.abs(simulation.v).max() > 0
    simulation.set_mode("static")
    assert np.abs(simulation.v).max() == 0
    assert simulation.step().ran
    simulation.dynamic_solver = None
    with pytest.raises(ParameterError, match="dynamic mode needs a mass"):
        simulation.set_mode("dynamic")
    with pytest.raises(ParameterError, match="'static' or 'dynamic'"):
        simulation.set_mode("quasi")


def test_the_finger_scene_in_dynamic_mode_settles_where_the_static_frame_puts_it():
    from softsim.mechanics import Scene

    static = Scene.load("resources/scenes/finger.toml")
    static.set("body.finger.cable.cable.value", 4.0)
    for _ in range(3):
        assert static.step().ran
    dynamic = Scene.load("resources/scenes/finger.toml")
    dynamic.set("solver.dynamic.rayleighMass", 1.0)
    dynamic.set("scene.dt", 0.02)
    dynamic.set("scene.mode", "dynamic")
    dynamic.set("body.finger.cable.cable.value", 4.0)
    for _ in range(300):
        assert dynamic.step().ran
    assert dynamic.simulation.mode == "dynamic" and dynamic.simulation.time == pytest.approx(6.0)
    assert dynamic.outputs()["cable.displacement"] == pytest.approx(4.0, abs=1e-6)
    assert dynamic.outputs()["cable.force"] == pytest.approx(static.outputs()["cable.force"], rel=2e-3)
    tip = int(np.argmin(static.simulation.X[:, 0]))
    np.testing.assert_allclose(dynamic.positions[tip], static.positions[tip], atol=0.02)


def test_effector_outputs_follow_the_body_in_dynamic_mode():
    from softsim.mechanics import Scene

    scene = Scene.load("resources/scenes/finger.toml")
    scene.set("scene.mode", "dynamic")
    rest_y = scene.outputs()["tip.y"]
    for _ in range(20):
        assert scene.step().ran
    tip = scene.simulation.constraint("tip")
    assert scene.outputs()["tip.y"] < rest_y - 0.5  # the finger sags under gravity and the readout follows
    np.testing.assert_allclose(scene.outputs()["tip.y"], tip.point_set.positions(scene.positions)[0, 1])
