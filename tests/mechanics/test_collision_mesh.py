"""``body.collisionMesh``: a separate triangle surface, mapped barycentrically into the tetrahedra, touches obstacles
and other bodies instead of the mesh's own surface. The mesh's own surface given as the collision mesh must give
the same frames as no collision mesh (the same contacts, reached through the mapping); a coarse surface must be
what touches."""

from __future__ import annotations

from pathlib import Path

import meshio
import numpy as np
import pytest

from softsim import meshes
from softsim.mechanics.constraints import MappedConstraint
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
FINGER = ROOT / "resources" / "scenes" / "finger.toml"
CUBE = (ROOT / "resources" / "meshes" / "cube.vtu").as_posix()
FLOOR = {"name": "floor", "type": "plane", "point": [0.0, -2.0, 0.0], "normal": [0.0, 1.0, 0.0]}


def write_surface(path: Path, points, triangles) -> Path:
    meshio.write(path, meshio.Mesh(np.asarray(points, dtype=np.float64), [("triangle", np.asarray(triangles))]))
    return path


def own_surface(mesh_path: Path, out: Path) -> Path:
    mesh = meshes.load(mesh_path)
    return write_surface(out, mesh.points, mesh.surface_triangles())


def finger(collision_mesh: Path | None, *, cable: float = 0.0, obstacles=(FLOOR,)) -> Scene:
    spec = load_scene(FINGER)
    data = to_data(spec)
    data["obstacle"] = list(obstacles)
    data["body"][0]["cable"][0]["value"] = cable
    if collision_mesh is not None:
        data["body"][0]["collisionMesh"] = str(collision_mesh)
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def test_the_mesh_own_surface_as_collision_mesh_gives_the_same_frames(tmp_path):
    """The finger droops onto a floor 2 mm below its base (gravity -y; the cable at 0 then pushed by -3 mm)."""
    surface = own_surface(ROOT / "resources" / "meshes" / "finger.vtu", tmp_path / "finger_surface.obj")
    plain, mapped = finger(None), finger(surface)
    assert isinstance(mapped.simulation.constraint("contact"), MappedConstraint)
    for value in (0.0, -3.0):
        plain.set("body.finger.cable.cable.value", value)
        mapped.set("body.finger.cable.cable.value", value)
        a, b = plain.step(), mapped.step()
        assert a.converged and b.converged, (a.message, b.message)
        assert plain.outputs()["contact.contacts"] > 0
        assert mapped.outputs()["contact.contacts"] == plain.outputs()["contact.contacts"]
        np.testing.assert_allclose(mapped.positions, plain.positions, atol=1e-6)
        assert mapped.outputs()["contact.normalForce"] == pytest.approx(plain.outputs()["contact.normalForce"],
                                                                          rel=1e-6)


