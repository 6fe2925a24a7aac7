"""softsim's own OBJ and GiD readers, on SoftRobots' files and on small hand-written ones."""

from pathlib import Path

import meshio
import numpy as np
import pytest

from softsim import meshes
from softsim.meshes import MeshError
from softsim.meshes.gidmsh import read_gidmsh
from softsim.meshes.obj import read_obj

SOFA = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "sofa"
BUNNY_CAVITY_OBJ = SOFA / "scenes" / "mesh" / "Hollow_Bunny_Body_Cavity.obj"
TRIPOD = SOFA / "Tripod" / "details" / "data" / "mesh" / "tripod_low.gidmsh"
BUNNY_CAVITY_VTU = SOFA.parent / "Hollow_Bunny_Body_Cavity.vtu"


def test_bunny_cavity_obj_reads_where_meshio_fails():
    with pytest.raises(Exception, match="205"):  # meshio: 205 texture coordinates for 162 vertices
        meshio.obj.read(str(BUNNY_CAVITY_OBJ))
    points, triangles = read_obj(BUNNY_CAVITY_OBJ)
    assert points.shape == (162, 3) and triangles.shape == (320, 3)
    # the same positions and faces as the VTU converted by tests/data/softrobots/convert_bunny_cavity.py
    converted = meshio.read(BUNNY_CAVITY_VTU)
    np.testing.assert_array_equal(points, converted.points)
    np.testing.assert_array_equal(triangles, converted.cells_dict["triangle"])
    surface = meshes.load_surface(BUNNY_CAVITY_OBJ)
    assert meshes.enclosed_volume(surface.points, surface.triangles) == pytest.approx(60.80, abs=0.005)


def test_obj_polygons_negative_indices_and_ignored_statements(tmp_path):
    path = tmp_path / "quad.obj"
    path.write_text("o thing\ng group\ns 1\nusemtl red\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\n"
                    "vt 1 1\nvt 0 1\nvt 0.5 0.5\nvn 0 0 1\nf 1/1/1 2/2/1 3/3/1 4/4/1\nf -4//1 -2//1 -1//1\n")
    points, triangles = read_obj(path)
    assert points.shape == (4, 3)
    # the quad as a fan from its first corner, then the triangle written with negative indices (0, 2, 3)
    np.testing.assert_array_equal(triangles, [[0, 1, 2], [0, 2, 3], [0, 2, 3]])


@pytest.mark.parametrize(("text", "message"), [
    ("v 0 0 0\nf 1 2 3\n", "line 2: face corner '2' refers to vertex 2, but 1 vertices"),
    ("v 0 0\n", "line 1: a vertex needs 3 coordinates"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "vertex numbers start at 1"),
    ("v 0 0 0\nbogus 1\n", "unknown OBJ statement 'bogus'"),
    ("v 0 0 0\n", "no faces"),
])
def test_obj_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.obj"
    path.write_text(text)
    with pytest.raises(MeshError, match=message.replace("(", r"\(")):
        read_obj(path)


def test_tripod_gidmsh():
    gid = read_gidmsh(TRIPOD)
    # the file: nodes 1..235, elements 1..579 (its Coordinates and Elements sections)
    assert gid.points.shape == (235, 3)
    assert gid.cells["tetra"].shape == (579, 4)
    np.testing.assert_allclose(gid.points[0], [40.1313972, 40.4903811, 0.0])
    np.testing.assert_array_equal(gid.cells["tetra"][0], [76 - 1, 74 - 1, 68 - 1, 78 - 1])  # "1 76 74 68 78"
    mesh = meshes.load(TRIPOD)
    assert mesh.n_points == 235 and mesh.n_tets == 579
    # the volume against an independent sum of |det| / 6 over the file's elements
    p = gid.points[gid.cells["tetra"]]
    volume = np.abs(np.linalg.det(p[:, 1:] - p[:, :1])).sum() / 6
    assert mesh.volume == pytest.approx(volume, rel=1e-12)


def test_gidmsh_unknown_node_and_skipped_types(tmp_path):
    path = tmp_path / "t.gidmsh"
    path.write_text("MESH dimension 3 ElemType Tetrahedra Nnode 4\nCoordinates\n1 0 0 0\n2 1 0 0\n3 0 1 0\n"
                    "End Coordinates\nElements\n1 1 2 3 9\nEnd Elements\n")
    with pytest.raises(MeshError, match="refers to node 9"):
        read_gidmsh(path)
    path.write_text("MESH dimension 3 ElemType Hexahedra Nnode 8\nCoordinates\n1 0 0 0\nEnd Coordinates\n"
                    "Elements\n1 1 1 1 1 1 1 1 1\nEnd Elements\n")
    assert "Hexahedra elements skipped" in read_gidmsh(path).notes[0]
