"""The view draws at a lower cost while frames stream in or a mouse button is held down on the window, and at full
quality again once the view is still; a static scene's frame at rest is drawn at once (issue 30)."""

from PyQt6.QtCore import QPoint, Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QSlider, QWidget

import softsim.app.main_window as main_window_module
from softsim.app.resources import default_scene
from tests.app.conftest import run_frames


def _quality(viewport) -> tuple[int, bool, bool]:
    """(multisamples, the main renderer's order-independent transparency, the top layer's)."""
    return (viewport.render_window.GetMultiSamples(), bool(viewport.renderer.GetUseOIT()),
            bool(viewport.top_renderer.GetUseOIT()))


def _renders(viewport) -> list[int]:
    count = [0]
    viewport.render_window.AddObserver("StartEvent", lambda *_: count.__setitem__(0, count[0] + 1))
    return count


def _default_scene_drawn(main_window, qtbot, monkeypatch):
    """The default scene opened, one frame solved and drawn; any paint counts as slow (the view draws fast while
    busy whatever the OpenGL). Returns the view."""
    monkeypatch.setattr(main_window_module, "FAST_DRAW_THRESHOLD", 0.0)
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    viewport = main_window.viewport
    qtbot.waitUntil(lambda: viewport.last_paint_seconds > 0, timeout=10000)
    return viewport