def test_a_coarse_collision_surface_is_what_touches(tmp_path):
    """The finger's collision model is the box of its eight corners (12 triangles): those corners, not the mesh's
    nodes, stay on the floor's side."""
    lo, hi = np.array([-103.0, 0.0, 0.0]), np.array([0.0, 15.0, 15.0])
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    box = meshio.Mesh(corners, []).points
    hull = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6], [0, 2, 6],
            [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    surface = write_surface(tmp_path / "box.obj", box, hull)
    scene = finger(surface, cable=-3.0)
    assert scene.step().converged
    contact = scene.simulation.constraint("contact")
    vertices = contact.extend(scene.positions)[scene.mesh.n_points:]
    assert vertices.shape == (8, 3)
    assert vertices[:, 1].min() >= -2.0 - 1e-6  # no corner through the floor
    assert scene.outputs()["contact.contacts"] >= 1
    # the tip's lower corners are the ones on the floor, at y = -2
    tip = vertices[np.argsort(vertices[:, 1])[:2]]
    np.testing.assert_allclose(tip[:, 1], -2.0, atol=1e-6)


def drop_scene(base: str = "", block: str = "", collision: bool = True) -> str:
    """A 16 mm block above a fixed cube (dynamic): ``base`` and ``block`` are extra keys of each body."""
    table = """
[collision]
contactDistance = 0.2
alarmDistance = 2.0
""" if collision else ""
    return f"""
[scene]
units = "mm-kg-s"
mode = "dynamic"
dt = 0.01
gravity = [0.0, -9810.0, 0.0]

[[body]]
name = "base"
mesh = "{CUBE}"
{base}
  [body.material]
  youngModulus = 1e5
  poissonRatio = 0.3
  massDensity = 1e-6
  [[body.fixed]]
  box = [-1, -1, -1, 21, 1, 21]

[[body]]
name = "block"
mesh = "{CUBE}"
translation = [2.0, 21.0, 2.0]
scale = 0.8
{block}
  [body.material]
  youngModulus = 100.0
  poissonRatio = 0.3
  massDensity = 1e-6
{table}
[solver.dynamic]
rayleighMass = 5.0
newton_iterations = 3

[solver.constraint]
maxIterations = 3000
tolerance = 1e-9
"""


def test_collision_between_bodies_through_their_collision_meshes(tmp_path):
    """A 16 mm block dropped on a fixed cube (dynamic, [collision]): with each body's own surface given as its
    collision mesh the frames are those without."""
    surface = own_surface(Path(CUBE), tmp_path / "cube_surface.obj")

    def text(with_mesh: bool) -> str:
        extra = f'collisionMesh = "{surface.as_posix()}"' if with_mesh else ""
        return drop_scene(extra, extra)

    scenes = []
    for with_mesh in (False, True):
        path = tmp_path / f"drop_{with_mesh}.toml"
        path.write_text(text(with_mesh))
        scenes.append(Scene.load(path))
    touched = 0
    for _ in range(25):
        for scene in scenes:
            assert scene.step().ran
        touched += scenes[0].outputs()["collision.contacts"] > 0
        assert scenes[1].outputs()["collision.contacts"] == scenes[0].outputs()["collision.contacts"]
    assert touched > 0
    np.testing.assert_allclose(scenes[1].positions, scenes[0].positions, atol=1e-6)


def test_a_collision_mesh_outside_the_body_is_refused_naming_the_key(tmp_path):
    far = write_surface(tmp_path / "far.obj", [[500.0, 0.0, 0.0], [510.0, 0.0, 0.0], [500.0, 10.0, 0.0]],
                        [[0, 1, 2]])
    with pytest.raises(SceneError, match=r"finger\.toml: body\.finger\.collisionMesh: far\.obj: mapping: 3 of 3 "
                                         r"points lie farther than max_distance"):
        finger(far)
    with pytest.raises(SceneError, match=r"body\[0\]\.collisionMesh: file not found"):
        finger(tmp_path / "missing.obj")


def test_bodies_that_share_a_collision_group_do_not_touch(tmp_path):
    """SOFA's collision groups: the block and the base in group 1 pass through each other (the block's frames are
    exactly those of the scene without [collision]), in groups 1 and 2 they touch as without groups; a group
    shared among others ([1, 3] and [3]) is enough to keep them apart. A friction set for a pair that cannot
    touch is warned about."""
    def run(base: str, block: str, collision: bool = True) -> tuple[np.ndarray, float]:
        path = tmp_path / "drop.toml"
        path.write_text(drop_scene(base, block, collision))
        scene = Scene.load(path)
        contacts = 0.0
        for _ in range(25):
            report = scene.step()
            contacts += scene.outputs().get("collision.contacts", 0.0)
            assert report.converged if contacts == 0 else report.ran  # the contact frames: as the test above
        return scene.positions, contacts

    alone, _ = run("", "", collision=False)
    plain, touched = run("", "")
    assert touched > 0 and alone[:, 1].min() < -5.0  # without contact the block falls through the base
    same, contacts = run("collisionGroup = [1]", "collisionGroup = [1]")
    assert contacts == 0
    np.testing.assert_allclose(same, alone, rtol=0, atol=1e-12)
    other, contacts = run("collisionGroup = [1]", "collisionGroup = [2]")
    assert contacts == touched
    np.testing.assert_allclose(other, plain, rtol=0, atol=1e-12)
    shared, contacts = run("collisionGroup = [1, 3]", "collisionGroup = [3]")
    assert contacts == 0
    np.testing.assert_allclose(shared, alone, rtol=0, atol=1e-12)
    path = tmp_path / "pair.toml"
    path.write_text(drop_scene("collisionGroup = [1]", "collisionGroup = [1]").replace(
        "alarmDistance = 2.0\n", 'alarmDistance = 2.0\n[[collision.pair]]\nbodyA = "base"\nbodyB = "block"\n'
                                  "friction = 0.4\n"))
    assert any("share the collisionGroup 1, so they never touch" in w for w in load_scene(path).warnings)
