"""``softsim SCENE --frames N --screenshot PNG [--set KEY=VALUE]``: opens the window, runs, saves, exits."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PyQt6.QtGui import QImage

from softsim.app.resources import default_scene

pytestmark = pytest.mark.gui


def _softsim(*args, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONFAULTHANDLER="1")  # a crash of the app prints every thread's stack to stderr
    return subprocess.run([sys.executable, "-m", "softsim.app", *map(str, args)], capture_output=True, text=True,
                          timeout=180, env=env, cwd=cwd)


def test_frames_and_screenshot_exit_0_and_write_the_window_png(tmp_path):
    png = tmp_path / "finger.png"
    result = _softsim(default_scene(), "--frames", 4, "--set", "body.finger.cable.cable.value=6",
                      "--screenshot", png)
    assert result.returncode == 0, result.stderr
    image = QImage(str(png))
    assert not image.isNull() and image.width() >= 800 and image.height() >= 500
    # the shot is the whole window: not a uniform image
    pixels = np.array([image.pixel(x, y) for x in range(0, image.width(), 37) for y in range(0, image.height(), 29)])
    assert len(np.unique(pixels)) > 20


def test_a_broken_scene_exits_2_with_the_message(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[scene]\nmode = 'sideways'\n")
    result = _softsim(broken, "--frames", 2, "--screenshot", tmp_path / "x.png")
    assert result.returncode == 2
    assert "broken.toml" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_an_invalid_set_exits_2_naming_the_key(tmp_path):
    result = _softsim(default_scene(), "--frames", 1, "--set", "body.finger.material.poissonRatio=0.7",
                      "--screenshot", tmp_path / "x.png")
    assert result.returncode == 2
    assert "poissonRatio" in result.stderr
    result = _softsim(default_scene(), "--set", "no-equals-sign", "--screenshot", tmp_path / "x.png")
    assert result.returncode == 2 and "KEY=VALUE" in result.stderr


def test_the_screenshot_batch_draws_the_last_frame_before_the_shot(main_window, qtbot, monkeypatch, tmp_path):
    """``--frames N --screenshot``: when the Nth frame has come, the window draws it before the shot, even when
    the draw pacer is holding it back (shots of trunk_inverse's third frame showed the view and the Plots header
    of frame 1 or 2 while the status bar said frame 3), and the Plots panel redraws with it (a shot of the trunk's
    third frame said "No frame yet." there: the panel's own pacer held its redraw). The batch runs in the test's
    window; the shot records the last frame the view was given to draw and the Plots header at that moment."""
    from types import SimpleNamespace

    from softsim.app.cli import _Batch
    from softsim.app.resources import resource_path

    # trunk_inverse walks toward its goal, so no frame is at rest (a frame at rest is drawn at once)
    assert main_window.open_path(resource_path("scenes", "trunk_inverse.toml"))
    main_window.draws.min_interval = 3600.0  # the pacer holds every frame back, as on a slow machine
    viewport, drawn, shots = main_window.viewport, [], []
    update_frame = viewport.update_frame
    monkeypatch.setattr(viewport, "update_frame", lambda frame: (drawn.append(frame.index), update_frame(frame)))
    plots = main_window.dock("plots_dock").widget()
    # the Plots panel's own pacer holds every redraw after its first back too (it has no public handle: the panel
    # paces itself; this is the one place a test needs it slow)
    monkeypatch.setattr(plots._redraws, "min_interval", 3600.0)
    monkeypatch.setattr(main_window, "save_screenshot",
                        lambda path: shots.append((drawn[-1] if drawn else None, plots.summary.text())) or True)
    _Batch(SimpleNamespace(quit=lambda: None), main_window, 3, str(tmp_path / "shot.png"), "iso")
    qtbot.waitUntil(lambda: bool(shots), timeout=60000)
    assert main_window.session.latest_frame.index == 3
    (view_frame, plots_header), = shots
    assert view_frame == 3, (shots, drawn)
    assert plots_header.startswith("frame 3:"), plots_header
