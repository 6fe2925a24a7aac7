"""softsim sweep on this machine: 40 finger samples of 20 frames on a local cluster of 2 worker processes
against the same 40 runs one by one in one process, and the engine's per-sample overhead.

Samples: youngModulus in {400, 500, 600, 800} x cable value 0..9 mm (10 values). The one-by-one time is
``run_sample`` called 40 times in this process (the scene loaded for each sample, as a worker does). The
engine's overhead per sample is (wall time x workers - the samples' own wall_s) / samples: the cluster's
start, the scatter of the scene, the scheduling and the result transfer, spread over the samples.
Target (issue 21): the 2-worker sweep takes at most 0.6x the one-by-one time.

Usage: python benchmarks/bench_sweep.py [--quick] [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, markdown_table, write_json  # noqa: E402

SCENE = ROOT / "resources" / "scenes" / "finger.toml"
TARGET_RATIO = 0.6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 samples of 10 frames")
    parser.add_argument("--json")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_sweep.md")))
    args = parser.parse_args(argv)
    from softsim.app.sweep import sweep
    from softsim.app.sweep.bundle import bundle_scene
    from softsim.app.sweep.engine import plan_sweep
    from softsim.app.sweep.task import limit_threads, run_sample

    cables = "0:9:5" if args.quick else "0:9:10"
    frames = 10 if args.quick else 20
    vary = {"body.finger.material.youngModulus": "400,500,600,800", "body.finger.cable.cable.value": cables}
    spec, plan, sets = plan_sweep(SCENE, vary)
    bundle = bundle_scene(spec)
    limit_threads(1)  # as each of the 2 workers on 2 cores
    run_sample(bundle, sets, plan[0], 1)  # numba's compilation and caches, outside the timing
    started = time.perf_counter()
    serial_rows = [run_sample(bundle, sets, sample, frames) for sample in plan]
    serial = time.perf_counter() - started
    measured = []
    started = time.perf_counter()
    results = sweep(SCENE, vary, frames, workers=2)  # starts and stops its own cluster
    measured.append(("local cluster started by the sweep", time.perf_counter() - started, results))
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        sweep(SCENE, vary, 1, client=client)  # the workers' imports and caches: a cluster that has run before
        started = time.perf_counter()
        results = sweep(SCENE, vary, frames, client=client)
        measured.append(("running cluster (a notebook's Client)", time.perf_counter() - started, results))
    rows, report = [], []
    for label, parallel, results in measured:
        own = float(results["wall_s"].sum())
        overhead = (parallel * 2 - own) / len(plan)
        ratio = parallel / serial
        same = all(abs(a["tip.y"] - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(serial_rows, results["tip.y"]))
        rows.append([label, len(plan), frames, f"{serial:.2f}", f"{parallel:.2f}", f"{ratio:.2f}",
                     f"{1e3 * serial / len(plan):.0f}", f"{1e3 * overhead:.0f}", "yes" if same else "NO",
                     "PASS" if ratio <= TARGET_RATIO else "FAIL"])
        report.append({"case": label, "sweep_s": parallel, "ratio": ratio, "overhead_ms": 1e3 * overhead,
                       "same": same})
    table = markdown_table(["cluster", "samples", "frames each", "one by one [s]", "sweep, 2 workers [s]",
                            "ratio", "one sample [ms]", "engine overhead per sample [ms]", "same outputs",
                            f"ratio <= {TARGET_RATIO}"], rows)
    text = ("## Parameter sweeps (`benchmarks/bench_sweep.py`)\n\n"
            "The finger, youngModulus x cable value; the sweep's time includes starting the local cluster of 2 "
            "worker processes and the scatter of the scene. The engine overhead per sample is (wall time x "
            "workers - the samples' own time) / samples.\n\n" + table + "\n")
    print(text)
    Path(args.output).write_text(text)
    if args.json:
        write_json(args.json, {"samples": len(plan), "frames": frames, "serial_s": serial, "cases": report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
