"""The generated bad-input corpus of issue 29: scene files, ``--set`` values, meshes, sweep specs, samples files
and ``--out`` states, each a command line with what it must give (refused naming the file or key, a warning
naming it, or accepted as valid), and a runner that runs each case in this process through the CLI's main
function, with a time and a memory watchdog.

Scene-file and ``--set`` cases are generated from the declarations of every key (``tests.mechanics.
test_declarations``: the rich scene that uses every table, ``walk``, ``wrong_value``): each key with a value
outside its range or of the wrong type. The other categories are written out below.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from softsim.mechanics.scene.kinds import (
    Box,
    Choice,
    Flag,
    Flags,
    IndexList,
    Integer,
    Keyframes,
    NameList,
    Real,
    Text,
    Vector,
    VectorList,
)
from tests.mechanics.test_declarations import RICH, put, walk, wrong_value

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "resources" / "scenes"
MESHES = ROOT / "resources" / "meshes"
FINGER = SCENES / "finger.toml"
FINGER_MESH = MESHES / "finger.vtu"
CABLE = "body.finger.cable.cable.value"

#: the longest a case may run [s] (a sweep that starts a cluster: SWEEP_TIMEOUT)
TIMEOUT = 30.0
SWEEP_TIMEOUT = 90.0
#: the most a case may add to this process's resident memory [bytes]
MEMORY_GROWTH = 1536 * 1024**2

EXPECTATIONS = ("refuse", "warn", "valid")


@dataclass
class Case:
    """One command line: ``argv`` (starting with the subcommand), what it must give (``expect``, one of
    :data:`EXPECTATIONS`), and texts of which the message must hold one (``names``: the file or the key)."""

    category: str
    name: str
    argv: list[str]
    expect: str
    names: tuple[str, ...] = ()
    prepare: Callable[[], contextlib.AbstractContextManager] | None = None
    timeout: float = TIMEOUT


@dataclass
class Outcome:
    """What a case gave: ``kind`` one of refused, warned, accepted, internal, hang, memory; and whether that is
    what the case expects (``ok``) with the reason when not."""

    case: Case
    kind: str
    status: int | None
    stderr: str
    ok: bool = True
    why: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


# -- TOML text ---------------------------------------------------------------------------------------------
def toml_value(value) -> str:
    """A Python value as TOML text (inline tables, NaN and infinities included)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(f"no TOML for {value!r}")


def toml_document(data: dict) -> str:
    """A scene's TOML data as a document: one line per top-level key, tables inline."""
    return "".join(f"{key} = {toml_value(value)}\n" for key, value in data.items())


def type_wrong(kind):
    """A value of the wrong type for ``kind`` (in a file): a string for a number, a number for a string..."""
    if isinstance(kind, Real):
        return "abc"
    if isinstance(kind, Integer):
        return 2.5
    if isinstance(kind, Flag):
        return "yes"
    if isinstance(kind, Choice):
        return 3
    if isinstance(kind, Text):
        return 7
    if isinstance(kind, Box | Vector | VectorList | IndexList | NameList | Flags | Keyframes):
        return {"a": 1}
    raise AssertionError(f"no wrong type for {kind!r}")


# -- generated cases ---------------------------------------------------------------------------------------
def rich_data() -> dict:
    """The rich scene of the declaration tests with its files by absolute path."""
    data = copy.deepcopy(RICH)
    data["body"][0]["mesh"] = FINGER_MESH.as_posix()
    data["body"][0]["cavity"][0]["surface"] = (MESHES / "pneunet_cavity.stl").as_posix()
    data["body"][1]["mesh"] = (MESHES / "cube.vtu").as_posix()
    data["body"][1]["collisionMesh"] = (MESHES / "pneunet_cavity.stl").as_posix()
    data["controller"][1]["script"] = (ROOT / "examples" / "controllers" / "finger_keys.py").as_posix()
    return data


