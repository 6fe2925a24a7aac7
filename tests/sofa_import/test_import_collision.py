"""Collision surfaces, collision groups and static collision surfaces of SOFA scenes (issue 31, items 1-3).

A body's collision child (a surface loader, a MechanicalObject, collision models and a BarycentricMapping)
becomes ``body.collisionMesh``, its models' ``group`` ``body.collisionGroup``; CircularRobot's Floor (SOFA's
``share/mesh/square1.obj``) becomes an ``[[obstacle]]`` box, and the robot, which only contacts hold, runs in
dynamic mode with its inverse solver off.

Expected numbers come from the scene files (param.py's placement of the PneunetGripper's fingers, circularrobot.py's
Floor placement, mass and gravity) and from SOFA's ``share/mesh/square1.obj`` (the unit square 0 <= x, y <= 1 in
z = 0); the placements are recomputed here with scipy's rotations, not with the importer's code."""

from __future__ import annotations

from pathlib import Path

import meshio
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softsim import meshes
from softsim.app.sofa_import import import_scene
from softsim.mechanics.constraints import MappedConstraint
from softsim.mechanics.scene_runtime import Scene

SOFA = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "sofa"
GRIPPER = SOFA / "PneunetGripper" / "details"
CIRCULAR = SOFA / "CircularRobot" / "circularrobot.py"
FINGER_MESH = (SOFA / "CableConstraint" / "mesh" / "finger.vtk").resolve()


@pytest.fixture(scope="module")
def circular(tmp_path_factory):
    return import_scene(CIRCULAR, tmp_path_factory.mktemp("circular") / "circularrobot.toml")


def test_the_gripper_fingers_collide_through_pneunetcut(tmp_path):
    """step7-withSTLIB.py: each ElasticMaterialObject has collisionMesh = pneunetCut.stl (param.py), loaded with the
    finger's own rotation and translation. The scene maps its 1488 vertices into each finger; at rest they are
    the STL's points placed as SOFA places them (x-y-z fixed-axis Euler angles, then the translation), to 1e-12."""
    result = import_scene(GRIPPER / "step7-withSTLIB.py", tmp_path / "step7.toml")
    surface = meshes.load_surface(GRIPPER / "data" / "mesh" / "pneunetCut.stl")
    assert len(surface.points) == 1488
    for body in result.spec.bodies:
        assert Path(body.collisionMesh_path).name == "pneunetCut.stl" and body.collisionGroup is None
    text = result.report.text()
    assert "/Finger1/CollisionModel: the collision surface of Finger1 (body.Finger1.collisionMesh)" in text
    assert "CollisionModel/TriangleCollisionModel" not in text  # accounted for, not reported
    scene = Scene(result.spec)
    contact = scene.simulation.constraint("contact")  # the floor obstacle box: the fingers touch it by pneunetCut
    assert isinstance(contact, MappedConstraint)
    vertices = contact.extend(scene.positions)[scene.mesh.n_points:]
    assert vertices.shape == (3 * 1488, 3)
    # param.py: rotations [0, 0, -270], [360 - 120, 0, -270], [120, 0, -270]; translations [100, 150, 0] and the
    # same turned by 120 and 240 degrees about y (step7: Finger2 and Finger3)
    for i, body in enumerate(result.spec.bodies):
        placed = Rotation.from_euler("xyz", body.rotation, degrees=True).apply(surface.points) + body.translation
        np.testing.assert_allclose(vertices[1488 * i:1488 * (i + 1)], placed, rtol=0, atol=1e-12)
    finger1 = result.spec.bodies[0]
    assert finger1.rotation == (0.0, 0.0, 90.0) and finger1.translation == (100.0, 150.0, 0.0)


