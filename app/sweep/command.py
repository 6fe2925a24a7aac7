"""``softsim sweep SCENE --vary KEY=SPEC [--vary ...] --frames N --out DIR [options]``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from softsim.app.headless import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_CONVERGED,
    EXIT_OK,
    _Parser,
    parse_override,
)
from softsim.app.run_output import UsageError
from softsim.app.sweep.plan import parse_varies

__all__ = ["main", "build_parser", "EXIT_STATUS_HELP"]

#: the statuses of ``softsim run`` (app.headless); 4 here means some samples are not ok
EXIT_SAMPLES_FAILED = EXIT_NOT_CONVERGED
EXIT_STATUS_HELP = """exit status:
  0    every sample ran and converged (status ok)
  4    the sweep is complete, some samples are not ok (not_converged, diverged, invalid, error: see status)
  2    invalid input (scene, --vary, --set, --samples, --out, a cluster that cannot be reached), refused
       before any sample runs
  1    internal error (--verbose shows the traceback)
  130  interrupted: the samples finished so far are in results.parquet; the same command resumes"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="softsim sweep", description="Run a scene many times with varied values, on Dask.",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_STATUS_HELP)
    parser.add_argument("scene", help="scene file (.toml)")
    parser.add_argument("--vary", action="append", default=[], metavar="KEY=SPEC",
                        help="a key path and its values: start:stop:num (both ends included) or a comma list "
                             "1,2,5; several --vary make the full grid")
    parser.add_argument("--samples", metavar="FILE.csv", help="explicit samples: a CSV whose columns are key paths")
    parser.add_argument("--frames", type=int, required=True, metavar="N", help="frames per sample")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="results.parquet goes here; a DIR holding the same sweep is resumed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="a value set on every sample before its own (repeatable)")
    parser.add_argument("--workers", type=int, metavar="N", help="local cluster size (default: the cores)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, e.g. tcp://host:8786")
    parser.add_argument("--keep-frames", action="store_true", help="keep each sample's frames.csv in DIR/samples/ID")
    parser.add_argument("--vtu", action="store_true", help="with --keep-frames, also each frame's .vtu")
    parser.add_argument("--grad-output", action="append", default=[], metavar="NAME",
                        help="with --grad-wrt: the exact gradient of this output at each sample's last frame as "
                             "columns d(NAME)/d(KEY) (repeatable; docs/gradients.md)")
    parser.add_argument("--grad-wrt", action="append", default=[], metavar="KEY",
                        help="with --grad-output: a parameter key of the gradient columns (repeatable)")
    parser.add_argument("--progress", action="store_true", help="a progress bar on stderr (default on a terminal)")
    parser.add_argument("--verbose", action="store_true", help="log details and tracebacks")
    return parser


def main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """``argv`` without the word ``sweep``; returns the exit status."""
    from softsim.app.sweep.engine import RESULTS_NAME, sweep

    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        stderr.write(f"softsim sweep: {error}\n")
        return EXIT_INVALID
    except SystemExit as done:  # --help
        return int(done.code or 0)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if not args.verbose:  # Dask's scheduler and nannies log every start and stop at INFO
        import distributed  # noqa: F401 - it sets its loggers' levels when imported: set ours after

        for name in ("distributed", "dask"):
            logging.getLogger(name).setLevel(logging.ERROR)
    bar = None
    try:
        vary = parse_varies(args.vary)
        sets = [parse_override(text) for text in args.overrides]

        def started(client) -> None:
            nonlocal bar
            stdout.write(f"softsim sweep: Dask dashboard {client.dashboard_link}\n")
            stdout.flush()
            if args.progress or (hasattr(stderr, "isatty") and stderr.isatty()):
                from tqdm import tqdm

                bar = tqdm(file=stderr, unit="sample", dynamic_ncols=True, leave=True)

        def arrived(_row) -> None:
            if bar is not None:
                bar.update(1)

        results = sweep(args.scene, vary or None, args.frames, samples=args.samples, sets=sets, out=args.out,
                        keep_frames=args.keep_frames, vtu=args.vtu, workers=args.workers,
                        scheduler=args.scheduler, on_start=started, on_result=arrived,
                        gradients=(args.grad_output, args.grad_wrt) if args.grad_output or args.grad_wrt else None)
    except KeyboardInterrupt:
        stderr.write(f"softsim sweep: interrupted; the samples done are in {args.out}/{RESULTS_NAME}; "
                     "the same command resumes\n")
        return EXIT_INTERRUPTED
    except (ValueError, OSError) as error:  # SweepError, SceneError, UsageError, MeshError, files
        stderr.write(f"softsim sweep: {' '.join(str(error).split())}\n")
        return EXIT_INVALID
    except Exception as error:  # a defect
        if args.verbose:
            import traceback

            traceback.print_exc(file=stderr)
        stderr.write(f"softsim sweep: internal error: {type(error).__name__}: {error}\n")
        return EXIT_INTERNAL
    finally:
        if bar is not None:
            bar.close()
    counts = Counter(results["status"])
    stdout.write(f"softsim sweep: {len(results)} samples ("
                 + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
                 + f") in {args.out}/{RESULTS_NAME}\n")
    return EXIT_OK if set(counts) <= {"ok"} else EXIT_SAMPLES_FAILED
