"""Surface extraction, enclosed volumes, region selectors (SOFA BoxROI semantics) and quality measures."""

from __future__ import annotations

import numpy as np
import pytest

from softsim import meshes
from softsim.meshes import MeshError, boundary_triangles, enclosed_volume, is_closed
from softsim.meshes.generate import cube
from softsim.meshes.quality import min_dihedral_angles, radius_ratios
from softsim.meshes.surface import triangle_normals

REGULAR = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
KUHN = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
ONE = np.array([[0, 1, 2, 3]])


def test_cube_surface_closed_outward_and_counted():
    mesh = cube(2.0, 3)  # 27 cells, 162 tets
    surface = mesh.surface_triangles()
    assert surface.shape == (6 * 9 * 2, 3)  # 9 squares per face, 2 triangles each
    assert is_closed(surface)
    assert enclosed_volume(mesh.points, surface) == pytest.approx(8.0, rel=1e-13)
    assert mesh.volume == pytest.approx(8.0, rel=1e-13)
    # outward: each triangle normal points away from the cube centre
    centre_to_face = mesh.points[surface].mean(axis=1) - 1.0
    assert np.all(np.einsum("ij,ij->i", triangle_normals(mesh.points, surface), centre_to_face) > 0)
    assert mesh.surface_triangles() is surface  # cached


def test_single_tet_boundary_is_its_four_outward_faces():
    faces = boundary_triangles(ONE)
    assert sorted(map(sorted, faces.tolist())) == [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]
    assert enclosed_volume(KUHN, faces) == pytest.approx(1.0 / 6.0)
    assert is_closed(faces) and not is_closed(faces[:3]) and not is_closed(faces[:, ::-1][[0, 1, 2]])


def test_open_or_inconsistent_surfaces_are_not_closed():
    faces = boundary_triangles(ONE)
    flipped = faces.copy()
    flipped[0] = flipped[0, ::-1]
    assert not is_closed(flipped)


def test_in_box_is_inclusive_like_boxroi():
    points = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0 + 1e-12, 0.5, 0.5], [0.5, 0.5, 0.5]])
    assert meshes.in_box(points, [0, 0, 0, 1, 1, 1]).tolist() == [0, 1, 3]
    assert meshes.in_box(points, [[0, 0, 0], [1, 1, 1]]).tolist() == [0, 1, 3]
    union = [[0.9, 0.4, 0.4, 2.0, 0.6, 0.6], [-1, -1, -1, 0, 0, 0]]
    assert meshes.in_box(points, union).tolist() == [0, 2]
    with pytest.raises(MeshError, match=r"box: min must not exceed max on any axis, got \[1.0, 0.0"):
        meshes.in_box(points, [1, 0, 0, 0, 1, 1])
    with pytest.raises(MeshError, match=r"box: expected 6 numbers .* got 5 numbers"):
        meshes.in_box(points, [0, 0, 0, 1, 1])


def test_sphere_halfspace_and_tets_in_box():
    points = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [3.0, 4.1, 0.0]])
    assert meshes.in_sphere(points, [0, 0, 0], 5.0).tolist() == [0, 1]
    assert meshes.in_halfspace(points, [0, 4, 0], [0, 2, 0]).tolist() == [1, 2]
    with pytest.raises(MeshError, match="halfspace normal: must be finite and non-zero"):
        meshes.in_halfspace(points, [0, 0, 0], [0, 0, 0])
    with pytest.raises(MeshError, match=r"sphere radius: must be finite and >= 0, got -1.0"):
        meshes.in_sphere(points, [0, 0, 0], -1)
    mesh = cube(2.0, 2)
    left = meshes.tets_in_box(mesh.points, mesh.tets, [0, 0, 0, 1, 2, 2])
    assert left.size == 24
    assert np.all(mesh.points[mesh.tets[left]].mean(axis=1)[:, 0] < 1.0)


def test_select_nodes_specs():
    mesh = cube(2.0, 2)
    assert meshes.select_nodes(mesh, {"box": [0, 0, 0, 2, 0, 2]}).size == 9
    assert meshes.select_nodes(mesh, {"sphere": {"center": [0, 0, 0], "radius": 1.0}}).tolist() == [
        0,
        1,
        3,
        9,
    ]
    assert meshes.select_nodes(mesh, {"sphere": [0, 0, 0, 1.0]}).size == 4
    assert meshes.select_nodes(mesh, {"halfspace": {"point": [0, 2, 0], "normal": [0, 1, 0]}}).size == 9
    assert meshes.select_nodes(mesh, {"set": "bottom"}).size == 9
    assert meshes.select_nodes(mesh, {"indices": [5, 3, 5]}).tolist() == [3, 5]
    with pytest.raises(MeshError, match=r"box: selects no node"):
        meshes.select_nodes(mesh, {"box": [5, 5, 5, 6, 6, 6]})
    with pytest.raises(MeshError, match=r"region: give exactly one of box, sphere, halfspace, set, indices"):
        meshes.select_nodes(mesh, {"box": [0, 0, 0, 1, 1, 1], "set": "bottom"})
    with pytest.raises(MeshError, match=r"region: unknown key\(s\) \['boxx'\]"):
        meshes.select_nodes(mesh, {"boxx": [0, 0, 0, 1, 1, 1]})
    with pytest.raises(MeshError, match=r"set: no set named 'base' .*known sets: \['bottom', 'top'\]"):
        meshes.select_nodes(mesh, {"set": "base"})
    with pytest.raises(MeshError, match=r"indices: node ids must be in \[0, 26\], got \[27\]"):
        meshes.select_nodes(mesh, {"indices": [27]})
    with pytest.raises(MeshError, match=r"sphere: expected keys 'center' and 'radius'"):
        meshes.select_nodes(mesh, {"sphere": {"centre": [0, 0, 0], "radius": 1}})


def test_quality_reference_values():
    assert min_dihedral_angles(REGULAR, ONE)[0] == pytest.approx(np.degrees(np.arccos(1.0 / 3.0)), abs=1e-12)
    assert radius_ratios(REGULAR, ONE)[0] == pytest.approx(1.0, abs=1e-14)
    assert min_dihedral_angles(KUHN, ONE)[0] == pytest.approx(45.0, abs=1e-12)
    # Kuhn tet: r_in = 3V / A = 0.5 / (1 + sqrt 2), R = sqrt(3) / 2
    assert radius_ratios(KUHN, ONE)[0] == pytest.approx(
        3 * 0.5 / (1 + np.sqrt(2)) / (np.sqrt(3) / 2), rel=1e-13
    )
    sliver = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1e-3]])
    assert min_dihedral_angles(sliver, ONE)[0] < 0.1
    assert radius_ratios(sliver, ONE)[0] < 0.01
