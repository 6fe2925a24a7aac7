"""Timings belong in benchmarks/RESULTS.md, not in docstrings (issue 32): a docstring says why, the results
file says how much, measured when and on what."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a duration (``110 ms``, ``0.3 s``, ``80 us``) or a speed ratio (``4x faster``, ``3 times slower``)
TIMING = re.compile(r"\b\d+(\.\d+)?\s?(ms|µs|us|s|seconds|milliseconds)\b(?!\w)|\b\d+(\.\d+)?\s?(x|times) "
                    r"(faster|slower)\b")
#: durations that are not measurements: MKL's default spin time and the value softsim sets, a clock's display
#: format, and the recording clocks' worked example
ALLOWED = {("mechanics/linear_solvers/threads.py", "200 ms"), ("mechanics/linear_solvers/threads.py", "20 ms"),
           ("app/rates.py", "1.25 s"), ("app/recording.py", "10 times faster"), ("app/recording.py", "1 s")}


def _docstrings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def test_no_timings_in_docstrings():
    found = []
    for package in ("app", "mechanics", "meshes"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            for text in _docstrings(path):
                for match in TIMING.finditer(text):
                    if (relative, match.group(0)) not in ALLOWED:
                        found.append(f"{relative}: {match.group(0)!r}")
    assert not found, "timings in docstrings (move them to benchmarks/RESULTS.md):\n" + "\n".join(found)
