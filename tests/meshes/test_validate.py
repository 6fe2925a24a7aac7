"""One test per validation defect: the message names the file, the problem, the count and the first ids."""

from __future__ import annotations

import logging

import meshio
import numpy as np
import pytest

from meshes import MeshError, TetMesh, load
from meshes.generate import cube
from tests.meshes.helpers import TWO_TETS, TWO_TETS_POINTS


def _write(tmp_path, name, points, tets):
    path = tmp_path / name
    meshio.write(path, meshio.Mesh(points, [("tetra", tets)]))
    return path


def test_mesh_error_is_a_value_error():
    assert issubclass(MeshError, ValueError)


def test_clean_mesh_has_no_problems():
    mesh = TetMesh.from_arrays(TWO_TETS_POINTS, TWO_TETS)
    assert mesh.problems == []
    np.testing.assert_array_equal(mesh.original_node_ids, np.arange(5))
    np.testing.assert_allclose(mesh.volumes() * 54.0, [1.0 / 3.0 * 1.0, 2.0 / 3.0])


def test_nan_coordinates(tmp_path):
    points = TWO_TETS_POINTS.copy()
    points[3, 1] = np.nan
    points[4, 0] = np.inf
    path = _write(tmp_path, "finger.vtk", points, TWO_TETS)
    with pytest.raises(
        MeshError, match=r"^finger.vtk: 2 nodes have NaN or infinite coordinates, first node ids \[3, 4\]$"
    ):
        load(path)


def test_indices_out_of_range():
    tets = np.vstack([TWO_TETS, [[0, 1, 2, 7]], [[-1, 1, 2, 3]]])
    with pytest.raises(
        MeshError,
        match=r"^<arrays>: 2 tetrahedra reference node ids outside \[0, 4\], first tetrahedron ids \[2, 3\]$",
    ):
        TetMesh.from_arrays(TWO_TETS_POINTS, tets)


def test_degenerate_tetrahedra(tmp_path):
    base = cube(1.0, 2)
    points = np.vstack([base.points, [[0.5, 0.5, 0.0]]])  # coplanar with the bottom face
    flat = [[0, 6, 18, 27], [0, 6, 18, 0]]  # a flat tet and a tet with a repeated node
    tets = np.vstack([base.tets[:4], flat, base.tets[4:]])
    path = _write(tmp_path, "finger.vtk", points, tets)
    with pytest.raises(
        MeshError, match=r"^finger.vtk: 2 degenerate tetrahedra \(\|volume\| < 1e-10 x mean volume"
    ) as info:
        load(path)
    assert str(info.value).endswith("first ids [4, 5]")


def test_no_tetrahedra():
    with pytest.raises(MeshError, match=r"^<arrays>: no tetrahedra$"):
        TetMesh.from_arrays(TWO_TETS_POINTS, np.zeros((0, 4), dtype=np.int64))


def test_inverted_tetrahedra_are_reoriented(caplog):
    tets = TWO_TETS.copy()
    tets[1] = tets[1][[1, 0, 2, 3]]
    with caplog.at_level(logging.WARNING, logger="meshes.validate"):
        mesh = TetMesh.from_arrays(TWO_TETS_POINTS, tets, source="body.vtu")
    assert mesh.problems == ["1 inverted tetrahedra reoriented (nodes 1 and 2 swapped), first ids [1]"]
    assert np.all(mesh.volumes() > 0)
    assert mesh.volume == pytest.approx(1.0 / 54.0, rel=1e-12)
    assert sorted(mesh.tets[1]) == sorted(TWO_TETS[1])
    assert "body.vtu: 1 inverted tetrahedra reoriented" in caplog.text


def test_unreferenced_nodes_dropped_and_sets_remapped():
    points = np.vstack([[[9.0, 9.0, 9.0]], TWO_TETS_POINTS[:2], [[8.0, 8.0, 8.0]], TWO_TETS_POINTS[2:]])
    # file ids: 0 and 3 are orphans; the mesh nodes are 1, 2, 4, 5, 6
    file_ids = np.array([1, 2, 4, 5, 6])
    tets = file_ids[TWO_TETS]
    mesh = TetMesh.from_arrays(
        points,
        tets,
        point_sets={"tip": [6, 3], "base": [1, 2]},
        triangle_sets={"face": [[2, 4, 5], [0, 2, 4]]},
        cell_sets={"second": [1]},
    )
    assert mesh.n_points == 5
    np.testing.assert_array_equal(mesh.original_node_ids, file_ids)
    np.testing.assert_array_equal(mesh.points, TWO_TETS_POINTS)
    np.testing.assert_array_equal(mesh.tets, TWO_TETS)
    assert mesh.point_sets["tip"].tolist() == [4] and mesh.point_sets["base"].tolist() == [0, 1]
    assert mesh.triangle_sets["face"].tolist() == [[1, 2, 3]]
    assert mesh.cell_sets["second"].tolist() == [1]
    assert mesh.problems == [
        "2 unreferenced nodes dropped, first file ids [0, 3]",
        "point set 'tip': 1 unreferenced nodes removed",
        "triangle set 'face': 1 triangles on unreferenced nodes removed",
    ]


def test_duplicate_nodes_reported():
    # two tets that should share the face (1, 2, 3) but use copies 5, 6, 7 of its nodes
    points = np.vstack([TWO_TETS_POINTS, TWO_TETS_POINTS[1:4]])
    tets = np.array([[0, 1, 2, 3], [5, 4, 6, 7]])
    mesh = TetMesh.from_arrays(points, tets)
    assert mesh.problems == [
        "3 duplicate nodes (coincident within 1e-09 x bbox diagonal), first pairs of file ids "
        "[(1, 5), (2, 6), (3, 7)]; the mesh may be cut apart there",
        "2 disconnected parts (tetrahedra per part: 1, 1)",
    ]


def test_disconnected_parts_reported():
    first = cube(1.0, 1)
    points = np.vstack([first.points, first.points + [5.0, 0.0, 0.0]])
    tets = np.vstack([first.tets, first.tets + first.n_points])
    mesh = TetMesh.from_arrays(points, tets)
    assert mesh.problems == ["2 disconnected parts (tetrahedra per part: 6, 6)"]


def test_sets_out_of_range():
    with pytest.raises(MeshError, match=r"point set 'base': 1 node ids outside \[0, 4\], first \[5\]"):
        TetMesh.from_arrays(TWO_TETS_POINTS, TWO_TETS, point_sets={"base": [0, 5]})
    with pytest.raises(MeshError, match=r"cell set 'soft': 1 tetrahedron ids outside \[0, 1\], first \[2\]"):
        TetMesh.from_arrays(TWO_TETS_POINTS, TWO_TETS, cell_sets={"soft": [2]})
    with pytest.raises(MeshError, match=r"triangle set 'cavity': 1 triangles reference node ids outside"):
        TetMesh.from_arrays(TWO_TETS_POINTS, TWO_TETS, triangle_sets={"cavity": [[0, 1, 9]]})


def test_bad_shapes():
    with pytest.raises(MeshError, match=r"points must have shape \(n, 3\), got \(5, 2\)"):
        TetMesh.from_arrays(TWO_TETS_POINTS[:, :2], TWO_TETS)
    with pytest.raises(MeshError, match=r"tetrahedra must have shape \(m, 4\), got \(2, 3\)"):
        TetMesh.from_arrays(TWO_TETS_POINTS, TWO_TETS[:, :3])
