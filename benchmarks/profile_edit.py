"""What one actuator edit costs on the GUI thread (issue 30): the window's synchronous work between the slider's
value and the edit on its way to the simulation process (the session's validation, the undo record, every panel
that follows ``parameter_changed``).

The real main window (1280x800) opens a shipped scene, paused. Each edit is what the Actuators panel's throttle
sends while a slider is dragged (``ActuatorControl._send``), timed on the GUI thread (its CPU time and its wall
time); between two edits the event loop runs until the frame of the edit is drawn, so the drawing is not counted.
A second batch of edits runs under cProfile and gives each panel's share. ``--before REV`` measures git revision
REV too, in the same run (a temporary worktree, measured in a subprocess, alternating with this tree).

Needs an X display: without DISPLAY the script runs itself again under ``xvfb-run``.

Usage: python benchmarks/profile_edit.py [--scene finger] [--edits 60] [--before REV] [--rounds 2] [--top 25]
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the source tree measured (a folder holding ``softsim``, first on the path): set for --before's subprocess
TREE = os.environ.get("SOFTSIM_PROFILE_TREE")
if TREE:
    sys.path.insert(0, TREE)

from _window import alternate_trees, open_scene_window, profile_arguments, rerun_under_xvfb, top_functions  # noqa: E402

#: the functions whose cumulative time per edit the table shows (file suffix, function name)
SHARES = {
    "session.set_parameter": ("app/session.py", "set_parameter"),
    "Parameters panel": ("app/panels/parameters.py", "_on_parameter_changed"),
    "Actuators panel": ("app/panels/actuators.py", "_on_parameter_changed"),
    "Scene tree": ("app/panels/scene_tree.py", "<lambda>"),
    "undo record": ("app/undo.py", "_record"),
}


def _wait(app, condition, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise RuntimeError("timed out waiting for the window")
        app.processEvents()
        time.sleep(0.001)


def measure(scene: str, edits: int, top: int) -> dict:
    """Per-edit GUI-thread cost on ``scene``: median CPU and wall ms over ``edits`` edits, then the profiled
    shares (ms per edit) over as many again."""
    import numpy as np
    from PyQt6.QtWidgets import QApplication

    import softsim
    from softsim.app.cli import _delete_window
    from softsim.app.panels.actuators import ActuatorsPanel

    app = QApplication.instance() or QApplication([])
    window = open_scene_window(scene, "softsim-profile-")
    session = window.session
    panel = next(dock.widget() for dock in window.docks if isinstance(dock.widget(), ActuatorsPanel))
    control = next(iter(panel.controls.values()))
    lo, hi = control.range.lo, control.range.hi
    values = [lo + (hi - lo) * (0.3 + 0.2 * (i % 2)) + 1e-3 * i for i in range(2 * edits + 1)]

    def edit(value: float) -> tuple[float, float]:
        received = session.frames_received
        wall, cpu = time.perf_counter(), time.thread_time()
        control._send(value)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        _wait(app, lambda: session.frames_received > received and session.runner.pending_steps == 0)
        return cpu, wall

    edit(values[0])  # the first solve (numba's cache, the factorization) and the first draw
    timed = np.array([edit(v) for v in values[1:edits + 1]])
    profiler = cProfile.Profile()
    for value in values[edits + 1:]:
        received = session.frames_received
        profiler.enable()
        control._send(value)
        profiler.disable()
        _wait(app, lambda received=received: session.frames_received > received)
    stats = pstats.Stats(profiler)
    shares = {}
    for label, (suffix, name) in SHARES.items():
        total = sum(entry[3] for (file, _line, function), entry in stats.stats.items()
                    if file.endswith(suffix) and function == name)
        shares[label] = 1e3 * total / edits
    total_profiled = 1e3 * sum(entry[2] for entry in stats.stats.values()) / edits
    listing = top_functions(stats, top, edits)
    _delete_window(window)
    app.processEvents()
    return {"tree": str(Path(softsim.__path__[0]).resolve()), "scene": scene, "edits": edits,
            "cpu_ms": 1e3 * float(np.median(timed[:, 0])), "wall_ms": 1e3 * float(np.median(timed[:, 1])),
            "profiled_ms": total_profiled, "shares": shares, "top": listing}


def _run_tree(tree: Path | None, args) -> dict:
    """This script's measurement in a subprocess, on ``tree`` (a folder whose ``softsim`` is measured) or on this
    repository."""
    with tempfile.TemporaryDirectory(prefix="softsim-profile-") as folder:
        output = Path(folder) / "result.json"
        environment = dict(os.environ)
        if tree is not None:
            environment["SOFTSIM_PROFILE_TREE"] = str(tree)
        command = [sys.executable, str(Path(__file__).resolve()), "--scene", args.scene, "--edits", str(args.edits),
                   "--top", str(args.top), "--json", str(output)]
        subprocess.run(command, check=True, env=environment, cwd=str(ROOT))
        return json.loads(output.read_text())


def main(argv=None) -> int:
    parser = profile_arguments(__doc__.splitlines()[0], top=25)
    parser.add_argument("--edits", type=int, default=60)
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        return rerun_under_xvfb()
    if args.json:
        Path(args.json).write_text(json.dumps(measure(args.scene, args.edits, args.top)))
        return 0
    runs = alternate_trees(args.before, args.rounds, lambda tree: _run_tree(tree, args))
    print(f"\nOne {args.scene} actuator edit on the GUI thread (median of {args.edits} edits; shares from cProfile "
          f"over {args.edits} more, ms per edit, profiler overhead included)\n")
    header = ["tree", "CPU ms", "wall ms", "profiled ms", *SHARES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, run in runs:
        cells = [label, f"{run['cpu_ms']:.2f}", f"{run['wall_ms']:.2f}", f"{run['profiled_ms']:.2f}",
                 *(f"{run['shares'][name]:.2f}" for name in SHARES)]
        print("| " + " | ".join(cells) + " |")
    for label, run in runs[-2 if args.before else -1:]:
        print(f"\n{label}: top {args.top} by cumulative time ({run['tree']})")
        print("\n".join(run["top"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