def scene_key_cases(folder: Path) -> list[Case]:
    """Every declared key of the rich scene file with a value out of its range and one of the wrong type."""
    from softsim.mechanics.scene import parse_data

    base = rich_data()
    spec = parse_data(copy.deepcopy(base), source=str(folder / "rich.toml"), base_dir=folder)
    cases = []
    for number, (_named, indexed, declaration, _table) in enumerate(walk(spec)):
        kind = declaration.kind
        for label, bad in (("out of range", wrong_value(kind)), ("wrong type", type_wrong(kind))):
            data = copy.deepcopy(base)
            put(data, indexed, bad)
            path = folder / f"key{number:03d}_{label[0]}.toml"
            path.write_text(toml_document(data), encoding="utf-8")
            cases.append(Case("scene", f"{indexed} {label}: {toml_value(bad)}", ["check", str(path)], "refuse",
                              (f"{path.name}: {indexed}:",)))
    return cases


def scene_file_cases(folder: Path) -> list[Case]:
    """Whole scene files: unknown keys, syntax, encodings, sizes, files that are not files, scenes that load
    but cannot run or make no sense."""
    finger = FINGER.read_text().replace('"../meshes/finger.vtu"', f'"{FINGER_MESH.as_posix()}"')
    texts: list[tuple[str, str | bytes, str, tuple[str, ...]]] = [
        ("unknown top key", finger + "\n[solvr]\n", "refuse", ("solvr",)),
        ("misspelt key", finger.replace("youngModulus", "youngModulu", 1), "refuse", ("youngModulu",)),
        ("syntax error", finger + "\nthis is not toml\n", "refuse", ("TOML syntax error",)),
        ("a key twice", finger.replace("poissonRatio = 0.45", "poissonRatio = 0.45\n  poissonRatio = 0.4"),
         "refuse", ("TOML syntax error",)),
        ("empty file", "", "refuse", ("body",)),
        ("only comments", "# nothing\n", "refuse", ("body",)),
        ("not UTF-8", b"\xff\xfe" + finger.encode("utf-16-le"), "refuse", ("not UTF-8",)),
        ("BOM", "\ufeff" + finger, "valid", ()),
        ("nested too deeply", "x = " + "[" * 5000 + "]" * 5000 + "\n", "refuse", ("nested",)),
        ("integer of 5000 digits", finger + "\n[drag]\nstiffness = " + "9" * 5000 + "\n", "refuse", ("stiffness",)),
        ("null byte in the mesh path", finger.replace(FINGER_MESH.as_posix(), "fin\\u0000ger.vtu"), "refuse",
         ("body[0].mesh",)),
        ("missing mesh", finger.replace(FINGER_MESH.as_posix(), "nowhere.vtu"), "refuse", ("nowhere.vtu",)),
        ("sphere inside the body", finger + '\n[[obstacle]]\nname = "ball"\ntype = "sphere"\n'
         'center = [-50.0, 7.5, 7.5]\nradius = 3.0\n', "refuse", ("obstacle.ball",)),
        ("obstacle stops before it starts", finger + '\n[[obstacle]]\ntype = "plane"\npoint = [0.0, -5.0, 0.0]\n'
         'normal = [0.0, 1.0, 0.0]\nstartTime = 2.0\nendTime = 1.0\n', "refuse", ("obstacle[0].endTime",)),
        ("plane through the body", finger + '\n[[obstacle]]\nname = "cut"\ntype = "plane"\npoint = [0.0, 7.0, 0.0]\n'
         'normal = [0.0, 1.0, 0.0]\n', "refuse", ("obstacle.cut",)),
        ("contactDistance larger than the body", finger + '\n[[obstacle]]\nname = "far"\ntype = "plane"\n'
         'point = [0.0, -50.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\ncontactDistance = 1000.0\n', "refuse",
         ("obstacle.far.contactDistance",)),
        ("effector goal without inverse mode", finger.replace(
            "position = [-100.0, 7.5, 7.5]", "position = [-100.0, 7.5, 7.5]\n  effectorGoal = [-100.0, 0.0, 7.5]"),
         "warn", ("effectorGoal",)),
        ("massless body under gravity", finger.replace("totalMass = 0.075", ""), "warn", ("body[0].material",)),
        ("self-collision at rest", finger + "\n[collision]\nselfCollision = true\n", "valid", ()),
        ("controller of an unknown key", finger + '\n[[controller]]\nkey = "body.finger.cable.cabel.value"\n'
         'keyframes = [[0.0, 0.0], [1.0, 5.0]]\n', "refuse", ("controller[0].key", "cabel")),
        ("controller of a text key", finger + '\n[[controller]]\nkey = "scene.units"\nkeyframes = [[0.0, 1.0]]\n',
         "refuse", ("controller[0].key", "scene.units")),
        ("keyframe value of the wrong shape", finger + '\n[[controller]]\nkey = "scene.gravity"\n'
         'keyframes = [[0.0, 1.0]]\n', "refuse", ("controller[0].keyframes",)),
        ("controller with key and script", finger + '\n[[controller]]\nkey = "scene.dt"\nkeyframes = [[0.0, 1.0]]\n'
         'script = "x.py"\n', "refuse", ("controller[0]",)),
        ("controller script missing", finger + '\n[[controller]]\nscript = "nowhere.py"\n', "refuse",
         ("controller[0].script", "nowhere.py")),
        ("unilateral plane of 3 points", finger.replace("[[body.cable]]", "[[body.unilateralPlane]]\n"
         "  indices = [0, 1, 2]\n\n  [[body.cable]]", 1), "refuse", ("unilateralPlane[0].indices",)),
        ("unilateral plane beyond the mesh", finger.replace("[[body.cable]]", "[[body.unilateralPlane]]\n"
         "  indices = [0, 1, 2, 100000]\n\n  [[body.cable]]", 1), "refuse", ("unilateralPlane0.indices",)),
        ("stacked field of another model", finger.replace("[[body.fixed]]", "[[body.material.stacked]]\n"
         "  box = [-200.0, -50.0, -50.0, 0.0, 50.0, 50.0]\n  model = \"linear\"\n  youngModulus = 100.0\n"
         "  poissonRatio = 0.3\n\n  [[body.fixed]]", 1), "refuse", ("stacked[0].model",)),
        ("stacked field of elements beyond the mesh", finger.replace("[[body.fixed]]", "[[body.material.stacked]]\n"
         "  tetrahedra = [100000]\n  youngModulus = 100.0\n  poissonRatio = 0.3\n\n  [[body.fixed]]", 1), "refuse",
         ("stacked[0].tetrahedra",)),
        ("collision mesh far from the body", finger.replace(f'mesh = "{FINGER_MESH.as_posix()}"',
         f'mesh = "{FINGER_MESH.as_posix()}"\ncollisionMesh = "{(MESHES / "pneunet_cavity.stl").as_posix()}"', 1),
         "refuse", ("body.finger.collisionMesh", "pneunet_cavity.stl")),
        ("center effector beyond the mesh", finger.replace("[[body.cable]]", "[[body.centerEffector]]\n"
         "  indices = [100000]\n\n  [[body.cable]]", 1), "refuse", ("centerEffector0.indices",)),
    ]
    cases = []
    for number, (name, text, expect, names) in enumerate(texts):
        path = folder / f"file{number:02d}.toml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        cases.append(Case("scene", name, ["check", str(path)], expect, names or (path.name,)))
    (folder / "loop_a.toml").symlink_to(folder / "loop_b.toml")
    (folder / "loop_b.toml").symlink_to(folder / "loop_a.toml")
    os.mkfifo(folder / "fifo.toml")
    (folder / "big.toml").write_bytes(b"#" * (16 * 1024**2 + 1))
    for name, target in (("a directory", folder), ("/dev/zero", Path("/dev/zero")),
                         ("a named pipe", folder / "fifo.toml"), ("a symlink loop", folder / "loop_a.toml"),
                         ("larger than 16 MiB", folder / "big.toml"), ("missing", folder / "missing.toml")):
        cases.append(Case("scene", f"the scene is {name}", ["check", str(target)], "refuse", (target.name,)))
    return cases


