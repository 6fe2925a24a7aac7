"""What daily use found (issue 30): the status bar at 1280 px, the health box after switching scenes, the
recording clock."""

import numpy as np
import pytest
from PyQt6.QtGui import QFontMetrics
from PyQt6.QtWidgets import QDockWidget

from softsim.app.resources import default_scene, resource_path
from softsim.app.status_labels import ElidedLabel, elide_words
from tests.app.conftest import run_frames

pytestmark = pytest.mark.gui


def test_elide_words_keeps_whole_words():
    def fits(text):
        return len(text) <= 12

    assert elide_words("short text", fits) == "short text"
    assert elide_words("node 54 x=(1, 2, 3) mm", fits) == "node 54…"  # "node 54 x=(1…" would be 13
    assert elide_words("averyveryverylongword and more", fits) == "…"


def test_the_status_bar_cuts_texts_at_words_and_shows_them_whole_in_the_tooltip(main_window, qtbot):
    main_window.resize(1280, 800)
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    long_pick = ("selected node 1234  x=(12.345, -67.891, 23.456) mm  u=(0.00123, -4.56, 7.89) |u|=9.1234 mm  "
                 "von Mises=123.45 kPa")
    long_warning = ("last warning: cable 'cable' is short of its target: displacement 4.2 mm of 8 mm (the frame did "
                    "not converge: it reached 52 % of the requested change)")
    main_window.pick_label.setText(long_pick)
    main_window.warning_label.setText(long_warning)
    main_window.timing_label.setText("solve 123.4 ms (Newton 12 it, equilibrium 7 steps, CG 45 it, 3 old) render 12 ms")
    labels = [label for label in main_window.statusBar().findChildren(ElidedLabel) if label.text()]
    # the status bar lays the labels out anew (posted events): each gets the width it asks for
    qtbot.waitUntil(lambda: all(label.width() >= label.sizeHint().width() for label in labels), timeout=20000)
    assert {main_window.pick_label, main_window.warning_label, main_window.timing_label} <= set(labels)
    total = 0
    for label in labels:
        shown, text = label.shown(), label.text()
        metrics = QFontMetrics(label.font())
        assert metrics.horizontalAdvance(shown) <= label.width(), (shown, label.width(), text)
        assert shown != "…", (text, label.width(), [(lab.text()[:20], lab.width()) for lab in labels])
        if shown != text:
            assert shown.endswith("…") and label.toolTip() == text
            kept = shown[:-1]
            assert text.startswith(kept) and text[len(kept)] in " ,;:|"  # cut between two words
        total += label.width()
    assert main_window.pick_label.text() == long_pick  # the program reads the whole text
    assert total <= main_window.statusBar().width()


def test_switching_scenes_leaves_no_coloured_health_box(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter("body.finger.cable.cable.maxPositiveDisp", 2.0) is None
    assert session.set_parameter("body.finger.cable.cable.value", 6.0) is None
    run_frames(qtbot, main_window, 1)
    assert main_window.health_label.text() == "ACTUATOR LIMITED"
    assert "background" in main_window.health_label.styleSheet()
    assert main_window.open_path(resource_path("scenes", "pneunet.toml"))
    assert main_window.health_label.text() == "" and main_window.health_label.styleSheet() == ""


def test_the_recording_clock_is_chosen_in_the_file_menu(main_window, qtbot, tmp_path):
    assert main_window.open_path(default_scene())
    assert main_window.record_timing == "wall"
    main_window.record_timing_actions["simulated"].trigger()
    assert main_window.record_timing == "simulated" and main_window.record_timing_actions["simulated"].isChecked()
    assert not main_window.record_timing_actions["wall"].isChecked()
    main_window.start_recording(tmp_path / "rec")
    assert main_window.recorder.timing == "simulated"
    assert "simulated time" in main_window.statusBar().currentMessage()
    main_window.stop_recording()


def test_a_dynamic_scene_shows_its_simulated_time(main_window, qtbot):
    assert main_window.open_path(resource_path("scenes", "gripper_grasp.toml"))
    dt = main_window.session.spec.scene.dt
    frame = run_frames(qtbot, main_window, 2)
    assert f"t = {frame.index * dt:.4g} s" in main_window.frame_label.text()


def test_the_range_label_names_the_rate_limit(main_window):
    assert main_window.open_path(resource_path("scenes", "pneunet.toml"))
    control = main_window.dock("actuators_dock").widget().controls["cavity"]
    assert control.range_label.text() == ("pressure in [0, 60] kPa (minPressure, maxPressure); at most 5 kPa per "
                                          "frame (maxPressureVariation)")


def test_timings_show_in_the_view_when_asked(main_window, qtbot):
    assert main_window.open_path(default_scene())
    assert main_window.viewport.timings_text is None
    main_window.timings_action.trigger()
    run_frames(qtbot, main_window, 1)
    run_frames(qtbot, main_window, 1)  # the text of a draw is the frame before it's (shown with the next paint)
    shown = main_window.viewport.timings_text
    assert shown == f"{main_window.frame_label.text()}\n{main_window.timing_label.text()}"
    assert "assembly" in shown and "render" in shown
    main_window.timings_action.trigger()
    assert main_window.viewport.timings_text is None


def test_a_camera_view_is_saved_by_name_and_restored(main_window, qtbot, private_config_dir):
    import numpy as np

    from softsim.app.settings import Settings

    assert main_window.open_path(default_scene())
    main_window.set_camera("top")
    top = main_window.viewport.camera_view()
    main_window.save_camera_view("from above")
    main_window.set_camera("front")
    assert not np.allclose(main_window.viewport.camera_view()["position"], top["position"])
    assert [a.text() for a in main_window.saved_views_menu.actions()] == ["from above"]
    main_window.saved_views_menu.actions()[0].trigger()
    restored = main_window.viewport.camera_view()
    for key in ("position", "focal_point", "view_up"):
        np.testing.assert_allclose(restored[key], top[key], rtol=1e-12)
    assert Settings(private_config_dir).camera_views["from above"]["position"] == top["position"]  # on disk
    with pytest.raises(KeyError, match="saved: from above"):
        main_window.restore_camera_view("nope")


def test_a_plots_note_fits_beside_its_csv_button_at_1280_px(main_window, qtbot):
    """A log plot's note on values it cannot draw is shown whole beside the title and the CSV button (it was
    cut to "3 value(s) <= 0 not dr" at 1280 px); the whole sentence is its tooltip."""
    main_window.resize(1280, 800)
    main_window.show()
    assert main_window.open_path(default_scene())
    plots = main_window.findChild(QDockWidget, "plots_dock").widget()
    plot = plots.constraint_plot
    plot.set_data(np.arange(5.0), {"error": np.array([1e-2, 0.0, 1e-4, 0.0, 0.0])})
    qtbot.waitUntil(lambda: plot.status.width() > 0 and plot.status.isVisible(), timeout=20000)
    metrics = QFontMetrics(plot.status.font())
    assert plot.status.text() == "3 hidden (<= 0)"
    assert metrics.horizontalAdvance(plot.status.text()) <= plot.status.width(), plot.status.width()
    assert plot.status.toolTip() == "3 value(s) <= 0 are not drawn on the log axis"
    assert plot.export_button.isVisible()
