"""``softsim import SCENE.py|SCENE.scn|SCENE.pyscn [--out SCENE.toml]``: write a SOFA scene as a softsim scene.

The scene's TOML (with the import report as its header comment) and, when the scene has Python controllers,
the script that runs them (``NAME.controllers.py``, run only with ``--allow-scripts``). The report is printed.
A Python scene's ``createScene`` runs (against softsim's recording stand-in for SOFA, not SOFA itself).

Exit status: 0 written, 2 the scene cannot be read or translated (one message naming the file and the part).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="softsim import",
                                     description="Translate a SOFA / SoftRobots scene into a softsim scene file.")
    parser.add_argument("scene", help="SOFA scene: .py / .pyscn (SofaPython3, createScene is run) or .scn (XML)")
    parser.add_argument("--out", metavar="SCENE.toml", help="scene file to write (default: beside the SOFA scene, "
                                                            "with the suffix .toml)")
    return parser


def main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from softsim.app.sofa_import.importer import ImportFailure, import_scene, is_sofa_scene, write_import

    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as done:
        return int(done.code or 0) and 2
    if not is_sofa_scene(args.scene):
        stderr.write(f"softsim import: {Path(args.scene).name}: not a SOFA scene (.py, .pyscn or .scn)\n")
        return 2
    out = Path(args.out) if args.out else Path(args.scene).with_suffix(".toml")
    if out.suffix.lower() != ".toml":
        stderr.write(f"softsim import: --out {out}: a softsim scene file ends in .toml\n")
        return 2
    try:
        result = import_scene(args.scene, out)
        written = write_import(result, out)
    except ImportFailure as error:
        stderr.write(f"softsim import: {error}\n")
        return 2
    except OSError as error:
        stderr.write(f"softsim import: cannot write {out}: {error.strerror or error}\n")
        return 2
    stdout.write(result.report.text() + "\n")
    stdout.write(f"softsim import: wrote {', '.join(str(p) for p in written)}\n")
    return 0
