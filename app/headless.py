"""``softsim run`` and ``softsim check``: scenes without a window (SCENE-FORMAT.md, "Headless runs").

``softsim run SCENE --frames N --out DIR [--set KEY=VALUE ...] [--no-vtu] [--progress] [--verbose]`` writes
``DIR/frames.csv`` (one row per frame), ``DIR/frame_NNNN.vtu`` and ``DIR/result.pvd``;
``softsim check SCENE [--set KEY=VALUE ...]`` loads and builds the scene and prints a summary.

Exit codes: 0 success, 2 invalid input (scene, mesh, ``--set`` or arguments), 3 a frame diverged (the run
stops; every frame written so far is kept), 1 an internal error (a defect), 130 interrupted. An error is
one line on stderr; ``--verbose`` adds the details (every problem found, the traceback, the solver logs).

Every output file appears under its final name only complete: it is written to a temporary file in the same
directory and renamed (``os.replace``). The CSV and the ``.pvd`` are rewritten after every frame, so that an
interrupted run leaves consistent files listing the frames done; past ``_EVERY_FRAME_ROWS`` rows they are
rewritten at most once per ``_LONG_RUN_FLUSH_SECONDS`` (and always at the end), which keeps the cost of the
rewrites bounded on long runs.

This module never imports Qt, VTK or pyvista (a test runs ``softsim run`` and checks ``sys.modules``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import logging
import math
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_DIVERGED = 3
EXIT_INTERNAL = 1  # a defect of softsim itself (not the input)
EXIT_INTERRUPTED = 130

#: the columns every ``frames.csv`` starts with; the actuator/effector outputs ``NAME.QUANTITY`` follow
BASE_COLUMNS = (
    "frame",
    "wall_ms",
    "newton_iterations",
    "newton_converged",
    "newton_residual",
    "constraint_iterations",
    "constraint_error",
    "constraint_converged",
    "max_displacement",
)
CSV_NAME = "frames.csv"
PVD_NAME = "result.pvd"

#: the CSV and the .pvd are rewritten after every frame up to this many rows ...
_EVERY_FRAME_ROWS = 2000
#: ... and beyond it at most once per this many seconds (and at the end of the run)
_LONG_RUN_FLUSH_SECONDS = 2.0
#: a progress bar appears once a run has lasted this long [s]
_PROGRESS_DELAY_SECONDS = 1.0


class UsageError(ValueError):
    """Invalid command-line arguments (exit code 2)."""


# -- atomic files ---------------------------------------------------------------------------------------
def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and ``os.replace``.

    Readers see either the previous file or the new one, never a partial one; the temporary file is removed
    when the write fails or is interrupted.
    """
    path = Path(path)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temp_name, 0o644)  # mkstemp creates 0600
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _format_value(value) -> str:
    if isinstance(value, bool | np.bool_):
        return "1" if value else "0"
    if isinstance(value, int | np.integer):
        return str(int(value))
    return repr(float(value))


