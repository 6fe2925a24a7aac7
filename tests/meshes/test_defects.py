"""Mesh defects as a person meets them: ``softsim info``, ``softsim check`` and ``softsim run`` on a broken finger
or cavity, the message they print and their exit status (0 = runs, with the repair or warning printed; 2 =
invalid input, refused with the reason and the fix)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import meshio
import numpy as np
import pytest

from softsim import meshes
from softsim.app.cli import main as cli_main
from softsim.mechanics.scene_runtime import Scene
from softsim.meshes.surface import closure_defects, edge_census

ROOT = Path(__file__).resolve().parents[2]
MESHES = ROOT / "resources" / "meshes"
SCENES = ROOT / "resources" / "scenes"
FINGER = meshes.load(MESHES / "finger.vtu")  # 440 nodes, 1512 tetrahedra, x [-103, 0], y and z [0, 15]


def write(path: Path, points, tets) -> Path:
    meshio.write(path, meshio.Mesh(np.asarray(points, dtype=np.float64), [("tetra", np.asarray(tets))]))
    return path


def two_fingers(tmp_path, offset) -> Path:
    """The finger and a copy of it moved by ``offset``, in one file (coincident nodes are not shared)."""
    points = np.vstack([FINGER.points, FINGER.points + offset])
    return write(tmp_path / "fingers.vtu", points, np.vstack([FINGER.tets, FINGER.tets + FINGER.n_points]))


def finger_scene(tmp_path, mesh: Path, *, fixed_box=None, mode=None) -> Path:
    """finger.toml with another mesh (and optionally another fixed box or mode)."""
    text = (SCENES / "finger.toml").read_text().replace('"../meshes/finger.vtu"', f'"{mesh.as_posix()}"')
    if fixed_box is not None:
        text = text.replace("box = [-15.0, 0.0, 0.0, 5.0, 10.0, 15.0]", f"box = {list(fixed_box)}")
    if mode is not None:
        text = text.replace('mode = "static"', f'mode = "{mode}"')
    path = tmp_path / f"{mesh.stem}.toml"
    path.write_text(text)
    return path


def info(capsys, path: Path) -> tuple[int, dict | None, str]:
    """``softsim info --json PATH``: (exit code, the JSON printed or None, stderr)."""
    code = cli_main(["info", str(path), "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def headless(capsys, command: str, scene: Path, tmp_path) -> tuple[int, str, str]:
    extra = ["--frames", "1", "--out", str(tmp_path / "out"), "--no-vtu"] if command == "run" else []
    code = cli_main([command, str(scene), *extra])
    out, err = capsys.readouterr()
    return code, out, err


# -- loose part ---------------------------------------------------------------------------------------------
def test_two_fingers_40_mm_apart_are_reported_and_a_static_scene_refuses_the_loose_one(tmp_path, capsys):
    mesh = two_fingers(tmp_path, [0.0, 0.0, 40.0])
    code, data, err = info(capsys, mesh)
    assert code == 0 and err == ""
    assert data["problems"] == [
        "2 separate parts (sharing no node): 1512 and 1512 tetrahedra; in a static scene each part needs its "
        "own fixed region (or join the parts)"
    ]
    expected = (
        "softsim: fingers.toml: body.finger.fixed: body 'finger': the mesh has 2 separate parts (sharing no "
        "node), 1 of them without a fixed node: 1512 tetrahedra in x [-103, 0], y [0, 15], z [40, 55]; a static "
        'scene needs a [[body.fixed]] region in each part (or join the parts, or scene.mode = "dynamic")\n'
    )
    for command in ("check", "run"):
        code, out, err = headless(capsys, command, finger_scene(tmp_path, mesh), tmp_path)
        assert (code, out, err) == (2, "", expected)


def test_two_fingers_each_fixed_pass_the_check_with_the_warning(tmp_path, capsys):
    mesh = two_fingers(tmp_path, [0.0, 0.0, 40.0])
    scene = finger_scene(tmp_path, mesh, fixed_box=[-15.0, 0.0, 0.0, 5.0, 10.0, 55.0])
    code, out, err = headless(capsys, "check", scene, tmp_path)
    assert code == 0
    assert "body finger: 880 nodes, 3024 tets, 120 fixed nodes" in out
    assert "softsim: warning: fingers.vtu: 2 separate parts (sharing no node): 1512 and 1512 tetrahedra" in err


def test_switching_a_loose_part_to_static_mode_is_refused(tmp_path):
    scene = Scene.load(finger_scene(tmp_path, two_fingers(tmp_path, [0.0, 0.0, 40.0]), mode="dynamic"))
    with pytest.raises(ValueError, match=r"1 of them without a fixed node: 1512 tetrahedra in .* z \[40, 55\]"):
        scene.set("scene.mode", "static")
    assert scene.spec.scene.mode == "dynamic"


# -- duplicate nodes, duplicate tetrahedra ------------------------------------------------------------------
def cut_finger(tmp_path) -> Path:
    """The finger cut at its middle cross-section: the tetrahedra on the tip side use copies of its 20 nodes."""
    xs = np.unique(FINGER.points[:, 0])
    plane = np.flatnonzero(FINGER.points[:, 0] == xs[len(xs) // 2])
    tip_side = FINGER.points[FINGER.tets].mean(axis=1)[:, 0] < xs[len(xs) // 2]
    renumber = np.arange(FINGER.n_points)
    renumber[plane] = FINGER.n_points + np.arange(plane.size)
    tets = FINGER.tets.copy()
    tets[tip_side] = renumber[FINGER.tets[tip_side]]
    return write(tmp_path / "cut.vtu", np.vstack([FINGER.points, FINGER.points[plane]]), tets)


def read_rows(out: Path) -> list[dict[str, str]]:
    with open(out / "frames.csv", newline="") as stream:
        return [{k: v for k, v in row.items() if k != "wall_ms"} for row in csv.DictReader(stream)]


def test_duplicated_nodes_are_merged_and_the_cut_finger_runs_like_the_finger(tmp_path, capsys):
    mesh = cut_finger(tmp_path)
    code, data, err = info(capsys, mesh)
    assert code == 0 and (data["nodes"], data["tets"]) == (440, 1512)
    assert data["volume"] == pytest.approx(23175.0)
    assert data["problems"] == [
        "20 duplicate nodes (coincident with an earlier node within 1e-09 x bbox diagonal) merged into that "
        "node, first pairs of file ids [(220, 440), (221, 441), (222, 442), (223, 443), (224, 444), (225, 445), "
        "(226, 446), (227, 447), (228, 448), (229, 449), ...]"
    ]
    code, out, err = headless(capsys, "run", finger_scene(tmp_path, mesh), tmp_path)
    assert code == 0
    assert err == f"softsim: warning: cut.vtu: {data['problems'][0]}\n"
    cut_rows = read_rows(tmp_path / "out")
    reference = tmp_path / "reference"
    reference.mkdir()
    assert cli_main(["run", str(finger_scene(reference, MESHES / "finger.vtu")), "--frames", "1", "--out",
                     str(reference / "out"), "--no-vtu"]) == 0
    assert cut_rows == read_rows(reference / "out")


def test_ten_duplicated_tets_are_removed_and_the_volume_is_right(tmp_path, capsys):
    mesh = write(tmp_path / "doubled.vtu", FINGER.points, np.vstack([FINGER.tets, FINGER.tets[:10]]))
    code, data, err = info(capsys, mesh)
    assert code == 0 and data["tets"] == 1512
    assert data["volume"] == pytest.approx(23175.0)  # 23328 with the copies counted
    assert data["problems"] == [
        "10 duplicate tetrahedra removed (the same 4 nodes as an earlier tetrahedron), first ids [1512, 1513, "
        "1514, 1515, 1516, 1517, 1518, 1519, 1520, 1521]"
    ]


# -- non-manifold geometry ----------------------------------------------------------------------------------
def test_fingers_touching_along_an_edge_report_a_hinge(tmp_path, capsys):
    mesh = two_fingers(tmp_path, [0.0, 15.0, 15.0])  # the copy's edge y = z = 15 lies on the finger's
    code, data, err = info(capsys, mesh)
    assert code == 0 and data["nodes"] == 2 * 440 - 22
    assert data["problems"][0].startswith("22 duplicate nodes (coincident with an earlier node")
    assert data["problems"][1] == (
        "21 non-manifold edges on the boundary surface (parts touching only along an edge: a hinge), first node "
        "pairs (file ids) [(19, 39), (39, 59), (59, 79), (79, 99), (99, 119), (119, 139), (139, 159), (159, 179), "
        "(179, 199), (199, 219), ...]; join the parts through shared faces or move them apart"
    )
    assert len(data["problems"]) == 2
    code, out, err = headless(capsys, "check", finger_scene(tmp_path, mesh), tmp_path)
    assert code == 0
    assert f"softsim: warning: fingers.vtu: {data['problems'][1]}\n" in err
    assert f"  warning: fingers.vtu: {data['problems'][1]}" in out


def test_fingers_touching_at_a_corner_report_a_non_manifold_vertex(tmp_path, capsys):
    mesh = two_fingers(tmp_path, [103.0, 15.0, 15.0])  # the copy's corner (-103, 0, 0) is at (0, 15, 15)
    code, data, err = info(capsys, mesh)
    assert code == 0
    assert data["problems"] == [
        "1 duplicate node (coincident with an earlier node within 1e-09 x bbox diagonal) merged into that node, "
        "first pairs of file ids [(439, 440)]",
        "1 non-manifold vertex on the boundary surface (parts touching at a single node: a ball joint), first "
        "node ids (file ids) [439]; join the parts through shared faces or move them apart",
    ]
    np.testing.assert_array_equal(FINGER.points[439], [0.0, 15.0, 15.0])


# -- coordinates --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("factor", "spans", "scale"), [(1e-32, "1.05e-30", "1e+32"), (1e198, "1.05e+200", "1e-198")]
)
def test_absurd_coordinates_are_refused_with_the_scale_to_use(tmp_path, capsys, factor, spans, scale):
    mesh = write(tmp_path / "scaled.vtu", FINGER.points * factor, FINGER.tets)
    message = (
        f"scaled.vtu: the mesh spans {spans} (bounding-box diagonal), outside [1e-12, 1e+12] where double "
        f"precision can simulate it; the coordinates are probably in another unit: scale the mesh by {scale} "
        f"(`scale = {scale}` in the scene's [[body]], `--scale {scale}` for softsim info) for a diagonal of 105"
    )
    assert info(capsys, mesh) == (2, None, f"error: {message}\n")
    for command in ("check", "run"):
        assert headless(capsys, command, finger_scene(tmp_path, mesh), tmp_path) == (
            2, "", f"softsim: scaled.toml: {message}\n")
    assert cli_main(["info", str(mesh), "--json", "--scale", scale]) == 0
    assert json.loads(capsys.readouterr().out)["volume"] == pytest.approx(23175.0)


def test_nan_coordinates_are_refused(tmp_path, capsys):
    points = FINGER.points.copy()
    points[7, 2] = np.nan
    mesh = write(tmp_path / "nan.vtu", points, FINGER.tets)
    assert info(capsys, mesh) == (2, None, "error: nan.vtu: 1 nodes have NaN or infinite coordinates, first node "
                                           "ids [7]\n")


# -- a single tetrahedron -----------------------------------------------------------------------------------
def test_a_single_tetrahedron_is_warned_about(tmp_path, capsys):
    mesh = write(tmp_path / "tet.vtu", [[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 10]], [[0, 1, 2, 3]])
    warning = ("only 1 tetrahedron: a linear tetrahedron has a constant strain and cannot bend; mesh the body "
               "with many more elements")
    code, data, err = info(capsys, mesh)
    assert code == 0 and data["problems"] == [warning] and data["volume"] == pytest.approx(1000.0 / 6.0)
    scene = tmp_path / "tet.toml"
    scene.write_text(
        f'[[body]]\nname = "tet"\nmesh = "{mesh.as_posix()}"\n'
        "[body.material]\nyoungModulus = 600.0\npoissonRatio = 0.45\n"
        "[[body.fixed]]\nbox = [-1.0, -1.0, -1.0, 11.0, 11.0, 1.0]\n"
        "[[body.force]]\nbox = [-1.0, -1.0, 9.0, 1.0, 1.0, 11.0]\ntotalForce = [1.0, 0.0, 0.0]\n"
    )
    code, out, err = headless(capsys, "run", scene, tmp_path)
    assert code == 0 and f"softsim: warning: tet.vtu: {warning}\n" in err


# -- cavity surfaces ----------------------------------------------------------------------------------------
def pneunet_with_cavity_file(tmp_path, surface: Path) -> Path:
    """pneunet.toml with its cavity read from ``surface`` instead of the mesh's triangle set."""
    text = (SCENES / "pneunet.toml").read_text()
    text = text.replace('"../meshes/pneunet.vtu"', f'"{(MESHES / "pneunet.vtu").as_posix()}"')
    assert text.count('  set = "cavity"') == 1
    text = text.replace('  set = "cavity"', f'  surface = "{surface.as_posix()}"')
    path = tmp_path / "pneunet_stl.toml"
    path.write_text(text)
    return path


