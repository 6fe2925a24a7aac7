"""Reading tetrahedral meshes and triangle surfaces (through meshio) and writing results.

Only meshio's per-format ``read`` functions are called (never ``meshio.read``, which prints and calls
``sys.exit`` when a reader fails). meshio's console warnings are captured and sent to logging.

Named sets stored in files:

- Gmsh ``.msh`` (2.2 and 4.1): physical volumes become cell sets, physical surfaces become triangle sets,
  named after ``$PhysicalNames`` (``physical_<tag>`` when unnamed).
- Gmsh's first format (``$NOD``/``$ELM``, SOFA's sample meshes; read by :mod:`meshes.gmsh1`, not meshio):
  the physical tag of tetrahedra and triangles gives cell and triangle sets ``physical_<tag>`` (0: none);
  a file without physical tags uses the elementary ones (``elementary_<tag>``). Node numbers need not be
  contiguous; they become ``TetMesh.original_node_ids``. Other volume elements and quadrangles are skipped
  with a note in ``TetMesh.problems``; points and lines silently.
- Medit ``.mesh``: references become ``ref_<k>`` sets.
- meshio ``cell_sets`` / ``point_sets`` (Abaqus ELSET/NSET, XDMF, ...) are kept.
- softsim's convention for VTK/VTU (written by :func:`write_mesh`): point data ``set:NAME`` (non-zero marks a
  node), cell data ``set:NAME`` (non-zero marks a tetrahedron, or a triangle of a triangle set).
- Triangles that belong to no named set form the triangle set ``triangles``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from softsim.meshes import gmsh1
from softsim.meshes.errors import MeshError
from softsim.meshes.files import MAX_MESH_FILE_BYTES, InputFileError, atomic_path, check_input_file
from softsim.meshes.gidmsh import read_gidmsh
from softsim.meshes.obj import read_obj
from softsim.meshes.tetmesh import TetMesh, TriangleSurface
from softsim.meshes.validate import repair

__all__ = [
    "SURFACE_EXTENSIONS",
    "TET_EXTENSIONS",
    "load",
    "load_surface",
    "write_mesh",
    "write_pvd",
    "write_vtu",
]

logger = logging.getLogger(__name__)

#: extension -> meshio format module that can carry tetrahedra.
TET_EXTENSIONS: dict[str, str] = {
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
    ".xml": "dolfin",
    ".vol": "netgen",
    ".cgns": "cgns",
    ".tec": "tecplot",
    ".hmf": "hmf",
    ".gidmsh": "gidmsh",
}
#: extension -> meshio format module for triangle-only surfaces.
SURFACE_EXTENSIONS: dict[str, str] = {".stl": "stl", ".obj": "obj", ".ply": "ply", ".off": "off"}

_TET_TYPES = ("tetra", "tetra10")
_TRIANGLE_TYPES = ("triangle", "triangle6")
_SET_PREFIX = "set:"
#: meshio format -> a file of it in messages, and how such files begin (None: binary, or no fixed start).
_FORMATS: dict[str, tuple[str, str | None]] = {
    "gmsh": ("a Gmsh file", "$MeshFormat"),
    "ansys": ("an ANSYS file", "("),
    "vtu": ("a VTK XML file", "<?xml or <VTKFile"),
    "vtk": ("a legacy VTK file", "# vtk DataFile"),
    "medit": ("a Medit file", "MeshVersionFormatted"),
    "abaqus": ("an Abaqus file", "*"),
    "stl": ("an STL file", None),
    "obj": ("a Wavefront OBJ file", None),
    "ply": ("a PLY file", "ply"),
    "off": ("an OFF file", "OFF"),
    "xdmf": ("an XDMF file", "<?xml or <Xdmf"),
    "tetgen": ("a TetGen file", None),
}
_GMSH_VERSIONS = ("2", "2.2", "4", "4.0", "4.1")  # the versions meshio reads


def _check_scale(scale) -> float:
    try:
        value = float(scale)
    except (TypeError, ValueError) as exc:
        raise MeshError(f"scale: expected a positive number, got {scale!r}") from exc
    if not np.isfinite(value) or value <= 0.0:
        raise MeshError(f"scale: must be finite and > 0, got {value}")
    return value


def _check_file(path: Path) -> None:
    """Refuse anything but a readable regular file of at most ``MAX_MESH_FILE_BYTES``, before meshio reads it."""
    try:
        check_input_file(path, max_bytes=MAX_MESH_FILE_BYTES, what="mesh")
    except InputFileError as exc:
        raise MeshError(str(exc)) from None


def _sniff(path: Path, fmt: str) -> str:
    """Content-based format for extensions used by more than one format."""
    if fmt not in ("vtk", "vtu", "gmsh"):
        return fmt
    with path.open("rb") as handle:
        head = handle.read(512).lstrip(b"\xef\xbb\xbf \t\r\n")
    if fmt in ("vtk", "vtu"):
        if head.startswith((b"<?xml", b"<VTKFile")):
            return "vtu"
        if head.startswith(b"# vtk DataFile"):
            return "vtk"
        return fmt
    if gmsh1.is_gmsh1(head):
        return "gmsh1"
    return "gmsh" if head.startswith(b"$") else "ansys"


def _read_meshio(path: Path, fmt: str):
    """Call meshio's reader for one format; every failure becomes a MeshError naming the file."""
    try:
        module = importlib.import_module(f"meshio.{fmt}")
    except ModuleNotFoundError as exc:
        raise MeshError(f"{path.name}: reading {fmt} files needs the Python package {exc.name!r}") from exc
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):
            raw = module.read(str(path))
    except ModuleNotFoundError as exc:
        raise MeshError(f"{path.name}: reading {fmt} files needs the Python package {exc.name!r}") from exc
    except MeshError:
        raise
    except Exception as exc:  # meshio raises many types (ReadError, ValueError, struct.error, KeyError, ...)
        raise MeshError(_read_failure(path, fmt, exc)) from exc
    for line in captured.getvalue().splitlines():
        if line.strip():
            logger.warning("%s: meshio: %s", path.name, line.strip())
    return raw


