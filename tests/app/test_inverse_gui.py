"""Inverse mode in the window: the switch, the read-only actuators, the goal handle the user drags, the health of
an unreachable goal."""

import numpy as np
import pytest
from PyQt6.QtCore import QPoint, Qt

from softsim.app.resources import default_scene
from tests.app.conftest import run_frames


def _wait_for(qtbot, session, predicate, timeout=60000):
    qtbot.waitUntil(lambda: session.latest_frame.report is not None and predicate(session.latest_frame),
                    timeout=timeout)
    return session.latest_frame


def _tip(frame) -> np.ndarray:
    return np.array([frame.outputs[f"tip.{axis}"] for axis in "xyz"])


def test_switching_inverse_mode_on_makes_the_actuators_read_only_and_shows_a_goal(main_window, qtbot):
    """The finger has an effector without a goal: switching inverse mode on gives it a goal at the tip's current
    position, shows one green handle there, greys out the cable's controls; off again: editable, no handle. Both
    switches are single undo steps."""
    assert main_window.open_path(default_scene())
    panel = main_window.dock("actuators_dock").widget()
    control = panel.controls["cable"]
    assert panel.inverse_box.isVisible() and not panel.inverse_box.isChecked() and control.slider.isEnabled()
    panel.inverse_box.setChecked(True)
    spec = main_window.session.spec
    assert spec.solver.inverse is not None and spec.solver.inverse.active
    goal = np.array(spec.bodies[0].effectors[0].effectorGoal[0])
    np.testing.assert_allclose(goal, _tip(main_window.session.latest_frame), atol=1e-9)
    assert not control.slider.isEnabled() and not control.spin.isEnabled()
    assert "found by the inverse model" in control.title()
    assert list(main_window.viewport.goals) == ["tip"]
    np.testing.assert_allclose(main_window.viewport.goals["tip"][0], goal)
    panel.inverse_box.setChecked(False)
    assert not main_window.session.spec.solver.inverse.active and control.slider.isEnabled()
    assert main_window.viewport.goals == {}


def test_dragging_the_goal_handle_moves_the_tip_there(main_window, qtbot):
    """Inverse mode on the finger; a mouse drag of the green handle 60 px up in the view moves the goal in the
    camera plane; the finger follows: the cable pulls, the tip ends at less than half its starting distance from
    the dragged goal (a goal straight above the tip is off the tip's arc: one cable cannot reach it exactly), the
    cable slider shows the displacement found and the drag is one undo step."""
    assert main_window.open_path(default_scene())
    session, viewport = main_window.session, main_window.viewport
    panel = main_window.dock("actuators_dock").widget()
    panel.inverse_box.setChecked(True)
    run_frames(qtbot, main_window, 1)
    viewport.set_camera_preset("front")
    viewport.render()
    goal = viewport.goals["tip"][0]
    x, y = viewport.widget_position(goal)
    start = QPoint(round(x), round(y))
    end = start + QPoint(0, -60)
    history_before = main_window.history.count()
    qtbot.mousePress(viewport, Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 7):
        qtbot.mouseMove(viewport, start + QPoint(0, -10 * step))
        qtbot.wait(30)
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=end)
    moved = np.array(session.spec.bodies[0].effectors[0].effectorGoal[0])
    assert moved[1] > goal[1] + 5.0  # up in the front view is +y
    assert abs(moved[2] - goal[2]) < 1e-6  # the drag plane faces the camera (z stays)
    assert main_window.history.count() == history_before + 1
    frame = run_frames(qtbot, main_window, 3)
    assert frame.report.converged, frame.report.message
    assert frame.outputs["tip.distance"] == pytest.approx(np.linalg.norm(_tip(frame) - moved), rel=1e-9)
    assert frame.outputs["tip.distance"] < 0.5 * np.linalg.norm(moved - goal)
    assert frame.outputs["cable.displacement"] > 1.0
    control = panel.controls["cable"]
    assert control.spin.value() == pytest.approx(frame.outputs["cable.displacement"], abs=1e-2)


def test_an_unreachable_goal_is_flagged_with_the_limit(main_window, qtbot):
    """A goal far out of reach with maxPositiveDisp = 5 mm: the health label reads ACTUATOR LIMITED and the banner
    names the distance and the limit."""
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter("body.finger.cable.cable.maxPositiveDisp", 5.0) is None
    assert session.set_parameter("body.finger.effector.tip.effectorGoal", [[-60.0, 60.0, 7.5]]) is None
    assert session.set_parameter("solver.inverse", {}) is None
    frame = _wait_for(qtbot, session, lambda f: f.report.inverse is not None)
    main_window.flush_frame()
    assert frame.outputs["cable.displacement"] == pytest.approx(5.0, abs=1e-6)
    assert main_window.health_label.text() == "ACTUATOR LIMITED"
    assert "goal not reached" in main_window.banner.text() and "cable maxPositiveDisp" in main_window.banner.text()
