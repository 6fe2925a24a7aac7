"""Validation and repair of tetrahedral meshes (vectorised).

Errors (raise :class:`MeshError`): no tetrahedra, wrong array shapes, NaN or infinite coordinates, node ids
out of range, degenerate tetrahedra, named sets with ids out of range.
Repairs (recorded in ``TetMesh.problems`` and logged as warnings): inverted tetrahedra are reoriented,
unreferenced nodes are dropped (sets remapped, ``original_node_ids`` kept).
Warnings only: duplicate (coincident) nodes, disconnected parts.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from meshes.errors import MeshError
from meshes.tetmesh import TetMesh, tet_signed_volumes

__all__ = [
    "DEGENERATE_RELATIVE_VOLUME",
    "DUPLICATE_RELATIVE_DISTANCE",
    "repair",
]

logger = logging.getLogger(__name__)

#: A tetrahedron is degenerate when ``|volume| < DEGENERATE_RELATIVE_VOLUME * mean(|volume|)``.
DEGENERATE_RELATIVE_VOLUME = 1e-10
#: Two nodes are duplicates when they coincide within this fraction of the bounding-box diagonal.
DUPLICATE_RELATIVE_DISTANCE = 1e-9
_SHOWN_IDS = 10


def _first(ids: np.ndarray) -> str:
    """``[a, b, c]`` with at most _SHOWN_IDS entries (and ``, ...`` when there are more)."""
    ids = np.asarray(ids).reshape(-1)
    text = ", ".join(str(int(i)) for i in ids[:_SHOWN_IDS])
    return f"[{text}{', ...' if ids.size > _SHOWN_IDS else ''}]"


def _label(source: str) -> str:
    return Path(source).name if source and not source.startswith("<") else (source or "<arrays>")


def _as_points(points, label: str) -> np.ndarray:
    try:
        points = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MeshError(f"{label}: points are not numeric ({exc})") from exc
    if points.ndim != 2 or points.shape[1] != 3:
        raise MeshError(f"{label}: points must have shape (n, 3), got {points.shape}")
    return points


def _as_tets(tets, label: str) -> np.ndarray:
    tets = np.asarray(tets)
    if tets.size == 0:
        raise MeshError(f"{label}: no tetrahedra")
    if tets.ndim != 2 or tets.shape[1] != 4:
        raise MeshError(f"{label}: tetrahedra must have shape (m, 4), got {tets.shape}")
    if not np.issubdtype(tets.dtype, np.integer):
        if not np.all(np.isfinite(tets)) or np.any(tets != np.round(tets)):
            raise MeshError(f"{label}: tetrahedron node ids must be integers")
    return np.ascontiguousarray(tets, dtype=np.int64)


def _check_sets(point_sets, cell_sets, triangle_sets, n_points: int, n_tets: int, label: str):
    checked_points, checked_cells, checked_triangles = {}, {}, {}
    for name, ids in (point_sets or {}).items():
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        bad = np.flatnonzero((ids < 0) | (ids >= n_points))
        if bad.size:
            raise MeshError(
                f"{label}: point set {name!r}: {bad.size} node ids outside [0, {n_points - 1}], "
                f"first {_first(ids[bad])}"
            )
        checked_points[str(name)] = ids
    for name, ids in (cell_sets or {}).items():
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        bad = np.flatnonzero((ids < 0) | (ids >= n_tets))
        if bad.size:
            raise MeshError(
                f"{label}: cell set {name!r}: {bad.size} tetrahedron ids outside [0, {n_tets - 1}], "
                f"first {_first(ids[bad])}"
            )
        checked_cells[str(name)] = ids
    for name, tris in (triangle_sets or {}).items():
        tris = np.asarray(tris, dtype=np.int64)
        if tris.size and (tris.ndim != 2 or tris.shape[1] != 3):
            raise MeshError(f"{label}: triangle set {name!r} must have shape (k, 3), got {tris.shape}")
        tris = tris.reshape(-1, 3)
        bad = np.flatnonzero(np.any((tris < 0) | (tris >= n_points), axis=1))
        if bad.size:
            raise MeshError(
                f"{label}: triangle set {name!r}: {bad.size} triangles reference node ids outside "
                f"[0, {n_points - 1}], first triangle ids {_first(bad)}"
            )
        checked_triangles[str(name)] = tris
    return checked_points, checked_cells, checked_triangles


def _warn(problems: list[str], label: str, message: str) -> None:
    problems.append(message)
    logger.warning("%s: %s", label, message)


def _duplicate_nodes(points: np.ndarray) -> tuple[int, np.ndarray]:
    """Number of nodes that coincide with an earlier node, and (k, 2) example pairs (first, duplicate)."""
    if points.shape[0] < 2:
        return 0, np.zeros((0, 2), dtype=np.int64)
    low = points.min(axis=0)
    diagonal = float(np.linalg.norm(points.max(axis=0) - low))
    if diagonal == 0.0:
        first = np.zeros(points.shape[0] - 1, dtype=np.int64)
        return points.shape[0] - 1, np.column_stack([first, np.arange(1, points.shape[0])])
    quantum = DUPLICATE_RELATIVE_DISTANCE * diagonal
    keys = np.round((points - low) / quantum).astype(np.int64)
    _, first_index, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    representative = first_index[inverse]
    duplicates = np.flatnonzero(representative != np.arange(points.shape[0]))
    pairs = np.column_stack([representative[duplicates], duplicates])
    return int(duplicates.size), pairs


def _component_sizes(tets: np.ndarray, n_points: int) -> np.ndarray:
    """Number of tetrahedra in each connected part (parts sharing at least one node are connected)."""
    rows = np.repeat(tets[:, 0], 3)
    cols = tets[:, 1:].reshape(-1)
    graph = sp.coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n_points, n_points))
    n_parts, labels = connected_components(graph, directed=False)
    if n_parts == 1:
        return np.array([tets.shape[0]])
    return np.sort(np.bincount(labels[tets[:, 0]], minlength=n_parts))[::-1]


def repair(
    points,
    tets,
    *,
    point_sets: dict | None = None,
    cell_sets: dict | None = None,
    triangle_sets: dict | None = None,
    source: str = "<arrays>",
    problems: list[str] | None = None,
    original_node_ids=None,
) -> TetMesh:
    """Validate arrays and return a repaired :class:`TetMesh` (see the module docstring).

    Parameters
    ----------
    points : (n, 3) coordinates.
    tets : (m, 4) node ids (any orientation).
    point_sets, cell_sets, triangle_sets : named sets in the input numbering.
    source : file name used in messages.
    problems : messages already collected (e.g. by the reader); new ones are appended.
    original_node_ids : (n,) file ids of the given nodes (default ``arange(n)``).

    Raises
    ------
    MeshError
        For the unrecoverable defects, with the file name, the count and the first offending ids.
    """
    label = _label(source)
    problems = list(problems or [])
    points = _as_points(points, label)
    tets = _as_tets(tets, label)
    n_points, n_tets = points.shape[0], tets.shape[0]
    if original_node_ids is None:
        original_node_ids = np.arange(n_points, dtype=np.int64)
    else:
        original_node_ids = np.asarray(original_node_ids, dtype=np.int64).reshape(-1)

    out_of_range = np.flatnonzero(np.any((tets < 0) | (tets >= n_points), axis=1))
    if out_of_range.size:
        raise MeshError(
            f"{label}: {out_of_range.size} tetrahedra reference node ids outside [0, {n_points - 1}], "
            f"first tetrahedron ids {_first(out_of_range)}"
        )
    not_finite = np.flatnonzero(~np.all(np.isfinite(points), axis=1))
    if not_finite.size:
        raise MeshError(
            f"{label}: {not_finite.size} nodes have NaN or infinite coordinates, first node ids "
            f"{_first(original_node_ids[not_finite])}"
        )
    point_sets, cell_sets, triangle_sets = _check_sets(
        point_sets, cell_sets, triangle_sets, n_points, n_tets, label
    )

    volumes = tet_signed_volumes(points, tets)
    mean_volume = float(np.abs(volumes).mean())
    degenerate = np.flatnonzero(np.abs(volumes) <= DEGENERATE_RELATIVE_VOLUME * mean_volume)
    if degenerate.size:
        raise MeshError(
            f"{label}: {degenerate.size} degenerate tetrahedra (|volume| < {DEGENERATE_RELATIVE_VOLUME:g} x "
            f"mean volume {mean_volume:.4g}), first ids {_first(degenerate)}"
        )
    inverted = np.flatnonzero(volumes < 0.0)
    if inverted.size:
        tets = tets.copy()
        tets[inverted, 1], tets[inverted, 2] = tets[inverted, 2], tets[inverted, 1].copy()
        _warn(
            problems,
            label,
            f"{inverted.size} inverted tetrahedra reoriented (nodes 1 and 2 swapped), "
            f"first ids {_first(inverted)}",
        )

    used = np.zeros(n_points, dtype=bool)
    used[tets.reshape(-1)] = True
    if not used.all():
        unused = np.flatnonzero(~used)
        new_index = np.full(n_points, -1, dtype=np.int64)
        new_index[used] = np.arange(int(used.sum()), dtype=np.int64)
        _warn(
            problems,
            label,
            f"{unused.size} unreferenced nodes dropped, first file ids {_first(original_node_ids[unused])}",
        )
        tets = new_index[tets]
        points = points[used]
        original_node_ids = original_node_ids[used]
        for name, ids in list(point_sets.items()):
            kept = ids[used[ids]]
            if kept.size < ids.size:
                _warn(
                    problems, label, f"point set {name!r}: {ids.size - kept.size} unreferenced nodes removed"
                )
            point_sets[name] = new_index[kept]
        for name, tris in list(triangle_sets.items()):
            keep = np.all(used[tris], axis=1)
            if not keep.all():
                _warn(
                    problems,
                    label,
                    f"triangle set {name!r}: {int((~keep).sum())} triangles on unreferenced nodes removed",
                )
            triangle_sets[name] = new_index[tris[keep]]

    n_duplicates, pairs = _duplicate_nodes(points)
    if n_duplicates:
        shown = ", ".join(f"({a}, {b})" for a, b in original_node_ids[pairs[:_SHOWN_IDS]])
        _warn(
            problems,
            label,
            f"{n_duplicates} duplicate nodes (coincident within {DUPLICATE_RELATIVE_DISTANCE:g} x bbox "
            f"diagonal), "
            f"first pairs of file ids [{shown}]; the mesh may be cut apart there",
        )
    part_sizes = _component_sizes(tets, points.shape[0])
    if part_sizes.size > 1:
        sizes = ", ".join(str(int(s)) for s in part_sizes[:_SHOWN_IDS])
        _warn(problems, label, f"{part_sizes.size} disconnected parts (tetrahedra per part: {sizes})")

    return TetMesh(
        points=points,
        tets=tets,
        point_sets=point_sets,
        cell_sets=cell_sets,
        triangle_sets=triangle_sets,
        source=source,
        problems=problems,
        original_node_ids=original_node_ids,
    )
