"""The files of a headless run and the loop that writes them: ``frames.csv``, ``frame_NNNN.vtu``, ``result.pvd``,
and the rules of the output directory. ``softsim run`` (:mod:`app.headless`), the sweep's samples and the
window's recordings use them.

The output directory is new, empty, or one an earlier ``softsim run`` wrote (it holds the marker file
``.softsim-run``): that run's files are removed before the new one writes, temporary files of a killed run
included. Any other file in it makes the run refuse to start, and nothing is changed.

``frames.csv`` grows by one row per frame, each row appended with a single write, so that a reader (or a run
killed at any moment) sees whole rows only; its header is written before the first frame, and rewritten with
the rows when a frame reports an output not seen before. The ``.vtu`` files and ``result.pvd`` appear under
their final names only complete (temporary file, then ``os.replace``); the ``.pvd`` is rewritten after every
frame up to ``_EVERY_FRAME_ENTRIES`` frames, beyond that at most once per ``_LONG_RUN_FLUSH_SECONDS`` and at
the end, however the run ends.

This module never imports Qt, VTK or pyvista.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from softsim.meshes.files import atomic_path, reason, temporary_target, write_text_atomically

logger = logging.getLogger(__name__)

__all__ = [
    "BASE_COLUMNS",
    "CSV_NAME",
    "MAX_FRAMES",
    "PVD_NAME",
    "RUN_MARKER",
    "FrameCsv",
    "OutputError",
    "RunResult",
    "UsageError",
    "frame_row",
    "hold_out_dir",
    "prepare_out_dir",
    "previous_run_files",
    "progress_bar",
    "run_frames",
    "write_frame_vtu",
    "write_text_atomically",
]

MAX_FRAMES = 100_000_000
#: the marker file of a run's output directory: its presence says the directory's files are softsim's

RUN_MARKER = ".softsim-run"
#: non-converged frames listed one by one on stderr; later ones are counted

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
    """One CSV row from a successful frame's :class:`~mechanics.frame_report.FrameReport`.

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
        "constraint_iterations": 0 if constraint is None else int(constraint.iterations),
        "constraint_error": 0.0 if constraint is None else float(constraint.error),
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
