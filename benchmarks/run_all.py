"""Run every benchmark and rewrite benchmarks/RESULTS.md (``make bench``).

Each script runs in its own process (clean peak-memory figures, no shared warm caches) and writes its own
RESULTS_<name>.md; this script adds the machine, the date, the versions, the issue-8 targets as PASS/FAIL
and the record of what each optimisation gained (benchmarks/GAINS.md, kept by hand), and concatenates
everything into RESULTS.md.

Usage: python benchmarks/run_all.py [--quick]   (--quick: fewer frames/iterations and no 130k or 500k meshes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ROOT, cpu_model, markdown_table, total_ram_gb, versions  # noqa: E402


def run(script: str, arguments: list[str], *, display: bool = False) -> float:
    """Run one benchmark script from the repository root; returns its wall time in seconds."""
    command = [sys.executable, str(HERE / script), *arguments]
    if display and not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        command = ["xvfb-run", "-a", *command]
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    print(f"== {script} {' '.join(arguments)}", flush=True)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, env=environment, check=False)
    if completed.returncode != 0:
        print(f"!! {script} exited with {completed.returncode}", flush=True)
    return time.perf_counter() - started


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def targets(scenes, scaling, render, gui=None, inverse=None, asynchronous=None) -> str:
    """The issue-8 targets and issue 17's responsiveness targets as rows (target, measured, PASS/FAIL)."""
    rows = []

    def add(name, value, limit, unit="ms", note=""):
        if value is None:
            rows.append([name, "not measured", f"<= {limit} {unit}", "-", note])
        else:
            rows.append([name, f"{value:.2f} {unit}", f"<= {limit} {unit}", "PASS" if value <= limit else "FAIL",
                         note])

    by_name = {r["name"]: r for r in scenes or [] if "error" not in r}
    for name, label, limit in (("finger", "finger (one cable), median frame", 5.0),
                               ("trunk", "trunk (8 cables), median frame", 15.0),
                               ("cavity_contacts_10k", "10k tets + cavity + 100 contacts (friction)", 60.0),
                               ("cavity_contacts_10k_frictionless",
                                "10k tets + cavity + 100 contacts (frictionless)", 60.0)):
        r = by_name.get(name)
        if r is None:
            add(label, None, limit)
            continue
        worst = max(r["still"]["median"], r["ramp"]["median"])
        add(label, worst, limit, note=f"{r['tets']} tets; worse of still/ramp; p90 ramp {r['ramp']['p90']:.2f} ms")
    stvk36 = [r for r in scaling or [] if r["model"] == "stvk" and r["size"] == "36k"]
    add("StVK Newton iteration at 36k tets", stvk36[0]["iteration_ms"] if stvk36 else None, 174.0)
    for r in scaling or []:
        bare = min(r["bare_factor_ms"], r["hot_factor_ms"])
        add(f"Newton it. / bare factorization, {r['model']} {r['tets']} tets", r["iteration_ms"] / bare, 1.5,
            unit="x", note=f"{r['iteration_ms']:.1f} ms vs {bare:.1f} ms")
    if render:
        plain = render.get("snapshot_no_stress")
        add("surface update of a 10k-tet body", render["update"]["median"], 10.0,
            note=(f"+ Simulation.snapshot {plain['median']:.2f} ms without stress field, " if plain else "+ ")
            + f"{render['snapshot']['median']:.1f} ms with von Mises (the GUI's per-frame fields)")
    else:
        add("surface update of a 10k-tet body", None, 10.0)
    for r in (gui or {}).get("gui", []):
        dragging = r["dragging"]
        note = (f"{r['solved_fps']:.1f} solved (solver alone {r['alone_fps']:.1f}) / {r['drawn_fps']:.1f} drawn "
                f"frames/s; slider dragged at 25 Hz")
        add(f"GUI probe gap while {r['scene']}'s slider is dragged, p95", dragging["p95"], 30.0, note=note)
        add(f"GUI probe gap while {r['scene']}'s slider is dragged, max", dragging["max"], 100.0)
    if inverse:
        moving = inverse["frames"]["inverse, goal on a 10 mm circle"]
        add("inverse trunk: one QP (8 cables, one effector)", inverse["qp_per_solve_ms"], 1.0,
            note=f"a moving goal: {moving['qps_mean']:.1f} QPs, {moving['qp_median']:.2f} ms per frame of "
                 f"{moving['median']:.1f} ms (issue 18)")
    by_size = {r["size"]: r for r in asynchronous or []}
    if "130k" in by_size:
        r = by_size["130k"]
        frame = r["async"]["frame"]
        add("130k tets, cable ramp, async preconditioner, median frame", frame["median"], 150.0,
            note=f"p90 {frame['p90']:.0f}, max {frame['max']:.0f}; direct {r['direct']['frame']['median']:.0f} ms "
                 "(issue 20)")
    if "36k" in by_size:
        r = by_size["36k"]
        add("36k tets, cable ramp, async frame / bare factorization", r["async"]["frame"]["median"] / r["bare_ms"],
            0.5, unit="x", note=f"{r['async']['frame']['median']:.0f} ms vs {r['bare_ms']:.0f} ms; direct "
                                f"{r['direct']['frame']['median'] / r['bare_ms']:.2f} x (issue 20)")
    return markdown_table(["target", "measured", "limit", "result", "note"], rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    quick = ["--quick"] if args.quick else []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wall = {}
        wall["scenes"] = run("bench_scenes.py", [*quick, "--json", str(tmp / "scenes.json")])
        sizes = ["--sizes", "1k", "10k", "36k"] if args.quick else []
        wall["scaling"] = run("bench_scaling.py", [*quick, *sizes, "--json", str(tmp / "scaling.json")])
        wall["render"] = run("bench_render.py", [*quick, "--json", str(tmp / "render.json")], display=True)
        wall["assembly"] = run("bench_assembly.py", ["--sizes", "1k,10k,36k" if args.quick else "1k,10k,36k,130k",
                                                     "--repeat", "3"])
        wall["constraints"] = run("bench_constraint_solvers.py", ["--sizes", "10", "100"] if args.quick else [])
        wall["meshes"] = run("bench_mesh_load.py", ["--repeat", "1" if args.quick else "2"])
        wall["gui"] = run("bench_gui.py", [*quick, "--json", str(tmp / "gui.json")])  # starts its own Xvfb
        wall["sweep"] = run("bench_sweep.py", [*quick])
        wall["inverse"] = run("bench_inverse.py", [*quick, "--json", str(tmp / "inverse.json")])
        wall["contact"] = run("bench_contact.py", [*quick, "--json", str(tmp / "contact.json")])
        # the real-robot suite with the solver of the round's start beside it (issue 28)
        wall["equilibrium"] = run("bench_equilibrium.py", ["--write", "--before", "04522c5"])
        wall["async"] = run("bench_async.py", (["--sizes", "1k", "10k", "36k", "--frames", "3"] if args.quick else [])
                            + ["--json", str(tmp / "async.json")])
        scenes, scaling, render, gui, inverse, asynchronous = (
            _load(tmp / f"{n}.json") for n in ("scenes", "scaling", "render", "gui", "inverse", "async"))

    info = versions()
    header = [
        "# softsim benchmark results",
        "",
        "Rewritten by `make bench` (`benchmarks/run_all.py`"
        + (" --quick" if args.quick else "") + "); every script also runs alone.",
        "",
        f"- Date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}",
        f"- Machine: {cpu_model()}, {os.cpu_count()} logical cores, {total_ram_gb():.1f} GB RAM "
        "(shared with other jobs while measured: expect noise of tens of percent)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in info.items()),
        f"- Total benchmark wall time: {time.perf_counter() - started:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in wall.items())})",
        "",
        "## Targets (issue 8: static mode, solver converged, median frame; issue 17: the window while playing)",
        "",
        targets(scenes, scaling, render, gui, inverse, asynchronous),
        "",
    ]
    sections = []
    for name in ("RESULTS_equilibrium.md",
                 "RESULTS_scenes.md", "RESULTS_scaling.md", "RESULTS_render.md", "RESULTS_gui.md", "RESULTS_sweep.md",
                 "RESULTS_inverse.md", "RESULTS_contact.md", "RESULTS_async.md", "RESULTS_newton_krylov.md",
                 "RESULTS_assembly.md", "RESULTS_constraints.md", "RESULTS_meshes.md", "GAINS.md"):
        path = HERE / name
        if path.exists():
            text = path.read_text().strip()
            if text.startswith("# "):  # demote the scripts' own titles under this page's
                text = "#" + text
            sections.append(text + "\n")
    (HERE / "RESULTS.md").write_text("\n".join(header) + "\n" + "\n".join(sections))
    print(f"written {HERE / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
