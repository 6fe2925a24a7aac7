"""Gmsh's first mesh format: SOFA's sample meshes, an exact hand-written file, sets, skipped elements and every
defect the reader refuses (file, line and what is wrong)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from softsim import meshes
from softsim.meshes import MeshError, gmsh1
from softsim.meshes.info import main as info_main
from tests.meshes.helpers import TWO_TETS, TWO_TETS_POINTS

DATA = Path(__file__).parent / "data"
LIVER = DATA / "liver.msh"
TORUS = DATA / "torus_low_res.msh"


def _rows(triangles: np.ndarray) -> set[tuple[int, ...]]:
    return {tuple(row) for row in np.sort(triangles, axis=1).tolist()}


def test_sofa_liver():
    mesh = meshes.load(LIVER)
    assert (mesh.n_points, mesh.n_tets) == (181, 596)
    np.testing.assert_array_equal(mesh.original_node_ids, np.arange(1, 182))
    np.testing.assert_array_equal(mesh.points[0], [-0.979259, 2.23512, 2.61245])  # node 1
    np.testing.assert_array_equal(mesh.points[180], [-3.80136, 1.56088, 1.80584])  # node 181
    assert sorted(mesh.tets[0]) == sorted([128 - 1, 141 - 1, 138 - 1, 142 - 1])  # element 1, 0-based
    assert mesh.volumes().min() > 0.0
    assert mesh.volume == pytest.approx(36.5609, rel=1e-5)
    assert list(mesh.cell_sets) == ["physical_1"]
    np.testing.assert_array_equal(mesh.cell_sets["physical_1"], np.arange(596))
    assert mesh.triangle_sets == {} and mesh.point_sets == {}
    assert mesh.problems == []


def test_sofa_torus_with_numbering_gaps_lines_and_triangle_sets():
    assert TORUS.read_bytes().count(b"\r\n") == 264 + 1470 + 6  # the file keeps SOFA's CRLF line endings
    mesh = meshes.load(TORUS)
    assert (mesh.n_points, mesh.n_tets) == (264, 862)
    np.testing.assert_array_equal(mesh.original_node_ids, np.r_[1:205, 388:448])
    np.testing.assert_array_equal(mesh.points[204], [1.773624782262864, -0.05687103130687069, 0.1812436688977098])
    assert mesh.volumes().min() > 0.0
    assert mesh.volume == pytest.approx(8.21691, rel=1e-5)
    assert {name: len(ids) for name, ids in mesh.cell_sets.items()} == {"physical_2": 862}
    sizes = {name: len(t) for name, t in mesh.triangle_sets.items()}
    assert sizes == {f"physical_{tag}": 44 if tag in (5, 6) else 40 for tag in range(1, 11)}
    # the ten tagged triangle groups are exactly the boundary of the tetrahedra
    tagged = np.concatenate(list(mesh.triangle_sets.values()))
    assert _rows(tagged) == _rows(mesh.surface_triangles()) and len(tagged) == 408
    assert mesh.problems == []  # the 200 lines are Gmsh's drawing of the curves: skipped without a note
    surface = meshes.load_surface(TORUS)
    assert surface.n_triangles == 408 and surface.is_closed()
    assert surface.volume() == pytest.approx(mesh.volume, rel=1e-12)


def test_info_command_on_sofa_meshes(capsys):
    assert info_main([str(TORUS), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["nodes"], info["tets"], info["surface_triangles"]) == (264, 862, 408)
    assert info["sets"]["cell:physical_2"] == 862 and info["sets"]["triangle:physical_2"] == 40
    assert info_main([str(LIVER)]) == 0
    text = capsys.readouterr().out
    assert "tetrahedra:        596" in text and "physical_1 (cell): 596" in text


TINY = """\
$NOD
6
40 0 0 1
10 0 0 0
20 1 0 0
30 0 1 0
55 1 1 1
99 5 5 5
$ENDNOD
$ELM
6
1 15 0 3 1 10
2 1 0 4 2 10 20
3 2 7 5 3 10 30 20
4 4 1 1 4 10 20 30 40
5 4 2 1 4 20 30 55 40
6 2 0 5 3 20 55 30
$ENDELM
"""


def test_hand_written_file_exactly(tmp_path):
    path = tmp_path / "tiny.msh"
    path.write_text(TINY)
    mesh = meshes.load(path, scale=1.0 / 3.0)
    order = [3, 0, 1, 2, 4]  # file order 40 10 20 30 55 -> the helper's points 3 0 1 2 4
    np.testing.assert_allclose(mesh.points, TWO_TETS_POINTS[order], rtol=0, atol=1e-16)
    np.testing.assert_array_equal(mesh.original_node_ids, [40, 10, 20, 30, 55])  # 99 is unused: dropped
    # element 4 is 10 20 30 40; element 5 (20 30 55 40) is inverted, reoriented by swapping its nodes 1 and 2
    np.testing.assert_array_equal(mesh.tets, [[1, 2, 3, 0], [2, 4, 3, 0]])
    np.testing.assert_allclose(mesh.points[mesh.tets], TWO_TETS_POINTS[TWO_TETS], rtol=0, atol=1e-16)
    assert mesh.volume == pytest.approx(1.0 / 54.0, rel=1e-12)
    assert {name: ids.tolist() for name, ids in mesh.cell_sets.items()} == {"physical_1": [0], "physical_2": [1]}
    assert {name: t.tolist() for name, t in mesh.triangle_sets.items()} == {
        "physical_7": [[1, 3, 2]],  # 10 30 20
        "triangles": [[2, 4, 3]],  # 20 55 30: no physical tag
    }
    assert mesh.point_sets == {}
    assert mesh.problems == [
        "1 inverted tetrahedra reoriented (nodes 1 and 2 swapped), first ids [1]",
        "1 unreferenced nodes dropped, first file ids [99]",
    ]


def test_reader_blocks_keep_file_numbers_and_tags(tmp_path):
    path = tmp_path / "tiny.msh"
    path.write_text(TINY)
    raw = gmsh1.read(path)
    np.testing.assert_array_equal(raw.node_numbers, [40, 10, 20, 30, 55, 99])
    assert [(b.element_type, b.cell_type) for b in raw.blocks] == [
        (15, "vertex"),
        (1, "line"),
        (2, "triangle"),
        (4, "tetra"),
    ]
    triangles, tets = raw.blocks[2], raw.blocks[3]
    np.testing.assert_array_equal(triangles.nodes, [[1, 3, 2], [2, 4, 3]])
    np.testing.assert_array_equal(triangles.physical, [7, 0])
    np.testing.assert_array_equal(triangles.elementary, [5, 5])
    np.testing.assert_array_equal(triangles.lines, [14, 17])
    np.testing.assert_array_equal(tets.nodes, [[1, 2, 3, 0], [2, 3, 4, 0]])
    np.testing.assert_array_equal(tets.physical, [1, 2])


def _write_v1(path, points, numbers, elements):
    """A Gmsh 1 file: ``elements`` are (type, physical, elementary, node numbers) tuples."""
    lines = ["$NOD", str(len(points))]
    lines += [f"{n} {x!r} {y!r} {z!r}" for n, (x, y, z) in zip(numbers, points.tolist())]
    lines += ["$ENDNOD", "$ELM", str(len(elements))]
    for index, (kind, physical, elementary, nodes) in enumerate(elements, start=1):
        lines.append(" ".join(map(str, [index, kind, physical, elementary, len(nodes), *nodes])))
    lines += ["$ENDELM", ""]
    path.write_text("\n".join(lines))


def test_generated_mesh_round_trips_with_shuffled_sparse_numbers(tmp_path):
    cube = meshes.generate.cube(2.0, 4)
    rng = np.random.default_rng(7)
    numbers = rng.permutation(len(cube.points)) * 3 + 11  # any order, gaps of 2
    path = tmp_path / "cube.msh"
    _write_v1(path, cube.points, numbers, [(4, 0, 1, numbers[tet].tolist()) for tet in cube.tets])
    mesh = meshes.load(path)
    np.testing.assert_array_equal(mesh.points, cube.points)
    np.testing.assert_array_equal(mesh.tets, cube.tets)
    np.testing.assert_array_equal(mesh.original_node_ids, numbers)
    # no physical tag anywhere: the elementary entity names the set
    assert list(mesh.cell_sets) == ["elementary_1"] and len(mesh.cell_sets["elementary_1"]) == cube.n_tets


def test_skipped_elements_are_noted_when_they_matter(tmp_path, caplog):
    cube = meshes.generate.cube(1.0, 1)  # 8 nodes, 6 tets
    numbers = np.arange(1, 9)
    hexahedron = [1, 2, 4, 3, 5, 6, 8, 7]
    elements = [(4, 3, 3, (tet + 1).tolist()) for tet in cube.tets]
    elements += [(5, 3, 3, hexahedron), (3, 4, 4, [1, 2, 4, 3]), (3, 4, 4, [5, 6, 8, 7]), (8, 0, 1, [1, 2, 3])]
    elements += [(11, 3, 3, (cube.tets[0] + 1).tolist() + [1, 2, 3, 4, 5, 6])]
    path = tmp_path / "mixed.msh"
    _write_v1(path, cube.points, numbers, elements)
    mesh = meshes.load(path)
    assert mesh.n_tets == 6  # the 10-node tetrahedron duplicates tet 0 by its corners: removed
    assert mesh.problems[:3] == [
        "1 elements of Gmsh type 5 (hexahedron) skipped: only tetrahedra are simulated, the body lacks their volume",
        "2 elements of Gmsh type 3 (quadrangle) skipped: only triangles form triangle sets",
        "1 quadratic tetrahedra (tetra10): their 4 corner nodes are used, mid-edge nodes ignored",
    ]
    assert not any("type 8" in problem for problem in mesh.problems)  # a 3-node line matters to no one
    assert any("Gmsh type 5 (hexahedron) skipped" in record.getMessage() for record in caplog.records)


def test_byte_order_mark_and_old_mac_line_ends(tmp_path):
    path = tmp_path / "mac.msh"
    path.write_bytes(b"\xef\xbb\xbf" + TINY.replace("\n", "\r").encode())
    assert meshes.load(path).n_tets == 2
    broken = TINY.replace("20 1 0 0\n", "20 1 0\n")
    path.write_bytes(b"\xef\xbb\xbf" + broken.replace("\n", "\r").encode())
    with pytest.raises(MeshError, match=r"^mac\.msh: line 5: a node line has 3 fields"):
        meshes.load(path)


def _lines(text: str, number: int, new: str | None) -> str:
    """``text`` with its line ``number`` (1-based) replaced by ``new`` (None: removed)."""
    lines = text.split("\n")
    lines[number - 1 : number] = [] if new is None else [new]
    return "\n".join(lines)


MALFORMED = {
    "no end of nodes": (
        _lines(TINY, 9, None),
        r"line 9: expected \$ENDNOD to close the \$NOD section of line 1, found '\$ELM'",
    ),
    "cut short": (TINY[: TINY.index("5 4 2 1")], r"line 10: the \$ELM section has no \$ENDELM: the file ends first"),
    "no elements": (TINY[: TINY.index("$ELM")], r"line 9: no \$ELM section after \$ENDNOD"),
    "misspelt end": (
        TINY.replace("$ENDELM", "$ENDELEM"),
        r"line 18: expected \$ENDELM to close the \$ELM section of line 10, found '\$ENDELEM'",
    ),
    "node count": (_lines(TINY, 2, "7"), r"line 2: \$NOD count says 7 nodes, found 6"),
    "element count": (_lines(TINY, 11, "5"), r"line 11: \$ELM count says 5 elements, found 6"),
    "count not a number": (_lines(TINY, 11, "six"), r"line 11: the number of elements 'six' is not a whole number"),
    "count and data on a line": (_lines(TINY, 2, "6 1 0 0 0"), r"line 2: the number of nodes must be alone on its"),
    "node fields": (_lines(TINY, 5, "20 1 0"), r"line 5: a node line has 3 fields, expected 4 \(node-number x y z\)"),
    "coordinate": (_lines(TINY, 5, "20 1 0 zero"), r"line 5: node field 'zero' is not a number"),
    "node number": (_lines(TINY, 5, "20.5 1 0 0"), r"line 5: node number '20.5' is not a whole number"),
    "node twice": (_lines(TINY, 6, "10 0 1 0"), r"line 6: node 10 is defined twice \(also on line 4\)"),
    "undefined node": (
        _lines(TINY, 15, "4 4 1 1 4 10 20 31 40"),
        r"line 15: element 4 uses node 31, which \$NOD does not define",
    ),
    "element field": (_lines(TINY, 15, "4 4 1 1 4 10 20 30 4e1"), r"line 15: element field '4e1' is not a whole"),
    "short element line": (_lines(TINY, 15, "4 4 1 1"), r"line 15: an element line has 4 fields, expected at least 5"),
    "listed nodes": (_lines(TINY, 15, "4 4 1 1 4 10 20 30"), r"line 15: element 4 says 4 nodes but the line lists 3"),
    "nodes for the type": (
        _lines(TINY, 15, "4 4 1 1 3 10 20 30"),
        r"line 15: element 4 is a tetrahedron \(type 4\) with 3 nodes; it needs 4",
    ),
    "unknown type": (_lines(TINY, 15, "4 99 1 1 4 10 20 30 40"), r"line 15: element 4 has unknown type 99"),
    "text between sections": (_lines(TINY, 10, "junk\n$ELM"), r"line 10: unexpected 'junk' between \$ENDNOD and \$ELM"),
    "text after the end": (TINY + "$NOD\n", r"line 19: unexpected '\$NOD' after \$ENDELM"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_name_the_file_line_and_defect(tmp_path, case):
    text, expected = MALFORMED[case]
    path = tmp_path / "bad.msh"
    path.write_text(text)
    with pytest.raises(MeshError, match=rf"^bad\.msh: {expected}"):
        meshes.load(path)


def test_no_tetrahedra_names_the_cell_types(tmp_path):
    path = tmp_path / "shell.msh"
    path.write_text(_lines(_lines(TINY, 16, None), 15, None).replace("$ELM\n6", "$ELM\n4"))
    expected = r"shell\.msh: no tetrahedra; cell types found: vertex \(1\), line \(1\), triangle \(2\)"
    with pytest.raises(MeshError, match=expected):
        meshes.load(path)
