"""Write a :class:`~mechanics.scene.schema.SceneSpec` back to TOML, keeping the user's file as it was written.

A scene read from a file is saved into that file's document (tomlkit): only the values that changed are
rewritten, keys and tables that were added or removed are added or removed, and the comments, the key order
and the layout stay. Every value is written explicitly (defaults included), so a saved scene reads back to an
equal ``SceneSpec`` whatever the defaults of a later version. A path that still resolves to the same file from
the new file's directory is kept as it was written; else it is rewritten relative to that directory, or absolute
when the relative path would climb more than MAX_CLIMB directories up (see ``_relative_path``).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from softsim.mechanics.scene.kinds import FilePath
from softsim.mechanics.scene.schema import SceneSpec, Table, TableList, schema_fields
from softsim.meshes.files import write_text_atomically

__all__ = ["to_data", "dump_scene", "save_scene"]

#: Region keys whose small tables are written inline (``sphere = { center = [...], radius = 1.0 }``).
_INLINE_KEYS = {"sphere", "halfspace"}
#: a rewritten relative path may climb this many directories up; further, the path is written absolute
MAX_CLIMB = 2
_HEADER = "softsim scene: every key, its range, unit and default in docs/scene-format.md"


def _relative_path(text: str, resolved: Path, new_base: Path) -> str:
    """``text`` when it still names the file from ``new_base``; else the path relative to ``new_base`` when it
    climbs at most MAX_CLIMB directories (or as many as ``text`` did): a scene saved within its project; else
    absolute (a scene saved far away, e.g. in /tmp: ``/home/me/robot/meshes/finger.vtu``, not
    ``../../home/me/robot/meshes/finger.vtu``)."""
    if (new_base / Path(text).expanduser()).resolve() == resolved:
        return text
    try:
        relative = Path(os.path.relpath(resolved, new_base))
    except ValueError:  # another drive (Windows): no relative path exists
        return resolved.as_posix()
    if relative.parts.count("..") > max(MAX_CLIMB, Path(text).parts.count("..")):
        return resolved.as_posix()
    return relative.as_posix()


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


def _document(spec: SceneSpec) -> tomlkit.TOMLDocument:
    """The document the scene was read from, or a new one with a header."""
    try:
        return tomlkit.parse(Path(spec.source).read_text(encoding="utf-8"))
    except (OSError, ValueError, tomlkit.exceptions.TOMLKitError):
        document = tomlkit.document()
        document.add(tomlkit.comment(_HEADER))
        return document


def _merge(table, data: dict[str, Any]) -> None:
    """Make the tomlkit ``table`` hold ``data``: changed values replaced in place, new keys appended, keys that
    ``data`` lacks removed; sub-tables and arrays of tables of the same length merged item by item."""
    for key in [k for k in table if k not in data]:
        del table[key]
    for key, value in data.items():
        old = table.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            _merge(old, value)
        elif _is_table_list(value) and isinstance(old, list) and len(old) == len(value) and _is_table_list(old):
            for old_item, item in zip(old, value):
                _merge(old_item, item)
        elif isinstance(value, dict) and key in _INLINE_KEYS:
            inline = tomlkit.inline_table()
            inline.update(value)
            table[key] = inline
        elif _is_table_list(value):
            array = tomlkit.aot()
            for item in value:
                new = tomlkit.table()
                _merge(new, item)
                array.append(new)
            table[key] = array
        elif isinstance(value, dict):
            new = tomlkit.table()
            _merge(new, value)
            table[key] = new
        elif old is None or _plain(old) != value:
            table[key] = value


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def dump_scene(spec: SceneSpec, *, base_dir: Path | str | None = None) -> str:
    """The scene as TOML text, in the document it was read from when there is one. Paths are relative to
    ``base_dir`` when given (the directory of the file the text will be written to), else written as they
    were read."""
    new_base = None if base_dir is None else Path(base_dir).resolve()
    document = _document(spec)
    _merge(document, to_data(spec, new_base=new_base))
    return tomlkit.dumps(document)


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
