"""The ``softsim`` command.

``softsim [SCENE_OR_MESH] [--frames N] [--screenshot PNG] [--set KEY=VALUE ...]`` opens the window (on the
finger by default); the subcommands ``run``, ``check`` and ``info`` run headless and never import Qt or VTK.
"""

from __future__ import annotations

import argparse
import logging
import sys


def _gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="softsim", description="Interactive soft-robot simulator.",
        epilog="Subcommands (no window): softsim run|check|info|sweep|import|grad ... (see softsim run --help).")
    parser.add_argument("path", nargs="?", help="scene (.toml), SOFA scene (.py, .pyscn, .scn: imported on the fly) "
                                                "or tetrahedral mesh file; default: the finger")
    parser.add_argument("--frames", type=int, default=0, metavar="N",
                        help="run N frames after opening (then, with --screenshot, save it and exit)")
    parser.add_argument("--screenshot", metavar="PNG", help="save a screenshot of the whole window and exit")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="change a scene value by key path before running, e.g. "
                             "body.finger.cable.cable.value=8 (repeatable)")
    parser.add_argument("--camera", choices=("front", "side", "top", "iso"), default=None,
                        help="camera preset for the first view (default: iso)")
    if "--allow-scripts" not in parser._option_string_actions:
        parser.add_argument("--allow-scripts", action="store_true",
                            help="run the scene's Python code (a SOFA .py scene's createScene and controllers)")
    parser.add_argument("--verbose", action="store_true", help="log details")
    return parser


class _Batch:
    """Runs ``frames`` frames in the open window, then saves the screenshot and quits with an exit code.

    Exit code: 0 when every frame succeeded, 1 when a frame failed (the message goes to stderr).
    """

    def __init__(self, app, window, frames: int, screenshot: str | None, camera: str) -> None:
        from PyQt6.QtCore import QTimer

        self.app, self.window, self.frames, self.screenshot = app, window, frames, screenshot
        self.camera = camera
        self.code = 0
        self.problems: list[str] = []
        window.session.message.connect(self._on_message)
        window.session.step_once(frames)
        self.timer = QTimer(window)
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._check)
        self.timer.start()

    def _on_message(self, level: str, text: str) -> None:
        if level in ("warning", "error"):
            self.problems.append(f"{level}: {text}")
        if level == "error" or (level == "warning" and " failed: " in text):
            self.code = 1

    def _check(self) -> None:
        session = self.window.session
        runner = session.runner
        if runner is not None and (runner.frames_attempted < self.frames or runner.pending_steps > 0):
            return
        self.timer.stop()
        session.poll()  # pick up the last frame and its messages now
        self.window.flush_frame()  # and draw it: the draw pacer may be holding it back
        for problem in self.problems:
            print(problem, file=sys.stderr)
        if self.screenshot is not None:
            self.window.set_camera(self.camera)  # frame the deformed body in the final layout
            if not self.window.save_screenshot(self.screenshot):
                print(f"error: cannot write the screenshot {self.screenshot}", file=sys.stderr)
                self.code = self.code or 1
            self.window.close()
            self.app.quit()


def run_gui(argv: list[str]) -> int:
    """``softsim [PATH] [--frames N] [--screenshot PNG] [--set KEY=VALUE ...]``: the interactive window.

    Exit codes with --screenshot: 0 success, 1 a frame failed, 2 invalid input (scene, mesh or --set).
    """
    from softsim.app.headless import parse_override
    from softsim.app.run_output import MAX_FRAMES, UsageError  # the --set parser of softsim run, too

    args = _gui_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    if not 0 <= args.frames <= MAX_FRAMES:
        print(f"error: --frames: {args.frames} is outside [0, {MAX_FRAMES}]", file=sys.stderr)
        return 2
    try:
        overrides = [parse_override(text) for text in args.overrides]
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import pyvista as pv
    from PyQt6.QtWidgets import QApplication

    from softsim.app.main_window import MainWindow
    from softsim.app.native_view import x11_platform
    from softsim.app.resources import default_scene

    pv.OFF_SCREEN = False
    batch = args.screenshot is not None
    x11_platform()  # the view is an X window (app.native_view): XWayland in a Wayland session
    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow()
    if batch:  # screenshots use the whole screen (e.g. Xvfb's 1400x900)
        window.resize(app.primaryScreen().availableGeometry().size())
    window.show()
    # File > Open of a SOFA Python scene runs its code only when the command line allowed scripts
    window.session.allow_scripts = bool(getattr(args, "allow_scripts", False))
    path = args.path or str(default_scene())
    report = None
    from softsim.app.sofa_import import ImportFailure, import_to_temporary, is_sofa_scene

    if is_sofa_scene(path):  # imported into a temporary folder; the report goes to the message area
        try:
            toml, report = import_to_temporary(path, allow_scripts=getattr(args, "allow_scripts", False))
            path = str(toml)
        except (ImportFailure, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            window.close()
            return 2
    if not window.open_path(path, dialog=not batch):
        if batch:
            print(f"error: {window.session.last_error}", file=sys.stderr)
            window.close()
            return 2
    if report is not None:
        window.session.message.emit("warning", report)
    for key, value in overrides:
        problem = window.session.set_parameter(key, value)
        if problem is not None:
            if batch:
                print(f"error: --set {key}={value}: {problem}", file=sys.stderr)
                window.close()
                return 2
            window.show_error("Invalid --set", f"{key}={value}: {problem}")
    if args.camera:
        window.set_camera(args.camera)
    if not batch and not args.frames:
        status = app.exec()
        _delete_window(window)
        return status
    runner = _Batch(app, window, args.frames, args.screenshot, args.camera or "iso")
    status = app.exec()
    _delete_window(window)
    return runner.code if batch else status


def _delete_window(window) -> None:
    """Close and delete the window (its worker thread and VTK render window) while the QApplication exists.

    Left to the end of ``run_gui``, Python may destroy the QApplication before the window's C++ objects:
    about one batch run in ten then crashed on exit (exit -11 after a complete, correct run).
    """
    from PyQt6 import sip

    window.close()
    if not sip.isdeleted(window):
        sip.delete(window)


def main(argv: list[str] | None = None) -> int:
    from softsim.mechanics.linear_solvers import configure_threads

    configure_threads()  # the process-wide thread settings of the native solvers, before the first solve
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "info":
        from softsim.meshes.info import main as info_main

        return info_main(argv[1:])
    if argv and argv[0] == "import":
        from softsim.app.sofa_import.command import main as import_main  # never imports Qt or VTK

        return import_main(argv[1:])
    if argv and argv[0] == "sweep":
        from softsim.app.sweep.command import main as sweep_main  # never imports Qt or VTK

        return sweep_main(argv[1:])
    if argv and argv[0] == "grad":
        from softsim.app.grad_command import main as grad_main  # never imports Qt or VTK

        return grad_main(argv[1:])
    if argv and argv[0] in ("run", "check"):
        from softsim.app.headless import main as headless_main  # never imports Qt or VTK

        return headless_main(argv)
    return run_gui(argv)


if __name__ == "__main__":
    sys.exit(main())
