"""The main window with a running scene: frames drawn in place, the cable, the mouse drag, failures, files."""

from pathlib import Path

import meshio
import numpy as np
import pytest
from PyQt6.QtCore import QPoint, Qt, QTimer
from PyQt6.QtWidgets import QMessageBox, QPushButton

from softsim.app.frames import has_field
from softsim.app.recording import count_video_frames
from softsim.app.resources import default_scene, resource_path
from softsim.mechanics.scene import load_scene
from tests.app import remote
from tests.app.conftest import grab_viewport_pixels, run_frames, share_of_non_background

pytestmark = pytest.mark.gui
BACKGROUND_RGB = (0x20, 0x24, 0x2B)
SCENES = sorted(Path(str(resource_path("scenes"))).glob("*.toml"))
CABLE = "body.finger.cable.cable.value"


def _expected_nodal_fields(qtbot, session, x):
    """von Mises per element (m,), its nodal average (n,) and the nodal strain energy density (n,) at ``x``,
    straight from the elasticity where the scene lives."""
    return remote.ask(qtbot, session, remote.nodal_fields, np.asarray(x))


def _count_field_passes(qtbot, session):
    """Count the von Mises and energy density passes of the open scene's elasticity (patched on the instance,
    where the scene lives); returns a function that reads the counts."""
    remote.ask(qtbot, session, remote.count_passes, ("von_mises", "strain_energy_density"))
    return lambda: remote.ask(qtbot, session, remote.counts)


def _errors(window) -> list[str]:
    problems = []
    window.session.message.connect(lambda level, text: problems.append(text) if level == "error" else None)
    return problems


@pytest.mark.parametrize("scene_path", SCENES, ids=[p.stem for p in SCENES])
def test_every_shipped_scene_opens_and_runs_frames_drawn_in_place(main_window, qtbot, scene_path):
    errors = _errors(main_window)
    assert main_window.open_path(scene_path), main_window.session.last_error
    viewport = main_window.viewport
    body = viewport.bodies["body"]
    actor_ids = {name: id(view.actor) for name, view in viewport.bodies.items()}
    actor_count = viewport.renderer.GetActors().GetNumberOfItems()
    surface = body.surface
    frame = run_frames(qtbot, main_window, 3)
    assert errors == []
    assert frame.index == main_window.session.runner.frames_run == 3
    assert np.all(np.isfinite(frame.x))
    # the frame was written into the same arrays of the same actors
    assert {name: id(view.actor) for name, view in viewport.bodies.items()} == actor_ids
    assert viewport.renderer.GetActors().GetNumberOfItems() == actor_count
    assert viewport.bodies["body"].surface is surface
    np.testing.assert_array_equal(surface.points, frame.x[body.surface_nodes])
    np.testing.assert_allclose(surface.point_data["field"], frame.displacement[body.surface_nodes])


def test_the_default_scene_is_the_finger():
    assert default_scene().name == "finger.toml" and default_scene().exists()


def test_pulling_the_cable_bends_the_finger(main_window, qtbot):
    assert main_window.open_path(default_scene())
    main_window.viewport.setFixedSize(800, 600)  # the panels beside it resize as their content changes
    qtbot.wait(20)
    before = run_frames(qtbot, main_window, 1)
    pixels_before = grab_viewport_pixels(main_window)
    assert main_window.session.set_parameter(CABLE, 5.0) is None
    after = run_frames(qtbot, main_window, 6)
    tip = int(np.argmin(before.x[:, 0]))  # the finger points along -x; its base is fixed at x in [-15, 5]
    moved = after.x[tip] - before.x[tip]
    # pulling the cable (y = 12.5, above the mid-plane) lifts the tip: measured ~ +6 mm in y for 5 mm
    assert moved[1] > 2.0, moved
    # the static frames approach the imposed 5 mm (measured 3.27 mm after 6 frames: linearised projection)
    assert 2.5 < after.outputs["cable.displacement"] <= 5.0 + 1e-6
    changed = share_of_non_background(grab_viewport_pixels(main_window), pixels_before)
    assert changed > 0.01, f"only {changed:.4f} of the pixels changed"