def test_a_mouse_button_held_on_the_window_draws_fast_until_released(main_window, qtbot, monkeypatch):
    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    full = _quality(viewport)
    assert full == (viewport.quality_samples, True, True) and viewport.quality_samples > 0
    slider = next(s for s in main_window.findChildren(QSlider) if s.isVisible() and s.isEnabled())

    renders = _renders(viewport)
    QTest.mousePress(slider, Qt.MouseButton.LeftButton, pos=QPoint(5, slider.height() // 2))
    assert main_window.interaction.active and viewport.fast_drawing
    assert _quality(viewport) == (0, False, False)
    viewport.render()  # the view drawn while the button is held (a frame, a turn of the camera)
    assert renders[0] == 1
    QTest.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=QPoint(5, slider.height() // 2))
    assert not main_window.interaction.active and not viewport.fast_drawing
    assert _quality(viewport) == full
    qtbot.waitUntil(lambda: renders[0] >= 2, timeout=10000)  # drawn again at full quality


def test_a_click_that_draws_nothing_renders_nothing_after_it(main_window, qtbot, monkeypatch):
    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    qtbot.wait(200)  # the paints the open asked for are done
    renders = _renders(viewport)
    label = main_window.frame_label  # a click on the status bar changes nothing in the view
    QTest.mouseClick(label, Qt.MouseButton.LeftButton)
    assert not viewport.fast_drawing and _quality(viewport)[0] == viewport.quality_samples
    qtbot.wait(200)
    assert renders[0] == 0


def test_a_press_on_another_window_changes_nothing(main_window, qtbot, monkeypatch):
    monkeypatch.setattr(main_window_module, "FAST_DRAW_THRESHOLD", 0.0)
    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    qtbot.waitExposed(other)
    QTest.mousePress(other, Qt.MouseButton.LeftButton)
    assert not main_window.interaction.active and not main_window.viewport.fast_drawing
    QTest.mouseRelease(other, Qt.MouseButton.LeftButton)


def test_a_static_scene_at_rest_is_drawn_at_once_and_at_full_quality_once_still(main_window, qtbot, monkeypatch):
    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    drawn = []
    update_frame = viewport.update_frame
    viewport.update_frame = lambda frame: (drawn.append(frame), update_frame(frame))
    fast_while_playing = []
    main_window.session.running_changed.connect(lambda running: fast_while_playing.append(viewport.fast_drawing))
    main_window.draws.min_interval = 3600.0  # the pace would hold every frame back for an hour
    assert main_window.session.set_parameter(_first_cable_value(main_window), 2.0) is None
    main_window.session.play()
    assert fast_while_playing == [True]  # frames stream in: fast
    qtbot.waitUntil(lambda: main_window.at_rest, timeout=60000)
    frame = drawn[-1]
    assert frame.report is not None and frame.report.unchanged  # the frame at rest was drawn despite the pace
    assert frame is main_window.session.latest_frame
    qtbot.waitUntil(lambda: not viewport.fast_drawing, timeout=10 * 1000 * main_window_module.STILL_SECONDS)
    assert _quality(viewport) == (viewport.quality_samples, True, True)
    main_window.session.pause()


def test_edits_that_come_between_frames_at_rest_keep_the_view_drawing_fast(main_window, qtbot, monkeypatch):
    """A slider held down by the keyboard (or a script) sends an edit every 40 ms; a quick scene reaches rest
    between them. Switching the anti-aliasing on for each frame at rest made most draws full-quality ones (55 of
    60 in bench_gui's finger drag, 77 ms each against 37 ms fast): the view stays fast until it has been still
    for STILL_SECONDS."""
    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    switches = []
    set_fast_drawing = viewport.set_fast_drawing
    monkeypatch.setattr(viewport, "set_fast_drawing", lambda fast: (switches.append(fast), set_fast_drawing(fast)))
    session, path = main_window.session, _first_cable_value(main_window)
    # the edits come faster than the still time however long a loaded machine takes between them
    main_window.still_timer.setInterval(3600 * 1000)
    session.play()
    for value in (1.0, 1.5, 2.0, 2.5):
        assert session.set_parameter(path, value) is None
        # the frame at rest between two edits (not the one before the edit)
        qtbot.waitUntil(lambda v=value: main_window.at_rest and abs(
            session.latest_frame.outputs.get("cable.displacement", -1.0) - v) < 1e-6, timeout=60000)
        assert viewport.fast_drawing
    assert switches == [True]  # fast once, while the edits came
    main_window.still_timer.start(100)  # the still time is up
    qtbot.waitUntil(lambda: not viewport.fast_drawing, timeout=10000)
    assert switches == [True, False]  # and full quality once still
    session.pause()


def _first_cable_value(window) -> str:
    """The key path of the default scene's first cable's value."""
    spec = window.session.spec
    body = spec.bodies[0]
    return f"body.{body.name}.cable.{body.cables[0].name}.value"


def _edges(viewport) -> bool:
    return bool(viewport.bodies["body"].actor.prop.show_edges)


def test_fast_drawing_leaves_the_edges_out_and_full_quality_draws_them_again(main_window, qtbot, monkeypatch):
    """The edges of the "surface with edges" style are a separate pass over the surface (about a tenth of a fast
    draw on a software OpenGL): left out while the view draws fast, drawn again at full quality; the style the
    user chose is kept."""
    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    assert viewport.style == "surface with edges" and _edges(viewport)
    slider = next(s for s in main_window.findChildren(QSlider) if s.isVisible() and s.isEnabled())
    QTest.mousePress(slider, Qt.MouseButton.LeftButton, pos=QPoint(5, slider.height() // 2))
    assert viewport.fast_drawing and not _edges(viewport)
    viewport.set_style("surface")
    viewport.set_style("surface with edges")  # chosen while fast: drawn once the view is still
    assert not _edges(viewport)
    QTest.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=QPoint(5, slider.height() // 2))
    assert not viewport.fast_drawing and _edges(viewport) and viewport.style == "surface with edges"
    viewport.set_style("surface")
    viewport.set_fast_drawing(True)
    viewport.set_fast_drawing(False)
    assert not _edges(viewport)  # a style without edges stays without them


def test_the_view_has_no_back_lights_and_looks_as_with_them(main_window, qtbot, monkeypatch):
    """pyvista's light kit has two lights shining from behind the scene; they light only faces turned away from
    the camera, and a software OpenGL pays for each light on each pixel. Without them the finger's view differs
    from the whole kit's by under a grey level on average, and on no pixel by more than a few."""
    import numpy as np

    from tests.app.conftest import grab_viewport_pixels

    viewport = _default_scene_drawn(main_window, qtbot, monkeypatch)
    lights = list(viewport.renderer.GetLights())
    assert len(lights) == 3
    assert all(not light.LightTypeIsCameraLight() or light.GetPosition()[2] > 0 for light in lights)
    without = grab_viewport_pixels(main_window).astype(np.int16)
    viewport.enable_lightkit()  # pyvista's whole kit again, in place of the lights: head, key, fill, two back
    assert len(list(viewport.renderer.GetLights())) == 5
    with_kit = grab_viewport_pixels(main_window).astype(np.int16)
    difference = np.abs(with_kit - without).max(axis=-1)
    assert difference.mean() < 1.0 and np.mean(difference > 8) < 0.01


def test_a_floor_plane_is_drawn_unlit(main_window, qtbot):
    """A plane's shade is uniform under directional lights, so the floor is drawn without lighting (it covers
    much of the view); the scene's lit actors keep their lighting."""
    assert main_window.open_path(default_scene().with_name("gripper.toml"))
    run_frames(qtbot, main_window, 1)
    viewport = main_window.viewport
    floors = [actor for (kind, _name), actors in viewport._named_actors.items() if kind == "obstacle"
              for actor in actors]
    assert floors and all(not actor.GetProperty().GetLighting() for actor in floors)
    assert viewport.bodies["body"].actor.GetProperty().GetLighting()
