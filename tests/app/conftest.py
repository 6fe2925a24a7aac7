"""GUI test fixtures: a main window that is always closed, a private config dir, and helpers."""

import numpy as np
import pytest

pytestmark = pytest.mark.gui


@pytest.fixture(autouse=True)
def private_config_dir(tmp_path_factory, monkeypatch):
    """Recent files and other settings go to a temporary directory, never to the user's config."""
    directory = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("SOFTSIM_CONFIG_DIR", str(directory))
    return directory


@pytest.fixture
def main_window(qtbot):
    import pyvista as pv

    from softsim.app.main_window import MainWindow

    pv.OFF_SCREEN = False
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


def run_frames(qtbot, window, count: int, timeout_ms: int = 60000):
    """Step ``count`` frames on the worker and wait until the last one is drawn; returns the latest frame."""
    session = window.session
    target = session.runner.frames_attempted + count
    session.step_once(count)
    qtbot.waitUntil(lambda: session.runner.frames_attempted >= target and session.runner.pending_steps == 0,
                    timeout=timeout_ms)
    session.poll()
    window.flush_frame()  # the redraw throttle may still hold the newest frame back
    return session.latest_frame