def test_a_node_dragged_with_the_mouse_moves_the_body_and_it_returns_on_release(main_window, qtbot):
    assert main_window.open_path(default_scene())
    viewport = main_window.viewport
    viewport.setFixedSize(800, 600)  # the panels beside it resize as their content changes
    qtbot.wait(20)
    # the equilibrium under gravity (tip sag ~7.4 mm); the finger scene re-equilibrates once per frame, so a
    # few frames make it exact
    rest = run_frames(qtbot, main_window, 6).x.copy()
    main_window.set_camera("front")  # looking along -z, y up: moving the mouse up drags the tip up
    lo, hi = rest.min(axis=0), rest.max(axis=0)
    near_tip = rest[:, 0] < lo[0] + 1e-6
    aim = np.array([lo[0] + 2.0, rest[near_tip, 1].mean(), hi[2]])  # on the front face, 2 mm from the tip
    x, y = viewport.widget_position(aim)
    picked = []
    viewport.node_picked.connect(lambda node, position: picked.append(node))
    start = QPoint(round(x), round(y))
    qtbot.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, start)
    assert viewport.dragging and picked, "the press did not pick a node of the finger"
    node = picked[0]
    assert np.linalg.norm(rest[node] - aim) < 8.0  # a node of the picked triangle (mesh size ~5 mm)
    qtbot.waitUntil(lambda: "node" in main_window.pick_label.text(), timeout=60000)  # probed on the worker
    for step in range(1, 7):
        qtbot.mouseMove(viewport, QPoint(start.x(), start.y() - 15 * step))
        qtbot.wait(30)
    main_window.session.pause()
    frame = run_frames(qtbot, main_window, 2)
    assert frame.drag_node == node
    lift = frame.x[node, 1] - rest[node, 1]
    assert lift > 5.0, f"the dragged node rose {lift:.2f} mm"
    # the drag line runs from the node to the mouse's target (deformation scale 1: as simulated)
    np.testing.assert_allclose(viewport.drag_line, [frame.x[node], frame.drag_target], atol=1e-9)
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier,
                       QPoint(start.x(), start.y() - 90))
    assert not viewport.dragging
    frame = run_frames(qtbot, main_window, 6)
    assert frame.drag_node == -1 and viewport.drag_line is None
    # back to the gravity equilibrium (static frames, one re-equilibration iteration each)
    assert np.linalg.norm(frame.x[node] - rest[node]) < 0.01 * lift


def test_the_gui_handles_a_click_while_a_slow_frame_runs(main_window, qtbot, tmp_path):
    assert main_window.open_path(default_scene())
    session = main_window.session
    started, release = tmp_path / "started", tmp_path / "release"
    remote.ask(qtbot, session, remote.slow_next_step, str(started), str(release))  # lasts until the click
    session.step_once()
    qtbot.waitUntil(started.exists, timeout=60000)
    clicks, ticks = [], []
    button = QPushButton("click me", main_window)
    button.clicked.connect(lambda: clicks.append(session.runner.frames_attempted))
    button.show()
    QTimer.singleShot(0, lambda: ticks.append(1))
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ticks == [1], timeout=60000)
    assert clicks == [0]  # handled while the first frame was still running
    assert not release.exists()
    release.write_text("go")
    qtbot.waitUntil(lambda: session.runner.frames_attempted == 1, timeout=60000)


