"""Free rigid bodies of SOFA scenes imported as ``[[rigid]]`` boxes (app/sofa_import/free_rigid.py): the
PneunetGripper's cube (STLIB's Cube prefab, step7-withSTLIB.py) and a hand-built Rigid3 object.

Expected numbers come from the scene files themselves (param.py's cubeParam, step7's ContactHeader and
integration settings), and from SOFA's ``share/mesh/cube.obj``, whose vertices are at +-1 (half side 1)."""

from __future__ import annotations

import re
import runpy
import tomllib
from pathlib import Path

import pytest

from softsim.app.sofa_import import import_scene, write_import
from softsim.mechanics.scene_runtime import Scene

SOFA = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "sofa"
GRIPPER = SOFA / "PneunetGripper" / "details"
FINGER_MESH = (SOFA / "CableConstraint" / "mesh" / "finger.vtk").resolve()
CUBE_OBJ_HALF_SIDE = 1.0  # SOFA's share/mesh/cube.obj: 8 vertices at (+-1, +-1, +-1)


@pytest.fixture(scope="module")
def step7(tmp_path_factory):
    out = tmp_path_factory.mktemp("step7") / "step7-withSTLIB.toml"
    result = import_scene(GRIPPER / "step7-withSTLIB.py", out)
    write_import(result, out)
    return result, out


def test_the_gripper_cube_is_a_rigid_box(step7):
    result, out = step7
    cube = runpy.run_path(str(GRIPPER / "param.py"))["cubeParam"]  # totalMass 0.01, [15, 20, 0], scale 21
    source = (GRIPPER / "step7-withSTLIB.py").read_text()
    contact = {k: float(re.search(rf"{k}=([0-9.]+)", source).group(1))
               for k in ("alarmDistance", "contactDistance", "frictionCoef")}  # 5, 1, 0.6
    tables = tomllib.loads(out.read_text())["rigid"]  # the TOML as written, read back on its own
    assert len(tables) == 1
    table = tables[0]
    half = CUBE_OBJ_HALF_SIDE * cube["uniformScale"]
    assert table["name"] == "Cube" and table["shape"] == "box"
    assert table["halfExtents"] == [half] * 3 == [21.0] * 3
    assert table["mass"] == cube["totalMass"] == 0.01
    assert table["position"] == cube["translation"] == [15.0, 20.0, 0.0]
    assert table.get("rotation", [0.0, 0.0, 0.0]) == [0.0, 0.0, 0.0]  # the prefab's default rotation
    # SOFA's RigidMass: moments = mass x inertiaMatrix, STLIB's default matrix the identity
    assert table["inertia"] == pytest.approx([cube["totalMass"]] * 3, rel=1e-15)
    assert (table["friction"], table["contactDistance"], table["alarmDistance"]) == (
        contact["frictionCoef"], contact["contactDistance"], contact["alarmDistance"])
    text = result.report.text()
    assert "/Cube/mstate" not in text and "/Cube/collision/loader" not in text
    assert "/Plane/mstate" not in text and "/Plane/collision/loader" not in text  # the floor is translated
    assert "solid cube of that size: 2.94" in text  # 0.01 x (21^2 + 21^2) / 3


def test_the_gripper_floor_is_an_obstacle_box(step7):
    """STLIB's Floor (isAStaticObject: no ODE solver) on SOFA's share/mesh/floor.obj, a slab whose vertices lie
    on y = -1.32967 and y = -5.32967 with x, z within +-74.6722946167, scaled by floorParam's uniformScale 3: an
    [[obstacle]] box with its top face at y = -3.98901, with step7's friction and contactDistance."""
    _, out = step7
    floor = runpy.run_path(str(GRIPPER / "param.py"))["floorParam"]
    scale = floor["uniformScale"]
    (table,) = tomllib.loads(out.read_text())["obstacle"]
    assert table["name"] == floor["name"] == "Plane" and table["type"] == "box"
    top, bottom, side = -1.32967 * scale, -5.32967 * scale, 74.6722946167 * scale
    assert table["center"] == pytest.approx([0.0, (top + bottom) / 2, 0.0], abs=1e-9)
    assert table["halfExtents"] == pytest.approx([side, (top - bottom) / 2, side], abs=1e-8)
    assert (table["friction"], table["contactDistance"]) == (0.6, 1.0)


