"""Reading every supported format, sets from Gmsh/VTK files, surfaces, writers."""

from __future__ import annotations

import importlib.util
import logging
import re
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest

from softsim import meshes
from softsim.meshes import TET_EXTENSIONS, MeshError
from tests.meshes.helpers import TWO_TETS, TWO_TETS_POINTS

# extension -> meshio writer format name
WRITERS = {
    ".vtk": "vtk",
    ".vtu": "vtu",
    ".msh": "gmsh",
    ".mesh": "medit",
    ".meshb": "medit",
    ".inp": "abaqus",
    ".xdmf": "xdmf",
    ".xmf": "xdmf",
    ".avs": "avsucd",
    ".e": "exodus",
    ".exo": "exodus",
    ".ex2": "exodus",
    ".f3grid": "flac3d",
    ".h5m": "h5m",
    ".mdpa": "mdpa",
    ".med": "med",
    ".bdf": "nastran",
    ".fem": "nastran",
    ".nas": "nastran",
    ".post": "permas",
    ".dato": "permas",
    ".ele": "tetgen",
    ".node": "tetgen",
    ".su2": "su2",
    ".xml": "dolfin-xml",
    ".vol": "netgen",
    ".cgns": "cgns",
    ".tec": "tecplot",
    ".hmf": "hmf",
}
HAS_NETCDF = importlib.util.find_spec("netCDF4") is not None


def test_writer_table_covers_every_supported_extension():
    # .gidmsh is read by softsim's own reader (meshes.gidmsh; meshio has no GiD format): tests/meshes/test_obj_gidmsh.py
    assert sorted(WRITERS) == sorted(set(TET_EXTENSIONS) - {".gidmsh"})


@pytest.mark.parametrize("extension", sorted(WRITERS))
def test_round_trip_every_format(tmp_path, extension):
    path = tmp_path / f"two{extension}"
    raw = meshio.Mesh(TWO_TETS_POINTS, [("tetra", TWO_TETS)])
    if WRITERS[extension] == "exodus" and not HAS_NETCDF:
        path.write_bytes(b"CDF\x01")
        with pytest.raises(MeshError, match="netCDF4"):
            meshes.load(path)
        return
    write_path = tmp_path / "two.ele" if extension == ".node" else path
    meshio.write(write_path, raw, file_format=WRITERS[extension])
    mesh = meshes.load(path)
    assert mesh.n_points == 5 and mesh.n_tets == 2
    # nastran stores coordinates in fixed-width fields
    atol = 1e-12 if extension in (".bdf", ".fem", ".nas") else 1e-15
    np.testing.assert_allclose(mesh.points[mesh.tets], TWO_TETS_POINTS[TWO_TETS], rtol=0, atol=atol)
    assert mesh.volume == pytest.approx(1.0 / 54.0, rel=1e-12)
    assert mesh.problems == []


def test_scale_multiplies_coordinates(tmp_path):
    path = tmp_path / "two.vtu"
    meshes.write_vtu(path, TWO_TETS_POINTS, TWO_TETS)
    mesh = meshes.load(path, scale=1000.0)
    assert mesh.volume == pytest.approx(1e9 / 54.0, rel=1e-12)
    with pytest.raises(MeshError, match=r"scale: must be finite and > 0, got -1.0"):
        meshes.load(path, scale=-1.0)


def _gmsh_like_mesh():
    """A cube of 6 tets with the vertex, line and triangle cells Gmsh exports next to them."""
    cube = meshes.generate.cube(1.0, 1)
    surface = cube.surface_triangles()
    cells = [
        ("vertex", np.array([[0], [7]])),
        ("line", np.array([[0, 1], [1, 3]])),
        ("triangle", surface),
        ("tetra", cube.tets),
    ]
    return cube, meshio.Mesh(cube.points / 3.0, cells)


