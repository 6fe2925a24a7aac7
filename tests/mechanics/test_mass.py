"""Mass matrices of P1 tets (consistent and lumped) and Rayleigh damping."""

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.mass import TetMass, rayleigh_damping
from softsim.meshes.generate import beam


@pytest.fixture(scope="module")
def mesh():
    return beam(length=2.0, width=0.5, height=0.25, nx=4, ny=2, nz=1)


def test_single_tet_consistent_entries():
    X = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    mass = TetMass(X, [[0, 1, 2, 3]], massDensity=6.0)  # V = 1/6, rho V = 1
    M = mass.matrix.toarray()
    assert M[0, 0] == pytest.approx(1.0 / 10.0)  # rho V / 20 * 2
    assert M[0, 3] == pytest.approx(1.0 / 20.0)  # node 0 x with node 1 x
    assert M[0, 1] == 0.0  # no coupling between components
    assert mass.nodal_masses == pytest.approx(np.full(4, 0.25))
    assert np.allclose(M, M.T)
    assert np.all(np.linalg.eigvalsh(M) > 0.0)


@pytest.mark.parametrize("lumped", [False, True])
def test_total_mass_is_density_times_volume(mesh, lumped):
    mass = TetMass(mesh.points, mesh.tets, massDensity=1200.0, lumped=lumped)
    volume = 2.0 * 0.5 * 0.25
    assert mass.total_mass == pytest.approx(1200.0 * volume, rel=1e-12)
    assert mass.matrix.sum() / 3.0 == pytest.approx(1200.0 * volume, rel=1e-12)
    by_total = TetMass(mesh.points, mesh.tets, totalMass=0.075, lumped=lumped)
    assert by_total.matrix.sum() / 3.0 == pytest.approx(0.075, rel=1e-12)
    assert by_total.density == pytest.approx(np.full(mesh.n_tets, 0.075 / volume))


def test_consistent_times_constant_field_is_lumped(mesh):
    consistent = TetMass(mesh.points, mesh.tets, massDensity=3.0)
    lumped = TetMass(mesh.points, mesh.tets, massDensity=3.0, lumped=True)
    field = np.tile([0.3, -2.0, 1.5], mesh.n_points)
    assert np.allclose(consistent.matrix @ field, lumped.matrix @ field, rtol=1e-12, atol=0.0)
    assert sp.issparse(lumped.matrix) and lumped.matrix.nnz == 3 * mesh.n_points
    assert np.allclose(consistent.nodal_masses, lumped.nodal_masses)


@pytest.mark.parametrize("lumped", [False, True])
def test_kinetic_energy_of_rigid_translation(mesh, lumped):
    mass = TetMass(mesh.points, mesh.tets, massDensity=2.0, lumped=lumped)
    velocity = np.array([1.0, -2.0, 0.5])
    v = np.tile(velocity, (mesh.n_points, 1))
    expected = 0.5 * (2.0 * 0.25) * velocity @ velocity  # m = rho V = 0.5
    assert mass.kinetic_energy(v) == pytest.approx(expected, rel=1e-12)


def test_per_tet_density(mesh):
    density = np.where(np.arange(mesh.n_tets) % 2 == 0, 1.0, 3.0)
    mass = TetMass(mesh.points, mesh.tets, massDensity=density)
    assert mass.total_mass == pytest.approx(float(density @ mesh.volumes()), rel=1e-12)


def test_rayleigh_damping_sign_and_values():
    M = sp.diags([2.0, 2.0, 2.0]).tocsr()
    K = sp.csr_matrix(np.array([[4.0, -1.0, 0.0], [-1.0, 4.0, 0.0], [0.0, 0.0, 1.0]]))
    C = rayleigh_damping(M, K, 0.1, 0.5).toarray()
    assert C[0, 0] == pytest.approx(0.1 * 2.0 + 0.5 * 4.0)
    assert C[0, 1] == pytest.approx(-0.5)
    assert np.all(np.linalg.eigvalsh(C) > 0.0)  # dissipative: f_damp . v = -v^T C v < 0
    with pytest.raises(ParameterError, match="rayleighStiffness"):
        rayleigh_damping(M, K, 0.1, -1.0)


def test_bad_input_is_rejected(mesh):
    with pytest.raises(ParameterError, match="exactly one of massDensity and totalMass"):
        TetMass(mesh.points, mesh.tets)
    with pytest.raises(ParameterError, match="massDensity"):
        TetMass(mesh.points, mesh.tets, massDensity=-1.0)
    with pytest.raises(ParameterError, match="totalMass"):
        TetMass(mesh.points, mesh.tets, totalMass=float("nan"))
    with pytest.raises(ParameterError, match="tets"):
        TetMass(mesh.points, mesh.tets[:, :3], massDensity=1.0)
