"""The few data fields SOFA computes at init that scene scripts read while they build the scene.

Tripod's ``tripod.py`` reads ``dofs.rest_position.value`` (the mesh's placed positions) and then a BoxROI's and
a SphereROI's ``indices.value`` to choose the nodes it rigidifies; STLIB's ``Rigidify`` reads
``container.position.value``. :func:`computed_value` gives these values (plain lists, as SofaPython3 gives them
converted) for a field the script did not set: a mesh loader's ``position`` (the file read and placed by the
loader's translation, rotation and scale), a topology's or a Vec3 MechanicalObject's ``position`` /
``rest_position`` (followed through ``position`` or ``src``), a BoxROI's (boxes and oriented boxes) or a
SphereROI's ``indices``. Anything else, or a file that cannot be read, gives None, as an unset field does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from softsim.app.sofa_import.graph import Component, Link, Node, resolve_link
from softsim.app.sofa_import.values import as_floats

__all__ = ["computed_value"]

_VOLUME = {"MeshVTKLoader", "MeshGmshLoader", "GIDMeshLoader", "MeshXspLoader", "MeshExtendedVTKLoader"}
_SURFACE = {"MeshOBJLoader", "MeshObjLoader", "MeshSTLLoader", "MeshOffLoader"}
_TOPOLOGIES = {"MeshTopology", "TetrahedronSetTopologyContainer", "TriangleSetTopologyContainer"}


def computed_value(component: Component, name: str, base: Path | None = None) -> Any:
    """The value SOFA would compute for ``component.name`` at init (nested lists), or None. A relative mesh
    file name is taken relative to ``base`` (default: the working directory, the scene's folder while its
    script runs)."""
    global _BASE
    saved, _BASE = _BASE, base
    try:
        if name in ("position", "rest_position"):
            if component.type == "MechanicalObject" and str(component.data.get("template", "")).startswith("Rigid"):
                return _rigid_frames(component)
            points = _positions(component, 0)
            return None if points is None else points.tolist()
        if name == "indices" and component.type in ("BoxROI", "SphereROI"):
            indices = _roi_indices(component)
            return None if indices is None else [int(i) for i in indices]
    except (OSError, ValueError):  # an unreadable file or value: as if unset (the translation reports it)
        return None
    finally:
        _BASE = saved
    return None


_BASE: Path | None = None


def _positions(component: Component, depth: int) -> np.ndarray | None:
    """The (n, 3) positions of a loader, topology or Vec3 MechanicalObject."""
    from softsim.app.sofa_import.translate import placement_of

    if depth > 10:
        return None
    kind = component.type
    if kind in _VOLUME | _SURFACE:
        from softsim import meshes

        path = Path(str(component.data.get("filename", ""))).expanduser()
        if _BASE is not None and not path.is_absolute():
            path = _BASE / path
        if not path.is_file():
            return None
        points = meshes.load(path).points if kind in _VOLUME else meshes.load_surface(path).points
        return placement_of(component).apply(points)
    if kind == "MechanicalObject" and str(component.data.get("template", "Vec3")).startswith("Rigid"):
        return None  # frames, not points (see _rigid_frames)
    if kind == "MechanicalObject" or kind in _TOPOLOGIES:
        for key in ("rest_position", "position", "src"):
            points = _points_of(component, key, depth)
            if points is not None:
                return placement_of(component).apply(points) if kind == "MechanicalObject" else points
        if kind == "MechanicalObject":  # a MechanicalObject takes its node's topology
            topology = next((o for o in component.node.objects if isinstance(o, Component)
                             and o.type in _TOPOLOGIES), None) if component.node is not None else None
            if topology is not None:
                points = _positions(topology, depth + 1)
                return None if points is None else placement_of(component).apply(points)
    return None


def _points_of(component: Component, key: str, depth: int) -> np.ndarray | None:
    """The points ``component.key`` holds or links to (a ``src`` link names a loader or topology)."""
    value = component.data.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().startswith("@"):
        target, field = resolve_link(component.node, value.strip())
        value = Link(target, field, value) if target is not None else None
    if isinstance(value, Link):
        target = value.target
        if isinstance(target, Node):
            target = target.getMechanicalState()
        if not isinstance(target, Component):
            return None
        if value.field not in (None, "position", "rest_position") or target is component:
            return None
        recorded = target.data.get(value.field) if value.field else None
        if recorded is not None and not isinstance(recorded, Link | str):
            return _as_points(recorded)
        return _positions(target, depth + 1)
    if key == "src":
        return None
    return _as_points(value)


def _as_points(value: Any) -> np.ndarray | None:
    array = np.asarray(as_floats(value, "positions"), dtype=np.float64)
    if array.size == 0 or array.size % 3:
        return None
    return array.reshape(-1, 3)


def _roi_indices(roi: Component) -> np.ndarray | None:
    """The node ids a BoxROI (``box``: xmin ymin zmin xmax ymax zmax, bounds included; ``orientedBox``) or a
    SphereROI (``centers``, ``radii``) selects among its ``position`` (or its node's MechanicalObject's)."""
    from softsim import meshes
    from softsim.app.sofa_import.translate import in_oriented_box

    points = _points_of(roi, "position", 0)
    if points is None and roi.node is not None and roi.node.getMechanicalState() is not None:
        points = _positions(roi.node.getMechanicalState(), 1)
    if points is None:
        return None
    selected = np.zeros(len(points), dtype=bool)
    if roi.type == "SphereROI":
        centers = _as_points(roi.data.get("centers", []))
        radii = np.asarray(as_floats(roi.data.get("radii", []), f"{roi.getPathName()}.radii"))
        if centers is None or not radii.size:
            return None
        radii = np.resize(radii, len(centers))
        for center, radius in zip(centers, radii):
            selected[meshes.in_sphere(points, center, float(radius))] = True
        return np.flatnonzero(selected)
    if "box" in roi.data:
        numbers = np.asarray(as_floats(roi.data["box"], f"{roi.getPathName()}.box"))
        for i in range(0, len(numbers) - len(numbers) % 6, 6):
            low = np.minimum(numbers[i:i + 3], numbers[i + 3:i + 6])
            high = np.maximum(numbers[i:i + 3], numbers[i + 3:i + 6])
            selected[meshes.in_box(points, [*low, *high])] = True
    if "orientedBox" in roi.data:
        numbers = as_floats(roi.data["orientedBox"], f"{roi.getPathName()}.orientedBox")
        for i in range(0, len(numbers) - len(numbers) % 10, 10):
            selected[in_oriented_box(points, numbers[i:i + 10])] = True
    return np.flatnonzero(selected)


def _rigid_frames(state: Component) -> list[list[float]] | None:
    """A Rigid3 MechanicalObject's frames ``[x, y, z, qx, qy, qz, qw]`` as placed at init (its ``position`` moved
    by its translation and rotation); ``rest_position`` is the same when the script did not set it."""
    from softsim.app.sofa_import.rigid import rigid_poses

    if "position" not in state.data or isinstance(state.data["position"], Link | str):
        return None
    return [[*position.tolist(), *orientation.as_quat().tolist()] for position, orientation in rigid_poses(state)]
