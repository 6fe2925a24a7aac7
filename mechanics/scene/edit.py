"""Read and change scene values by key path, with the names of the file (``softsim run --set``, GUI panels).

A key path is the TOML key path with bodies, actuators, effectors and obstacles addressed by name or by index:
``solver.constraint.spectralCorrectionFactor``, ``body.finger.cable.cable.value``, ``body[0].cable[0].value``,
``body.finger.material.region[0].youngModulus``, ``body.finger.fixed[0].sphere.radius``,
``obstacle.floor.friction``. Tables without names (``fixed``, ``force``, ``material.region``) take an index.

``set_value`` validates with exactly the loader's rules. One value of a key that no scene-wide rule reads (most
keys: a material's, an actuator's value or bounds, a solver setting; see ``load.SCENE_RULE_KEYS``) is checked
on its own: its kind, then its table's rules on a copy of the table holding it, so the cost does not grow with the
scene. Any other edit (several values, a name, a key of ``[scene]``, a controller, an exclusive key, an optional
table not set yet) writes the scene to TOML data, replaces the values and reads the whole scene again. Only
when that succeeds is the value stored into the spec (in place; objects the caller holds stay valid). Values may
be Python values or strings as typed on a command line: ``"0.8"``, ``"[0, 1, 0]"``, ``"true"``, ``"force"`` (strings
are read as TOML values; a string key takes the text as it is). ``None`` (or ``""`` from a command line) unsets an
optional key.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Any

from softsim.mechanics.scene.kinds import Invalid, Kind, suggest
from softsim.mechanics.scene.load import _PREPARE, SCENE_RULE_KEYS, SCENE_RULE_TABLES, check_value, parse_data
from softsim.mechanics.scene.save import to_data
from softsim.mechanics.scene.schema import EXCLUSIVE_KEYS, SceneError, SceneSpec, Table, TableList, schema_fields

__all__ = ["Actuator", "Address", "actuators", "get_value", "resolve", "set_value", "set_values", "list_parameters",
           "undo_point", "validate_spec"]

_SEGMENT = re.compile(r"^([^.\[\]]+)((?:\[\d+\])*)$")


def _error(spec: SceneSpec, path: str, message: str) -> SceneError:
    label = spec.source if spec.source.startswith("<") else spec.source.replace("\\", "/").rsplit("/", 1)[-1]
    return SceneError([f"{label}: {path}: {message}"])


def _tokens(spec: SceneSpec, path: str) -> list[tuple[str, int | None]]:
    """``"body[0].cable.c1.value"`` -> ``[("body", 0), ("cable", None), ("c1", None), ("value", None)]``."""
    tokens: list[tuple[str, int | None]] = []
    for segment in path.strip().split("."):
        match = _SEGMENT.match(segment)
        if not match:
            raise _error(spec, path, f"malformed segment {segment!r} (use key, key[index] or a name)")
        indices = [int(i) for i in re.findall(r"\[(\d+)\]", match.group(2))]
        if len(indices) > 1:
            raise _error(spec, path, f"only one index per segment is allowed in {segment!r}")
        tokens.append((match.group(1), indices[0] if indices else None))
    return tokens


def _field(obj: Any, key: str) -> tuple[str, str, Kind] | None:
    for toml_key, attribute, kind, alias, _required in schema_fields(type(obj)):
        if key in (toml_key, alias):
            return toml_key, attribute, kind
    return None


def _resolve(spec: SceneSpec, path: str) -> tuple[Any, str, str, Kind, list[tuple[str, int | None]], str]:
    """Walk ``path``; returns ``(parent, attribute, toml_key, kind, canonical steps, canonical path)`` of the
    addressed value. Canonical steps address list items by index; they are also the TOML data path."""
    tokens = _tokens(spec, path)
    obj: Any = spec
    steps: list[tuple[str, int | None]] = []
    position = 0
    while True:
        key, index = tokens[position]
        position += 1
        found = _field(obj, key)
        where = ".".join(f"{k}[{i}]" if i is not None else k for k, i in steps)
        if found is None:
            known = [k for k, *_ in schema_fields(type(obj))]
            hint = suggest(key, known)
            hint = hint or "; allowed: " + ", ".join(known)
            raise _error(spec, path, f"unknown key {key!r} in {where or 'the scene'}{hint}")
        toml_key, attribute, kind = found
        value = getattr(obj, attribute)
        if isinstance(kind, TableList):
            if index is None:
                if position == len(tokens):
                    message = f"{toml_key} is a list; address an item by name or index ({toml_key}[0])"
                    raise _error(spec, path, message)
                name = tokens[position][0]
                names = [getattr(item, "name", None) for item in value]
                if tokens[position][1] is not None or name not in names:
                    available = ", ".join(n for n in names if n) or "none"
                    raise _error(spec, path, f"no {toml_key} named {name!r} (names: {available})")
                index = names.index(name)
                position += 1
            elif not 0 <= index < len(value):
                raise _error(spec, path, f"index {index} is out of range: {len(value)} {toml_key} item(s)")
            steps.append((toml_key, index))
            obj = value[index]
        elif index is not None:
            raise _error(spec, path, f"{toml_key} is not a list; remove [{index}]")
        else:
            steps.append((toml_key, None))
            if position == len(tokens) or not isinstance(kind, Table):
                if position != len(tokens):
                    raise _error(spec, path, f"{toml_key} is a value, not a table")
                canonical = ".".join(f"{k}[{i}]" if i is not None else k for k, i in steps)
                return obj, attribute, toml_key, kind, steps, canonical
            if value is None:
                try:  # an optional table that is not set (``[solver.inverse]``): its keys have defaults
                    value = kind.cls()
                except TypeError:
                    raise _error(spec, path, f"{toml_key} is not set; set the whole table first") from None
            obj = value
        if position == len(tokens):
            canonical = ".".join(f"{k}[{i}]" if i is not None else k for k, i in steps)
            return obj, "", "", kind, steps, canonical


@dataclasses.dataclass(frozen=True)
class Address:
    """Where a key path points: the spec object holding the value (``table``), its TOML ``key``, and the
    canonical ``steps`` from the root (``[("body", 0), ("cable", 1), ("value", None)]``)."""

    table: Any
    key: str
    steps: tuple[tuple[str, int | None], ...]

    def index(self, key: str) -> int | None:
        """The list index taken at ``key`` (``address.index("body")``), or None."""
        return next((i for k, i in self.steps if k == key), None)


def resolve(spec: SceneSpec, path: str) -> Address:
    """The :class:`Address` of ``path`` (SceneError for a path that names no key)."""
    parent, _attribute, key, _kind, steps, _canonical = _resolve(spec, path)
    return Address(parent, key, tuple(steps))


def get_value(spec: SceneSpec, path: str) -> Any:
    """The value at ``path`` (a float, tuple, string, ... or a whole table/item as its dataclass).

    Raises:
        SceneError: the path names no key of the scene.
    """
    parent, attribute, _key, _kind, _steps, _canonical = _resolve(spec, path)
    return getattr(parent, attribute) if attribute else parent


def _raw(value: Any, kind: Kind) -> Any:
    """A command-line string read as a TOML value (unless the key is a string); arrays to lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_data(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, tuple):
        value = [list(v) if isinstance(v, tuple) else v for v in value]
    if isinstance(value, str) and kind.text and value.strip()[:1] in ('"', "'"):
        quoted = _toml_value(value)  # a string key given as a TOML string: --set scene.units='"SI"'
        return quoted if isinstance(quoted, str) else value
    if isinstance(value, str) and not kind.text and not isinstance(kind, Table):
        try:
            data = tomllib.loads(f"value = {value}")
        except tomllib.TOMLDecodeError:
            return value  # the kind's own check reports it: expected a number, got "abc"
        except RecursionError:
            raise Invalid("arrays nested too deeply to read") from None
        except ValueError:  # an integer longer than Python converts
            raise Invalid(f"a number of {sum(c.isdigit() for c in value)} digits, far more than any scene value "
                          "needs; write it with an exponent (e.g. 1e30) or correct it") from None
        if list(data) != ["value"]:  # "5\n[x]\ny = 1" reads as value = 5 followed by a table
            raise Invalid(f"{value!r} is one value followed by more text; give the value alone")
        return data["value"]
    return value


