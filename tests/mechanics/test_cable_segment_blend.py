"""A cable segment whose two points meet: SOFA's length |p_k - p_{k-1}| has a kink there (its direction flips),
so a segment shorter than SEGMENT_BLEND of its rest length counts with the parabola (s^2 + delta^2) / (2 delta)
(mechanics/constraints/cable.py). Checked here: the length is the polyline's wherever every segment is at least
delta long, the blended length and its gradient against the formula and central differences, continuity at
s = delta, and the force stiffness of a nearly collapsed segment against differences of the cable's row."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.constraints import CableConstraint, cable_length_and_gradient
from softsim.mechanics.constraints.cable import SEGMENT_BLEND, segment_blend
from tests.mechanics.test_mapping import box_mesh


def _difference_gradient(points, pull, blend, h):
    flat = points.reshape(-1).copy()
    gradient = np.empty_like(flat)
    for i in range(flat.size):
        flat[i] += h
        plus = cable_length_and_gradient(flat.reshape(points.shape), pull, blend)[0]
        flat[i] -= 2 * h
        minus = cable_length_and_gradient(flat.reshape(points.shape), pull, blend)[0]
        flat[i] += h
        gradient[i] = (plus - minus) / (2 * h)
    return gradient.reshape(points.shape)


def test_segments_longer_than_the_blend_keep_the_polyline_length():
    rng = np.random.default_rng(7)
    rest = np.cumsum(rng.uniform(1.0, 3.0, size=(6, 3)), axis=0)
    pull = np.array([-2.0, 0.5, 0.0])
    blend = segment_blend(rest, pull)
    moved = rest + rng.normal(scale=0.2, size=rest.shape)
    ends = np.vstack([pull, moved])
    expected = float(np.sum(np.linalg.norm(np.diff(ends, axis=0), axis=1)))
    length, gradient = cable_length_and_gradient(moved, pull, blend)
    plain_length, plain_gradient = cable_length_and_gradient(moved, pull)
    assert length == pytest.approx(expected, rel=1e-14)
    assert length == plain_length
    np.testing.assert_array_equal(gradient, plain_gradient)
    # the blend lengths: SEGMENT_BLEND times each rest segment, the first from the pull point
    assert blend[0] == pytest.approx(SEGMENT_BLEND * np.linalg.norm(rest[0] - pull), rel=1e-14)
    assert blend[3] == pytest.approx(SEGMENT_BLEND * np.linalg.norm(rest[3] - rest[2]), rel=1e-14)


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.999, 1.001, 3.0])
def test_a_short_segment_counts_the_parabola_with_a_continuous_gradient(fraction):
    """Two points, no pull point, blend delta = 0.01: at s = fraction * delta the length is
    (s^2 + delta^2) / (2 delta) below delta and s above (0.005 when the points coincide), and the gradient
    agrees with central differences (h = 1e-7, far below delta)."""
    delta = 0.01
    blend = np.array([0.0, delta])
    direction = np.array([2.0, -1.0, 2.0]) / 3.0
    s = fraction * delta
    points = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0] + s * direction])
    length, gradient = cable_length_and_gradient(points, None, blend)
    expected = (s * s + delta * delta) / (2 * delta) if s < delta else s
    assert length == pytest.approx(expected, rel=1e-12, abs=1e-15)
    if fraction == 0.0:
        assert length == pytest.approx(0.005, rel=1e-12)
    np.testing.assert_allclose(gradient, _difference_gradient(points, None, blend, 1e-7), atol=1e-6)


def test_the_blend_meets_the_length_at_delta():
    delta = 0.02
    blend = np.array([0.0, delta])
    below = np.array([[0.0, 0.0, 0.0], [delta * (1 - 1e-9), 0.0, 0.0]])
    above = np.array([[0.0, 0.0, 0.0], [delta * (1 + 1e-9), 0.0, 0.0]])
    length_below, gradient_below = cable_length_and_gradient(below, None, blend)
    length_above, gradient_above = cable_length_and_gradient(above, None, blend)
    assert abs(length_above - length_below) < 1e-10
    np.testing.assert_allclose(gradient_below, gradient_above, atol=1e-8)


def test_the_force_stiffness_of_a_nearly_collapsed_segment_is_the_derivative_of_the_row():
    """A cable through four nodes of a box whose last two nodes are moved to 0.3 delta of each other: the
    force stiffness (lambda d2L/dx2, triplets) against central differences of -J(x)^T lambda."""
    X, tets = box_mesh((3, 2, 2), size=(6.0, 2.0, 2.0))
    nodes = np.array([int(np.argmin(np.linalg.norm(X - p, axis=1))) for p in
                      ([0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0])])
    cable = CableConstraint(X, tets, indices=nodes, pullPoint=np.array([-3.0, 0.0, 0.0]), minForce=0.0)
    delta = SEGMENT_BLEND * 2.0
    x = X.copy()
    x[nodes[3]] = x[nodes[2]] + 0.3 * delta * np.array([0.6, 0.0, 0.8])
    lam = np.array([2.5])
    assert cable.length(x) == pytest.approx(3.0 + 2.0 + 2.0 + ((0.3 * delta) ** 2 + delta ** 2) / (2 * delta),
                                            rel=1e-13)
    rows, cols, values = cable.force_stiffness(x, lam)
    n = x.size
    stiffness = np.zeros((n, n))
    np.add.at(stiffness, (rows, cols), values)
    h = 1e-6 * delta
    difference = np.zeros((n, n))
    flat = x.reshape(-1)
    for j in range(n):
        plus, minus = flat.copy(), flat.copy()
        plus[j] += h
        minus[j] -= h
        force_plus = -(cable.jacobian(plus.reshape(x.shape)).T @ lam)
        force_minus = -(cable.jacobian(minus.reshape(x.shape)).T @ lam)
        difference[:, j] = (np.asarray(force_plus).ravel() - np.asarray(force_minus).ravel()) / (2 * h)
    # the short segment's spring lambda / delta, plus the 2 mm segment before it across its direction (lambda / 2)
    assert np.max(np.abs(stiffness)) == pytest.approx(lam[0] / delta + lam[0] / 2.0, rel=1e-12)
    np.testing.assert_allclose(stiffness, difference, atol=1e-6 * lam[0] / delta)


def test_a_slack_cable_has_no_force_stiffness_on_the_same_pattern():
    """A cable at zero force (slack) adds nothing to the tangent, on the same entries as a pulling one (the
    constrained tangent keeps its pattern and its factorization's analysis when a cable goes slack); at a
    tension it adds the differences of -J(x)^T lambda, so the zero is the force stiffness's own value at 0."""
    X, tets = box_mesh((3, 2, 2), size=(6.0, 2.0, 2.0))
    cable = CableConstraint(X, tets, points=np.array([[0.5, 1.0, 1.0], [3.0, 1.2, 1.0], [5.5, 1.0, 0.8]]),
                            minForce=0.0, hasPullPoint=False)
    x = X + 0.05 * np.sin(X[:, [1, 2, 0]])
    rows, cols, values = cable.force_stiffness(x, np.array([0.0]))
    pulling = cable.force_stiffness(x, np.array([3.0]))
    assert np.array_equal(rows, pulling[0]) and np.array_equal(cols, pulling[1])
    assert values.shape == pulling[2].shape and not values.any() and np.abs(pulling[2]).max() > 0.1
