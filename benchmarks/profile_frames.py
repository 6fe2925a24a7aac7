"""What the GUI process spends per drawn frame and per slider edit while a slider is dragged (issue 30): CPU time,
not wall time, so that a machine shared with other work moves the numbers little.

The real main window (1280x800) opens a shipped scene and plays it while bench_gui's 25 Hz drive drags the first
actuator's slider for ``--seconds``. Recorded over the drag:

- the CPU time of the whole GUI process (``time.process_time``: every thread, llvmpipe's render threads
  included) and of each kind of thread (``/proc/self/task``: the GUI thread, the render threads, the rest);
- the frames received from the simulation process, the frames drawn, the edits sent, the window's repaints
  (the top-level window's UpdateRequest events: each repaints what changed; with a QOpenGLWidget in the window,
  as the 3D view was up to issue 30's fifth session, each one composes the whole window through OpenGL, llvmpipe
  here) and the view's VTK renders (its render window's StartEvents);
- a second drag of the same length runs under cProfile (the GUI thread): the time of each handler per received
  frame, per drawn frame and per edit, and the top functions.

CPU per drawn frame = the GUI process's CPU over the drag / the frames drawn (the edits' share included; the
per-edit CPU is in profile_edit.py). ``--play`` leaves the slider alone: the scene (a dynamic one, say
gripper_object) plays and only its frames cost the GUI anything. ``--before REV`` measures git revision REV
too, alternating with this tree in the same run (a temporary worktree, each in a subprocess).

Needs an X display: without DISPLAY the script runs itself again under ``xvfb-run``.

``--repaints N`` measures instead the CPU of one repaint of the paused window by its cause (a label's text, a
slider step, a draw of the 3D view, a ``render()``), N of each, an idle wait subtracted.

Usage: python benchmarks/profile_frames.py [--scene finger] [--seconds 8] [--play] [--repaints N] [--before REV]
[--rounds 2] [--top 30]
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
sys.path.insert(0, str(HERE))  # bench_gui (its _common puts this tree's root first on the path)

from _window import alternate_trees, open_scene_window, profile_arguments, rerun_under_xvfb, top_functions  # noqa: E402

#: the handlers whose cumulative time the table shows (file suffix, function name) and what they are counted per
SHARES = {
    "session.poll": ("app/session.py", "poll", "received"),
    "viewport.update_frame": ("app/viewport.py", "update_frame", "drawn"),
    "paint (VTK render)": ("app/viewport.py", ("paintGL", "paintEvent"), "drawn"),  # QOpenGLWidget / native
    "health + status": ("app/main_window.py", "_show_health", "drawn"),
    "frame status text": ("app/main_window.py", "_show_frame_status", "drawn"),
    "Actuators readouts": ("app/panels/actuators.py", "update_frame", "received"),
    "Plots take": ("app/panels/plots.py", "update_frame", "received"),
    "Plots redraw": ("app/panels/plots.py", "_redraw", "drawn"),
    "Sensitivity": ("app/panels/sensitivity.py", "update_frame", "received"),
    "set_parameter": ("app/session.py", "set_parameter", "edit"),
}


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads by kind: ``gui`` (the main thread), ``render`` (llvmpipe's
    threads), ``other``."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = {"gui": 0.0, "render": 0.0, "other": 0.0}
    main = os.getpid()
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        seconds = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        kind = "gui" if int(task.name) == main else "render" if name.startswith("llvmpipe") else "other"
        totals[kind] += seconds
    return totals


def _composition_counter(window):
    """An event filter on ``window`` counting its UpdateRequest events (``.count``)."""
    from PyQt6.QtCore import QEvent, QObject

    class Counter(QObject):
        count = 0

        def eventFilter(self, _watched, event):  # noqa: N802 (Qt API)
            if event.type() == QEvent.Type.UpdateRequest:
                self.count += 1
            return False

    counter = Counter(window)
    window.installEventFilter(counter)
    return counter


def measure(scene: str, seconds: float, top: int, play: bool = False) -> dict:
    import pyvista as pv
    from bench_gui import WARM_UP_FRAMES, Probe, SliderDrive
    from PyQt6.QtWidgets import QApplication

    import softsim
    from softsim.app.cli import _delete_window
    from softsim.app.main_window import MainWindow
    from softsim.app.settings import Settings

    app = QApplication.instance() or QApplication([])
    pv.OFF_SCREEN = False
    window = MainWindow(Settings(tempfile.mkdtemp(prefix="softsim-profile-")))
    window.resize(1280, 800)
    window.show()
    if not window.open_path(ROOT / "resources" / "scenes" / f"{scene}.toml", dialog=False):
        raise RuntimeError(f"cannot open {scene}: {window.session.last_error}")
    session = window.session
    probe = Probe()
    session.step_once(WARM_UP_FRAMES)
    probe.run(app, 300.0, until=lambda: session.runner.frames_attempted >= WARM_UP_FRAMES)
    probe.run(app, 0.5)
    drawn = [0]
    update_frame = window.viewport.update_frame

    def counted(frame):
        drawn[0] += 1
        update_frame(frame)

    window.viewport.update_frame = counted
    compositions = _composition_counter(window)
    renders = [0]  # the VTK renders of the view (its render window's StartEvent), whoever asked for them
    window.viewport.render_window.AddObserver("StartEvent", lambda *_: renders.__setitem__(0, renders[0] + 1))
    session.play()

    def drag(profiler=None) -> dict:
        drawn[0] = renders[0] = 0
        compositions.count = 0
        received = session.frames_received
        wall, cpu, threads = time.perf_counter(), time.process_time(), _thread_cpu()
        if profiler is not None:
            profiler.enable()
        drive = None if play else SliderDrive(window)
        probe.run(app, seconds)
        if drive is not None:
            drive.stop()
        if profiler is not None:
            profiler.disable()
        after = _thread_cpu()
        result = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "threads": {kind: after[kind] - threads[kind] for kind in after},
                  "received": session.frames_received - received, "drawn": drawn[0],
                  "edits": 0 if drive is None else len(drive.edits),
                  "compositions": compositions.count, "renders": renders[0]}
        if drive is not None:
            session.set_parameter = type(session).set_parameter.__get__(session)  # the drive's recorder off
            probe.run(app, 1.0)
        return result

    plain = drag()
    profiler = cProfile.Profile()
    profiled = drag(profiler)
    session.pause()
    stats = pstats.Stats(profiler)
    counts = {"received": max(profiled["received"], 1), "drawn": max(profiled["drawn"], 1),
              "edit": max(profiled["edits"], 1)}
    shares = {}
    for label, (suffix, name, per) in SHARES.items():
        total = sum(entry[3] for (file, _line, function), entry in stats.stats.items()
                    if file.endswith(suffix) and function in ((name,) if isinstance(name, str) else name))
        shares[label] = (1e3 * total / counts[per], per)
    listing = top_functions(stats, top, counts["drawn"])
    _delete_window(window)
    app.processEvents()
    return {"tree": str(Path(softsim.__path__[0]).resolve()), "scene": scene, "plain": plain,
            "profiled": profiled, "shares": shares, "top": listing}


#: the repaints that ``--repaints`` causes one at a time, with the window paused and idle
REPAINT_CAUSES = ("a status bar label's new text", "the slider moved one step (no edit sent)",
                  "the 3D view drawn (draw(): one paint)", "render() (a render, and the paint it may ask for)")


def measure_repaints(scene: str, count: int) -> dict:
    """The GUI process's CPU per repaint of the window (paused, idle between repaints), by what caused it: ms of
    the whole process and of llvmpipe's threads, the window's compositions and the view's VTK renders per
    repaint, an idle wait of the same length subtracted."""
    import _common  # noqa: F401 (puts the measured tree's root first on the path, as bench_gui does for measure)
    from PyQt6.QtCore import QEventLoop, QTimer
    from PyQt6.QtWidgets import QApplication

    import softsim
    from softsim.app.cli import _delete_window
    from softsim.app.panels.actuators import ActuatorsPanel

    app = QApplication.instance() or QApplication([])
    window = open_scene_window(scene, "softsim-profile-")
    session = window.session
    session.step_once(2)  # two frames solved and drawn; then nothing changes until the measurement is over
    while session.runner.frames_attempted < 2 or session.runner.pending_steps:
        app.processEvents()
        time.sleep(0.005)
    compositions = _composition_counter(window)
    renders = [0]
    window.viewport.render_window.AddObserver("StartEvent", lambda *_: renders.__setitem__(0, renders[0] + 1))
    panel = next(dock.widget() for dock in window.docks if isinstance(dock.widget(), ActuatorsPanel))
    slider = next(iter(panel.controls.values())).slider
    slider.blockSignals(True)  # a repaint of the slider only: no edit goes to the simulation process

    def spin(seconds: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(1e3 * seconds), loop.quit)
        loop.exec()

    causes = {REPAINT_CAUSES[0]: lambda i: window.frame_label.setText(f"frame {i}"),
              REPAINT_CAUSES[1]: lambda i: slider.setValue(slider.value() + (1 if i % 2 else -1)),
              REPAINT_CAUSES[2]: lambda i: window.viewport.draw(),
              REPAINT_CAUSES[3]: lambda i: window.viewport.render()}
    pause = 0.08  # s after each repaint: the event loop idles
    spin(1.0)

    def run(cause) -> dict:
        compositions.count = renders[0] = 0
        cpu, threads = time.process_time(), _thread_cpu()
        for i in range(count):
            if cause is not None:
                cause(i)
            spin(pause)
        after = _thread_cpu()
        return {"cpu": (time.process_time() - cpu) / count, "render": (after["render"] - threads["render"]) / count,
                "compositions": compositions.count / count, "renders": renders[0] / count}

    idle = run(None)
    results = {}
    for name, cause in causes.items():
        result = run(cause)
        results[name] = {key: result[key] - idle[key] for key in result}
    _delete_window(window)
    app.processEvents()
    return {"tree": str(Path(softsim.__path__[0]).resolve()), "scene": scene, "repaints": results,
            "load": os.getloadavg()}


def _run_tree(tree: Path | None, args) -> dict:
    """This script's measurement in a subprocess, on the checkout ``tree`` (a copy of this script run from its
    benchmarks folder, so that its own ``softsim`` and bench_gui are imported) or on this repository."""
    script = Path(__file__).resolve()
    if tree is not None:
        script = Path(shutil.copy(script, tree / "benchmarks" / script.name))
        shutil.copy(HERE / "_window.py", tree / "benchmarks" / "_window.py")  # older trees have none
    with tempfile.TemporaryDirectory(prefix="softsim-profile-") as folder:
        output = Path(folder) / "result.json"
        command = [sys.executable, str(script), "--scene", args.scene, "--seconds", str(args.seconds),
                   "--top", str(args.top), "--json", str(output), *(["--play"] if args.play else []),
                   *(["--repaints", str(args.repaints)] if args.repaints else [])]
        subprocess.run(command, check=True, cwd=str(tree or ROOT))
        return json.loads(output.read_text())


def _row(label: str, run: dict) -> list[str]:
    plain = run["plain"]
    drawn = max(plain["drawn"], 1)
    threads = plain["threads"]
    return [label, f"{plain['received'] / plain['wall']:.1f}", f"{plain['drawn'] / plain['wall']:.1f}",
            f"{plain['edits'] / plain['wall']:.1f}", f"{plain['compositions'] / plain['wall']:.1f}",
            f"{100 * plain['cpu'] / plain['wall']:.0f}",
            f"{100 * threads['gui'] / plain['wall']:.0f} / {100 * threads['render'] / plain['wall']:.0f} / "
            f"{100 * threads['other'] / plain['wall']:.0f}",
            f"{1e3 * plain['cpu'] / drawn:.1f}", f"{1e3 * threads['gui'] / drawn:.1f}",
            f"{1e3 * threads['gui'] / (plain['drawn'] + plain['edits'] or 1):.1f}",
            f"{plain['compositions'] / drawn:.2f}", f"{plain['renders'] / drawn:.2f}"]


def main(argv=None) -> int:
    parser = profile_arguments(__doc__.splitlines()[0], top=30)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--play", action="store_true", help="play the scene without dragging a slider")
    parser.add_argument("--repaints", type=int, default=0, metavar="N",
                        help="instead of a drag: the CPU per repaint of the paused window, N repaints per cause")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        return rerun_under_xvfb()
    if args.json:
        result = (measure_repaints(args.scene, args.repaints) if args.repaints
                  else measure(args.scene, args.seconds, args.top, args.play))
        Path(args.json).write_text(json.dumps(result))
        return 0
    runs = alternate_trees(args.before, args.rounds, lambda tree: _run_tree(tree, args))
    if args.repaints:
        print(f"\nThe GUI process's CPU per repaint of {args.scene}'s window, paused ({args.repaints} repaints per "
              "cause, an idle wait subtracted; CPU from /proc)\n")
        header = ["tree", "load average (1 min)", "repaint caused by", "process CPU ms", "of it llvmpipe ms",
                  "window compositions", "VTK renders"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for label, run in runs:
            for cause, r in run["repaints"].items():
                print(f"| {label} | {run['load'][0]:.1f} | {cause} | {1e3 * r['cpu']:.1f} | {1e3 * r['render']:.1f} | "
                      f"{r['compositions']:.2f} | {r['renders']:.2f} |")
        return 0
    what = "plays" if args.play else "plays and its first slider is dragged at 25 Hz"
    print(f"\nThe GUI process while {args.scene} {what} for {args.seconds:g} s (CPU from /proc, without the "
          f"profiler)\n")
    header = ["tree", "received/s", "drawn/s", "edits/s", "window compositions/s", "process CPU %",
              "GUI / render / other threads %",
              "process CPU ms per drawn frame", "GUI thread CPU ms per drawn frame",
              "GUI thread CPU ms per (drawn frame + edit)", "compositions per drawn frame",
              "VTK renders per drawn frame"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, run in runs:
        print("| " + " | ".join(_row(label, run)) + " |")
    print("\ncProfile over a second drag (GUI thread; ms per received frame, drawn frame or edit, profiler "
          "overhead included)\n")
    header = ["tree", *(f"{name} (per {per})" for name, (_s, _f, per) in SHARES.items())]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, run in runs:
        print("| " + " | ".join([label, *(f"{run['shares'][name][0]:.2f}" for name in SHARES)]) + " |")
    for label, run in runs[-2 if args.before else -1:]:
        print(f"\n{label}: top {args.top} by cumulative time, ms per drawn frame ({run['tree']}; "
              f"{run['profiled']['received']} received, {run['profiled']['drawn']} drawn, "
              f"{run['profiled']['edits']} edits)")
        print("\n".join(run["top"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
