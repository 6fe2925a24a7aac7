"""Simulation.snapshot computes the von Mises fields only when asked; with them it gives the same numbers."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.fields import nodal_average_operator
from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.loads import Gravity, lumped_masses
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.simulation import SNAPSHOT_FIELDS, Simulation
from softsim.mechanics.static_problem import StaticProblem
from softsim.meshes.generate import beam
from tests.call_counts import count_calls


@pytest.fixture
def bent_beam(monkeypatch):
    """A cantilever beam bent by gravity (2 frames), with ``calls`` counting the stress evaluations."""
    mesh = beam(length=10.0, width=1.0, height=1.0, nx=8, ny=2, nz=2)
    elasticity = TetElasticity(mesh.points, mesh.tets, model="corotational", young=2e3, poisson=0.3)
    gravity = Gravity(lumped_masses(mesh.points, mesh.tets, None, total_mass=1.0), (0.0, -9.81, 0.0))
    problem = StaticProblem(elasticity, fixed_nodes=mesh.point_sets["fixed"], loads=[gravity])
    simulation = Simulation(problem=problem, newton=StaticNewtonSolver(linear_solver=DirectSolver()),
                            constraint_solver=make_constraint_solver("BlockGaussSeidel"))
    simulation.run(2)
    assert simulation.frame == 2
    simulation.calls = count_calls(monkeypatch, elasticity, ("von_mises", "cauchy_stress"))
    return simulation


def _old_snapshot_fields(simulation):
    """The von Mises fields as Simulation.snapshot computed them before they became optional."""
    elasticity = simulation.problem.elasticity
    von_mises = np.nan_to_num(elasticity.von_mises(simulation.x))
    average = nodal_average_operator(simulation.tets, elasticity.volumes, simulation.X.shape[0])
    return von_mises, average @ von_mises


def test_a_snapshot_without_stress_fields_never_computes_the_stress(bent_beam):
    frame = bent_beam.snapshot(None, fields=())
    assert bent_beam.calls == {"von_mises": 0, "cauchy_stress": 0}
    assert frame.von_mises.shape == (0,) and frame.von_mises_nodal.shape == (0,)
    assert not frame.has_von_mises
    # everything else is there: positions, displacement, outputs
    np.testing.assert_array_equal(frame.x, bent_beam.x)
    assert frame.x is not bent_beam.x and frame.index == 2
    np.testing.assert_array_equal(frame.displacement, np.linalg.norm(bent_beam.x - bent_beam.X, axis=1))
    assert float(frame.displacement.max()) > 0.01  # the beam did bend


def test_a_snapshot_with_von_mises_equals_the_old_result_exactly(bent_beam):
    expected, expected_nodal = _old_snapshot_fields(bent_beam)
    bent_beam.calls["von_mises"] = 0
    for frame in (bent_beam.snapshot(None), bent_beam.snapshot(None, fields=SNAPSHOT_FIELDS),
                  bent_beam.snapshot(None, fields="von_mises")):
        assert frame.has_von_mises
        assert frame.von_mises.shape == (len(bent_beam.tets),) and frame.von_mises_nodal.shape == (len(bent_beam.X),)
        np.testing.assert_array_equal(frame.von_mises, expected)
        np.testing.assert_array_equal(frame.von_mises_nodal, expected_nodal)
    assert bent_beam.calls["von_mises"] == 3  # one stress pass per snapshot, none for the nodal average
    assert float(expected.max()) > 0.0


def test_von_mises_fields_of_other_positions_match_the_elasticity(bent_beam):
    x = bent_beam.X + 0.5 * (bent_beam.x - bent_beam.X)  # half the bending
    von_mises, nodal = bent_beam.von_mises_fields(x)
    elasticity = bent_beam.problem.elasticity
    np.testing.assert_array_equal(von_mises, np.nan_to_num(elasticity.von_mises(x)))
    np.testing.assert_allclose(nodal, bent_beam.nodal_average(von_mises), rtol=0, atol=0)
    full, _ = bent_beam.von_mises_fields()
    assert 0.2 < float(von_mises.max() / full.max()) < 0.8  # about half the stress of the bent state
    # the nodal average at one node, by hand: volume-weighted mean over the tets that hold it
    node = int(bent_beam.tets[0, 0])
    holding = np.flatnonzero(np.any(bent_beam.tets == node, axis=1))
    weights = elasticity.volumes[holding]
    assert nodal[node] == pytest.approx(float(weights @ von_mises[holding] / weights.sum()), rel=1e-12)


def test_unknown_snapshot_fields_are_refused(bent_beam):
    with pytest.raises(ParameterError, match=r"unknown snapshot field\(s\) 'stress'; allowed: von_mises"):
        bent_beam.snapshot(None, fields=("stress",))
