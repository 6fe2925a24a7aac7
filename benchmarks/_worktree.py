"""A temporary git worktree of an older revision, and a script's measurement on it in a subprocess, for the
benchmarks that measure one beside this checkout. No side effects on import (the scripts that use it choose which
tree's package they import)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def worktree(revision: str, prefix: str = "softsim-before-"):
    """A detached git worktree of ``revision`` in a new temporary folder (its root holds that revision's
    ``softsim`` package), removed with the folder afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    tree = folder / "tree"
    try:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision], check=True,
                       capture_output=True)
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False,
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def measure_in(tree: Path | None, script: str, output_option: str, *options: str) -> dict:
    """The JSON that ``script`` writes (``python script *options output_option FILE``) when run in a subprocess
    whose ``softsim`` is ``tree``'s (``SOFTSIM_BENCH_TREE``, which _common puts first on the import path), or this
    checkout's when ``tree`` is None. The JSON names the package it measured (``solver_path``); RuntimeError when
    that is not the tree's."""
    with tempfile.TemporaryDirectory(prefix="softsim-bench-") as folder:
        output = Path(folder) / "measured.json"
        from _common import START_ENVIRONMENT  # the environment before this process's thread settings

        environment = dict(START_ENVIRONMENT)
        environment.pop("SOFTSIM_BENCH_TREE", None)
        if tree is not None:
            environment["SOFTSIM_BENCH_TREE"] = str(tree)
        subprocess.run([sys.executable, str(Path(script).resolve()), *options, output_option, str(output)],
                       check=True, env=environment, cwd=str(ROOT))
        measured = json.loads(output.read_text())
    if tree is not None and not str(measured.get("solver_path", "")).startswith(str(tree)):
        raise RuntimeError(f"--before measured {measured.get('solver_path')}, not the worktree {tree}")
    return measured
