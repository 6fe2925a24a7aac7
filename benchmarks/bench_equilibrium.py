"""Equilibrium solver on real robots: the SoftRobots suite (issue 28, item 8) and the shipped scenes.

Protocol (static mode, from rest, through the public API): for each case of tests/data/softrobots/suite.py
(CASES: the SoftRobots examples; SHIPPED: resources/scenes finger, trunk, pneunet) the "jump" sets the actuator
to its target and solves one frame; the "ramp" sets each ramp value in turn, one frame per value; "typed" jumps
from value to value drawn at random, as a user typing values does (three runs from rest). Per run: frames,
converged frames, frames whose actuator reached its value (or the per-frame limit of the scene), frames whose
contact forces are flagged as not trustworthy, the
constrained-equilibrium Newton steps per frame (report.equilibrium.steps; median, max), its factorizations
(report.equilibrium.iterations; median, max), its load increments (report.equilibrium.increments where the
solver reports them, else "-"), and the wall time of scene.step() (median ms). Last, the shipped finger as
shipped doing successive single-frame jumps of its cable 10, 20, 30, 40, 5, 45, 0, 25 mm, one row per frame.

Slider ramps: the shipped finger (cable 0.5 mm per frame), trunk (cableL0 0.5 mm per frame) and pneunet (cavity
1 kPa per frame) as a user drags a slider: median ms and equilibrium steps per frame.

``--before REV`` measures the solver of git revision REV too, in the same run: a temporary worktree of REV is
made, and this script runs again in a subprocess with that worktree first on the import path (the scenes and
the suite stay this tree's); the table then shows before and after side by side.

Usage: python benchmarks/bench_equilibrium.py [--cases NAME ...] [--json PATH] [--write] [--solver TEXT]
       [--before REV]
       (--write: rewrite benchmarks/RESULTS_equilibrium.md; without it the table is only printed)
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import subprocess
import sys
from dataclasses import replace as dataclass_replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, markdown_table, stats_ms, write_json  # noqa: E402
from _worktree import measure_in, worktree  # noqa: E402

#: the source tree whose solver this process measures (--before: a worktree of an older revision); it must come
#: before the repository root that _common puts on the path
SOLVER_TREE = os.environ.get("SOFTSIM_BENCH_TREE")
if SOLVER_TREE:
    sys.path.insert(0, SOLVER_TREE)

SUITE_PATH = ROOT / "tests" / "data" / "softrobots" / "suite.py"


def load_suite():
    spec = importlib.util.spec_from_file_location("softrobots_suite", SUITE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["softrobots_suite"] = module
    spec.loader.exec_module(module)
    return module


def _spread(values) -> tuple[str, str]:
    known = [v for v in values if v is not None]
    if not known:
        return "-", "-"
    return f"{np.median(known):g}", f"{max(known)}"


def summarize(suite, case, mode: str, records) -> dict:
    steps = [r.steps for r in records]
    factorizations = [r.factorizations for r in records]
    increments = [r.increments for r in records]
    first_bad = next((r for r in records if not (r.converged and r.reached_target(case))), None)
    return {
        "case": case.name, "mode": mode, "frames": len(records),
        "converged": sum(r.converged for r in records),
        "reached": sum(r.reached_target(case) for r in records),
        "flagged": sum(not r.trustworthy for r in records),
        "steps": steps, "factorizations": factorizations, "increments": increments,
        "ms_median": stats_ms([r.seconds for r in records])["median"],
        "last_reached": records[-1].reached, "last_expected": records[-1].expected,
        "first_problem": "" if first_bad is None else f"value {first_bad.value:g}: {first_bad.message[:110]}",
    }


def jumps_case(suite) -> list[dict]:
    """The shipped finger as shipped: one frame per value, each from the last frame's state."""
    case = suite.BY_NAME["shipped_finger"]
    scene = suite.load(case)
    rows = []
    for value in suite.SHIPPED_FINGER_JUMPS:
        (record,) = suite.play(case, [value], scene=scene)
        rows.append({"value": value, "converged": record.converged, "reached": record.reached,
                     "steps": record.steps, "factorizations": record.factorizations,
                     "increments": record.increments, "ms": 1e3 * record.seconds, "message": record.message[:110]})
    return rows