def _toml_value(text: str) -> Any:
    """``text`` read as one TOML value, or None when it is not exactly one."""
    try:
        data = tomllib.loads(f"value = {text}")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return data["value"] if list(data) == ["value"] else None


def set_value(spec: SceneSpec, path: str, value: Any) -> None:
    """Set the value at ``path`` in ``spec`` (in place) after validating it like the loader does.

    Setting one key of a group of which only one may be given (a region's ``box``/``sphere``/..., a cable's
    ``points``/``indices``, see ``schema.EXCLUSIVE_KEYS``) unsets the others of its group.

    Raises:
        SceneError: unknown path, or an invalid value (the message names the key and the allowed range);
            ``spec`` is then unchanged.
    """
    set_values(spec, {path: value})


def undo_point(spec: SceneSpec, path: str) -> Callable[[], None]:
    """A function that puts ``spec`` back as it is now after :func:`set_value` at ``path`` (and whatever was done
    with what it changed): it keeps the fields of every table from ``spec`` down to the key's own table, which
    are all that an edit changes (it replaces field values and the spec's warnings, and never changes a value
    in place). A copy of the whole scene would cost a slider edit far more (benchmarks/RESULTS_equilibrium.md).

    Raises:
        SceneError: unknown path (as :func:`set_value` does).
    """
    _parent, _attribute, _toml_key, _kind, steps, _canonical = _resolve(spec, path)
    tables: list[Any] = [spec]
    for key, index in steps[:-1]:
        child = _child(tables[-1], key, index)
        if child is None:  # an optional table not set yet: the edit sets its parent's field
            break
        tables.append(child)
    saved = [(table, dict(vars(table))) for table in tables]

    def restore() -> None:
        for table, fields in saved:
            vars(table).clear()
            vars(table).update(fields)

    return restore