def set_cases(scene: Path) -> list[Case]:
    """Every key of ``scene`` through ``--set``: out of range, of the wrong type (not for strings, where any
    text is one), and its current value (valid)."""
    from softsim.mechanics.scene import load_scene

    spec = load_scene(scene)
    cases = []
    for named, _indexed, declaration, table in walk(spec):
        kind = declaration.kind
        bad = [("out of range", wrong_value(kind))]
        if not isinstance(kind, Text | Choice):
            bad.append(("wrong type", type_wrong(kind)))
        for label, value in bad:
            text = value.strip() if isinstance(value, str) and kind.text else toml_value(value)
            cases.append(Case("--set", f"{scene.name} {named} {label}: {text}",
                              ["check", str(scene), "--set", f"{named}={text}"], "refuse", (named,)))
        current = getattr(table, declaration.attribute)
        if current is not None:
            text = toml_value(kind.to_toml(current))
            cases.append(Case("--set", f"{scene.name} {named} = its value {text}",
                              ["check", str(scene), "--set", f"{named}={text}"], "valid"))
    special = [
        ("empty value", f"{CABLE}=", "refuse", CABLE),
        ("no '='", CABLE, "refuse", CABLE),
        ("unknown key", "body.finger.cable.cable.valu=1", "refuse", "valu"),
        ("unknown body", "body.hand.material.youngModulus=1", "refuse", "hand"),
        ("index out of range", "body[3].material.youngModulus=1", "refuse", "body[3]"),
        ("malformed path", "body..material=1", "refuse", "body..material"),
        ("a table set whole", "solver.newton=1", "refuse", "solver.newton"),
        ("100000 digits", f"{CABLE}=" + "1" * 100_000, "refuse", CABLE),
        ("null byte", "scene.name=a\x00b", "refuse", "scene.name"),
        ("value and more", f"{CABLE}=5\n[x]\ny = 1", "refuse", CABLE),
        ("nested too deeply", f"{CABLE}=" + "[" * 3000 + "]" * 3000, "refuse", CABLE),
        ("nan", f"{CABLE}=nan", "refuse", CABLE),
        ("units quoted", 'scene.units="SI"', "valid", ""),
        ("mode single-quoted", "scene.mode='static'", "valid", ""),
        ("choice bare", "solver.constraint.type=ImprovedJacobi", "valid", ""),
        ("choice quoted wrong", 'solver.constraint.type="Jacobi"', "refuse", "solver.constraint.type"),
    ]
    for name, override, expect, key in special:
        cases.append(Case("--set", name, ["check", str(FINGER), "--set", override], expect, (key,) if key else ()))
    return cases


