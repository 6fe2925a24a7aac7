"""The Sensitivity panel (issue 33) on a real Session with the shipped finger: the bars follow the frames, the
gradients come from where the scene lives, and a frame without a gradient says why."""

from __future__ import annotations

import pytest

from softsim.app.panels import create_docks
from softsim.app.panels.sensitivity import differentiable_outputs, normalised, short_label
from softsim.app.resources import resource_path

pytestmark = pytest.mark.gui

FINGER = resource_path("scenes", "finger.toml")
E, NU, MASS, G = ("body.finger.material.youngModulus", "body.finger.material.poissonRatio",
                  "body.finger.material.totalMass", "scene.gravity.y")


@pytest.fixture
def panel(qtbot):
    from softsim.app.session import Session

    session = Session()
    docks = create_docks(session, None, sensitivity=True)
    for dock in docks:
        qtbot.addWidget(dock)
        dock.show()
    assert session.open_scene(FINGER)
    panel = next(d for d in docks if d.objectName() == "sensitivity_dock").widget()
    yield panel
    session.close()


def _step(qtbot, panel, frames=2):
    session = panel.session
    target = session.latest_frame.index + frames
    session.step_once(frames)
    qtbot.waitUntil(lambda: session.latest_frame.report is not None and session.latest_frame.index >= target,
                    timeout=60_000)
    return target


def test_bars_follow_the_frames_and_obey_homogeneity(panel, qtbot):
    """Forces scale with E and with g M together, positions not at all: the tip's normalised sensitivities to E
    and to g sum to 0, and those to g and to the total mass are equal (the weight is their product)."""
    session = panel.session
    assert panel.parameters[:3] == [E, NU, MASS] and G in panel.parameters
    assert session.set_parameter("body.finger.cable.cable.value", 10.0) is None
    target = _step(qtbot, panel, 3)
    qtbot.waitUntil(lambda: panel.shown_frame >= target and bool(panel.values), timeout=60_000)
    assert panel.shown_output == "tip.y"
    values = panel.values
    assert values[E] + values[G] == pytest.approx(0.0, abs=1e-7)
    assert values[MASS] == pytest.approx(values[G], rel=1e-7)
    assert abs(values[NU]) > 0.1 and values["body.finger.cable.cable.value"] > 0.1
    assert "tip.y = " in panel.status.text() and "most sensitive to" in panel.status.text()
    assert len(panel.bars.opts["width"]) == len(panel.parameters)


def test_a_frame_without_a_gradient_says_why(panel, qtbot):
    session = panel.session
    # one factorization per increment, ten per frame: a 30 mm jump ends short, not converged
    assert session.set_parameter("solver.newton.newton_iterations", 1) is None
    assert session.set_parameter("body.finger.cable.cable.value", 30.0) is None
    _step(qtbot, panel, 1)
    # a request sent before the edits reached the simulation may answer first ("a value changed after the last
    # frame"): wait for the answer about the frame that ran
    qtbot.waitUntil(lambda: "did not converge" in panel.status.text(), timeout=60_000)
    assert panel.status.text().startswith("No gradient") and panel.values == {}


def test_helpers():
    outputs = {"cable.displacement": 1.0, "cable.limited": 0.0, "tip.x": 1.0, "cavity.initialCavityVolume": 2.0,
               "contact.contacts": 3.0, "tip.x0": 1.0}
    assert differentiable_outputs(outputs, 12) == ["cable.displacement", "tip.x", "tip.x0", "node[12].displacement"]
    assert normalised(2.0, 3.0, 4.0) == 1.5 and normalised(2.0, 3.0, 0.0) == 0.0
    assert short_label(E) == "finger youngModulus" and short_label(G) == "gravity y"
