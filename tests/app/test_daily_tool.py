"""The window as a daily tool: the body in view, the view's share of the window, probes, the colour range and
the deformation scale, undo, the warning state, edits while paused, the scene tree, the shortcut list."""

import numpy as np
import pytest
from PyQt6.QtCore import QPoint, Qt
from PyQt6.QtWidgets import QApplication, QMessageBox

from softsim.app.frames import effector_points
from softsim.app.resources import default_scene, resource_path
from softsim.app.viewport import HIGHLIGHT_RGB
from tests.app import remote
from tests.app.conftest import run_frames

CABLE = "body.finger.cable.cable.value"


def _show_at(window, qtbot, width, height):
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width and window.height() == height, timeout=60000)
    QApplication.processEvents()


def _wait_for_edit(qtbot, session, predicate, timeout=60000):
    """Wait until the newest frame (made with a report) satisfies ``predicate``."""
    qtbot.waitUntil(lambda: session.latest_frame.report is not None and predicate(session.latest_frame),
                    timeout=timeout)
    return session.latest_frame


@pytest.mark.parametrize("scene", ["finger", "pneunet", "gripper", "beam", "gripper_object"])
def test_the_whole_body_is_in_view_after_one_frame_and_after_reset(main_window, qtbot, scene):
    """Every surface point of the drawn body projects inside the viewport (at 1280x800), after the first
    frame and after Reset; the view stays fitted when the window is resized."""
    _show_at(main_window, qtbot, 1280, 800)
    assert main_window.open_path(resource_path("scenes", f"{scene}.toml"))
    run_frames(qtbot, main_window, 1)
    viewport = main_window.viewport

    def bounds():
        """(xmin, ymin, xmax, ymax) in widget pixels of the drawn body's surface points."""
        xs, ys = zip(*(viewport.widget_position(p) for p in np.asarray(viewport.bodies["body"].surface.points)))
        return min(xs), min(ys), max(xs), max(ys)

    def inside():
        viewport.render()
        x0, y0, x1, y1 = bounds()
        return 0 <= x0 and x1 <= viewport.width() and 0 <= y0 and y1 <= viewport.height()

    assert inside(), f"{scene}: {bounds()} outside {viewport.width()}x{viewport.height()}"
    main_window.reset()
    run_frames(qtbot, main_window, 1)
    assert inside()
    _show_at(main_window, qtbot, 1024, 640)
    assert inside()


def test_the_view_owns_most_of_the_window_and_the_actuators_need_no_sideways_scroll(main_window, qtbot):
    assert main_window.open_path(default_scene())
    for width, height, share in ((1280, 800, 0.6), (1024, 640, 0.55)):
        _show_at(main_window, qtbot, width, height)
        assert main_window.viewport.width() >= share * width, (width, main_window.viewport.width())
        actuators = main_window.dock("actuators_dock").widget()
        assert not actuators.scroll.horizontalScrollBar().isVisible()
        for bar in main_window.toolbars:  # every toolbar shows all of itself (no overflow arrow)
            assert bar.width() >= bar.sizeHint().width(), (width, bar.objectName())
        # the display toolbar on a row of its own
        assert main_window.toolBarBreak(main_window.toolbars[1]) == (width == 1024)


def test_the_view_keeps_its_size_while_a_scene_plays_with_warnings(main_window, qtbot):
    """Frames flagged and not flagged in turn (the banner comes and goes), status messages: the view's size
    does not change (it lies under the banner)."""
    assert main_window.open_path(default_scene())
    _show_at(main_window, qtbot, 1280, 800)
    session = main_window.session
    assert session.set_parameter("body.finger.cable.cable.maxPositiveDisp", 3.0) is None
    size = main_window.viewport.size()
    for value in (6.0, 2.0, 6.0, 1.0):
        assert session.set_parameter(CABLE, value) is None
        _wait_for_edit(qtbot, session, lambda f, v=value: f.outputs["cable.displacement"] == pytest.approx(min(v, 3.0)))
        main_window.flush_frame()
        assert main_window.banner.isVisible() == (value > 3.0)
        assert main_window.viewport.size() == size


