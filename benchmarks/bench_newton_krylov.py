"""The two routes issue 28 named for the exact tangent, measured on a large mesh's slider frames: a new
factorization of the exact tangent at every Newton step (softsim's direct solver, the default), against
Newton-Krylov, whose Newton steps solve the exact tangent by GMRES preconditioned by a factorization kept
across frames.

The beam and its frames are bench_async's: a corotational box beam (6 tets per cell, the end at x = 0 fixed,
gravity) with a cable below its neutral axis, settled, pulled to 2 % of its length, then each measured frame
pulls 2e-3 of the length more (a slider drag; static mode, every frame converged to the Newton tolerances).

Solvers (every one solves the equilibrium's exact tangent; only how differs):

- ``direct``: Pardiso factorizes every tangent (Cholesky / LDL^T when it is symmetric, as with ``polarF``; LU
  for SOFA's ``large`` rotations, whose exact tangent is not symmetric).
- ``krylov``: right-preconditioned GMRES (``preconditioned_gmres`` of mechanics/async_preconditioner.py) on the
  current tangent; the preconditioner is
  the factorization of the last tangent it factorized, kept across steps and frames, and made again from the
  current tangent only when GMRES misses its tolerance within ``--krylov-iterations`` iterations.
- ``krylov_symmetric``: the same, the preconditioner being the factorization of the tangent's symmetric part
  (SOFA's symmetric tangent plays this role in the issue: a Cholesky / LDL^T instead of an LU).

The equilibrium iterations ask an iterative solver for a relative residual that follows the imbalance with the
exact tangent (``_forcing`` in mechanics/equilibrium.py), at most ``INEXACT_FORCING``; ``--forcing`` sets that
cap (1e-6 by default, as in the recorded table, measured before the forcing followed the imbalance: a frame from
its predictor, 3e-4 of the force scale, to the Newton tolerance needs about that; at 0.02 the 10k beam's frames
took 2 to 5 Newton steps instead of 1).
'bare factorization' is Pardiso's numeric phase of the tangent at rest, alone (bench_async); 'per step' gives a
Krylov frame's GMRES iterations per Newton step and its refactorizations.

Usage: python benchmarks/bench_newton_krylov.py [--sizes 10k 36k] [--rotations polarF large] [--frames 4]
       [--krylov-iterations 8] [--forcing 1e-6] [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_model, markdown_table, run_in_process, stats_ms, write_json  # noqa: E402
from bench_async import ALL_SIZES, _beam, bare_factorization_ms, pulled_beam  # noqa: E402

import softsim.mechanics.equilibrium as equilibrium  # noqa: E402
from softsim.mechanics.async_preconditioner import preconditioned_gmres  # noqa: E402
from softsim.mechanics.linear_solvers import DirectSolver  # noqa: E402
from softsim.mechanics.linear_solvers.base import Capabilities, _new_stats  # noqa: E402

SOLVERS = ("direct", "krylov", "krylov_symmetric")


class KeptFactorizationGMRES:
    """A linear solver for the equilibrium iterations: GMRES on the current matrix, preconditioned by a kept
    factorization (of an earlier matrix, or of its symmetric part with ``symmetric_part``). A solve that misses
    its tolerance in ``max_iterations`` factorizes the current matrix and solves again."""

    capabilities = Capabilities(inexact=True, unsymmetric=True)
    symmetric = False
    #: every solver made (the benchmark sums their counters)
    instances: list = []

    def __init__(self, *, max_iterations: int = 8, symmetric_part: bool = False, tolerance: float = 1e-8):
        self.max_iterations = int(max_iterations)
        self.symmetric_part = bool(symmetric_part)
        self.tolerance = float(tolerance)
        self.name = "KeptFactorizationGMRES"
        self.stats = _new_stats()
        self.stats.update(iterations=0, kept_factorizations=0)
        self.matrix: sp.csr_matrix | None = None
        self._preconditioner = DirectSolver()
        self._current = False  # whether the preconditioner is the current matrix's own (LU) factorization
        KeptFactorizationGMRES.instances.append(self)

    @property
    def is_factorized(self) -> bool:
        return self.matrix is not None

    def like(self) -> KeptFactorizationGMRES:
        return KeptFactorizationGMRES(max_iterations=self.max_iterations, symmetric_part=self.symmetric_part,
                                      tolerance=self.tolerance)

    def factorize(self, A) -> None:
        A = sp.csr_matrix(A)
        self.matrix = sp.csr_matrix((A.data.copy(), A.indices, A.indptr), shape=A.shape)
        self.stats["factorizations"] += 1  # a new operator (the equilibrium's caches key on this count)
        self._current = False

    def _factorize_now(self) -> None:
        M = self.matrix
        if self.symmetric_part:
            M = ((M + M.T) * 0.5).tocsr()
            M.sort_indices()
        self._preconditioner.factorize(M)
        self.stats["kept_factorizations"] += 1
        self._current = not self.symmetric_part

    def solve(self, b, x0=None, *, tolerance: float | None = None) -> np.ndarray:
        tolerance = self.tolerance if tolerance is None else float(tolerance)
        B = np.asarray(b, dtype=np.float64).reshape(b.shape[0], -1)
        if not self._preconditioner.is_factorized:
            self._factorize_now()
        if self._current:
            X, used, converged = self._preconditioner.solve(B), 1, True
        else:
            X, iterations, status = preconditioned_gmres(self.matrix, B, self._preconditioner.solve,
                                                         tolerance=tolerance, max_iterations=self.max_iterations)
            used, converged = int(iterations.max(initial=0)), status == "converged"
        if not converged:
            self._factorize_now()
            if self._current:
                X = self._preconditioner.solve(B)
            else:
                X, iterations, _ = preconditioned_gmres(self.matrix, B, self._preconditioner.solve,
                                                        tolerance=tolerance, max_iterations=5 * self.max_iterations)
                used += int(iterations.max(initial=0))
        self.stats["iterations"] += used
        self.stats["solves"] += 1
        return X.reshape(b.shape)

    def close(self) -> None:
        self._preconditioner.close()
        self.matrix = None


def _linear_solver(kind: str, krylov_iterations: int):
    if kind == "direct":
        return DirectSolver()
    return KeptFactorizationGMRES(max_iterations=krylov_iterations, symmetric_part=kind == "krylov_symmetric")


def ramp(size: str, rotation: str, kind: str, frames: int, krylov_iterations: int) -> dict:
    """The frames of one solver: settle, pull to 2 %, then ``frames`` ramped frames (timed)."""
    X, tets, problem = _beam(size, "exact", rotation)
    nx = ALL_SIZES[size][0]
    KeptFactorizationGMRES.instances.clear()
    sim, cable = pulled_beam(size, X, tets, problem, _linear_solver(kind, krylov_iterations))
    times, steps, converged, gmres, refactorizations = [], [], 0, [], []
    for _ in range(frames):
        cable.set_parameters(value=float(cable.value) + 2e-3 * nx)
        before = _counts()
        started = time.perf_counter()
        report = sim.step()
        times.append(time.perf_counter() - started)
        after = _counts()
        converged += bool(report.converged)
        steps.append(report.equilibrium.steps if report.equilibrium is not None else 0)
        gmres.append(after[0] - before[0])
        refactorizations.append(after[1] - before[1])
    return {"frame": stats_ms(times), "times": [1e3 * t for t in times], "converged": converged,
            "frames": frames, "steps": steps, "gmres": gmres, "refactorizations": refactorizations,
            "x": sim.x.copy(), "length": float(nx)}


def _counts() -> tuple[int, int]:
    """(GMRES iterations, kept factorizations made) summed over the Krylov solvers made since the last reset
    (the Newton solver's and the equilibrium tangent's own, made by ``like()``)."""
    solvers = KeptFactorizationGMRES.instances
    return (sum(s.stats["iterations"] for s in solvers), sum(s.stats["kept_factorizations"] for s in solvers))


def one_size(size: str, rotation: str, frames: int, krylov_iterations: int, forcing: float) -> dict:
    """Every solver and the bare factorization at one size (run in its own process)."""
    X, _, problem = _beam(size, "exact", rotation)
    result = {"size": size, "rotation": rotation, "bare_ms": bare_factorization_ms(problem, X),
              "tets": int(problem.elasticity.tets.shape[0]), "free_dofs": int(problem.free_dofs.size)}
    runs = {}
    for kind in SOLVERS:
        saved = equilibrium.INEXACT_FORCING
        equilibrium.INEXACT_FORCING = forcing if kind != "direct" else saved
        try:
            runs[kind] = ramp(size, rotation, kind, frames, krylov_iterations)
        finally:
            equilibrium.INEXACT_FORCING = saved
    for kind, r in runs.items():
        result[kind] = {key: value for key, value in r.items() if key != "x"}
        result[kind]["difference"] = float(np.max(np.abs(r["x"] - runs["direct"]["x"]))) / r["length"]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["10k", "36k"], choices=list(ALL_SIZES))
    parser.add_argument("--rotations", nargs="+", default=["polarF", "large"], choices=["polarF", "large"])
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--krylov-iterations", type=int, default=8)
    parser.add_argument("--forcing", type=float, default=1e-6)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_newton_krylov.md")))
    args = parser.parse_args(argv)
    if args.one:
        one_size("1k", args.one[1], 2, args.krylov_iterations, args.forcing)  # numba kernels and MKL loaded
        result = one_size(args.one[0], args.one[1], args.frames, args.krylov_iterations, args.forcing)
        print("RESULT " + json.dumps(result, default=float), flush=True)
        return 0
    results = []
    for size in args.sizes:
        for rotation in args.rotations:
            command = [sys.executable, __file__, "--one", size, rotation, "--frames", str(args.frames),
                       "--krylov-iterations", str(args.krylov_iterations), "--forcing", str(args.forcing)]
            r = run_in_process(command, f"{size} {rotation}")
            if r is not None:
                results.append(r)
                print(f"{size} {rotation}: bare {r['bare_ms']:.1f} ms; " + "; ".join(
                    f"{kind} {r[kind]['frame']['median']:.1f} ms" for kind in SOLVERS), flush=True)
    if args.json:
        write_json(args.json, results)
    rows = []
    for r in results:
        for kind in SOLVERS:
            run = r[kind]
            per_step = "" if kind == "direct" else (
                f"{sum(run['gmres']) / max(sum(run['steps']), 1):.1f} / {sum(run['refactorizations'])}")
            rows.append([r["tets"], r["rotation"], kind, f"{r['bare_ms']:.1f}",
                         ", ".join(f"{t:.0f}" for t in run["times"]), f"{run['frame']['median']:.1f}",
                         f"{run['frame']['median'] / r['bare_ms']:.2f}", f"{run['converged']}/{run['frames']}",
                         ", ".join(str(s) for s in run["steps"]), per_step, f"{run['difference']:.1e}"])
    header = ["tets", "rotation", "solver", "bare factorization", "frames (ms)", "median", "median / bare",
              "converged", "Newton steps", "GMRES its. per Newton step (all solves) / new preconditioners",
              "|x - x_direct| / L"]
    text = ("## Newton-Krylov against a factorization per step (`benchmarks/bench_newton_krylov.py`)\n\n"
            f"Machine: {cpu_model()}. One process per size and rotation; times in ms; krylov: GMRES limit "
            f"{args.krylov_iterations} iterations, forcing {args.forcing:g}.\n\n" + markdown_table(header, rows) + "\n")
    Path(args.output).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
