"""Boundary extraction, surface defects and closed-surface geometry (vectorised: numpy sorts of integer row
keys, scipy's connected components).

- :func:`face_census` (and :func:`boundary_triangles`): the faces used once (the boundary) and the faces used
  three or more times (overlapping tetrahedra).
- :func:`edge_census`: open, non-manifold and inconsistently oriented edges and non-manifold vertices of a
  triangle surface; :func:`closure_defects` turns them into the sentence that refuses an open cavity.

Orientation conventions: a tetrahedron ``[a, b, c, d]`` is positive when ``det[b-a, c-a, d-a] > 0``.
Its four faces written as ``(b, c, d), (a, d, c), (a, b, d), (a, c, b)`` then have right-hand normals that
point out of the tetrahedron, so faces used by exactly one tetrahedron form the outward boundary.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = [
    "EdgeCensus",
    "FaceCensus",
    "boundary_triangles",
    "closure_defects",
    "edge_census",
    "enclosed_volume",
    "face_census",
    "is_closed",
    "sorted_tet_columns",
    "triangle_areas",
    "triangle_normals",
]

# Faces of a positively oriented tet with outward right-hand normals (face k is opposite vertex k).
TET_FACES_OUTWARD = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]], dtype=np.int64)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal keys: ``(order, run_starts, run_lengths)`` with ``keys[order]`` sorted (stable) and each run
    ``order[start:start + length]`` holding the positions of one key value."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    is_new = np.empty(sorted_keys.shape[0], dtype=bool)
    is_new[:1] = True
    is_new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    run_starts = np.flatnonzero(is_new)
    run_lengths = np.diff(np.append(run_starts, sorted_keys.shape[0]))
    return order, run_starts, run_lengths


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
    return face_census(tets, n_nodes).boundary


class FaceCensus(NamedTuple):
    """How often each tetrahedron face is used (see :func:`face_census`)."""

    #: (k, 3) faces used by exactly one tetrahedron, outward oriented, in the order of their tetrahedra
    boundary: np.ndarray
    #: ids of the tetrahedra owning a face that three or more tetrahedra share (overlapping elements)
    overlapping_tets: np.ndarray
    #: number of faces shared by three or more tetrahedra
    n_overfull_faces: int


def sorted_tet_columns(tets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The node ids of each tetrahedron in increasing order, as four (m,) columns: a sorting network of 5
    compare-swaps on contiguous columns, faster than ``np.sort(tets, axis=1)``'s sort per row (benchmarks/
    RESULTS.md, "Measurements moved out of docstrings")."""
    a, b, c, d = (np.ascontiguousarray(tets[:, k]) for k in range(4))
    a, b = np.minimum(a, b), np.maximum(a, b)
    c, d = np.minimum(c, d), np.maximum(c, d)
    a, c = np.minimum(a, c), np.maximum(a, c)
    b, d = np.minimum(b, d), np.maximum(b, d)
    b, c = np.minimum(b, c), np.maximum(b, c)
    return a, b, c, d


def face_census(tets: np.ndarray, n_nodes: int | None = None) -> FaceCensus:
    """Boundary faces and over-shared faces of a tetrahedral mesh in one sort of the 4 m faces.

    In a valid mesh a face is used by one tetrahedron (the boundary) or two (interior); three or more
    means overlapping elements.
    """
    tets = np.asarray(tets, dtype=np.int64)
    m = tets.shape[0]
    if m == 0:
        return FaceCensus(np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64), 0)
    if n_nodes is None:
        n_nodes = int(tets.max()) + 1
    s0, s1, s2, s3 = sorted_tet_columns(tets)
    # Face j * m + t of the keys omits the j-th smallest node of tetrahedron t; its sorted ids are the others.
    n = np.int64(max(n_nodes, 1))
    if n < 2_000_000:  # n**3 < 2**63
        s01, s12 = s0 * n + s1, s1 * n + s2
        keys = np.concatenate([s12 * n + s3, (s0 * n + s2) * n + s3, s01 * n + s3, s01 * n + s2])
    else:
        rows = np.ascontiguousarray(
            np.concatenate([np.column_stack(c) for c in ((s1, s2, s3), (s0, s2, s3), (s0, s1, s3), (s0, s1, s2))])
        )
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * 3))).ravel()
    order, run_starts, run_lengths = _runs(keys)
    single = order[run_starts[run_lengths == 1]]
    tet, omitted_rank = single % m, single // m
    omitted = np.stack([s0, s1, s2, s3])[omitted_rank, tet]
    corner = np.argmax(tets[tet] == omitted[:, None], axis=1)  # the omitted node's place in the tetrahedron
    owner_order = np.argsort(4 * tet + corner)
    tet, corner = tet[owner_order], corner[owner_order]
    boundary = np.take_along_axis(tets[tet], TET_FACES_OUTWARD[corner], axis=1)
    overfull = np.flatnonzero(run_lengths > 2)
    if overfull.size:
        members = np.concatenate([order[s : s + k] for s, k in zip(run_starts[overfull], run_lengths[overfull])])
        overlapping = np.unique(members % m)
    else:
        overlapping = np.zeros(0, dtype=np.int64)
    return FaceCensus(boundary, overlapping, int(overfull.size))


