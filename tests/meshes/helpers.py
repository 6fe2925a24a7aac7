"""Canonical small meshes for the mesh tests (values with infinite decimal expansions test precision)."""

from __future__ import annotations

import numpy as np

# Two positively oriented tetrahedra sharing the face (1, 2, 3).
TWO_TETS_POINTS = (
    np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]) / 3.0
)
TWO_TETS = np.array([[0, 1, 2, 3], [1, 4, 2, 3]], dtype=np.int64)


def points_in_mesh(points, tets, queries, tolerance=1e-9):
    """For each query point, whether some tetrahedron contains it (barycentric test, vectorised)."""
    corners = points[tets]  # (m, 4, 3)
    edges = np.transpose(corners[:, 1:] - corners[:, :1], (0, 2, 1))  # (m, 3, 3), columns = edges
    inverse = np.linalg.inv(edges)
    local = np.einsum("mij,qmj->qmi", inverse, queries[:, None, :] - corners[None, :, 0])
    bary = np.concatenate([1.0 - local.sum(axis=2, keepdims=True), local], axis=2)
    return np.any(np.all(bary >= -tolerance, axis=2), axis=1)
