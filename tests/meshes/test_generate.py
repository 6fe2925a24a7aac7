"""Shipped and generated meshes: sizes, named sets, SoftRobots geometry checks, element quality."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim import meshes
from softsim.meshes import generate
from softsim.meshes.quality import quality_summary
from tests.meshes.helpers import points_in_mesh

SOFTROBOTS_FINGER_BASE_BOX = [-15.0, 0.0, 0.0, 5.0, 10.0, 15.0]

RESOURCES = Path(__file__).resolve().parents[2] / "resources" / "meshes"

# file -> (nodes, tets, volume mm^3, min dihedral deg measured, min radius ratio measured)
SHIPPED = {
    "finger.vtu": (440, 1512, 23175.0, 36.87, 0.693),
    # 16-gon section (area 8 r^2 sin(pi/8)), radius linear 13 -> 6 over 195 mm
    "trunk.vtu": (1000, 3744, 8 * np.sin(np.pi / 8) * 195 * (13**2 + 13 * 6 + 6**2) / 3, 31.31, 0.655),
    # 115 x 30 x 20 minus 4 gaps 4 x 9 x 20 minus the 8964 mm^3 cavity
    "pneunet.vtu": (1303, 4584, 57156.0, 26.57, 0.611),
    "balloon.vtu": (702, 2688, 23625.0, 45.0, 0.717),
    "beam.vtu": (189, 480, 10000.0, 45.0, 0.717),
    "cube.vtu": (343, 1296, 8000.0, 45.0, 0.717),
}


@pytest.fixture(scope="module")
def shipped():
    return {name: meshes.load(RESOURCES / name) for name in SHIPPED}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_mesh_sizes_and_quality(shipped, name):
    nodes, tets, volume, min_dihedral, min_ratio = SHIPPED[name]
    mesh = shipped[name]
    assert (mesh.n_points, mesh.n_tets) == (nodes, tets)
    assert mesh.volume == pytest.approx(volume, rel=1e-12)
    assert mesh.problems == []
    quality = quality_summary(mesh.points, mesh.tets)
    assert quality["min_dihedral_deg"] == pytest.approx(min_dihedral, abs=0.01)
    assert quality["min_radius_ratio"] == pytest.approx(min_ratio, abs=0.001)
    assert quality["min_dihedral_deg"] >= 25.0 and quality["min_radius_ratio"] >= 0.6  # no slivers
    surface = mesh.surface_triangles()
    assert meshes.is_closed(surface)
    assert meshes.enclosed_volume(mesh.points, surface) == pytest.approx(volume, rel=1e-9)


def test_shipped_files_match_generators(shipped):
    for name, build in (("finger.vtu", generate.finger), ("pneunet.vtu", generate.pneunet)):
        fresh = build()
        np.testing.assert_array_equal(shipped[name].tets, fresh.tets)
        np.testing.assert_allclose(shipped[name].points, fresh.points, rtol=0, atol=1e-12)


def test_finger_bbox_cable_points_and_base_box(shipped):
    mesh = shipped["finger.vtu"]
    np.testing.assert_allclose(mesh.bbox, [-103.0, 0.0, 0.0, 0.0, 15.0, 15.0])
    assert generate.FINGER_CABLE_POINTS.shape == (14, 3)
    assert points_in_mesh(mesh.points, mesh.tets, generate.FINGER_CABLE_POINTS).all()
    base_box = meshes.in_box(mesh.points, [-15.0, 0.0, 0.0, 5.0, 10.0, 15.0])
    assert base_box.size == 60  # x in {-14.71, -9.81, -4.90, 0} x y in {0, 5, 10} x z in 5 values
    assert mesh.point_sets["base"].size == 20 and mesh.point_sets["tip"].size == 20
    # geometric order of the four tip points (SoftRobots cable.json) is inside too
    tip_loop = np.array([[-83.5, 12.5, 4.5], [-85.5, 12.5, 6.5], [-85.5, 12.5, 8.5], [-83.5, 12.5, 10.5]])
    assert points_in_mesh(mesh.points, mesh.tets, tip_loop).all()
    # SoftRobots Finger.py cable length L0 for this point order (reference value 165.241)
    path = np.vstack([[0.0, 12.5, 2.5], generate.FINGER_CABLE_POINTS])
    assert np.linalg.norm(np.diff(path, axis=0), axis=1).sum() == pytest.approx(165.241, abs=1e-3)


def test_trunk_shape_and_cable_points(shipped):
    mesh = shipped["trunk.vtu"]
    np.testing.assert_allclose(mesh.bbox, [-13.0, -13.0, 0.0, 13.0, 13.0, 195.0], atol=1e-12)
    radius = np.linalg.norm(mesh.points[:, :2], axis=1)
    assert radius[mesh.point_sets["tip"]].max() == pytest.approx(6.0)
    for cable in range(4):
        points = generate.trunk_cable_points(cable)
        assert points.shape == (21, 3)
        assert points_in_mesh(mesh.points, mesh.tets, points).all()
    # SoftRobots' BoxROI: the 3 node layers z = 0, 7.11, 14.08 (25 nodes each)
    assert meshes.in_box(mesh.points, [[-20, -20, 0], [20, 20, 20]]).size == 75


def test_pneunet_cavity_stiff_layer_and_fixation(shipped):
    mesh = shipped["pneunet.vtu"]
    np.testing.assert_allclose(mesh.bbox, [-115.0, 0.0, -10.0, 0.0, 30.0, 10.0])
    cavity = mesh.triangle_sets["cavity"]
    assert cavity.shape == (592, 3)
    assert meshes.is_closed(cavity)
    # normals point out of the cavity volume: 5 chambers 10x12x12 + channel 98x3x6
    assert meshes.enclosed_volume(mesh.points, cavity) == pytest.approx(8964.0, rel=1e-12)
    stiff = meshes.tets_in_box(mesh.points, mesh.tets, generate.PNEUNET_STIFF_LAYER_BOX)
    assert stiff.size == 596
    np.testing.assert_array_equal(mesh.cell_sets["stiff_layer"], stiff)
    assert meshes.in_box(mesh.points, [-10, 0, -20, 0, 30, 20]).size == 147  # x in {-9, -5, 0} x 7 y x 7 z
    # the cavity is a void: its centre points are outside the material, the walls inside
    inside = points_in_mesh(mesh.points, mesh.tets, np.array([[-103.0, 9.0, 0.0], [-103.0, 1.5, 0.0]]))
    assert inside.tolist() == [False, True]


def test_shipped_cavity_stl_matches_triangle_set():
    surface = meshes.load_surface(RESOURCES / "pneunet_cavity.stl")
    assert (surface.n_points, surface.n_triangles) == (298, 592)
    assert surface.is_closed()
    assert surface.volume() == pytest.approx(8964.0, rel=1e-9)
    balloon_cavity = meshes.load_surface(RESOURCES / "balloon_cavity.stl")
    assert balloon_cavity.volume() == pytest.approx(15.0**3, rel=1e-9)


def test_balloon_cavity(shipped):
    mesh = shipped["balloon.vtu"]
    cavity = mesh.triangle_sets["cavity"]
    assert cavity.shape == (192, 3) and meshes.is_closed(cavity)
    assert meshes.enclosed_volume(mesh.points, cavity) == pytest.approx(3375.0, rel=1e-12)
    assert mesh.volume + 3375.0 == pytest.approx(30.0**3)


def test_beam_refinement_levels():
    volumes, counts = [], []
    for level in range(3):
        mesh = generate.beam_level(level)
        counts.append(mesh.n_tets)
        volumes.append(mesh.volume)
    assert counts == [60, 480, 3840]
    np.testing.assert_allclose(volumes, 10000.0, rtol=1e-12)
    beam = generate.beam(2.0, 1.0, 0.5, 4, 2, 1)
    assert beam.n_tets == 48 and beam.volume == pytest.approx(1.0)
    np.testing.assert_allclose(beam.points[beam.point_sets["free_end"], 0], 2.0)
    with pytest.raises(meshes.MeshError, match=r"beam: nx must be an integer >= 1, got 0"):
        generate.beam(1.0, 1.0, 1.0, 0, 1, 1)


def test_generate_main_writes_every_file(tmp_path):
    assert generate.main([str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted([*SHIPPED, "pneunet_cavity.stl", "balloon_cavity.stl"])


def _reflection(points, axis, centre):
    """Node permutation of the reflection ``p[axis] -> 2 centre - p[axis]``; asserts it maps nodes onto nodes."""
    from scipy.spatial import cKDTree

    reflected = points.copy()
    reflected[:, axis] = 2.0 * centre - reflected[:, axis]
    distance, image = cKDTree(points).query(reflected)
    assert distance.max() <= 1e-9, f"reflection about axis {axis} = {centre} moves a node off the node set"
    assert np.unique(image).size == len(points)
    return image


def _tet_set(tets):
    rows = np.sort(tets, axis=1)
    return rows[np.lexsort(rows.T[::-1])]


def _is_mirror_symmetric(mesh, axis, centre) -> bool:
    image = _reflection(mesh.points, axis, centre)
    return bool(np.array_equal(_tet_set(image[mesh.tets]), _tet_set(mesh.tets)))


# mesh -> mid-planes (axis, coordinate) of its geometry, and the named sets that each plane maps onto themselves
MIRROR_PLANES = {
    "finger.vtu": [(2, 7.5, ["base", "tip"])],
    "trunk.vtu": [(0, 0.0, ["base", "tip"]), (1, 0.0, ["base", "tip"])],
    "pneunet.vtu": [(2, 0.0, ["base", "stiff_layer", "cavity"])],
    "balloon.vtu": [(0, 0.0, ["base", "cavity"]), (1, 0.0, ["cavity"]), (2, 0.0, ["base", "cavity"])],
    "beam.vtu": [(1, 5.0, ["fixed", "free_end"]), (2, 5.0, ["fixed", "free_end"])],
    "cube.vtu": [(0, 10.0, ["bottom", "top"]), (1, 10.0, []), (2, 10.0, ["bottom", "top"])],
}


@pytest.mark.parametrize("name", sorted(MIRROR_PLANES))
def test_shipped_meshes_are_mirror_symmetric(shipped, name):
    mesh = shipped[name]
    for axis, centre, set_names in MIRROR_PLANES[name]:
        assert _is_mirror_symmetric(mesh, axis, centre), (name, axis)
        image = _reflection(mesh.points, axis, centre)
        for set_name in set_names:
            if set_name in mesh.point_sets:
                nodes = mesh.point_sets[set_name]
                np.testing.assert_array_equal(np.sort(image[nodes]), np.sort(nodes))
            elif set_name in mesh.triangle_sets:
                triangles = mesh.triangle_sets[set_name]
                np.testing.assert_array_equal(_tet_set(image[triangles]), _tet_set(triangles))
            else:
                cells = np.sort(mesh.tets[mesh.cell_sets[set_name]], axis=1)
                mapped = {tuple(row) for row in np.sort(image[cells], axis=1).tolist()}
                assert mapped == {tuple(row) for row in cells.tolist()}


def test_plain_kuhn_split_is_not_mirror_symmetric():
    """The check has teeth: the old same-diagonal split of the finger grid fails it."""
    points, tets = generate.hex_grid_tets(np.linspace(-103, 0, 22), np.linspace(0, 15, 4), np.linspace(0, 15, 5))
    assert not _is_mirror_symmetric(meshes.TetMesh.from_arrays(points, tets), 2, 7.5)


def _face_use_counts(tets):
    faces = np.sort(tets[:, [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]].reshape(-1, 3), axis=1)
    return np.unique(faces, axis=0, return_counts=True)[1]


@pytest.mark.parametrize("mirror", [(), (0,), (2,), (0, 1, 2)])
def test_mirrored_kuhn_split_is_conforming(mirror):
    """Every face is used by one or two tets, and the boundary is exactly 2 triangles per outer square."""
    shape = (4, 2, 6)
    points, tets = generate.hex_grid_tets(*(np.linspace(0.0, 1.0, n + 1) for n in shape), mirror=mirror)
    counts = _face_use_counts(tets)
    assert counts.max() == 2
    outer_squares = 2 * (shape[0] * shape[1] + shape[1] * shape[2] + shape[0] * shape[2])  # 2 * 44
    assert (counts == 1).sum() == 2 * outer_squares == 176
    mesh = meshes.TetMesh.from_arrays(points, tets)
    assert mesh.n_tets == 6 * 48 and mesh.volume == pytest.approx(1.0, rel=1e-12)
    for axis in mirror:
        assert _is_mirror_symmetric(mesh, axis, 0.5)


def test_shipped_finger_interior_faces_are_shared_by_two_tets(shipped):
    mesh = shipped["finger.vtu"]
    counts = _face_use_counts(mesh.tets)
    assert counts.max() == 2
    # outer squares: 2 (21 x 3) + 2 (21 x 4) + 2 (3 x 4) = 318, two triangles each
    assert (counts == 1).sum() == len(mesh.surface_triangles()) == 636


@pytest.mark.parametrize("shape", [{}, {"tip_radius": 13.0}, {"length": 50.0, "layer_ratio": 1.0}])
def test_trunk_prism_split_is_conforming(shape):
    """The prisms' split follows a vertex order that is strict on every triangle of the section, so
    neighbouring prisms cut their shared quad along the same diagonal: every face is used by one or two tets,
    and the boundary is the two 32-triangle caps plus 2 triangles per side quad (16 per layer)."""
    mesh = generate.trunk(**shape)
    layers = mesh.n_tets // (32 * 3)
    assert mesh.n_tets == 96 * layers and mesh.n_points == 25 * (layers + 1)
    counts = _face_use_counts(mesh.tets)
    assert counts.max() == 2
    assert (counts == 1).sum() == len(mesh.surface_triangles()) == 2 * 32 + 32 * layers
    assert meshes.is_closed(mesh.surface_triangles())


def test_mirror_input_errors():
    with pytest.raises(meshes.MeshError, match=r"mirroring axis 1 needs an even number of cells along it, got 3"):
        generate.hex_grid_tets([0, 1], [0, 1, 2, 3], [0, 1], mirror=(1,))
    with pytest.raises(meshes.MeshError, match=r"nodes along mirrored axis 0 are not symmetric"):
        generate.hex_grid_tets([0.0, 1.0, 3.0], [0, 1], [0, 1], mirror=(0,))
    with pytest.raises(meshes.MeshError, match=r"mirror axes must be in \(0, 1, 2\), got 3"):
        generate.hex_grid_tets([0, 1], [0, 1], [0, 1], mirror=(3,))
    with pytest.raises(meshes.MeshError, match=r"finger: nz must be an even integer >= 2 .*got 3"):
        generate.finger(nz=3)
    with pytest.raises(meshes.MeshError, match=r"pneunet: n_chambers must be an integer in \[1, 5\], got 6"):
        generate.pneunet(6)


def _finger_gravity_displacement(mesh):
    from softsim.mechanics.fem import TetElasticity
    from softsim.mechanics.loads import Gravity, lumped_masses
    from softsim.mechanics.newton import StaticNewtonSolver
    from softsim.mechanics.static_problem import StaticProblem

    elasticity = TetElasticity(mesh.points, mesh.tets, model="linear", young=600.0, poisson=0.45)
    masses = lumped_masses(mesh.points, mesh.tets, total_mass=0.075)
    problem = StaticProblem(
        elasticity,
        fixed_nodes=meshes.in_box(mesh.points, SOFTROBOTS_FINGER_BASE_BOX),
        loads=[Gravity(masses, [0.0, -9810.0, 0.0])],
    )
    report = StaticNewtonSolver().solve(problem, mesh.points)
    assert report.converged
    return report.x - mesh.points


def test_finger_bends_in_its_plane_under_a_symmetric_load(shipped):
    """Gravity (-y) on the finger fixed by SoftRobots' base box: no sideways (z) tip motion, and the
    displacement field is the mirror image of itself about z = 7.5."""
    mesh = shipped["finger.vtu"]
    displacement = _finger_gravity_displacement(mesh)
    tip = displacement[mesh.point_sets["tip"]].mean(axis=0)
    assert tip[1] < -5.0  # measured -10.91 mm
    assert abs(tip[2]) < 1e-8 * abs(tip[1])  # measured 9.3e-13
    image = _reflection(mesh.points, 2, 7.5)
    mirrored = displacement[image] * np.array([1.0, 1.0, -1.0])
    np.testing.assert_allclose(mirrored, displacement, rtol=0, atol=1e-8 * np.abs(displacement).max())

    # The same grid with the plain Kuhn split twists: tip z / tip y measured -0.184 (0.196 on the old 3 x 3 cells).
    points, tets = generate.hex_grid_tets(np.linspace(-103, 0, 22), np.linspace(0, 15, 4), np.linspace(0, 15, 5))
    kuhn = meshes.TetMesh.from_arrays(points, tets)
    kuhn_tip = _finger_gravity_displacement(kuhn)[np.flatnonzero(points[:, 0] == -103.0)].mean(axis=0)
    assert abs(kuhn_tip[2]) > 0.01 * abs(kuhn_tip[1])