class EdgeCensus(NamedTuple):
    """Edge defects of a triangle surface (see :func:`edge_census`); each array is (k, 2) vertex ids."""

    #: edges used by one triangle only (holes, an open surface)
    open_edges: np.ndarray
    #: edges used by three or more triangles (non-manifold)
    nonmanifold_edges: np.ndarray
    #: edges used by two triangles traversing them in the same direction (inconsistent orientation)
    misoriented_edges: np.ndarray
    #: vertices where the triangles around the vertex form several fans touching only at the vertex
    nonmanifold_vertices: np.ndarray


def edge_census(triangles: np.ndarray, n_nodes: int | None = None) -> EdgeCensus:
    """Open, non-manifold and inconsistently oriented edges, and non-manifold vertices, of a triangle surface.

    A surface is closed, manifold and consistently oriented exactly when the three edge arrays are empty and
    no vertex is non-manifold. Vertices on a non-manifold edge are not reported again as non-manifold
    vertices (the triangles around such an edge are counted as one fan).
    """
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    empty = np.zeros((0, 2), dtype=np.int64)
    if triangles.shape[0] == 0:
        return EdgeCensus(empty, empty, empty, np.zeros(0, dtype=np.int64))
    if n_nodes is None:
        n_nodes = int(triangles.max()) + 1
    n = np.int64(max(n_nodes, 1))
    start = triangles.reshape(-1)
    end = triangles[:, [1, 2, 0]].reshape(-1)
    low, high = np.minimum(start, end), np.maximum(start, end)
    if n < 3_000_000_000:  # n**2 < 2**63
        keys = low * n + high
    else:
        pairs = np.ascontiguousarray(np.column_stack([low, high]))
        keys = pairs.view(np.dtype((np.void, pairs.dtype.itemsize * 2))).ravel()
    order, run_starts, run_lengths = _runs(keys)
    first = order[run_starts]
    edges = np.column_stack([low[first], high[first]])
    twice = run_starts[run_lengths == 2]
    same_direction = start[order[twice]] == start[order[twice + 1]]
    misoriented = edges[run_lengths == 2][same_direction]

    # Fans around each vertex: one graph node per (triangle, corner); the two corners on the same vertex of
    # two triangles that follow each other around an edge are linked; the fans of a vertex are the
    # connected components among its corners.
    same_edge = np.flatnonzero(keys[order[1:]] == keys[order[:-1]])
    a, b = order[same_edge], order[same_edge + 1]  # half-edges (3 t + j: from corner j to corner j + 1)
    a_next, b_next = a - a % 3 + (a % 3 + 1) % 3, b - b % 3 + (b % 3 + 1) % 3
    # the corner of the lower vertex in each half-edge, then the corner of the higher vertex
    a_low = np.where(start[a] == low[a], a, a_next)
    b_low = np.where(start[b] == low[b], b, b_next)
    a_high = np.where(start[a] == low[a], a_next, a)
    b_high = np.where(start[b] == low[b], b_next, b)
    n_corners = start.size
    rows = np.concatenate([a_low, a_high])
    cols = np.concatenate([b_low, b_high])
    graph = sp.coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n_corners, n_corners))
    n_fans, fan = connected_components(graph, directed=False)
    vertex_fans = np.unique(start * np.int64(n_fans) + fan)
    fans_per_vertex = np.bincount(vertex_fans // n_fans, minlength=int(n))
    return EdgeCensus(
        open_edges=edges[run_lengths == 1],
        nonmanifold_edges=edges[run_lengths > 2],
        misoriented_edges=misoriented,
        nonmanifold_vertices=np.flatnonzero(fans_per_vertex > 1),
    )


def closure_defects(points: np.ndarray, triangles: np.ndarray) -> str | None:
    """Why a triangle surface does not enclose a volume, or None when it is closed.

    Closed means: every edge shared by exactly two triangles traversing it in opposite directions
    (watertight, manifold along its edges, consistently oriented), as the divergence-theorem volume of a
    cavity and its gradient (the pressure forces) require. The sentence gives the count of each kind of bad
    edge and where the first one is.
    """
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if triangles.shape[0] == 0:
        return "no triangles"
    points = np.asarray(points, dtype=np.float64)
    census = edge_census(triangles, points.shape[0])
    parts = []
    for edges, what in (
        (census.open_edges, "open edges (used by one triangle only: the surface has holes)"),
        (census.nonmanifold_edges, "non-manifold edges (used by three or more triangles)"),
        (census.misoriented_edges, "edges traversed twice in the same direction (inconsistently oriented "
         "triangles: some normals point inward)"),
    ):
        if len(edges):
            x, y, z = points[edges[0]].mean(axis=0)
            parts.append(f"{len(edges)} {what}, the first at ({x:.4g}, {y:.4g}, {z:.4g})")
    return "; ".join(parts) or None


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