def test_the_imported_gripper_cube_falls_onto_its_floor_and_rests(step7):
    """The cube (bottom at y = 20 - 21 = -1) starts 1.989 mm above the floor's top (-3.98901) plus step7's
    contactDistance 1. Its first frame is a free fall: backward Euler with the scene's Rayleigh mass damping a
    (step7: integration.rayleighMass = 0.1), v = h g / (1 + h a), y = 20 + h v. It then lands and rests at
    -3.98901 + 1 + 21 = 18.01099, the floor carrying m g = 98.1 mN. Every frame converges with STLIB's moments
    of inertia (0.01, a 294th of a solid cube's): where the scene's Gauss-Seidel stops at its 1000 iterations
    (9 of the first 15 frames without the fallback), semi-smooth Newton solves the contacts and Gauss-Seidel,
    run again from that answer, meets its tolerance (mechanics/constraint_solvers/semismooth.py)."""
    result, _ = step7
    scene = Scene(result.spec)
    h, a, g = 0.01, 0.1, -9810.0  # MainHeader(dt default 0.01, gravity [0, -9810, 0])
    assert scene.spec.scene.dt == h and scene.spec.solver.dynamic.rayleighMass == a
    report = scene.step()
    assert report.ok, report.message
    v = h * g / (1 + h * a)
    out = scene.outputs()
    assert out["Cube.y"] == pytest.approx(20.0 + h * v, abs=1e-9) and out["Cube.vy"] == pytest.approx(v, abs=1e-9)
    reports = [scene.step() for _ in range(24)]
    assert all(r.ok for r in reports), [r.message for r in reports if not r.ok]
    out = scene.outputs()
    assert out["Cube.y"] == pytest.approx(-1.32967 * 3 + 1.0 + 21.0, abs=1e-4)
    assert (out["Cube.x"], out["Cube.z"]) == (pytest.approx(15.0, abs=1e-2), pytest.approx(0.0, abs=1e-2))
    assert out["Cube_Plane.normalForce"] == pytest.approx(0.01 * 9810.0, rel=1e-4)


HAND_BUILT = """
def createScene(root):
    root.gravity = [0, -9810, 0]
    root.addObject('FreeMotionAnimationLoop')
    root.addObject('GenericConstraintSolver', maxIterations=100, tolerance=1e-6)
    finger = root.addChild('finger')
    finger.addObject('{finger_solver}')
    finger.addObject('SparseLDLSolver')
    finger.addObject('MeshVTKLoader', name='loader', filename=r'{mesh}')
    finger.addObject('MeshTopology', src='@loader')
    finger.addObject('MechanicalObject')
    finger.addObject('UniformMass', totalMass=0.075)
    finger.addObject('TetrahedronFEMForceField', youngModulus=500, poissonRatio=0.3)
    finger.addObject('BoxROI', name='roi', box=[-15, 0, 0, 5, 10, 15])
    finger.addObject('RestShapeSpringsForceField', points='@roi.indices', stiffness=1e12)
    finger.addObject('LinearSolverConstraintCorrection')
    block = root.addChild('block')
    block.addObject('EulerImplicitSolver')
    block.addObject('MechanicalObject', template='Rigid3', translation=[10, 0, 0], rotation2=[0, 0, 90],
                    translation2=[1, 2, 3])
    block.addObject('UniformMass', vertexMass=[0.02, 1.0, [2, 0, 0, 0, 3, 0, 0, 0, 4]])
    block.addObject('UncoupledConstraintCorrection')
    collision = block.addChild('collision')
    collision.addObject('MeshOBJLoader', name='loader', filename='{obj}', scale=10)
    collision.addObject('MeshTopology', src='@loader')
    collision.addObject('MechanicalObject')
    collision.addObject('TriangleCollisionModel')
    collision.addObject('RigidMapping')
"""


def _hand_built(tmp_path: Path, finger_solver: str = "EulerImplicitSolver", obj: str = "mesh/cube.obj"):
    scene = tmp_path / "block.py"
    scene.write_text(HAND_BUILT.format(mesh=FINGER_MESH, finger_solver=finger_solver, obj=obj))
    return import_scene(scene, tmp_path / "block.toml")


def test_a_hand_built_rigid3_object_on_sofas_cube(tmp_path):
    """translation [10, 0, 0], then rotation2 a quarter turn about z: the centre goes to (0, 10, 0) and the
    frame turns by 90 degrees about z, then translation2 (1, 2, 3): (1, 12, 3). vertexMass [m, volume, I]
    with I = diag(2, 3, 4): moments m x I = 0.04, 0.06, 0.08. Scale 10: half side 10."""
    result = _hand_built(tmp_path)
    (rigid,) = result.spec.rigids
    assert rigid.name == "block" and rigid.halfExtents == (10.0, 10.0, 10.0) and rigid.mass == 0.02
    assert rigid.position == pytest.approx((1.0, 12.0, 3.0), abs=1e-12)
    assert rigid.rotation == pytest.approx((0.0, 0.0, 90.0), abs=1e-9)
    assert rigid.inertia == pytest.approx((0.04, 0.06, 0.08), rel=1e-14)
    assert "no collision pipeline in SOFA" in result.report.text()


