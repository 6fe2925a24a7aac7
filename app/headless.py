"""``softsim run`` and ``softsim check``: scenes without a window.

``softsim run SCENE --frames N --out DIR [--set KEY=VALUE ...] [--no-vtu] [--progress] [--verbose]`` writes
``DIR/frames.csv`` (one row per frame), ``DIR/frame_NNNN.vtu`` and ``DIR/result.pvd``;
``softsim check SCENE [--set KEY=VALUE ...]`` loads and builds the scene and prints a summary.

Exit statuses (:data:`EXIT_OK` ...): 0 every frame converged; 4 every frame ran but at least one did not
converge (a warning per frame on stderr, the first 10 listed, then the count); 3 a frame diverged (the run
stops; every frame written so far is kept); 2 invalid input (scene, mesh, ``--set``, arguments, output
directory); 1 an internal error (a defect of softsim); 130 interrupted (Ctrl-C or SIGTERM). An error is one
line on stderr; ``--verbose`` adds the details (every problem found, the traceback, the solver logs).

The output directory is new, empty, or one an earlier ``softsim run`` wrote (it holds the marker file
``.softsim-run``): that run's files are removed before the new one writes, temporary files of a killed run
included. Any other file in it makes the run refuse to start, and nothing is changed.

``frames.csv`` grows by one row per frame, each row appended with a single write, so that a reader (or a run
killed at any moment) sees whole rows only; its header is written before the first frame, and rewritten with
the rows when a frame reports an output not seen before. The ``.vtu`` files and ``result.pvd`` appear under
their final names only complete (temporary file, then ``os.replace``); the ``.pvd`` is rewritten after every
frame up to ``_EVERY_FRAME_ENTRIES`` frames, beyond that at most once per ``_LONG_RUN_FLUSH_SECONDS`` and at
the end, however the run ends.

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
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
from softsim.meshes.files import atomic_path, reason, temporary_target, write_text_atomically

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_INTERNAL = 1  # a defect of softsim itself (not the input)
EXIT_INVALID = 2
EXIT_DIVERGED = 3
EXIT_NOT_CONVERGED = 4  # every frame ran, at least one did not converge
EXIT_INTERRUPTED = 130

#: the exit statuses as ``softsim run --help`` and the README list them
EXIT_STATUS_HELP = """exit status:
  0    every frame converged
  4    every frame ran, at least one did not converge (its result is the best state reached; a warning per
       frame on stderr, the first 10, then the count)
  3    a frame diverged: the run stopped, the frames before it are written
  2    invalid input: scene, mesh, --set, arguments or output directory (refused before anything is
       written), or an output that cannot be written (disk full)
  1    internal error (a defect of softsim; --verbose shows the traceback)
  130  interrupted (Ctrl-C, SIGTERM): the frames done so far are written"""

#: the largest --frames
MAX_FRAMES = 100_000_000
#: the marker file of a run's output directory: its presence says the directory's files are softsim's
RUN_MARKER = ".softsim-run"
#: non-converged frames listed one by one on stderr; later ones are counted
_LISTED_NOT_CONVERGED = 10

#: the columns every ``frames.csv`` starts with; the actuator/effector outputs ``NAME.QUANTITY`` follow
BASE_COLUMNS = (
    "frame",
    "wall_ms",
    "converged",
    "status",
    "increments",
    "equilibrium_steps",
    "factorizations",
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

#: the .pvd is rewritten after every frame up to this many frames ...
_EVERY_FRAME_ENTRIES = 2000
#: ... and beyond it at most once per this many seconds (and at the end of the run)
_LONG_RUN_FLUSH_SECONDS = 2.0
#: a progress bar appears once a run has lasted this long [s]
_PROGRESS_DELAY_SECONDS = 1.0


class UsageError(ValueError):
    """Invalid command-line arguments (exit code 2)."""


# -- frames.csv -----------------------------------------------------------------------------------------
def _format_value(value) -> str:
    if isinstance(value, bool | np.bool_):
        return "1" if value else "0"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, str):
        return value
    return repr(float(value))


def _csv_line(cells: Sequence[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


class FrameCsv:
    """``frames.csv`` written row by row: ``append(row)`` adds one line with a single ``write`` call on a
    descriptor opened for appending, so the file never ends in a part of a row (a write that fails half-way,
    disk full, is cut back). The columns grow when a row has a name not seen before: the file is then
    rewritten (header and rows, missing values as empty cells) through a temporary file and ``os.replace``.

    ``columns`` starts with :data:`BASE_COLUMNS`, then ``output_names``; ``rows`` counts the rows written.
    """

    def __init__(self, path: str | Path, output_names: Sequence[str] = ()) -> None:
        self.path = Path(path)
        self.columns: list[str] = list(BASE_COLUMNS) + [n for n in output_names if n not in BASE_COLUMNS]
        self.rows = 0
        self._descriptor: int | None = None
        write_text_atomically(self.path, _csv_line(self.columns))
        self._open()

    def _open(self) -> None:
        self._descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
                                   | getattr(os, "O_BINARY", 0))
        self._size = os.fstat(self._descriptor).st_size

    def append(self, row: dict[str, object]) -> None:
        new = [name for name in row if name not in self.columns]
        if new:
            self._add_columns(new)
        data = _csv_line(["" if row.get(c) is None else _format_value(row[c]) for c in self.columns]).encode()
        written = 0
        try:
            while written < len(data):  # one call for a regular file, unless the disk fills up
                written += os.write(self._descriptor, data[written:])
        except BaseException:
            if 0 < written < len(data):
                with contextlib.suppress(OSError):
                    os.ftruncate(self._descriptor, self._size)
            raise
        self._size += len(data)
        self.rows += 1

    def _add_columns(self, names: list[str]) -> None:
        self.close()
        columns = self.columns + names
        padding = "," * len(names)
        with atomic_path(self.path) as temporary:
            with open(self.path, encoding="utf-8", newline="") as old, \
                    open(temporary, "w", encoding="utf-8", newline="") as new:
                old.readline()  # the header (a column name may be quoted, but holds no line break)
                new.write(_csv_line(columns))
                for line in old:  # rows hold numbers and empty cells only
                    new.write(line.rstrip("\n") + padding + "\n")
        self.columns = columns
        self._open()

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def frame_row(index: int, wall_seconds: float, report, simulation, outputs: dict[str, float]) -> dict:
    """One CSV row from a successful frame's :class:`~mechanics.frame_step.FrameReport`.

    ``converged`` and ``status`` are the frame's own (:attr:`FrameReport.status`: ok, limited, not_converged);
    ``increments``, ``equilibrium_steps`` and ``factorizations`` are those of the constrained equilibrium of a
    static frame (empty without one). ``newton_*`` describe the frame's nonlinear solve: the free Newton solve
    of a static frame (``newton_residual`` is its last residual norm ``|R|``, force unit; ``newton_converged``
    is the equilibrium's convergence when the frame has one, so it never reads 1 for a frame that did not
    converge) or the implicit step of a dynamic frame (its last velocity correction norm); a frame without
    constraint rows has ``constraint_iterations`` 0, ``constraint_error`` 0 and ``constraint_converged`` 1.
    ``max_displacement`` is ``max_i |x_i - X_i|`` (length unit).
    """
    solve = report.dynamic if report.dynamic is not None else report.newton
    norms = report.residual_norms
    constraint = report.constraint
    equilibrium = report.equilibrium
    row: dict[str, object] = {
        "frame": index,
        "wall_ms": 1e3 * wall_seconds,
        "converged": bool(report.converged),
        "status": report.status,
        "increments": None if equilibrium is None else int(equilibrium.increments),
        "equilibrium_steps": None if equilibrium is None else int(equilibrium.steps),
        "factorizations": None if equilibrium is None else int(equilibrium.iterations),
        "newton_iterations": report.iterations,
        "newton_converged": bool(equilibrium.converged) if equilibrium is not None else (
            solve is not None and bool(solve.converged)),
        "newton_residual": float(norms[-1]) if norms.size else float("nan"),
        "constraint_iterations": 0 if constraint is None else int(constraint.currentIterations),
        "constraint_error": 0.0 if constraint is None else float(constraint.currentError),
        "constraint_converged": True if constraint is None else bool(constraint.converged),
        "max_displacement": float(np.max(np.linalg.norm(simulation.x - simulation.X, axis=1), initial=0.0)),
    }
    row.update(outputs)
    return row


def write_frame_vtu(path: Path, x: np.ndarray, rest_positions: np.ndarray, tets: np.ndarray,
                    von_mises: np.ndarray, point_data: dict[str, np.ndarray] | None = None) -> None:
    """A deformed mesh as a .vtu, atomically: points ``x`` (n, 3), cells ``tets`` (m, 4); point data
    ``displacement`` (n, 3) ``x - rest_positions``, ``displacement_magnitude`` (n,) and ``point_data``; cell data
    ``von_mises`` (m,). Used by ``softsim run`` and by the window's export."""
    from softsim import meshes  # imported here so that ``softsim check`` does not pay for meshio

    displacement = x - rest_positions
    meshes.write_vtu(path, x, tets, point_data={"displacement": displacement,
                                                "displacement_magnitude": np.linalg.norm(displacement, axis=1),
                                                **(point_data or {})},
                     cell_data={"von_mises": np.nan_to_num(von_mises)})