def test_a_failed_frame_shows_the_reason_keeps_the_last_state_and_the_session_goes_on(main_window, qtbot):
    assert main_window.open_path(default_scene())
    good = run_frames(qtbot, main_window, 1)

    remote.ask(qtbot, main_window.session, remote.fail_frames, "Newton solve diverged: test reason")
    shown = run_frames(qtbot, main_window, 1)
    assert main_window.banner.isVisible()
    assert "Newton solve diverged: test reason" in main_window.banner.text()
    # the banner and the status bar name the same frames: the one that failed and the one shown
    assert f"frame {good.index + 1} failed" in main_window.banner.text()
    assert f"the last good state, frame {good.index}, is shown" in main_window.banner.text()
    assert main_window.frame_label.text().startswith(f"frame {good.index} (frame {good.index + 1} failed)")
    assert "test reason" in main_window.warning_label.text()
    np.testing.assert_array_equal(shown.x, good.x)
    body = main_window.viewport.bodies["body"]
    np.testing.assert_array_equal(body.surface.points, good.x[body.surface_nodes])
    remote.ask(qtbot, main_window.session, remote.heal_frames)
    assert main_window.session.set_parameter(CABLE, 3.0) is None
    healed = run_frames(qtbot, main_window, 2)
    # the edit made while paused solves a frame of its own unless the steps reached the worker first
    assert healed.report.ok and healed.index in (good.index + 2, good.index + 3)
    assert not main_window.banner.isVisible()


def test_a_real_divergence_is_flagged_keeps_the_shape_and_setting_back_recovers(main_window, qtbot):
    """A 1 km cable pull on the finger diverges: the banner names it, the view keeps the last good shape, and
    setting 3 mm again gives a converged frame at 3 mm."""
    assert main_window.open_path(default_scene())
    assert main_window.session.set_parameter(CABLE, 3.0) is None
    good = run_frames(qtbot, main_window, 2)
    assert main_window.session.set_parameter(CABLE, 1e6) is None
    shown = run_frames(qtbot, main_window, 1)
    assert main_window.banner.isVisible()
    assert "diverged" in main_window.banner.text()
    np.testing.assert_array_equal(shown.x, good.x)
    assert main_window.session.set_parameter(CABLE, 3.0) is None
    healed = run_frames(qtbot, main_window, 1)
    assert healed.report.ok and healed.report.converged
    assert healed.outputs["cable.displacement"] == pytest.approx(3.0, rel=1e-9)
    assert not main_window.banner.isVisible()


def test_a_frame_that_does_not_converge_shows_a_warning(main_window, qtbot):
    """One Gauss-Seidel sweep cannot reach 1e-14: each edit made while paused solves a frame (static scene),
    and the frame of the last one is flagged: banner and health label name the solver and its error. (With
    SOFA's tangent: with the exact one the cable row is solved exactly, not by Gauss-Seidel.)"""
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter("body.finger.material.corotationalTangent", "sofa") is None
    assert session.set_parameter("solver.constraint.maxIterations", 1) is None
    assert session.set_parameter("solver.constraint.tolerance", 1e-14) is None
    assert session.set_parameter(CABLE, 6.0) is None
    qtbot.waitUntil(lambda: session.latest_frame.outputs.get("cable.displacement", 0.0) > 1.0, timeout=60000)
    main_window.flush_frame()
    frame = session.latest_frame
    assert frame.report.ran and not frame.report.ok and "did not converge" in frame.report.message
    assert main_window.banner.isVisible() and "BlockGaussSeidel did not converge" in main_window.banner.text()
    assert main_window.health_label.text() == "NOT CONVERGED"
    error = frame.report.constraint.error
    assert f"error {error:.3g} mm after 1 iteration(s)" in main_window.banner.text()


def test_a_broken_scene_or_mesh_gives_a_dialog_and_the_session_keeps_running(main_window, qtbot, tmp_path):
    assert main_window.open_path(default_scene())
    broken_scene = tmp_path / "broken.toml"
    broken_scene.write_text("[scene]\nname = 3\n[[body]]\nmesh = 'missing.vtu'\n")
    broken_mesh = tmp_path / "broken.msh"
    broken_mesh.write_text("not a mesh at all\n")
    for broken in (broken_scene, broken_mesh):
        assert not main_window.open_path(broken)
        dialog = main_window.findChild(QMessageBox, "error_dialog")
        assert dialog is not None and broken.name in dialog.text()
        dialog.close()
        qtbot.wait(10)
    assert main_window.session.path == default_scene().resolve()
    frame = run_frames(qtbot, main_window, 2)
    assert frame.index == 2


