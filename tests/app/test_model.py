"""The GUI's state without Qt: the model's events, and a session driven by hand (poll) on the real finger:
typed commands reach the worker's scene, and frames, messages and replies come back through one channel."""

import sys
import time

import pytest

from softsim.app.model import ViewerModel
from softsim.app.resources import default_scene


def _poll_until(session, predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        session.poll()
        time.sleep(0.005)


def test_the_model_emits_an_event_per_change_and_refuses_unknown_fields():
    model = ViewerModel()
    seen = []
    model.events.field.connect(lambda value: seen.append(("field", value)))
    model.events.playing.connect(lambda value: seen.append(("playing", value)))
    model.field = "von_mises"
    model.field = "von_mises"  # no change, no event
    model.playing = True
    assert seen == [("field", "von_mises"), ("playing", True)]
    with pytest.raises(ValueError, match="unknown field 'stress'; allowed: displacement, von_mises"):
        model.field = "stress"
    with pytest.raises(AttributeError, match="no state 'zoom'"):
        model.zoom = 2.0
    assert model.field == "von_mises"


@pytest.fixture
def session():
    from softsim.app.session import Session

    session = Session(qt=False)
    woken = []
    session.wake = lambda: woken.append(1)
    assert session.open_scene(default_scene())
    session.woken = woken
    yield session
    session.close()


def test_the_model_and_the_session_import_no_qt():
    import subprocess

    code = ("import sys, softsim.app.model, softsim.app.session, softsim.app.runner; "
            "print(sorted(m for m in sys.modules if m.startswith(('PyQt6', 'vtk', 'pyvista'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_session_runs_without_qt(session):
    frames, messages = [], []
    session.frame_ready.connect(frames.append)
    session.message.connect(lambda level, text: messages.append((level, text)))
    assert session.set_parameter("body.finger.cable.cable.value", 4.0) is None
    assert session.set_parameter("body.finger.cable.cable.value", -1.0) is None  # allowed by the file...
    assert "is outside" in session.set_parameter("solver.constraint.tolerance", 0.0)  # ...this is not
    session.step_once(2)  # (each edit made while paused also solves a frame: the frames run are 2 to 4)
    _poll_until(session, lambda: frames and frames[-1].index >= 2 and session.runner.pending_steps == 0)
    assert session.woken  # the worker said when it posted
    assert frames[-1].outputs["cable.displacement"] == pytest.approx(-1.0, abs=1e-6)
    assert frames[-1].report.converged and messages == []


def test_the_field_travels_as_a_command_and_the_state_comes_back_with_it(session):
    frames = []
    session.frame_ready.connect(frames.append)
    session.step_once(1)
    _poll_until(session, lambda: frames and frames[-1].index == 1)
    assert not frames[-1].has_von_mises  # frames carry only the field shown
    session.set_display_field("von_mises")
    _poll_until(session, lambda: frames[-1].has_von_mises)
    assert frames[-1].index == 1 and frames[-1].report is not None  # the same state, sent again with the field
    assert session.runner.field == "von_mises" and session.model.frame is frames[-1]


def test_replies_come_back_through_the_same_channel(session, tmp_path):
    results = []
    session.call("read", lambda scene: scene.spec.solver.newton.newton_iterations,
                 lambda result, error: results.append((result, error)))
    session.save(tmp_path / "saved.toml", lambda error: results.append(("saved", error)))
    _poll_until(session, lambda: len(results) == 2)
    assert results == [(25, None), ("saved", None)]
    assert (tmp_path / "saved.toml").read_text().count("newton_iterations = 25") == 1