#: slider ramps: (shipped case name, key, start, stop, step), one frame per value
SLIDER_RAMPS = (
    ("shipped_finger", "body.finger.cable.cable.value", 0.5, 20.0, 0.5),
    ("shipped_trunk", "body.trunk.cable.cableL0.value", 0.5, 15.0, 0.5),
    ("shipped_pneunet", "body.pneunet.cavity.cavity.value", 1.0, 30.0, 1.0),
)


def slider_ramps(suite) -> list[dict]:
    """Each slider ramp from rest: frames, converged, median steps and ms per frame (the first frame left out:
    it is the jump from rest)."""
    rows = []
    for name, key, start, stop, step in SLIDER_RAMPS:
        case = suite.BY_NAME[name]
        values = list(np.arange(start, stop + 0.5 * step, step))
        records = suite.play(dataclass_replace(case, key=key), values)
        later = records[1:]
        steps = [r.steps for r in later if r.steps is not None]
        factorizations = [r.factorizations for r in later if r.factorizations is not None]
        rows.append({"case": name, "key": key, "step": step, "frames": len(records),
                     "converged": sum(r.converged for r in records),
                     "steps_median": float(np.median(steps)) if steps else None,
                     "factorizations_median": float(np.median(factorizations)) if factorizations else None,
                     "ms_median": stats_ms([r.seconds for r in later])["median"]})
    return rows


def _measure_before(revision: str, args) -> dict:
    """This benchmark's measurements on the solver of ``revision`` (a temporary git worktree first on the
    import path of a subprocess running this script)."""
    options = ["--cases", *args.cases] if args.cases else []
    with worktree(revision) as tree:
        return measure_in(tree, __file__, "--json", *options)