def test_save_reload_reset_export_screenshot_and_recording(main_window, qtbot, tmp_path):
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter(CABLE, 4.0) is None
    assert session.set_parameter("body.finger.material.youngModulus", 900.0) is None
    bent = run_frames(qtbot, main_window, 4)
    saved = tmp_path / "tuned" / "finger_tuned.toml"
    saved.parent.mkdir()
    main_window.save_scene(saved)
    qtbot.waitUntil(lambda: session.path == saved.resolve(), timeout=60000)
    spec = load_scene(saved)
    assert spec.bodies[0].cables[0].value == 4.0 and spec.bodies[0].material.youngModulus == 900.0
    assert str(saved.resolve()) == main_window.settings.recent_files[0]
    # export the shown frame: it was made without stress (displacement shown), the .vtu still has every field
    assert not bent.has_von_mises and not has_field(bent, "energy_density")
    shown = session.latest_frame
    vtu = tmp_path / "frame.vtu"
    exported = []
    main_window.export_frame(vtu, exported.append)
    qtbot.waitUntil(lambda: len(exported) == 1, timeout=60000)
    assert exported == [None] and session.latest_frame is shown  # computed for the export only
    written = meshio.read(vtu)
    np.testing.assert_allclose(written.points, bent.x)
    np.testing.assert_allclose(written.point_data["displacement"], bent.x - session.rest_positions)
    np.testing.assert_allclose(written.point_data["displacement_magnitude"], bent.displacement)
    von_mises, von_mises_nodal, energy_nodal = _expected_nodal_fields(qtbot, session, bent.x)
    np.testing.assert_allclose(written.cell_data["von_mises"][0], von_mises, rtol=1e-12)
    np.testing.assert_allclose(written.point_data["von_mises_nodal"], von_mises_nodal, rtol=1e-12)
    np.testing.assert_allclose(written.point_data["strain_energy_density_nodal"], energy_nodal, rtol=1e-12)
    assert float(von_mises.max()) > 0.0 and float(energy_nodal.max()) > 0.0
    main_window.export_frame(vtu / "frame.vtu", exported.append)  # a file is no directory
    qtbot.waitUntil(lambda: len(exported) == 2, timeout=60000)
    assert isinstance(exported[1], OSError)
    dialog = main_window.findChild(QMessageBox, "error_dialog")
    assert dialog is not None and "frame.vtu" in dialog.text()
    dialog.close()
    # reset: back to rest, tuned values kept
    session.reset()
    qtbot.waitUntil(lambda: session.latest_frame.index == 0, timeout=60000)
    assert float(np.max(session.latest_frame.displacement)) == 0.0
    assert session.spec.bodies[0].cables[0].value == 4.0
    # reload reads the saved file again
    assert main_window.reload()
    assert session.spec.bodies[0].cables[0].value == 4.0 and session.latest_frame.index == 0
    # screenshot of the whole window and a recording of frames
    png = tmp_path / "window.png"
    assert main_window.save_screenshot(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    main_window.start_recording(tmp_path / "recording", timing="frames")
    for _ in range(3):  # three frames, each drawn (a throttled draw would merge frames)
        run_frames(qtbot, main_window, 1)
    recorded_count = main_window.recorded_frames
    video = main_window.stop_recording()
    recorded = sorted((tmp_path / "recording").glob("frame_*.png"))
    assert recorded and recorded[0].name == "frame_00000.png"
    assert recorded_count == len(recorded) >= 3
    # the video: ffmpeg (an independent reader) decodes as many frames as PNGs were written
    assert video == tmp_path / "recording" / "softsim.mp4"
    assert count_video_frames(video) == len(recorded)


def test_opening_a_bare_mesh_gets_a_default_scene_with_a_fixed_base(main_window, qtbot):
    assert main_window.open_path(resource_path("meshes", "cube.vtu"))
    session = main_window.session
    assert session.kind == "mesh" and session.fixed_nodes.size > 0
    assert session.spec.bodies[0].fixed[0].box is not None
    frame = run_frames(qtbot, main_window, 2)
    assert np.all(np.isfinite(frame.x)) and frame.index == 2


def test_display_options_colour_style_overlays_range_and_camera(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    assert session.set_parameter(CABLE, 5.0) is None
    frame = run_frames(qtbot, main_window, 3)
    body = main_window.viewport.bodies["body"]
    nodes = body.surface_nodes
    for field in ("von_mises", "energy_density", "displacement"):
        main_window.set_field(field)
        qtbot.waitUntil(lambda f=field: has_field(session.latest_frame, f), timeout=60000)
        main_window.flush_frame()
        values = {"von_mises": session.latest_frame.von_mises_nodal, "displacement": frame.displacement,
                  "energy_density": session.latest_frame.energy_density_nodal}[field]
        np.testing.assert_allclose(body.surface.point_data["field"], values[nodes])
        assert body.scalar_bar.GetTitle() == main_window.viewport.bodies["body"].field_name
    assert float(np.max(session.latest_frame.energy_density_nodal)) > 0.0
    main_window.set_style("wireframe")
    assert body.actor.prop.style == "Wireframe"
    main_window.set_style("surface with edges")
    assert body.actor.prop.style == "Surface" and body.actor.prop.show_edges
    main_window.set_color_range((0.0, 2.0))
    assert tuple(body.actor.mapper.scalar_range) == (0.0, 2.0)
    run_frames(qtbot, main_window, 1)
    assert tuple(body.actor.mapper.scalar_range) == (0.0, 2.0)  # a fixed range survives new frames
    main_window.set_color_range(None)
    with pytest.raises(ValueError, match="lo < hi"):
        main_window.viewport.set_color_range((2.0, 1.0))
    cables = main_window.viewport.overlay_actors["cables"]
    assert len(cables) == 1 and cables[0].GetVisibility()
    path = frame.cable_paths["cable"]
    assert path.shape == (15, 3)  # pull point + 14 cable points
    np.testing.assert_allclose(path[0], [0.0, 12.5, 2.5])
    main_window.overlay_actions["cables"].trigger()
    assert not cables[0].GetVisibility()
    assert len(main_window.viewport.overlay_actors["fixed"]) == 1
    main_window.set_camera("front")
    camera = main_window.viewport.camera
    direction = np.subtract(camera.position, camera.focal_point)
    assert direction[2] > 0 and abs(direction[0]) < 1e-9 * np.linalg.norm(direction)
    np.testing.assert_allclose(camera.up, (0.0, 1.0, 0.0), atol=1e-12)
    main_window.set_camera("top")
    direction = np.subtract(camera.position, camera.focal_point)
    assert direction[1] > 0 and abs(direction[2]) < 1e-9 * np.linalg.norm(direction)


def test_frames_carry_only_the_shown_field_and_a_switch_while_paused_shows_the_right_values(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    passes = _count_field_passes(qtbot, session)
    assert session.set_parameter(CABLE, 5.0) is None
    frame = run_frames(qtbot, main_window, 3)
    # displacement shown: the worker computed neither the stress nor the energy density
    assert passes() == {"von_mises": 0, "strain_energy_density": 0}
    assert session.display_field == "displacement"
    assert [has_field(frame, f) for f in ("displacement", "von_mises", "energy_density")] == [True, False, False]
    assert frame.von_mises.shape == frame.von_mises_nodal.shape == frame.energy_density_nodal.shape == (0,)
    body = main_window.viewport.bodies["body"]
    nodes = body.surface_nodes
    # paused: switching to von Mises computes it for the shown frame and draws it
    main_window.set_field("von_mises")
    assert session.display_field == "von_mises"
    qtbot.waitUntil(lambda: session.latest_frame.has_von_mises, timeout=60000)
    main_window.flush_frame()
    shown = session.latest_frame
    assert shown.index == frame.index and shown.report.frame == frame.report.frame
    assert passes() == {"von_mises": 1, "strain_energy_density": 0}  # once for the switch, for the shown frame
    np.testing.assert_array_equal(shown.x, frame.x)
    von_mises, von_mises_nodal, energy_nodal = _expected_nodal_fields(qtbot, session, frame.x)
    np.testing.assert_allclose(shown.von_mises, von_mises, rtol=1e-12)
    np.testing.assert_allclose(body.surface.point_data["field"], von_mises_nodal[nodes], rtol=1e-12)
    assert float(von_mises_nodal[nodes].max()) > 0.0
    assert body.scalar_bar.GetTitle() == "von Mises stress [kPa]"  # the finger is in mm-kg-s
    # the next frames carry von Mises (computed by the worker with the frame), and only it
    after = run_frames(qtbot, main_window, 1)
    assert after.index == frame.index + 1 and after.has_von_mises and not has_field(after, "energy_density")
    assert passes() == {"von_mises": 2, "strain_energy_density": 0}
    np.testing.assert_allclose(after.von_mises_nodal, _expected_nodal_fields(qtbot, session, after.x)[1], rtol=1e-12)
    np.testing.assert_allclose(body.surface.point_data["field"], after.von_mises_nodal[nodes])
    # two quick switches while paused, from a frame with neither field: the field switched to last is shown
    main_window.set_field("displacement")
    plain = run_frames(qtbot, main_window, 1)
    assert not plain.has_von_mises and not has_field(plain, "energy_density")
    main_window.set_field("von_mises")
    main_window.set_field("energy_density")  # before the worker answered the first switch
    qtbot.waitUntil(lambda: has_field(session.latest_frame, "energy_density"), timeout=60000)
    main_window.flush_frame()
    assert session.latest_frame.index == plain.index
    energy_nodal = _expected_nodal_fields(qtbot, session, plain.x)[2]
    np.testing.assert_allclose(session.latest_frame.energy_density_nodal, energy_nodal, rtol=1e-12)
    np.testing.assert_allclose(body.surface.point_data["field"], energy_nodal[nodes], rtol=1e-12)


def test_the_panels_show_the_frame_the_view_draws_and_a_deleted_panel_gets_no_frame(main_window, qtbot):
    """Readouts follow the frames the window draws (``frame_shown``), not every frame received: a frame the draw
    pacer holds back changes no readout until it is drawn, so the window is composed once per drawn frame. A
    panel deleted while the scene runs is disconnected: a frame shown after it is gone does not reach it."""
    from softsim.app.panels.actuators import ActuatorsPanel

    assert main_window.open_path(default_scene())
    session = main_window.session
    run_frames(qtbot, main_window, 1)
    panel = next(d.widget() for d in main_window.docks if isinstance(d.widget(), ActuatorsPanel))
    readout = panel.controls["cable"].readouts["cable.displacement"]
    shown = []
    session.frame_shown.connect(shown.append)
    main_window.draws.last_seconds = 3600.0  # the pacer holds every frame back until flushed
    assert session.set_parameter(CABLE, 4.0) is None
    qtbot.waitUntil(lambda: session.model.frame.outputs["cable.displacement"] > 3.9, timeout=60000)
    assert shown == [] and float(readout.text()) < 3.9  # received, not drawn: the readout waits for the draw
    main_window.flush_frame()
    assert shown == [session.model.frame] and float(readout.text()) == pytest.approx(4.0, abs=1e-6)
    main_window.draws.last_seconds = 0.0
    # a second actuators panel on the same session, deleted: the next frame shown does not reach its widgets
    extra = ActuatorsPanel(session)
    calls = []
    extra.update_frame = calls.append  # the instance's own, connected below with the panel as owner
    session.frame_shown.connect(extra.update_frame, owner=extra)
    with qtbot.waitSignal(extra.destroyed, timeout=60000):
        extra.deleteLater()
    session.shown(session.model.frame)  # would raise "wrapped C/C++ object ... has been deleted" if still connected
    assert calls == []


def test_without_a_window_every_frame_is_shown():
    from softsim.app.session import Session

    session = Session(qt=False, process=False)
    ready, shown = [], []
    session.frame_ready.connect(ready.append)
    session.frame_shown.connect(shown.append)
    session.model.frame = object()
    session.model.frame = object()
    assert len(ready) == 2 and shown == ready
