"""The runaway test's scan of a trial state against numpy's separate passes."""

from __future__ import annotations

import numpy as np

from softsim.mechanics.runaway import scan_positions


def test_the_scan_matches_numpy_on_a_random_state():
    rng = np.random.default_rng(3)
    rest = rng.uniform(-5.0, 20.0, size=(500, 3))
    x = rest + rng.normal(scale=0.3, size=rest.shape)
    x[417] += [4.0, -3.0, 0.0]  # the farthest node, 5 from where the noise put it
    finite, node, moved = scan_positions(x, rest)
    distances = np.linalg.norm(x - rest, axis=1)
    assert finite and node == int(np.argmax(distances)) == 417
    assert moved == distances[417]


def test_body_size_is_the_diagonal_of_the_bounding_box():
    """body_size against numpy's reductions over the rows, on a C-ordered array, a Fortran-ordered one and none."""
    from softsim.mechanics.equilibrium import body_size

    rest = np.random.default_rng(5).uniform(-5.0, 20.0, size=(300, 3))
    expected = np.linalg.norm(rest.max(axis=0) - rest.min(axis=0))
    assert body_size(rest) == expected == body_size(np.asfortranarray(rest))
    assert body_size(np.zeros((0, 3))) == 0.0


def test_a_non_finite_position_is_found_wherever_it_is():
    rest = np.zeros((10, 3))
    for value in (np.nan, np.inf, -np.inf):
        x = rest.copy()
        x[9, 2] = value
        assert not scan_positions(x, rest)[0]
    assert scan_positions(np.zeros((0, 3)), np.zeros((0, 3)))[0]


def test_check_state_names_the_node_that_ran_away_and_non_finite_positions():
    """A box mesh of 10 x 2 x 2 mm (diagonal 10.4 mm): a node moved 200 mm ran away (more than
    10 times the body's size), one moved 50 mm did not; a NaN is named as such."""
    from types import SimpleNamespace

    from softsim.mechanics.fem import TetElasticity
    from softsim.mechanics.frame_step import check_state
    from tests.mechanics.test_mapping import box_mesh

    X, tets = box_mesh((5, 1, 1), size=(10.0, 2.0, 2.0))
    problem = SimpleNamespace(elasticity=TetElasticity(X, tets, model="corotational", young=1.0, poisson=0.3))
    x = X.copy()
    x[7] += [0.0, 50.0, 0.0]
    assert check_state(problem, x) == ""
    x[7] += [0.0, 150.0, 0.0]
    message = check_state(problem, x)
    size = np.linalg.norm([10.0, 2.0, 2.0])
    assert message == (f"the solve ran away: node 7 moved {200.0:.4g}, more than 10 times the body's size "
                       f"({size:.4g})")
    x[3, 1] = np.nan
    assert check_state(problem, x) == "the solve produced non-finite positions"
