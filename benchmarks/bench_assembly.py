"""Benchmark: TetElasticity.forces_and_tangent and forces vs mesh size, beside scikit-fem's linear-elastic assembly.

Usage: ``python benchmarks/bench_assembly.py [--sizes 1k,10k,36k,130k] [--repeat 5] [--runs 3]``.
Prints a Markdown table and writes it to ``benchmarks/RESULTS_assembly.md``.

Every timed call works on fresh inputs: the positions cycle through ``POOL`` different perturbed states, so no
call sees the positions of the one before (``TetElasticity.forces`` keeps the last two ``(x, f)`` pairs and
would otherwise return a memoised copy: the "f only" column used to time that copy, 0.11 ms at 130k tets where
a force pass takes about 9 ms). The script asserts that no timed ``forces`` call is a memo hit. Each cell gives
the median and, in brackets, the min and max over ``--runs`` x ``--repeat`` calls (one warm-up call per run,
numba compilation excluded); the machine's load average is recorded before and after.
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.meshes.generate import hex_grid_tets  # noqa: E402

# (nx, ny, nz) cells, 6 Kuhn tetrahedra each
GRIDS = {"1k": (4, 4, 10), "10k": (8, 8, 26), "36k": (10, 10, 60), "130k": (15, 15, 96)}
#: distinct perturbed position sets the timed calls cycle through (more than the forces memo holds)
POOL = 5
MODELS = [("polar", "corotational", "polar"), ("large", "corotational", "large"), ("stvk", "stvk", "polar"),
          ("nh", "neohookean", "polar")]


def box_mesh(nx, ny, nz, size=(1.0, 1.0, 6.0)):
    """Box of nx*ny*nz cells, 6 Kuhn tetrahedra each (meshes.generate.hex_grid_tets)."""
    return hex_grid_tets(*(np.linspace(0.0, s, k + 1) for s, k in zip(size, (nx, ny, nz), strict=True)))


class Timings:
    """Milliseconds of repeated calls; ``cell()`` is ``median (min-max)``."""

    def __init__(self) -> None:
        self.ms: list[float] = []

    def add(self, seconds: float) -> None:
        self.ms.append(1e3 * seconds)

    @property
    def median(self) -> float:
        return float(np.median(self.ms)) if self.ms else float("nan")

    def cell(self, digits: int = 1) -> str:
        if not self.ms:
            return "-"
        return f"{self.median:.{digits}f} ({min(self.ms):.{digits}f}-{max(self.ms):.{digits}f})"


def time_calls(fn, positions, repeat: int, timings: Timings, *, check=None) -> None:
    """One warm-up call, then ``repeat`` timed calls, each on the next of ``positions`` (never the same twice in
    a row); ``check(x)`` runs before each timed call (outside the timing)."""
    fn(positions[-1])
    for i in range(repeat):
        x = positions[i % (len(positions) - 1)]
        if check is not None:
            check(x)
        started = time.perf_counter()
        fn(x)
        timings.add(time.perf_counter() - started)


def skfem_time(X, tets, repeat: int, timings: Timings) -> None:
    try:
        import skfem
        from skfem.models.elasticity import lame_parameters, linear_elasticity
    except ImportError:
        return
    mesh = skfem.MeshTet(X.T.copy(), tets.T.copy())
    basis = skfem.Basis(mesh, skfem.ElementVector(skfem.ElementTetP1()))
    form = linear_elasticity(*lame_parameters(1000.0, 0.3))
    skfem.asm(form, basis)
    for _ in range(max(1, repeat // 2)):
        started = time.perf_counter()
        skfem.asm(form, basis)
        timings.add(time.perf_counter() - started)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(GRIDS), help="comma-separated subset of the default")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per run")
    parser.add_argument("--runs", type=int, default=3, help="runs of the whole set of calls")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_assembly.md")))
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    header = ("| mesh | nodes | tets | nnz(K) | setup ms | corot polar f+K ms | corot large f+K ms | "
              "StVK f+K ms | neo-Hookean f+K ms | StVK f only ms | skfem linear K ms | skfem / StVK f+K |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    print(header, flush=True)
    for name in args.sizes.split(","):
        X, tets = box_mesh(*GRIDS[name])
        positions = [X + 0.01 * rng.normal(size=X.shape) for _ in range(POOL)]
        started = time.perf_counter()
        el = TetElasticity(X, tets, model="stvk", young=1000.0, poisson=0.3)
        setup = 1e3 * (time.perf_counter() - started)
        cells = {label: Timings() for label in (*[m[0] for m in MODELS], "f", "skfem")}

        def not_memoised(x, el=el):
            assert el._memoised_forces(x) is None, "a timed forces() call would return the memoised copy"

        for _run in range(args.runs):
            for label, model, rotation in MODELS:
                el.set_material(model=model, rotation_method=rotation)
                time_calls(el.forces_and_tangent, positions, args.repeat, cells[label])
            el.set_material(model="stvk")
            el.forces_and_tangent(positions[-1])  # the memo now holds states the timed calls never use
            time_calls(el.forces, positions, args.repeat, cells["f"], check=not_memoised)
            skfem_time(X, tets, args.repeat, cells["skfem"])
        ratio = cells["skfem"].median / cells["stvk"].median
        line = (f"| {name} | {len(X)} | {len(tets)} | {el.tangent(positions[0]).nnz} | {setup:.0f} | "
                f"{cells['polar'].cell()} | {cells['large'].cell()} | {cells['stvk'].cell()} | "
                f"{cells['nh'].cell()} | {cells['f'].cell(2)} | {cells['skfem'].cell(0)} | {ratio:.1f}x |")
        lines.append(line)
        print(line, flush=True)
    load_after = os.getloadavg()
    text = (
        "# forces_and_tangent benchmark (benchmarks/bench_assembly.py)\n\n"
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, Python "
        f"{platform.python_version()}; load average (1, 5, 15 min) {', '.join(f'{v:.2f}' for v in load_before)} "
        f"before and {', '.join(f'{v:.2f}' for v in load_after)} after. Single-thread numba kernels. Each cell: "
        f"median (min-max) over {args.runs} runs x {args.repeat} calls, every call on positions different from "
        "the call before (no memoised forces). skfem: `asm(linear_elasticity)` with MeshTet + "
        "ElementVector(ElementTetP1) (linear K only, no forces), half as many calls.\n\n" + "\n".join(lines) + "\n"
    )
    Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
