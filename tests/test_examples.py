"""The README's Python API example (examples/api_example.py) runs and prints physically sensible numbers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "api_example.py"
CABLE_REST_LENGTH = 157.806  # mm, the looped 14-point cable of finger.toml with its pull point


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, str]:
    """Run the example from an unrelated directory (it must find its scene by itself); ``key = value`` lines."""
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path_factory.mktemp("elsewhere"))
    assert done.returncode == 0, done.stderr
    values = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            values[key.strip()] = value.strip()
    values["stdout"] = done.stdout
    return values


def test_the_cable_displacement_is_reached(printed):
    pull = 8.0
    assert float(printed["cable.displacement"]) == pytest.approx(pull, abs=1e-4)
    assert float(printed["cable.cableLength"]) == pytest.approx(CABLE_REST_LENGTH - pull, abs=1e-3)
    assert float(printed["cable.force"]) > 0.0  # the cable pulls (minForce = 0)
    assert float(printed["with NNCG: cable.displacement"]) == pytest.approx(pull, abs=1e-4)


def test_the_tip_bends_up_and_the_run_settles(printed):
    tip = [float(v) for v in printed["tip position"].strip("[]").split(",")]
    rest_tip = [-100.0, 7.5, 7.5]  # the effector point of finger.toml
    assert tip[1] > rest_tip[1] + 5.0  # the cable on the upper side curls the finger upwards (+y)
    assert tip[0] > rest_tip[0]  # and so shortens it along x
    assert sum((a - b) ** 2 for a, b in zip(tip, rest_tip, strict=True)) ** 0.5 < 30.0  # bounded motion
    match = re.search(r"settled after (\d+) frames \(last motion ([0-9.e+-]+) mm", printed["stdout"])
    assert match and int(match.group(1)) < 50 and float(match.group(2)) < 1e-6
    assert "converged: True" in printed["stdout"]
    assert 0.0 < float(printed["max von Mises stress"]) < 1e4


def test_the_calibration_example_recovers_the_young_modulus(tmp_path):
    """examples/calibrate_finger.py: a sweep of 11 moduli on 2 workers and a Brent refinement find the
    modulus that made the "measured" tip height (655 kPa) to 1e-5 relative, with 11 + at most 30 simulations."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "calibrate_finger.py"), "--workers", "2"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = dict(line.split(" = ", 1) for line in done.stdout.splitlines() if " = " in line)
    assert float(values["recovered youngModulus"]) == pytest.approx(655.0, rel=1e-5)
    assert values["coarse best"].startswith(("600.0", "700.0"))
    sweep_count, refine_count = re.findall(r"\d+", values["simulations"])
    assert int(sweep_count) == 11 and int(refine_count) <= 30


def test_the_finger_tip_follows_a_circle_with_the_inverse_model(tmp_path):
    """examples/finger_circle.py: two side cables move the tip around a 3 mm circle in the y-z plane in 24 steps;
    every frame converges and the tip stays within 0.05 mm of each goal (measured: 0.032 mm, the epsilon term's
    pull toward less actuation), the two cables taking turns (each ranges over more than 1.5 mm)."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "finger_circle.py")], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = dict(line.split(" = ", 1) for line in done.stdout.splitlines() if " = " in line)
    assert float(values["largest distance"]) <= 0.05
    assert int(values["unconverged frames"]) == 0
    for name in ("left", "right"):
        low, high = (float(v) for v in values[f"{name} displacement range"].strip("[]").split(","))
        assert high - low > 1.5