def _write_mesh(path: Path, points, cells) -> Path:
    import meshio

    meshio.write(path, meshio.Mesh(points, cells))
    return path


def mesh_cases(folder: Path) -> list[Case]:
    """Mesh files that are not tetrahedral meshes softsim can use, through ``softsim info`` and as the mesh of a
    scene (``softsim check``)."""
    import numpy as np

    good = FINGER_MESH.read_bytes()
    tet_points = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    files: list[tuple[str, Path, str]] = []

    def add(name: str, filename: str, content: bytes | None = None, expect: str = "refuse") -> Path:
        path = folder / filename
        if content is not None:
            path.write_bytes(content)
        files.append((name, path, expect))
        return path

    add("empty .vtu", "empty.vtu", b"")
    add("empty .msh", "empty.msh", b"")
    add("empty .stl", "empty.stl", b"")
    add("random bytes", "noise.vtu", bytes(range(256)) * 64)
    add("truncated .vtu", "half.vtu", good[: len(good) // 2])
    add("text with a mesh extension", "text.vtk", b"hello\n")
    add("unknown extension", "mesh.xyz", good)
    add("no extension", "mesh", good)
    add("missing", "missing.vtu")
    (folder / "dir.vtu").mkdir()
    add("a directory", "dir.vtu")
    (folder / "zero.vtu").symlink_to("/dev/zero")
    add("/dev/zero", "zero.vtu")
    os.mkfifo(folder / "fifo.vtu")
    add("a named pipe", "fifo.vtu")
    (folder / "la.vtu").symlink_to(folder / "lb.vtu")
    (folder / "lb.vtu").symlink_to(folder / "la.vtu")
    add("a symlink loop", "la.vtu")
    files.append(("triangles only", _write_mesh(folder / "tris.vtu", tet_points, [("triangle", [[0, 1, 2]])]),
                  "refuse"))
    files.append(("NaN coordinates", _write_mesh(folder / "nan.vtu", np.array([[np.nan, 0, 0], *tet_points[1:]]),
                                                 [("tetra", [[0, 1, 2, 3]])]), "refuse"))
    files.append(("a node index out of range", _write_mesh(folder / "index.vtu", tet_points,
                                                           [("tetra", [[0, 1, 2, 9]])]), "refuse"))
    files.append(("a flat tetrahedron", _write_mesh(folder / "flat.vtu", np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0],
                                                                                   [1, 1, 0]]),
                                                    [("tetra", [[0, 1, 2, 3]])]), "refuse"))
    files.append(("an inverted tetrahedron (repaired)", _write_mesh(folder / "inverted.vtu", tet_points,
                                                                     [("tetra", [[0, 2, 1, 3]])]), "warn"))
    shutil_copy = folder / "fing[1].vtu"
    shutil_copy.write_bytes(good)
    files.append(("a name with glob characters", shutil_copy, "valid"))
    finger = FINGER.read_text()
    cases = []
    for number, (name, path, expect) in enumerate(files):
        cases.append(Case("mesh", f"info: {name}", ["info", str(path)], expect, (path.name,)))
        if expect == "valid":
            scene = folder / f"mesh{number:02d}.toml"
            scene.write_text(finger.replace('"../meshes/finger.vtu"', json.dumps(path.as_posix())))
            cases.append(Case("mesh", f"scene: {name}", ["check", str(scene)], expect, (path.name,)))
        elif expect == "refuse":
            scene = folder / f"mesh{number:02d}.toml"
            scene.write_text(finger.replace('"../meshes/finger.vtu"', json.dumps(path.as_posix())))
            cases.append(Case("mesh", f"scene: {name}", ["check", str(scene)], expect, (path.name, "body[0].mesh")))
    return cases