def _commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "mechanics"],
                               capture_output=True, text=True, check=False).stdout.strip()
        return head + (" + uncommitted changes under mechanics/" if dirty else "") if head else "unknown"
    except OSError:
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", help="case names (default: every suite and shipped case)")
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--write", action="store_true", help="rewrite benchmarks/RESULTS_equilibrium.md")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_equilibrium.md")))
    parser.add_argument("--solver", help="how to name the solver measured in the results (default: the git commit)")
    parser.add_argument("--before", help="a git revision whose solver is measured too, in the same run")
    parser.add_argument("--sliders-only", action="store_true",
                        help="measure only the slider ramps (a few minutes; prints, never rewrites the results)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --sliders-only and --before: alternating rounds of both solvers (default 3)")
    args = parser.parse_args(argv)
    if args.sliders_only:
        return _sliders_only(args)
    before = _measure_before(args.before, args) if args.before else None
    suite = load_suite()
    cases = [suite.BY_NAME[name] for name in args.cases] if args.cases else list(suite.CASES + suite.SHIPPED)
    results = []
    for case in cases:
        for mode in suite.MODES:
            try:
                results.append(summarize(suite, case, mode, suite.run(case, mode)))
            except Exception as error:  # noqa: BLE001 - a broken case is reported in the table, not fatal
                logging.getLogger("bench_equilibrium").warning("%s %s: %s", case.name, mode, error)
                results.append({"case": case.name, "mode": mode, "error": str(error)})
            print(case.name, mode, "done", flush=True)
    jumps = jumps_case(suite) if not args.cases or "shipped_finger" in args.cases else []
    sliders = slider_ramps(suite) if not args.cases else []

    header = ["case", "frames", "converged", "reached", "flagged", "eq. steps median", "eq. steps max",
              "factorizations median", "factorizations max", "increments", "ms/frame median", "last value",
              "first problem"]
    rows = []
    for r in results:
        if "error" in r:
            rows.append([f"{r['case']} {r['mode']}"] + ["-"] * (len(header) - 2) + [f"error: {r['error'][:80]}"])
            continue
        steps = _spread(r["steps"])
        factorizations = _spread(r["factorizations"])
        increments = "-" if all(v is None for v in r["increments"]) else "/".join(_spread(r["increments"]))
        rows.append([f"{r['case']} {r['mode']}", r["frames"], r["converged"], r["reached"], r.get("flagged", "-"),
                     *steps,
                     *factorizations, increments, f"{r['ms_median']:.0f}",
                     f"{r['last_reached']:.4g} of {r['last_expected']:g}", r["first_problem"]])
    if before is not None:
        header, rows = _compare(header, rows, results, before["cases"])
    table = markdown_table(header, rows)
    slider_header = ["slider ramp", "frames", "converged", "eq. steps median", "ms/frame median"]
    slider_rows = [[f"{s['case']} ({s['key'].split('.')[-2]} +{s['step']:g} per frame)", s["frames"],
                    s["converged"], "-" if s["steps_median"] is None else f"{s['steps_median']:g}",
                    f"{s['ms_median']:.1f}"] for s in sliders]
    if before is not None and before.get("sliders"):
        old = {s["case"]: s for s in before["sliders"]}
        slider_header = ["slider ramp", "frames", "converged before", "converged", "eq. steps median before",
                         "eq. steps median", "ms/frame median before", "ms/frame median"]
        slider_rows = [[row[0], row[1], old[s["case"]]["converged"], row[2],
                        "-" if old[s["case"]]["steps_median"] is None else f"{old[s['case']]['steps_median']:g}",
                        row[3], f"{old[s['case']]['ms_median']:.1f}", row[4]] for row, s in zip(slider_rows, sliders)]
    slider_table = markdown_table(slider_header, slider_rows) if sliders else ""
    jump_header = ["cable value (mm)", "converged", "reached", "eq. steps", "factorizations", "increments", "ms",
                   "message"]
    jump_rows = [[f"{j['value']:g}", "yes" if j["converged"] else "no", f"{j['reached']:.4f}",
                  "-" if j["steps"] is None else j["steps"],
                  "-" if j["factorizations"] is None else j["factorizations"],
                  "-" if j["increments"] is None else j["increments"], f"{j['ms']:.0f}", j["message"]]
                 for j in jumps]
    if before is not None and before.get("shipped_finger_jumps"):
        jump_header = ["cable value (mm)", "before: converged", "before: reached", "before: steps", "converged",
                       "reached", "eq. steps", "factorizations", "increments", "ms", "message"]
        jump_rows = [[row[0], "yes" if old["converged"] else "no", f"{old['reached']:.4f}",
                      "-" if old["steps"] is None else old["steps"], *row[1:]]
                     for row, old in zip(jump_rows, before["shipped_finger_jumps"])]
    jump_table = markdown_table(jump_header, jump_rows) if jumps else ""
    print(table)
    if slider_table:
        print("\nslider ramps:\n" + slider_table)
    if jump_table:
        print("\nshipped finger, successive single-frame jumps:\n" + jump_table)
    if args.write:
        solver = args.solver or "commit " + _commit()
        if args.before:
            solver = f"before: {args.before}; after: {solver}; measured in one run"
        text = ("## Equilibrium solver on real robots (`benchmarks/bench_equilibrium.py`)\n\n"
                f"Solver: {solver}. Static mode, from rest. Cases: tests/data/softrobots/suite.py (the "
                "SoftRobots examples' own meshes and numbers; `shipped_*`: resources/scenes). 'jump': the target "
                "in one frame; 'ramp': one frame per ramp value. 'converged': frames whose report.converged is "
                "true; 'reached': frames whose actuator reads the value set (or the scene's per-frame limit) "
                "within 1e-4 of the target; 'typed': successive single-frame jumps to values drawn at random "
                "(suite.typed_values), one run from rest per seed; 'flagged': frames whose message says their "
                "contact forces are not trustworthy; eq. steps / factorizations: report.equilibrium.steps / "
                ".iterations per frame; increments: report.equilibrium.increments ('-': not reported); ms: wall "
                "time of scene.step(). 'last value': the actuator after the last frame, of the value expected.\n\n"
                + table + "\n")
        if slider_table:
            text += ("\n### Slider ramps\n\nFrom rest, one frame per value; the first frame (the jump from rest) "
                     "is left out of the medians.\n\n" + slider_table + "\n")
        if jump_table:
            text += ("\n### The shipped finger as shipped, successive single-frame jumps\n\n"
                     "resources/scenes/finger.toml, one frame per value, each from the previous frame's state.\n\n"
                     + jump_table + "\n")
        Path(args.output).write_text(text)
    import softsim.mechanics

    write_json(args.json, {"cases": results, "shipped_finger_jumps": jumps, "sliders": sliders,
                           "solver_path": str(Path(softsim.mechanics.__file__).resolve())})
    return 0


