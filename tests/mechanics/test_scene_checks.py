"""Scenes that load but cannot run are refused when the Scene is built (mechanics.scene_checks): an obstacle
inside the body, an absurd contactDistance, a static body without fixed nodes, a constraint on fixed nodes
only. ``softsim check`` reports the same messages (tests/test_cli.py)."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.scene import SceneError, parse_data
from softsim.mechanics.scene_runtime import Scene

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"


def scene_from(name: str, edit) -> Scene:
    """The shipped scene ``name`` with ``edit(data)`` applied to its TOML data."""
    data = tomllib.loads((SCENES / name).read_text())
    edit(data)
    return Scene(parse_data(data, source=str(SCENES / name), base_dir=SCENES))


def move_floor(point):
    def edit(data):
        data["obstacle"][0]["point"] = point
    return edit


def test_obstacle_starting_inside_the_body_is_refused_with_where_to_move_it():
    with pytest.raises(SceneError) as caught:
        scene_from("gripper.toml", move_floor([0.0, -14.9, 0.0]))  # the finger's lower face is at y = -15
    message = str(caught.value)
    assert message.startswith("gripper.toml: obstacle.floor: the plane starts inside body 'finger': ")
    assert "free surface nodes are inside it, up to 0.1 mm deep" in message
    assert "move point to [0, -15.5, 0] (0.6 mm against the normal" in message  # depth + contactDistance 0.5


def test_obstacle_near_the_fixed_nodes_runs():
    # 0.05 mm under the finger: the alarm distance reaches the fixed base, whose nodes are no contact
    # candidates (their rows would be zero and the first frame would fail on W's diagonal)
    scene = scene_from("gripper.toml", move_floor([0.0, -15.05, 0.0]))
    contact = scene.simulation.constraint("contact")
    assert not np.isin(contact.surface_nodes, scene.simulation.problem.fixed_nodes).any()
    report = scene.step()
    assert report.ok, report.message


def test_sphere_inside_the_body_is_refused():
    def edit(data):
        data["obstacle"] = [{"name": "ball", "type": "sphere", "center": [-60.0, -15.0, -7.5], "radius": 3.0}]
    with pytest.raises(SceneError) as caught:
        scene_from("gripper.toml", edit)  # centred on the finger's lower face
    assert str(caught.value).startswith("gripper.toml: obstacle.ball: the sphere starts inside body 'finger': ")
    assert "deep (at [" in str(caught.value) and "move it away from the body (e.g. center to [" in str(caught.value)
    assert "or make radius at most " in str(caught.value)


def test_absurd_contact_distance_is_refused():
    def edit(data):
        data["obstacle"][0]["contactDistance"] = 1e9
    with pytest.raises(SceneError) as caught:
        scene_from("gripper.toml", edit)
    assert str(caught.value).startswith(
        "gripper.toml: obstacle.floor.contactDistance: 1e+09 mm is larger than the body itself (bounding-box "
        "diagonal 105 mm)")


def test_static_body_without_fixed_nodes_is_refused():
    def edit(data):
        del data["body"][0]["fixed"]
    with pytest.raises(SceneError, match=r"finger\.toml: scene\.mode: body 'finger' has no fixed nodes; a static "
                                         r"scene needs at least one \[\[body\.fixed\]\] region per body, or "
                                         r"scene\.mode = \"dynamic\""):
        scene_from("finger.toml", edit)

    def dynamic(data):
        edit(data)
        data["scene"]["mode"] = "dynamic"
    scene = scene_from("finger.toml", dynamic)  # the mass holds it
    with pytest.raises(SceneError, match="has no fixed nodes"):
        scene.set("scene.mode", "static")
    assert scene.spec.scene.mode == "dynamic"


def test_cable_on_a_fixed_node_is_refused():
    def edit(data):
        data["body"][0]["cable"][0] = {"name": "cableL0", "indices": [0], "pullPoint": [0.0, 0.0, -10.0],
                                       "value": 2.0}
    with pytest.raises(SceneError) as caught:
        scene_from("trunk.toml", edit)  # node 0 lies in the fixed base
    assert str(caught.value).startswith(
        "trunk.toml: body.trunk.cable.cableL0: the cable cannot pull: its index 0 is a fixed node "
        "(body.trunk.fixed), so its length never changes and its row of the constraint system is zero")


def test_effector_on_a_fixed_node_is_a_warning():
    def edit(data):
        effector = data["body"][0]["effector"][0]
        del effector["position"]
        effector["indices"] = [0]
    scene = scene_from("trunk.toml", edit)
    assert any(w.startswith("body.trunk.effector.tip: its index 0 is a fixed node") for w in scene.warnings)


def test_live_edit_that_moves_an_obstacle_into_the_body_is_refused_and_undone():
    scene = Scene.load(SCENES / "gripper.toml")
    with pytest.raises(SceneError, match=r"^gripper\.toml: obstacle\.floor: the plane starts inside"):
        scene.set("obstacle.floor.point", [0.0, -14.9, 0.0])
    assert scene.spec.obstacles[0].point == (0.0, -30.0, 0.0)


def test_attachment_between_two_fixed_nodes_is_refused():
    data = tomllib.loads((SCENES / "finger.toml").read_text())
    cube = {"name": "cube", "mesh": "../meshes/cube.vtu", "scale": 0.5, "translation": [-113.0, 2.5, 2.5],
            "material": {"model": "corotational", "youngModulus": 300.0, "poissonRatio": 0.4},
            "fixed": [{"indices": [0]}]}
    data["body"].append(cube)
    finger_fixed = int(Scene.load(SCENES / "finger.toml").simulation.problem.fixed_nodes[0])
    data["attachment"] = [{"name": "glue", "bodyA": "cube", "bodyB": "finger", "indicesA": [0, 1],
                           "indicesB": [finger_fixed, 0]}]
    with pytest.raises(SceneError, match=rf"two_bodies\.toml: attachment\.glue: 1 of its 2 node pairs join two "
                                         rf"fixed nodes \(e\.g\. node 0 of 'cube' and node {finger_fixed} of "
                                         r"'finger'\)"):
        Scene(parse_data(data, source=str(SCENES / "two_bodies.toml"), base_dir=SCENES))