class FrameTable:
    """The rows of ``frames.csv``; the columns grow when a frame reports an output not seen before.

    ``rows`` holds one dict per frame (column name -> value); ``text()`` renders the whole CSV, missing
    values as empty cells.
    """

    def __init__(self, output_names: Sequence[str] = ()) -> None:
        self.columns: list[str] = list(BASE_COLUMNS) + [n for n in output_names if n not in BASE_COLUMNS]
        self.rows: list[dict[str, object]] = []

    def append(self, row: dict[str, object]) -> None:
        for name in row:
            if name not in self.columns:
                self.columns.append(name)
        self.rows.append(row)

    def text(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(["" if row.get(c) is None else _format_value(row[c]) for c in self.columns])
        return buffer.getvalue()


def frame_row(index: int, wall_seconds: float, report, simulation, outputs: dict[str, float]) -> dict:
    """One CSV row from a successful frame's :class:`~mechanics.frame_step.FrameReport`.

    ``newton_residual`` is the norm of the last Newton residual ``|R|`` (force unit); a frame without
    constraint rows has ``constraint_iterations`` 0, ``constraint_error`` 0 and ``constraint_converged`` 1.
    ``max_displacement`` is ``max_i |x_i - X_i|`` (length unit).
    """
    newton = report.newton
    if newton is not None and len(newton.squared_residuals):
        residual = math.sqrt(float(newton.squared_residuals[-1]))
    elif newton is not None:
        residual = math.sqrt(float(newton.squared_initial_residual))
    else:
        residual = float("nan")
    constraint = report.constraint
    row: dict[str, object] = {
        "frame": index,
        "wall_ms": 1e3 * wall_seconds,
        "newton_iterations": 0 if newton is None else int(newton.iterations),
        "newton_converged": newton is not None and bool(newton.converged),
        "newton_residual": residual,
        "constraint_iterations": 0 if constraint is None else int(constraint.currentIterations),
        "constraint_error": 0.0 if constraint is None else float(constraint.currentError),
        "constraint_converged": True if constraint is None else bool(constraint.converged),
        "max_displacement": float(np.max(np.linalg.norm(simulation.x - simulation.X, axis=1), initial=0.0)),
    }
    row.update(outputs)
    return row


def write_frame_vtu(path: Path, simulation) -> None:
    """The deformed mesh of the current state, atomically: points ``x`` (n, 3); point data ``displacement``
    (n, 3) ``x - X`` and ``displacement_magnitude`` (n,); cell data ``von_mises`` (m,)."""
    import meshes  # imported here so that ``softsim check`` does not pay for meshio

    displacement = simulation.x - simulation.X
    meshes.write_vtu(path, simulation.x, simulation.tets,
                     point_data={"displacement": displacement,
                                 "displacement_magnitude": np.linalg.norm(displacement, axis=1)},
                     cell_data={"von_mises": np.nan_to_num(simulation.von_mises())})


# -- progress -------------------------------------------------------------------------------------------
class ProgressBar:
    """A one-line text bar on ``stream``, drawn once the run has lasted ``delay`` seconds, at most 10 times
    per second; ``close()`` ends the line."""

    def __init__(self, total: int, stream: TextIO, *, delay: float = _PROGRESS_DELAY_SECONDS, width: int = 30):
        self.total = max(int(total), 1)
        self.stream = stream
        self.delay = delay
        self.width = width
        self.started = time.perf_counter()
        self.last_draw = -math.inf
        self.drawn = False

    def update(self, done: int) -> None:
        now = time.perf_counter()
        elapsed = now - self.started
        if elapsed < self.delay or (now - self.last_draw < 0.1 and done < self.total):
            return
        self.last_draw = now
        filled = int(self.width * done / self.total)
        remaining = elapsed / done * (self.total - done) if done else float("nan")
        eta = f"{remaining:.0f} s left" if math.isfinite(remaining) else ""
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} frames "
                          f"{elapsed:.1f} s {eta}   ")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


# -- running --------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run_frames` did: ``frames_written`` good frames (CSV rows), the frame that failed
    (``failed_frame``, None when every frame succeeded) with the solver's ``message``, and the files written."""

    frames_written: int
    failed_frame: int | None = None
    message: str = ""
    files: list[Path] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return self.failed_frame is not None


class _Outputs:
    """The files of one run in ``out_dir``; ``flush`` rewrites the CSV (and the .pvd) atomically."""

    def __init__(self, out_dir: Path, table: FrameTable, write_vtu: bool, time_step: float | None) -> None:
        self.out_dir = out_dir
        self.table = table
        self.write_vtu = write_vtu
        self.time_step = time_step
        self.pvd_entries: list[tuple[float, str]] = []
        self.last_flush = -math.inf
        self.dirty = False

    def add_frame(self, index: int, row: dict, simulation) -> None:
        if self.write_vtu:
            name = f"frame_{index:04d}.vtu"
            write_frame_vtu(self.out_dir / name, simulation)
            self.pvd_entries.append((index if self.time_step is None else index * self.time_step, name))
        self.table.append(row)
        self.dirty = True
        now = time.perf_counter()
        if len(self.table.rows) <= _EVERY_FRAME_ROWS or now - self.last_flush >= _LONG_RUN_FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        import meshes

        write_text_atomically(self.out_dir / CSV_NAME, self.table.text())
        if self.write_vtu:
            meshes.write_pvd(self.out_dir / PVD_NAME, self.pvd_entries)
        self.last_flush = time.perf_counter()
        self.dirty = False

    def files(self) -> list[Path]:
        names = [CSV_NAME] + ([name for _t, name in self.pvd_entries] + [PVD_NAME] if self.write_vtu else [])
        return [self.out_dir / name for name in names]


