"""The importer's pieces on small inputs: placements, splib3's numerics, links, the XML reader, the stand-in's
restoration of sys.modules."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from softsim.app.sofa_import.graph import Node, resolve_link
from softsim.app.sofa_import.numerics import Quat, Vec3, getOrientedBoxFromTransform
from softsim.app.sofa_import.standin import stand_in
from softsim.app.sofa_import.translate import Placement, in_oriented_box, rotation_from_angles
from softsim.app.sofa_import.xml_reader import read_xml_scene


def test_placement_composition_equals_applying_one_after_the_other():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(20, 3))
    loader = Placement(2.0, rotation_from_angles([30.0, -10.0, 75.0]), np.array([1.0, 2.0, 3.0]))
    state = Placement(0.5, rotation_from_angles([90.0, 0.0, 0.0]), np.array([0.0, 0.0, 35.0]))
    both = loader.then(state)
    np.testing.assert_allclose(both.apply(points), state.apply(loader.apply(points)), atol=1e-12)
    np.testing.assert_allclose(both.inverse_apply(both.apply(points)), points, atol=1e-12)
    # DiamondRobot's rx = 90: y goes to z (a right-handed quarter turn about x)
    np.testing.assert_allclose(state.rotation.apply([0.0, 1.0, 0.0]), [0.0, 0.0, 1.0], atol=1e-15)


def test_splib3_numerics():
    # a quarter turn about z, written as splib3's (x, y, z, w) quaternion
    q = Quat(0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))
    np.testing.assert_allclose(Vec3(1.0, 0.0, 0.0).rotateFromQuat(q), [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(Quat.createFromEuler([0, 0, 90], inDegree=True), q, atol=1e-15)
    np.testing.assert_allclose(Quat.product(q, q), [0.0, 0.0, 1.0, 0.0], atol=1e-15)  # half a turn
    assert Vec3(3.0, 4.0, 0.0).normalize().toList() == [0.6, 0.8, 0.0]
    # the oriented box of FixingBox(translation [10, 0, 0], scale 30): corners of the bottom face, depth 30
    box = getOrientedBoxFromTransform(translation=[10.0, 0.0, 0.0], scale=[30.0, 30.0, 30.0])
    np.testing.assert_allclose(box[:3], [[-5, 0, -15], [-5, 0, 15], [25, 0, 15]])  # three points, then the depth
    assert box[3] == 30.0
    box = [*np.ravel(box[:3]), box[3]]
    grid = np.array([[x, y, z] for x in (-6, -5, 10, 25, 26) for y in (-16, -15, 0, 15, 16) for z in (-15, 0, 16)],
                    dtype=float)
    inside = in_oriented_box(grid, box)
    expected = np.flatnonzero((np.abs(grid[:, 0] - 10) <= 15) & (np.abs(grid[:, 1]) <= 15) & (np.abs(grid[:, 2]) <= 15))
    np.testing.assert_array_equal(inside, expected)


def test_links_resolve_relative_absolute_and_by_ancestor():
    root = Node("root")
    finger = root.addChild("finger")
    roi = finger.addObject("BoxROI", name="roi", box=[0, 0, 0, 1, 1, 1])
    cable = finger.addChild("cable")
    assert resolve_link(cable, "@../roi.indices") == (roi, "indices")
    assert resolve_link(cable, "@/finger/roi.indices") == (roi, "indices")
    assert resolve_link(cable, "@roi") == (roi, None)  # a bare name is looked up in the ancestors too
    assert roi.indices.getLinkPath() == "@/finger/roi.indices"
    springs = finger.addObject("RestShapeSpringsForceField", points=roi.indices.getLinkPath())
    assert springs.data["points"].target is roi and springs.data["points"].field == "indices"
    orphan = Node("prefab")  # a link made before the prefab is in the scene still names its target
    loader = orphan.addChild("model").addObject("MeshVTKLoader", name="loader", filename="x.vtk")
    state = orphan.model.addObject("MechanicalObject", position=orphan.model.loader.position.getLinkPath())
    root.addChild(orphan)
    assert state.data["position"].target is loader


def test_xml_reader_keeps_attributes_as_text(tmp_path):
    path = tmp_path / "s.scn"
    path.write_text('<Node name="root" gravity="0 0 -9810" dt="0.02"><!-- c --><Node name="a">'
                    '<BoxROI name="b" box="-1 -1 -1  1 1 1"/></Node></Node>')
    root = read_xml_scene(path)
    assert root.data == {"gravity": "0 0 -9810", "dt": "0.02"}
    assert root.a.b.data["box"] == "-1 -1 -1  1 1 1" and root.a.b.getPathName() == "/a/b"


def test_stand_in_restores_modules():
    before = sys.modules.get("Sofa")
    with stand_in():
        import Sofa.Core  # noqa: F401  (the stand-in)

        assert sys.modules["Sofa"].Core.Node is Node
        with pytest.raises(ImportError, match="does not provide the module 'splib3.topology'"):
            import splib3.topology  # noqa: F401
    assert sys.modules.get("Sofa") is before


def test_xml_scene_with_effector_sphere_and_static_solver(tmp_path):
    """Components the SoftRobots examples above do not use, in one XML scene on the finger mesh."""
    from softsim.app.sofa_import import import_scene

    finger = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "finger.vtk"
    scene = tmp_path / "s.scn"
    scene.write_text(f'''<Node name="root" gravity="0 -9810 0" dt="0.02">
  <QPInverseProblemSolver epsilon="0.01" maxIterations="100"/>
  <Node name="goal"><MechanicalObject name="goalMO" position="-100 20 5"/></Node>
  <Node name="finger">
    <StaticSolver newton_iterations="7"/>
    <MeshVTKLoader name="loader" filename="{finger}" scale="2"/>
    <MeshTopology src="@loader"/>
    <MechanicalObject name="dofs"/>
    <MeshMatrixMass massDensity="1e-6"/>
    <TetrahedronFEMForceField youngModulus="600" poissonRatio="0.45" method="small"/>
    <SphereROI name="ball" centers="0 0 0" radii="12"/>
    <FixedProjectiveConstraint indices="@ball.indices"/>
    <FixedConstraint indices="1 2 3"/>
    <Node name="tip">
      <MechanicalObject position="-180 20 10"/>
      <PositionEffector indices="0" effectorGoal="@/goal/goalMO.position" useDirections="1 1 0"/>
      <BarycentricMapping/>
    </Node>
  </Node>
</Node>''')
    result = import_scene(scene, tmp_path / "s.toml")
    spec = result.spec
    body = spec.bodies[0]
    assert body.scale == 2.0 and body.material.model == "linear" and body.material.massDensity == 1e-6
    assert body.fixed[0].sphere.center == (0.0, 0.0, 0.0) and body.fixed[0].sphere.radius == 12.0
    assert body.fixed[1].indices == (1, 2, 3)
    effector = body.effectors[0]
    assert effector.position == ((-180.0, 20.0, 10.0),) and effector.effectorGoal == ((-100.0, 20.0, 5.0),)
    assert effector.useDirections == (1, 1, 0)
    assert spec.scene.mode == "static" and spec.solver.newton.newton_iterations == 7
    assert (spec.solver.inverse.epsilon, spec.solver.inverse.maxIterations) == (0.01, 100)
    assert "/goal/goalMO (MechanicalObject): the effector goal's own node" in result.report.text()


def test_units_from_gravity_or_size(tmp_path):
    """SI for a 1-unit cube under SOFA's default gravity; mm-kg-s for the 20-unit cube of resources/meshes."""
    from softsim.app.sofa_import import import_scene

    cube = Path(__file__).resolve().parents[2] / "resources" / "meshes" / "cube.vtu"
    for scale, units in ((0.05, "SI"), (1.0, "mm-kg-s")):
        scene = tmp_path / f"cube{scale}.scn"
        scene.write_text(f'<Node name="root"><Node name="cube"><MeshVTKLoader name="loader" filename="{cube}" '
                         f'scale="{scale}"/><MechanicalObject/><TetrahedronFEMForceField youngModulus="1000" '
                         f'poissonRatio="0.3"/><BoxROI name="b" box="-100 -100 -100 100 0 100"/>'
                         f'<FixedConstraint indices="@b.indices"/></Node></Node>')
        spec = import_scene(scene, tmp_path / f"cube{scale}.toml").spec
        assert spec.scene.units == units and spec.scene.gravity == (0.0, -9.81, 0.0)


def test_key_names_reach_controllers_as_sofa_gives_them():
    from softsim.app.sofa_import.live import sofa_key

    # Sofa.constants.Key: uparrow is chr(19), plus '+'; runSofa gives letters upper case
    assert [sofa_key(k) for k in ("Up", "uparrow", "+", "plus", "a", "A", "Space", "F1")] == [
        chr(19), chr(19), "+", "+", "A", "A", " ", "F1"]
