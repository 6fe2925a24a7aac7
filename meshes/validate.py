"""Validation and repair of tetrahedral meshes (vectorised: sorts of row keys, bincount, csgraph).

Refused (raise :class:`MeshError`, naming the file, the count and the first offending ids):

- no tetrahedra, wrong array shapes, node ids out of range, named sets with ids out of range;
- NaN or infinite coordinates;
- absurd coordinates: a bounding-box diagonal outside :data:`EXTENT_RANGE` (or coordinates beyond its upper
  end), which double precision cannot simulate; the message suggests the ``scale`` that brings the diagonal
  near 100 (a file in the wrong unit), or moving the mesh near the origin;
- degenerate (flat) tetrahedra.

Repaired (recorded in ``TetMesh.problems`` and logged as warnings):

- inverted tetrahedra are reoriented;
- unreferenced nodes are dropped (sets remapped, ``original_node_ids`` kept);
- duplicate nodes (coincident within :data:`DUPLICATE_RELATIVE_DISTANCE` x bbox diagonal) are merged into
  the first of them (they would cut the mesh apart); tetrahedra this collapses are removed;
- duplicate tetrahedra (the same 4 nodes in any order) are removed, the first kept; cell sets keep it.

Reported (warnings in ``TetMesh.problems``, the mesh is kept as is):

- separate parts (connected components of tetrahedra sharing nodes), with the tetrahedra per part: in a
  static scene each part needs fixed nodes (see :func:`unfixed_parts`, used by the scene's grounding check);
- non-manifold edges and vertices of the boundary surface (parts touching only along an edge or at a node),
  with the first file node ids;
- faces shared by three or more tetrahedra (overlapping elements);
- a single tetrahedron (fewer than :data:`MIN_TETS`): constant strain, no bending.

The boundary surface found here becomes the cache of :meth:`TetMesh.surface_triangles`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from softsim.meshes.errors import MeshError
from softsim.meshes.surface import edge_census, face_census, sorted_tet_columns
from softsim.meshes.tetmesh import TetMesh, tet_signed_volumes

__all__ = [
    "DEGENERATE_RELATIVE_VOLUME",
    "DUPLICATE_RELATIVE_DISTANCE",
    "EXTENT_RANGE",
    "MIN_TETS",
    "part_labels",
    "repair",
    "unfixed_parts",
]

logger = logging.getLogger(__name__)

#: A tetrahedron is degenerate when ``|volume| < DEGENERATE_RELATIVE_VOLUME * mean(|volume|)``.
DEGENERATE_RELATIVE_VOLUME = 1e-10
#: Two nodes are duplicates when they coincide within this fraction of the bounding-box diagonal.
DUPLICATE_RELATIVE_DISTANCE = 1e-9
#: Accepted bounding-box diagonal (any unit); also the largest accepted |coordinate|.
EXTENT_RANGE = (1e-12, 1e12)
#: A mesh with fewer tetrahedra gets a warning.
MIN_TETS = 2
_SHOWN_IDS = 10


def _first(ids: np.ndarray) -> str:
    """``[a, b, c]`` with at most _SHOWN_IDS entries (and ``, ...`` when there are more)."""
    ids = np.asarray(ids).reshape(-1)
    text = ", ".join(str(int(i)) for i in ids[:_SHOWN_IDS])
    return f"[{text}{', ...' if ids.size > _SHOWN_IDS else ''}]"


def _count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 duplicate node``, ``2 duplicate nodes`` (``plural`` for irregular nouns)."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


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
    def ids_within(sets, n: int, what: str, items: str) -> dict[str, np.ndarray]:
        checked = {}
        for name, ids in (sets or {}).items():
            ids = np.asarray(ids, dtype=np.int64).reshape(-1)
            bad = np.flatnonzero((ids < 0) | (ids >= n))
            if bad.size:
                raise MeshError(f"{label}: {what} {name!r}: {bad.size} {items} outside [0, {n - 1}], "
                                f"first {_first(ids[bad])}")
            checked[str(name)] = ids
        return checked

    checked_points = ids_within(point_sets, n_points, "point set", "node ids")
    checked_cells = ids_within(cell_sets, n_tets, "cell set", "tetrahedron ids")
    checked_triangles = {}
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


def _diagonal(extent: np.ndarray) -> float:
    """Length of the (3,) vector ``extent`` without overflow for huge components (inf when it is inf)."""
    largest = float(np.max(extent))
    if largest == 0.0 or not np.isfinite(largest):
        return largest
    return largest * float(np.linalg.norm(extent / largest))


def _check_extent(points: np.ndarray, label: str) -> float:
    """Refuse coordinates that cannot be simulated in double precision; return the bbox diagonal."""
    low, high = points.min(axis=0), points.max(axis=0)
    with np.errstate(over="ignore"):
        diagonal = _diagonal(high - low)
    largest = float(max(np.abs(low).max(), np.abs(high).max()))
    if diagonal == 0.0:
        raise MeshError(f"{label}: all nodes are at the same position {low.tolist()}")
    low_limit, high_limit = EXTENT_RANGE
    if not low_limit <= diagonal <= high_limit:
        factor = 10.0 ** round(2.0 - np.log10(diagonal)) if np.isfinite(diagonal) else None
        if factor is None or not np.isfinite(factor) or factor == 0.0:
            hint = "check the file's coordinates"
        else:
            hint = (
                f"the coordinates are probably in another unit: scale the mesh by {factor:g} "
                f"(`scale = {factor:g}` in the scene's [[body]], `--scale {factor:g}` for softsim info) "
                f"for a diagonal of {diagonal * factor:.3g}"
            )
        raise MeshError(
            f"{label}: the mesh spans {diagonal:.3g} (bounding-box diagonal), outside "
            f"[{low_limit:g}, {high_limit:g}] where double precision can simulate it; {hint}"
        )
    if largest > high_limit:
        raise MeshError(
            f"{label}: coordinates reach {largest:.3g} for a mesh of size {diagonal:.3g} (bounding-box "
            f"diagonal); beyond {high_limit:g} the positions lose their precision: move the mesh near the "
            "origin"
        )
    return diagonal


def _duplicate_nodes(points: np.ndarray) -> np.ndarray:
    """For each node, the first node it coincides with (itself when unique), shape (n,).

    Coordinates are rounded to a grid of ``DUPLICATE_RELATIVE_DISTANCE x bbox diagonal``: identical
    coordinates always match; nearly identical ones match unless they straddle a grid line.
    """
    n = points.shape[0]
    if n < 2:
        return np.arange(n, dtype=np.int64)
    low = points.min(axis=0)
    quantum = DUPLICATE_RELATIVE_DISTANCE * _diagonal(points.max(axis=0) - low)
    keys = np.round((points - low) / quantum).astype(np.int64)
    _, first_index, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return first_index[inverse.reshape(-1)].astype(np.int64)


def _duplicate_tets(ordered, n_points: int) -> np.ndarray:
    """For each tetrahedron, the first tetrahedron with the same 4 nodes (in any order), shape (m,).

    ``ordered``: the four sorted node columns (:func:`meshes.surface.sorted_tet_columns`).
    """
    s0, s1, s2, s3 = ordered
    n = np.int64(max(n_points, 1))
    if n < 55_000:  # n**4 < 2**63
        keys = ((s0 * n + s1) * n + s2) * n + s3
    else:
        rows = np.column_stack(ordered)
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * 4))).ravel()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    repeated = sorted_keys[1:] == sorted_keys[:-1]
    first = np.arange(s0.shape[0], dtype=np.int64)
    if repeated.any():
        run_start = np.maximum.accumulate(np.where(np.concatenate([[True], ~repeated]), np.arange(order.size), 0))
        first[order] = order[run_start]
    return first


def part_labels(tets: np.ndarray, n_points: int) -> tuple[int, np.ndarray]:
    """Connected parts of a mesh, tetrahedra being connected when they share a node.

    Returns ``(n_parts, labels)`` with ``labels`` (n_points,) the part of each node (unused nodes get parts
    of their own).
    """
    tets = np.asarray(tets, dtype=np.int64)
    rows = np.repeat(tets[:, 0], 3)
    cols = tets[:, 1:].reshape(-1)
    graph = sp.coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n_points, n_points))
    n_parts, labels = connected_components(graph, directed=False)
    return int(n_parts), labels


def _sizes_text(sizes) -> str:
    """``1512 and 1512``, ``100, 20 and 3``; after _SHOWN_IDS sizes, ``, ...``."""
    values = [str(int(s)) for s in sizes]
    if len(values) > _SHOWN_IDS:
        return ", ".join(values[:_SHOWN_IDS]) + ", ..."
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def unfixed_parts(mesh: TetMesh, fixed_nodes) -> str | None:
    """For a mesh of several separate parts (sharing no node), a sentence describing the parts that contain
    none of ``fixed_nodes``; None when the mesh is one part or every part has a fixed node.

    A static solve needs each part held: a part without fixed nodes can move rigidly (a singular stiffness).
    """
    n_parts, labels = part_labels(mesh.tets, mesh.n_points)
    if n_parts < 2:
        return None
    fixed = np.asarray(fixed_nodes, dtype=np.int64).reshape(-1)
    held = np.zeros(n_parts, dtype=bool)
    held[labels[fixed]] = True
    if held.all():
        return None
    tet_part = labels[mesh.tets[:, 0]]
    sizes = np.bincount(tet_part, minlength=n_parts)
    loose = np.flatnonzero(~held)
    loose = loose[np.argsort(-sizes[loose], kind="stable")]
    descriptions = []
    for part in loose[:3]:
        nodes = np.unique(mesh.tets[tet_part == part])
        low, high = mesh.points[nodes].min(axis=0), mesh.points[nodes].max(axis=0)
        descriptions.append(
            f"{sizes[part]} tetrahedra in x [{low[0]:.4g}, {high[0]:.4g}], y [{low[1]:.4g}, {high[1]:.4g}], "
            f"z [{low[2]:.4g}, {high[2]:.4g}]"
        )
    more = f" and {loose.size - 3} more" if loose.size > 3 else ""
    return (
        f"the mesh has {n_parts} separate parts (sharing no node), {loose.size} of them without a fixed "
        f"node: {'; '.join(descriptions)}{more}"
    )


def _surface_problems(problems: list[str], label: str, tets: np.ndarray, n_points: int, file_ids) -> np.ndarray:
    """Report overlapping elements and non-manifold boundary edges and vertices; return the boundary."""
    census = face_census(tets, n_points)
    if census.n_overfull_faces:
        _warn(
            problems,
            label,
            f"{_count(census.n_overfull_faces, 'face')} shared by 3 or more tetrahedra (overlapping elements), "
            f"first tetrahedron ids {_first(census.overlapping_tets)}; re-mesh the region",
        )
    edges = edge_census(census.boundary, n_points)
    if edges.nonmanifold_edges.size:
        pairs = file_ids[edges.nonmanifold_edges[:_SHOWN_IDS]]
        shown = ", ".join(f"({a}, {b})" for a, b in pairs)
        more = ", ..." if len(edges.nonmanifold_edges) > _SHOWN_IDS else ""
        _warn(
            problems,
            label,
            f"{_count(len(edges.nonmanifold_edges), 'non-manifold edge')} on the boundary surface (parts "
            f"touching only along an edge: a hinge), first node pairs (file ids) [{shown}{more}]; join the parts "
            "through shared faces or move them apart",
        )
    if edges.nonmanifold_vertices.size:
        _warn(
            problems,
            label,
            f"{_count(edges.nonmanifold_vertices.size, 'non-manifold vertex', 'non-manifold vertices')} on the "
            f"boundary surface (parts touching at a single node: a ball joint), first node ids (file ids) "
            f"{_first(file_ids[edges.nonmanifold_vertices])}; join the parts through shared faces or move "
            "them apart",
        )
    return census.boundary


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

    if tets.min() < 0 or tets.max() >= n_points:
        out_of_range = np.flatnonzero(np.any((tets < 0) | (tets >= n_points), axis=1))
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
    used = np.zeros(n_points, dtype=bool)
    used[tets.reshape(-1)] = True
    _check_extent(points[used] if not used.all() else points, label)

    volumes = tet_signed_volumes(points, tets)
    mean_volume = float(np.abs(volumes).mean())
    if not np.isfinite(mean_volume):
        raise MeshError(f"{label}: the tetrahedron volumes overflow; check the coordinates and the scale")
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

    # Coincident nodes cut the mesh apart (the tetrahedra on either side share no node): merge them.
    representative = _duplicate_nodes(points)
    duplicates = np.flatnonzero(representative != np.arange(points.shape[0]))
    if duplicates.size:
        pairs = original_node_ids[np.column_stack([representative[duplicates], duplicates])[:_SHOWN_IDS]]
        shown = ", ".join(f"({a}, {b})" for a, b in pairs)
        more = ", ..." if duplicates.size > _SHOWN_IDS else ""
        _warn(
            problems,
            label,
            f"{_count(duplicates.size, 'duplicate node')} (coincident with an earlier node within "
            f"{DUPLICATE_RELATIVE_DISTANCE:g} x bbox diagonal) merged into that node, first pairs of file ids "
            f"[{shown}{more}]",
        )
        keep = representative == np.arange(points.shape[0])
        new_index = (np.cumsum(keep) - 1)[representative]
        tets = new_index[tets]
        points = points[keep]
        original_node_ids = original_node_ids[keep]
        for name, ids in list(point_sets.items()):
            merged = new_index[ids]
            _, first = np.unique(merged, return_index=True)
            point_sets[name] = merged[np.sort(first)]
        for name, tris in list(triangle_sets.items()):
            merged = new_index[tris]
            flat = (merged[:, 0] == merged[:, 1]) | (merged[:, 1] == merged[:, 2]) | (merged[:, 0] == merged[:, 2])
            triangle_sets[name] = merged[~flat]

    # Tetrahedra to remove: collapsed by the merge (a repeated node) or duplicates of an earlier one; a cell
    # set keeps the surviving twin of a removed duplicate.
    ordered = sorted_tet_columns(tets)
    collapsed = np.flatnonzero((ordered[0] == ordered[1]) | (ordered[1] == ordered[2]) | (ordered[2] == ordered[3]))
    if collapsed.size:
        _warn(
            problems,
            label,
            f"{_count(collapsed.size, 'tetrahedron', 'tetrahedra')} collapsed by merging duplicate nodes "
            f"removed, first ids {_first(collapsed)}",
        )
    twin = _duplicate_tets(ordered, points.shape[0])
    twin[collapsed] = -1
    repeated = np.flatnonzero((twin != np.arange(tets.shape[0])) & (twin >= 0))
    if repeated.size:
        _warn(
            problems,
            label,
            f"{_count(repeated.size, 'duplicate tetrahedron', 'duplicate tetrahedra')} removed (the same 4 "
            f"nodes as an earlier tetrahedron), first ids {_first(repeated)}",
        )
    if collapsed.size or repeated.size:
        keep = twin == np.arange(tets.shape[0])
        new_index = np.cumsum(keep) - 1
        target = np.where(twin >= 0, new_index[np.maximum(twin, 0)], -1)
        tets = tets[keep]
        for name, ids in list(cell_sets.items()):
            mapped = target[ids]
            mapped = mapped[mapped >= 0]
            _, first = np.unique(mapped, return_index=True)
            cell_sets[name] = mapped[np.sort(first)]
        if tets.shape[0] == 0:
            raise MeshError(f"{label}: no tetrahedra left after merging duplicate nodes")

    if tets.shape[0] < MIN_TETS:
        _warn(
            problems,
            label,
            f"only {_count(tets.shape[0], 'tetrahedron', 'tetrahedra')}: a linear tetrahedron has a constant "
            "strain and cannot bend; mesh the body with many more elements",
        )
    n_parts, labels = part_labels(tets, points.shape[0])
    if n_parts > 1:
        sizes = np.sort(np.bincount(labels[tets[:, 0]], minlength=n_parts))[::-1]
        _warn(
            problems,
            label,
            f"{n_parts} separate parts (sharing no node): {_sizes_text(sizes)} tetrahedra; in a static scene "
            "each part needs its own fixed region (or join the parts)",
        )
    surface = _surface_problems(problems, label, tets, points.shape[0], original_node_ids)

    mesh = TetMesh(
        points=points,
        tets=tets,
        point_sets=point_sets,
        cell_sets=cell_sets,
        triangle_sets=triangle_sets,
        source=source,
        problems=problems,
        original_node_ids=original_node_ids,
    )
    surface.flags.writeable = False
    mesh._surface = surface  # the boundary found above is surface_triangles()' cache
    return mesh