HAND_BUILT = """
def createScene(root):
    root.gravity = [0, -9810, 0]
    root.addObject('FreeMotionAnimationLoop')
    root.addObject('GenericConstraintSolver', maxIterations=500, tolerance=1e-8)
    root.addObject('CollisionPipeline')
    root.addObject('BruteForceBroadPhase')
    root.addObject('BVHNarrowPhase')
    root.addObject('CollisionResponse', response='FrictionContactConstraint', responseParams='mu=0.3')
    root.addObject('LocalMinDistance', alarmDistance=2, contactDistance=0.5)
    for name, y, groups in (('lower', 0, {lower}), ('upper', 20, {upper})):
        node = root.addChild(name)
        node.addObject('EulerImplicitSolver')
        node.addObject('SparseLDLSolver')
        node.addObject('MeshVTKLoader', name='loader', filename=r'{mesh}', translation=[0, y, 0])
        node.addObject('MeshTopology', src='@loader')
        node.addObject('MechanicalObject')
        node.addObject('UniformMass', totalMass=0.01)
        node.addObject('TetrahedronFEMForceField', youngModulus=600, poissonRatio=0.45)
        node.addObject('BoxROI', name='box', box=[-1, y - 1, -1, 1, y + 16, 16])
        node.addObject('RestShapeSpringsForceField', points='@box.indices', stiffness=1e12)
        node.addObject('GenericConstraintCorrection')
        for i, group in enumerate(groups):
            part = node.addChild('Collision' + str(i))
            part.addObject('MeshVTKLoader', name='loader', filename=r'{mesh}', translation=[{shift}, y, 0])
            part.addObject('MeshTopology', src='@loader')
            part.addObject('MechanicalObject')
            extra = dict() if group is None else dict(group=group)
            part.addObject('TriangleCollisionModel', **extra)
            part.addObject('PointCollisionModel', **extra)
            part.addObject('BarycentricMapping')
"""


def _two_fingers(tmp_path: Path, lower: list, upper: list, shift: float = 0.0):
    scene = tmp_path / "pair.py"
    scene.write_text(HAND_BUILT.format(mesh=FINGER_MESH, lower=lower, upper=upper, shift=shift))
    return import_scene(scene, tmp_path / "pair.toml")


def test_a_collision_surface_placed_apart_from_its_body_is_written_in_the_body_frame(tmp_path):
    """Each collision loader 0.5 mm along x from its body's (the upper body is at y = 20): the surface is written
    beside the scene in the body's frame, the finger's boundary moved by (0.5, 0, 0), and at rest the mapped
    vertices are the loader's placed points (body translation + 0.5 along x) to 1e-12."""
    result = _two_fingers(tmp_path, [None], [None], shift=0.5)
    own = meshes.load_surface(FINGER_MESH)
    scene = Scene(result.spec)
    vertices = scene.simulation.constraint("collision").extend(scene.positions)[scene.mesh.n_points:]
    for i, (body, y) in enumerate(zip(result.spec.bodies, (0.0, 20.0))):
        assert Path(body.collisionMesh_path).name == f"pair.{body.name}.collision.vtu"
        written = meshio.read(body.collisionMesh_path)
        np.testing.assert_allclose(written.points, own.points + [0.5, 0.0, 0.0], rtol=0, atol=1e-12)
        count = len(own.points)
        np.testing.assert_allclose(vertices[count * i:count * (i + 1)], own.points + [0.5, y, 0.0], rtol=0,
                                   atol=1e-12)
    assert "placed differently from the body" in result.report.text()


@pytest.mark.parametrize(("lower", "upper", "groups", "pairs"), [
    ([1], [1], ((1,), (1,)), 0),             # SOFA: models that share a group do not collide
    ([1], [2], ((1,), (2,)), 1),
    ([None], [1], (None, (1,)), 1),          # a model without a group collides with every other
    ([3, "1 3"], ["3"], ((3,), (3,)), 0),    # two collision children of one body, both in group 3
    (["1 2", 2], [1], ((2,), (1,)), 1),      # its parts share only group 2; the body takes what they share
    ([1, 3], [3], (None, (3,)), 1),          # parts in no common group: one surface that touches all
])
def test_collision_groups_are_read_and_decide_the_pairs(tmp_path, lower, upper, groups, pairs):
    """Two fingers, each with collision children loading the finger's own mesh (placed like the body, so its file
    is the collision mesh; two children: their surfaces written together). Their models' group data become
    body.collisionGroup, and the [collision] table pairs the bodies only when they share no group. A body whose
    parts are in different groups has one surface in softsim: it takes the groups all its parts share (SOFA would
    let the other body touch some parts and not others; sharing less, softsim errs on the side of contact)."""
    result = _two_fingers(tmp_path, lower, upper)
    spec = result.spec
    assert tuple(b.collisionGroup for b in spec.bodies) == groups
    for body, parts in zip(spec.bodies, (lower, upper)):
        name = Path(body.collisionMesh_path).name
        assert name == ("finger.vtk" if len(parts) == 1 else f"pair.{body.name}.collision.vtu")
    assert spec.collision.friction == 0.3 and spec.collision.contactDistance == 0.5
    scene = Scene(spec)
    assert len(scene.simulation.constraint("collision").pairs) == pairs
    if len(lower) == 2:  # the written surface is both parts, each the finger's boundary, at the finger's place
        own = meshes.load_surface(FINGER_MESH)
        written = meshio.read(spec.bodies[0].collisionMesh_path)
        np.testing.assert_array_equal(written.cells_dict["triangle"],
                                      np.concatenate([own.triangles, own.triangles + len(own.points)]))
        np.testing.assert_allclose(written.points, np.concatenate([own.points, own.points]), rtol=0, atol=1e-12)
    if lower == ["1 2", 2]:
        assert "takes the groups they all share ([2])" in result.report.text()
    if lower == [1, 3]:
        assert "takes the groups they all share (none)" in result.report.text()


