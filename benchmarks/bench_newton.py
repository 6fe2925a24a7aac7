"""Newton-iteration time vs mesh size for StVK and corotational beams, beside the bare factorization time.

Beam meshes are structured boxes split into 6 tets per cell (Caribou's benchmark uses a 10x10x60 beam:
36 000 tets). Each Newton iteration = tangent assembly (straight into the free-DOF matrix) + Pardiso numeric
factorization (symbolic analysis reused) + solve + residual evaluation. "bare factorization" is the numeric
factorization (Pardiso phase 22) of the same free-DOF tangent alone, measured after its analysis. The first iteration
(which also runs the symbolic analysis) is excluded from the median and its analysis time listed apart.

Usage: python benchmarks/bench_newton.py [--sizes 1k 10k 36k 130k] [--iterations 4] [--output PATH]
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.mechanics.linear_solvers import DirectSolver  # noqa: E402
from softsim.mechanics.loads import NodalForce  # noqa: E402
from softsim.mechanics.newton import StaticNewtonSolver  # noqa: E402
from softsim.mechanics.static_problem import StaticProblem  # noqa: E402
from softsim.meshes.generate import hex_grid_tets

logger = logging.getLogger("bench_newton")

#: cells (nx, ny, nz) of each size; 6 tets per cell
SIZES = {"1k": (14, 3, 4), "10k": (35, 7, 7), "36k": (60, 10, 10), "130k": (90, 15, 16)}


def box_mesh(cells, size):
    """Structured box of ``cells`` hexahedra, 6 Kuhn tets each (meshes.generate.hex_grid_tets)."""
    return hex_grid_tets(*(np.linspace(0.0, length, count + 1) for length, count in zip(size, cells, strict=True)))


def run_case(cells, model, iterations, repeats=2):
    nx, ny, nz = cells
    X, tets = box_mesh(cells, (float(nx), float(ny), float(nz)))
    elasticity = TetElasticity(X, tets, model=model, young=3000.0, poisson=0.3)
    fixed = np.flatnonzero(X[:, 0] == 0.0)
    tip = np.flatnonzero(X[:, 0] == X[:, 0].max())
    load = NodalForce(tip, (0.0, 0.0, -0.05 * 3000.0 * ny * nz * (ny / nx) ** 2))
    problem = StaticProblem(elasticity, fixed_nodes=fixed, loads=[load])
    best = None
    for _ in range(repeats):  # the machine is shared: keep the fastest repetition
        solver = StaticNewtonSolver(
            newton_iterations=iterations,
            residual_tolerance_threshold=-1,
            correction_tolerance_threshold=-1,
            linear_solver=DirectSolver(),
        )
        report = solver.solve(problem, X)
        times_ms = np.array(report.iteration_times) * 1e-6
        stats = solver.linear_solver.stats
        later = report.iterations - 1  # iterations after the first (which also runs the symbolic analysis)
        candidate = {
            "first_ms": times_ms[0],
            "iteration_ms": float(np.median(times_ms[1:])),
            "assembly_ms": 1e3 * report.assembly_time / report.iterations,
            "factor_ms": 1e3 * (stats["factorization_time"]) / stats["factorizations"],
            "solve_ms": 1e3 * stats["solve_time"] / stats["solves"],
            "residual_ms": 1e3 * report.residual_time / max(later, 1),
            "analysis_ms": 1e3 * stats["analysis_time"],
        }
        if best is None or candidate["iteration_ms"] < best["iteration_ms"]:
            best = candidate
        last_tangent = solver.last_tangent
        solver.linear_solver.close()
    # bare numeric factorization of the same (last factorized) tangent, analysis done once beforehand
    bare = DirectSolver()
    bare.factorize(last_tangent)
    hot_times, cold_times = [], []
    scratch = np.zeros(2**25)  # 256 MB, larger than any last-level cache
    for _ in range(3):
        start = time.perf_counter()
        bare.factorize(last_tangent)  # right after another factorization: factor data still in cache
        hot_times.append(time.perf_counter() - start)
        scratch += 1.0  # evict the caches, as the element assembly of a Newton iteration does
        start = time.perf_counter()
        bare.factorize(last_tangent)
        cold_times.append(time.perf_counter() - start)
    bare.close()
    best.update(tets=len(tets), nodes=len(X), dofs=problem.n_free, bare_factor_ms=1e3 * min(cold_times))
    best.update(hot_factor_ms=1e3 * min(hot_times), factor_nonzeros=bare.stats["factor_nonzeros"])
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--models", nargs="+", default=["stvk", "corotational"])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_newton.md")))
    args = parser.parse_args(argv)

    run_case((3, 1, 1), "stvk", 2)  # compile / load numba kernels and MKL once
    header = (
        "| model | tets | nodes | free DOFs | nnz(L) | Newton it. (ms) | assembly | factorization | solve "
        "| residual | bare factorization cold / hot (ms) | ratio it./cold factor | analysis (ms) |"
    )
    lines = [header, "|" + "---|" * 13]
    print(header)
    for model in args.models:
        for size in args.sizes:
            r = run_case(SIZES[size], model, args.iterations, args.repeats)
            ratio = r["iteration_ms"] / r["bare_factor_ms"]
            line = (
                f"| {model} | {r['tets']} | {r['nodes']} | {r['dofs']} | {r['factor_nonzeros']} | "
                f"{r['iteration_ms']:.1f} | {r['assembly_ms']:.1f} | {r['factor_ms']:.1f} | "
                f"{r['solve_ms']:.1f} | {r['residual_ms']:.1f} | "
                f"{r['bare_factor_ms']:.1f} / {r['hot_factor_ms']:.1f} | {ratio:.2f} | "
                f"{r['analysis_ms']:.1f} |"
            )
            print(line, flush=True)
            lines.append(line)
    text = [
        "# Newton iteration benchmark (`benchmarks/bench_newton.py`)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores "
        f"(shared with other jobs while measured), Python {platform.python_version()}, MKL Pardiso.",
        f"Beam meshes (6 tets per cell), {args.iterations} Newton iterations per solve, best of "
        f"{args.repeats} solves. 'Newton it.' is the median wall time of iterations 2..N (the first one "
        "also runs the symbolic analysis, listed apart). Per-phase columns are ms per iteration: assembly = "
        "fused residual + tangent pass into the free-DOF matrix, factorization = Pardiso numeric phase, "
        "solve = phase 33, residual = residual-only evaluations (the last iteration's). Bare factorization: "
        "the numeric phase of the same matrix alone, 'cold' after evicting the caches with a 256 MB write, "
        "'hot' right after another factorization. Inside the loop the same numeric phase is slower (column "
        "'factorization'): it follows the single-threaded element assembly; not a cache effect (cold = hot).",
        "Reference (Caribou, StVK, Pardiso LLT, hardware not stated): 16.3 ms at 4 500 tets, 174.4 ms at "
        "36 000 tets per Newton iteration.",
        "",
        *lines,
        "",
    ]
    Path(args.output).write_text("\n".join(text))
    print(f"written {args.output}")


if __name__ == "__main__":
    main()
