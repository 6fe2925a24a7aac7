"""Shipped and generated meshes: sizes, named sets, SoftRobots geometry checks, element quality."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import meshes
from meshes import generate
from meshes.quality import quality_summary
from tests.meshes.helpers import points_in_mesh

RESOURCES = Path(__file__).resolve().parents[2] / "resources" / "meshes"

# file -> (nodes, tets, volume mm^3, min dihedral deg measured, min radius ratio measured)
SHIPPED = {
    "finger.vtu": (352, 1134, 23175.0, 44.45, 0.717),
    # 16-gon section (area 8 r^2 sin(pi/8)), radius linear 13 -> 6 over 195 mm
    "trunk.vtu": (1000, 3744, 8 * np.sin(np.pi / 8) * 195 * (13**2 + 13 * 6 + 6**2) / 3, 31.31, 0.655),
    "pneunet.vtu": (1208, 4308, 57480.0, 26.57, 0.611),
    "balloon.vtu": (702, 2688, 23625.0, 45.0, 0.717),
    "beam.vtu": (189, 480, 10000.0, 45.0, 0.717),
    "cube.vtu": (216, 750, 8000.0, 45.0, 0.717),
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
    assert base_box.size == 48  # x in {-14.71, -9.81, -4.90, 0} x y in {0, 5, 10} x z in 4 values
    assert mesh.point_sets["base"].size == 16 and mesh.point_sets["tip"].size == 16
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
    assert cavity.shape == (460, 3)
    assert meshes.is_closed(cavity)
    # normals point out of the cavity volume: 5 chambers 10x12x12 + channel 90x4x4
    assert meshes.enclosed_volume(mesh.points, cavity) == pytest.approx(8640.0, rel=1e-12)
    stiff = meshes.tets_in_box(mesh.points, mesh.tets, generate.PNEUNET_STIFF_LAYER_BOX)
    assert stiff.size == 529
    np.testing.assert_array_equal(mesh.cell_sets["stiff_layer"], stiff)
    assert meshes.in_box(mesh.points, [-10, 0, -20, 0, 30, 20]).size == 126
    # the cavity is a void: its centre points are outside the material, the walls inside
    inside = points_in_mesh(mesh.points, mesh.tets, np.array([[-103.0, 9.0, 0.0], [-103.0, 1.5, 0.0]]))
    assert inside.tolist() == [False, True]


def test_shipped_cavity_stl_matches_triangle_set():
    surface = meshes.load_surface(RESOURCES / "pneunet_cavity.stl")
    assert (surface.n_points, surface.n_triangles) == (232, 460)
    assert surface.is_closed()
    assert surface.volume() == pytest.approx(8640.0, rel=1e-9)
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
