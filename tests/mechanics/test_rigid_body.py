"""Free rigid bodies (``[[rigid]]``, mechanics.rigid_body) in dynamic mode: their own motion against closed forms
of the time scheme, a cube resting on a soft beam (the contact forces on the beam add up to the cube's weight),
momentum exchanged exactly with a free soft body, and the scene format's checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "resources" / "scenes" / "beam.toml"
END = [99.9, -0.1, -0.1, 100.1, 10.1, 10.1]
G = np.array([0.0, -9810.0, 0.0])


def scene_data(rigid: dict, *, clamp_both=True, gravity=G, young=1e5, damping=5.0) -> tuple[dict, object]:
    """The 100 x 10 x 10 mm beam in dynamic mode (clamped at both ends, or free) with one [[rigid]] table."""
    spec = load_scene(BEAM)
    data = to_data(spec)
    body = data["body"][0]
    body.pop("force")
    body["material"].update(model="corotational", youngModulus=young)
    if clamp_both:
        body["fixed"].append({"box": END})
    else:
        body.pop("fixed")
    data["scene"].update(mode="dynamic", gravity=list(gravity))
    data.setdefault("solver", {}).setdefault("dynamic", {}).update(rayleighMass=damping, rayleighStiffness=0.0)
    data["solver"]["constraint"] = {"type": "BlockGaussSeidel", "maxIterations": 100_000, "tolerance": 1e-8}
    data["rigid"] = [{"name": "cube", "halfExtents": [5.0, 5.0, 5.0], "mass": 0.01, **rigid}]
    return data, spec


def make_scene(rigid: dict, **kwargs) -> Scene:
    data, spec = scene_data(rigid, **kwargs)
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def test_free_fall_follows_backward_euler():
    """Far from the beam, v_n = v_0 + n h g and c_n = c_0 + h (v_1 + ... + v_n) (backward Euler, the default
    implicitVelocity = implicitPosition = 1), to round-off; the beam's Rayleigh mass damping does not touch it
    (rayleighMass 0 here)."""
    scene = make_scene({"position": [50.0, 300.0, 5.0], "velocity": [1.0, 2.0, 3.0]}, damping=0.0)
    h = scene.spec.scene.dt
    v0, c0 = np.array([1.0, 2.0, 3.0]), np.array([50.0, 300.0, 5.0])
    for _ in range(10):
        assert scene.step().ok
    v = [v0 + k * h * G for k in range(1, 11)]
    out = scene.outputs()
    np.testing.assert_allclose([out["cube.vx"], out["cube.vy"], out["cube.vz"]], v[-1], rtol=0, atol=1e-10)
    np.testing.assert_allclose([out["cube.x"], out["cube.y"], out["cube.z"]], c0 + h * np.sum(v, axis=0),
                               rtol=0, atol=1e-10)


def test_spin_about_a_principal_axis_is_a_constant_rotation():
    """No gravity, no contact: a box spinning at 3 rad/s about its own z axis turns by 3 h per step (the step's
    exponential map is exact for a constant angular velocity; the gyroscopic torque is zero on a principal
    axis)."""
    turned = Rotation.from_euler("x", 30.0, degrees=True)
    w = turned.apply([0.0, 0.0, 3.0])
    scene = make_scene({"position": [50.0, 300.0, 5.0], "rotation": [30.0, 0.0, 0.0], "angularVelocity": list(w),
                        "halfExtents": [5.0, 3.0, 2.0]}, gravity=[0.0, 0.0, 0.0], damping=0.0)
    h = scene.spec.scene.dt
    for _ in range(20):
        assert scene.step().ok
    cube = scene.rigids[0]
    expected = (Rotation.from_rotvec(20 * h * w) * turned).as_matrix()
    np.testing.assert_allclose(cube.state.R, expected, atol=1e-12)
    np.testing.assert_allclose(cube.state.w, w, atol=1e-12)


def test_a_cube_comes_to_rest_on_the_beam_and_its_weight_goes_through_the_contacts():
    """A 10 g cube dropped 1 mm onto the beam clamped at both ends, mu = 0.5: after 100 frames it is at rest
    and the contact forces on the beam's nodes add up to its weight, m g = (0, -98.1, 0) mN, to 1e-6."""
    scene = make_scene({"position": [50.0, 16.0, 5.0], "friction": 0.5})
    for _ in range(100):
        report = scene.step()
        assert report.ok, report.message
    contact = scene.simulation.constraint("cube_contact")
    assert contact.n_contacts >= 4
    np.testing.assert_allclose(contact.contact_forces.sum(axis=0), 0.01 * G, atol=1e-6 * 98.1)
    out = scene.outputs()
    assert abs(out["cube.vy"]) < 1e-3 and 14.5 < out["cube.y"] < 15.01  # resting on the top face y = 10