def test_an_open_cavity_surface_is_refused(tmp_path, capsys):
    shipped = meshes.load_surface(MESHES / "pneunet_cavity.stl")
    assert shipped.volume() == pytest.approx(8964.0)
    holed = tmp_path / "cavity_holed.stl"
    meshio.write(holed, meshio.Mesh(shipped.points, [("triangle", shipped.triangles[30:])]), binary=True)
    surface = meshes.load_surface(holed)
    edges = Counter(tuple(sorted(e)) for t in surface.triangles.tolist() for e in zip(t, t[1:] + t[:1]))
    open_edges = [e for e, n in edges.items() if n == 1]
    assert len(open_edges) == 16
    x, y, z = surface.points[list(min(open_edges))].mean(axis=0)  # the first: the lowest vertex ids
    expected = (
        "softsim: pneunet_stl.toml: body.pneunet.cavity.cavity.surface: cavity_holed.stl: the cavity surface is "
        f"not closed: 16 open edges (used by one triangle only: the surface has holes), the first at ({x:.4g}, "
        f"{y:.4g}, {z:.4g}); a cavity must be closed (every edge shared by two triangles of opposite "
        "directions): close it in the modelling tool and export it again\n"
    )
    scene = pneunet_with_cavity_file(tmp_path, holed)
    for command in ("check", "run"):
        assert headless(capsys, command, scene, tmp_path) == (2, "", expected)
    code, out, err = headless(capsys, "check", pneunet_with_cavity_file(tmp_path, MESHES / "pneunet_cavity.stl"),
                              tmp_path)
    assert code == 0 and "cavity (SurfacePressureConstraint, 1 rows)" in out


