"""Write a :class:`~mechanics.scene.schema.SceneSpec` back to TOML (by hand: no TOML-writer dependency).

Every value is written explicitly (defaults included), so a saved scene reads back to an equal
``SceneSpec`` whatever the defaults of a later version. Paths are rewritten relative to the directory of the
new file; a path that still resolves to the same file from there is kept as it was written.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from softsim.mechanics.scene.kinds import FilePath
from softsim.mechanics.scene.schema import SceneSpec, Table, TableList, schema_fields
from softsim.meshes.files import write_text_atomically

__all__ = ["to_data", "dump_scene", "save_scene"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
#: Region keys whose small tables are written inline (``sphere = { center = [...], radius = 1.0 }``).
_INLINE_KEYS = {"sphere", "halfspace"}
_HEADER = "# softsim scene: every key, its range and default in softsim's mechanics/scene/schema.py\n"


def _relative_path(text: str, resolved: Path, new_base: Path) -> str:
    if (new_base / Path(text).expanduser()).resolve() == resolved:
        return text
    try:
        return Path(os.path.relpath(resolved, new_base)).as_posix()
    except ValueError:  # another drive (Windows): no relative path exists
        return resolved.as_posix()


def to_data(obj: Any, *, old_base: Path | None = None, new_base: Path | None = None) -> Any:
    """The TOML data (dicts, lists, scalars) of a scene dataclass; ``None`` (unset options) is left out.

    File paths are written as they were (``new_base`` is ``None``) or relative to ``new_base``; ``old_base``
    is the directory they are relative to now (used when the resolved path was not stored).
    """
    if isinstance(obj, SceneSpec):
        old_base = obj.base_dir
    data: dict[str, Any] = {}
    for key, attribute, kind, _alias, _required in schema_fields(type(obj)):
        value = getattr(obj, attribute)
        if value is None:
            continue
        if isinstance(kind, Table):
            data[key] = to_data(value, old_base=old_base, new_base=new_base)
        elif isinstance(kind, TableList):
            if not value:
                continue
            data[key] = [to_data(item, old_base=old_base, new_base=new_base) for item in value]
        elif isinstance(kind, FilePath) and new_base is not None:
            resolved = getattr(obj, f"{attribute}_path", None)
            if resolved is None:
                resolved = ((old_base or Path.cwd()) / Path(value).expanduser()).resolve()
            data[key] = _relative_path(value, Path(resolved), new_base)
        else:
            data[key] = kind.to_toml(value)
    return data


def _string(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key_text(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _value(value: Any) -> str:
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
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key_text(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _emit(data: dict[str, Any], header: str, array: bool, lines: list[str], inline: set[str]) -> None:
    """Append the table ``data`` under ``[header]`` (``[[header]]`` when ``array``) to ``lines``."""
    plain = {k: v for k, v in data.items() if k in inline or not (isinstance(v, dict) or _is_table_list(v))}
    if header and (plain or array):
        lines.append("")
        lines.append(f"[[{header}]]" if array else f"[{header}]")
    for key, value in plain.items():
        lines.append(f"{_key_text(key)} = {_value(value)}")
    for key, value in data.items():
        if key in plain:
            continue
        child = f"{header}.{_key_text(key)}" if header else _key_text(key)
        if isinstance(value, dict):
            _emit(value, child, False, lines, inline)
        else:
            for item in value:
                _emit(item, child, True, lines, inline)


def dump_scene(spec: SceneSpec, *, base_dir: Path | str | None = None) -> str:
    """The scene as TOML text. Paths are relative to ``base_dir`` when given (the directory of the file the
    text will be written to), else written as they were read."""
    new_base = None if base_dir is None else Path(base_dir).resolve()
    data = to_data(spec, new_base=new_base)
    lines: list[str] = [_HEADER.rstrip("\n")]
    _emit(data, "", False, lines, _INLINE_KEYS)
    return "\n".join(lines).lstrip("\n") + "\n"


def save_scene(spec: SceneSpec, path: Path | str) -> None:
    """Write ``spec`` to ``path`` atomically (:func:`meshes.files.atomic_path`: a temporary file in the same
    directory, then ``os.replace``), flushed to disk.

    An existing file keeps its mode; a symbolic link stays a link and its target gets the new text. Paths in
    the scene are written relative to ``path``'s directory (where :func:`load_scene` resolves them when the
    file is opened by that name). ``spec`` itself is not changed.
    """
    path = Path(path)
    directory = path.parent.resolve()
    text = dump_scene(spec, base_dir=directory)
    tomllib.loads(text)  # the writer's own check: never replace a scene with text that does not parse
    write_text_atomically(path, text, durable=True, newline="\n")