def _read_failure(path: Path, fmt: str, exc: Exception) -> str:
    """Why meshio could not read ``path``, in words: its message (or what its silence means), then what the
    start of the file says."""
    name = _FORMATS.get(fmt, (f"a {fmt} file", None))[0]
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            return f"{path.name}: the file is empty"
    kind, text = type(exc).__name__, str(exc).strip()
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else text
        key = key.item() if isinstance(key, np.generic) else key
        detail = (
            f"meshio's {fmt} reader looked up {key!r} and did not find it "
            "(a node, element or section the file refers to but does not define?)"
        )
    elif not text or text == kind:
        detail = f"meshio's {fmt} reader gave up without saying why ({kind})"
    else:
        detail = text
    if isinstance(exc, EOFError | IndexError | StopIteration) or any(
        word in text for word in ("reshape", "unpack", "out of range", "out of bounds", "EOF", "end of file")
    ):
        detail += "; a count in the file does not match the data that follows, or the file is cut short"
    return f"{path.name}: cannot read as {name}: {detail}{_content_hint(path, fmt)}"


def _content_hint(path: Path, fmt: str) -> str:
    """What the first bytes of ``path`` say about its format, as "; ..." clauses ("" when unreadable)."""
    name, start = _FORMATS.get(fmt, (f"a {fmt} file", None))
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return ""
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"\0" in stripped[:80]:
        hint = "; the file starts with binary data"
    else:
        first = stripped.splitlines()[0].decode("utf-8", errors="replace") if stripped else ""
        hint = f"; the file starts with {first if len(first) <= 40 else first[:40] + '...'!r}"
        if start is not None and not first.startswith(tuple(start.split(" or "))):
            hint += f" where {name} starts with {start}"
    if fmt == "ansys":
        hint += " (a .msh file is read as Gmsh when it starts with $MeshFormat or $NOD, else as ANSYS)"
    words = stripped.split(maxsplit=2)
    if fmt == "gmsh" and words[:1] == [b"$MeshFormat"] and len(words) > 1:
        version = words[1].decode("utf-8", errors="replace")
        if version not in _GMSH_VERSIONS:
            hint += f"; Gmsh format {version} is not read: save the mesh from Gmsh as version 4.1 or 2.2"
    return hint


