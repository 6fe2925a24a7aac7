"""Convert SoftRobots' Hollow_Bunny_Body_Cavity.obj into Hollow_Bunny_Body_Cavity.vtu (a triangle surface).

The OBJ (tests/component/constraint/scenes/mesh/Hollow_Bunny_Body_Cavity.obj in SofaDefrost/SoftRobots) has
162 vertices, 205 texture coordinates and 162 normals; its faces are ``f v/vt/vn``. meshio, and so softsim's
surface loader, refuses it ("len(points) = 162, but len(point_data["obj:vt"]) = 205"). SOFA's MeshOBJLoader
keeps the positions and the position index of each face corner, which is what this script keeps: the ``v``
lines as they are, and the first index of each face corner. Texture coordinates and normals are dropped
(SurfacePressureConstraint does not use them). Vertex order and face winding are unchanged.

Usage: python tests/data/softrobots/convert_bunny_cavity.py SOURCE.obj [OUT.vtu]
"""

from __future__ import annotations

import sys
from pathlib import Path

import meshio
import numpy as np


def read_obj_positions(path: Path) -> tuple[np.ndarray, np.ndarray]:
    points, triangles = [], []
    for line in path.read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "v":
            points.append([float(value) for value in fields[1:4]])
        elif fields[0] == "f":
            corners = [int(corner.split("/")[0]) - 1 for corner in fields[1:]]
            # fan triangulation of a polygon (the bunny cavity has triangles only)
            triangles += [[corners[0], corners[k], corners[k + 1]] for k in range(1, len(corners) - 1)]
    return np.asarray(points, dtype=np.float64), np.asarray(triangles, dtype=np.int64)


def main(argv: list[str]) -> int:
    source = Path(argv[0])
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("Hollow_Bunny_Body_Cavity.vtu")
    points, triangles = read_obj_positions(source)
    meshio.write(out, meshio.Mesh(points, [("triangle", triangles)]))
    print(f"{out}: {len(points)} points, {len(triangles)} triangles")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
