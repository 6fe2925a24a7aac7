"""Benchmark: meshes.load on a ~500k-tetrahedron .vtu (generated in a temporary directory).

Prints a table and writes it to benchmarks/RESULTS_meshes.md.
Usage (from the repository root): PYTHONPATH=. python benchmarks/bench_mesh_load.py [--repeat N]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import meshio
import numpy as np

from softsim import meshes
from softsim.meshes.generate import hex_grid_tets
from softsim.meshes.validate import repair


def _best(function, repeat: int) -> tuple[float, object]:
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    points, tets = hex_grid_tets(np.linspace(0, 400, 81), np.linspace(0, 160, 33), np.linspace(0, 160, 33))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.vtu"
        t_write, _ = _best(lambda: meshes.write_vtu(path, points, tets), 1)
        size_mb = path.stat().st_size / 1e6
        t_read, raw = _best(lambda: meshio.vtu.read(str(path)), args.repeat)
        t_repair, _ = _best(lambda: repair(points, tets), args.repeat)
        t_load, mesh = _best(lambda: meshes.load(path), args.repeat)
        t_surface, surface = _best(lambda: meshes.boundary_triangles(mesh.tets, mesh.n_points), args.repeat)
    rows = [
        ("write_vtu (zlib binary)", t_write),
        ("meshio.vtu.read", t_read),
        ("validate/repair (vectorised)", t_repair),
        ("meshes.load (read + validate)", t_load),
        ("surface extraction", t_surface),
    ]
    header = (
        f"### meshes.load on {mesh.n_tets:,} tets / {mesh.n_points:,} nodes ({size_mb:.1f} MB .vtu), "
        f"best of {args.repeat}\n\n"
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, meshio {meshio.__version__}. Surface: {len(surface):,} triangles.\n\n"
    )
    table = "| step | time [s] |\n|---|---:|\n" + "".join(f"| {name} | {t:.3f} |\n" for name, t in rows)
    text = header + table
    print(text)
    out = Path(__file__).resolve().parent / "RESULTS_meshes.md"
    out.write_text("## Mesh loading\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
