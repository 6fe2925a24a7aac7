"""One test per validation defect: the message names the file, the problem, the count and the first ids."""

from __future__ import annotations

import logging

import meshio
import numpy as np
import pytest

from softsim.meshes import MeshError, TetMesh, boundary_triangles, load
from softsim.meshes.generate import cube
from softsim.meshes.validate import unfixed_parts
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
    with caplog.at_level(logging.WARNING, logger="softsim.meshes.validate"):
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


def test_duplicate_nodes_merged_and_sets_remapped(caplog):
    # two tets that should share the face (1, 2, 3) but use copies 5, 6, 7 of its nodes
    points = np.vstack([TWO_TETS_POINTS, TWO_TETS_POINTS[1:4]])
    tets = np.array([[0, 1, 2, 3], [5, 4, 6, 7]])
    with caplog.at_level(logging.WARNING, logger="softsim.meshes.validate"):
        mesh = TetMesh.from_arrays(
            points, tets, source="cut.vtu", point_sets={"face": [1, 5, 2, 6, 7]}, triangle_sets={"t": [[5, 6, 7]]}
        )
    message = (
        "3 duplicate nodes (coincident with an earlier node within 1e-09 x bbox diagonal) merged into that "
        "node, first pairs of file ids [(1, 5), (2, 6), (3, 7)]"
    )
    assert mesh.problems == [message]
    assert f"cut.vtu: {message}" in caplog.text
    assert mesh.n_points == 5
    np.testing.assert_array_equal(mesh.original_node_ids, np.arange(5))
    assert sorted(mesh.tets[1]) == [1, 2, 3, 4]
    assert mesh.point_sets["face"].tolist() == [1, 2, 3]
    assert mesh.triangle_sets["t"].tolist() == [[1, 2, 3]]
    assert len(mesh.surface_triangles()) == 6  # one body again: the shared face is interior


def test_tets_collapsed_by_the_merge_are_removed():
    base = cube(1.0, 2)
    # node 27 lies 1e-10 off the centre node 13: a duplicate (within 1e-9 x diagonal), and the sliver
    # (13, 0, 1, 27) is thick enough (1e-10 x its base) not to count as degenerate before the merge
    normal = np.cross(base.points[0] - base.points[13], base.points[1] - base.points[13])
    points = np.vstack([base.points, base.points[13] + 1e-10 * normal / np.linalg.norm(normal)])
    mesh = TetMesh.from_arrays(points, np.vstack([base.tets, [[13, 0, 1, 27]]]))
    assert mesh.problems == [
        "1 duplicate node (coincident with an earlier node within 1e-09 x bbox diagonal) merged into that node, "
        "first pairs of file ids [(13, 27)]",
        f"1 tetrahedron collapsed by merging duplicate nodes removed, first ids [{base.n_tets}]",
    ]
    assert mesh.n_tets == base.n_tets and mesh.volume == pytest.approx(1.0)


def test_duplicate_tets_removed_and_cell_sets_keep_the_twin():
    base = cube(1.0, 2)
    copies = base.tets[[3, 5]][:, [1, 0, 2, 3]]  # the same nodes in another order (inverted, then reoriented)
    tets = np.vstack([base.tets, copies])
    mesh = TetMesh.from_arrays(base.points, tets, cell_sets={"copy": [48, 49], "end": [47]})
    assert mesh.problems == [
        "2 inverted tetrahedra reoriented (nodes 1 and 2 swapped), first ids [48, 49]",
        "2 duplicate tetrahedra removed (the same 4 nodes as an earlier tetrahedron), first ids [48, 49]",
    ]
    assert mesh.n_tets == 48 and mesh.volume == pytest.approx(1.0)
    assert mesh.cell_sets["copy"].tolist() == [3, 5] and mesh.cell_sets["end"].tolist() == [47]


def test_separate_parts_reported_with_their_sizes():
    first = cube(1.0, 1)
    second = cube(1.0, 2)
    points = np.vstack([first.points, second.points + [5.0, 0.0, 0.0]])
    tets = np.vstack([first.tets, second.tets + first.n_points])
    mesh = TetMesh.from_arrays(points, tets)
    assert mesh.problems == [
        "2 separate parts (sharing no node): 48 and 6 tetrahedra; in a static scene each part needs its own "
        "fixed region (or join the parts)"
    ]


def test_unfixed_parts_names_the_parts_without_fixed_nodes():
    block = cube(1.0, 1)
    points = np.vstack([block.points + [3.0 * k, 0.0, 0.0] for k in range(3)])
    tets = np.vstack([block.tets + k * block.n_points for k in range(3)])
    mesh = TetMesh.from_arrays(points, tets)
    assert unfixed_parts(mesh, np.arange(block.n_points)) == (
        "the mesh has 3 separate parts (sharing no node), 2 of them without a fixed node: 6 tetrahedra in "
        "x [3, 4], y [0, 1], z [0, 1]; 6 tetrahedra in x [6, 7], y [0, 1], z [0, 1]"
    )
    assert unfixed_parts(mesh, [0, block.n_points, 2 * block.n_points]) is None
    assert unfixed_parts(block, []) is None  # one part: the scene's own fixed-node check applies