def test_a_click_on_the_body_selects_and_probes_a_node(main_window, qtbot):
    """A plain click (no Ctrl, no drag mode) selects the node under the mouse; the values shown are the
    simulation's at that node: position, displacement and the von Mises stress (computed again here from the
    scene's elasticity at the frame's positions, on the worker)."""
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter(CABLE, 5.0) is None
    frame = _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] > 4.9)
    main_window.flush_frame()
    viewport = main_window.viewport
    main_window.set_camera("front")
    centre = QPoint(viewport.width() // 2, viewport.height() // 2)
    picked = viewport.pick_node(*viewport.display_coordinates(centre.x(), centre.y()))
    assert picked is not None, "the finger is not under the centre of the view"
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    # the first probe of a fresh clone compiles the stress kernel (numba, several seconds on a loaded 2-core
    # machine): the wait ends when the probe arrives, the long limit only bounds a lost one
    qtbot.waitUntil(lambda: main_window.last_probe is not None, timeout=60000)
    probe = main_window.last_probe
    node = probe.node
    assert node == picked[0] == session.model.selected_node
    np.testing.assert_array_equal(probe.position, frame.x[node])
    np.testing.assert_allclose(probe.displacement, frame.x[node] - session.rest_positions[node], atol=1e-12)
    stresses = []
    session.call("von Mises", lambda scene: scene.simulation.von_mises_fields(frame.x)[1][node],
                 lambda result, error: stresses.append(result))
    qtbot.waitUntil(lambda: len(stresses) == 1, timeout=60000)
    assert probe.von_mises == pytest.approx(stresses[0], rel=1e-12) and probe.von_mises > 0
    text = main_window.pick_label.text()
    assert f"node {node}" in text and "mm" in text and "kPa" in text
    marker = viewport.selected_marker
    assert marker is not None and marker[0] == node
    np.testing.assert_allclose(marker[2].points[0], frame.x[node])


def test_hovering_over_the_body_shows_the_values_under_the_mouse(main_window, qtbot):
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    viewport = main_window.viewport
    main_window.set_camera("front")
    qtbot.mouseMove(viewport, QPoint(5, 5))  # (the pointer may already be at the centre: a move is a change)
    qtbot.wait(60)
    qtbot.mouseMove(viewport, QPoint(viewport.width() // 2, viewport.height() // 2))
    qtbot.waitUntil(lambda: "node" in main_window.hover_label.text(), timeout=60000)
    assert "von Mises" in main_window.hover_label.text()
    qtbot.wait(60)
    qtbot.mouseMove(viewport, QPoint(3, 3))  # the background: nothing under the mouse
    qtbot.waitUntil(lambda: main_window.hover_label.text() == "", timeout=60000)


def test_at_rest_the_colour_range_reads_zero_and_the_deformation_scale_only_changes_the_drawing(main_window,
                                                                                                qtbot):
    """The rest state's round-off does not make a 0..1e-12 colour bar; a x100 deformation scale draws
    rest + 100 u and changes no number of the simulation."""
    assert main_window.open_path(default_scene())
    body = main_window.viewport.bodies["body"]
    lo, hi = body.actor.mapper.scalar_range
    assert lo == 0.0 and hi >= 1e-3  # finger: 160 mm long, the zero field reads 0 .. 0.2 mm
    assert session_outputs(main_window)["cable.displacement"] == 0.0
    assert main_window.session.set_parameter(CABLE, 2.0) is None
    frame = _wait_for_edit(qtbot, main_window.session, lambda f: f.outputs["cable.displacement"] > 1.9)
    main_window.flush_frame()
    lo, hi = body.actor.mapper.scalar_range
    top = float(np.max(frame.displacement[body.surface_nodes]))
    assert lo == 0.0 and top <= hi <= 2.5 * top  # a round number above the largest displacement
    main_window.scale_spin.setValue(100)
    rest = main_window.session.rest_positions[body.surface_nodes]
    np.testing.assert_allclose(body.surface.points, rest + 100.0 * (frame.x[body.surface_nodes] - rest),
                               rtol=1e-12, atol=1e-9)
    assert main_window.session.latest_frame is frame  # no new frame: nothing was simulated
    main_window.scale_spin.setValue(1)
    np.testing.assert_allclose(body.surface.points, frame.x[body.surface_nodes], rtol=0, atol=1e-12)


def session_outputs(window):
    return window.session.latest_frame.outputs


def test_undo_and_redo_restore_the_value_and_the_solution(main_window, qtbot):
    """Two edits of the cable (paused: each solves a frame); Ctrl+Z sets the first value back and the solution
    comes back to the one of that value (static equilibrium, to the Newton tolerance); Ctrl+Shift+Z redoes."""
    assert main_window.open_path(default_scene())
    session = main_window.session
    control = main_window.dock("actuators_dock").widget().controls["cable"]
    control.spin.setValue(4.0)
    first = _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] == pytest.approx(4.0))
    qtbot.wait(int(1e3 * 1.6))  # a later edit of the same key is a new step, not merged into this one
    control.spin.setValue(8.0)
    second = _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] == pytest.approx(8.0))
    history = main_window.history
    assert history.count() == 2 and history.undoText() == f"{CABLE}: 4 -> 8"
    main_window.undo_action.trigger()
    assert session.spec.bodies[0].cables[0].value == 4.0 and control.spin.value() == 4.0
    undone = _wait_for_edit(qtbot, session, lambda f: f.index > second.index)
    assert undone.outputs["cable.displacement"] == pytest.approx(4.0, rel=1e-9)
    size = np.ptp(first.x, axis=0).max()
    np.testing.assert_allclose(undone.x, first.x, rtol=0, atol=1e-6 * size)
    main_window.redo_action.trigger()
    redone = _wait_for_edit(qtbot, session, lambda f: f.index > undone.index)
    np.testing.assert_allclose(redone.x, second.x, rtol=0, atol=1e-6 * size)
    assert session.spec.bodies[0].cables[0].value == 8.0
    assert main_window.dock("history_dock").widget().stack() is history