def set_values(spec: SceneSpec, values: Mapping[str, Any]) -> None:
    """Set several values at once, validated together (e.g. an obstacle's ``type`` with its new keys; pass
    ``None`` to unset the keys of the old type). All or nothing: on error ``spec`` is unchanged.

    Raises:
        SceneError: as :func:`set_value`, one line per problem.
    """
    if len(values) == 1:
        (path, value), = values.items()
        if _set_alone(spec, path, value):
            return
    _set_by_reading_again(spec, values)


def _set_alone(spec: SceneSpec, path: str, value: Any) -> bool:
    """Set one value validated on its own (``load.check_value``) when no scene-wide rule involves it; False
    (nothing done) when the whole scene must be read again for it."""
    parent, attribute, toml_key, kind, steps, canonical = _resolve(spec, path)
    if (not attribute or isinstance(kind, Table | TableList) or value is None or type(parent) in _PREPARE
            or (isinstance(value, str) and value == "" and not kind.text)
            or toml_key in SCENE_RULE_KEYS or any(key in SCENE_RULE_TABLES for key, _ in steps[:-1])
            or any(toml_key in group for group in EXCLUSIVE_KEYS.get(type(parent), ()))):
        return False
    table: Any = spec
    for key, index in steps[:-1]:  # an optional table that is not set yet is made by reading the scene again
        table = _child(table, key, index)
        if table is None:
            return False
    user_path = path.strip()
    table_path = ".".join(f"{k}[{i}]" if i is not None else k for k, i in steps[:-1])
    try:
        raw = _raw(value, kind)
    except Invalid as error:
        raise _error(spec, user_path, str(error)) from None
    try:
        checked = check_value(parent, attribute, kind, raw, path=canonical, table_path=table_path,
                              source=spec.source, base_dir=spec.base_dir, check_files=spec.files_checked)
    except SceneError as error:  # named as the caller wrote the key, as the reading of the whole scene does
        raise SceneError([m.replace(f": {canonical}:", f": {user_path}:", 1) for m in error.errors]) from None
    for f in dataclasses.fields(parent):  # the value and what the table's check derived from it (mesh_path)
        new_value = getattr(checked, f.name)
        if new_value is not getattr(parent, f.name) and new_value != getattr(parent, f.name):
            setattr(parent, f.name, new_value)
    return True