def test_legacy_binary_vtk_with_mixed_cells(tmp_path):
    cube, raw = _gmsh_like_mesh()
    path = tmp_path / "gmsh_export.vtk"
    meshio.write(path, raw, file_format="vtk", binary=True)
    header = path.read_bytes()[:200]
    assert b"BINARY" in header and b"# vtk DataFile" in header
    mesh = meshes.load(path)
    assert (mesh.n_points, mesh.n_tets) == (8, 6)
    assert mesh.volume == pytest.approx(1.0 / 27.0, rel=1e-12)  # big-endian doubles decoded exactly
    assert sorted(mesh.triangle_sets) == ["triangles"]
    assert mesh.triangle_sets["triangles"].shape == (12, 3)


def test_legacy_ascii_vtk(tmp_path):
    _, raw = _gmsh_like_mesh()
    path = tmp_path / "ascii.vtk"
    meshio.write(path, raw, file_format="vtk", binary=False)
    assert b"ASCII" in path.read_bytes()[:200]
    assert meshes.load(path).n_tets == 6


def test_vtu_with_vtk_extension_is_sniffed(tmp_path):
    path = tmp_path / "diamond.vtk"
    meshio.write(path, meshio.Mesh(TWO_TETS_POINTS, [("tetra", TWO_TETS)]), file_format="vtu")
    assert path.read_bytes().lstrip().startswith(b"<")
    assert meshes.load(path).n_tets == 2


def _gmsh_physical_mesh():
    cube = meshes.generate.cube(2.0, 2)  # 48 tets
    surface = cube.surface_triangles()
    bottom = np.all(np.isclose(cube.points[surface][:, :, 1], 0.0), axis=1)
    tet_tags = np.where(cube.points[cube.tets].mean(axis=1)[:, 0] < 1.0, 10, 11)
    tri_tags = np.where(bottom, 20, 21)
    raw = meshio.Mesh(
        cube.points,
        [("triangle", surface), ("tetra", cube.tets)],
        cell_data={"gmsh:physical": [tri_tags, tet_tags], "gmsh:geometrical": [tri_tags, tet_tags]},
        field_data={"left": np.array([10, 3]), "right": np.array([11, 3]), "fixed": np.array([20, 2])},
    )
    return raw, int(bottom.sum()), int((~bottom).sum()), int((tet_tags == 10).sum())


def _check_cube_sets(mesh, n_bottom, n_other, n_left):
    assert mesh.n_tets == 48
    assert {name: len(ids) for name, ids in mesh.cell_sets.items()} == {"left": n_left, "right": 48 - n_left}
    # the unnamed physical surface keeps its tag; the named one is usable as a fixed region
    assert {name: len(t) for name, t in mesh.triangle_sets.items()} == {
        "fixed": n_bottom,
        "physical_21": n_other,
    }
    fixed_nodes = meshes.select_nodes(mesh, {"set": "fixed"})
    np.testing.assert_allclose(mesh.points[fixed_nodes, 1], 0.0)
    assert fixed_nodes.size == 9


@pytest.mark.parametrize("binary", [False, True])
def test_gmsh22_physical_groups_become_named_sets(tmp_path, binary):
    raw, n_bottom, n_other, n_left = _gmsh_physical_mesh()
    path = tmp_path / "cube.msh"
    meshio.write(path, raw, file_format="gmsh22", binary=binary)
    assert path.read_bytes()[:40].split()[1] == b"2.2"
    assert (n_bottom, n_other, n_left) == (8, 40, 24)
    _check_cube_sets(meshes.load(path), n_bottom, n_other, n_left)