def test_a_slider_drag_is_one_undo_step(main_window, qtbot):
    assert main_window.open_path(default_scene())
    control = main_window.dock("actuators_dock").widget().controls["cable"]
    for position in range(0, 400, 20):
        control.slider.setValue(position)
        qtbot.wait(40)
    control.throttle.flush()
    history = main_window.history
    assert history.count() == 1
    main_window.undo_action.trigger()
    assert main_window.session.spec.bodies[0].cables[0].value == 0.0


def test_an_actuator_short_of_its_target_is_flagged_with_by_how_much(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter("body.finger.cable.cable.maxPositiveDisp", 5.0) is None
    assert session.set_parameter(CABLE, 8.0) is None
    _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] == pytest.approx(5.0))
    main_window.flush_frame()
    assert main_window.banner.isVisible()
    assert "cable 'cable' is short of its target: displacement 5 mm of 8 mm" in main_window.banner.text()
    assert main_window.health_label.text() == "ACTUATOR LIMITED"
    assert session.set_parameter(CABLE, 4.0) is None
    _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] == pytest.approx(4.0))
    main_window.flush_frame()
    assert not main_window.banner.isVisible() and main_window.health_label.text() == "converged"


def test_a_converged_frame_with_a_doubt_in_its_report_is_flagged_not_trustworthy(main_window, qtbot):
    """A converged frame whose report notes why its state is doubtful (contact rows holding nodes away from the
    other body, elements inverted) shows the note in the banner and "NOT TRUSTWORTHY" in the status."""
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter(CABLE, 4.0) is None
    frame = _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] == pytest.approx(4.0))
    main_window.flush_frame()
    assert main_window.health_label.text() == "converged"
    note = "collision: 1 contact row(s) push nodes up to 0.7 away from the other body's surface"
    frame.report.message = note  # what mechanics.frame_report's notes put there
    session.frame_ready.emit(frame)  # the frame comes to the window again, as a new one does
    main_window.flush_frame()
    assert main_window.health_label.text() == "NOT TRUSTWORTHY"
    assert main_window.banner.isVisible() and note in main_window.banner.text()


