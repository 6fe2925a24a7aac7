"""The inverse model while a user drags the goal: trunk_inverse's frames, linearisations and factorizations.

Protocol (issue 28, "trunk_inverse with a dragged goal: median <= 30 ms per frame"): the shipped
``trunk_inverse`` scene; the goal is put at (0, 30, 185) mm and 40 frames settle there (not measured). Then the
goal is dragged, one frame per mouse position, along two paths a user's drag follows:

- ``circle``: a 10 mm circle through the settled goal in 48 frames (1.3 mm per frame, as bench_inverse.py);
- ``line``: a straight drag of 12 mm away from the circle's end at 0.5 mm per frame (24 frames).

Per path: frames, converged frames, linearisations per frame (the inverse report's QPs: median, max),
factorizations per frame of the inverse frame's constrained tangent and of the free configuration's Newton
(median, max), forward frames of the robust path (total), and the wall time of ``scene.step()`` (median, p90 ms),
and the tip's final distance to the goal (the answer: unchanged by a change of speed).

Linearisations and factorizations are deterministic; the times are not (the machine is shared): compare them
only within one run. ``--before REV`` measures git revision REV too, in the same run: a temporary worktree of REV
first on the import path of a subprocess (the scene stays this tree's); ``--rounds N`` alternates the two N times
and keeps each frame's fastest time.

Usage: python benchmarks/bench_inverse_drag.py [--before REV] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, markdown_table, write_json  # noqa: E402
from _worktree import measure_in, worktree  # noqa: E402

SCENE = ROOT / "resources" / "scenes" / "trunk_inverse.toml"
GOAL_KEY = "body.trunk.effector.tip.effectorGoal"
CENTRE = np.array([0.0, 30.0, 185.0])
TARGET_MS = 30.0


def goal_paths() -> dict[str, list[np.ndarray]]:
    """The goals of each path (mm), one per frame."""
    circle = [CENTRE + 10.0 * np.array([np.sin(a), 1.0 - np.cos(a), 0.0])
              for a in 2.0 * np.pi * np.arange(1, 49) / 48]
    direction = np.array([1.0, 1.0, -0.5]) / np.linalg.norm([1.0, 1.0, -0.5])
    line = [circle[-1] + 0.5 * k * direction for k in range(1, 25)]
    return {"circle": circle, "line": line}


def _factorizations(scene) -> int:
    """Factorizations so far of the inverse frame's constrained tangent and of the free configuration's Newton."""
    simulation = scene.simulation
    total = 0
    tangent = getattr(simulation, "_constrained_tangent", None)
    solver = getattr(tangent, "current_solver", None)
    for linear in (solver, getattr(simulation.newton, "linear_solver", None)):
        if linear is not None:
            total += int(linear.stats.get("factorizations", 0))
    return total


def measure() -> dict:
    """Every path's frames, in this process (the solver found first on the import path)."""
    import softsim.mechanics
    from softsim.mechanics.scene_runtime import Scene

    scene = Scene.load(SCENE)
    scene.set(GOAL_KEY, [CENTRE.tolist()])
    for _ in range(40):
        scene.step()
    paths = {}
    for name, goals in goal_paths().items():
        frames = []
        for goal in goals:
            scene.set(GOAL_KEY, [goal.tolist()])
            before = _factorizations(scene)
            report = scene.step()
            inverse = report.inverse
            frames.append({"converged": bool(report.converged), "ms": 1e3 * report.wall_time,
                           "linearizations": int(inverse.linearizations), "forward_frames": int(inverse.forward_frames),
                           "factorizations": _factorizations(scene) - before,
                           "fallback": bool(getattr(inverse, "sqp_fallback", False))})
        paths[name] = {"frames": frames, "distance": float(scene.outputs()["tip.distance"])}
    return {"solver_path": str(Path(softsim.mechanics.__file__).resolve()), "paths": paths}


def _fastest(rounds: list[dict]) -> dict:
    """The first round's counts with each frame's fastest time over the rounds."""
    result = json.loads(json.dumps(rounds[0]))
    for name, path in result["paths"].items():
        for k, frame in enumerate(path["frames"]):
            frame["ms"] = min(r["paths"][name]["frames"][k]["ms"] for r in rounds)
    return result


def summary_rows(label: str, measured: dict) -> list[list]:
    rows = []
    for name, path in measured["paths"].items():
        frames = path["frames"]
        lin = [f["linearizations"] for f in frames]
        fac = [f["factorizations"] for f in frames]
        ms = np.array([f["ms"] for f in frames])
        rows.append([label, name, len(frames), sum(f["converged"] for f in frames),
                     f"{np.median(lin):g} / {max(lin)}", f"{np.median(fac):g} / {max(fac)}",
                     sum(f["forward_frames"] for f in frames), f"{np.median(ms):.1f}",
                     f"{np.percentile(ms, 90):.1f}", f"{path['distance']:.4f}"])
    return rows


HEADER = ["solver", "path", "frames", "converged", "linearisations median / max", "factorizations median / max",
          "forward frames", "ms median", "ms p90", "final tip distance (mm)"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision measured too, in the same run")
    parser.add_argument("--rounds", type=int, default=1, help="alternate before and after this many times")
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: measure in this process, write JSON
    args = parser.parse_args(argv)
    if args.measure:
        Path(args.measure).write_text(json.dumps(measure()))
        return 0
    after_rounds, before_rounds = [], []
    with (worktree(args.before) if args.before else contextlib.nullcontext()) as tree:
        for _ in range(max(1, args.rounds)):
            if tree is not None:
                before_rounds.append(measure_in(tree, __file__, "--measure"))
            after_rounds.append(measure_in(None, __file__, "--measure"))
    rows = []
    results = {"after": _fastest(after_rounds)}
    if before_rounds:
        results["before"] = _fastest(before_rounds)
        rows += summary_rows(f"before ({args.before})", results["before"])
    rows += summary_rows("this tree", results["after"])
    print(markdown_table(HEADER, rows))
    if before_rounds:
        for name in results["after"]["paths"]:
            before = np.median([f["ms"] for f in results["before"]["paths"][name]["frames"]])
            after = np.median([f["ms"] for f in results["after"]["paths"][name]["frames"]])
            print(f"{name}: median ms after / before = {after / before:.2f}")
    for name, path in results["after"]["paths"].items():
        median = np.median([f["ms"] for f in path["frames"]])
        print(f"{name}: target median <= {TARGET_MS:g} ms: {'PASS' if median <= TARGET_MS else 'FAIL'} "
              f"({median:.1f} ms on this machine now)")
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