def _read_raw(path: Path, fmt: str):
    """The file as a meshio mesh, the file's node numbers (None: their order) and notes on skipped elements."""
    import meshio

    if fmt == "obj":  # softsim's own reader: meshio refuses texture-coordinate counts that differ from the vertices'
        points, triangles = read_obj(path)
        return meshio.Mesh(points, [("triangle", triangles)]), None, []
    if fmt == "gidmsh":  # GiD's ASCII mesh (SOFA's GIDMeshLoader), which meshio does not read
        gid = read_gidmsh(path)
        for note in gid.notes:
            logger.warning("%s: %s", path.name, note)
        return meshio.Mesh(gid.points, list(gid.cells.items())), None, gid.notes
    if fmt != "gmsh1":
        return _read_meshio(path, fmt), None, []

    mesh = gmsh1.read(path)
    blocks = mesh.blocks
    kept = [block for block in blocks if block.cell_type in (*_TET_TYPES, *_TRIANGLE_TYPES)]
    tag = "physical" if any(block.physical.any() for block in kept) else "elementary"
    values = {int(value) for block in kept for value in np.unique(getattr(block, tag))} - {0}
    cell_data = {
        f"{_SET_PREFIX}{tag}_{value}": [getattr(block, tag) == value for block in blocks] for value in sorted(values)
    }
    notes = []
    for block in blocks:
        if block.cell_type in (*_TET_TYPES, *_TRIANGLE_TYPES, "vertex", "line", "line3"):
            continue  # points and lines are Gmsh's drawing of the geometry, nothing to simulate
        if block.element_type in (3, 10):
            why = "only triangles form triangle sets"
        else:
            why = "only tetrahedra are simulated, the body lacks their volume"
        notes.append(f"{len(block.nodes)} elements of Gmsh type {block.element_type} ({block.words}) skipped: {why}")
    for note in notes:
        logger.warning("%s: %s", path.name, note)
    raw = meshio.Mesh(mesh.points, [(block.cell_type, block.nodes) for block in blocks], cell_data=cell_data)
    return raw, mesh.node_numbers, notes


def _describe_cells(raw) -> str:
    counts: dict[str, int] = {}
    for block in raw.cells:
        counts[block.type] = counts.get(block.type, 0) + len(block.data)
    return ", ".join(f"{name} ({count})" for name, count in counts.items()) or "none"


def _gmsh_names(raw) -> dict[tuple[int, int], str]:
    names = {}
    for name, value in (raw.field_data or {}).items():
        value = np.asarray(value).reshape(-1)
        if value.size >= 2:
            names[(int(value[1]), int(value[0]))] = str(name)
    return names


def _add(target: dict[str, list], name: str, values: np.ndarray) -> None:
    if values.size:
        target.setdefault(name, []).append(values)