def run_frames(scene, frames: int, out_dir: str | Path, *, write_vtu: bool = True,
               on_frame: Callable[[object, int, dict], None] | None = None,
               progress: ProgressBar | None = None) -> RunResult:
    """Run ``frames`` frames of ``scene`` (a :class:`mechanics.scene_runtime.Scene`) and write the outputs.

    Parameters
    ----------
    scene : the loaded scene, with any overrides applied.
    frames : number of frames, >= 1.
    out_dir : output directory (created with its parents).
    write_vtu : write ``frame_NNNN.vtu`` per frame and ``result.pvd``.
    on_frame : called as ``on_frame(scene, index, row)`` after frame ``index`` is written (its files are
        complete on disk); it may change the scene (live edits by key path, as the GUI does between frames).
    progress : a bar updated after every frame.

    The run stops at the first frame whose report is not ``ok`` (diverged): the frames before it stay
    written and the result names the frame and the solver's message. The CSV and .pvd are complete under
    their final names after every frame, and written once more when the run ends, however it ends.
    """
    if int(frames) < 1:
        raise UsageError(f"--frames: {frames} is outside [1, inf)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    simulation = scene.simulation
    dynamic = getattr(scene.spec.scene, "mode", "static") == "dynamic"
    outputs = _Outputs(out_dir, FrameTable(list(scene.outputs())), write_vtu,
                       scene.spec.scene.dt if dynamic else None)
    result = RunResult(frames_written=0)
    try:
        outputs.flush()  # the header (and an empty collection) exist from the start
        for _ in range(int(frames)):
            started = time.perf_counter()
            report = scene.step()
            wall = time.perf_counter() - started
            if not report.ok:
                result.failed_frame = int(report.frame)
                result.message = report.message
                logger.debug("frame %d failed: %s", report.frame, report.message)
                break
            if report.message:
                logger.info("frame %d: %s", report.frame, report.message)
            index = int(simulation.frame)
            row = frame_row(index, wall, report, simulation, scene.outputs())
            outputs.add_frame(index, row, simulation)
            result.frames_written += 1
            if progress is not None:
                progress.update(result.frames_written)
            if on_frame is not None:
                on_frame(scene, index, row)
    finally:
        if outputs.dirty:
            outputs.flush()
        if progress is not None:
            progress.close()
    result.files = outputs.files()
    return result


# -- command line ---------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing the usage and exiting (the CLI prints one line)."""

    def error(self, message: str):
        raise UsageError(message)


def build_parser(command: str) -> argparse.ArgumentParser:
    """The argument parser of ``softsim run`` or ``softsim check``."""
    if command == "run":
        parser = _Parser(prog="softsim run", description="Run a scene without a window and write its frames.")
    else:
        parser = _Parser(prog="softsim check", description="Validate and build a scene without running it.")
    parser.add_argument("scene", help="scene file (.toml)")
    if command == "run":
        parser.add_argument("--frames", type=int, required=True, metavar="N", help="number of frames (>= 1)")
        parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
        parser.add_argument("--no-vtu", action="store_true", help="write frames.csv only, no .vtu/.pvd")
        parser.add_argument("--progress", action="store_true",
                            help="draw the progress bar even when stderr is not a terminal")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a scene value by its key path, e.g. body.finger.cable.cable.value=5 "
                             "(repeatable)")
    parser.add_argument("--verbose", action="store_true", help="log details and show tracebacks")
    return parser


