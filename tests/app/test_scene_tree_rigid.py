"""The Scene panel's tree lists the free rigid bodies and the bodies' rigid groups, with key paths the parameter
descriptions accept."""

from __future__ import annotations

from softsim.app.panels.scene_tree import scene_components
from softsim.app.panels.schema_info import describe_parameters
from softsim.mechanics.scene import load_scene, parse_data, to_data
from tests.mechanics.test_rigid_body import BEAM


def _titles(components, out=None):
    out = [] if out is None else out
    for component in components:
        out.append((component.title, component.prefix))
        _titles(component.children, out)
    return out


def test_rigid_bodies_and_rigid_groups_are_in_the_tree():
    spec = load_scene(BEAM)
    data = to_data(spec)
    data["scene"]["mode"] = "dynamic"
    data["body"][0]["rigidGroup"] = [{"box": [29.9, -0.1, -0.1, 60.1, 10.1, 10.1]}]
    data["rigid"] = [{"name": "cube", "halfExtents": [5.0, 5.0, 5.0], "mass": 0.01},
                     {"name": "ball", "shape": "sphere", "radius": 2.0, "mass": 0.001}]
    spec = parse_data(data, source=spec.source, base_dir=spec.base_dir)
    titles = _titles(scene_components(spec))
    for entry in (("Rigid group 0", "body.beam.rigidGroup[0]"), ("Rigid bodies", ""), ("Rigid box cube", "rigid.cube"),
                  ("Rigid sphere ball", "rigid.ball")):
        assert entry in titles, entry
    paths = [info.path for info in describe_parameters(spec)]
    for prefix in ("body.beam.rigidGroup[0].", "rigid.cube.", "rigid.ball."):
        assert any(path.startswith(prefix) for path in paths), prefix
