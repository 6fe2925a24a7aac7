"""A free rigid body in the window: drawn in its own frame and moved to each frame's pose."""

import numpy as np
import pytest

from softsim.mechanics.scene import dump_scene, parse_data
from tests.app.conftest import run_frames
from tests.mechanics.test_rigid_body import scene_data

pytestmark = pytest.mark.gui


def test_the_cube_is_drawn_where_each_frame_puts_it(main_window, qtbot, tmp_path):
    data, spec = scene_data({"position": [50.0, 40.0, 5.0], "rotation": [0.0, 0.0, 20.0],
                             "angularVelocity": [0.0, 0.0, 2.0]}, damping=0.0)
    scene = tmp_path / "cube.toml"
    parsed = parse_data(data, source=str(scene), base_dir=spec.base_dir)
    scene.write_text(dump_scene(parsed, base_dir=tmp_path))
    assert main_window.open_path(scene), main_window.session.last_error
    actors = main_window.viewport.actors("rigid", "cube")
    assert len(actors) == 1
    frame = run_frames(qtbot, main_window, 3)
    pose = frame.rigid_poses[0]
    assert frame.outputs["cube.y"] < 40.0 and pose[1, 3] == pytest.approx(frame.outputs["cube.y"])
    np.testing.assert_allclose(actors[0].user_matrix, pose, atol=1e-12)
    # turned by 20 degrees, then 3 steps of 2 rad/s about z (no Rayleigh damping here)
    angle = np.deg2rad(20.0) + 3 * main_window.session.spec.scene.dt * 2.0
    np.testing.assert_allclose(pose[:2, :2], [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]],
                               atol=1e-9)