@pytest.mark.parametrize(("finger_solver", "obj", "why"), [
    ("StaticSolver", "mesh/cube.obj", 'needs scene.mode = "dynamic" and the scene is static'),
    ("EulerImplicitSolver", "mesh/ball.obj",
     "/block/collision/loader: collision mesh 'mesh/ball.obj'; only SOFA's own mesh/cube.obj (a box) is translated"),
])
def test_what_is_not_a_rigid_box_stays_in_the_report(tmp_path, finger_solver, obj, why):
    """A static scene (the finger's StaticSolver), and STLIB's Sphere mesh: no [[rigid]], the reason named."""
    result = _hand_built(tmp_path, finger_solver, obj)
    assert len(result.spec.rigids) == 0
    lines = result.report.text().splitlines()
    for component in ("MechanicalObject (MechanicalObject)", "UniformMass (UniformMass)"):
        (line,) = [x for x in lines if x.strip().startswith(f"/block/{component}: a free rigid body not translated")]
        assert why in line


def test_the_imported_gripper_grasps_and_lifts_its_cube(step7):
    """The three fingers inflate to 120 kPa (step7's controller raises the cavities' value with '+'; SoftRobots
    reads a pressure value in a dynamic scene as an impulse, pressure x dt, so this is SOFA's 1.2 at dt 0.01),
    close on the cube, and their fixed bases then rise by 30 mm (the controller's arrow keys move their rest
    positions): the cube leaves the floor and goes up with the fingers, held by friction alone (mu 0.6), which
    then carry its weight, m g = 98.1 mN upwards (to 5 %: the cube still moves with them, 22 mm/s). The cube
    keeps STLIB's moments of inertia (0.01, a 294th of a solid cube's): the contact problem is then so
    ill-conditioned that the scene's Gauss-Seidel alone stops at its 1000 iterations in 92 of these 95 frames
    and the cube slips out; with semi-smooth Newton as the fallback (mechanics/constraint_solvers/semismooth.py)
    every frame converges by Gauss-Seidel's own tolerance and the fingers lift the cube."""
    result, _ = step7
    scene = Scene(result.spec)
    cube = scene.rigids[0]
    assert cube.inertia.tolist() == [0.01] * 3
    for frame in range(95):
        pressure, lift = 120.0 * min(1.0, (frame + 1) / 30), max(0.0, min(30.0, float(frame - 49)))
        for i in (1, 2, 3):
            scene.set(f"body.Finger{i}.cavity.Finger{i}_Cavity.value", pressure)
            scene.set(f"body.Finger{i}.fixed[0].translation", [0.0, lift, 0.0])
        report = scene.step()
        assert report.ok, f"frame {frame + 1}: {report.message}"
        if frame == 49:
            assert scene.outputs()["Cube_contact.contacts"] > 0 and cube.state.c[1] < 18.02  # held, on the floor
    out = scene.outputs()
    assert out["Cube_Plane.contacts"] == 0 and out["Cube_Plane.normalForce"] == 0.0
    assert out["Cube.y"] > 18.01 + 20.0  # lifted most of the 30 mm
    on_cube = -scene.simulation.constraint("Cube_contact").contact_forces.sum(axis=0)
    assert on_cube[1] == pytest.approx(0.01 * 9810.0, rel=0.05)


def test_a_static_rigid3_cube_becomes_an_obstacle_box(tmp_path):
    """The hand-built block without its ODE solver does not move in SOFA: an [[obstacle]] box. Its frame (centre
    (1, 12, 3), a quarter turn about z) on SOFA's cube.obj scaled by 10: centre (1, 12, 3), half sizes 10. Turned
    by 30 degrees instead, no axis-aligned box fits: the report says so."""
    scene = tmp_path / "static_block.py"
    static = HAND_BUILT.replace("    block.addObject('EulerImplicitSolver')\n", "")
    scene.write_text(static.format(mesh=FINGER_MESH, finger_solver="EulerImplicitSolver", obj="mesh/cube.obj"))
    result = import_scene(scene, tmp_path / "static_block.toml")
    assert len(result.spec.rigids) == 0
    (box,) = result.spec.obstacles
    assert box.name == "block" and box.type == "box"
    assert box.center == pytest.approx((1.0, 12.0, 3.0), abs=1e-9) and box.halfExtents == pytest.approx((10.0,) * 3)
    assert "/block/UniformMass" not in result.report.text()
    scene.write_text(static.replace("rotation2=[0, 0, 90]", "rotation2=[0, 0, 30]").format(
        mesh=FINGER_MESH, finger_solver="EulerImplicitSolver", obj="mesh/cube.obj"))
    result = import_scene(scene, tmp_path / "static_block.toml")
    assert len(result.spec.obstacles) == 0
    assert ("no ODE solver integrates it (it does not move in SOFA) and its frame turns the box by [0.0, 0.0, 30.0] "
            "degrees; an [[obstacle]] box is axis-aligned (quarter turns only)") in result.report.text()
