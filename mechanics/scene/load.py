"""Read a TOML scene into a validated :class:`~mechanics.scene.schema.SceneSpec`.

The file is decoded with ``tomllib`` (data only, nothing is executed) and then checked key by key against
the field metadata of the schema dataclasses. Every problem is collected (``file: key.path: message``) and
reported together in one :class:`~mechanics.scene.schema.SceneError`. Checks involving several keys (exactly
one region selector, min <= max bounds, unique names, files that exist) run once the keys they involve are
valid, so that one typo gives one message rather than a cascade.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
import stat
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softsim.mechanics.scene.kinds import Invalid, Vector, show, suggest
from softsim.mechanics.scene.schema import (
    EXCLUSIVE_KEYS,
    OBSTACLE_KEYS,
    REGION_KEYS,
    BodySpec,
    CableSpec,
    CavitySpec,
    ControllerSpec,
    EffectorSpec,
    FixedSpec,
    ForceSpec,
    MaterialSpec,
    ObstacleSpec,
    RegionSpec,
    RigidGroupSpec,
    RigidSpec,
    SceneError,
    SceneSettings,
    SceneSpec,
    StackedMaterialSpec,
    Table,
    TableList,
    UnilateralPlaneSpec,
    schema_fields,
)
from softsim.meshes.files import MAX_SCENE_FILE_BYTES, InputFileError, read_input_bytes

logger = logging.getLogger(__name__)

__all__ = ["load_scene", "parse_scene", "parse_data", "check_value", "SCENE_RULE_KEYS", "SCENE_RULE_TABLES"]

_FAILED = object()
_GRAVITY = {"SI": [0.0, -9.81, 0.0], "mm-kg-s": [0.0, -9810.0, 0.0]}


class _Context:
    """Errors and warnings collected while reading one scene."""

    def __init__(self, label: str, base_dir: Path, check_files: bool, default_name: str) -> None:
        self.label = label
        self.base_dir = base_dir
        self.check_files = check_files
        self.default_name = default_name
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{self.label}: {path}: {message}" if path else f"{self.label}: {message}")

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{self.label}: {path}: {message}")

    def resolve(self, path: str, text: str) -> Path:
        """The absolute path of ``text`` (relative to the scene directory); an error if the file is absent, is
        not a regular file, or is a symbolic link that loops."""
        joined = self.base_dir / Path(text).expanduser()
        try:
            resolved = joined.resolve()
        except (RuntimeError, OSError):  # Python 3.11/3.12 raise RuntimeError for a loop, later ones OSError
            self.error(path, f"{joined}: a symbolic link loop (following its links leads back to where they "
                             f"started, no file at the end); point {path} or the link at the file itself")
            return joined
        if self.check_files and not resolved.is_file():
            if resolved.exists():
                self.error(path, f"not a regular file: {resolved} ({_kind_of_file(resolved)})")
            else:
                self.error(path, f"file not found: {resolved}")
        return resolved


def _kind_of_file(path: Path) -> str:
    """``"a directory"``, ``"a character device"``... for a path that exists but is not a regular file."""
    mode = path.stat().st_mode
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unknown_key(key: str, known: list[str]) -> str:
    hint = suggest(key, known)
    return f"unknown key{hint}" if hint else f"unknown key; allowed keys: {', '.join(known)}"


def _parse_table(cls: type, raw: Any, path: str, ctx: _Context) -> Any:
    """Parse the TOML table ``raw`` into ``cls``; returns ``_FAILED`` when an error was recorded."""
    if not isinstance(raw, dict):
        ctx.error(path, f"expected a table, got {show(raw)}")
        return _FAILED
    n_errors = len(ctx.errors)
    prepare = _PREPARE.get(cls)
    if prepare is not None:
        raw = prepare(dict(raw), path, ctx)
    specs = schema_fields(cls)
    known = [key for key, *_ in specs] + [alias for _, _, _, alias, _ in specs if alias]
    for key in raw:
        if key not in known:
            ctx.error(_join(path, key), _unknown_key(key, known))
    values: dict[str, Any] = {}
    factories = {f.name for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING}
    for key, attribute, kind, alias, required in specs:
        present = [k for k in (key, alias) if k is not None and k in raw]
        if not present:
            if isinstance(kind, Table) and attribute in factories:
                # Absent tables with a default (``[solver.newton]``) are read as empty so that their
                # preparation step (defaults that depend on other keys) runs as well.
                present_value = _parse_table(kind.cls, {}, _join(path, key), ctx)
                if present_value is not _FAILED:
                    values[attribute] = present_value
            elif required:
                what = "table" if isinstance(kind, Table) else "key"
                ctx.error(_join(path, key), f"missing required {what}")
            continue
        converted = [_convert(kind, k, raw[k], _join(path, k), ctx) for k in present]
        if _FAILED in converted:
            continue
        if len(converted) == 2 and converted[0] != converted[1]:
            ctx.error(
                _join(path, key),
                f"{show(raw[key])} disagrees with its alias {alias} = {show(raw[alias])}; give only one",
            )
            continue
        values[attribute] = converted[0]
    if len(ctx.errors) > n_errors:
        return _FAILED
    obj = cls(**values)
    check = _CHECKS.get(cls)
    if check is not None:
        check(obj, path, ctx)
    return obj if len(ctx.errors) == n_errors else _FAILED


def _convert(kind: Any, key: str, raw: Any, path: str, ctx: _Context) -> Any:
    if isinstance(kind, Table):
        return _parse_table(kind.cls, raw, path, ctx)
    if isinstance(kind, TableList):
        if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
            header = re.sub(r"\[\d+\]", "", path)
            ctx.error(path, f"expected an array of tables ([[{header}]]), got {show(raw)}")
            return _FAILED
        has_name = any(k == "name" for k, *_ in schema_fields(kind.cls))
        items = []
        for i, item in enumerate(raw):
            if has_name and "name" not in item:
                item = {"name": f"{key}{i}", **item}
            items.append(_parse_table(kind.cls, item, f"{path}[{i}]", ctx))
        return _FAILED if _FAILED in items else items
    try:
        return kind.convert(raw)
    except Invalid as error:
        ctx.error(path, str(error))
        return _FAILED


# --- preparation of raw tables (defaults that depend on other keys, alternative spellings) ---


def _prepare_scene_settings(raw: dict, path: str, ctx: _Context) -> dict:
    raw.setdefault("name", ctx.default_name)
    units = raw.get("units", "SI")
    if "gravity" not in raw and isinstance(units, str) and units in _GRAVITY:
        raw["gravity"] = _GRAVITY[units]
    return raw


def _prepare_obstacle(raw: dict, path: str, ctx: _Context) -> dict:
    """``type = "box"`` may be given as ``min``/``max`` corners; they are read as center and halfExtents."""
    corners = [k for k in ("min", "max") if k in raw]
    if not corners:
        return raw
    if raw.get("type") != "box":
        for k in corners:
            ctx.error(_join(path, k), f"used only by type box, not by type {show(raw.get('type'))}")
        return {k: v for k, v in raw.items() if k not in corners}
    if len(corners) == 1:
        other = "max" if corners[0] == "min" else "min"
        ctx.error(_join(path, other), f"missing; a box given by {corners[0]} also needs {other}")
        return {k: v for k, v in raw.items() if k not in corners}
    for k in ("center", "halfExtents"):
        if k in raw:
            ctx.error(_join(path, k), "give either center and halfExtents or min and max, not both")
    try:
        low = Vector(3).convert(raw["min"])
    except Invalid as error:
        ctx.error(_join(path, "min"), str(error))
        low = None
    try:
        high = Vector(3).convert(raw["max"])
    except Invalid as error:
        ctx.error(_join(path, "max"), str(error))
        high = None
    prepared = {k: v for k, v in raw.items() if k not in ("min", "max", "center", "halfExtents")}
    if low is None or high is None:
        return prepared
    for axis, name in enumerate("xyz"):
        if high[axis] <= low[axis]:
            ctx.error(_join(path, "max"), f"{name}: {high[axis]:g} must be > min {low[axis]:g}")
            return prepared
    prepared["center"] = [(a + b) / 2.0 for a, b in zip(low, high)]
    prepared["halfExtents"] = [(b - a) / 2.0 for a, b in zip(low, high)]
    return prepared


_PREPARE: dict[type, Callable[[dict, str, _Context], dict]] = {
    SceneSettings: _prepare_scene_settings,
    ObstacleSpec: _prepare_obstacle,
}


# --- checks that involve several keys ---


def _exactly_one(obj: Any, keys: tuple[str, ...], path: str, ctx: _Context) -> str | None:
    given = [k for k in keys if getattr(obj, k) is not None]
    if len(given) == 1:
        return given[0]
    if not given:
        ctx.error(path, f"one of {', '.join(keys)} is required")
    else:
        ctx.error(path, f"exactly one of {', '.join(keys)} is allowed, got {' and '.join(given)}")
    return None


def _ordered(obj: Any, low: str, high: str, path: str, ctx: _Context) -> None:
    lo, hi = getattr(obj, low), getattr(obj, high)
    if lo is not None and hi is not None and lo > hi:
        ctx.error(_join(path, low), f"{lo:g} is greater than {high} = {hi:g}")


def _check_region(obj: RegionSpec, path: str, ctx: _Context) -> None:
    _exactly_one(obj, EXCLUSIVE_KEYS[RegionSpec][0], path, ctx)


def _check_fixed(obj: FixedSpec, path: str, ctx: _Context) -> None:
    _check_region(obj, path, ctx)
    if obj.minAngle is not None and obj.maxAngle is not None and obj.minAngle > obj.maxAngle:
        ctx.error(_join(path, "maxAngle"), f"{obj.maxAngle:g} is below minAngle {obj.minAngle:g}")


def _check_force(obj: ForceSpec, path: str, ctx: _Context) -> None:
    load = _exactly_one(obj, ("totalForce", "pressure"), path, ctx)
    if load == "totalForce":
        _exactly_one(obj, REGION_KEYS, path, ctx)
    elif load == "pressure":
        if obj.set is None:
            ctx.error(_join(path, "set"), "missing; pressure acts on a triangle set: set = \"NAME\"")
        for key in REGION_KEYS:
            if key != "set" and getattr(obj, key) is not None:
                ctx.error(_join(path, key), "cannot be used with pressure (it acts on the triangle set)")


def _check_material(obj: MaterialSpec, path: str, ctx: _Context) -> None:
    if obj.totalMass is not None and obj.massDensity is not None:
        ctx.error(path, "totalMass and massDensity are both given; give at most one")


def _check_cable(obj: CableSpec, path: str, ctx: _Context) -> None:
    _exactly_one(obj, EXCLUSIVE_KEYS[CableSpec][0], path, ctx)
    if obj.hasPullPoint and obj.pullPoint is None:
        ctx.error(_join(path, "pullPoint"), "missing; required when hasPullPoint = true (the default)")
    if not obj.hasPullPoint:
        if obj.pullPoint is not None:
            ctx.error(_join(path, "pullPoint"), "given but hasPullPoint = false; remove one of the two")
        if obj.n_points < 2:
            ctx.error(_join(path, "hasPullPoint"), f"false needs at least 2 cable points, got {obj.n_points}")
    _ordered(obj, "minForce", "maxForce", path, ctx)


def _check_cavity(obj: CavitySpec, path: str, ctx: _Context) -> None:
    if _exactly_one(obj, EXCLUSIVE_KEYS[CavitySpec][0], path, ctx) == "surface":
        obj.surface_path = ctx.resolve(_join(path, "surface"), obj.surface)
    _ordered(obj, "minPressure", "maxPressure", path, ctx)
    _ordered(obj, "minVolumeGrowth", "maxVolumeGrowth", path, ctx)


def _check_effector(obj: EffectorSpec, path: str, ctx: _Context) -> None:
    if _exactly_one(obj, EXCLUSIVE_KEYS[EffectorSpec][0], path, ctx) is None:
        return
    if obj.effectorGoal is not None and len(obj.effectorGoal) != obj.n_points:
        ctx.error(
            _join(path, "effectorGoal"),
            f"expected one goal per effector point ({obj.n_points}), got {len(obj.effectorGoal)}",
        )


def _check_stacked(obj: StackedMaterialSpec, path: str, ctx: _Context) -> None:
    _exactly_one(obj, EXCLUSIVE_KEYS[StackedMaterialSpec][0], path, ctx)


def _check_unilateral_plane(obj: UnilateralPlaneSpec, path: str, ctx: _Context) -> None:
    if len(obj.indices) != 4:
        ctx.error(_join(path, "indices"), f"expected 4 ids (the constrained point, then three points of the plane), "
                                          f"got {len(obj.indices)}")
    elif len(set(obj.indices)) != 4:
        ctx.error(_join(path, "indices"), f"{show(list(obj.indices))} repeats an id; the four points must differ")
    elif obj.points is not None and max(obj.indices) >= len(obj.points):
        ctx.error(_join(path, "indices"), f"{max(obj.indices)} is not a row of points (0..{len(obj.points) - 1})")


def _check_controller(obj: ControllerSpec, path: str, ctx: _Context) -> None:
    given = _exactly_one(obj, EXCLUSIVE_KEYS[ControllerSpec][0], path, ctx)
    if given == "script":
        obj.script_path = ctx.resolve(_join(path, "script"), obj.script)
        if obj.keyframes is not None:
            ctx.error(_join(path, "keyframes"), "given with script; keyframes go with key")
    elif given == "key" and obj.keyframes is None:
        ctx.error(_join(path, "keyframes"), f"missing; key {show(obj.key)} needs keyframes = [[t0, v0], [t1, v1]]")


def _check_controller_keys(obj: SceneSpec, ctx: _Context) -> None:
    """Each keyframed controller's key is a number or vector key of this scene and its values fit it."""
    from softsim.mechanics.scene.edit import _resolve  # edit reads scenes with this module
    from softsim.mechanics.scene.kinds import Real

    for i, controller in enumerate(obj.controllers):
        if controller.key is None or controller.keyframes is None:
            continue
        path = f"controller[{i}]"
        if controller.key.split(".", 1)[0].split("[", 1)[0] == "controller":
            ctx.error(_join(path, "key"), f"{show(controller.key)}: a controller cannot drive another controller")
            continue
        try:
            _parent, attribute, _toml, kind, _steps, _canonical = _resolve(obj, controller.key)
        except SceneError as error:
            reason = "; ".join(e.split(": ", 2)[-1] for e in error.errors)
            ctx.error(_join(path, "key"), f"{show(controller.key)} is not a key of this scene: {reason}")
            continue
        if not attribute or not isinstance(kind, Real | Vector):
            ctx.error(_join(path, "key"), f"{show(controller.key)} is {kind.description}, not a number or a vector "
                                          "of numbers; keyframes drive numeric values")
            continue
        for j, (_time, value) in enumerate(controller.keyframes):
            try:
                kind.convert(list(value) if isinstance(value, tuple) else value)
            except Invalid as error:
                ctx.error(_join(path, "keyframes"), f"keyframe {j}: the value {show(value)} does not fit "
                                                    f"{controller.key} ({kind.allowed}): {error}")
                break