def _write_gmsh41(path, points, tets, triangle_groups, tet_groups, names):
    """A Gmsh 4.1 ASCII file as Gmsh writes it: one entity per physical group, elements grouped by entity."""
    lines = ["$MeshFormat", "4.1 0 8", "$EndMeshFormat", "$PhysicalNames", str(len(names))]
    lines += [f'{dim} {tag} "{name}"' for (dim, tag), name in names.items()]
    lines += ["$EndPhysicalNames", "$Entities", f"0 0 {len(triangle_groups)} {len(tet_groups)}"]
    low, high = " ".join(map(str, points.min(axis=0))), " ".join(map(str, points.max(axis=0)))
    for entity, tag in enumerate(triangle_groups, start=1):
        lines.append(f"{entity} {low} {high} 1 {tag} 0")
    surfaces = " ".join(str(e) for e in range(1, len(triangle_groups) + 1))
    for entity, tag in enumerate(tet_groups, start=1):
        lines.append(f"{entity} {low} {high} 1 {tag} {len(triangle_groups)} {surfaces}")
    lines += ["$EndEntities", "$Nodes", f"1 {len(points)} 1 {len(points)}", f"3 1 0 {len(points)}"]
    lines += [str(i + 1) for i in range(len(points))]
    lines += [" ".join(repr(float(c)) for c in p) for p in points]
    blocks = [(2, e, 2, cells) for e, cells in enumerate(triangle_groups.values(), start=1)]
    blocks += [(3, e, 4, cells) for e, cells in enumerate(tet_groups.values(), start=1)]
    total = sum(len(b[3]) for b in blocks)
    lines += ["$EndNodes", "$Elements", f"{len(blocks)} {total} 1 {total}"]
    element = 1
    for dim, entity, element_type, cells in blocks:
        lines.append(f"{dim} {entity} {element_type} {len(cells)}")
        for cell in cells:
            lines.append(" ".join(map(str, [element, *(cell + 1)])))
            element += 1
    lines += ["$EndElements", ""]
    path.write_text("\n".join(lines))


def test_gmsh41_physical_groups_become_named_sets(tmp_path):
    raw, n_bottom, n_other, n_left = _gmsh_physical_mesh()
    triangles, tets = raw.cells[0].data, raw.cells[1].data
    tri_tags, tet_tags = raw.cell_data["gmsh:physical"]
    path = tmp_path / "cube41.msh"
    _write_gmsh41(
        path,
        raw.points,
        tets,
        {20: triangles[tri_tags == 20], 21: triangles[tri_tags == 21]},
        {10: tets[tet_tags == 10], 11: tets[tet_tags == 11]},
        {(2, 20): "fixed", (3, 10): "left", (3, 11): "right"},
    )
    assert path.read_text().splitlines()[1] == "4.1 0 8"
    _check_cube_sets(meshes.load(path), n_bottom, n_other, n_left)


def test_medit_references_become_sets(tmp_path):
    cube = meshes.generate.cube(1.0, 1)
    refs = np.array([1, 1, 1, 2, 2, 2])
    raw = meshio.Mesh(cube.points, [("tetra", cube.tets)], cell_data={"medit:ref": [refs]})
    path = tmp_path / "cube.mesh"
    meshio.write(path, raw)
    mesh = meshes.load(path)
    assert {k: v.tolist() for k, v in mesh.cell_sets.items()} == {"ref_1": [0, 1, 2], "ref_2": [3, 4, 5]}


def test_abaqus_element_and_node_sets(tmp_path):
    raw = meshio.Mesh(
        TWO_TETS_POINTS,
        [("tetra", TWO_TETS)],
        point_sets={"tip": np.array([4])},
        cell_sets={"second": [np.array([1])]},
    )
    path = tmp_path / "two.inp"
    meshio.write(path, raw)
    mesh = meshes.load(path)
    assert mesh.point_sets["tip"].tolist() == [4]
    assert mesh.cell_sets["second"].tolist() == [1]


