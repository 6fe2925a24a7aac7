"""Reader for GiD's ASCII mesh format (``.gidmsh``), the format of SoftRobots' Tripod mesh (SOFA's GIDMeshLoader).

A file holds one or more meshes, each::

    MESH dimension 3 ElemType Tetrahedra Nnode 4
    Coordinates
        node-number x y z            (one line per node; the first mesh defines them, 1-based numbers)
    End Coordinates
    Elements
        element-number n1 n2 n3 n4 [material]
    End Elements

``ElemType`` is ``Tetrahedra`` (4 nodes) or ``Triangle`` (3 nodes); other types (``Linear``,
``Quadrilateral``, ``Hexahedra``, ...) are skipped and named in the returned notes. Keywords are matched
without regard to case, as GiD writes them in either case.

Node numbers need not be contiguous; elements refer to them by number. A malformed line, an element naming a
node that is not defined, or a node defined twice raises :class:`~meshes.errors.MeshError` naming the file and
the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from softsim.meshes.errors import MeshError
from softsim.meshes.files import MAX_MESH_FILE_BYTES, InputFileError, read_input_bytes

__all__ = ["GidMesh", "read_gidmsh"]

#: GiD element type -> (nodes per element, meshio cell type)
_TYPES = {"tetrahedra": (4, "tetra"), "triangle": (3, "triangle")}


@dataclass
class GidMesh:
    """``points (n, 3)`` in file order of the node numbers, ``node_numbers (n,)`` the file's numbers,
    ``cells``: meshio cell type -> ``(k, nodes)`` int64 0-based, ``notes``: skipped element blocks."""

    points: np.ndarray
    node_numbers: np.ndarray
    cells: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)


def read_gidmsh(path: Path | str) -> GidMesh:
    """Read a ``.gidmsh`` file (see the module docstring)."""
    path = Path(path)
    try:
        text = read_input_bytes(path, max_bytes=MAX_MESH_FILE_BYTES, what="mesh").decode("utf-8", errors="replace")
    except InputFileError as error:
        raise MeshError(str(error)) from None
    numbers: list[int] = []
    coordinates: list[tuple[float, float, float]] = []
    raw_cells: dict[str, list[list[int]]] = {}
    notes: list[str] = []
    section = None  # "coordinates" | "elements" | None
    element_type: tuple[int, str] | None = None
    type_name = ""
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path.name}: line {number}"
        words = [f.lower() for f in fields]
        if words[0] == "mesh":
            lower = [w.lower() for w in fields]
            if "elemtype" not in lower or lower.index("elemtype") + 1 >= len(fields):
                raise MeshError(f"{where}: a MESH line names its ElemType (e.g. 'ElemType Tetrahedra Nnode 4')")
            type_name = fields[lower.index("elemtype") + 1]
            element_type = _TYPES.get(type_name.lower())
            if element_type is not None and "nnode" in lower:
                nnode = fields[lower.index("nnode") + 1] if lower.index("nnode") + 1 < len(fields) else ""
                if nnode != str(element_type[0]):
                    element_type = None
                    type_name = f"{type_name} with {nnode} nodes"
            continue
        if words[0] == "coordinates":
            section = "coordinates"
            continue
        if words[0] == "elements":
            section = "elements"
            if element_type is None:
                notes.append(f"{type_name or 'an unnamed element type'} elements skipped: only 4-node "
                             f"tetrahedra and 3-node triangles are read")
            continue
        if words[0] == "end":
            section = None
            continue
        if section == "coordinates":
            if len(fields) < 4:
                raise MeshError(f"{where}: a node line is 'number x y z', got {line.strip()!r}")
            try:
                numbers.append(int(fields[0]))
                coordinates.append((float(fields[1]), float(fields[2]), float(fields[3])))
            except ValueError:
                raise MeshError(f"{where}: a node line is 'number x y z', got {line.strip()!r}") from None
        elif section == "elements":
            if element_type is None:
                continue
            count, cell_type = element_type
            if len(fields) < 1 + count:
                raise MeshError(f"{where}: a {type_name} element line is 'number' and {count} node numbers, got "
                                f"{line.strip()!r}")
            try:
                raw_cells.setdefault(cell_type, []).append([int(f) for f in fields[1:1 + count]])
            except ValueError:
                raise MeshError(f"{where}: element node numbers must be integers, got {line.strip()!r}") from None
        else:
            raise MeshError(f"{where}: unexpected line {line.strip()!r} outside Coordinates and Elements")
    if not numbers:
        raise MeshError(f"{path.name}: no nodes (a Coordinates section)")
    node_numbers = np.asarray(numbers, dtype=np.int64)
    unique, counts = np.unique(node_numbers, return_counts=True)
    if np.any(counts > 1):
        raise MeshError(f"{path.name}: node number {int(unique[counts > 1][0])} is defined more than once")
    order = np.argsort(node_numbers)
    cells = {}
    for cell_type, rows in raw_cells.items():
        array = np.asarray(rows, dtype=np.int64)
        position = np.searchsorted(node_numbers[order], array)
        position = np.minimum(position, len(order) - 1)
        missing = node_numbers[order][position] != array
        if np.any(missing):
            raise MeshError(f"{path.name}: an element refers to node {int(array[missing][0])}, which the "
                            f"Coordinates section does not define")
        cells[cell_type] = order[position]
    return GidMesh(np.asarray(coordinates, dtype=np.float64), node_numbers, cells, notes)