def _check_body(obj: BodySpec, path: str, ctx: _Context) -> None:
    obj.mesh_path = ctx.resolve(_join(path, "mesh"), obj.mesh)
    if obj.collisionMesh is not None:
        obj.collisionMesh_path = ctx.resolve(_join(path, "collisionMesh"), obj.collisionMesh)


def _check_obstacle(obj: ObstacleSpec, path: str, ctx: _Context) -> None:
    needed = OBSTACLE_KEYS[obj.type]
    for key in needed:
        if getattr(obj, key) is None:
            ctx.error(_join(path, key), f"missing; type {obj.type} needs {', '.join(needed)}")
    used = {k for keys in OBSTACLE_KEYS.values() for k in keys}
    for key in sorted(used - set(needed)):
        if getattr(obj, key) is not None:
            ctx.error(_join(path, key), f"not used by type {obj.type} (it uses {', '.join(needed)})")
    if obj.endTime is not None and obj.endTime < obj.startTime:
        ctx.error(_join(path, "endTime"), f"{obj.endTime:g} is before startTime = {obj.startTime:g}: the obstacle "
                                          "would never move; give an endTime after startTime, or none (it never "
                                          "stops)")


def _check_rigid(obj: RigidSpec, path: str, ctx: _Context) -> None:
    needed = "halfExtents" if obj.shape == "box" else "radius"
    unused = "radius" if obj.shape == "box" else "halfExtents"
    if getattr(obj, needed) is None:
        ctx.error(_join(path, needed), f"missing; shape {obj.shape} needs {needed}")
    if getattr(obj, unused) is not None:
        ctx.error(_join(path, unused), f"not used by shape {obj.shape} (it uses {needed})")
    if obj.alarmDistance is not None and obj.alarmDistance < obj.contactDistance:
        ctx.error(_join(path, "alarmDistance"), f"{obj.alarmDistance:g} is below contactDistance = "
                                                f"{obj.contactDistance:g}")