# -- progress -------------------------------------------------------------------------------------------
def progress_bar(total: int, stream: TextIO, *, delay: float = _PROGRESS_DELAY_SECONDS):
    """A tqdm bar of ``total`` frames on ``stream``, drawn once the run has lasted ``delay`` seconds."""
    from tqdm import tqdm

    return tqdm(total=total, file=stream, delay=delay, unit="frame", dynamic_ncols=True, leave=True)


# -- output directory -----------------------------------------------------------------------------------
_RUN_FILE = re.compile(rf"^({re.escape(CSV_NAME)}|{re.escape(PVD_NAME)}|frame_\d{{4,}}\.vtu|{re.escape(RUN_MARKER)})$")


def _is_run_file(entry: Path) -> bool:
    """A file a run writes (or the temporary file of one): the names above, a plain file, not a link."""
    name = temporary_target(entry.name) or entry.name
    return bool(_RUN_FILE.match(name)) and entry.is_file() and not entry.is_symlink()


def _csv_of_a_run(path: Path) -> bool:
    """``path`` starts with the header of a softsim ``frames.csv`` (a run written before the marker file)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False
    return head.startswith(",".join(BASE_COLUMNS).encode())


def previous_run_files(out_dir: str | Path) -> list[Path]:
    """The files of an earlier run in ``out_dir`` (none for a missing or empty directory), which the next run
    removes: :data:`RUN_MARKER`, ``frames.csv``, ``frame_NNNN.vtu``, ``result.pvd`` and the temporary files of
    a killed run.

    Raises:
        UsageError: ``out_dir`` is not a directory, or holds anything else (another file, a directory, a
            link), or run files without the marker file or a softsim ``frames.csv`` header (a user's own
            ``frames.csv``); nothing is changed.
    """
    out_dir = Path(out_dir)
    if not out_dir.exists() and not out_dir.is_symlink():
        return []
    if not out_dir.is_dir():
        raise UsageError(f"--out: {out_dir} exists and is not a directory")
    try:
        entries = sorted(out_dir.iterdir())
    except OSError as error:
        raise UsageError(f"--out: cannot list the directory {out_dir} ({reason(error)}); choose a directory you "
                         f"can read and write") from None
    foreign = [entry.name for entry in entries if not _is_run_file(entry)]
    marked = (out_dir / RUN_MARKER).is_file() or _csv_of_a_run(out_dir / CSV_NAME)
    if not foreign and not marked:  # only temporary files can be left without either
        foreign = [entry.name for entry in entries if temporary_target(entry.name) is None]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise UsageError(f"--out: {out_dir} is not empty and holds files softsim run did not write ({shown}); "
                         f"give a new or empty directory, or the directory of an earlier run (its files are "
                         f"replaced)")
    return entries


class OutputError(OSError):
    """An output file that could not be written (disk full, no permission...): the message names the file."""

    def __init__(self, path: Path, error: OSError, done: str = "") -> None:
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path, self.done = path, done

    def __str__(self) -> str:
        return f"cannot write {self.path}: {reason(self)}{self.done}"


@contextlib.contextmanager
def _writing(path: Path, done: Callable[[], str] = lambda: ""):
    """Turn an OSError while writing ``path`` into an :class:`OutputError` naming it (``done()``: what is
    complete on disk, appended to the message)."""
    try:
        yield
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(path, error, done()) from error


@contextlib.contextmanager
def hold_out_dir(out_dir: str | Path):
    """Hold an exclusive lock on the directory ``out_dir`` (which exists) while the block runs, so that a second
    ``softsim run`` into it is refused instead of removing or mixing files with this one: an advisory ``flock``
    on the directory itself, released by the system when the process ends, however it ends. Where ``fcntl``
    does not exist (Windows), no lock is taken.

    Raises:
        UsageError: another process holds the lock.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    descriptor = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"--out: another softsim run is writing into {out_dir} now; wait until it ends, or "
                             f"choose another --out") from None
        yield
    finally:
        os.close(descriptor)  # closing the descriptor releases the lock


