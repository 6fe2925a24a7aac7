"""``softsim grad SCENE --output NAME ... --wrt KEY ... [--set KEY=VALUE ...] [--frames N] [--json FILE]``:
exact gradients of outputs with respect to scene parameters at the last of N static frames (docs/gradients.md).

Prints one row per output and parameter: the output's value, the parameter's, d output / d parameter and the
normalised sensitivity (d output / d parameter x parameter / output). Never imports Qt or VTK.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TextIO

EXIT_OK = 0
EXIT_INVALID = 2  # bad arguments, scene, output or parameter name
EXIT_FAILED = 3  # the last frame failed
EXIT_NOT_CONVERGED = 4  # the last frame did not converge: no gradient
EXIT_NOT_DIFFERENTIABLE = 5  # the equilibrium is a non-differentiable point (an edge of the active set, sliding)

EXIT_HELP = """exit status:
  0  gradients printed
  2  invalid input (scene, --set, --output or --wrt name)
  3  the last frame failed
  4  the last frame did not converge: it has no gradient
  5  the equilibrium is a non-differentiable point (a contact or bounded actuator on the edge of changing
     state, or a sliding friction contact)
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="softsim grad", description="Exact gradients of outputs with respect to scene "
                                "parameters at a converged static frame.", epilog=EXIT_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scene", help="scene file (.toml)")
    p.add_argument("--output", action="append", required=True, metavar="NAME",
                   help="an output (cable.displacement, tip.y, cavity.volumeGrowth, contact.normalForce...) or a "
                        "nodal probe node[i].x/.y/.z/.displacement (repeatable)")
    p.add_argument("--wrt", action="append", required=True, metavar="KEY",
                   help="a parameter key path (body.finger.material.youngModulus, scene.gravity.y, "
                        "body.finger.cable.cable.value, obstacle.floor.point.y, body.B.cable.C.points[k].x...) "
                        "(repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="change a scene value before solving (repeatable)")
    p.add_argument("--frames", type=int, default=1, metavar="N", help="static frames to solve first (default 1)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the gradients as JSON")
    return p


def normalised(derivative: float, parameter: float, output: float) -> float:
    """d out / d p x p / out (NaN when the output is 0)."""
    return derivative * parameter / output if output != 0.0 else math.nan


def table(report) -> str:
    """The gradients of a GradientReport as aligned text, one row per (output, parameter)."""
    rows = [("output", "value", "parameter", "value", "d output / d parameter", "normalised")]
    for name, values in report.values.items():
        out = report.outputs[name]
        for key, derivative in values.items():
            p = report.parameters[key]
            rows.append((name, f"{out:.6g}", key, f"{p:.6g}", f"{derivative:.10g}",
                         f"{normalised(derivative, p, out):.4g}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i in (0, 2) else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))).rstrip() for row in rows)


def main(argv, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:
        return EXIT_INVALID if exit_.code else EXIT_OK
    from softsim.app.headless import load_scene_with_overrides
    from softsim.app.run_output import MAX_FRAMES, UsageError
    from softsim.mechanics.sensitivity import (
        GradientError,
        NotConvergedError,
        NotDifferentiableError,
        gradient_report,
    )

    if not 1 <= args.frames <= MAX_FRAMES:
        print(f"error: --frames: {args.frames} is outside [1, {MAX_FRAMES}]", file=stderr)
        return EXIT_INVALID
    try:
        scene = load_scene_with_overrides(args.scene, args.overrides)
    except (UsageError, ValueError, OSError) as error:  # SceneError, MeshError, ParameterError are ValueErrors
        print(f"error: {error}", file=stderr)
        return EXIT_INVALID
    for _ in range(args.frames):
        report = scene.step()
    if not report.ran:
        print(f"error: frame {report.frame} failed: {report.message}", file=stderr)
        return EXIT_FAILED
    try:
        result = gradient_report(scene, args.output, args.wrt)
    except NotConvergedError as error:
        print(f"error: {error}", file=stderr)
        return EXIT_NOT_CONVERGED
    except NotDifferentiableError as error:
        print(f"error: {error}", file=stderr)
        return EXIT_NOT_DIFFERENTIABLE
    except GradientError as error:
        print(f"error: {error}", file=stderr)
        return EXIT_INVALID
    if report.inverse is not None:
        print(f"{Path(args.scene).name}, inverse frame {report.frame} (converged): {result.held_rows} unknown rows "
              f"free, {result.forced_rows} at a force bound (sensitivity 0)", file=stdout)
    else:
        print(f"{Path(args.scene).name}, frame {report.frame} (converged): {result.held_rows} constraint rows held, "
              f"{result.forced_rows} at a fixed force", file=stdout)
    print(table(result), file=stdout)
    if args.json:
        data = {"scene": str(args.scene), "frame": report.frame, "outputs": result.outputs,
                "parameters": result.parameters, "gradients": result.values,
                "normalised": {name: {key: normalised(d, result.parameters[key], result.outputs[name])
                                      for key, d in values.items()} for name, values in result.values.items()}}
        try:
            args.json.write_text(json.dumps(data, indent=2, allow_nan=True) + "\n")
        except OSError as error:
            print(f"error: --json {args.json}: {error.strerror or error}", file=stderr)
            return EXIT_INVALID
    return EXIT_OK
