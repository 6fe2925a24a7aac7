"""Test helpers that run in the simulation process (app.sim_process): the scene lives there, so a test reads or
patches it through ``session.call`` with these module-level functions (they travel by reference)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tests.call_counts import count_calls


def ask(qtbot, session, function, *args, timeout_ms: int = 120000):
    """Run ``function(scene, *args)`` where the scene lives and wait for its answer (raises its error)."""
    answers = []
    session.call(f"test: {getattr(function, '__name__', 'call')}", _Bound(function, args),
                 lambda result, error: answers.append((result, error)), changes_scene=False)

    def answered() -> bool:
        if not answers:
            session.poll()
        return bool(answers)

    qtbot.waitUntil(answered, timeout=timeout_ms)
    result, error = answers[0]
    if error is not None:
        raise error
    return result


class _Bound:
    """``function(scene, *args)`` as a picklable callable of the scene."""

    def __init__(self, function, args) -> None:
        self.function, self.args = function, args

    def __call__(self, scene):
        return self.function(scene, *self.args)


def count_passes(scene, names) -> None:
    """Count the calls of the elasticity's methods ``names`` (patched on the instance): read with counts()."""
    scene.__dict__["_test_counts"] = count_calls(None, scene.simulation.problem.elasticity, names)


def counts(scene) -> dict:
    return dict(scene.__dict__["_test_counts"])


def nodal_fields(scene, x):
    """von Mises per element (m,), its nodal average (n,) and the nodal strain energy density (n,) at ``x``,
    through the elasticity's class (not counted by count_passes)."""
    from softsim.mechanics.fields import nodal_average_operator

    simulation = scene.simulation
    elasticity = simulation.problem.elasticity
    model = type(elasticity)
    average = nodal_average_operator(np.asarray(simulation.tets), elasticity.volumes, len(simulation.X))
    von_mises = np.nan_to_num(model.von_mises(elasticity, x))
    return von_mises, average @ von_mises, average @ np.nan_to_num(model.strain_energy_density(elasticity, x))


def slow_next_step(scene, started: str, release: str) -> None:
    """The next frame writes the file ``started`` and lasts until the file ``release`` exists (at most 60 s)."""
    normal_step = scene.step

    def slow_step():
        Path(started).write_text("started")
        end = time.monotonic() + 60.0
        while not Path(release).exists() and time.monotonic() < end:
            time.sleep(0.01)
        scene.step = normal_step
        return normal_step()

    scene.step = slow_step


def fail_frames(scene, reason: str) -> None:
    """Every next frame fails with ``reason`` (heal_frames undoes it)."""
    from softsim.mechanics.frame_step import FrameReport

    scene.step = lambda: FrameReport(scene.simulation.frame + 1, False, reason)


def heal_frames(scene) -> None:
    scene.__dict__.pop("step", None)


def attribute(scene, path: str):
    """``scene.<path>`` read where the scene lives (dotted), e.g. ``simulation.constraint_solver``."""
    value = scene
    for name in path.split("."):
        value = getattr(value, name)
    return value


def solver_state(scene) -> dict:
    """The constraint solver's type and correction factor, and the linear solver's type and CG iterations."""
    simulation = scene.simulation
    solver = simulation.constraint_solver
    current = simulation.constrained_tangent.current_solver
    return {"constraint_type": type(solver).__name__,
            "spectralCorrectionFactor": getattr(solver, "spectralCorrectionFactor", None),
            "linear_type": type(simulation.newton.linear_solver).__name__,
            "cg_iterations": None if current is None else current.stats.get("iterations")}


def positions(scene):
    return np.array(scene.simulation.x)


def process_id(_scene) -> int:
    import os

    return os.getpid()