def _two_cubes_sharing(offset):
    block = cube(1.0, 1)
    return TetMesh.from_arrays(
        np.vstack([block.points, block.points + offset]), np.vstack([block.tets, block.tets + block.n_points])
    )


def test_non_manifold_edge_reported():
    mesh = _two_cubes_sharing([1.0, 1.0, 0.0])  # the cubes touch along the edge x = y = 1
    assert mesh.problems[0].startswith("2 duplicate nodes")
    assert mesh.problems[1:] == [
        "1 non-manifold edge on the boundary surface (parts touching only along an edge: a hinge), first node "
        "pairs (file ids) [(6, 7)]; join the parts through shared faces or move them apart"
    ]
    ends = [mesh.original_node_ids.tolist().index(i) for i in (6, 7)]
    np.testing.assert_array_equal(mesh.points[ends], [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])


def test_non_manifold_vertex_reported():
    mesh = _two_cubes_sharing([1.0, 1.0, 1.0])  # the cubes touch at the corner (1, 1, 1)
    assert mesh.problems[1:] == [
        "1 non-manifold vertex on the boundary surface (parts touching at a single node: a ball joint), first "
        "node ids (file ids) [7]; join the parts through shared faces or move them apart"
    ]
    np.testing.assert_array_equal(mesh.points[mesh.original_node_ids.tolist().index(7)], [1.0, 1.0, 1.0])


def test_overlapping_tets_reported():
    # a third tetrahedron on the face (1, 2, 3), on the same side as the second one (apex inside it)
    points = np.vstack([TWO_TETS_POINTS, [[0.3, 0.3, 0.3]]])
    mesh = TetMesh.from_arrays(points, np.vstack([TWO_TETS, [[1, 5, 2, 3]]]))
    assert mesh.problems == [
        "1 face shared by 3 or more tetrahedra (overlapping elements), first tetrahedron ids [0, 1, 2]; "
        "re-mesh the region",
        "3 non-manifold edges on the boundary surface (parts touching only along an edge: a hinge), first node "
        "pairs (file ids) [(1, 2), (1, 3), (2, 3)]; join the parts through shared faces or move them apart",
    ]


def test_single_tetrahedron_warned():
    mesh = TetMesh.from_arrays(TWO_TETS_POINTS[:4], TWO_TETS[:1])
    assert mesh.problems == [
        "only 1 tetrahedron: a linear tetrahedron has a constant strain and cannot bend; mesh the body with "
        "many more elements"
    ]


@pytest.mark.parametrize(
    ("factor", "expected"),
    [
        (1e-32, r"the mesh spans 1\.1e-30 \(bounding-box diagonal\), outside \[1e-12, 1e\+12\] where double "
         r"precision can simulate it; the coordinates are probably in another unit: scale the mesh by 1e\+32 "
         r"\(`scale = 1e\+32` in the scene's \[\[body\]\], `--scale 1e\+32` for softsim info\) for a "
         r"diagonal of 110$"),
        (1e198, r"the mesh spans 1\.1e\+200 .* scale the mesh by 1e-198 .* for a diagonal of 110$"),
    ],
)
def test_absurd_scales_refused_with_a_scale_suggestion(tmp_path, factor, expected):
    block = cube(1.0, 2)
    path = _write(tmp_path, "block.vtu", block.points * 63.5 * factor, block.tets)  # diagonal 110 x factor
    with pytest.raises(MeshError, match=r"^block.vtu: " + expected):
        load(path)
    mesh = load(path, scale=1.0 / factor)  # the suggested fix loads
    assert mesh.volume == pytest.approx(63.5**3) and mesh.problems == []


def test_overflowing_extent_refused():
    block = cube(1.0, 1)
    with pytest.raises(MeshError, match=r"^<arrays>: the mesh spans inf .*; check the file's coordinates$"):
        TetMesh.from_arrays((block.points - 0.5) * 1.7e308, block.tets)


def test_far_coordinates_refused():
    block = cube(1.0, 1)
    with pytest.raises(
        MeshError,
        match=r"^<arrays>: coordinates reach 1e\+13 for a mesh of size 1\.73 .*: move the mesh near the origin$",
    ):
        TetMesh.from_arrays(block.points + 1e13, block.tets)


def test_all_nodes_at_one_position_refused():
    with pytest.raises(MeshError, match=r"^<arrays>: all nodes are at the same position \[1.0, 1.0, 1.0\]$"):
        TetMesh.from_arrays(np.ones((4, 3)), TWO_TETS[:1])


def test_loaded_surface_is_the_cached_boundary():
    mesh = cube(1.0, 3)
    np.testing.assert_array_equal(mesh.surface_triangles(), boundary_triangles(mesh.tets, mesh.n_points))
    assert not mesh.surface_triangles().flags.writeable


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