def sweep_cases(folder: Path) -> list[Case]:
    """``softsim sweep`` arguments refused before any work, and one valid sweep."""
    out = str(folder / "sweep-out")
    young = "body.finger.material.youngModulus"
    specs = [
        ("two parts", f"{CABLE}=1:5", CABLE), ("letters", f"{CABLE}=a:2:3", "a:2:3"),
        ("num not whole", f"{CABLE}=0:1:2.5", "0:1:2.5"), ("num 0", f"{CABLE}=0:1:0", "0:1:0"),
        ("num too large", f"{CABLE}=0:1:1e9", "0:1:1e9"), ("infinite stop", f"{CABLE}=0:inf:3", "0:inf:3"),
        ("nan start", f"{CABLE}=nan:1:3", "nan:1:3"), ("num inf", f"{CABLE}=0:1:inf", "0:1:inf"),
        ("empty spec", f"{CABLE}=", "empty SPEC"), ("empty item", f"{CABLE}=1,,2", "1,,2"),
        ("only a comma", f"{CABLE}=,", "','"), ("no '='", CABLE, CABLE), ("no key", "=1,2", "=1,2"),
        ("unknown key", "body.finger.cable.cable.valu=1,2", "valu"), ("out of range", f"{young}=-1,400", young),
        ("wrong type", f"{young}=abc,400", young), ("a value of 5000 digits", f"{CABLE}=" + "9" * 5000, CABLE),
        ("a choice out of its options", "solver.constraint.type=Jacobi,NNCG", "solver.constraint.type"),
        ("a flag given 2", "solver.newton.line_search=2", "solver.newton.line_search"),
        ("an unterminated string", f'{CABLE}="abc', "abc"), ("more after a value", f"{CABLE}=1 2,3", CABLE),
        ("a table key", "solver.newton=1,2", "solver.newton"),
    ]
    cases = [Case("sweep spec", name, ["sweep", str(FINGER), "--vary", vary, "--frames", "1", "--out", out], "refuse",
                  (key,)) for name, vary, key in specs]
    others = [
        ("a key varied twice", ["--vary", f"{CABLE}=1,2", "--vary", f"{CABLE}=3,4"], CABLE),
        ("--vtu without --keep-frames", ["--vary", f"{CABLE}=1,2", "--vtu"], "--vtu"),
        ("--workers 0", ["--vary", f"{CABLE}=1,2", "--workers", "0"], "--workers"),
        ("nothing to vary", [], "--vary"),
        ("--vary and --samples", ["--vary", f"{CABLE}=1,2", "--samples", str(FINGER)], "--samples"),
        ("a bad --set", ["--vary", f"{CABLE}=1,2", "--set", f"{young}=-5"], young),
        ("an empty --set", ["--vary", f"{CABLE}=1,2", "--set", f"{young}="], young),
        ("--out is a file", ["--vary", f"{CABLE}=1,2", "--out", str(FINGER)], "--out"),
        ("--out holds other files", ["--vary", f"{CABLE}=1,2", "--out", str(SCENES)], "--out"),
    ]
    for name, arguments, key in others:
        if "--out" not in arguments:
            arguments = [*arguments, "--out", out]
        cases.append(Case("sweep spec", name, ["sweep", str(FINGER), *arguments, "--frames", "1"], "refuse", (key,)))
    cases.append(Case("sweep spec", "--frames 0", ["sweep", str(FINGER), "--vary", f"{CABLE}=1,2", "--frames", "0",
                                                   "--out", out], "refuse", ("--frames",)))
    cases.append(Case("sweep spec", "a valid sweep of 2 samples", ["sweep", str(FINGER), "--vary", f"{CABLE}=1,2",
                                                                  "--frames", "1", "--workers", "1", "--out",
                                                                  str(folder / "valid-sweep")], "valid",
                      timeout=SWEEP_TIMEOUT))
    return cases


