"""Reader for Wavefront OBJ surfaces: the vertex positions and the faces, nothing else.

SOFA's MeshOBJLoader gives SoftRobots' cavities the ``v`` positions in file order and, per face, the position
index of each corner. meshio's reader refuses files whose texture-coordinate or normal counts differ from the
vertex count (SoftRobots' ``Hollow_Bunny_Body_Cavity.obj``: 162 vertices, 205 texture coordinates), so
softsim reads OBJ itself:

- ``v x y z [w]``: a vertex (a fourth weight or trailing colour values are ignored);
- ``f a b c ...``: a face of three or more corners, each ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn``; only ``v``
  is kept. Indices are 1-based; negative indices count back from the last vertex read so far (``-1`` is the
  latest). A polygon of k corners becomes k - 2 triangles as a fan from its first corner (the winding is kept);
- ``vt``, ``vn``, ``vp``, ``o``, ``g``, ``s``, ``usemtl``, ``mtllib``, comments and blank lines are ignored, as
  are lines (``l``) and points (``p``), which carry no surface.

Every malformed line raises :class:`~meshes.errors.MeshError` naming the file, the line number and what is
wrong. Positions are in the file's units, shape (n, 3) float64; triangles (k, 3) int64, 0-based.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from softsim.meshes.errors import MeshError
from softsim.meshes.files import MAX_MESH_FILE_BYTES, InputFileError, read_input_bytes

__all__ = ["read_obj"]

_IGNORED = {"vt", "vn", "vp", "o", "g", "s", "usemtl", "mtllib", "l", "p", "cstype", "deg", "curv", "surf",
            "parm", "end", "bevel", "c_interp", "d_interp", "lod", "shadow_obj", "trace_obj", "maplib", "usemap"}


def _corner(text: str, n_vertices: int, where: str) -> int:
    """The 0-based position index of a face corner ``v[/vt[/vn]]`` given ``n_vertices`` read so far."""
    head = text.split("/", 1)[0]
    try:
        index = int(head)
    except ValueError:
        raise MeshError(f"{where}: face corner {text!r} does not start with a vertex number") from None
    if index == 0:
        raise MeshError(f"{where}: face corner {text!r}: vertex numbers start at 1 (0 is not allowed)")
    resolved = index - 1 if index > 0 else n_vertices + index
    if not 0 <= resolved < n_vertices:
        raise MeshError(f"{where}: face corner {text!r} refers to vertex {index}, but {n_vertices} vertices are "
                        f"defined before this line")
    return resolved


def read_obj(path: Path | str) -> tuple[np.ndarray, np.ndarray]:
    """``(points (n, 3) float64, triangles (k, 3) int64)`` of the OBJ file ``path`` (see the module docstring).

    Raises:
        MeshError: unreadable file, a malformed ``v`` or ``f`` line, a corner that names a missing vertex, no
            vertices or no faces.
    """
    path = Path(path)
    try:
        text = read_input_bytes(path, max_bytes=MAX_MESH_FILE_BYTES, what="mesh").decode("utf-8", errors="replace")
    except InputFileError as error:
        raise MeshError(str(error)) from None
    points: list[tuple[float, float, float]] = []
    triangles: list[tuple[int, int, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        keyword = fields[0]
        where = f"{path.name}: line {number}"
        if keyword == "v":
            if len(fields) < 4:
                raise MeshError(f"{where}: a vertex needs 3 coordinates, got {len(fields) - 1}")
            try:
                points.append((float(fields[1]), float(fields[2]), float(fields[3])))
            except ValueError:
                raise MeshError(f"{where}: vertex coordinates {' '.join(fields[1:4])!r} are not numbers") from None
        elif keyword == "f":
            if len(fields) < 4:
                raise MeshError(f"{where}: a face needs at least 3 corners, got {len(fields) - 1}")
            corners = [_corner(field, len(points), where) for field in fields[1:]]
            triangles += [(corners[0], corners[k], corners[k + 1]) for k in range(1, len(corners) - 1)]
        elif keyword not in _IGNORED:
            raise MeshError(f"{where}: unknown OBJ statement {keyword!r} (a surface file has v and f lines)")
    if not points:
        raise MeshError(f"{path.name}: no vertices (v lines)")
    if not triangles:
        raise MeshError(f"{path.name}: no faces (f lines)")
    result = np.asarray(points, dtype=np.float64)
    if not np.all(np.isfinite(result)):
        raise MeshError(f"{path.name}: NaN or infinite vertex coordinates")
    return result, np.asarray(triangles, dtype=np.int64)