def _unique(named: list[tuple[str, str]], what: str, ctx: _Context) -> None:
    """``named`` is ``[(path, name)]``; report every name that was already used."""
    first: dict[str, str] = {}
    for path, name in named:
        if name in first:
            ctx.error(_join(path, "name"), f"duplicate {what} name {show(name)} (also used by {first[name]})")
        else:
            first[name] = path


def _check_scene(obj: SceneSpec, path: str, ctx: _Context) -> None:
    _unique([(f"body[{i}]", b.name) for i, b in enumerate(obj.bodies)], "body", ctx)
    _unique([(f"obstacle[{i}]", o.name) for i, o in enumerate(obj.obstacles)], "obstacle", ctx)
    # Actuator and effector names become CSV column prefixes (NAME.QUANTITY), so they are unique scene-wide.
    actuators = []
    for i, body in enumerate(obj.bodies):
        for key, items in (("cable", body.cables), ("cavity", body.cavities), ("effector", body.effectors),
                           ("unilateralPlane", body.unilateralPlanes), ("centerEffector", body.centerEffectors)):
            actuators += [(f"body[{i}].{key}[{j}]", item.name) for j, item in enumerate(items)]
    _unique(actuators, "actuator/effector", ctx)
    # a rigid body's outputs are NAME.x, NAME.vx...: its name is unique among them and the actuators too
    taken = {name: path for path, name in actuators}
    _unique([(f"rigid[{i}]", r.name) for i, r in enumerate(obj.rigids)], "rigid body", ctx)
    for i, rigid in enumerate(obj.rigids):
        if rigid.name in taken:
            ctx.error(f"rigid[{i}].name", f"{show(rigid.name)} is already the name of {taken[rigid.name]} (output "
                                          f"columns NAME.QUANTITY must be unique)")

    _unique([(f"controller[{i}]", c.name) for i, c in enumerate(obj.controllers)], "controller", ctx)
    _check_controller_keys(obj, ctx)
    _check_collision(obj, ctx)
    inverse = obj.solver.inverse
    if inverse is not None and inverse.active and obj.scene.mode == "dynamic":
        ctx.error("solver.inverse", "the inverse model runs in static mode; set scene.mode = \"static\" or "
                                    "solver.inverse.active = false")
    if inverse is not None and inverse.active and obj.bodies and not any(
            b.cables or b.cavities or any(f.actuated for f in b.fixed) for b in obj.bodies):
        ctx.warn("solver.inverse", "inverse mode without a [[body.cable]], a [[body.cavity]] or an actuated "
                                   "[[body.fixed]] servo: nothing to solve for")
    if inverse is None or not inverse.active:
        for i, body in enumerate(obj.bodies):
            tracked = [("effector", j, e) for j, e in enumerate(body.effectors)]
            tracked += [("centerEffector", j, e) for j, e in enumerate(body.centerEffectors)]
            for key, j, effector in tracked:
                if effector.effectorGoal is not None:
                    ctx.warn(f"body[{i}].{key}[{j}].effectorGoal",
                             "the inverse model is off (no [solver.inverse], or active = false): nothing steers "
                             f"the effector to this goal, which only gives the output {effector.name}.distance; "
                             "add [solver.inverse] to drive the actuators to it")
    gravity = any(obj.scene.gravity)
    for i, body in enumerate(obj.bodies):
        massless = body.material.totalMass is None and body.material.massDensity is None
        if massless and obj.scene.mode == "dynamic":
            ctx.error(f"body[{i}].material", "scene.mode = \"dynamic\" needs totalMass or massDensity")
        elif massless and gravity:
            ctx.warn(f"body[{i}].material", "no totalMass or massDensity: gravity has no effect on this body")


