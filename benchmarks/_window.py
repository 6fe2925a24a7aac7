"""What the window benchmarks share (bench_gui.py, profile_edit.py, profile_frames.py): running under Xvfb,
opening a shipped scene in the main window, and measuring an older revision alternately with this tree. No side
effects on import (profile_edit.py chooses the measured tree on its path first)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rerun_under_xvfb(**environment: str) -> int:
    """Runs this script again, same arguments, under ``xvfb-run`` on a 1600x1000x24 screen, with ``environment``
    added to this process's; returns its exit code."""
    command = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", sys.executable, *sys.argv]
    return subprocess.run(command, check=False, env=dict(os.environ, **environment)).returncode


def open_scene_window(scene: str, prefix: str):
    """The main window, 1280x800 and shown, its settings in a new temporary folder (``prefix``), with
    ``resources/scenes/<scene>.toml`` open; RuntimeError with the session's error when the scene does not
    open. A QApplication must exist."""
    import pyvista as pv

    from softsim.app.main_window import MainWindow
    from softsim.app.settings import Settings

    pv.OFF_SCREEN = False
    window = MainWindow(Settings(tempfile.mkdtemp(prefix=prefix)))
    window.resize(1280, 800)
    window.show()
    if not window.open_path(ROOT / "resources" / "scenes" / f"{scene}.toml", dialog=False):
        raise RuntimeError(f"cannot open {scene}: {window.session.last_error}")
    return window


def alternate_trees(before: str | None, rounds: int, run) -> list[tuple[str, dict]]:
    """``run(tree)`` on this checkout (``tree`` None) and, with git revision ``before``, on a temporary worktree of
    it too (``tree``: that checkout's root, which holds its ``softsim`` package), the older first, alternating for
    ``rounds`` rounds (one run without ``before``). Returns [(label, result)] in the order run; the worktree is
    removed afterwards."""
    from _worktree import worktree  # here: profile_frames copies this file alone into older trees

    runs: list[tuple[str, dict]] = []
    with (worktree(before) if before else contextlib.nullcontext()) as older:
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if older is not None:
            trees.insert(0, (f"before ({before})", older))
        for _round in range(rounds if before else 1):
            for label, tree in trees:
                runs.append((label, run(tree)))
    return runs