def test_an_open_cavity_triangle_set_is_refused(tmp_path, capsys):
    pneunet = meshes.load(MESHES / "pneunet.vtu")
    pneunet.triangle_sets["cavity"] = pneunet.triangle_sets["cavity"][:-30]
    meshes.write_mesh(tmp_path / "holed.vtu", pneunet)
    text = (SCENES / "pneunet.toml").read_text().replace('"../meshes/pneunet.vtu"', f'"{tmp_path / "holed.vtu"}"')
    scene = tmp_path / "holed.toml"
    scene.write_text(text)
    code, out, err = headless(capsys, "check", scene, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(
        "softsim: holed.toml: body.pneunet.cavity.cavity.set: triangle set 'cavity' of holed.vtu: the cavity "
        "surface is not closed: "
    )
    assert "open edges (used by one triangle only: the surface has holes), the first at (" in err


def test_closure_defects_name_each_kind_of_bad_edge():
    surface = meshes.load_surface(MESHES / "balloon_cavity.stl")  # a closed cube, 15 mm
    points, triangles = surface.points, surface.triangles
    assert closure_defects(points, triangles) is None
    assert closure_defects(points, triangles[:0]) == "no triangles"
    flipped = triangles.copy()
    flipped[0] = flipped[0, ::-1]
    assert closure_defects(points, flipped).startswith(
        "3 edges traversed twice in the same direction (inconsistently oriented triangles: some normals point "
        "inward), the first at"
    )
    doubled = np.vstack([triangles, triangles[:1]])
    assert closure_defects(points, doubled).startswith("3 non-manifold edges (used by three or more triangles)")
    census = edge_census(triangles[1:])
    assert len(census.open_edges) == 3 and census.nonmanifold_vertices.size == 0