def test_an_edit_while_paused_solves_a_static_frame_and_a_dynamic_scene_says_what_to_do(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert not session.playing
    assert session.set_parameter(CABLE, 3.0) is None
    frame = _wait_for_edit(qtbot, session, lambda f: f.outputs["cable.displacement"] > 0)
    assert frame.outputs["cable.displacement"] == pytest.approx(3.0) and frame.report.converged
    assert not session.playing
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    assert main_window.open_path(resource_path("scenes", "gripper_object.toml"))
    assert session.spec.scene.mode == "dynamic"
    before = session.runner.frames_attempted
    assert session.set_parameter("body.finger1.cable.cable_finger1.value", 1.0) is None
    qtbot.waitUntil(lambda: any("press Play or Step" in text for _level, text in messages), timeout=60000)
    assert session.runner.frames_attempted == before  # time does not run by itself


def test_the_scene_tree_lists_the_components_shows_parameters_and_highlights(main_window, qtbot):
    assert main_window.open_path(default_scene())
    tree = main_window.dock("scene_dock").widget()
    every = Qt.MatchFlag.MatchWildcard | Qt.MatchFlag.MatchRecursive
    titles = [item.text(0) for item in tree.tree.findItems("*", every)]
    for title in ("Bodies", "Body finger", "Material: corotational", "Fixed region 0", "Cable cable (displacement)",
                  "Effector tip", "Solvers", "Constraint solver: BlockGaussSeidel"):
        assert title in titles, title
    tree.select("body.finger.cable.cable")
    rows = dict(tree.parameters(tree.selected()))
    assert rows["value"] == "0 mm" and rows["valueType"] == "displacement"
    assert tree.table.rowCount() == len(rows)
    viewport = main_window.viewport
    assert viewport.highlighted == ("cable", "cable")
    [actor] = viewport.actors("cable", "cable")
    assert actor.GetProperty().GetColor() == pytest.approx(HIGHLIGHT_RGB)
    tree.select("body.finger.effector.tip")
    assert viewport.highlighted == ("effector", "tip")
    # a marker on the effector's points, where the frame shown has them
    np.testing.assert_allclose(viewport.effector_marker,
                               effector_points(main_window.session.latest_frame.outputs, "tip"), atol=1e-12)
    assert actor.GetProperty().GetColor() == pytest.approx((1.0, 0.55, 0.1))  # the cable is back to normal
    tree.edit_button.click()
    assert main_window.dock("parameters_dock").widget().filter.text() == "body.finger.effector.tip."
    # the parameters follow edits
    tree.select("body.finger.cable.cable")
    assert main_window.session.set_parameter(CABLE, 2.5) is None
    assert dict(tree.parameters(tree.selected()))["value"] == "2.5 mm"


def test_f1_lists_the_shortcuts_and_the_error_banner_goes_with_its_dialog(main_window, qtbot):
    text = main_window.shortcut_text()
    for expected in ("Undo", "Ctrl+Z", "Redo", "Play", "Space", "F1", "Click on the body"):
        assert expected in text, expected
    main_window.shortcuts_action.trigger()
    dialog = main_window.findChild(QMessageBox, "shortcuts_dialog")
    assert dialog is not None and "Ctrl+Z" in dialog.text()
    dialog.close()
    assert main_window.open_path(default_scene())
    main_window.session.message.emit("error", "save failed: disk full")
    main_window.show_error("Cannot save", "save failed: disk full")
    assert main_window.banner.isVisible()
    dialog = main_window.findChild(QMessageBox, "error_dialog")
    dialog.done(0)
    qtbot.waitUntil(lambda: not main_window.banner.isVisible(), timeout=60000)


def test_a_slider_value_is_rounded_to_the_slider_resolution_and_saved_so(main_window, qtbot, tmp_path):
    """A slider step of 0.04734 mm (47.34 mm over 1000 steps) gives values with 3 decimals, within a tenth of a
    step of the exact position, and the saved scene reads ``value = 19.409``, not 19.409400000000002."""
    assert main_window.open_path(default_scene())
    control = main_window.dock("actuators_dock").widget().controls["cable"]
    step = (control.range.hi - control.range.lo) / 1000
    value = control.slider_value(410)
    assert value == round(value, 3) and abs(value - (control.range.lo + 410 * step)) <= step / 10
    control.slider.setValue(410)
    control.throttle.flush()
    path = tmp_path / "tuned.toml"
    done = []
    main_window.session.save(path, lambda error: done.append(error))
    qtbot.waitUntil(lambda: done == [None], timeout=60000)
    assert f"value = {value!r}" in path.read_text()


def test_while_playing_the_status_shows_solved_and_drawn_frame_rates(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    control = main_window.dock("actuators_dock").widget().controls["cable"]
    session.play()
    for position in range(0, 300, 15):  # a slider dragged: every frame solves a new load
        control.slider.setValue(position)
        qtbot.wait(50)
    qtbot.waitUntil(lambda: "solved" in main_window.frame_label.text(), timeout=60000)
    text = main_window.frame_label.text()
    solved = float(text.split("solved ")[1].split("/s")[0])
    drawn = float(text.split("drawn ")[1].split("/s")[0])
    assert solved >= drawn > 0  # a frame is drawn only after it is solved
    session.pause()
    qtbot.waitUntil(lambda: not session.playing, timeout=60000)


def test_an_effector_of_several_points_is_marked_at_each(main_window):
    """PositionEffector names one point's outputs x, y, z and several points' x0, y0, z0, x1, ...: the marker
    has one point per effector point either way (the shipped finger's one-point effector 'tip' from a frame the
    window shows)."""
    from softsim.app.frames import effector_points

    pair = {"pair.x0": 1.0, "pair.y0": 2.0, "pair.z0": 3.0, "pair.x1": 4.0, "pair.y1": 5.0, "pair.z1": 6.0}
    np.testing.assert_array_equal(effector_points(pair, "pair"), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert effector_points(pair, "nothing").shape == (0, 3)
    assert main_window.open_path(default_scene())
    outputs = main_window.session.latest_frame.outputs
    np.testing.assert_array_equal(effector_points(outputs, "tip"), [[outputs[f"tip.{axis}"] for axis in "xyz"]])


def test_the_asynchronous_preconditioner_is_switched_on_live_and_reported(main_window, qtbot):
    """[solver.linear] type = "async" chosen while the scene is open: the next frames run on it (the cable reaches
    its new value, the equilibrium steps ran CG iterations) and the timing line shows the CG iterations and the
    age of the factorization."""
    from softsim.mechanics.async_preconditioner import AsyncPreconditionedSolver

    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter("solver.linear.type", "async") is None
    assert session.set_parameter(CABLE, 4.0) is None
    frame = _wait_for_edit(qtbot, session, lambda f: f.report.preconditioner is not None
                           and f.outputs["cable.displacement"] == pytest.approx(4.0))
    assert frame.report.converged
    state = remote.ask(qtbot, session, remote.solver_state)
    assert state["linear_type"] == AsyncPreconditionedSolver.__name__
    assert state["cg_iterations"] >= 1
    main_window.flush_frame()
    assert "Krylov " in main_window.timing_label.text() and " old" in main_window.timing_label.text()
