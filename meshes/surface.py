"""Boundary extraction and closed-surface geometry (vectorised, numpy only).

Orientation conventions: a tetrahedron ``[a, b, c, d]`` is positive when ``det[b-a, c-a, d-a] > 0``.
Its four faces written as ``(b, c, d), (a, d, c), (a, b, d), (a, c, b)`` then have right-hand normals that
point out of the tetrahedron, so faces used by exactly one tetrahedron form the outward boundary.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "boundary_triangles",
    "enclosed_volume",
    "is_closed",
    "triangle_areas",
    "triangle_normals",
]

# Faces of a positively oriented tet with outward right-hand normals (face k is opposite vertex k).
TET_FACES_OUTWARD = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]], dtype=np.int64)


def _row_keys(sorted_rows: np.ndarray, n_nodes: int) -> np.ndarray:
    """One int64 key per row of sorted node ids (rows of 3), or a structured view when ids are too large."""
    n = np.int64(max(n_nodes, 1))
    if n < 2_000_000:  # n**3 < 2**63
        return (sorted_rows[:, 0] * n + sorted_rows[:, 1]) * n + sorted_rows[:, 2]
    contiguous = np.ascontiguousarray(sorted_rows)
    return contiguous.view(np.dtype((np.void, contiguous.dtype.itemsize * 3))).ravel()


def boundary_triangles(tets: np.ndarray, n_nodes: int | None = None) -> np.ndarray:
    """Faces used by exactly one tetrahedron, outward oriented.

    Parameters
    ----------
    tets : (m, 4) int64, positively oriented tetrahedra.
    n_nodes : number of nodes (defaults to ``tets.max() + 1``).

    Returns
    -------
    (k, 3) int64 node ids, in the order of the tetrahedra that own them.
    """
    tets = np.asarray(tets, dtype=np.int64)
    if tets.shape[0] == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if n_nodes is None:
        n_nodes = int(tets.max()) + 1
    faces = tets[:, TET_FACES_OUTWARD].reshape(-1, 3)
    keys = _row_keys(np.sort(faces, axis=1), n_nodes)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    is_new = np.empty(sorted_keys.shape[0], dtype=bool)
    is_new[0] = True
    is_new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    run_starts = np.flatnonzero(is_new)
    run_lengths = np.diff(np.append(run_starts, sorted_keys.shape[0]))
    single = order[run_starts[run_lengths == 1]]
    return faces[np.sort(single)]


def triangle_normals(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted normals ``(p1 - p0) x (p2 - p0)`` of shape (k, 3); their length is twice the area."""
    p = np.asarray(points, dtype=np.float64)[np.asarray(triangles, dtype=np.int64)]
    return np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])


def triangle_areas(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Triangle areas, shape (k,)."""
    return 0.5 * np.linalg.norm(triangle_normals(points, triangles), axis=1)


def enclosed_volume(points: np.ndarray, triangles: np.ndarray) -> float:
    """Signed volume enclosed by a closed triangle surface (divergence theorem).

    Positive when the right-hand normals point out of the enclosed region. Computed as
    ``sum p0 . (p1 x p2) / 6`` after shifting by the centroid of the used points to limit round-off.
    """
    triangles = np.asarray(triangles, dtype=np.int64)
    if triangles.shape[0] == 0:
        return 0.0
    points = np.asarray(points, dtype=np.float64)
    origin = points[np.unique(triangles)].mean(axis=0)
    p = points[triangles] - origin
    return float(np.einsum("ij,ij->", p[:, 0], np.cross(p[:, 1], p[:, 2])) / 6.0)


def is_closed(triangles: np.ndarray) -> bool:
    """True when every edge is shared by exactly two triangles traversing it in opposite directions.

    This means the surface is closed (watertight), manifold along its edges and consistently oriented.
    """
    triangles = np.asarray(triangles, dtype=np.int64)
    if triangles.shape[0] == 0:
        return False
    n = np.int64(triangles.max() + 1)
    start = triangles.reshape(-1)
    end = triangles[:, [1, 2, 0]].reshape(-1)
    directed = np.sort(start * n + end)
    if np.any(directed[1:] == directed[:-1]):
        return False
    reverse = np.sort(end * n + start)
    return bool(np.array_equal(directed, reverse))
