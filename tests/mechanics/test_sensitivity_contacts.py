"""Sensitivities through contacts (issue 33) against Richardson central differences of re-solved frames:
friction contacts that stick, and contacts against curved obstacles.

A sticking contact's tangential rows hold the node where the previous frame left it (static friction measures
the motion since the last frame), so its gradient is the derivative of one frame solved from a given previous
state. The differences re-solve exactly that: a fresh scene runs the same first frames, then the frame under
test with the parameter moved."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from softsim.mechanics import Scene
from softsim.mechanics.sensitivity import gradient_report

ROOT = Path(__file__).resolve().parents[2]
FLOOR = ROOT / "tests" / "data" / "sensitivity" / "finger_floor.toml"
TOLERANCE = 1e-6


def _solved(path, frames, extra=None):
    """The scene ``path`` solved tightly through ``frames`` (a list of {key: value} set before each frame), with
    ``extra`` {key: value} set before the last one."""
    scene = Scene.load(path)
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.newton.correction_tolerance_threshold", 1e-10)
    scene.set("solver.constraint.type", "exact")
    for i, values in enumerate(frames):
        values = dict(values, **(extra or {})) if i == len(frames) - 1 else values
        for key, value in values.items():
            scene.set(key, value)
        report = scene.step()
        assert report.converged, report.message
    return scene


def _read(scene, name):
    if name.startswith("node["):
        return float(scene.positions[int(name[5:name.index("]")])]["xyz".index(name[-1])])
    return scene.outputs()[name]


def _last_frame_differences(path, frames, outputs, key, value, step):
    """Richardson-extrapolated central differences (error O(step^4)) of the last frame re-solved with ``key``
    moved, from the same earlier frames."""
    samples = []
    for shift in (step, -step, step / 2, -step / 2):
        scene = _solved(path, frames, {key: value + shift})
        samples.append({name: _read(scene, name) for name in outputs})
    return {name: (4 * (samples[2][name] - samples[3][name]) / step
                   - (samples[0][name] - samples[1][name]) / (2 * step)) / 3 for name in outputs}


def _compare(path, frames, outputs, steps):
    """The largest relative difference between the gradients at the last frame and the differences."""
    scene = _solved(path, frames)
    report = gradient_report(scene, outputs, list(steps))
    worst = 0.0
    for key, step in steps.items():
        reference = _last_frame_differences(path, frames, outputs, key, float(report.parameters[key]), step)
        for name in outputs:
            error = abs(report.values[name][key] - reference[name]) / abs(reference[name])
            worst = max(worst, error)
            assert error < TOLERANCE, (name, key, report.values[name][key], reference[name], error)
    return scene, report, worst


def test_sticking_friction_against_finite_differences():
    """The finger sagging onto a floor with mu = 1: after a softer second frame three tip nodes stick (their
    tangential forces strictly inside the cone), each holding three rows; the derivatives with respect to the
    modulus and the cable's value agree with re-solved second frames to 1e-8 (measured 2e-9)."""
    frames = [{}, {"body.finger.material.youngModulus": 500.0}]
    scene, report, worst = _compare(FLOOR, frames, ["cable.force", "node[50].y", "contact.normalForce"],
                                    {"body.finger.material.youngModulus": 5.0,
                                     "body.finger.cable.cable.value": 1e-2})
    system = scene.simulation.last_report.equilibrium.system
    force = scene.simulation.last_report.equilibrium.force
    rows = next(r for c, r in zip(system.constraints, system.row_ranges) if c.name == "contact")
    per_contact = force[rows].reshape(-1, 3)
    touching = per_contact[per_contact[:, 0] > 0.0]
    ratio = np.hypot(touching[:, 1], touching[:, 2]) / touching[:, 0]
    assert touching.shape[0] == 3 and np.all(ratio < 0.95) and np.all(ratio > 0.05)  # sticking, not sliding
    assert report.held_rows == 1 + 3 * 3  # the cable and three sticking contacts
    assert worst < 1e-8
