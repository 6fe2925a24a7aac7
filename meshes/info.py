"""Mesh summaries for ``softsim info MESH [--json]``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from softsim.meshes.errors import MeshError
from softsim.meshes.io import load

__all__ = ["format_info", "main", "mesh_info"]


def mesh_info(path, *, scale: float = 1.0) -> dict:
    """Load ``path`` and summarise it (raises :class:`MeshError` when it cannot be loaded).

    Keys: ``file``, ``nodes`` (kept nodes), ``tets``, ``volume``, ``bbox`` ([xmin, ymin, zmin, xmax, ymax,
    zmax]), ``surface_triangles``, ``sets`` (name -> size: nodes for point sets, tetrahedra for cell sets,
    triangles for triangle sets), ``set_kinds`` (name -> "point" | "cell" | "triangle"), ``problems``.
    A name used by several kinds of set is reported as ``kind:name``.

    ``problems`` lists the repairs and warnings of loading (:mod:`meshes.validate`): merged duplicate nodes,
    removed duplicate tetrahedra, separate parts, non-manifold boundary edges and vertices, overlapping
    elements, a single tetrahedron, ... Meshes that cannot be simulated (NaN or absurd coordinates,
    degenerate tetrahedra, ...) raise instead, so ``volume`` is always finite.
    """
    mesh = load(path, scale=scale)
    entries = (
        [("point", name, len(ids)) for name, ids in mesh.point_sets.items()]
        + [("cell", name, len(ids)) for name, ids in mesh.cell_sets.items()]
        + [("triangle", name, len(tris)) for name, tris in mesh.triangle_sets.items()]
    )
    names = [name for _, name, _ in entries]
    sets, kinds = {}, {}
    for kind, name, size in entries:
        key = name if names.count(name) == 1 else f"{kind}:{name}"
        sets[key] = int(size)
        kinds[key] = kind
    return {
        "file": str(Path(path)),
        "nodes": mesh.n_points,
        "tets": mesh.n_tets,
        "volume": mesh.volume,
        "bbox": [float(v) for v in mesh.bbox],
        "surface_triangles": int(len(mesh.surface_triangles())),
        "sets": sets,
        "set_kinds": kinds,
        "problems": list(mesh.problems),
    }


def format_info(info: dict) -> str:
    """A human-readable multi-line rendering of :func:`mesh_info`'s dictionary."""
    bbox = info["bbox"]
    lines = [
        f"file:              {info['file']}",
        f"nodes:             {info['nodes']}",
        f"tetrahedra:        {info['tets']}",
        f"volume:            {info['volume']:.6g}",
        f"bbox:              x [{bbox[0]:.6g}, {bbox[3]:.6g}]  y [{bbox[1]:.6g}, {bbox[4]:.6g}]  "
        f"z [{bbox[2]:.6g}, {bbox[5]:.6g}]",
        f"surface triangles: {info['surface_triangles']}",
    ]
    if info["sets"]:
        lines.append("sets:")
        kinds = info.get("set_kinds", {})
        for name, size in info["sets"].items():
            lines.append(f"  {name} ({kinds.get(name, 'set')}): {size}")
    else:
        lines.append("sets:              none")
    if info["problems"]:
        lines.append("problems:")
        lines += [f"  - {problem}" for problem in info["problems"]]
    else:
        lines.append("problems:          none")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``info MESH [--json] [--scale S]``: exit 0 if the mesh loads, else 2 and one line on stderr."""
    parser = argparse.ArgumentParser(prog="softsim info", description="Summarise a tetrahedral mesh.")
    parser.add_argument("mesh", help="mesh file (.vtu, .vtk, .msh, .mesh, .inp, .xdmf, ...)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--scale", type=float, default=1.0, help="coordinate scale factor (default 1)")
    args = parser.parse_args(argv)
    mesh_logger = logging.getLogger("softsim.meshes")
    level = mesh_logger.level
    mesh_logger.setLevel(logging.ERROR)  # the loading warnings are printed once, as the problems below
    try:
        info = mesh_info(args.mesh, scale=args.scale)
    except MeshError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    finally:
        mesh_logger.setLevel(level)
    sys.stdout.write((json.dumps(info) if args.json else format_info(info)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
