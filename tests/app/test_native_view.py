"""The 3D view draws into a native window of its own (app.native_view): the rest of the window is repainted by Qt's
raster engine without the view, the view renders only when asked, and what the user sees (the screen, a saved
screenshot) still holds the view and the banner over it."""

import numpy as np
from PyQt6.QtGui import QImage
from PyQt6.QtOpenGLWidgets import QOpenGLWidget

from softsim.app.native_view import x11_platform
from softsim.app.resources import default_scene
from tests.app.conftest import run_frames


def _render_counter(viewport) -> list[int]:
    """[count] of the view's VTK renders from now on (its render window's StartEvent)."""
    count = [0]
    viewport.render_window.AddObserver("StartEvent", lambda *_: count.__setitem__(0, count[0] + 1))
    return count


def _pixels(image: QImage) -> np.ndarray:
    """RGB pixels (h, w, 3) uint8 of a QImage."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    return np.frombuffer(image.constBits().asstring(stride * height), np.uint8).reshape(height, stride)[
        :, :3 * width].reshape(height, width, 3)


def test_no_widget_of_the_window_makes_qt_compose_it_through_opengl(main_window):
    # a single QOpenGLWidget anywhere in the window makes every repaint of it an OpenGL composition
    assert main_window.findChildren(QOpenGLWidget) == []
    assert main_window.viewport.windowHandle() is not None  # the view is a native window
    assert main_window.viewport.paintEngine() is None  # VTK, not Qt, paints it


def test_a_label_repaint_renders_nothing_and_a_draw_renders_once(main_window, qtbot):
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    qtbot.wait(200)
    renders = _render_counter(main_window.viewport)
    for i in range(5):
        main_window.frame_label.setText(f"frame {i}")
        qtbot.wait(30)
    assert renders[0] == 0
    main_window.viewport.draw()
    main_window.viewport.draw()  # two asks before the paint: one render
    qtbot.waitUntil(lambda: renders[0] >= 1, timeout=10000)
    qtbot.wait(100)
    assert renders[0] == 1


def test_the_screen_and_the_screenshot_show_the_view_and_the_banner_over_it(main_window, qtbot, tmp_path):
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    viewport = main_window.viewport
    viewport.render()
    view = np.asarray(viewport.screenshot(return_img=True))[..., :3]
    origin = viewport.mapTo(main_window, viewport.rect().topLeft())
    height, width = view.shape[:2]
    # the screenshot file: the view's own pixels where the view is
    png = tmp_path / "window.png"
    assert main_window.save_screenshot(png)
    saved = _pixels(QImage(str(png)))
    inside = saved[origin.y():origin.y() + height, origin.x():origin.x() + width]
    assert np.mean(np.abs(inside.astype(int) - view.astype(int)).max(axis=-1) <= 8) > 0.99
    # the banner, a native window too, lies over the view on the screen (the X server's pixels)
    main_window.session.message.emit("error", "a test message")  # as a refused edit says it
    qtbot.waitUntil(lambda: main_window.banner.isVisible(), timeout=5000)
    qtbot.wait(200)
    viewport.render()
    banner = main_window.banner
    screen = _pixels(main_window.screen().grabWindow(main_window.winId()).toImage())
    top_left = banner.mapTo(main_window, banner.rect().topLeft())
    patch = screen[top_left.y() + 2:top_left.y() + banner.height() - 2, top_left.x() + 2:top_left.x() + 40]
    background = np.array([0x6A, 0x1C, 0x1C])  # BANNER_STYLE["error"]
    assert np.mean(np.abs(patch.astype(int) - background).max(axis=-1) <= 12) > 0.5


def test_the_view_copies_only_its_colours_to_the_window_and_the_screen_shows_its_image(main_window, qtbot):
    """VTK copies the finished image into the view's window without its depth buffer (a shader pass over every
    pixel that nothing reads): what the X server shows is still VTK's image, drawn fast or at full quality, after
    the view changed colour and after it was resized."""
    viewport = main_window.viewport
    assert viewport.render_window.GetFrameBlitMode() == viewport.render_window.BlitToCurrent
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)
    qtbot.wait(200)

    def shown_matches_vtk() -> float:
        viewport.render()
        view = np.asarray(viewport.screenshot(return_img=True))[..., :3].astype(int)
        screen = _pixels(main_window.screen().grabWindow(viewport.winId()).toImage()).astype(int)
        height, width = min(view.shape[0], screen.shape[0]), min(view.shape[1], screen.shape[1])
        # the banner (a native window over the view's top) is hidden: every pixel is the view's
        return float(np.mean(np.abs(screen[:height, :width] - view[:height, :width]).max(axis=-1) <= 8))

    for fast in (True, False):
        viewport.set_fast_drawing(fast)
        viewport.set_background("red")  # a frame on the screen that the next one must replace everywhere
        viewport.render()
        viewport.set_background("#20242b")
        assert shown_matches_vtk() > 0.99
    main_window.resize(main_window.width() - 120, main_window.height() - 60)
    qtbot.waitUntil(lambda: viewport.render_window.GetSize()[0] == round(viewport.width()
                                                                         * viewport.devicePixelRatioF()),
                    timeout=5000)
    shown_matches_vtk()  # the first render after a resize may still go to the window's old drawable (either copy)
    assert shown_matches_vtk() > 0.99


def test_a_wayland_session_with_xwayland_gets_qts_x11_platform_unless_one_was_chosen():
    wayland = {"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}
    environ = dict(wayland)
    assert x11_platform(environ) and environ["QT_QPA_PLATFORM"] == "xcb"
    chosen = dict(wayland, QT_QPA_PLATFORM="offscreen")
    assert not x11_platform(chosen) and chosen["QT_QPA_PLATFORM"] == "offscreen"
    no_x = {"WAYLAND_DISPLAY": "wayland-0"}  # no XWayland: nothing to choose
    assert not x11_platform(no_x) and "QT_QPA_PLATFORM" not in no_x
    x_session = {"XDG_SESSION_TYPE": "x11", "DISPLAY": ":0"}
    assert not x11_platform(x_session) and "QT_QPA_PLATFORM" not in x_session
