"""What the window benchmarks share (bench_gui.py, profile_edit.py, profile_frames.py): running under Xvfb,
opening a shipped scene in the main window, measuring an older revision alternately with this tree, the profile
scripts' common options and their cProfile listing. No side effects on import (profile_edit.py chooses the
measured tree on its path first)."""

from __future__ import annotations

import argparse
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


def profile_arguments(description: str, top: int) -> argparse.ArgumentParser:
    """The options profile_edit.py and profile_frames.py share (--scene, --before, --rounds, --top with default
    ``top``, --json); each script adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scene", default="finger")
    parser.add_argument("--before", help="a git revision measured too, in the same run")
    parser.add_argument("--rounds", type=int, default=2, help="with --before: measurements of each tree, alternated")
    parser.add_argument("--top", type=int, default=top)
    parser.add_argument("--json", help="write the measurement as JSON here (one tree, no table)")
    return parser


def top_functions(stats, count: int, per: int) -> list[str]:
    """The ``count`` functions of a ``pstats.Stats`` with the most cumulative time, one line each, their times in
    ms per one of ``per`` events (edits, drawn frames)."""
    rows = sorted(stats.stats.items(), key=lambda item: item[1][3], reverse=True)[:count]
    return [f"{1e3 * entry[3] / per:8.3f} ms cum {1e3 * entry[2] / per:8.3f} ms own  {entry[1]:6d} calls  "
            f"{Path(file).name}:{line} {function}" for (file, line, function), entry in rows]
