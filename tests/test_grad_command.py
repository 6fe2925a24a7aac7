"""``softsim grad`` (issue 33): the table, the JSON, and the exit statuses of frames without a gradient."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from softsim.app.cli import main as cli_main
from softsim.app.grad_command import EXIT_INVALID, EXIT_NOT_CONVERGED, EXIT_OK, main

ROOT = Path(__file__).resolve().parents[1]
FINGER = str(ROOT / "resources" / "scenes" / "finger.toml")
E, G = "body.finger.material.youngModulus", "scene.gravity.y"


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_table_and_json_obey_homogeneity(tmp_path):
    """Scaling E and gravity together by s scales every force by s and leaves every position: so the normalised
    sensitivities of a position to E and g sum to 0, those of the cable's force to 1 (Euler's theorem on
    homogeneous functions), an independent check of the E and gravity partials."""
    target = tmp_path / "g.json"
    code, out, err = _run(FINGER, "--output", "tip.y", "--output", "cable.force", "--wrt", E, "--wrt", G,
                          "--set", "body.finger.cable.cable.value=10", "--frames", "3", "--json", str(target))
    assert code == EXIT_OK, err
    assert "tip.y" in out and "normalised" in out and "1 constraint rows held" in out
    data = json.loads(target.read_text())
    normalised = data["normalised"]
    assert normalised["tip.y"][E] + normalised["tip.y"][G] == pytest.approx(0.0, abs=1e-7)
    assert normalised["cable.force"][E] + normalised["cable.force"][G] == pytest.approx(1.0, abs=1e-7)
    assert data["outputs"]["cable.force"] > 0 and data["parameters"][E] == 600.0


def test_refusals():
    code, _, err = _run(FINGER, "--output", "tip.q", "--wrt", E)
    assert code == EXIT_INVALID and "not a differentiable output" in err
    code, _, err = _run(FINGER, "--output", "tip.y", "--wrt", E, "--set", "body.finger.cable.cable.value=30",
                        "--set", "solver.newton.newton_iterations=1")  # ten factorizations: short of 30 mm
    assert code == EXIT_NOT_CONVERGED and "did not converge" in err
    code, _, err = _run(FINGER, "--output", "tip.y", "--wrt", E, "--frames", "0")
    assert code == EXIT_INVALID and "--frames" in err


def test_dispatched_by_softsim():
    assert cli_main(["grad", FINGER, "--output", "tip.y", "--wrt", "nonsense.key"]) == EXIT_INVALID
