"""BarycentricMapping: exact reproduction, projection of outside points, errors."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.mapping import BarycentricMapping, closest_point_on_triangles


def box_mesh(shape=(2, 2, 2), size=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
    """Structured tet mesh of a box: ``shape`` hexahedra per axis, each split into 6 tets (Kuhn), positively
    oriented. Returns ``(X (n, 3), tets (m, 4))``; nodes are ordered with index ``(i * (ny+1) + j) * (nz+1)
    + k``."""
    nx, ny, nz = shape
    axes = [np.linspace(o, o + s, n + 1) for o, s, n in zip(origin, size, shape, strict=True)]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    ids = np.arange(X.shape[0]).reshape(nx + 1, ny + 1, nz + 1)
    corners = [(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)]  # bit pattern ijk -> corner id
    hexes = np.stack([ids[i : i + nx, j : j + ny, k : k + nz].reshape(-1) for i, j, k in corners], axis=1)
    tets = []
    for perm in itertools.permutations(range(3)):
        path, bits = [0], 0
        for axis in perm:
            bits |= 1 << (2 - axis)
            path.append(bits)
        tets.append(hexes[:, path])
    tets = np.concatenate(tets).astype(np.int64)
    negative = np.linalg.det(X[tets[:, 1:]] - X[tets[:, :1]]) < 0
    tets[negative] = tets[negative][:, [0, 2, 1, 3]]
    return X, tets


def test_box_mesh_is_valid():
    X, tets = box_mesh((3, 2, 2), size=(3.0, 2.0, 1.0))
    volumes = np.linalg.det(X[tets[:, 1:]] - X[tets[:, :1]]) / 6.0
    assert np.all(volumes > 0)
    assert volumes.sum() == pytest.approx(6.0, rel=1e-12)


def test_nodes_map_to_themselves():
    X, tets = box_mesh((3, 3, 3))
    mapping = BarycentricMapping(X, tets, X)
    np.testing.assert_allclose(mapping.apply(X), X, atol=1e-14)
    assert mapping.weights.max(axis=1) == pytest.approx(np.ones(X.shape[0]), abs=1e-12)
    np.testing.assert_allclose(mapping.distances, 0.0)


def test_affine_field_reproduced_and_weights_partition_unity():
    rng = np.random.default_rng(1)
    X, tets = box_mesh((4, 3, 5), size=(2.0, 1.5, 2.5), origin=(-1.0, 0.0, 0.5))
    points = X.min(axis=0) + rng.random((500, 3)) * (X.max(axis=0) - X.min(axis=0))
    mapping = BarycentricMapping(X, tets, points)
    np.testing.assert_allclose(mapping.weights.sum(axis=1), 1.0, atol=1e-13)
    assert mapping.weights.min() >= -1e-10
    np.testing.assert_allclose(mapping.apply(X), points, atol=1e-13)
    A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [1.0, 0.0, 1.0]])
    b = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(mapping.apply(X @ A.T + b), points @ A.T + b, atol=1e-12)
    # The matrix form agrees with apply.
    x = X + rng.normal(scale=0.1, size=X.shape)
    np.testing.assert_allclose(mapping.matrix() @ x.reshape(-1), mapping.apply(x).reshape(-1), atol=1e-13)
    assert mapping.matrix().shape == (3 * 500, 3 * X.shape[0])
    # Each point lies in its tet: recompute the weights from scratch.
    corners = X[tets[mapping.tet_ids]]
    np.testing.assert_allclose(np.einsum("ka,kac->kc", mapping.weights, corners), points, atol=1e-13)


def test_weights_invariant_under_affine_distortion():
    """A sheared, stretched mesh with the same transformation applied to the points gives the same weights."""
    rng = np.random.default_rng(2)
    X, tets = box_mesh((3, 3, 3))
    points = 0.02 + 0.96 * rng.random((200, 3))
    A = np.array([[3.0, 1.2, 0.0], [0.0, 0.3, 0.5], [0.4, 0.0, 2.0]])
    reference = BarycentricMapping(X, tets, points)
    distorted = BarycentricMapping(X @ A.T, tets, points @ A.T)
    np.testing.assert_array_equal(distorted.tet_ids, reference.tet_ids)
    np.testing.assert_allclose(distorted.weights, reference.weights, atol=1e-11)


def test_outside_points_within_tolerance_are_clamped_to_nearest_tet():
    X, tets = box_mesh((2, 2, 2))
    points = np.array([[1.0005, 0.5, 0.5], [-1e-4, -1e-4, 0.3], [0.25, 0.75, 1.0002]])
    mapping = BarycentricMapping(X, tets, points)
    np.testing.assert_allclose(mapping.distances, [5e-4, np.sqrt(2) * 1e-4, 2e-4], rtol=1e-9)
    assert mapping.weights.min() >= 0.0 and mapping.weights.max() <= 1.0
    np.testing.assert_allclose(mapping.weights.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(
        mapping.apply(X), [[1.0, 0.5, 0.5], [0.0, 0.0, 0.3], [0.25, 0.75, 1.0]], atol=1e-12
    )


def test_extrapolated_outside_points_keep_their_place_and_follow_their_tet():
    """extrapolate=True (SOFA's mapping of a collision surface): an outside point keeps its own coordinates in
    its nearest tetrahedron. They solve [x0 x1 x2 x3; 1 1 1 1] w = [p; 1] for that tetrahedron (numpy's solve),
    give the point back at rest and move it with the tetrahedron's affine motion; inside points are unchanged."""
    X, tets = box_mesh((2, 2, 2))
    points = np.array([[1.0005, 0.5, 0.5], [-1e-4, -1e-4, 0.3], [0.25, 0.75, 1.0002], [0.3, 0.6, 0.2]])
    clamped = BarycentricMapping(X, tets, points)
    mapping = BarycentricMapping(X, tets, points, extrapolate=True)
    np.testing.assert_array_equal(mapping.tet_ids, clamped.tet_ids)
    np.testing.assert_array_equal(mapping.weights[3], clamped.weights[3])
    np.testing.assert_allclose(mapping.distances, clamped.distances, rtol=0, atol=0)
    for i, point in enumerate(points):
        corners = X[tets[mapping.tet_ids[i]]]
        system = np.vstack([corners.T, np.ones(4)])
        np.testing.assert_allclose(mapping.weights[i], np.linalg.solve(system, [*point, 1.0]), atol=1e-13)
    assert mapping.weights[:3].min() < 0.0
    np.testing.assert_allclose(mapping.apply(X), points, rtol=0, atol=1e-15)
    A = np.array([[1.0, 0.2, 0.0], [0.1, 0.9, 0.3], [0.0, -0.2, 1.1]])
    b = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(mapping.apply(X @ A.T + b), points @ A.T + b, atol=1e-14)


def test_outside_point_beyond_tolerance_warns(caplog):
    X, tets = box_mesh((2, 2, 2))
    with caplog.at_level(logging.WARNING, logger="softsim.mechanics.mapping"):
        mapping = BarycentricMapping(X, tets, [[0.5, 0.5, 1.01]], tolerance=1e-3, max_distance=0.1)
    assert mapping.distances[0] == pytest.approx(0.01, rel=1e-9)
    np.testing.assert_allclose(mapping.apply(X), [[0.5, 0.5, 1.0]], atol=1e-12)
    assert any("1 points lie outside the mesh" in r.getMessage() for r in caplog.records)


def test_far_points_raise_with_count_and_first_points():
    X, tets = box_mesh((2, 2, 2))
    points = np.array([[0.5, 0.5, 0.5], [1.2, 1.2, 1.2], [5.0, 0.0, 0.0], [0.5, 0.5, 1.001]])
    with pytest.raises(ParameterError, match=r"2 of 4 points lie farther than max_distance=0.0866") as info:
        BarycentricMapping(X, tets, points)
    assert "#1 [1.2 1.2 1.2]" in str(info.value) and "#2" in str(info.value)
    with pytest.raises(ParameterError, match="tolerance"):
        BarycentricMapping(X, tets, points[:1], tolerance=1.0, max_distance=0.5)


def test_closest_point_on_triangle_regions():
    a, b, c = np.array([0.0, 0, 0]), np.array([1.0, 0, 0]), np.array([0.0, 1, 0])
    queries = np.array(
        [
            [0.2, 0.2, 1.0],  # face
            [-1.0, -1.0, 0.0],  # vertex a
            [2.0, -0.5, 0.0],  # vertex b
            [0.5, -1.0, 0.0],  # edge ab
            [1.0, 1.0, 0.0],  # edge bc
            [-1.0, 0.5, 0.0],  # edge ca
        ]
    )
    n = len(queries)
    closest, bary = closest_point_on_triangles(
        queries, np.tile(a, (n, 1)), np.tile(b, (n, 1)), np.tile(c, (n, 1))
    )
    expected = [[0.2, 0.2, 0.0], [0, 0, 0], [1, 0, 0], [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0]]
    np.testing.assert_allclose(closest, expected, atol=1e-15)
    np.testing.assert_allclose(bary.sum(axis=1), 1.0)
