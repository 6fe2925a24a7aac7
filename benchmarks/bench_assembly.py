"""Benchmark: TetElasticity.forces_and_tangent vs mesh size, beside scikit-fem's linear-elastic assembly.

Usage: ``python benchmarks/bench_assembly.py [--sizes 1k,10k,36k,130k] [--repeat 5]``.
Prints a Markdown table and writes it to ``benchmarks/RESULTS_assembly.md``. Times are the median of
``--repeat`` calls after one warm-up call (numba compilation excluded).
"""

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.meshes.generate import hex_grid_tets

# (nx, ny, nz) cells, 6 Kuhn tetrahedra each
GRIDS = {"1k": (4, 4, 10), "10k": (8, 8, 26), "36k": (10, 10, 60), "130k": (15, 15, 96)}


def box_mesh(nx, ny, nz, size=(1.0, 1.0, 6.0)):
    """Box of nx*ny*nz cells, 6 Kuhn tetrahedra each (meshes.generate.hex_grid_tets)."""
    return hex_grid_tets(*(np.linspace(0.0, s, k + 1) for s, k in zip(size, (nx, ny, nz), strict=True)))


def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def skfem_time(X, tets, repeat):
    try:
        import skfem
        from skfem.models.elasticity import lame_parameters, linear_elasticity
    except ImportError:
        return float("nan")
    mesh = skfem.MeshTet(X.T.copy(), tets.T.copy())
    basis = skfem.Basis(mesh, skfem.ElementVector(skfem.ElementTetP1()))
    form = linear_elasticity(*lame_parameters(1000.0, 0.3))
    return median_time(lambda: skfem.asm(form, basis), max(1, repeat // 2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(GRIDS), help="comma-separated subset of the default")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_assembly.md")))
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    header = ("| mesh | nodes | tets | nnz(K) | setup ms | corot polar f+K ms | corot large f+K ms | "
              "StVK f+K ms | neo-Hookean f+K ms | StVK f only ms | skfem linear K ms | skfem / StVK |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    print(header, flush=True)
    for name in args.sizes.split(","):
        X, tets = box_mesh(*GRIDS[name])
        x = X + 0.01 * rng.normal(size=X.shape)
        t0 = time.perf_counter()
        el = TetElasticity(X, tets, model="stvk", young=1000.0, poisson=0.3)
        setup = 1e3 * (time.perf_counter() - t0)
        row = {}
        for label, model, rot in [("polar", "corotational", "polar"), ("large", "corotational", "large"),
                                  ("stvk", "stvk", "polar"), ("nh", "neohookean", "polar")]:
            el.set_material(model=model, rotation_method=rot)
            row[label] = median_time(lambda el=el, x=x: el.forces_and_tangent(x), args.repeat)
        el.set_material(model="stvk")
        row["f"] = median_time(lambda el=el, x=x: el.forces(x), args.repeat)
        row["skfem"] = skfem_time(X, tets, args.repeat)
        line = (f"| {name} | {len(X)} | {len(tets)} | {el.tangent(x).nnz} | {setup:.0f} | "
                f"{row['polar']:.1f} | {row['large']:.1f} | {row['stvk']:.1f} | {row['nh']:.1f} | "
                f"{row['f']:.2f} | "
                f"{row['skfem']:.0f} | {row['skfem'] / row['stvk']:.1f}x |")
        lines.append(line)
        print(line, flush=True)
    text = (
        "# forces_and_tangent benchmark (benchmarks/bench_assembly.py)\n\n"
        f"Machine: {platform.processor() or platform.machine()}, {platform.python_version()}, single thread "
        "numba kernel; median of repeated calls after a warm-up. skfem: `asm(linear_elasticity)` with "
        "MeshTet + ElementVector(ElementTetP1) (linear K only, no forces).\n\n" + "\n".join(lines) + "\n"
    )
    Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