def samples_cases(folder: Path) -> list[Case]:
    """``softsim sweep --samples FILE``: files that are not a CSV of samples softsim can use."""
    young = "body.finger.material.youngModulus"
    texts: list[tuple[str, str | bytes, str]] = [
        ("empty", "", "no header"), ("header only", f"{CABLE}\n", "empty"), ("blank lines", "\n\n\n", "no header"),
        ("ragged row", f"{CABLE}\n1.0,2.0\n", "line 2"), ("a column twice", f"{CABLE},{CABLE}\n1,2\n", "twice"),
        ("an empty header cell", f"{CABLE},\n1,2\n", "column 2"),
        ("unknown key", "body.finger.x\n1\n", "body.finger.x"),
        ("a value out of range", f"{young}\n-1\n", young), ("a value of the wrong type", f"{young}\nabc def\n", young),
        ("a bad cell", f"{CABLE}\n1 2\n", CABLE), ("a cell of 5000 digits", f"{CABLE}\n{'9' * 5000}\n", CABLE),
        ("an unterminated string", f'{CABLE}\n"abc\n', CABLE), ("nan", f"{CABLE}\nnan\n", CABLE),
        ("a null byte", f"{CABLE}\n1\x00\n", CABLE), ("not UTF-8", "\u00e9t\u00e9\n1\n".encode("latin-1"), "UTF-8"),
        ("UTF-16", f"{CABLE}\n1\n".encode("utf-16"), "UTF-8"),
        ("more rows than allowed", f"{CABLE}\n" + "1\n" * 1_000_001, "more than"),
    ]
    out = str(folder / "samples-out")
    cases = []
    for number, (name, text, key) in enumerate(texts):
        path = folder / f"samples{number:02d}.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        cases.append(Case("samples", name, ["sweep", str(FINGER), "--samples", str(path), "--frames", "1", "--out",
                                            out], "refuse", (key, path.name)))
    os.mkfifo(folder / "fifo.csv")
    with open(folder / "big.csv", "wb") as big:  # sparse: refused by its size before a byte is read
        big.truncate(256 * 1024**2 + 1)
    for name, target in (("/dev/zero", "/dev/zero"), ("a directory", str(folder)), ("missing", str(folder / "x.csv")),
                         ("a named pipe", str(folder / "fifo.csv")), ("larger than 256 MiB", str(folder / "big.csv"))):
        cases.append(Case("samples", f"the samples file is {name}", ["sweep", str(FINGER), "--samples", target,
                                                                     "--frames", "1", "--out", out], "refuse",
                          (Path(target).name,)))
    return cases