def prepare_out_dir(out_dir: str | Path, scene_source: str = "") -> None:
    """Make ``out_dir`` ready for a run: created when missing; an earlier run's files removed (the marker
    last, so that a run killed meanwhile still leaves a directory recognised as a run); the marker written.

    Raises:
        UsageError: as :func:`previous_run_files` (then nothing is changed).
    """
    out_dir = Path(out_dir)
    previous = previous_run_files(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for entry in sorted(previous, key=lambda entry: entry.name == RUN_MARKER):
        entry.unlink(missing_ok=True)
    source = f"scene: {scene_source}\n" if scene_source else ""
    write_text_atomically(out_dir / RUN_MARKER,
                          f"This directory holds the output of softsim run ({CSV_NAME}, frame_NNNN.vtu, {PVD_NAME}).\n"
                          f"The next softsim run into it replaces its files.\n{source}")


# -- running --------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run_frames` did: ``frames_written`` good frames (CSV rows), the frame that failed
    (``failed_frame``, None when every frame succeeded) with the solver's ``message``, the frames that ran
    but did not converge (``not_converged`` of them, the first at ``first_not_converged``), and the files
    written."""

    frames_written: int
    failed_frame: int | None = None
    message: str = ""
    files: list[Path] = field(default_factory=list)
    not_converged: int = 0
    first_not_converged: int | None = None
    #: inverse mode: why the last frame's effectors are not at their goals (empty: reached, or forward mode)
    goal_not_reached: str = ""

    @property
    def diverged(self) -> bool:
        return self.failed_frame is not None


class _Outputs:
    """The files of one run in ``out_dir``: the CSV grows by a row per frame; the .pvd is rewritten
    atomically by ``flush_pvd``."""

    def __init__(self, out_dir: Path, output_names: Sequence[str], write_vtu: bool,
                 time_step: float | None) -> None:
        self.out_dir = out_dir
        self.write_vtu = write_vtu
        self.time_step = time_step
        self.pvd_entries: list[tuple[float, str]] = []
        self.last_flush = -math.inf
        self.dirty = False
        self.rows = 0
        with _writing(out_dir / CSV_NAME):
            self.csv = FrameCsv(out_dir / CSV_NAME, output_names)
        if write_vtu:
            self.flush_pvd()  # an empty collection exists from the start

    def _done(self) -> str:
        return f" ({self.rows} frame(s) are complete in {CSV_NAME}); free some space or choose another --out"

    def add_frame(self, index: int, row: dict, simulation) -> None:
        if self.write_vtu:
            name = f"frame_{index:04d}.vtu"
            with _writing(self.out_dir / name, self._done):
                write_frame_vtu(self.out_dir / name, simulation.x, simulation.X, simulation.tets,
                                simulation.von_mises())
            self.pvd_entries.append((index if self.time_step is None else index * self.time_step, name))
            self.dirty = True
        with _writing(self.out_dir / CSV_NAME, self._done):
            self.csv.append(row)
        self.rows += 1
        now = time.perf_counter()
        if self.dirty and (len(self.pvd_entries) <= _EVERY_FRAME_ENTRIES
                           or now - self.last_flush >= _LONG_RUN_FLUSH_SECONDS):
            self.flush_pvd()

    def flush_pvd(self) -> None:
        from softsim import meshes
        with _writing(self.out_dir / PVD_NAME, self._done):
            meshes.write_pvd(self.out_dir / PVD_NAME, self.pvd_entries)
        self.last_flush = time.perf_counter()
        self.dirty = False

    def close(self) -> None:
        try:
            if self.dirty:
                self.flush_pvd()
        finally:
            self.csv.close()

    def files(self) -> list[Path]:
        names = [CSV_NAME] + ([name for _t, name in self.pvd_entries] + [PVD_NAME] if self.write_vtu else [])
        return [self.out_dir / name for name in names]


def _goal_not_reached(report, scene) -> str:
    """Inverse mode: the last frame's distance to the goals and what stops the actuators, when the goals are not
    reached (farther than the inverse model's tolerance); empty otherwise."""
    inverse = getattr(report, "inverse", None)
    if inverse is None or inverse.reached:
        return ""
    unit = "mm" if scene.spec.scene.units == "mm-kg-s" else "m"
    limits = ", ".join(f"{name}.{key}" for name, key in inverse.limiting)
    return (f"the effector goal is not reached: after frame {report.frame} an effector is {inverse.goal_distance:.4g} "
            f"{unit} from its goal" + (f" (the actuators stop at {limits})" if limits else "")
            + "; a goal out of reach, or more frames needed")


def _one_line_message(text: str) -> str:
    return " ".join(text.split()) or "did not converge"


def run_frames(scene, frames: int, out_dir: str | Path, *, write_vtu: bool = True,
               on_frame: Callable[[object, int, dict], None] | None = None,
               progress=None,
               on_not_converged: Callable[[int, str], None] | None = None) -> RunResult:
    """Run ``frames`` frames of ``scene`` (a :class:`mechanics.scene_runtime.Scene`) and write the outputs.

    Parameters
    ----------
    scene : the loaded scene, with any overrides applied.
    frames : number of frames, in [1, MAX_FRAMES].
    out_dir : output directory: created with its parents, or empty, or an earlier run's (whose files are
        removed first, see :func:`prepare_out_dir`); any other content raises UsageError before anything
        is written.
    write_vtu : write ``frame_NNNN.vtu`` per frame and ``result.pvd``.
    on_frame : called as ``on_frame(scene, index, row)`` after frame ``index`` is written (its files are
        complete on disk); it may change the scene (live edits by key path, as the GUI does between frames).
    progress : a tqdm bar updated after every frame.
    on_not_converged : called as ``on_not_converged(index, message)`` for every frame that ran but did not
        converge (its row is written; ``message`` is the solver's, on one line).

    The run stops at the first frame whose report is not ``ok`` (diverged): the frames before it stay
    written and the result names the frame and the solver's message. The CSV holds whole rows only at any
    moment; the .pvd is complete under its final name and written once more when the run ends, however it
    ends.
    """
    frames = int(frames)
    if not 1 <= frames <= MAX_FRAMES:
        raise UsageError(f"--frames: {frames} is outside [1, {MAX_FRAMES}]")
    out_dir = Path(out_dir)
    previous_run_files(out_dir)  # a directory of other files is refused before anything is created
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out: cannot create the directory {out_dir} ({reason(error)}); choose a directory "
                         f"you can write") from None
    with hold_out_dir(out_dir):
        with _writing(out_dir / RUN_MARKER):
            prepare_out_dir(out_dir, str(getattr(scene.spec, "source", "")))
        return _run_frames(scene, frames, out_dir, write_vtu, on_frame, progress, on_not_converged)


def _run_frames(scene, frames: int, out_dir: Path, write_vtu: bool, on_frame, progress,
                on_not_converged) -> RunResult:
    """:func:`run_frames` once ``out_dir`` is ready and locked."""
    simulation = scene.simulation
    dynamic = getattr(scene.spec.scene, "mode", "static") == "dynamic"
    outputs = _Outputs(out_dir, list(scene.outputs()), write_vtu, scene.spec.scene.dt if dynamic else None)
    result = RunResult(frames_written=0)
    try:
        for _ in range(frames):
            started = time.perf_counter()
            report = scene.step()
            wall = time.perf_counter() - started
            if not report.ran:
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
            if not report.converged:
                result.not_converged += 1
                if result.first_not_converged is None:
                    result.first_not_converged = index
                if on_not_converged is not None:
                    on_not_converged(index, _one_line_message(report.message))
            if progress is not None:
                progress.update(result.frames_written - progress.n)
            if on_frame is not None:
                on_frame(scene, index, row)
    finally:
        try:
            outputs.close()
        finally:
            if progress is not None:
                progress.close()
    result.files = outputs.files()
    result.goal_not_reached = _goal_not_reached(report if result.frames_written else None, scene)
    return result


# -- command line ---------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing the usage and exiting (the CLI prints one line)."""

    def error(self, message: str):
        raise UsageError(message)


def build_parser(command: str) -> argparse.ArgumentParser:
    """The argument parser of ``softsim run`` or ``softsim check``."""
    if command == "run":
        parser = _Parser(prog="softsim run", description="Run a scene without a window and write its frames.",
                         epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    else:
        parser = _Parser(prog="softsim check", description="Validate and build a scene without running it.")
    parser.add_argument("scene", help="scene file (.toml), or a SOFA scene (.py, .pyscn, .scn) imported on the fly")
    if command == "run":
        parser.add_argument("--frames", type=int, required=True, metavar="N",
                            help=f"number of frames, 1 to {MAX_FRAMES}")
        parser.add_argument("--out", required=True, metavar="DIR",
                            help="output directory: new, empty, or an earlier run's (whose files are replaced)")
        parser.add_argument("--no-vtu", action="store_true", help="write frames.csv only, no .vtu/.pvd")
        parser.add_argument("--progress", action="store_true",
                            help="draw the progress bar even when stderr is not a terminal")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a scene value by its key path, e.g. body.finger.cable.cable.value=5 "
                             "(repeatable)")
    if "--allow-scripts" not in parser._option_string_actions:
        parser.add_argument("--allow-scripts", action="store_true",
                            help="run the scene's Python code (a SOFA .py scene's createScene and controllers)")
    parser.add_argument("--verbose", action="store_true", help="log details and show tracebacks")
    return parser


def parse_override(text: str) -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(KEY, VALUE)`` (whitespace around both stripped); UsageError otherwise, and for an
    empty VALUE (which would silently reset the key to its default).

    The one ``--set`` parser of ``softsim``, ``softsim run`` and ``softsim check``. The value is checked
    when it is set (:func:`mechanics.scene.set_value`: one TOML value, nothing after it).
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--set expects KEY=VALUE (e.g. body.finger.cable.cable.value=5), got {text!r}")
    if not value.strip():
        raise UsageError(f"--set {key.strip()}: no value after '='; give one (a string value in quotes if it has "
                         f"spaces), or leave this --set out to keep the scene's value")
    return key.strip(), value.strip()


def load_scene_with_overrides(path: str | Path, overrides: Sequence[str], *, allow_scripts: bool = False):
    """Load and build the scene at ``path`` and apply the ``KEY=VALUE`` overrides in order. A SOFA scene
    (``.py``, ``.pyscn``, ``.scn``) is imported on the fly (:mod:`app.sofa_import`); its import report is the
    scene's first warning. A Python one runs only with ``allow_scripts`` (its createScene is code).

    Raises:
        UsageError: an override is not KEY=VALUE.
        SceneError, MeshError, ParameterError: the scene or an override is invalid.
    """
    from softsim.app.sofa_import import is_sofa_scene, load_sofa_scene
    from softsim.mechanics.scene_runtime import Scene

    pairs = [parse_override(text) for text in overrides]  # syntax errors before the (slower) load
    if is_sofa_scene(path):
        if Path(path).suffix.lower() in (".py", ".pyscn") and not allow_scripts:
            raise UsageError(f"{Path(path).name} is a SOFA Python scene: opening it runs its createScene (and its "
                             f"controllers); pass --allow-scripts to allow that, or import it first (softsim import)")
        spec, report = load_sofa_scene(path, allow_scripts=allow_scripts)
        scene = Scene(spec, allow_scripts=allow_scripts)
        scene.warnings.insert(0, report.text())
    else:
        scene = Scene.load(path, allow_scripts=allow_scripts)
    for key, value in pairs:
        scene.set(key, value)
    return scene


def scripts_refused(scene) -> str:
    """Why ``softsim run`` refuses a scene with script controllers without ``--allow-scripts``."""
    names = ", ".join(f"{c.name} ({c.script})" for c in scene.spec.controllers if c.script is not None)
    return (f"{Path(scene.spec.source).name}: the scene's controllers run Python scripts: {names}; a script is a "
            "program with your rights: pass --allow-scripts to run it (only for scenes you trust)")


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


@contextlib.contextmanager
def _warnings_to_log():
    """Python warnings (numpy's overflow and invalid-value warnings of a diverging solve) go to the log, shown
    with --verbose: the frame's report says what went wrong, in one line."""
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)


