"""The asynchronous preconditioner against the direct solver: a beam with a cable whose value ramps every frame
(a slider drag), beside one bare factorization of the same mesh, all in one process.

The beam (bench_newton's box meshes, corotational, the fixed end at x = 0, gravity) has a cable along its length
below the neutral axis. It is settled, pulled to 2 % of its length, then each measured frame pulls it by
2e-3 of the length more (static mode, every frame converged to the Newton tolerances). Both solvers run the
same frames; the final states are compared. 'bare factorization' is Pardiso's numeric phase of the free
tangent at rest, alone (median of 3).

Each size runs in its own process; the table gives both solvers beside the bare factorization and the fitted
growth exponent of the frame time (the cost of a larger mesh).

Usage: python benchmarks/bench_async.py [--sizes 1k 10k 36k 130k 500k] [--frames 6] [--tangent sofa|exact]
       [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_model, markdown_table, peak_rss_mb, run_in_process, stats_ms, write_json  # noqa: E402
from bench_newton import SIZES, box_mesh  # noqa: E402

from softsim.mechanics.async_preconditioner import AsyncPreconditionedSolver  # noqa: E402
from softsim.mechanics.constraint_solvers import make_constraint_solver  # noqa: E402
from softsim.mechanics.constraints import CableConstraint  # noqa: E402
from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.mechanics.linear_solvers import DirectSolver  # noqa: E402
from softsim.mechanics.loads import Gravity, lumped_masses  # noqa: E402
from softsim.mechanics.newton import StaticNewtonSolver  # noqa: E402
from softsim.mechanics.simulation import Simulation  # noqa: E402
from softsim.mechanics.static_problem import StaticProblem  # noqa: E402

#: bench_newton's sizes and a 500k-tet beam (the 130k beam scaled by about 1.57 in each direction)
ALL_SIZES = {**SIZES, "500k": (141, 24, 25)}


def _beam(size: str, tangent: str, rotation: str = "polarF"):
    nx, ny, nz = ALL_SIZES[size]
    X, tets = box_mesh(ALL_SIZES[size], (float(nx), float(ny), float(nz)))
    elasticity = TetElasticity(X, tets, model="corotational", young=3000.0, poisson=0.3,
                               rotation_method=rotation, corotational_tangent=tangent)
    problem = StaticProblem(elasticity, fixed_nodes=np.flatnonzero(X[:, 0] == 0.0),
                            loads=[Gravity(lumped_masses(X, tets, 1.0), (0.0, 0.0, -0.3 * ny / nx))])
    return X, tets, problem


def bare_factorization_ms(problem, X) -> float:
    K = problem.tangent(X.copy())
    solver = DirectSolver()
    solver.factorize(K)  # analysis
    times = []
    for _ in range(3):
        started = time.perf_counter()
        solver.factorize(K)
        times.append(time.perf_counter() - started)
    solver.close()
    return 1e3 * float(np.median(times))


def pulled_beam(size: str, X, tets, problem, linear_solver):
    """The beam's simulation with its cable (static, the Newton solver on ``linear_solver``), settled under
    gravity and then pulled to 2 % of its length: the start of the measured ramp. Returns (simulation, cable)."""
    nx, ny, nz = ALL_SIZES[size]
    newton = StaticNewtonSolver(linear_solver=linear_solver, newton_iterations=20)
    points = np.column_stack([np.linspace(0.5, nx - 0.5, 14), np.full(14, 0.5 * ny), np.full(14, 0.25 * nz)])
    cable = CableConstraint(X, tets, points=points, pullPoint=np.array([-1.0, 0.5 * ny, 0.25 * nz]),
                            valueType="displacement", value=0.0, minForce=0.0)
    sim = Simulation(problem=problem, newton=newton, constraints=[cable],
                     constraint_solver=make_constraint_solver("BlockGaussSeidel", maxIterations=1000,
                                                              tolerance=1e-8))
    sim.step()
    cable.set_parameters(value=0.02 * nx)
    sim.step()
    return sim, cable


def ramp(size: str, tangent: str, kind: str, frames: int) -> dict:
    """The frames of one solver: settle, pull to 2 %, then ``frames`` ramped frames (timed)."""
    X, tets, problem = _beam(size, tangent)
    linear = DirectSolver() if kind == "direct" else AsyncPreconditionedSolver()
    sim, cable = pulled_beam(size, X, tets, problem, linear)
    nx = ALL_SIZES[size][0]
    times, steps, converged, cg, ages = [], [], 0, [], []
    for _ in range(frames):
        cable.set_parameters(value=float(cable.value) + 2e-3 * nx)
        started = time.perf_counter()
        report = sim.step()
        times.append(time.perf_counter() - started)
        converged += bool(report.converged)
        steps.append(report.equilibrium.steps if report.equilibrium is not None else 0)
        if report.preconditioner is not None:
            cg.append(report.preconditioner["cg_iterations"])
            ages.append(report.preconditioner["factorization_age"])
    for solver in sim._async_solvers():
        solver.close()
    return {"frame": stats_ms(times), "converged": converged, "frames": frames,
            "steps": float(np.median(steps)), "cg": float(np.median(cg)) if cg else None,
            "age_max": max(ages) if ages else None, "x": sim.x.copy(), "length": float(nx)}


def one_size(size: str, tangent: str, frames: int) -> dict:
    """Both solvers and the bare factorization at one size (run in its own process: memory, no shared caches)."""
    X, _, problem = _beam(size, tangent)
    result = {"size": size, "tets": None, "bare_ms": bare_factorization_ms(problem, X)}
    result["tets"] = int(problem.elasticity.tets.shape[0])
    result["free_dofs"] = int(problem.free_dofs.size)
    runs = {kind: ramp(size, tangent, kind, frames) for kind in ("direct", "async")}
    result["difference"] = float(np.max(np.abs(runs["direct"]["x"] - runs["async"]["x"]))) / runs["direct"]["length"]
    for kind, r in runs.items():
        result[kind] = {k: v for k, v in r.items() if k != "x"}
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def growth_exponent(tets, times) -> float:
    """The least-squares slope of log(time) against log(tets): time ~ tets^exponent."""
    return float(np.polyfit(np.log(np.asarray(tets, float)), np.log(np.asarray(times, float)), 1)[0])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1k", "10k", "36k", "130k", "500k"], choices=list(ALL_SIZES))
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--tangent", default="sofa", choices=["sofa", "exact"])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_async.md")))
    args = parser.parse_args(argv)
    if args.one:
        one_size("1k", args.tangent, 2)  # numba kernels and MKL loaded outside the timings
        print("RESULT " + json.dumps(one_size(args.one, args.tangent, args.frames), default=float), flush=True)
        return 0
    results = []
    for size in args.sizes:
        frames = args.frames if size not in ("130k", "500k") else min(args.frames, 4 if size == "130k" else 3)
        command = [sys.executable, __file__, "--one", size, "--tangent", args.tangent, "--frames", str(frames)]
        r = run_in_process(command, size)
        if r is None:
            continue
        results.append(r)
        print(f"{size}: bare {r['bare_ms']:.1f} ms, direct {r['direct']['frame']['median']:.1f} ms, "
              f"async {r['async']['frame']['median']:.1f} ms", flush=True)
    rows = []
    for r in results:
        for kind in ("direct", "async"):
            run, f = r[kind], r[kind]["frame"]
            rows.append([r["tets"], r["free_dofs"], kind, f"{r['bare_ms']:.1f}", f"{f['median']:.1f}",
                         f"{f['p90']:.1f}", f"{f['max']:.1f}", f"{f['median'] / r['bare_ms']:.2f}",
                         f"{run['converged']}/{run['frames']}", f"{run['steps']:.0f}",
                         "-" if run["cg"] is None else f"{run['cg']:.0f}",
                         "-" if run["age_max"] is None else str(run["age_max"]), f"{r['difference']:.1e}",
                         f"{r['peak_rss_mb']:.0f}"])
    header = ["tets", "free DOFs", "solver", "bare factorization", "frame median", "p90", "max", "median / bare",
              "converged", "equilibrium steps", "CG iterations", "largest age", "|x_direct - x_async| / L",
              "peak RSS MB"]
    fits = []
    large = [r for r in results if r["tets"] >= 10_000]
    if len(large) >= 2:
        tets = [r["tets"] for r in large]
        fits.append(["bare factorization", f"{growth_exponent(tets, [r['bare_ms'] for r in large]):.2f}"])
        for kind in ("direct", "async"):
            fits.append([f"frame median, {kind}",
                         f"{growth_exponent(tets, [r[kind]['frame']['median'] for r in large]):.2f}"])
    text = ("## Asynchronous preconditioner and frame time against mesh size (`benchmarks/bench_async.py`)\n\n"
            f"Machine: {cpu_model()}, {os.cpu_count()} logical cores, load average {os.getloadavg()[0]:.2f} "
            "after the run. One process per size. A corotational beam "
            f"({args.tangent} tangent; bench_newton's box meshes, 6 tets per cell, fixed at x = 0, gravity) with "
            "a cable below its neutral axis, settled, pulled to 2 % of its length, then every measured frame "
            "pulls 2e-3 of the length more (a slider drag; static mode, every frame converged to the Newton "
            "tolerances). Times in ms; 'equilibrium steps' and 'CG iterations' are medians per frame; 'largest "
            "age' counts the tangents assembled since the one the preconditioner factorized; 'bare "
            "factorization' is Pardiso's numeric phase of the tangent at rest, alone, in the same process.\n\n"
            + markdown_table(header, rows) + "\n\n"
            "Growth exponent (least-squares slope of log time against log tets, sizes >= 10k: time ~ tets^p):"
            "\n\n" + markdown_table(["quantity", "p"], fits) + "\n")
    Path(args.output).write_text(text)
    write_json(args.json, results)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
