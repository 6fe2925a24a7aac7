"""Sensitivities (issue 33) with respect to a stacked field's modulus and Poisson's ratio and a force's
totalForce, against Richardson central differences of re-solved frames, on the shipped beam made neo-Hookean
with a material region (E 400 on its first 60 mm) and a stacked field (E 900, nu 0.4 added on its last 60 mm,
so the elements from 40 to 60 mm carry both), under a 40 N tip load with a 5 N sideways component."""

from __future__ import annotations

from pathlib import Path

import pytest

from softsim.mechanics import Scene
from softsim.mechanics.sensitivity import GradientError, gradient_report
from tests.mechanics.sensitivity_checks import worst_against_differences

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "resources" / "scenes" / "beam.toml"
LOAD = [0.0, -40.0, 5.0]
MATERIAL = """  [[body.material.region]]
  box = [-0.1, -0.1, -0.1, 60.0, 10.1, 10.1]
  youngModulus = 400.0

  [[body.material.stacked]]
  box = [40.0, -0.1, -0.1, 100.1, 10.1, 10.1]
  strict = false
  youngModulus = 900.0
  poissonRatio = 0.4

"""


@pytest.fixture(scope="module")
def beam_path(tmp_path_factory):
    mesh = (ROOT / "resources" / "meshes" / "beam.vtu").as_posix()
    text = BEAM.read_text().replace('"../meshes/beam.vtu"', f'"{mesh}"')
    at = text.index("  [[body.fixed]]")
    path = tmp_path_factory.mktemp("beam") / "beam_stacked.toml"
    path.write_text(text[:at] + MATERIAL + text[at:])
    return path


def _solved(path, values):
    scene = Scene.load(path)
    scene.set("body.beam.material.model", "neohookean")
    scene.set("solver.newton.residual_tolerance_threshold", 1e-12)
    scene.set("body.beam.force[0].totalForce", LOAD)
    for key, value in values.items():
        scene.set(key, value)
    report = scene.step()
    assert report.converged, report.message
    return scene


def _moved(key, value):
    """{scene key: value} that sets ``key`` (a component of totalForce is set through the vector)."""
    if ".totalForce." in key:
        load = list(LOAD)
        load["xyz".index(key[-1])] = value
        return {"body.beam.force[0].totalForce": load}
    return {key: value}


def test_stacked_field_and_total_force_against_finite_differences(beam_path):
    """Every derivative agrees with re-solved frames to 1e-6 relative (measured: 5e-8 at worst, node 30's x
    against the body's modulus; 2.4e-8 against the stacked field's Poisson's ratio; 6e-9 or better for the
    others). The body's own modulus, Poisson's ratio and region modulus are taken on their own field's values,
    also on the elements that carry the stacked field too (whose elasticity holds the sum)."""
    steps = {"body.beam.material.stacked[0].youngModulus": 5.0, "body.beam.material.stacked[0].poissonRatio": 1e-4,
             "body.beam.material.youngModulus": 5.0, "body.beam.material.region[0].youngModulus": 5.0,
             "body.beam.material.poissonRatio": 1e-4, "body.beam.force[0].totalForce.y": 0.1,
             "body.beam.force[0].totalForce.z": 0.1}
    outputs = ["tip.y", "tip.z", "node[30].x"]
    scene = _solved(beam_path, {})
    report = gradient_report(scene, outputs, list(steps))

    def solve(key, shift):
        return _solved(beam_path, _moved(key, float(report.parameters[key]) + shift))

    worst = worst_against_differences(report, outputs, steps, solve, 1e-6)
    assert worst < 1e-6
    # a 1 N change of the tip load's y moves the tip 0.384 mm (neo-Hookean, E 600/400, stacked 900)
    assert report.values["tip.y"]["body.beam.force[0].totalForce.y"] == pytest.approx(0.38433, rel=1e-4)


def test_total_force_needs_a_component(beam_path):
    scene = _solved(beam_path, {})
    with pytest.raises(GradientError, match=r"totalForce is a vector; take a component"):
        gradient_report(scene, ["tip.y"], ["body.beam.force[0].totalForce"])