#: What the scene-wide rules (``_check_scene``: unique names, the controllers' keys, the collision table, inverse
#: mode, mass in dynamic mode, the warnings) read besides the items' lists: these keys wherever they are, and every
#: key of these tables. An edit of one of them is validated by reading the whole scene again; any other key's value
#: is validated on its own with its table's rules (mechanics.scene.edit). A new rule in ``_check_scene`` that reads
#: another key names it here.
SCENE_RULE_KEYS = frozenset({"name", "mode", "gravity", "units", "effectorGoal", "totalMass", "massDensity"})
SCENE_RULE_TABLES = frozenset({"scene", "controller", "collision", "inverse"})


def _check_collision(obj: SceneSpec, ctx: _Context) -> None:
    """The collision table names existing bodies, and each pair once."""
    collision = obj.collision
    if collision is None:
        return
    names = [b.name for b in obj.bodies]
    groups = {b.name: set(b.collisionGroup or ()) for b in obj.bodies}
    for i, name in enumerate(collision.bodies or ()):
        if name not in names:
            ctx.error(f"collision.bodies[{i}]", f"no body named {show(name)} (bodies: {', '.join(names) or 'none'})")
    seen = set()
    for i, pair in enumerate(collision.pairs):
        for key in ("bodyA", "bodyB"):
            if getattr(pair, key) not in names:
                ctx.error(f"collision.pair[{i}].{key}", f"no body named {show(getattr(pair, key))} "
                                                         f"(bodies: {', '.join(names) or 'none'})")
        key = frozenset((pair.bodyA, pair.bodyB))
        if key in seen:
            ctx.error(f"collision.pair[{i}]", f"the pair {pair.bodyA} - {pair.bodyB} is given twice")
        seen.add(key)
        if pair.bodyA == pair.bodyB and not collision.selfCollision:
            ctx.error(f"collision.pair[{i}]", f"a pair of {pair.bodyA} with itself needs selfCollision = true")
        shared = groups.get(pair.bodyA, set()) & groups.get(pair.bodyB, set())
        if pair.bodyA != pair.bodyB and shared:
            ctx.warn(f"collision.pair[{i}]", f"{pair.bodyA} and {pair.bodyB} share the collisionGroup "
                                             f"{sorted(shared)[0]}, so they never touch: this friction is unused")


