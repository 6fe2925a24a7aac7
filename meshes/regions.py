"""Region selectors with SOFA semantics (BoxROI and friends).

All selectors return sorted ``(k,) int64`` ids. Boxes follow SOFA's ``BoxROI``: ``[xmin, ymin, zmin, xmax,
ymax, zmax]``, bounds inclusive; several boxes may be given as ``(b, 6)`` and their union is selected.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from softsim.meshes.errors import MeshError
from softsim.meshes.tetmesh import TetMesh

__all__ = ["in_box", "in_halfspace", "in_sphere", "select_nodes", "tets_in_box"]

SELECTOR_KEYS = ("box", "sphere", "halfspace", "set", "indices")


def _boxes(box) -> np.ndarray:
    try:
        boxes = np.asarray(box, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MeshError(f"box: expected numbers [xmin, ymin, zmin, xmax, ymax, zmax], got {box!r}") from exc
    if boxes.size == 0 or boxes.size % 6 != 0:
        raise MeshError(
            f"box: expected 6 numbers [xmin, ymin, zmin, xmax, ymax, zmax] (or several boxes of 6), "
            f"got {boxes.size} numbers"
        )
    boxes = boxes.reshape(-1, 6)
    if not np.all(np.isfinite(boxes)):
        raise MeshError(f"box: values must be finite, got {boxes.tolist()}")
    inverted = np.any(boxes[:, :3] > boxes[:, 3:], axis=1)
    if inverted.any():
        raise MeshError(f"box: min must not exceed max on any axis, got {boxes[inverted][0].tolist()}")
    return boxes


def _points(points) -> np.ndarray:
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise MeshError(f"points must have shape (n, 3), got {points.shape}")
    return points


def _box_mask(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    mask = np.zeros(points.shape[0], dtype=bool)
    for lo_hi in boxes:  # a handful of boxes, each test vectorised over the points
        mask |= np.all((points >= lo_hi[:3]) & (points <= lo_hi[3:]), axis=1)
    return mask


def in_box(points, box) -> np.ndarray:
    """Ids of the points inside the box(es), bounds inclusive (SOFA ``BoxROI``).

    Parameters
    ----------
    points : (n, 3) positions.
    box : (6,) ``[xmin, ymin, zmin, xmax, ymax, zmax]``, or (b, 6) for a union of boxes. The nested form
        ``[[xmin, ymin, zmin], [xmax, ymax, zmax]]`` of SOFA scenes is accepted too.
    """
    points = _points(points)
    return np.flatnonzero(_box_mask(points, _boxes(box))).astype(np.int64)


def in_sphere(points, center, radius: float) -> np.ndarray:
    """Ids of the points with ``|p - center| <= radius``."""
    points = _points(points)
    center = np.asarray(center, dtype=np.float64).reshape(-1)
    if center.shape != (3,) or not np.all(np.isfinite(center)):
        raise MeshError(f"sphere center: expected 3 finite numbers, got {center.tolist()}")
    radius = float(radius)
    if not np.isfinite(radius) or radius < 0.0:
        raise MeshError(f"sphere radius: must be finite and >= 0, got {radius}")
    return np.flatnonzero(np.sum((points - center) ** 2, axis=1) <= radius * radius).astype(np.int64)


def in_halfspace(points, point, normal) -> np.ndarray:
    """Ids of the points with ``(p - point) . normal >= 0`` (the normal need not be unit)."""
    points = _points(points)
    point = np.asarray(point, dtype=np.float64).reshape(-1)
    normal = np.asarray(normal, dtype=np.float64).reshape(-1)
    if point.shape != (3,) or normal.shape != (3,):
        raise MeshError(
            f"halfspace: point and normal need 3 numbers each, got {point.tolist()}, {normal.tolist()}"
        )
    if not np.all(np.isfinite(normal)) or not np.any(normal != 0.0):
        raise MeshError(f"halfspace normal: must be finite and non-zero, got {normal.tolist()}")
    return np.flatnonzero((points - point) @ normal >= 0.0).astype(np.int64)


def tets_in_box(points, tets, box) -> np.ndarray:
    """Ids of the tetrahedra whose centroid lies in the box(es) (SOFA ``BoxROI strict=False``)."""
    points = _points(points)
    tets = np.asarray(tets, dtype=np.int64).reshape(-1, 4)
    centroids = points[tets].mean(axis=1)
    return np.flatnonzero(_box_mask(centroids, _boxes(box))).astype(np.int64)


def _pair(value, first: str, second: str, key: str, sizes: tuple[int, int]):
    if isinstance(value, Mapping):
        unknown = set(value) - {first, second}
        if unknown or first not in value or second not in value:
            raise MeshError(f"{key}: expected keys {first!r} and {second!r}, got {sorted(value)}")
        return value[first], value[second]
    flat = np.asarray(value, dtype=np.float64).reshape(-1)
    if flat.size != sum(sizes):
        raise MeshError(
            f"{key}: expected {{{first!r}: ..., {second!r}: ...}} or {sum(sizes)} numbers, got {flat.size}"
        )
    return flat[: sizes[0]], (flat[sizes[0] :] if sizes[1] > 1 else float(flat[-1]))


def select_nodes(mesh: TetMesh, spec: Mapping) -> np.ndarray:
    """Node ids selected by a scene-style spec with exactly one key among
    ``box``, ``sphere`` (``{center, radius}`` or 4 numbers), ``halfspace`` (``{point, normal}`` or 6 numbers),
    ``set`` (a point set, or the nodes of a triangle set or cell set) and ``indices``.

    Raises :class:`MeshError` naming the key when the spec is malformed or selects no node.
    """
    if not isinstance(spec, Mapping):
        raise MeshError(f"region: expected a table with one of {', '.join(SELECTOR_KEYS)}, got {spec!r}")
    keys = [k for k in spec if k in SELECTOR_KEYS]
    unknown = [k for k in spec if k not in SELECTOR_KEYS]
    if unknown:
        raise MeshError(f"region: unknown key(s) {unknown}; allowed: {', '.join(SELECTOR_KEYS)}")
    if len(keys) != 1:
        raise MeshError(f"region: give exactly one of {', '.join(SELECTOR_KEYS)}, got {keys or 'none'}")
    key = keys[0]
    value = spec[key]
    try:
        if key == "box":
            ids = in_box(mesh.points, value)
        elif key == "sphere":
            center, radius = _pair(value, "center", "radius", key, (3, 1))
            ids = in_sphere(mesh.points, center, radius)
        elif key == "halfspace":
            point, normal = _pair(value, "point", "normal", key, (3, 3))
            ids = in_halfspace(mesh.points, point, normal)
        elif key == "set":
            ids = _named_set_nodes(mesh, value)
        else:
            ids = _explicit_indices(mesh, value)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, MeshError) and str(exc).startswith(key):
            raise
        raise MeshError(f"{key}: {exc}") from exc
    if ids.size == 0:
        raise MeshError(f"{key}: selects no node of {mesh.source} (bbox {np.round(mesh.bbox, 6).tolist()})")
    return ids


def _named_set_nodes(mesh: TetMesh, name) -> np.ndarray:
    if not isinstance(name, str):
        raise MeshError(f"set: expected a set name (string), got {name!r}")
    if name in mesh.point_sets:
        return np.unique(mesh.point_sets[name])
    if name in mesh.triangle_sets:
        return np.unique(mesh.triangle_sets[name])
    if name in mesh.cell_sets:
        return np.unique(mesh.tets[mesh.cell_sets[name]])
    known = sorted({*mesh.point_sets, *mesh.triangle_sets, *mesh.cell_sets})
    raise MeshError(f"set: no set named {name!r} in {mesh.source}; known sets: {known or 'none'}")


def _explicit_indices(mesh: TetMesh, value) -> np.ndarray:
    ids = np.asarray(value)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise MeshError(f"indices: expected integer node ids, got {ids.dtype}")
    ids = ids.astype(np.int64).reshape(-1)
    bad = ids[(ids < 0) | (ids >= mesh.n_points)]
    if bad.size:
        raise MeshError(f"indices: node ids must be in [0, {mesh.n_points - 1}], got {bad[:10].tolist()}")
    return np.unique(ids)