def parse_override(text: str) -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(KEY, VALUE)`` (whitespace around both stripped); UsageError otherwise."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--set expects KEY=VALUE (e.g. body.finger.cable.cable.value=5), got {text!r}")
    return key.strip(), value.strip()


def load_scene_with_overrides(path: str | Path, overrides: Sequence[str]):
    """Load and build the scene at ``path`` and apply the ``KEY=VALUE`` overrides in order.

    Raises:
        UsageError: an override is not KEY=VALUE.
        SceneError, MeshError, ParameterError: the scene or an override is invalid.
    """
    from mechanics.scene_runtime import Scene

    pairs = [parse_override(text) for text in overrides]  # syntax errors before the (slower) load
    scene = Scene.load(path)
    for key, value in pairs:
        scene.set(key, value)
    return scene


def _one_line(error: BaseException, scene_path: str | None) -> str:
    """The first line of the error's message, prefixed with the scene file name when it lacks it; the
    number of further problems when there are several."""
    lines = [line for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    message = lines[0]
    if scene_path is not None:
        name = Path(scene_path).name
        if not message.startswith(name) and not isinstance(error, UsageError):
            message = f"{name}: {message}"
    if len(lines) > 1:
        message += f" (and {len(lines) - 1} more problem(s); --verbose lists them)"
    return f"softsim: {message}"


def _report_error(error: BaseException, scene_path: str | None, verbose: bool, stderr: TextIO) -> None:
    stderr.write(_one_line(error, scene_path) + "\n")
    if verbose:
        stderr.write("".join(traceback.format_exception(error)))


@contextlib.contextmanager
def _terminate_as_interrupt():
    """Turn SIGTERM into KeyboardInterrupt while running, so that a killed run also removes its temporary
    files and writes its CSV once more (only possible in the main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report_internal(error: BaseException, verbose: bool, stderr: TextIO) -> None:
    first = (str(error).splitlines() or [""])[0]
    stderr.write(f"softsim: internal error: {type(error).__name__}: {first}"
                 f"{'' if verbose else ' (--verbose shows the traceback)'}\n")
    if verbose:
        stderr.write("".join(traceback.format_exception(error)))


def _configure_logging(verbose: bool) -> None:
    """Solver logs on stderr with ``--verbose``; otherwise errors only (the CLI reports failures itself)."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.ERROR,
                        format="softsim: %(levelname)s: %(name)s: %(message)s")


def summary(scene) -> str:
    """A short multi-line description of a built scene: bodies, nodes, tets, fixed nodes, constraints."""
    spec, simulation = scene.spec, scene.simulation
    problem = simulation.problem
    lines = [f"{Path(spec.source).name}: {spec.scene.name!r} ({spec.scene.units}, {spec.scene.mode})"]
    offsets = scene.node_offsets
    for index, (body, mesh) in enumerate(zip(spec.bodies, scene.meshes, strict=True)):
        material = body.material
        mine = (problem.fixed_nodes >= offsets[index]) & (problem.fixed_nodes < offsets[index + 1])
        lines.append(f"  body {body.name}: {mesh.n_points} nodes, {mesh.n_tets} tets, "
                     f"{int(mine.sum())} fixed nodes, {material.model} "
                     f"(youngModulus {material.youngModulus:g}, poissonRatio {material.poissonRatio:g})")
    constraints = [f"{c.name} ({type(c).__name__}, {c.n_rows} rows)" for c in simulation.constraints]
    lines.append(f"  constraints: {', '.join(constraints) if constraints else 'none'}")
    lines.append(f"  obstacles: {len(spec.obstacles)}")
    lines.append(f"  solvers: newton {spec.solver.newton.newton_iterations} iterations, linear "
                 f"{spec.solver.linear.type}, constraint {spec.solver.constraint.type}")
    lines += [f"  warning: {w}" for w in [*spec.warnings, *scene.warnings]]
    return "\n".join(lines)


