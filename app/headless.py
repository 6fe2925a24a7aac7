"""``softsim run`` and ``softsim check``: scenes without a window.

``softsim run SCENE --frames N --out DIR [--set KEY=VALUE ...] [--no-vtu] [--progress] [--verbose]`` writes
``DIR/frames.csv`` (one row per frame), ``DIR/frame_NNNN.vtu`` and ``DIR/result.pvd``;
``softsim check SCENE [--set KEY=VALUE ...]`` loads and builds the scene and prints a summary.

Exit statuses (:data:`EXIT_OK` ...): 0 every frame converged; 4 every frame ran but at least one did not
converge (a warning per frame on stderr, the first 10 listed, then the count); 3 a frame diverged (the run
stops; every frame written so far is kept); 2 invalid input (scene, mesh, ``--set``, arguments, output
directory); 1 an internal error (a defect of softsim); 130 interrupted (Ctrl-C or SIGTERM). An error is one
line on stderr; ``--verbose`` adds the details (every problem found, the traceback, the solver logs).

The output directory's rules and the files' formats are :mod:`app.run_output`'s.

This module never imports Qt, VTK or pyvista (a test runs ``softsim run`` and checks ``sys.modules``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from softsim.app.run_output import (
    CSV_NAME,
    MAX_FRAMES,
    PVD_NAME,
    UsageError,
    hold_out_dir,
    previous_run_files,
    progress_bar,
    run_frames,
)

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

#: non-converged frames listed one by one on stderr; later ones are counted
_LISTED_NOT_CONVERGED = 10


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
    from softsim import meshes
    from softsim.mechanics.errors import ParameterError
    from softsim.mechanics.scene import SceneError

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
    "EXIT_DIVERGED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NOT_CONVERGED",
    "EXIT_OK",
    "EXIT_STATUS_HELP",
    "build_parser",
    "load_scene_with_overrides",
    "main",
    "parse_override",
    "summary",
]