def _collect(raw, label: str):
    """Tetrahedra, triangles and named sets of a meshio mesh, in file numbering."""
    tet_parts, tri_parts, problems = [], [], []
    cell_sets: dict[str, list] = {}
    tri_sets: dict[str, list] = {}
    tri_named = []
    gmsh_names = _gmsh_names(raw)
    n_tet = n_tri = n_quadratic = 0
    for block_index, block in enumerate(raw.cells):
        data = np.asarray(block.data, dtype=np.int64)
        if block.type in _TET_TYPES:
            kind, offset = "tet", n_tet
            if block.type == "tetra10":
                n_quadratic += len(data)
            tet_parts.append(data[:, :4])
            n_tet += len(data)
            target = cell_sets
        elif block.type in _TRIANGLE_TYPES:
            kind, offset = "tri", n_tri
            tri_parts.append(data[:, :3])
            named = np.zeros(len(data), dtype=bool)
            tri_named.append(named)
            n_tri += len(data)
            target = tri_sets
        else:
            continue
        local = np.arange(len(data), dtype=np.int64)
        for key, per_block in (raw.cell_data or {}).items():
            values = np.asarray(per_block[block_index]).reshape(len(data), -1)[:, 0]
            if key == "gmsh:physical":
                dim = 3 if kind == "tet" else 2
                groups = [
                    (gmsh_names.get((dim, int(tag)), f"physical_{int(tag)}"), values == tag)
                    for tag in np.unique(values)
                ]
            elif key == "medit:ref":
                tags = np.unique(values)
                groups = (
                    [(f"ref_{int(tag)}", values == tag) for tag in tags]
                    if tags.size > 1 or kind == "tri"
                    else []
                )
            elif key.startswith(_SET_PREFIX):
                groups = [(key[len(_SET_PREFIX) :], values != 0)]
            else:
                continue
            for name, mask in groups:
                _add(target, name, offset + local[mask])
                if kind == "tri":
                    named |= mask
        for name, per_block in (raw.cell_sets or {}).items():
            if str(name).startswith("gmsh:"):  # meshio's entity bookkeeping, not a user set
                continue
            if block_index < len(per_block) and per_block[block_index] is not None:
                ids = np.asarray(per_block[block_index], dtype=np.int64).reshape(-1)
                _add(target, str(name), offset + ids)
                if kind == "tri":
                    named[ids] = True
    if n_quadratic:
        problems.append(
            f"{n_quadratic} quadratic tetrahedra (tetra10): their 4 corner nodes are used, "
            "mid-edge nodes ignored"
        )
        logger.warning("%s: %s", label, problems[-1])
    tets = np.concatenate(tet_parts) if tet_parts else np.zeros((0, 4), dtype=np.int64)
    triangles = np.concatenate(tri_parts) if tri_parts else np.zeros((0, 3), dtype=np.int64)
    triangle_sets = {name: triangles[np.unique(np.concatenate(parts))] for name, parts in tri_sets.items()}
    if n_tri:
        unnamed = ~np.concatenate(tri_named)
        if unnamed.any() and "triangles" not in triangle_sets:
            triangle_sets["triangles"] = triangles[unnamed]
    cell_sets_out = {name: np.unique(np.concatenate(parts)) for name, parts in cell_sets.items()}
    point_sets = {
        str(k): np.asarray(v, dtype=np.int64).reshape(-1) for k, v in (raw.point_sets or {}).items()
    }
    for key, values in (raw.point_data or {}).items():
        if key.startswith(_SET_PREFIX):
            point_sets[key[len(_SET_PREFIX) :]] = np.flatnonzero(
                np.asarray(values).reshape(len(raw.points), -1)[:, 0]
            )
    return tets, cell_sets_out, triangle_sets, point_sets, problems


