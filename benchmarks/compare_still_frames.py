"""One bench_scenes case's still frames in several git revisions, in alternating bursts, for a loaded machine.

compare_revisions.py runs whole scripts one after the other, so a load that comes and goes between two runs
moves a median by 2-3 times. Here each revision gets its own process (a worktree each, that tree's package and
bench_scenes.py), which loads the case and settles it once; then the processes time ``--frames`` still frames
in turn (``--bursts`` times, the order reversed every burst), so a load falls on every revision alike. Reported
per revision: the wall time per frame (min, 10th percentile, median), the process CPU time per frame (10th
percentile, median; ``--one-thread`` makes it the work done: MKL, OpenMP and numba on one thread) and the 10th
percentile's ratio to the first revision's.

Cases: a shipped scene's name (resources/scenes/NAME.toml) or ``cavity_contacts_10k`` /
``cavity_contacts_10k_frictionless`` (bench_scenes.py's 10k body). A dynamic scene's "still" frames go on
integrating, so its revisions do the same work only as long as they move the same way.

Usage: python benchmarks/compare_still_frames.py CASE REV [REV ...] [--bursts 20] [--frames 50] [--one-thread]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _worktree import worktree

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def child(tree: str, case: str) -> None:
    """The measuring process: loads ``case`` from ``tree``, settles it, then times as many still frames as each
    line of stdin asks for and answers one JSON line [wall ms, CPU ms]."""
    sys.path.insert(0, str(Path(tree) / "benchmarks"))
    import bench_scenes

    if case.startswith("cavity_contacts_10k"):
        simulation, _contact = bench_scenes.cavity_contact_simulation(0.0 if case.endswith("frictionless") else 0.3)
        step = simulation.step
    else:
        from softsim.mechanics.scene_runtime import Scene

        step = Scene.load(Path(tree) / "resources" / "scenes" / f"{case}.toml").step
    bench_scenes.settle(step)
    for _ in range(5):  # a settled scene's first frames may still re-equilibrate once
        step()
    print("ready", flush=True)
    for line in sys.stdin:
        wall, cpu = [], []
        for _ in range(int(line)):
            started, started_cpu = time.perf_counter(), time.process_time()
            step()
            wall.append(1e3 * (time.perf_counter() - started))
            cpu.append(1e3 * (time.process_time() - started_cpu))
        print(json.dumps([wall, cpu]), flush=True)


def _alternate(args, trees: list[Path], processes: list) -> tuple[list, list]:
    """A child process per tree (appended to ``processes``), then ``args.bursts`` bursts of still frames in each
    in turn, the order reversed every burst; the wall and CPU seconds per frame of each tree."""
    environment = dict(os.environ)
    if args.one_thread:
        environment.update({name: "1" for name in THREAD_VARIABLES})
    for tree in trees:
        processes.append(subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), args.case, "-", "--child", str(tree)], cwd=tree,
            env=dict(environment, PYTHONPATH=str(tree)), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for process, revision in zip(processes, args.revisions):
        while (line := process.stdout.readline()) and not line.startswith("ready"):
            pass
        if not line:
            raise RuntimeError(f"{args.case} at {revision} did not load")
    wall = [[] for _ in trees]
    cpu = [[] for _ in trees]
    for burst in range(args.bursts):
        order = range(len(trees)) if burst % 2 == 0 else reversed(range(len(trees)))
        for i in order:
            processes[i].stdin.write(f"{args.frames}\n")
            processes[i].stdin.flush()
            measured_wall, measured_cpu = json.loads(processes[i].stdout.readline())
            wall[i] += measured_wall
            cpu[i] += measured_cpu
    return wall, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("revisions", nargs="+")
    parser.add_argument("--bursts", type=int, default=20)
    parser.add_argument("--frames", type=int, default=50, help="still frames per burst")
    parser.add_argument("--one-thread", action="store_true", help="MKL, OpenMP and numba on one thread")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.case)
        return 0
    processes = []
    with contextlib.ExitStack() as worktrees:
        trees = [worktrees.enter_context(worktree(revision, prefix="softsim-still-")) for revision in args.revisions]
        try:
            measured = _alternate(args, trees, processes)
        finally:
            for process in processes:
                process.stdin.close()
                process.wait()
    wall, cpu = measured
    first = np.percentile(wall[0], 10)
    print(f"{args.case}: {args.bursts} alternating bursts of {args.frames} still frames per revision, ms per frame"
          f"{' (one thread)' if args.one_thread else ''}\n")
    print("| revision | wall min | wall p10 | wall median | CPU p10 | CPU median | wall p10 / first's |")
    print("|---|---|---|---|---|---|---|")
    for revision, w, c in zip(args.revisions, wall, cpu):
        print(f"| {revision} | {np.min(w):.3f} | {np.percentile(w, 10):.3f} | {np.median(w):.3f} | "
              f"{np.percentile(c, 10):.3f} | {np.median(c):.3f} | {np.percentile(w, 10) / first:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
