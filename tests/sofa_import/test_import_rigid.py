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
    assert "/Plane/mstate (MechanicalObject): a free rigid body not translated: no ODE solver integrates it" in text
    assert "solid cube of that size: 2.94" in text  # 0.01 x (21^2 + 21^2) / 3


def test_the_imported_gripper_runs_with_its_cube(step7):
    """Three dynamic frames converge; the cube, 100 mm below the fingers, falls freely: backward Euler with the
    scene's Rayleigh mass damping a (step7: integration.rayleighMass = 0.1), v_k = (v_(k-1) + h g) / (1 + h a),
    c_k = c_(k-1) + h v_k."""
    result, _ = step7
    scene = Scene(result.spec)
    h, a, g = 0.01, 0.1, -9810.0  # MainHeader(dt default 0.01, gravity [0, -9810, 0])
    assert scene.spec.scene.dt == h and scene.spec.solver.dynamic.rayleighMass == a
    v, y = 0.0, 20.0
    for _ in range(3):
        report = scene.step()
        assert report.ok, report.message
        v = (v + h * g) / (1 + h * a)
        y += h * v
    out = scene.outputs()
    assert out["Cube.y"] == pytest.approx(y, abs=1e-9) and out["Cube.vy"] == pytest.approx(v, abs=1e-9)
    assert (out["Cube.x"], out["Cube.z"]) == (pytest.approx(15.0, abs=1e-12), pytest.approx(0.0, abs=1e-12))


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
