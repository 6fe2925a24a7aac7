"""GUI test fixtures: a main window that is always closed, and pixel helpers."""

import numpy as np
import pytest

pytestmark = pytest.mark.gui


@pytest.fixture
def main_window(qtbot):
    from app.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.close()


def grab_viewport_pixels(window) -> np.ndarray:
    """RGB pixels (h, w, 3) uint8 of what the viewport currently shows."""
    window.viewport.render()
    return np.asarray(window.viewport.screenshot(return_img=True))[..., :3]


def share_of_non_background(pixels: np.ndarray, background_rgb) -> float:
    """Fraction of pixels whose colour differs from the background by more than a few levels."""
    difference = np.abs(pixels.astype(np.int16) - np.asarray(background_rgb, dtype=np.int16)).max(axis=-1)
    return float(np.mean(difference > 8))