def test_quadratic_tetrahedra_use_corners_with_warning(tmp_path, caplog):
    corners = TWO_TETS_POINTS[:4]
    edges = [(0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3)]
    mids = np.array([(corners[a] + corners[b]) / 2 for a, b in edges])
    raw = meshio.Mesh(np.vstack([corners, mids]), [("tetra10", np.arange(10)[None, :])])
    path = tmp_path / "quadratic.vtu"
    meshio.write(path, raw)
    with caplog.at_level(logging.WARNING, logger="softsim.meshes"):
        mesh = meshes.load(path)
    assert (mesh.n_points, mesh.n_tets) == (4, 1)
    assert mesh.problems[0] == (
        "1 quadratic tetrahedra (tetra10): their 4 corner nodes are used, mid-edge nodes ignored"
    )
    assert "6 unreferenced nodes dropped" in mesh.problems[1]
    assert any("tetra10" in record.getMessage() for record in caplog.records)


def test_missing_unknown_and_empty_files(tmp_path):
    with pytest.raises(MeshError, match=r"nothere.vtu: file not found"):
        meshes.load(tmp_path / "nothere.vtu")
    odd = tmp_path / "body.foo"
    odd.write_text("x")
    with pytest.raises(MeshError, match=r"body.foo: unknown mesh extension '.foo'; supported: .avs, .bdf"):
        meshes.load(odd)
    garbage = tmp_path / "garbage.vtu"
    garbage.write_text("not a mesh")
    with pytest.raises(MeshError, match=r"garbage.vtu: cannot read as a VTK XML file"):
        meshes.load(garbage)
    with pytest.raises(MeshError, match="is a directory"):
        meshes.load(tmp_path)


