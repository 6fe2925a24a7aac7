"""Contacts caused by an actuator.

In a static frame x_free is the unconstrained equilibrium; when an actuator (here the mouse drag; in
gripper.toml the cable) is what brings the body onto an obstacle, x_free stays away from it, so detecting at
x_free alone let the body through the obstacle for good (measured before the fix: 1.94 mm inside the floor
here, 12.6 mm for the gripper finger). ContactConstraint also detects at the last corrected positions, and
the frame step re-detects at the corrected positions and projects again within the same frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from softsim.mechanics.constraints import ContactConstraint, DragConstraint, PlaneObstacle
from softsim.mechanics.scene import parse_data
from softsim.mechanics.scene_runtime import Scene

MESHES = Path(__file__).resolve().parents[2] / "resources" / "meshes"
FLOOR_Y = -1.0
CONTACT_DISTANCE = 0.1


def dragged_cube(contact_class) -> tuple[Scene, int]:
    """The 20 mm cube held by its top face, a floor 1 mm under its bottom, a bottom node dragged 3 mm down."""
    data = {"scene": {"units": "mm-kg-s", "gravity": [0.0, 0.0, 0.0]},
            "body": [{"name": "cube", "mesh": "cube.vtu",
                      "material": {"model": "linear", "youngModulus": 50.0, "poissonRatio": 0.3},
                      "fixed": [{"set": "top"}]}],
            "solver": {"constraint": {"maxIterations": 5000, "tolerance": 1e-10}}}
    scene = Scene(parse_data(data, source="test.toml", base_dir=MESHES))
    mesh = scene.mesh
    surface = np.unique(mesh.surface_triangles())
    scene.simulation.constraints.append(contact_class(
        surface, [PlaneObstacle([0.0, FLOOR_Y, 0.0], [0.0, 1.0, 0.0])], contactDistance=CONTACT_DISTANCE,
        alarmDistance=0.5, n_nodes=mesh.n_points, name="contact"))
    bottom = mesh.point_sets["bottom"]
    node = int(bottom[np.argmin(np.linalg.norm(mesh.points[bottom] - [10.0, 0.0, 10.0], axis=1))])
    scene.simulation.constraints.append(DragConstraint(node, mesh.points[node] + [0.0, -3.0, 0.0],
                                                       compliance=1e-4))
    return scene, node


def lowest_surface_gap(scene: Scene) -> float:
    surface = np.unique(scene.mesh.surface_triangles())
    return float(scene.positions[surface, 1].min() - FLOOR_Y)


def test_a_dragged_body_stops_at_the_floor_in_the_first_frame():
    scene, _ = dragged_cube(ContactConstraint)
    gaps = []
    for _ in range(3):
        assert scene.step().ok
        gaps.append(lowest_surface_gap(scene))
    # re-detected at the corrected positions within the frame: never below the contact distance
    assert min(gaps) >= CONTACT_DISTANCE - 1e-6, f"lowest surface gap per frame {gaps}"
    assert scene.outputs()["contact.contacts"] >= 1


def test_reset_forgets_the_last_positions():
    scene, _ = dragged_cube(ContactConstraint)
    assert scene.step().ok
    contact = scene.simulation.constraint("contact")
    assert contact.last_positions is not None
    scene.reset()
    assert contact.last_positions is None
