"""``make bench --quick`` of two revisions side by side, in one session, as ratios.

Each revision is checked out in a temporary git worktree, and each benchmark script runs from its own tree
(that tree's script, that tree's package first on the import path, its RESULTS files written into the
worktree, not this checkout). The scripts run in alternating order (before, after; then after, before; ...)
so that the load of a shared machine falls on both. Reported per script: the wall time of the whole script
(imports, scene loading and the numba cache included) and every median of the script's ``--json`` output
that both revisions report, each as the best of the rounds, and their ratio after / before (< 1: faster).
The first round also fills each worktree's numba cache: use 2 rounds or more.

``bench_equilibrium`` has its own ``--before`` (run_all runs it against the round's start) and is left out.

Usage: python benchmarks/compare_revisions.py --before REV [--after REV] [--rounds 2] [--scripts NAME ...]
       [--output PATH]
"""

from __future__ import annotations

import argparse
import contextlib
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

from _common import START_ENVIRONMENT, markdown_table  # noqa: E402
from _worktree import worktree  # noqa: E402

#: run_all.py --quick's scripts and arguments ("{json}": where the script writes its measurements)
QUICK = {
    "scenes": ("bench_scenes.py", ["--quick", "--json", "{json}"]),
    "scaling": ("bench_scaling.py", ["--quick", "--sizes", "1k", "10k", "36k", "--json", "{json}"]),
    "render": ("bench_render.py", ["--quick", "--json", "{json}"]),
    "assembly": ("bench_assembly.py", ["--sizes", "1k,10k,36k", "--repeat", "3"]),
    "constraints": ("bench_constraint_solvers.py", ["--sizes", "10", "100"]),
    "meshes": ("bench_mesh_load.py", ["--repeat", "1"]),
    "gui": ("bench_gui.py", ["--quick", "--json", "{json}"]),
    "sweep": ("bench_sweep.py", ["--quick", "--json", "{json}"]),
    "inverse": ("bench_inverse.py", ["--quick", "--json", "{json}"]),
    "contact": ("bench_contact.py", ["--quick", "--json", "{json}"]),
    "async": ("bench_async.py", ["--sizes", "1k", "10k", "36k", "--frames", "3", "--json", "{json}"]),
}
#: scripts that need a display (bench_gui starts its own Xvfb)
DISPLAY = {"render"}


def medians(value, path: str = "") -> dict[str, float]:
    """Every number under a key named ``median`` in a benchmark's JSON, by its path (list items are named by
    their ``name``, ``scene``, ``case``, ``model`` and ``size`` fields when they have them)."""
    found = {}
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if key == "median" and isinstance(item, (int, float)):
                found[path or key] = float(item)
            else:
                found.update(medians(item, child))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            label = str(index)
            if isinstance(item, dict):
                named = [str(item[k]) for k in ("name", "scene", "case", "model", "size") if k in item]
                label = "/".join(named) or label
            found.update(medians(item, f"{path}[{label}]"))
    return found


def checked(folder: Path) -> Path:
    """``folder``, a worktree, once it is checked that its package is the one a script run there imports."""
    probe = subprocess.run([sys.executable, "-c", "import softsim.mechanics; print(softsim.mechanics.__file__)"],
                           cwd=folder, env=dict(START_ENVIRONMENT, PYTHONPATH=str(folder)), capture_output=True,
                           text=True, check=True).stdout.strip()
    if not probe.startswith(str(folder)):
        raise RuntimeError(f"a script in {folder} imports softsim from {probe}, not from its worktree")
    return folder


def run_script(tree: Path, name: str, scratch: Path) -> dict:
    """One run of benchmark ``name`` from ``tree``: wall time (s) and the medians of its JSON output."""
    script, arguments = QUICK[name]
    output = scratch / f"{name}.json"
    output.unlink(missing_ok=True)
    command = [sys.executable, str(tree / "benchmarks" / script),
               *[str(output) if a == "{json}" else a for a in arguments]]
    if name in DISPLAY and not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        command = ["xvfb-run", "-a", *command]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=tree, env=dict(START_ENVIRONMENT, PYTHONPATH=str(tree)), check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1:] or [f"exit {completed.returncode}"]}
    try:
        measured = medians(json.loads(output.read_text()))
    except (OSError, ValueError):
        measured = {}
    return {"wall": wall, "medians": measured}


def compare(runs: dict[tuple[str, str], list[dict]]) -> list[list[str]]:
    """Rows (script, measurement, best before, best after, ratio) from each side's runs of every script."""
    rows = []
    for name in QUICK:
        before, after = runs.get(("before", name), []), runs.get(("after", name), [])
        failed = [r["error"] for r in before + after if "error" in r]
        if failed:
            rows.append([name, "did not run", "-", "-", "; ".join(" ".join(e) for e in failed)[:120]])
            continue
        if not before or not after:
            continue
        pairs = [("wall time of the script (s)", min(r["wall"] for r in before), min(r["wall"] for r in after))]
        keys = sorted(set.intersection(*(set(r["medians"]) for r in before + after)))
        pairs += [(f"{key} median", min(r["medians"][key] for r in before), min(r["medians"][key] for r in after))
                  for key in keys]
        for label, old, new in pairs:
            ratio = f"{new / old:.2f}" if old > 0 else "-"
            rows.append([name, label, f"{old:.3g}", f"{new:.3g}", ratio])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the older git revision")
    parser.add_argument("--after", default="HEAD", help="the newer git revision (default HEAD, committed code)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of every script per revision (best is kept)")
    parser.add_argument("--scripts", nargs="+", choices=sorted(QUICK), default=list(QUICK))
    parser.add_argument("--output", help="write the table (markdown) here as well")
    args = parser.parse_args(argv)
    runs: dict = {}
    with contextlib.ExitStack() as stack:
        trees = {side: checked(stack.enter_context(worktree(revision, prefix="softsim-compare-")))
                 for side, revision in (("before", args.before), ("after", args.after))}
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="softsim-compare-")))
        for round_ in range(args.rounds):
            for name in args.scripts:
                for side in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                    print(f"== round {round_ + 1}: {name} ({side})", flush=True)
                    runs.setdefault((side, name), []).append(run_script(trees[side], name, scratch))
                if args.output:  # what is measured so far, in case the run is cut short
                    Path(args.output).write_text(f"(round {round_ + 1} of {args.rounds})\n" + table(args, runs))
    print(table(args, runs))
    if args.output:
        Path(args.output).write_text(table(args, runs))
    return 0


def table(args, runs: dict) -> str:
    return markdown_table(["benchmark", "measurement", f"before ({args.before})", f"after ({args.after})",
                           "after / before"], compare(runs)) + "\n"


if __name__ == "__main__":
    sys.exit(main())