_CHECKS: dict[type, Callable[[Any, str, _Context], None]] = {
    RegionSpec: _check_region,
    FixedSpec: _check_fixed,
    RigidGroupSpec: _check_region,
    StackedMaterialSpec: _check_stacked,
    UnilateralPlaneSpec: _check_unilateral_plane,
    ControllerSpec: _check_controller,
    ForceSpec: _check_force,
    MaterialSpec: _check_material,
    CableSpec: _check_cable,
    CavitySpec: _check_cavity,
    EffectorSpec: _check_effector,
    BodySpec: _check_body,
    ObstacleSpec: _check_obstacle,
    RigidSpec: _check_rigid,
    SceneSpec: _check_scene,
}


# --- entry points ---


def check_value(table: Any, attribute: str, kind: Any, raw: Any, *, path: str, table_path: str, source: str,
                base_dir: Path, check_files: bool) -> Any:
    """One value of a table checked as the loader checks it when it reads the whole scene: ``raw`` (a TOML value)
    converted by its ``kind``, then the table's own rules (``_CHECKS``: exclusive keys, min <= max, files that
    exist) on a shallow copy of ``table`` holding it. ``path`` is the key's path and ``table_path`` the table's
    as the messages name them. Returns the checked copy of the table (derived values such as ``mesh_path``
    set); ``table`` is not changed. The scene-wide rules are not run (see SCENE_RULE_KEYS).

    Raises:
        SceneError: the loader's message for that value, one line per problem.
    """
    ctx = _Context(_label(source), base_dir, check_files, "untitled")
    try:
        value = kind.convert(raw)
    except Invalid as error:
        ctx.error(path, str(error))
        raise SceneError(ctx.errors) from None
    candidate = copy.copy(table)
    setattr(candidate, attribute, value)
    check = _CHECKS.get(type(table))
    if check is not None:
        check(candidate, table_path, ctx)
    if ctx.errors:
        raise SceneError(ctx.errors)
    return candidate