def _set_by_reading_again(spec: SceneSpec, values: Mapping[str, Any]) -> None:
    """``set_values`` by the whole scene written to TOML data, changed and read again with the loader."""
    data = to_data(spec)
    edits = []
    for path, value in values.items():
        parent, attribute, toml_key, kind, steps, canonical = _resolve(spec, path)
        if not attribute or isinstance(kind, TableList):
            raise _error(spec, path, "a table or list cannot be set as a whole; set its keys")
        table = data
        for key, index in steps[:-1]:
            table = table.setdefault(key, {}) if index is None else table[key][index]
        if value is None or (isinstance(value, str) and value == "" and not kind.text):
            table.pop(toml_key, None)
        else:
            try:
                table[toml_key] = _raw(value, kind)
            except Invalid as error:
                raise _error(spec, path.strip(), str(error)) from None
            for group in EXCLUSIVE_KEYS.get(type(parent), ()):
                if toml_key in group:
                    for other in group:
                        if other != toml_key:
                            table.pop(other, None)
        edits.append((path.strip(), canonical, steps, parent))
    try:
        new = parse_data(data, source=spec.source, base_dir=spec.base_dir, check_files=spec.files_checked)
    except SceneError as error:
        messages = []
        for message in error.errors:
            for user_path, canonical, _steps, _parent in edits:
                message = message.replace(f": {canonical}:", f": {user_path}:", 1)
            messages.append(message)
        raise SceneError(messages) from None
    for _path, _canonical, steps, parent in edits:
        if _attach_new_table(spec, new, steps):
            continue
        new_parent: Any = new
        for key, index in steps[:-1]:
            new_parent = _child(new_parent, key, index)
        # Copy the values that changed (the edited ones, keys of its exclusive group, derived ones such as
        # mesh_path) into the existing object, so that references held by the caller stay valid.
        for f in dataclasses.fields(parent):
            new_value = getattr(new_parent, f.name)
            if isinstance(new_value, list) or new_value == getattr(parent, f.name):
                continue
            setattr(parent, f.name, new_value)
    spec.warnings = new.warnings


def _attach_new_table(spec: SceneSpec, new: SceneSpec, steps) -> bool:
    """When ``steps`` pass through an optional table that ``spec`` does not have, store the new spec's table in
    its place and return True (the edit created it)."""
    old, fresh = spec, new
    for key, index in steps[:-1]:
        old_child, fresh_child = _child(old, key, index), _child(fresh, key, index)
        if old_child is None:
            setattr(old, _field(old, key)[1], fresh_child)
            return True
        old, fresh = old_child, fresh_child
    return False


def _child(obj: Any, key: str, index: int | None) -> Any:
    found = _field(obj, key)
    assert found is not None
    value = getattr(obj, found[1])
    return value if index is None else value[index]


@dataclasses.dataclass(frozen=True)
class Actuator:
    """A cable or cavity of a scene: its body's name, ``kind`` ("cable" or "cavity"), its index in the body's list
    and its spec item (a ``CableSpec`` or ``CavitySpec``)."""

    body: str
    kind: str
    index: int
    item: Any

    @property
    def value_path(self) -> str:
        """The key path of its value (``body.finger.cable.cable.value``)."""
        return f"body.{self.body}.{self.kind}.{self.item.name}.value"


def actuators(spec: SceneSpec, body: str | None = None):
    """Every cable and cavity of ``spec`` (of the body called ``body`` only, when given) as an :class:`Actuator`:
    body by body, cables before cavities (the Actuators panel's order)."""
    for entry in spec.bodies:
        if body is None or entry.name == body:
            for kind, items in (("cable", entry.cables), ("cavity", entry.cavities)):
                for index, item in enumerate(items):
                    yield Actuator(entry.name, kind, index, item)


def list_parameters(spec: SceneSpec) -> list[tuple[str, Any]]:
    """Every value of the scene as ``(key path, value)``, items addressed by name where they have one
    (``body.finger.cable.cable.value``); unset optional keys are listed with ``None``."""
    out: list[tuple[str, Any]] = []
    _walk(spec, "", out)
    return out


def _walk(obj: Any, prefix: str, out: list[tuple[str, Any]]) -> None:
    for key, attribute, kind, _alias, _required in schema_fields(type(obj)):
        value = getattr(obj, attribute)
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(kind, Table):
            if value is None:
                out.append((path, None))
            else:
                _walk(value, path, out)
        elif isinstance(kind, TableList):
            for i, item in enumerate(value):
                name = getattr(item, "name", None)
                _walk(item, f"{path}.{name}" if name else f"{path}[{i}]", out)
        else:
            out.append((path, value))


def validate_spec(spec: SceneSpec) -> SceneSpec:
    """Check a spec built or changed in Python with the loader's rules; returns a validated copy.

    Raises:
        SceneError: every problem, as for a file.
    """
    data = copy.deepcopy(to_data(spec))
    return parse_data(data, source=spec.source, base_dir=spec.base_dir, check_files=spec.files_checked)