class _NotConvergedWarnings:
    """Writes a warning per frame that did not converge, the first ``_LISTED_NOT_CONVERGED`` ones; later ones
    are only counted (the summary at the end gives the total)."""

    def __init__(self, stderr: TextIO, bar) -> None:
        self.stderr, self.bar, self.count = stderr, bar, 0

    def __call__(self, index: int, message: str) -> None:
        self.count += 1
        if self.count > _LISTED_NOT_CONVERGED + 1:
            return
        if self.count <= _LISTED_NOT_CONVERGED:
            text = f"softsim: warning: frame {index} did not converge: {message}"
        else:
            text = "softsim: warning: more frames did not converge; they are counted, not listed"
        if self.bar is not None:
            self.bar.write(text, file=self.stderr)  # above the bar, which is drawn again below it
        else:
            self.stderr.write(text + "\n")
            self.stderr.flush()


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
    from softsim.mechanics.errors import ParameterError
    from softsim.mechanics.scene import SceneError

    from softsim import meshes

    return (UsageError, SceneError, meshes.MeshError, ParameterError)


def _input_too_large(error: BaseException) -> str:
    """The message of a RecursionError or MemoryError raised while reading the input."""
    if isinstance(error, RecursionError):
        return "the input is nested too deeply to read"
    return "not enough memory to load the scene and its meshes"


