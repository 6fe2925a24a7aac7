"""Lumped masses, gravity, nodal forces and follower pressure."""

import numpy as np
import pytest

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.loads import Gravity, NodalForce, PressureLoad, lumped_masses

UNIT_TET = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])


def cube_tets():
    """Unit cube split into 6 positively oriented tets around the diagonal 0-7."""
    X = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=float)
    tets = np.array([[0, 4, 6, 7], [0, 6, 2, 7], [0, 2, 3, 7], [0, 3, 1, 7], [0, 1, 5, 7], [0, 5, 4, 7]])
    edges = X[tets[:, 1:]] - X[tets[:, :1]]
    negative = np.linalg.det(edges) < 0
    tets[negative] = tets[negative][:, [0, 2, 1, 3]]
    return X, tets


def test_lumped_masses():
    masses = lumped_masses(UNIT_TET, [[0, 1, 2, 3]], 6.0)  # volume 1/6, mass 1
    assert np.allclose(masses, 0.25, rtol=1e-15)
    X, tets = cube_tets()
    masses = lumped_masses(X, tets, 1000.0)
    assert masses.sum() == pytest.approx(1000.0, rel=1e-14)
    assert masses[0] == pytest.approx(1000.0 / 6 / 4 * 6)  # node 0 is in all 6 tets
    by_total = lumped_masses(X, tets, total_mass=2.5)
    assert by_total.sum() == pytest.approx(2.5, rel=1e-14)
    per_tet = lumped_masses(X, tets, np.array([1.0, 1, 1, 1, 1, 7]))
    assert per_tet.sum() == pytest.approx((5 + 7) / 6, rel=1e-14)
    with pytest.raises(ParameterError, match="exactly one of density and total_mass"):
        lumped_masses(X, tets)
    with pytest.raises(ParameterError, match="density must be finite and > 0"):
        lumped_masses(X, tets, -1.0)
    with pytest.raises(ParameterError, match="allowed range is 0..7"):
        lumped_masses(X, tets + 1, 1.0)


def test_gravity_and_nodal_force():
    masses = np.array([1.0, 2.0, 0.5])
    gravity = Gravity(masses, (0.0, 0.0, -9.81))
    x = np.arange(9.0).reshape(3, 3)
    f = gravity.force(x)
    assert np.allclose(f[:, 2], -9.81 * masses) and np.all(f[:, :2] == 0)
    assert gravity.potential(x) == pytest.approx(9.81 * np.dot(masses, x[:, 2]))
    assert gravity.tangent(x) is None
    gravity.g = (0.0, -9810.0, 0.0)  # live change
    assert gravity.force(x)[1, 1] == -19620.0
    nodal = NodalForce([0, 2], (1.0, -2.0, 4.0))
    f = nodal.force(x)
    assert np.allclose(f[[0, 2]], [0.5, -1.0, 2.0]) and np.all(f[1] == 0)
    assert np.allclose(f.sum(axis=0), [1.0, -2.0, 4.0])
    assert nodal.potential(x) == pytest.approx(-np.sum(f * x))
    with pytest.raises(ParameterError, match="must not repeat"):
        NodalForce([1, 1], (0, 0, 1))
    with pytest.raises(ParameterError, match="finite 3-vector"):
        Gravity(masses, (0.0, 1.0))
    with pytest.raises(ParameterError, match="number of nodes"):
        NodalForce([5], (0, 0, 1)).force(x)


def test_pressure_on_a_triangle_and_closed_surface():
    x = UNIT_TET.copy()
    load = PressureLoad([[0, 1, 2]], 3.0)  # normal (0, 0, 1), area 1/2
    f = load.force(x)
    assert np.allclose(f[:3], [0.0, 0.0, 3.0 * 0.5 / 3]) and np.all(f[3] == 0)
    # closed outward-oriented surface of a tet: force = p dV/dx (pressure does work p dV), total force 0
    surface = PressureLoad([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], 2.0)
    rng = np.random.default_rng(0)
    y = x + 0.1 * rng.standard_normal(x.shape)

    def volume(points):
        return np.linalg.det(points[1:] - points[0]) / 6.0

    h = 1e-6
    gradient = np.zeros_like(y)
    for node in range(4):
        for k in range(3):
            step = np.zeros_like(y)
            step[node, k] = h
            gradient[node, k] = (volume(y + step) - volume(y - step)) / (2 * h)
    assert np.abs(surface.force(y) - 2.0 * gradient).max() < 1e-9
    assert np.abs(surface.force(y).sum(axis=0)).max() < 1e-14


def test_pressure_tangent_matches_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    load = PressureLoad([[0, 1, 2], [1, 3, 4], [2, 4, 0]], -1.7)
    K = load.tangent(x).toarray()
    h = 1e-6
    fd = np.zeros((15, 15))
    for dof in range(15):
        step = np.zeros(15)
        step[dof] = h
        plus = load.force((x.reshape(-1) + step).reshape(5, 3)).reshape(-1)
        minus = load.force((x.reshape(-1) - step).reshape(5, 3)).reshape(-1)
        fd[:, dof] = -(plus - minus) / (2 * h)
    assert np.abs(K - fd).max() < 1e-8
    load.pressure = 0.0
    assert load.tangent(x).count_nonzero() == 0
    with pytest.raises(ParameterError, match="shape \\(k, 3\\)"):
        PressureLoad([[0, 1]], 1.0)
