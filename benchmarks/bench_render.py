"""Updating the rendered surface of a 10k-tet body, as app/viewport.py BodyView.update does it.

Body: meshes.generate.balloon(n=12, wall_cells=4) (9 984 tets, outer and cavity surfaces). Per frame:
positions and a nodal field written in place into the PolyData arrays (``points[:] = x[surface_nodes]``,
``point_data["field"][:] = ...``), the colour range recomputed, ``Modified()``. Also timed: the per-frame
snapshot the GUI's worker takes (``Simulation.snapshot``, copies), without a stress field (``fields=()``, what
the GUI computes while displacement is shown) and with von Mises (per element and nodal average, while the stress
is shown), and, when an OpenGL context can be created, one off-screen ``render()`` (optional: it depends on the
driver, Mesa here).

Usage: python benchmarks/bench_render.py [--frames 100] [--quick] [--no-render] [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, stats_ms, write_json  # noqa: E402

from softsim import meshes  # noqa: E402
from softsim.mechanics.constraint_solvers import make_constraint_solver  # noqa: E402
from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.mechanics.linear_solvers import DirectSolver  # noqa: E402
from softsim.mechanics.loads import Gravity, lumped_masses  # noqa: E402
from softsim.mechanics.newton import StaticNewtonSolver  # noqa: E402
from softsim.mechanics.simulation import Simulation  # noqa: E402
from softsim.mechanics.static_problem import StaticProblem  # noqa: E402

TARGET_MS = 10.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-render", action="store_true", help="skip the off-screen render")
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_render.md")))
    args = parser.parse_args(argv)
    frames = 30 if args.quick else args.frames
    import pyvista as pv

    mesh = meshes.generate.balloon(size=30.0, n=12, wall_cells=4)
    X, tets = mesh.points, mesh.tets
    triangles = mesh.surface_triangles()
    elasticity = TetElasticity(X, tets, model="corotational", young=100.0, poisson=0.45)
    top = np.flatnonzero(np.isclose(X[:, 1], X[:, 1].max()))
    problem = StaticProblem(elasticity, fixed_nodes=top,
                            loads=[Gravity(lumped_masses(X, tets, None, total_mass=0.025), (0, -9810.0, 0))])
    sim = Simulation(problem=problem, newton=StaticNewtonSolver(linear_solver=DirectSolver()),
                     constraint_solver=make_constraint_solver("BlockGaussSeidel"))
    sim.step()

    surface_nodes = np.unique(triangles)
    local = np.searchsorted(surface_nodes, triangles)
    faces = np.hstack([np.full((len(local), 1), 3), local]).ravel()
    surface = pv.PolyData(np.array(X[surface_nodes], dtype=np.float64), faces)
    surface.point_data["field"] = np.zeros(surface_nodes.size)

    rng = np.random.default_rng(0)
    positions = [sim.x + 1e-3 * rng.normal(size=sim.x.shape) for _ in range(4)]
    fields = [rng.random(X.shape[0]) for _ in range(4)]

    def update(x, field):
        surface.points[:] = x[surface_nodes]
        surface.point_data["field"][:] = field[surface_nodes]
        values = surface.point_data["field"]
        _ = (float(np.min(values)), float(np.max(values)))  # BodyView's automatic colour range
        surface.Modified()

    update_times, plain_times, snapshot_times = [], [], []
    for i in range(frames):
        started = time.perf_counter()
        update(positions[i % 4], fields[i % 4])
        update_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        sim.snapshot(None, fields=())
        plain_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        sim.snapshot(None, fields=("von_mises",))
        snapshot_times.append(time.perf_counter() - started)

    render_times, render_note = [], "skipped"
    if not args.no_render and not os.environ.get("DISPLAY"):
        render_note = "skipped: no X display (run under xvfb-run to time render())"
    elif not args.no_render:
        try:
            plotter = pv.Plotter(off_screen=True, window_size=(800, 600))
            plotter.add_mesh(surface, scalars="field", show_edges=True)
            plotter.render()
            for i in range(min(frames, 30)):
                update(positions[i % 4], fields[i % 4])
                started = time.perf_counter()
                plotter.render()
                render_times.append(time.perf_counter() - started)
            plotter.close()
            render_note = "off-screen, 800x600, surface with edges"
        except Exception as error:  # noqa: BLE001 - no OpenGL context on this machine: reported, not fatal
            render_note = f"not available ({type(error).__name__}: {str(error)[:80]})"

    update_stats, snapshot_stats = stats_ms(update_times), stats_ms(snapshot_times)
    plain_stats, render_stats = stats_ms(plain_times), stats_ms(render_times)
    rows = [["surface update (points + field + range + Modified)", f"{update_stats['median']:.3f}",
             f"{update_stats['p90']:.3f}", ""],
            ["Simulation.snapshot, no stress field (copies, displacement)", f"{plain_stats['median']:.3f}",
             f"{plain_stats['p90']:.3f}", "the GUI showing displacement or no field"],
            ["Simulation.snapshot (von Mises, nodal average, copies)", f"{snapshot_stats['median']:.3f}",
             f"{snapshot_stats['p90']:.3f}", "the GUI showing von Mises"],
            ["update + snapshot, no stress field", f"{update_stats['median'] + plain_stats['median']:.3f}", "", ""],
            ["update + snapshot with von Mises", f"{update_stats['median'] + snapshot_stats['median']:.3f}", "", ""],
            ["render()", "-" if not render_times else f"{render_stats['median']:.2f}",
             "-" if not render_times else f"{render_stats['p90']:.2f}", render_note]]
    table = markdown_table(["step", "median ms", "p90 ms", "note"], rows)
    print(table)
    text = ("## Rendered surface update (`benchmarks/bench_render.py`)\n\n"
            f"Body: {len(tets)} tets, {X.shape[0]} nodes; surface: {surface_nodes.size} nodes, {len(triangles)} "
            f"triangles; pyvista {pv.__version__}. {frames} frames.\n\n" + table + "\n")
    Path(args.output).write_text(text)
    write_json(args.json, {"tets": int(len(tets)), "surface_nodes": int(surface_nodes.size),
                           "update": update_stats, "snapshot": snapshot_stats, "snapshot_no_stress": plain_stats,
                           "render": render_stats,
                           "render_note": render_note})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
