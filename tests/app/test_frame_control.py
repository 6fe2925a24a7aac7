"""The Actuators panel's control of a rigid frame on a body's nodes (a fixed region with a rotation: Tripod's servo
arms): its slider and spin box set ``body.NAME.fixed[i].angle`` on the running scene, which holds the region's
nodes turned by that angle."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim.app.panels import create_docks
from softsim.app.panels.actuators import SLIDER_STEPS, rotating_regions
from softsim.app.resources import resource_path
from softsim.mechanics.scene import load_scene

pytestmark = pytest.mark.gui

BEAM = resource_path("scenes", "beam.toml")
END = "[99.9, -0.1, -0.1, 100.1, 10.1, 10.1]"


def beam_with_end_frame(tmp_path):
    """The beam scene with its load replaced by a second fixed region at x = 100 that turns about z."""
    text = BEAM.read_text().replace('mesh = "../meshes/beam.vtu"',
                                    f'mesh = "{resource_path("meshes", "beam.vtu").as_posix()}"')
    start = text.index("  [[body.force]]")
    stop = text.index("  [[body.effector]]")
    frame = f"  [[body.fixed]]\n  box = {END}\n  axis = [0.0, 0.0, 1.0]\n  center = [100.0, 5.0, 5.0]\n\n"
    path = tmp_path / "beam_frame.toml"
    path.write_text(text[:start] + frame + text[stop:])
    return path


def test_only_regions_with_a_rotation_get_a_control(tmp_path):
    spec = load_scene(beam_with_end_frame(tmp_path))
    assert rotating_regions(spec) == [("beam", 1)]
    assert rotating_regions(load_scene(BEAM)) == []


def test_the_frame_slider_turns_the_regions_nodes(qtbot, tmp_path):
    from softsim.app.session import Session

    session = Session()
    try:
        docks = create_docks(session, None)
        for dock in docks:
            qtbot.addWidget(dock)
        assert session.open_scene(beam_with_end_frame(tmp_path)), session.last_error
        actuators = next(d.widget() for d in docks if d.objectName() == "actuators_dock")
        assert list(actuators.frames) == ["beam.fixed[1]"]
        control = actuators.frames["beam.fixed[1]"]
        assert control.slider.value() == SLIDER_STEPS // 2  # angle 0 in [-180, 180]
        control.slider.setValue(SLIDER_STEPS // 2 + 25)  # 25 steps of 0.36 degrees
        control.throttle.flush()
        assert session.spec.bodies[0].fixed[1].angle == 9.0
        target = session.latest_frame.index + 1
        session.step_once(1)
        qtbot.waitUntil(lambda: session.latest_frame.report is not None and session.latest_frame.index >= target,
                        timeout=60000)
        frame = session.latest_frame
        rest = np.asarray(session.rest_positions)
        end = np.flatnonzero(np.abs(rest[:, 0] - 100.0) < 1e-9)
        turned = Rotation.from_euler("z", 9.0, degrees=True).apply(rest[end] - [100.0, 5.0, 5.0]) + [100.0, 5.0, 5.0]
        np.testing.assert_allclose(np.asarray(frame.x)[end], turned, atol=1e-9)
        control.spin.setValue(-30.0)
        control.throttle.flush()
        assert session.spec.bodies[0].fixed[1].angle == -30.0
        assert control.slider.value() == round(150 / 360 * SLIDER_STEPS)
    finally:
        session.close()
