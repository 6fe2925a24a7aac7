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


def _key_values(script, *args, cwd):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return dict(line.split(" = ", 1) for line in done.stdout.splitlines() if " = " in line)


def test_the_gradient_calibration_recovers_young_and_poisson(tmp_path):
    """examples/calibrate_finger.py --method gradient: least squares with the exact Jacobian of the 12 tip
    coordinates recovers E = 655 and nu = 0.42 from (450, 0.35) in at most 10 forward solves."""
    values = _key_values("calibrate_finger.py", "--method", "gradient", cwd=tmp_path)
    assert float(values["gradient: recovered youngModulus"]) == pytest.approx(655.0, rel=1e-6)
    assert float(values["gradient: recovered poissonRatio"]) == pytest.approx(0.42, rel=1e-6)
    assert int(values["gradient: forward solves"]) <= 10


def test_the_design_example_finds_the_highest_cable(tmp_path):
    """examples/design_cable_height.py: L-BFGS-B on the exact dJ/dh ends at the upper bound 13 mm, where dJ/dh is
    still positive; the travel per newton there (0.69 mm/N upwards) beats the mid-plane's (-5.95: downwards),
    and the slope agrees with the difference of the two ends (J rises by 6.6 mm/N over 5.5 mm)."""
    values = _key_values("design_cable_height.py", cwd=tmp_path)
    assert float(values["optimum cable height"]) == pytest.approx(13.0, abs=1e-9)
    slope = float(values["dJ/dh at the optimum"])
    high, low = float(values["tip travel per newton at the optimum"]), float(values[
        "tip travel per newton at the lower bound"])
    assert high > 0.0 > low
    assert 0.5 * (high - low) / 5.5 < slope < 2.0 * (high - low) / 5.5
    assert int(values["forward solves"]) <= 10
