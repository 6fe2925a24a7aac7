"""Every scene key is declared once: the file format, the live editor, the solvers and the documentation all
accept its values and refuse a wrong one with the same message (the declaration's)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import SOLVER_TYPES, make_constraint_solver, solver_keys
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.newton import NEWTON_KEYS, StaticNewtonSolver
from softsim.mechanics.scene import SceneError, parse_data, set_value, to_data
from softsim.mechanics.scene.kinds import (
    Box,
    Choice,
    Flag,
    Flags,
    IndexList,
    Integer,
    Invalid,
    Keyframes,
    Name,
    NameList,
    Real,
    Text,
    Vector,
    VectorList,
)
from softsim.mechanics.scene.reference import BEGIN, END, declared_keys, key_table
from softsim.mechanics.scene.schema import (
    ByValue,
    ConstraintSpec,
    NewtonSpec,
    SceneSpec,
    Table,
    TableList,
    declarations,
    defaults,
)
from softsim.mechanics.scene_runtime import Scene
from softsim.mechanics.units import QUANTITIES

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "resources" / "scenes"
DOC = ROOT / "docs" / "scene-format.md"
BOX = [-15.0, 0.0, 0.0, 5.0, 10.0, 15.0]

#: a scene that uses every table of the format (two bodies, every region selector, every obstacle type)
RICH = {
    "scene": {"name": "rich", "units": "mm-kg-s", "mode": "static", "dt": 0.01},
    "body": [
        {"name": "finger", "mesh": "../meshes/finger.vtu",
         "material": {"youngModulus": 600.0, "poissonRatio": 0.45, "totalMass": 0.075,
                      "region": [{"box": BOX, "model": "corotational", "youngModulus": 500.0, "poissonRatio": 0.4}],
                      "stacked": [{"box": BOX, "strict": False, "model": "corotational", "youngModulus": 900.0,
                                   "poissonRatio": 0.3, "rotation_method": "polarF"},
                                  {"tetrahedra": [0, 1], "youngModulus": 900.0, "poissonRatio": 0.3}]},
         "fixed": [{"box": BOX, "translation": [0.0, 0.0, 0.0]}, {"sphere": {"center": [0.0, 0.0, 0.0], "radius": 1.0}},
                   {"halfspace": {"point": [0.0, 0.0, 0.0], "normal": [1.0, 0.0, 0.0]}}, {"indices": [0]},
                   {"set": "base"}],
         "force": [{"box": BOX, "totalForce": [0.0, 0.0, 1.0]}, {"set": "top", "pressure": 1.0},
                   {"sphere": {"center": [0.0, 0.0, 0.0], "radius": 1.0}, "totalForce": [1.0, 0.0, 0.0]},
                   {"halfspace": {"point": [0.0, 0.0, 0.0], "normal": [1.0, 0.0, 0.0]}, "totalForce": [1.0, 0, 0]}],
         "cable": [{"name": "c", "points": [[-17.5, 12.5, 2.5], [-32.5, 12.5, 2.5]], "pullPoint": [0.0, 12.5, 2.5],
                    "cableInitialLength": 40.0, "value": 1.0, "minForce": 0.0, "maxForce": 10.0,
                    "maxPositiveDisp": 5.0, "maxNegativeDisp": 1.0, "maxDispVariation": 1.0}],
         "cavity": [{"name": "v", "surface": "../meshes/pneunet_cavity.stl", "minPressure": 0.0, "maxPressure": 5.0,
                     "minVolumeGrowth": 0.0, "maxVolumeGrowth": 9.0, "maxPressureVariation": 1.0,
                     "maxVolumeGrowthVariation": 1.0}],
         "effector": [{"name": "tip", "position": [-100.0, 7.5, 7.5], "effectorGoal": [-90.0, 20.0, 7.5]}],
         "unilateralPlane": [{"name": "stop", "indices": [0, 370, 430, 374], "flipNormal": False},
                             {"name": "hinge", "points": [[-100.0, 2.0, 2.0], [-90.0, 5.0, 2.0], [-90.0, 5.0, 12.0],
                                                         [-80.0, 5.0, 2.0]], "indices": [0, 1, 2, 3]}],
         "centerEffector": [{"name": "centre", "indices": [0, 1], "effectorGoal": [-100.0, 10.0, 0.0],
                             "axis": [1, 1, 0], "weight": 2.0}],
         "rigidGroup": [{"box": BOX}, {"sphere": {"center": [0.0, 0.0, 0.0], "radius": 1.0}}, {"set": "base"},
                        {"halfspace": {"point": [0.0, 0.0, 0.0], "normal": [1.0, 0.0, 0.0]}}, {"indices": [0, 1, 2]}]},
        {"name": "cube", "mesh": "../meshes/cube.vtu", "collisionMesh": "../meshes/pneunet_cavity.stl",
         "collisionGroup": [1],
         "material": {"youngModulus": 100.0, "poissonRatio": 0.3,
                                                                  "massDensity": 1e-6},
         "fixed": [{"box": [-1e3, -1e3, -1e3, 1e3, 1e3, 1e3]}]},
    ],
    "obstacle": [{"name": "floor", "type": "plane", "point": [0.0, -10.0, 0.0], "normal": [0.0, 1.0, 0.0],
                  "velocity": [0.0, -1.0, 0.0], "startTime": 0.5, "endTime": 1.0},
                 {"name": "ball", "type": "sphere", "center": [0.0, 50.0, 0.0], "radius": 5.0, "friction": 0.5},
                 {"name": "crate", "type": "box", "center": [0.0, 80.0, 0.0], "halfExtents": [1.0, 1.0, 1.0]},
                 {"name": "rod", "type": "capsule", "a": [0.0, 90.0, 0.0], "b": [1.0, 90.0, 0.0], "radius": 1.0,
                  "contactDistance": 0.1}],
    "rigid": [{"name": "block", "shape": "box", "halfExtents": [5.0, 5.0, 5.0], "mass": 0.01,
               "inertia": [0.1, 0.1, 0.1], "position": [0.0, 120.0, 0.0], "rotation": [0.0, 0.0, 10.0],
               "velocity": [0.0, -1.0, 0.0], "angularVelocity": [0.0, 0.0, 1.0], "friction": 0.5,
               "contactDistance": 0.1, "alarmDistance": 1.0},
              {"name": "pebble", "shape": "sphere", "radius": 2.0, "mass": 0.001}],
    "attachment": [{"name": "glue", "bodyA": "finger", "bodyB": "cube", "indicesA": [0], "indicesB": [0]}],
    "collision": {"alarmDistance": 1.0, "contactDistance": 0.1, "friction": 0.5, "selfCollision": False,
                  "bodies": ["finger", "cube"], "pair": [{"bodyA": "finger", "bodyB": "cube", "friction": 0.3}]},
    "controller": [{"name": "ramp", "key": "body.finger.cable.c.value", "keyframes": [[0.0, 0.0], [1.0, 2.0]]},
                   {"name": "keys", "script": "../../examples/controllers/finger_keys.py"}],
    "solver": {"newton": {}, "linear": {}, "constraint": {}, "dynamic": {}, "inverse": {"responseFriction": 0.1}},
    "drag": {"compliance": 1e-3},
}


def rich_spec() -> SceneSpec:
    return parse_data(copy.deepcopy(RICH), source=str(SCENES / "rich.toml"), base_dir=SCENES)


def walk(obj, named: str = "", indexed: str = ""):
    """``(named path, indexed path, declaration, table)`` of every value key of a spec."""
    for d in declarations(type(obj)):
        value = getattr(obj, d.attribute)
        name_path = f"{named}.{d.key}" if named else d.key
        index_path = f"{indexed}.{d.key}" if indexed else d.key
        if isinstance(d.kind, Table):
            if value is not None:
                yield from walk(value, name_path, index_path)
        elif isinstance(d.kind, TableList):
            for i, item in enumerate(value):
                label = f"{name_path}.{item.name}" if getattr(item, "name", None) else f"{name_path}[{i}]"
                yield from walk(item, label, f"{index_path}[{i}]")
        else:
            yield name_path, index_path, d, obj


def wrong_value(kind):
    """A value every kind refuses: just outside a bound, an unknown option, a wrong shape."""
    if isinstance(kind, Real):
        if kind.lo is not None:
            return kind.lo if kind.lo_open else kind.lo - 1.0
        if kind.hi is not None:
            return kind.hi if kind.hi_open else kind.hi + 1.0
        return math.nan
    if isinstance(kind, Integer):
        return kind.lo - 1
    if isinstance(kind, Choice):
        return "nonsense"
    if isinstance(kind, Flag):
        return 2
    if isinstance(kind, Name):
        return "a.b"
    if isinstance(kind, Text):
        return " "
    if isinstance(kind, Box):
        return [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    if isinstance(kind, Vector | VectorList):
        return [1.0, 2.0]
    if isinstance(kind, IndexList):
        return [-1]
    if isinstance(kind, NameList):
        return ["a", "a"]
    if isinstance(kind, Flags):
        return [2, 0, 0]
    if isinstance(kind, Keyframes):
        return [[1.0, 0.0], [0.0, 1.0]]
    raise AssertionError(f"no wrong value for {kind!r}")


def expected_message(kind, value) -> str:
    with pytest.raises(Invalid) as caught:
        kind.convert(value)
    return str(caught.value)


def put(data, indexed_path: str, value) -> None:
    """Set the value at an indexed path (``body[0].cable[0].value``) of TOML data."""
    *parents, last = indexed_path.split(".")
    for part in parents:
        key, _, index = part.partition("[")
        data = data[key] if not index else data[key][int(index[:-1])]
    data[last] = value


def test_the_rich_scene_uses_every_declared_key():
    generics = {path for path, _cls, _d in declared_keys()}
    seen = set()
    for _named, indexed, _d, _table in walk(rich_spec()):
        seen.add(".".join(part.partition("[")[0] for part in indexed.split(".")))
    assert generics - seen == set()
    assert len(generics) == 206  # with body.collisionGroup


def test_every_declaration_has_help_a_known_unit_and_a_resolvable_condition():
    spec = rich_spec()
    for named, _indexed, d, table in walk(spec):
        assert d.help.endswith((".", ")")) and len(d.help) > 5, named
        quantities = d.unit.quantities.values() if isinstance(d.unit, ByValue) else [d.unit]
        assert all(q is None or q in QUANTITIES for q in quantities), named
        if d.when is not None:
            owner = spec if "." in d.when.key else table
            for part in d.when.key.split("."):
                owner = getattr(owner, part)
            assert isinstance(owner, str | bool), named  # a choice, or a flag (actuated = true)


def test_file_format_and_live_editor_refuse_a_wrong_value_with_the_same_message():
    spec = rich_spec()
    checked = 0
    for named, indexed, d, _table in walk(spec):
        bad = wrong_value(d.kind)
        message = expected_message(d.kind, bad)
        data = to_data(spec)
        put(data, indexed, bad)
        with pytest.raises(SceneError) as from_file:
            parse_data(data, source=spec.source, base_dir=SCENES)
        assert f"rich.toml: {indexed}: {message}" in from_file.value.errors, named
        edited = rich_spec()
        with pytest.raises(SceneError) as from_editor:
            set_value(edited, named, bad)
        assert str(from_editor.value) == f"rich.toml: {named}: {message}", named
        assert edited == spec  # a refused edit changes nothing
        current = getattr(_table, d.attribute)
        if current is not None:  # the current value is accepted as it is
            set_value(edited, named, d.kind.to_toml(current))
        checked += 1
    assert checked == 372  # body.collisionGroup on both bodies


@pytest.mark.parametrize("solver_type", list(SOLVER_TYPES))
def test_constraint_solvers_take_their_keys_and_defaults_from_the_declarations(solver_type):
    solver = make_constraint_solver(solver_type)
    assert solver.parameters == defaults(ConstraintSpec, solver_keys(solver_type))
    assert solver.tolerance == 1e-6 and solver.maxIterations == 1000
    for d in declarations(ConstraintSpec):
        if d.key not in solver_keys(solver_type):
            continue
        bad = wrong_value(d.kind)
        with pytest.raises(ParameterError) as caught:
            solver.set_parameters(**{d.key: bad})
        assert str(caught.value) == f"{solver_type}: {d.key}: {expected_message(d.kind, bad)}"
    jacobi_only = {"useSpectralCorrection", "spectralCorrectionFactor", "useConjugateResidue",
                   "conjugateResidueSpeedFactor", "sofaSpectralRadius"}
    assert (jacobi_only <= solver_keys(solver_type)) == (solver_type == "ImprovedJacobi")


def test_newton_solver_takes_its_keys_and_defaults_from_the_declarations():
    newton = StaticNewtonSolver()
    for key, value in defaults(NewtonSpec, NEWTON_KEYS).items():
        assert getattr(newton, key) == value
    assert (newton.newton_iterations, newton.residual_tolerance_threshold) == (10, 1e-8)
    for d in declarations(NewtonSpec):
        if d.key in NEWTON_KEYS:
            bad = wrong_value(d.kind)
            with pytest.raises(ParameterError, match=f"StaticNewtonSolver: {d.key}: "):
                newton.set_parameters(**{d.key: bad})


def test_a_running_scene_refuses_like_the_file_and_keeps_running():
    scene = Scene.load(SCENES / "finger.toml")
    before = scene.positions.copy()
    for path, bad in [("solver.constraint.tolerance", 0.0), ("body.finger.cable.cable.maxDispVariation", -1.0),
                      ("solver.newton.newton_iterations", 0), ("body.finger.material.poissonRatio", 0.5)]:
        with pytest.raises(SceneError, match=r"finger\.toml: " + path.replace(".", r"\.") + ": .* is outside"):
            scene.set(path, bad)
    scene.set("body.finger.cable.cable.value", 2.0)
    assert scene.step().converged
    assert not np.array_equal(scene.positions, before)
    assert scene.simulation.constraint_solver.tolerance == 1e-8  # the file's value


def test_the_documentation_lists_every_key_from_the_declarations():
    text = DOC.read_text(encoding="utf-8")
    generated = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert generated.strip() == key_table().strip(), "run: python -m softsim.mechanics.scene.reference " \
                                                     "docs/scene-format.md"
    for path, _cls, d in declared_keys():
        assert f"| `{path}`" in generated and d.help.replace("|", "\\|") in generated


def test_the_declarations_survive_python_OO():
    """Help texts live in the declarations, not in docstrings, so ``python -OO`` (which strips docstrings) keeps
    them."""
    import subprocess
    import sys

    code = ("from softsim.mechanics.scene.reference import key_table; t = key_table(); "
            "assert 'The factor of the spectral correction.' in t; print(len(t.splitlines()))")
    result = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == len(declared_keys()) + 2