def _sliders_only(args) -> int:
    """The slider ramps alone, as one table. With ``--before``: ``--rounds`` alternating runs of that revision's
    solver and this one's, each in its own process, and per ramp the best (lowest) median of its rounds, so that
    a load that comes and goes on a shared machine weighs on both alike."""
    if not args.before:
        sliders, old = slider_ramps(load_suite()), {}
    else:
        rounds: dict[str, list] = {"before": [], "after": []}
        with worktree(args.before) as tree:
            for _ in range(max(1, args.rounds)):
                rounds["before"].append(measure_in(tree, __file__, "--json", "--sliders-only")["sliders"])
                rounds["after"].append(measure_in(None, __file__, "--json", "--sliders-only")["sliders"])
        sliders, before = (_best_of(rounds[which]) for which in ("after", "before"))
        old = {s["case"]: s for s in before}

    def number(value, digits="g"):
        return "-" if value is None else format(value, digits)

    header = ["slider ramp", "frames", "converged", "eq. steps median", "factorizations median", "ms/frame median"]
    if old:
        header = ["slider ramp", "frames", "converged before", "converged", "eq. steps median before",
                  "eq. steps median", "factorizations median before", "factorizations median",
                  "ms/frame median before", "ms/frame median", "ms ratio after / before"]
    rows = []
    for s in sliders:
        name = f"{s['case']} ({s['key'].split('.')[-2]} +{s['step']:g} per frame)"
        o = old.get(s["case"])
        if o is None:
            rows.append([name, s["frames"], s["converged"], number(s["steps_median"]),
                         number(s.get("factorizations_median")), f"{s['ms_median']:.1f}"])
        else:
            rows.append([name, s["frames"], o["converged"], s["converged"], number(o["steps_median"]),
                         number(s["steps_median"]), number(o.get("factorizations_median")),
                         number(s.get("factorizations_median")), f"{o['ms_median']:.1f}", f"{s['ms_median']:.1f}",
                         f"{s['ms_median'] / o['ms_median']:.2f}"])
    print(markdown_table(header, rows))
    import softsim.mechanics

    write_json(args.json, {"cases": [], "shipped_finger_jumps": [], "sliders": sliders,
                           "solver_path": str(Path(softsim.mechanics.__file__).resolve())})
    return 0


def _best_of(rounds: list[list[dict]]) -> list[dict]:
    """Per slider ramp, the round with the lowest median frame time."""
    return [min(ramps, key=lambda ramp: ramp["ms_median"]) for ramps in zip(*rounds)]


def _compare(header: list, rows: list, results: list[dict], before: list[dict]) -> tuple[list, list]:
    """The table with the before solver's converged frames, median steps and median ms beside each row."""
    old = {(r["case"], r["mode"]): r for r in before}
    new_header = [header[0], header[1], "converged before", "converged", "reached before", "reached",
                  "flagged before", "flagged", "eq. steps median before", "eq. steps median", "factorizations median",
                  "increments", "ms/frame median before", "ms/frame median", "last value", "first problem"]
    new_rows = []
    for row, r in zip(rows, results):
        o = old.get((r["case"], r["mode"]))
        if "error" in r:
            new_rows.append(row[:2] + ["-"] * (len(new_header) - 3) + [row[-1]])
            continue
        if o is None or "error" in o:  # the older solver cannot run this case (e.g. a key it does not know)
            o = {"converged": "-", "reached": "-", "steps": [], "ms_median": None}
        ms_before = "-" if o["ms_median"] is None else f"{o['ms_median']:.0f}"
        new_rows.append([row[0], row[1], o["converged"], row[2], o["reached"], row[3], o.get("flagged", "-"),
                         row[4], _spread(o["steps"])[0], row[5], row[7], row[9], ms_before, row[10], row[11],
                         row[12]])
    return new_header, new_rows


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    raise SystemExit(main())