def out_cases(folder: Path) -> list[Case]:
    """``softsim run --out DIR`` in every state a directory can be in, and ``--frames`` out of range."""
    scene = str(FINGER)
    (folder / "a-file").write_text("x")
    (folder / "foreign").mkdir()
    (folder / "foreign" / "notes.txt").write_text("mine")
    (folder / "users-csv").mkdir()
    (folder / "users-csv" / "frames.csv").write_text("a,b\n1,2\n")
    (folder / "a-subdir").mkdir()
    (folder / "a-subdir" / "inner").mkdir()
    (folder / "empty").mkdir()
    (folder / "link-to-dir").symlink_to(folder / "empty")
    (folder / "locked").mkdir()

    @contextlib.contextmanager
    def another_run_holds_it():
        from softsim.app.run_output import hold_out_dir

        with hold_out_dir(folder / "locked"):
            yield

    states = [
        ("a file", folder / "a-file", "refuse"), ("a directory of other files", folder / "foreign", "refuse"),
        ("a user's frames.csv", folder / "users-csv", "refuse"),
        ("a subdirectory inside", folder / "a-subdir", "refuse"),
        ("below a file", folder / "a-file" / "below", "refuse"), ("/dev/null", Path("/dev/null"), "refuse"),
        ("/proc", Path("/proc/softsim-out"), "refuse"),
        ("empty", folder / "empty", "valid"), ("new and nested", folder / "new" / "deeper", "valid"),
        ("an earlier run's (run again)", folder / "new" / "deeper", "valid"),
        ("a link to an empty directory", folder / "link-to-dir", "valid"),
    ]
    cases = [Case("--out", f"--out {name}", ["run", scene, "--frames", "1", "--no-vtu", "--out", str(path)], expect,
                  ("--out", path.name)) for name, path, expect in states]
    cases.append(Case("--out", "--out another run is writing", ["run", scene, "--frames", "1", "--no-vtu", "--out",
                                                              str(folder / "locked")], "refuse", ("--out",),
                      prepare=another_run_holds_it))
    for frames in ("0", "-1", "1e9", "100000001", "x", ""):
        cases.append(Case("--out", f"--frames {frames!r}", ["run", scene, "--frames", frames, "--no-vtu", "--out",
                                                           str(folder / "frames-out")], "refuse", ("--frames",)))
    cases.append(Case("--out", "--out missing", ["run", scene, "--frames", "1"], "refuse", ("--out",)))
    return cases