def test_circular_robot_floor_is_sofas_square_as_an_obstacle_box(circular):
    """circularrobot.py's Floor: SOFA's share/mesh/square1.obj (0 <= x, y <= 1, z = 0, normal +z), loader scale
    250, rotation [90, 0, 180], translation [50, -21, -100]. Placed here with scipy: the square spans x from -200
    to 50 and z from -100 to 150 at y = -21, its normal +y; the box's top face is that square."""
    corners = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    turn = Rotation.from_euler("xyz", [90, 0, 180], degrees=True)
    placed = turn.apply(250.0 * corners) + [50.0, -21.0, -100.0]
    np.testing.assert_allclose(turn.apply([0, 0, 1]), [0, 1, 0], atol=1e-15)
    (floor,) = circular.spec.obstacles
    center, half = np.asarray(floor.center), np.asarray(floor.halfExtents)
    assert floor.type == "box" and floor.name == "Floor"
    np.testing.assert_allclose([center[0] - half[0], center[0] + half[0]], [placed[:, 0].min(), placed[:, 0].max()])
    np.testing.assert_allclose([center[2] - half[2], center[2] + half[2]], [placed[:, 2].min(), placed[:, 2].max()])
    assert center[1] + half[1] == pytest.approx(-21.0, abs=1e-12) and placed[:, 1] == pytest.approx(-21.0)
    assert half[1] == pytest.approx(0.5 * 0.04 * 250)  # SQUARE_DEPTH of its side, below the square
    # the pipeline's settings: LocalMinDistance contactDistance 1, CollisionResponse mu=0.8
    assert (floor.contactDistance, floor.friction) == (1.0, 0.8)
    assert Path(circular.spec.bodies[0].collisionMesh_path).name == "wheel_collision.stl"
    text = circular.report.text()
    assert "/Floor: a static collision surface on SOFA's mesh/square1.obj" in text
    assert "/Floor/TriangleCollisionModel" not in text


def test_circular_robot_runs_dynamic_with_its_inverse_solver_reported(circular):
    """Nothing holds the wheel but the floor: a static frame of it is singular, and softsim's inverse model
    solves static frames only. The import keeps SOFA's EulerImplicitSolver (dynamic, rayleighMass and
    rayleighStiffness 0.015) with the QPInverseProblemSolver's settings and active = false, and says so naming
    the component. Every frame converges; the wheel settles on the floor by its collision surface: the contact
    forces act on wheel_collision.stl's vertices only (mapped ids beyond the mesh's nodes), the lowest of which
    sits at the floor's top + contactDistance, and the floor carries the wheel's weight, 0.042 kg x 9180 mm/s^2
    (circularrobot.py: totalMass 0.042, gravity [0, -9180, 0])."""
    spec = circular.spec
    assert spec.scene.mode == "dynamic" and spec.solver.dynamic.rayleighMass == 0.015
    inverse = spec.solver.inverse
    assert not inverse.active and (inverse.epsilon, inverse.maxIterations, inverse.responseFriction) == (2.0, 2500,
                                                                                                         0.8)
    line = next(x for x in circular.report.text().splitlines() if x.strip().startswith("/QPInverseProblemSolver"))
    assert "softsim's inverse model solves static equilibria only" in line and "singular" in line
    scene = Scene(spec)
    reports = scene.simulation.run(40)
    assert all(r.ok and r.converged for r in reports), [r.message for r in reports]
    contact = scene.simulation.constraint("contact")
    assert contact.n_contacts > 0 and np.all(contact.contact_nodes >= scene.mesh.n_points)
    vertices = contact.extend(scene.positions)[scene.mesh.n_points:]
    assert vertices.shape == (128, 3)  # wheel_collision.stl
    assert vertices[:, 1].min() == pytest.approx(-21.0 + 1.0, abs=1e-6)
    assert scene.outputs()["contact.normalForce"] == pytest.approx(0.042 * 9180.0, rel=2e-3)
    assert contact.contact_forces[:, 1].sum() == pytest.approx(0.042 * 9180.0, rel=2e-3)
