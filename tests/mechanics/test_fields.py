import numpy as np

from softsim.mechanics.fields import displacement_magnitude, nodal_average_operator


def test_nodal_average_is_volume_weighted():
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    A = nodal_average_operator(tets, np.array([1.0, 3.0]), 6)
    values = A @ np.array([10.0, 20.0])
    # nodes 1..3 are shared: (1*10 + 3*20) / 4 = 17.5; node 0 only in tet 0, node 4 only in tet 1, node 5 in none
    np.testing.assert_allclose(values, [10.0, 17.5, 17.5, 17.5, 20.0, 0.0])


def test_displacement_magnitude():
    X = np.zeros((2, 3))
    x = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, -2.0]])
    np.testing.assert_allclose(displacement_magnitude(x, X), [5.0, 2.0])
