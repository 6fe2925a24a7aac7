"""Constraint solvers on synthetic contact problems: iterations and time to tolerance, beside Lemke and OSQP.

Problem: K is a random sparse SPD stiffness of a 3D grid of nodes (3 DOFs per node, 7-point coupling with
random positive weights, plus a small diagonal shift), J has m contact-like rows (a random unit normal on one
random node each), W = J K^-1 J^T (sparse LU, many right-hand sides), dfree uniform in [-1, 1] so that about
half the contacts close. Every row is unilateral (an LCP). Iterative solvers run with tolerance 1e-6 and
scaleTolerance false (SOFA's own error measure); "residual" is the solver-independent complementarity residual
of the result and "max |f - f_exact|" the distance to Lemke's solution. OSQP (through qpsolvers) solves the
same problem as the QP min 1/2 f'Wf + dfree'f, f >= 0 with eps_abs 1e-6, eps_rel 0.

Usage: python benchmarks/bench_constraint_solvers.py [--sizes 10 100 500] [--grid 10] [--output PATH]
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
import scipy.sparse as sp
import scipy.sparse.linalg as spla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from softsim.mechanics.constraint_solvers import make_constraint_solver  # noqa: E402
from softsim.mechanics.resolutions import Blocks, complementarity_residual  # noqa: E402

logger = logging.getLogger("bench_constraint_solvers")

SOLVERS = {
    "BlockPivoting": {},
    "BlockGaussSeidel": {},
    "NNCG": {},
    "ImprovedJacobi (spectral)": {"useSpectralCorrection": True},
    "ImprovedJacobi (spectral + CR 0.25)": {
        "useSpectralCorrection": True,
        "useConjugateResidue": True,
        "conjugateResidueSpeedFactor": 0.25,
    },
}


def grid_stiffness(n: int, rng: np.random.Generator) -> sp.csc_matrix:
    """SPD (3 n^3, 3 n^3): weighted graph Laplacian of an n^3 grid per component, plus a 1e-2 shift."""
    ids = np.arange(n**3).reshape(n, n, n)
    pairs = np.concatenate(
        [
            np.stack([ids[:-1].ravel(), ids[1:].ravel()], 1),
            np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], 1),
            np.stack([ids[:, :, :-1].ravel(), ids[:, :, 1:].ravel()], 1),
        ]
    )
    dofs = 3 * pairs[:, :, None] + np.arange(3)  # (e, 2, 3)
    a, b = dofs[:, 0].ravel(), dofs[:, 1].ravel()
    weight = rng.uniform(0.5, 2.0, a.size)
    n_dof = 3 * n**3
    rows = np.concatenate([a, b, a, b])
    cols = np.concatenate([a, b, b, a])
    vals = np.concatenate([weight, weight, -weight, -weight])
    K = sp.coo_matrix((vals, (rows, cols)), shape=(n_dof, n_dof)).tocsc()
    return (K + 1e-2 * sp.identity(n_dof, format="csc")).tocsc()


def contact_problem(m: int, K: sp.csc_matrix, lu, rng: np.random.Generator):
    n_nodes = K.shape[0] // 3
    nodes = rng.choice(n_nodes, size=m, replace=False)
    normals = rng.standard_normal((m, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    J = sp.csr_matrix(
        (normals.ravel(), (np.repeat(np.arange(m), 3), (3 * nodes[:, None] + np.arange(3)).ravel())),
        shape=(m, K.shape[0]),
    )
    W = J @ lu.solve(J.T.toarray())
    return 0.5 * (W + W.T), rng.uniform(-1.0, 1.0, m)


def run_osqp(W, dfree):
    try:
        import qpsolvers
    except ImportError:  # pragma: no cover - optional peer
        return None
    problem = qpsolvers.Problem(P=sp.csc_matrix(W), q=dfree, lb=np.zeros(dfree.size))
    started = time.perf_counter()
    solution = qpsolvers.solve_problem(problem, solver="osqp", eps_abs=1e-6, eps_rel=0.0, max_iter=200_000)
    elapsed = time.perf_counter() - started
    info = solution.extras.get("info") if solution.extras else None
    iterations = getattr(info, "iter", None) if info is not None else None
    return solution.x, iterations, elapsed, bool(solution.found)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--grid", type=int, default=10, help="nodes per side of the grid (3 n^3 DOFs)")
    parser.add_argument("--max-iterations", type=int, default=20_000)
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("RESULTS_constraints.md"))
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    K = grid_stiffness(args.grid, rng)
    lu = spla.splu(K)
    # compile the numba kernels outside the timings
    make_constraint_solver("BlockGaussSeidel").solve(np.eye(3), -np.ones(3), Blocks.unilateral(3))
    make_constraint_solver("NNCG").solve(np.eye(3), -np.ones(3), Blocks.unilateral(3))
    make_constraint_solver("BlockPivoting").solve(np.eye(3), -np.ones(3), Blocks.unilateral(3))

    rows = []
    for m in args.sizes:
        W, dfree = contact_problem(m, K, lu, rng)
        blocks = Blocks.unilateral(m)
        exact = make_constraint_solver("exact")
        started = time.perf_counter()
        reference = exact.solve(W, dfree, blocks)
        exact_time = time.perf_counter() - started
        f_exact = reference.force
        active = int(np.sum(f_exact > 0))
        rows.append(
            (
                "exact (Lemke)",
                m,
                active,
                reference.iterations,
                exact_time,
                reference.converged,
                reference.error,
                0.0,
            )
        )
        for name, extra in SOLVERS.items():
            solver = make_constraint_solver(
                name.split(" ")[0],
                tolerance=1e-6,
                scaleTolerance=False,
                maxIterations=args.max_iterations,
                **extra,
            )
            solver.solve(W, dfree, blocks)  # warm the spectral-radius cache and allocations
            started = time.perf_counter()
            report = solver.solve(W, dfree, blocks)
            elapsed = time.perf_counter() - started
            rows.append(
                (
                    name,
                    m,
                    active,
                    report.iterations,
                    elapsed,
                    report.converged,
                    complementarity_residual(W, dfree, report.force, blocks),
                    float(np.abs(report.force - f_exact).max()),
                )
            )
        osqp = run_osqp(W, dfree)
        if osqp is not None:
            x, iterations, elapsed, found = osqp
            rows.append(
                (
                    "OSQP (qpsolvers)",
                    m,
                    active,
                    iterations,
                    elapsed,
                    found,
                    complementarity_residual(W, dfree, x, blocks),
                    float(np.abs(x - f_exact).max()),
                )
            )

    header = (
        "| solver | m | active | iterations | time (ms) | converged | residual | max abs(f - f_exact) |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {n} | {m} | {a} | {it} | {1e3 * t:.2f} | {c} | {r:.2e} | {e:.2e} |"
        for n, m, a, it, t, c, r, e in rows
    ]
    table = "\n".join([header, *lines])
    print(table)
    text = (
        "# Constraint solver benchmark (`benchmarks/bench_constraint_solvers.py`)\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} logical cores (shared while measured), "
        f"Python {platform.python_version()}.\n"
        f"W = J K^-1 J^T with K the SPD grid stiffness of {K.shape[0]} DOFs, m unilateral contact rows, "
        "dfree uniform in [-1, 1]. Iterative solvers: tolerance 1e-6, scaleTolerance false, SOFA error "
        "measure; 'iterations' are sweeps (BlockGS, NNCG), Jacobi iterations, Lemke pivots or OSQP ADMM "
        "iterations. 'residual' is the complementarity residual (displacement units).\n\n" + table + "\n"
    )
    args.output.write_text(text)
    logger.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    raise SystemExit(main())
