"""Helpers shared by the benchmark scripts: machine description, timing statistics, peak memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
#: bench_equilibrium --before: the older revision whose solver a subprocess measures comes first on the path
if os.environ.get("SOFTSIM_BENCH_TREE"):
    sys.path.insert(0, os.environ["SOFTSIM_BENCH_TREE"])


#: the environment before this process made its thread settings: the one a benchmark's subprocesses start from, so
#: that each makes the settings of the revision it measures (configure_threads sets KMP_BLOCKTIME only when unset)
START_ENVIRONMENT = dict(os.environ)


def _configure_threads() -> None:
    """The benchmarks are entry points: they make the thread settings the command line makes (older
    revisions, measured by ``--before``, made them on import)."""
    try:
        from softsim.mechanics.linear_solvers import configure_threads
    except ImportError:
        return
    configure_threads()


_configure_threads()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def total_ram_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return float("nan")


def versions() -> dict[str, str]:
    """Versions of python and of the numerical packages (``"-"`` when a package is missing)."""
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("scipy", "numba", "pypardiso", "vtk", "pyvista", "skfem", "osqp", "qpsolvers"):
        try:
            module = __import__(name)
            out[name] = str(getattr(module, "__version__", "?"))
        except Exception:  # noqa: BLE001 - a missing optional package is reported, not fatal
            out[name] = "-"
    out["MKL"] = mkl_version()
    return out


def mkl_version() -> str:
    try:
        import ctypes

        from pypardiso.pardiso_wrapper import PyPardisoSolver

        library = PyPardisoSolver().libmkl
        buffer = ctypes.create_string_buffer(256)
        library.mkl_get_version_string(buffer, 256)
        return buffer.value.decode().strip()
    except Exception:  # noqa: BLE001
        return "-"


def stats_ms(seconds) -> dict[str, float]:
    """Median, 90th percentile and largest of a list of durations, in milliseconds."""
    values = 1e3 * np.asarray(seconds, dtype=np.float64)
    if values.size == 0:
        return {"median": float("nan"), "p90": float("nan"), "max": float("nan")}
    return {"median": float(np.median(values)), "p90": float(np.percentile(values, 90)),
            "max": float(values.max())}


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MB (ru_maxrss is in kB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_json(path: str | None, data) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=1, default=float))


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def run_in_process(command: list[str], label: str) -> dict | None:
    """Run one benchmark case in its own process (clean peak memory, no shared caches) and return the dict it
    printed on a ``RESULT {json}`` line; None (with its stderr printed) when it printed none."""
    output = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in output.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        print(f"{label} failed:\n{output.stderr[-3000:]}", flush=True)
        return None
    return json.loads(lines[-1][len("RESULT "):])

