"""Free rigid bodies against the obstacles and against each other (mechanics.rigid_contact) in dynamic mode,
against statics and Coulomb's law: a resting body's contact forces add up to its weight (to the weight of what
rests on it), it rests at its size plus contactDistance above what holds it and never comes closer, and a box on
a slope sticks below atan(mu) and slides above it with the acceleration g (sin theta - mu cos theta).

The scenes hold the clamped 100 x 10 x 10 mm beam of test_rigid_body (a scene needs a soft body) far from the
rigid bodies, without damping unless said, so the rigid bodies move under gravity and their contacts alone."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim.mechanics.constraints.contact import BoxObstacle, PlaneObstacle, SphereObstacle
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.rigid_body import RigidBody
from softsim.mechanics.rigid_contact import RigidShapeContact, box_corners
from softsim.mechanics.scene import parse_data
from softsim.mechanics.scene_runtime import Scene
from tests.mechanics.test_rigid_body import scene_data

G = 9810.0  # mm/s^2, the scenes' gravity along -y
FLOOR = -100.5  # the floor's height, below the beam
CD = 0.1  # contactDistance


def build(rigids: list[dict], obstacles: list[dict], *, damping: float = 0.0, tolerance: float = 1e-9) -> Scene:
    data, spec = scene_data({}, damping=damping)
    data["rigid"] = rigids
    data["obstacle"] = obstacles
    data["solver"]["constraint"] = {"type": "BlockGaussSeidel", "maxIterations": 100_000, "tolerance": tolerance}
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def floor(**keys) -> dict:
    return {"name": "floor", "type": "plane", "point": [0.0, FLOOR, 0.0], "normal": [0.0, 1.0, 0.0], **keys}


def run(scene: Scene, frames: int, each=None) -> None:
    for _ in range(frames):
        report = scene.step()
        assert report.ok and not report.message, report.message
        if each is not None:
            each()


def test_a_tilted_box_dropped_on_the_floor_settles_on_a_face_carrying_its_weight():
    """A 5 x 4 x 3 box (10 g), turned 20 and 10 degrees, dropped 3.5 mm onto the floor (mu 0.5): it lands on a
    corner, tips onto its widest face and rests there. At rest: its centre is half its height (4) plus
    contactDistance above the floor, four corners touch, the floor pushes it up with m g = 98.1 mN and nothing
    sideways (to 1e-6 of m g); at no frame does a corner come closer to the floor than contactDistance - 1e-5."""
    scene = build([{"name": "box", "halfExtents": [5.0, 4.0, 3.0], "mass": 0.01, "position": [50.0, -92.0, 5.0],
                    "rotation": [20.0, 10.0, 0.0], "friction": 0.5, "contactDistance": CD}],
                  [floor(friction=0.5)], damping=2.0, tolerance=1e-6)
    box = scene.rigids[0]
    closest = []
    run(scene, 120, lambda: closest.append(box_corners(box.state.c, [5.0, 4.0, 3.0], box.state.R)[:, 1].min()))
    assert min(closest) - FLOOR > CD - 1e-5
    contact = scene.simulation.constraint("box_floor")
    assert contact.n_contacts == 4
    np.testing.assert_allclose(contact.force_on(box), [0.0, 0.01 * G, 0.0], atol=1e-6 * 0.01 * G)
    assert box.state.c[1] == pytest.approx(FLOOR + 4.0 + CD, abs=1e-6)
    assert np.abs(box.state.R[:, 1]).max() == pytest.approx(1.0, abs=1e-9)  # its own y axis is vertical
    assert scene.outputs()["box_floor.normalForce"] == pytest.approx(0.01 * G, rel=1e-6)


def test_a_sphere_dropped_on_the_floor_stops_at_its_radius():
    """A sphere of radius 4 falling from 20 mm above the floor (about 0.2 s at first, then it lands at 626 mm/s:
    more than one step's alarm distance): it stops with its centre at r + contactDistance, and never below."""
    scene = build([{"name": "ball", "shape": "sphere", "radius": 4.0, "mass": 0.005,
                    "position": [50.0, FLOOR + 24.0, 5.0], "contactDistance": CD}], [floor()])
    ball, heights = scene.rigids[0], []
    run(scene, 40, lambda: heights.append(ball.state.c[1]))
    assert min(heights) >= FLOOR + 4.0 + CD - 1e-9
    assert heights[-1] == pytest.approx(FLOOR + 4.0 + CD, abs=1e-9) and abs(ball.state.v[1]) < 1e-6
    np.testing.assert_allclose(scene.simulation.constraint("ball_floor").force_on(ball), [0.0, 0.005 * G, 0.0],
                               atol=1e-6 * 0.005 * G)


def test_two_stacked_spheres_rest_on_each_other():
    """Spheres of radius 5 (10 g) and 3 (4 g) stacked on the floor, each dropped 1 mm: the lower one rests at
    r1 + cd, the upper one r1 + r2 + cd above it; the floor carries both weights, (m1 + m2) g = 137.34 mN, the
    contact between them the upper one's, m2 g = 39.24 mN."""
    lower_y = FLOOR + 5.0 + CD
    scene = build([{"name": "lower", "shape": "sphere", "radius": 5.0, "mass": 0.01,
                    "position": [50.0, lower_y + 1.0, 5.0], "friction": 0.3, "contactDistance": CD},
                   {"name": "upper", "shape": "sphere", "radius": 3.0, "mass": 0.004,
                    "position": [50.0, lower_y + 10.0 + CD, 5.0], "friction": 0.3, "contactDistance": CD}],
                  [floor(friction=0.3)])
    lower, upper = scene.rigids
    run(scene, 40)
    assert lower.state.c[1] == pytest.approx(lower_y, abs=1e-9)
    assert upper.state.c[1] == pytest.approx(lower_y + 8.0 + CD, abs=1e-9)
    np.testing.assert_allclose(scene.simulation.constraint("lower_floor").force_on(lower), [0, 0.014 * G, 0],
                               atol=1e-6 * G * 0.014)
    pair = scene.simulation.constraint("lower_upper")
    np.testing.assert_allclose(pair.force_on(upper), [0, 0.004 * G, 0], atol=1e-6 * G * 0.004)
    np.testing.assert_allclose(pair.force_on(lower), [0, -0.004 * G, 0], atol=1e-6 * G * 0.004)
    assert scene.outputs()["lower_upper.normalForce"] == pytest.approx(0.004 * G, rel=1e-6)


def test_a_box_rests_on_a_box_by_its_corners():
    """A 6 x 4 x 6 box (5 g) dropped on a 10 mm cube (10 g) resting on the floor: the upper box's four lower
    corners go into the cube's top face (vertex-in-box) and stop contactDistance above it; the cube carries
    5 g x g through them and the floor carries both, 147.15 mN."""
    cube_y = FLOOR + 5.0 + CD
    scene = build([{"name": "cube", "halfExtents": [5.0, 5.0, 5.0], "mass": 0.01, "position": [50.0, cube_y, 5.0],
                    "friction": 0.4, "contactDistance": CD},
                   {"name": "lid", "halfExtents": [3.0, 2.0, 3.0], "mass": 0.005,
                    "position": [50.5, cube_y + 7.0 + CD + 0.5, 4.5], "friction": 0.4, "contactDistance": CD}],
                  [floor(friction=0.4)], tolerance=1e-8)
    cube, lid = scene.rigids
    run(scene, 40)
    assert lid.state.c[1] == pytest.approx(cube_y + 7.0 + CD, abs=1e-8)
    pair = scene.simulation.constraint("cube_lid")
    assert pair.n_contacts == 4 and np.all(pair.first == 1)  # the lid's corners in the cube
    np.testing.assert_allclose(pair.force_on(lid), [0, 0.005 * G, 0], atol=1e-6 * G * 0.005)
    np.testing.assert_allclose(scene.simulation.constraint("cube_floor").force_on(cube), [0, 0.015 * G, 0],
                               atol=1e-6 * G * 0.015)


@pytest.mark.parametrize("degrees", [20.0, 30.0, 40.0])
def test_a_box_on_a_slope_sticks_below_atan_mu_and_slides_above(degrees):
    """A cube on a plane tilted by theta, mu = 0.5 (atan(mu) = 26.6 degrees), released at rest in contact: at 20
    degrees it stays (speed < 1e-6 mm/s after 20 steps); at 30 and 40 it slides down the slope with the constant
    acceleration g (sin theta - mu cos theta) (backward Euler: v_n = n h a exactly), without turning or leaving
    the plane. The floor pushes with m g cos theta along the normal and mu m g cos theta up the slope."""
    mu, half, m = 0.5, 5.0, 0.01
    theta = np.radians(degrees)
    normal = np.array([-np.sin(theta), np.cos(theta), 0.0])
    down = -np.array([np.cos(theta), np.sin(theta), 0.0])
    origin = np.array([50.0, -200.0, 5.0])
    scene = build([{"name": "box", "halfExtents": [half] * 3, "mass": m,
                    "position": list(origin + (half + CD) * normal), "rotation": [0.0, 0.0, degrees],
                    "friction": mu, "contactDistance": CD}],
                  [{"name": "slope", "type": "plane", "point": list(origin), "normal": list(normal), "friction": mu}])
    h, box = scene.spec.scene.dt, scene.rigids[0]
    run(scene, 20)
    acceleration = max(G * (np.sin(theta) - mu * np.cos(theta)), 0.0)
    assert box.state.v @ down == pytest.approx(20 * h * acceleration, abs=1e-6)
    assert abs(box.state.v @ normal) < 1e-6 and np.linalg.norm(box.state.w) < 1e-6
    force = scene.simulation.constraint("box_slope").force_on(box)
    assert force @ normal == pytest.approx(m * G * np.cos(theta), rel=1e-7)
    friction = m * G * (np.sin(theta) if acceleration == 0.0 else mu * np.cos(theta))
    assert -(force @ down) == pytest.approx(friction, rel=1e-7)


def test_a_sphere_rests_on_a_box_obstacle_and_a_box_on_a_sphere_obstacle():
    """A sphere (r 4) dropped onto the top face of a box obstacle rests at the face + r + cd; a box (half height
    3) dropped centred onto a sphere obstacle (r 10) rests on it by the sphere's probe, its bottom face at the
    sphere's top + cd. Each obstacle carries the weight."""
    top = FLOOR + 10.0
    scene = build([{"name": "ball", "shape": "sphere", "radius": 4.0, "mass": 0.005, "position": [30.0, top + 6.0, 5.0],
                    "contactDistance": CD},
                   {"name": "box", "halfExtents": [4.0, 3.0, 4.0], "mass": 0.005, "position": [90.0, top + 5.0, 5.0],
                    "contactDistance": CD}],
                  [{"name": "block", "type": "box", "center": [30.0, FLOOR + 5.0, 5.0], "halfExtents": [6.0, 5.0, 6.0]},
                   {"name": "dome", "type": "sphere", "center": [90.0, top - 10.0, 5.0], "radius": 10.0}])
    ball, box = scene.rigids
    run(scene, 30)
    assert ball.state.c[1] == pytest.approx(top + 4.0 + CD, abs=1e-9)
    assert box.state.c[1] == pytest.approx(top + 3.0 + CD, abs=1e-9)
    for name, body in (("ball_block", ball), ("box_dome", box)):
        np.testing.assert_allclose(scene.simulation.constraint(name).force_on(body), [0, 0.005 * G, 0],
                                   atol=1e-6 * G * 0.005)
    assert scene.simulation.constraint("ball_dome").n_contacts == 0


def test_the_rows_rate_is_the_relative_velocity_at_the_contact_point():
    """The rigid Jacobian against finite differences of the gap: a turned box whose lowest corner touches the top
    face of a larger box (gap 0), both moved along each of their 12 generalised velocities for t = 1e-7 s (the
    step's exact rotation): the change of the detected gap over t matches the column of J to 1e-6."""
    turn = _turn([0.3, 0.2, 0.1])
    lowest = (box_corners(np.zeros(3), [2.0, 2.0, 2.0], turn)[:, 1]).min()
    lower = RigidBody("lower", 1.0, [1.0, 1.0, 1.0], _box([5.0, 5.0, 5.0]))
    upper = RigidBody("upper", 1.0, [1.0, 1.0, 1.0], _box([2.0, 2.0, 2.0]), position=[1.0, 5.0 - lowest, 0.5],
                      rotation=turn)
    contact = RigidShapeContact(lower, upper, contactDistance=0.0, alarmDistance=1e-3, friction=0.0)
    contact.update(np.zeros((1, 3)))
    assert contact.n_contacts == 1 and abs(contact.gaps[0]) < 1e-12
    J, t = contact.rigid_jacobian(), 1e-7
    np.testing.assert_allclose(J[0, :3], [0.0, -1.0, 0.0], atol=1e-15)  # the lower box's face normal, -n on it
    for column in range(12):
        q = np.zeros(12)
        q[column] = 1.0
        for i, body in enumerate((lower, upper)):
            body.set_state(body.advanced(body.initial, q[6 * i:6 * i + 6], t, 1.0))
        contact.update(np.zeros((1, 3)))
        assert contact.n_contacts == 1
        assert contact.gaps[0] / t == pytest.approx(J[0, column], abs=1e-6)
        for body in (lower, upper):
            body.set_state(body.initial)


def _box(half):
    return BoxObstacle((0.0, 0.0, 0.0), half)


def _turn(rotvec):
    return Rotation.from_rotvec(rotvec).as_matrix()


def test_bad_pairs_are_refused():
    body = RigidBody("cube", 1.0, [1.0, 1.0, 1.0], _box([1.0, 1.0, 1.0]))
    with pytest.raises(ParameterError, match="cannot touch itself"):
        RigidShapeContact(body, body)
    with pytest.raises(ParameterError, match="friction must be >= 0"):
        RigidShapeContact(body, PlaneObstacle([0, 0, 0], [0, 1, 0]), friction=-1.0)
    with pytest.raises(ParameterError, match="contactDistance <= alarmDistance"):
        RigidShapeContact(body, SphereObstacle([0, 0, 0], 1.0), contactDistance=1.0, alarmDistance=0.5)
    with pytest.raises(ParameterError, match="rigid body or a plane, sphere, box or capsule obstacle"):
        RigidShapeContact(body, "floor")


def test_a_sphere_rests_on_a_rigid_box():
    """A sphere (r 3, 4 g) dropped 1 mm onto a 10 mm cube (10 g) on the floor, the cube listed first: the pair's
    contact is the sphere's centre against the cube (first side the sphere, second the cube); the sphere rests
    r + cd above the cube's top, the cube carries 4 g x g through it and the floor both weights."""
    cube_y = FLOOR + 5.0 + CD
    scene = build([{"name": "cube", "halfExtents": [5.0, 5.0, 5.0], "mass": 0.01, "position": [50.0, cube_y, 5.0],
                    "contactDistance": CD},
                   {"name": "ball", "shape": "sphere", "radius": 3.0, "mass": 0.004,
                    "position": [50.0, cube_y + 5.0 + 3.0 + CD + 1.0, 5.0], "contactDistance": CD}], [floor()])
    cube, ball = scene.rigids
    run(scene, 30)
    pair = scene.simulation.constraint("cube_ball")
    assert pair.n_contacts == 1 and (pair.first[0], pair.second[0]) == (1, 0)
    assert ball.state.c[1] == pytest.approx(cube_y + 5.0 + 3.0 + CD, abs=1e-9)
    np.testing.assert_allclose(pair.force_on(ball), [0, 0.004 * G, 0], atol=1e-6 * G * 0.004)
    np.testing.assert_allclose(scene.simulation.constraint("cube_floor").force_on(cube), [0, 0.014 * G, 0],
                               atol=1e-6 * G * 0.014)


def test_a_rising_floor_carries_a_box():
    """The floor moves up at 20 mm/s from t = 0.1 s (a moving obstacle): the box resting on it rises with it,
    its velocity 20 mm/s (to 1e-6) and its centre half its height + cd above where the floor is (1e-9)."""
    scene = build([{"name": "box", "halfExtents": [4.0, 4.0, 4.0], "mass": 0.01,
                    "position": [50.0, FLOOR + 4.0 + CD, 5.0], "friction": 0.5, "contactDistance": CD}],
                  [floor(friction=0.5, velocity=[0.0, 20.0, 0.0], startTime=0.1)])
    box = scene.rigids[0]
    run(scene, 30)
    floor_now = FLOOR + 20.0 * (scene.simulation.time - 0.1)
    assert box.state.v == pytest.approx([0.0, 20.0, 0.0], abs=1e-6)
    assert box.state.c[1] == pytest.approx(floor_now + 4.0 + CD, abs=1e-9)


def test_a_body_that_starts_inside_a_shape_is_named_in_the_warnings():
    """A sphere placed 1.5 mm into the floor and 2 mm into another sphere: two warnings with the depths (the
    shapes' own surfaces, contactDistance not counted); the floor then pushes it out: after 10 steps it rests at
    r + cd."""
    scene = build([{"name": "ball", "shape": "sphere", "radius": 4.0, "mass": 0.005,
                    "position": [50.0, FLOOR + 2.5, 5.0], "contactDistance": CD},
                   {"name": "other", "shape": "sphere", "radius": 4.0, "mass": 0.005,
                    "position": [56.0, FLOOR + 2.5, 5.0], "contactDistance": CD}], [floor()])
    assert "rigid.ball: starts 1.5 inside floor (the contact pushes it out in the first frames)" in scene.warnings
    assert "rigid.other: starts 1.5 inside floor (the contact pushes it out in the first frames)" in scene.warnings
    assert "rigid.ball: starts 2 inside other (the contact pushes it out in the first frames)" in scene.warnings
    run(scene, 30)
    assert scene.rigids[0].state.c[1] == pytest.approx(FLOOR + 4.0 + CD, abs=1e-6)