def _invalid_input_errors() -> tuple[type[BaseException], ...]:
    import meshes
    from mechanics.errors import ParameterError
    from mechanics.scene import SceneError

    return (UsageError, SceneError, meshes.MeshError, ParameterError)


def main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         on_frame: Callable[[object, int, dict], None] | None = None) -> int:
    """``softsim run|check ...``; ``argv`` starts with the subcommand. Returns the exit code.

    ``on_frame`` is passed to :func:`run_frames` (for tests and embedding).
    """
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    argv = list(argv)
    command = argv[0] if argv else ""
    if command not in ("run", "check"):
        stderr.write(f"softsim: unknown headless command {command!r} (run, check)\n")
        return EXIT_INVALID
    verbose = "--verbose" in argv
    parser = build_parser(command)
    try:
        args = parser.parse_args(argv[1:])
    except UsageError as error:
        stderr.write(f"softsim {command}: {error}\n")
        return EXIT_INVALID
    except SystemExit as done:  # --help
        return int(done.code or 0)
    _configure_logging(args.verbose)
    try:
        if command == "run" and args.frames < 1:
            raise UsageError(f"--frames: {args.frames} is outside [1, inf)")
        if command == "run" and Path(args.out).exists() and not Path(args.out).is_dir():
            raise UsageError(f"--out: {args.out} exists and is not a directory")
        # the scene module reports every invalid input as a ValueError subclass (SceneError, MeshError,
        # ParameterError); while loading, any ValueError is the input's fault
        scene = load_scene_with_overrides(args.scene, args.overrides)
    except ValueError as error:
        _report_error(error, args.scene, verbose, stderr)
        return EXIT_INVALID
    except OSError as error:
        _report_error(error, args.scene, verbose, stderr)
        return EXIT_INVALID
    except Exception as error:  # a defect, not the input: still one line, the traceback with --verbose
        _report_internal(error, verbose, stderr)
        return EXIT_INTERNAL
    for warning in [*scene.spec.warnings, *scene.warnings]:
        stderr.write(f"softsim: warning: {warning}\n")
    if command == "check":
        stdout.write(summary(scene) + "\n")
        return EXIT_OK
    show_bar = args.progress or (hasattr(stderr, "isatty") and stderr.isatty())
    bar = ProgressBar(args.frames, stderr) if show_bar else None
    try:
        with _terminate_as_interrupt():
            result = run_frames(scene, args.frames, args.out, write_vtu=not args.no_vtu, on_frame=on_frame,
                                progress=bar)
    except KeyboardInterrupt:
        stderr.write("softsim: interrupted; the frames done so far are written\n")
        return EXIT_INTERRUPTED
    except _invalid_input_errors() as error:  # e.g. a mesh that cannot be written as given
        _report_error(error, args.scene, verbose, stderr)
        return EXIT_INVALID
    except OSError as error:  # output directory not writable, disk full, ...
        _report_error(error, None, verbose, stderr)
        return EXIT_INVALID
    except Exception as error:
        _report_internal(error, verbose, stderr)
        return EXIT_INTERNAL
    if result.diverged:
        stderr.write(f"softsim: {Path(args.scene).name}: frame {result.failed_frame} diverged: {result.message}; "
                     f"stopped, {result.frames_written} frame(s) written to {args.out}\n")
        return EXIT_DIVERGED
    vtu = "" if args.no_vtu else f", {result.frames_written} .vtu files and {PVD_NAME}"
    stdout.write(f"softsim: {result.frames_written} frames written to {args.out} ({CSV_NAME}{vtu})\n")
    return EXIT_OK


__all__ = [
    "BASE_COLUMNS",
    "EXIT_DIVERGED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "FrameTable",
    "ProgressBar",
    "RunResult",
    "UsageError",
    "build_parser",
    "frame_row",
    "load_scene_with_overrides",
    "main",
    "parse_override",
    "run_frames",
    "summary",
    "write_frame_vtu",
    "write_text_atomically",
]