def all_cases(folder: Path) -> list[Case]:
    """Every case, its files written under ``folder``."""
    parts = {name: folder / name for name in ("scenes", "meshes", "samples", "out", "sweep")}
    for path in parts.values():
        path.mkdir()
    corpus = folder / "scenes" / "corpus_finger.toml"
    corpus.write_text(FINGER.read_text().replace('"../meshes/finger.vtu"', f'"{FINGER_MESH.as_posix()}"'))
    return [*scene_key_cases(parts["scenes"]), *scene_file_cases(parts["scenes"]), *set_cases(corpus),
            *mesh_cases(parts["meshes"]), *sweep_cases(parts["sweep"]), *samples_cases(parts["samples"]),
            *out_cases(parts["out"])]


# -- running -----------------------------------------------------------------------------------------------
class CaseTimeout(BaseException):
    """The case ran longer than its timeout (a BaseException: no ``except Exception`` of softsim catches it)."""


class CaseMemory(BaseException):
    """The case grew this process's resident memory by more than MEMORY_GROWTH."""


def _resident() -> int:
    """This process's resident memory [bytes] (Linux /proc; ru_maxrss elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextlib.contextmanager
def watchdog(timeout: float, memory: int):
    """Raise CaseTimeout or CaseMemory in the main thread when the block runs too long or grows too much,
    checked every 50 ms."""
    started, base = time.monotonic(), _resident()

    def check(_signum, _frame):
        if time.monotonic() - started > timeout:
            raise CaseTimeout
        if _resident() - base > memory:
            raise CaseMemory

    previous = signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(case: Case) -> Outcome:
    """Run ``case`` through ``softsim.app.cli.main`` in this process and judge its outcome."""
    from softsim.app.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    status, kind = None, ""
    started = time.perf_counter()
    with (case.prepare() if case.prepare else contextlib.nullcontext()):
        try:
            with watchdog(case.timeout, MEMORY_GROWTH), contextlib.redirect_stdout(stdout), \
                    contextlib.redirect_stderr(stderr):
                status = main(list(case.argv))
        except CaseTimeout:
            kind = "hang"
        except CaseMemory:
            kind = "memory"
        except SystemExit as exit_:  # argparse of ``softsim info``
            status = exit_.code if isinstance(exit_.code, int) else 2
        except Exception as error:  # noqa: BLE001 - an exception out of main is an internal error
            kind = "internal"
            stderr.write(f"{type(error).__name__}: {error}")
    err = stderr.getvalue()
    if not kind:
        if status == 1 or "Traceback" in err or "internal error" in err:
            kind = "internal"
        elif status == 2:
            kind = "refused"
        elif "warning" in err or "problems" in stdout.getvalue():
            kind = "warned"
        else:
            kind = "accepted"
    outcome = Outcome(case, kind, status, err, seconds=time.perf_counter() - started)
    _judge(outcome, stdout.getvalue())
    return outcome


def _judge(outcome: Outcome, out: str) -> None:
    case, err = outcome.case, outcome.stderr
    wanted = {"refuse": "refused", "warn": "warned", "valid": "accepted"}[case.expect]
    if outcome.kind != wanted and not (case.expect == "valid" and outcome.kind == "warned"):
        outcome.ok, outcome.why = False, f"expected {wanted}, got {outcome.kind} (status {outcome.status})"
        return
    text = err + (out if case.category == "mesh" else "")
    if case.expect in ("refuse", "warn") and case.names and not any(name in text for name in case.names):
        outcome.ok, outcome.why = False, f"the message names none of {case.names}"
    elif case.expect == "refuse" and ("[Errno" in err or "set_int_max_str_digits" in err):
        outcome.ok, outcome.why = False, "a raw Python error in the message"
    elif case.expect == "refuse" and len(err.strip().splitlines()) > 3:
        outcome.ok, outcome.why = False, "more than 3 lines for one refusal"