def _label(source: str) -> str:
    return source if source.startswith("<") else Path(source).name


def parse_data(
    data: dict[str, Any],
    *,
    source: str = "<string>",
    base_dir: Path | str | None = None,
    check_files: bool = True,
) -> SceneSpec:
    """Validate decoded TOML data (nested dicts and lists, as ``tomllib`` returns) into a :class:`SceneSpec`.

    Args:
        data: the decoded scene.
        source: the file name used in messages (``"<string>"`` when there is no file).
        base_dir: directory relative paths are resolved against (default: the current directory).
        check_files: check that the mesh and cavity surface files exist.

    Raises:
        SceneError: listing every problem, one per line.
    """
    base = Path.cwd() if base_dir is None else Path(base_dir)
    base = base.resolve()
    default_name = Path(source).stem if not source.startswith("<") else "untitled"
    ctx = _Context(_label(source), base, check_files, default_name)
    spec = _parse_table(SceneSpec, data, "", ctx)
    if ctx.errors:
        raise SceneError(ctx.errors)
    spec.source = source
    spec.base_dir = base
    spec.warnings = ctx.warnings
    spec.files_checked = check_files
    for warning in ctx.warnings:
        logger.warning("%s", warning)
    return spec


def _too_many_digits(text: str) -> str:
    """The message for an integer longer than Python converts (tomllib raises a bare ValueError): its line and
    key when they can be found."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    match = re.search(rf"[0-9_]{{{limit + 1},}}", text)
    where = ""
    if match is not None:
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start:match.start()]
        key = before.partition("=")[0].strip() if "=" in before else ""
        where = f"line {text.count(chr(10), 0, line_start) + 1}{f', {key}' if key else ''}: "
    return (f"{where}an integer of more than {limit} digits, far more than any scene value needs; write the "
            f"number with an exponent (e.g. 1e30) or correct it")


def parse_scene(
    text: str,
    *,
    source: str = "<string>",
    base_dir: Path | str | None = None,
    check_files: bool = True,
) -> SceneSpec:
    """Parse and validate scene text (TOML). See :func:`parse_data` for the arguments.

    Raises:
        SceneError: a TOML syntax error (with its line and column) or every validation problem.
    """
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark, as some Windows editors write
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SceneError([f"{_label(source)}: TOML syntax error: {error}"]) from None
    except ValueError:  # an integer of more digits than Python converts (sys.int_info)
        raise SceneError([f"{_label(source)}: {_too_many_digits(text)}"]) from None
    except RecursionError:  # tomllib reads nested tables and arrays recursively
        raise SceneError([f"{_label(source)}: tables or arrays nested too deeply to read "
                          f"(a scene nests a few levels)"]) from None
    try:
        return parse_data(data, source=source, base_dir=base_dir, check_files=check_files)
    except RecursionError:
        raise SceneError([f"{_label(source)}: values nested too deeply to check "
                          f"(a scene nests a few levels)"]) from None


def load_scene(path: Path | str, *, check_files: bool = True) -> SceneSpec:
    """Read and validate the scene file ``path``; relative paths in it are relative to its directory.

    Only a regular file of at most :data:`meshes.files.MAX_SCENE_FILE_BYTES` (16 MiB) is read: a directory,
    a device such as ``/dev/zero`` or a named pipe is refused before reading.

    Raises:
        SceneError: the file cannot be read, is not valid TOML (nested too deeply included), or does not
            follow the scene format.
    """
    path = Path(path)
    try:
        text = read_input_bytes(path, max_bytes=MAX_SCENE_FILE_BYTES, what="scene").decode("utf-8")
    except InputFileError as error:
        raise SceneError([f"{path.name}: cannot read the scene file {path}: it {error.reason}"]) from None
    except UnicodeDecodeError as error:
        raise SceneError([f"{path.name}: cannot read the scene file {path}: not UTF-8 text ({error})"]) from None
    return parse_scene(text, source=str(path), base_dir=path.parent, check_files=check_files)
