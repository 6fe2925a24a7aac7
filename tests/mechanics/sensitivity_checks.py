"""What the sensitivity tests share: an output read from a solved scene, the tight solver settings of the
contact cases, and the gradients checked against Richardson-extrapolated central differences of re-solved
frames."""

from __future__ import annotations


def read(scene, name: str) -> float:
    """Output ``name`` of a solved scene: ``node[i].x`` (``.y``, ``.z``) is node i's position, anything else an
    entry of ``scene.outputs()``."""
    if name.startswith("node["):
        return float(scene.positions[int(name[5:name.index("]")])]["xyz".index(name[-1])])
    return scene.outputs()[name]


def tighten(scene) -> None:
    """Newton's tolerances at 1e-11 (residual) and 1e-10 (correction) and the exact constraint solver, so that
    re-solved frames differ by the parameter's change and not by where a solver stopped."""
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.newton.correction_tolerance_threshold", 1e-10)
    scene.set("solver.constraint.type", "exact")


def worst_against_differences(report, outputs: list[str], steps: dict, solve, tolerance: float) -> float:
    """The largest relative difference between ``report.values[output][key]`` and the Richardson-extrapolated
    central difference (error O(step^4)) of the same output over scenes re-solved by ``solve(key, shift)`` with
    ``key`` moved by ``shift`` in (step, -step, step/2, -step/2), for every ``key: step`` of ``steps``; asserts
    that each is below ``tolerance``."""
    worst = 0.0
    for key, step in steps.items():
        samples = [{name: read(scene, name) for name in outputs}
                   for scene in (solve(key, shift) for shift in (step, -step, step / 2, -step / 2))]
        for name in outputs:
            reference = (4 * (samples[2][name] - samples[3][name]) / step
                         - (samples[0][name] - samples[1][name]) / (2 * step)) / 3
            error = abs(report.values[name][key] - reference) / abs(reference)
            worst = max(worst, error)
            assert error < tolerance, (name, key, report.values[name][key], reference, error)
    return worst
