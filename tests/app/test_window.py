"""The first vertical slice: the window opens, draws a shipped tetrahedral mesh, and closes cleanly."""

import gc
import weakref

import pytest
from PyQt6.QtWidgets import QMessageBox

from softsim.app.resources import resource_path
from tests.app.conftest import grab_viewport_pixels, share_of_non_background

pytestmark = pytest.mark.gui
BACKGROUND_RGB = (0x20, 0x24, 0x2B)


def test_window_draws_the_shipped_finger_mesh(main_window):
    assert main_window.open_mesh(resource_path("meshes", "finger.vtu"))
    pixels = grab_viewport_pixels(main_window)
    drawn = share_of_non_background(pixels, BACKGROUND_RGB)
    # The fitted finger covers a good part of the view (measured ~0.2); an empty view is ~0.01 (axes).
    assert drawn > 0.08, f"only {drawn:.3f} of the pixels differ from the background"
    body = main_window.viewport.bodies["body"]
    assert body.surface.n_points > 50
    assert body.actor.mapper.scalar_visibility
    assert main_window.viewport.scalar_bars  # the colour legend is shown


def test_closing_the_window_releases_the_render_window(qtbot):
    from softsim.app.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    window.open_mesh(resource_path("meshes", "finger.vtu"))
    viewport_ref = weakref.ref(window.viewport)
    window_ref = weakref.ref(window)
    window.close()
    assert window.viewport.render_window is None
    window.deleteLater()
    del window
    qtbot.wait(50)
    gc.collect()
    assert viewport_ref() is None or viewport_ref().render_window is None
    assert window_ref() is None  # nothing outside the window (the worker's wake-up included) keeps it alive


def test_opening_a_broken_mesh_shows_a_message_and_keeps_the_view(main_window, tmp_path, qtbot):
    assert main_window.open_mesh(resource_path("meshes", "finger.vtu"))
    shown_points = main_window.viewport.bodies["body"].surface.n_points
    broken = tmp_path / "broken.vtk"
    broken.write_text("this is not a mesh\n")
    assert not main_window.open_mesh(broken)
    dialog = main_window.findChild(QMessageBox, "error_dialog")
    assert dialog is not None and "broken.vtk" in dialog.text()
    assert main_window.viewport.bodies["body"].surface.n_points == shown_points