def load(path, *, scale: float = 1.0) -> TetMesh:
    """Load a tetrahedral mesh, validate and repair it.

    Parameters
    ----------
    path : a file with one of :data:`TET_EXTENSIONS` (``.vtk`` legacy or XML, ``.vtu``, ``.msh``, ``.mesh``,
        ``.inp``, ``.xdmf``, ...). Other cells (vertices, lines, quads, ...) are ignored; triangles are
        kept as triangle sets; quadratic tetrahedra are reduced to their corners (with a warning).
    scale : factor applied to the coordinates (> 0).

    Raises
    ------
    MeshError
        Missing or unreadable file, unknown extension, a surface-only file, no tetrahedra, or any validation
        error of :func:`meshes.validate.repair`.
    """
    scale = _check_scale(scale)
    path = Path(path)
    _check_file(path)
    suffix = path.suffix.lower()
    if suffix in SURFACE_EXTENSIONS:
        raise MeshError(
            f"{path.name}: {suffix} is a surface format (triangles, no tetrahedra); use it as a cavity "
            f"surface (meshes.load_surface, or `surface = ...` in a [[body.cavity]] scene entry) and "
            f"give the body a tetrahedral mesh ({', '.join(sorted(TET_EXTENSIONS))})"
        )
    if suffix not in TET_EXTENSIONS:
        raise MeshError(
            f"{path.name}: unknown mesh extension {suffix or '(none)'!r}; supported: "
            f"{', '.join(sorted(TET_EXTENSIONS))}"
        )
    raw, node_numbers, notes = _read_raw(path, _sniff(path, TET_EXTENSIONS[suffix]))
    tets, cell_sets, triangle_sets, point_sets, problems = _collect(raw, path.name)
    if tets.shape[0] == 0:
        hint = ""
        if any(block.type in _TRIANGLE_TYPES for block in raw.cells):
            hint = " (a triangle surface: use it as a cavity with meshes.load_surface)"
        raise MeshError(f"{path.name}: no tetrahedra; cell types found: {_describe_cells(raw)}{hint}")
    points = np.asarray(raw.points, dtype=np.float64)
    if points.ndim == 2 and points.shape[1] == 2:
        raise MeshError(f"{path.name}: the points are 2D; a tetrahedral mesh needs 3D coordinates")
    mesh = repair(
        points * scale,
        tets,
        point_sets=point_sets,
        cell_sets=cell_sets,
        triangle_sets=triangle_sets,
        source=str(path),
        problems=notes + problems,
        original_node_ids=node_numbers,
    )
    logger.info("%s: loaded %d nodes, %d tetrahedra", path.name, mesh.n_points, mesh.n_tets)
    return mesh