# file -> (content, the message: meshio's own words are matched loosely, softsim's exactly)
UNREADABLE = {
    "garbage.vtu": (
        "not a mesh\n",
        r"garbage\.vtu: cannot read as a VTK XML file: meshio's vtu reader gave up without saying why \(ReadError\); "
        r"the file starts with 'not a mesh' where a VTK XML file starts with <\?xml or <VTKFile",
    ),
    "text.msh": (
        "hello world\n",
        r"text\.msh: cannot read as an ANSYS file: .+; the file starts with 'hello world' where an ANSYS file starts "
        r"with \( \(a \.msh file is read as Gmsh when it starts with \$MeshFormat or \$NOD, else as ANSYS\)",
    ),
    "v3.msh": (
        "$MeshFormat\n3.0 0 8\n$EndMeshFormat\n",
        r"v3\.msh: cannot read as a Gmsh file: .*3\.0.*; the file starts with '\$MeshFormat'; Gmsh format 3\.0 is "
        r"not read: save the mesh from Gmsh as version 4\.1 or 2\.2",
    ),
    "cut.msh": (
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0 0\n",
        r"cut\.msh: cannot read as a Gmsh file: .+; a count in the file does not match the data that follows, or "
        r"the file is cut short; the file starts with '\$MeshFormat'",
    ),
    "nodes.inp": (
        "*NODE\n1, 0, 0, 0\n*ELEMENT, TYPE=C3D4\n1, 1, 2, 3, 4\n",
        r"nodes\.inp: cannot read as an Abaqus file: meshio's abaqus reader looked up 2 and did not find it "
        r"\(a node, element or section the file refers to but does not define\?\); the file starts with '\*NODE'",
    ),
    "binary.vtk": (
        b"\x00\x01\x02 binary",
        r"binary\.vtk: cannot read as a legacy VTK file: .+; the file starts with binary data",
    ),
    "empty.msh": ("", r"empty\.msh: the file is empty"),
    "empty.vtu": ("", r"empty\.vtu: the file is empty"),
    "cavity.stl": (
        "solid x\nfacet normal 0 0\n",
        r"cavity\.stl: cannot read as an STL file: .+; the file starts with 'solid x'",
    ),
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_unreadable_files_say_in_words_what_is_wrong(tmp_path, name):
    content, expected = UNREADABLE[name]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    read = meshes.load_surface if name.endswith(".stl") else meshes.load
    with pytest.raises(MeshError, match=f"^{expected}") as caught:
        read(path)
    message = str(caught.value)
    assert not re.search(r"(^|: )\w*(Error|Exception)$", message)  # never an exception's class name alone


def test_file_without_tetrahedra_names_cell_types(tmp_path):
    cube = meshes.generate.cube(1.0, 1)
    raw = meshio.Mesh(cube.points, [("triangle", cube.surface_triangles()), ("line", np.array([[0, 1]]))])
    path = tmp_path / "shell.vtu"
    meshio.write(path, raw)
    expected = r"shell.vtu: no tetrahedra; cell types found: triangle \(12\), line \(1\)"
    with pytest.raises(MeshError, match=expected):
        meshes.load(path)


def test_surface_files_load_as_surfaces_and_are_refused_as_bodies(tmp_path):
    cube = meshes.generate.cube(3.0, 2)
    raw = meshio.Mesh(cube.points, [("triangle", cube.surface_triangles())])
    for extension, kwargs in ((".stl", {"binary": True}), (".obj", {}), (".ply", {}), (".off", {})):
        path = tmp_path / f"cavity{extension}"
        meshio.write(path, raw, **kwargs)
        surface = meshes.load_surface(path, scale=2.0)
        assert surface.n_triangles == 48
        assert surface.n_points == 26  # STL's per-triangle corners are merged
        assert surface.is_closed()
        assert surface.volume() == pytest.approx(216.0, rel=1e-12)  # (3 * 2)^3
        expected = rf"cavity{extension}: \{extension} is a surface format.*cavity"
        with pytest.raises(MeshError, match=expected):
            meshes.load(path)


def test_write_vtu_round_trip_with_data_and_atomicity(tmp_path):
    path = tmp_path / "frame_0001.vtu"
    displacement = np.arange(15.0).reshape(5, 3) / 7.0
    von_mises = np.array([1.0 / 3.0, 2.0 / 3.0])
    meshes.write_vtu(
        path, TWO_TETS_POINTS, TWO_TETS, {"displacement": displacement}, {"von_mises": von_mises}
    )
    assert [p.name for p in tmp_path.iterdir()] == ["frame_0001.vtu"]  # no temporary file left behind
    raw = meshio.read(path)
    np.testing.assert_array_equal(raw.point_data["displacement"], displacement)
    np.testing.assert_array_equal(raw.cell_data["von_mises"][0], von_mises)
    with pytest.raises(MeshError, match=r"cell data 'von_mises': expected 2 rows"):
        meshes.write_vtu(path, TWO_TETS_POINTS, TWO_TETS, cell_data={"von_mises": np.zeros(3)})
    assert [p.name for p in tmp_path.iterdir()] == ["frame_0001.vtu"]


def test_write_pvd(tmp_path):
    path = tmp_path / "result.pvd"
    meshes.write_pvd(path, [(0.0, "frame_0000.vtu"), (0.01, "frame_0001.vtu")])
    root = ET.parse(path).getroot()
    assert root.attrib["type"] == "Collection"
    datasets = root.findall("./Collection/DataSet")
    assert [(float(d.attrib["timestep"]), d.attrib["file"]) for d in datasets] == [
        (0.0, "frame_0000.vtu"),
        (0.01, "frame_0001.vtu"),
    ]
    with pytest.raises(MeshError, match="entry 0 must be"):
        meshes.write_pvd(path, [(1.0,)])


def test_write_mesh_keeps_all_sets(tmp_path):
    source = meshes.generate.pneunet()
    path = tmp_path / "pneunet.vtu"
    meshes.write_mesh(path, source)
    mesh = meshes.load(path)
    assert mesh.problems == []
    np.testing.assert_array_equal(mesh.points, source.points)
    np.testing.assert_array_equal(mesh.tets, source.tets)
    np.testing.assert_array_equal(mesh.point_sets["base"], source.point_sets["base"])
    np.testing.assert_array_equal(mesh.cell_sets["stiff_layer"], source.cell_sets["stiff_layer"])
    np.testing.assert_array_equal(mesh.triangle_sets["cavity"], source.triangle_sets["cavity"])
