"""A scene edit that rebuilds the simulation (``collision.friction``) keeps the static equilibrium it had.

The rebuilt simulation used to take the deformed state for a first frame: its increments started from the curled
finger with no constraint force at all, and on finger_block.toml (tight tolerances, the exact constraint solver)
the frame after the edit failed ("W must have a positive diagonal", "the contact rows' block of W is singular"),
even when the value set was unchanged. :meth:`mechanics.simulation.Simulation.continue_from` carries the
equilibrium, its multipliers and its contacts over."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics import Scene
from tests.mechanics.sensitivity_checks import tighten

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT / "tests" / "data" / "softrobots" / "finger_block.toml"
CABLE = 17.0


@pytest.fixture(scope="module")
def settled():
    """finger_block.toml at 17 mm of cable, pressing into the block, stepped until a frame no longer moves it
    (the frames after the jump move it 1.5 mm, then 0.08 mm, then 3e-13 mm: measured)."""
    scene = Scene.load(BLOCK)
    tighten(scene)
    scene.set("body.finger.cable.cable.value", CABLE)
    for _ in range(6):
        before = scene.positions.copy()
        report = scene.step()
        assert report.converged, report.message
        if np.abs(scene.positions - before).max() < 1e-9:
            break
    assert np.abs(scene.positions - before).max() < 1e-9
    return scene


def test_friction_edit_keeps_the_equilibrium(settled):
    """The same friction (0) again, then mu = 0.5 twice, then 0 again: every frame converges and the state stays
    the frictionless equilibrium to round-off (measured 0 to 2.3e-13 mm): with the tangential forces at zero,
    inside any friction cone, that equilibrium is also the sticking one. The cable force stays too, and the
    contacts still press (their total normal force above 1 mN)."""
    scene = settled
    x0 = scene.positions.copy()
    force0 = scene.outputs()["cable.force"]
    assert scene.outputs()["collision.normalForce"] > 1.0
    for mu in (0.0, 0.5, 0.5, 0.0):
        scene.set("collision.friction", mu)
        report = scene.step()
        assert report.converged, (mu, report.message)
        np.testing.assert_allclose(scene.positions, x0, rtol=0, atol=1e-9, err_msg=f"friction {mu}")
        assert scene.outputs()["cable.force"] == pytest.approx(force0, rel=1e-9)
        assert scene.outputs()["collision.normalForce"] > 1.0