def load_surface(path, *, scale: float = 1.0) -> TriangleSurface:
    """Load a triangle surface (``.stl``, ``.obj``, ``.ply``, ``.off``, or triangles of a tet-mesh format).

    Quads are split into two triangles; coincident vertices are merged (STL stores each triangle's corners
    separately) and unused vertices dropped.
    """
    scale = _check_scale(scale)
    path = Path(path)
    suffix = path.suffix.lower()
    formats = {**TET_EXTENSIONS, **SURFACE_EXTENSIONS}
    if suffix not in formats:
        raise MeshError(
            f"{path.name}: unknown surface extension {suffix or '(none)'!r}; supported: "
            f"{', '.join(sorted(formats))}"
        )
    _check_file(path)
    raw, _, _ = _read_raw(path, _sniff(path, formats[suffix]))
    parts = []
    for block in raw.cells:
        data = np.asarray(block.data, dtype=np.int64)
        if block.type in _TRIANGLE_TYPES:
            parts.append(data[:, :3])
        elif block.type in ("quad", "quad8", "quad9"):
            parts.append(data[:, [0, 1, 2]])
            parts.append(data[:, [0, 2, 3]])
    if not parts:
        raise MeshError(f"{path.name}: no triangles; cell types found: {_describe_cells(raw)}")
    triangles = np.concatenate(parts)
    points = np.asarray(raw.points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise MeshError(f"{path.name}: points must be 3D, got shape {points.shape}")
    bad = np.flatnonzero(np.any((triangles < 0) | (triangles >= len(points)), axis=1))
    if bad.size:
        raise MeshError(
            f"{path.name}: {bad.size} triangles reference missing vertices, first ids {bad[:10].tolist()}"
        )
    used = np.unique(triangles)
    if not np.all(np.isfinite(points[used])):
        raise MeshError(f"{path.name}: NaN or infinite vertex coordinates")
    unique_points, inverse = np.unique(points[used], axis=0, return_inverse=True)
    remap = np.zeros(len(points), dtype=np.int64)
    remap[used] = inverse.reshape(-1)
    return TriangleSurface(points=unique_points * scale, triangles=remap[triangles], source=str(path))


def _data_arrays(data: dict | None, size: int, what: str) -> dict[str, np.ndarray]:
    arrays = {}
    for name, values in (data or {}).items():
        values = np.asarray(values)
        if values.shape[:1] != (size,):
            raise MeshError(
                f"{what} {name!r}: expected {size} rows (one per {what.split()[0]}), got {values.shape}"
            )
        arrays[str(name)] = values
    return arrays


def write_vtu(path, points, tets, point_data: dict | None = None, cell_data: dict | None = None) -> None:
    """Write a tetrahedral VTU file atomically (temporary file in the same directory, then ``os.replace``).

    Parameters
    ----------
    path : destination ``.vtu``.
    points : (n, 3) positions; tets : (m, 4) node ids.
    point_data : name -> (n,) or (n, k) arrays; cell_data : name -> (m,) or (m, k) arrays.
    """
    import meshio

    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    tets = np.asarray(tets, dtype=np.int64).reshape(-1, 4)
    point_arrays = _data_arrays(point_data, len(points), "point data")
    cell_arrays = {k: [v] for k, v in _data_arrays(cell_data, len(tets), "cell data").items()}
    mesh = meshio.Mesh(points, [("tetra", tets)], point_data=point_arrays, cell_data=cell_arrays)
    path = Path(path)
    with atomic_path(path, make_parents=True) as temp_name:
        meshio.vtu.write(temp_name, mesh)


def write_mesh(path, mesh: TetMesh) -> None:
    """Write a :class:`TetMesh` with its named sets to ``.vtu`` (``set:NAME`` convention), atomically."""
    import meshio

    path = Path(path)
    if path.suffix.lower() != ".vtu":
        raise MeshError(f"{path.name}: write_mesh writes .vtu files only")
    blocks = [("tetra", mesh.tets)] + [("triangle", tris) for tris in mesh.triangle_sets.values()]
    sizes = [len(data) for _, data in blocks]
    names = sorted({*mesh.cell_sets, *mesh.triangle_sets})
    cell_data = {}
    for name in names:
        per_block = [np.zeros(size, dtype=np.uint8) for size in sizes]
        if name in mesh.cell_sets:
            per_block[0][mesh.cell_sets[name]] = 1
        for block_index, set_name in enumerate(mesh.triangle_sets, start=1):
            if set_name == name:
                per_block[block_index][:] = 1
        cell_data[_SET_PREFIX + name] = per_block
    point_data = {}
    for name, ids in mesh.point_sets.items():
        marks = np.zeros(mesh.n_points, dtype=np.uint8)
        marks[ids] = 1
        point_data[_SET_PREFIX + name] = marks
    raw = meshio.Mesh(mesh.points, blocks, point_data=point_data, cell_data=cell_data)
    with atomic_path(path, make_parents=True) as temp_name:
        meshio.vtu.write(temp_name, raw)


def write_pvd(path, entries: Sequence[tuple[float, str]]) -> None:
    """Write a ParaView collection (``.pvd``) atomically.

    Parameters
    ----------
    path : destination ``.pvd``.
    entries : (time, file name relative to the .pvd) pairs, in the order to list them.
    """
    lines = [
        '<?xml version="1.0"?>',
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
        "  <Collection>",
    ]
    for index, entry in enumerate(entries):
        try:
            time, file_name = entry
            time = float(time)
        except (TypeError, ValueError) as exc:
            raise MeshError(f"write_pvd: entry {index} must be (time, file name), got {entry!r}") from exc
        if not np.isfinite(time):
            raise MeshError(f"write_pvd: entry {index} has a non-finite time {time}")
        lines.append(f'    <DataSet timestep="{time!r}" group="" part="0" file={quoteattr(str(file_name))}/>')
    lines += ["  </Collection>", "</VTKFile>", ""]
    path = Path(path)
    with atomic_path(path, make_parents=True) as temp_name:
        Path(temp_name).write_text("\n".join(lines), encoding="utf-8")
