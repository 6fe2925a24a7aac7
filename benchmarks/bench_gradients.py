"""Cost of the sensitivities (issue 33): 3 outputs x 10 parameters on the shipped trunk, against a frame.

Protocol (one run, one process, so that the ratios compare like with like on a shared machine): the trunk
(resources/scenes/trunk.toml) with cableL0 at 5 mm and cableS1 at 3 mm, solved to equilibrium (10 frames).
Then, alternately, REPEATS times: a slider frame (cableL0 moved by 0.1 mm, one ``scene.step()``), and
``scene.gradients`` of tip.x, tip.y, tip.z with respect to youngModulus, poissonRatio and the eight cable values
at that frame. Reported: median wall times, their ratio (the issue asks for at most 0.2), the gradient's phases
(setup, tangent assembly, adjoint solve, parameter partials), whether the frame's factorization was reused, and
the machine's load average before and after (a shared machine's load changes the ratio: benchmarks/RESULTS.md).

Usage: python benchmarks/bench_gradients.py [--repeats N] [--json PATH]
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
from _common import ROOT  # noqa: E402

from softsim.mechanics import Scene  # noqa: E402
from softsim.mechanics.sensitivity import gradient_report  # noqa: E402

CABLES = [f"cable{kind}{i}" for kind in "LS" for i in range(4)]
OUTPUTS = ["tip.x", "tip.y", "tip.z"]
WRT = ["body.trunk.material.youngModulus", "body.trunk.material.poissonRatio",
       *[f"body.trunk.cable.{name}.value" for name in CABLES]]


def measure(repeats: int) -> dict:
    load_before = os.getloadavg()[0]
    scene = Scene.load(ROOT / "resources" / "scenes" / "trunk.toml")
    scene.set("body.trunk.cable.cableL0.value", 5.0)
    scene.set("body.trunk.cable.cableS1.value", 3.0)
    for _ in range(10):
        report = scene.step()
    assert report.converged, report.message
    frames, grads, phases, reused, refinements = [], [], [], [], []
    value = 5.0
    for i in range(repeats):
        value += 0.1 if i % 2 == 0 else -0.1
        scene.set("body.trunk.cable.cableL0.value", value)
        started = time.perf_counter()
        report = scene.step()
        frames.append(time.perf_counter() - started)
        assert report.converged, report.message
        started = time.perf_counter()
        result = gradient_report(scene, OUTPUTS, WRT)
        grads.append(time.perf_counter() - started)
        phases.append(result.times)
        reused.append(result.reused)
        refinements.append(result.refinements)
    frame, gradient = float(np.median(frames)), float(np.median(grads))
    return {"frame_ms": 1e3 * frame, "gradients_ms": 1e3 * gradient, "ratio": gradient / frame,
            "phases_ms": {k: 1e3 * float(np.median([p[k] for p in phases])) for k in phases[0]},
            "reused": f"{sum(reused)}/{len(reused)}", "refinements_median": float(np.median(refinements)),
            "outputs": len(OUTPUTS), "parameters": len(WRT), "repeats": repeats,
            "load_average": [load_before, os.getloadavg()[0]]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.repeats)
    print(f"trunk, {result['outputs']} outputs x {result['parameters']} parameters, {result['repeats']} repeats")
    print(f"slider frame     {result['frame_ms']:8.1f} ms (median)")
    print(f"gradients        {result['gradients_ms']:8.1f} ms (median)   ratio {result['ratio']:.3f}")
    print("phases (ms)      " + ", ".join(f"{k} {v:.1f}" for k, v in result["phases_ms"].items()))
    print(f"frame's factorization reused: {result['reused']}, refinement steps (median) "
          f"{result['refinements_median']:g}")
    print("load average (1 min) before / after: " + " / ".join(f"{v:.2f}" for v in result["load_average"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