def test_a_thrown_cube_exchanges_momentum_exactly_with_a_free_beam():
    """No gravity, no damping, a beam with no fixed nodes: the cube hits it (with and without friction) and the
    total linear momentum M v (beam) + m v (cube) stays what it was, to 1e-9 of it, while each changes."""
    for friction in (0.0, 0.4):
        scene = make_scene({"position": [47.0, 16.0, 5.0], "velocity": [0.0, -200.0, 0.0],
                            "angularVelocity": [0.0, 0.0, 3.0], "mass": 0.005, "friction": friction},
                           clamp_both=False, gravity=[0.0, 0.0, 0.0], young=1e4, damping=0.0)
        start = _momentum(scene)
        for _ in range(30):
            assert scene.step().ok
        assert scene.simulation.constraint("cube_contact").n_contacts > 0
        assert scene.rigids[0].state.v[1] > -190.0  # the cube was slowed down
        np.testing.assert_allclose(_momentum(scene), start, atol=1e-9 * np.abs(start).max())


def _momentum(scene) -> np.ndarray:
    """M v summed over the soft nodes plus m v of the rigid body (3,)."""
    simulation, cube = scene.simulation, scene.rigids[0]
    M = simulation.dynamic_solver.system.mass_matrix
    return (M @ simulation.v.reshape(-1)).reshape(-1, 3).sum(axis=0) + cube.mass * cube.state.v


def test_reset_and_rebuild():
    scene = make_scene({"position": [50.0, 300.0, 5.0]})
    for _ in range(5):
        scene.step()
    y = scene.outputs()["cube.y"]
    scene.set("rigid.cube.friction", 0.3)  # a rebuild: the cube keeps its motion
    assert scene.outputs()["cube.y"] == y
    scene.reset()
    assert scene.outputs()["cube.y"] == 300.0 and scene.outputs()["cube.vy"] == 0.0
    with pytest.raises(ParameterError, match="move only in dynamic mode"):
        scene.simulation.set_mode("static")


def test_the_scene_format_checks_rigid_bodies():
    data, spec = scene_data({})
    data["scene"]["mode"] = "static"
    static = parse_data(data, source=spec.source, base_dir=spec.base_dir)
    with pytest.raises(SceneError, match=r"scene.mode: free rigid bodies \(\[\[rigid\]\]\) move only in dynamic"):
        Scene(static)
    data, spec = scene_data({"shape": "sphere"})
    with pytest.raises(SceneError) as error:
        parse_data(data, source=spec.source, base_dir=spec.base_dir)
    assert "rigid[0].radius: missing; shape sphere needs radius" in str(error.value)
    assert "rigid[0].halfExtents: not used by shape sphere" in str(error.value)
    data, spec = scene_data({"name": "tip"})  # the beam's effector
    with pytest.raises(SceneError, match=r"rigid\[0\].name: \"tip\" is already the name of"):
        parse_data(data, source=spec.source, base_dir=spec.base_dir)