def main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         on_frame: Callable[[object, int, dict], None] | None = None) -> int:
    """``softsim run|check ...``; ``argv`` starts with the subcommand. Returns the exit status
    (:data:`EXIT_STATUS_HELP`).

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
    with _warnings_to_log():
        return _main(command, args, verbose, stdout, stderr, on_frame)


def _main(command: str, args, verbose: bool, stdout: TextIO, stderr: TextIO,
          on_frame: Callable[[object, int, dict], None] | None) -> int:
    try:
        if command == "run":
            if not 1 <= args.frames <= MAX_FRAMES:
                raise UsageError(f"--frames: {args.frames} is outside [1, {MAX_FRAMES}]")
            previous_run_files(args.out)  # refuse a directory of other files before the (slower) load
            if Path(args.out).is_dir():
                with hold_out_dir(args.out):  # ... and one another run is writing into
                    pass
        # the scene module reports every invalid input as a ValueError subclass (SceneError, MeshError,
        # ParameterError); while loading, any ValueError is the input's fault
        scene = load_scene_with_overrides(args.scene, args.overrides,
                                          allow_scripts=getattr(args, "allow_scripts", False))
        if command == "run" and scene.scripts and not getattr(args, "allow_scripts", False):
            raise UsageError(scripts_refused(scene))
    except (ValueError, OSError) as error:
        _report_error(error, args.scene, verbose, stderr)
        return EXIT_INVALID
    except (RecursionError, MemoryError) as error:
        _report_error(ValueError(_input_too_large(error)), args.scene, verbose, stderr)
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
    bar = progress_bar(args.frames, stderr) if show_bar else None
    not_converged = _NotConvergedWarnings(stderr, bar)
    try:
        with _terminate_as_interrupt():
            result = run_frames(scene, args.frames, args.out, write_vtu=not args.no_vtu, on_frame=on_frame,
                                progress=bar, on_not_converged=not_converged)
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
    name = Path(args.scene).name
    if result.diverged:
        stderr.write(f"softsim: {name}: frame {result.failed_frame} diverged: {result.message}; "
                     f"stopped, {result.frames_written} frame(s) written to {args.out}\n")
        return EXIT_DIVERGED
    if result.goal_not_reached:
        stderr.write(f"softsim: warning: {name}: {result.goal_not_reached}\n")
    vtu = "" if args.no_vtu else f", {result.frames_written} .vtu files and {PVD_NAME}"
    stdout.write(f"softsim: {result.frames_written} frames written to {args.out} ({CSV_NAME}{vtu})\n")
    if result.not_converged:
        stderr.write(f"softsim: {name}: {result.not_converged} of {result.frames_written} frame(s) did not "
                     f"converge (the first: frame {result.first_not_converged}); their rows hold the best "
                     f"state reached\n")
        return EXIT_NOT_CONVERGED
    return EXIT_OK


__all__ = [
    "BASE_COLUMNS",
    "EXIT_DIVERGED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NOT_CONVERGED",
    "EXIT_OK",
    "EXIT_STATUS_HELP",
    "MAX_FRAMES",
    "RUN_MARKER",
    "FrameCsv",
    "OutputError",
    "hold_out_dir",
    "progress_bar",
    "RunResult",
    "UsageError",
    "build_parser",
    "frame_row",
    "load_scene_with_overrides",
    "main",
    "parse_override",
    "prepare_out_dir",
    "previous_run_files",
    "run_frames",
    "summary",
    "write_frame_vtu",
    "write_text_atomically",
]
