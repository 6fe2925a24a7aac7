"""The ``softsim`` command.

``softsim [SCENE_OR_MESH] [--frames N --screenshot PNG]`` opens the window; the subcommands run headless
and never import Qt or VTK.
"""

from __future__ import annotations

import argparse
import logging
import sys

SUBCOMMANDS = ("run", "check", "info")


def _gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="softsim", description="Interactive soft-robot simulator.")
    parser.add_argument("path", nargs="?", help="scene (.toml) or tetrahedral mesh file; default: the finger")
    parser.add_argument("--frames", type=int, default=0, help="run N frames, then (with --screenshot) exit")
    parser.add_argument("--screenshot", metavar="PNG", help="save a screenshot of the window and exit")
    parser.add_argument("--verbose", action="store_true", help="log details")
    return parser


def run_gui(argv: list[str]) -> int:
    args = _gui_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    from PyQt6.QtCore import QTimer
    from PyQt6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.resources import resource_path

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow()
    window.show()
    path = args.path or str(resource_path("meshes", "finger.vtu"))
    opened = window.open_mesh(path)
    if args.screenshot:
        status = {"code": 0 if opened else 2}

        def finish() -> None:
            window.save_screenshot(args.screenshot)
            window.close()
            app.quit()

        QTimer.singleShot(500, finish)
        app.exec()
        return status["code"]
    return app.exec()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "info":
        from meshes.info import main as info_main

        return info_main(argv[1:])
    if argv and argv[0] in ("run", "check"):
        from app.headless import main as headless_main  # never imports Qt or VTK

        return headless_main(argv)
    return run_gui(argv)


if __name__ == "__main__":
    sys.exit(main())
