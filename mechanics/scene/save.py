"""Write a :class:`~mechanics.scene.schema.SceneSpec` back to TOML, keeping the user's file as it was written.

A scene read from a file is saved into that file's document (tomlkit): only the values that changed are
rewritten, keys and tables that were added or removed are added or removed, and the comments, the key order
and the layout stay. "Changed" is measured against the file as it reads now: a key the file leaves out is
written only when its value differs from the one the file gives it (its default), and a key the file has
keeps its text when its value is the file's (``position = [-100, 7.5, 7.5]`` is not rewritten as the
equivalent ``[[-100.0, 7.5, 7.5]]``). A scene without a file (or whose file no longer reads) is written whole,
every value explicit. Either way the saved scene reads back to an equal ``SceneSpec``. A path that still
resolves to the same file from the new file's directory is kept as it was written; else it is rewritten
relative to that directory, or absolute when the relative path would climb more than MAX_CLIMB directories up
(see ``_relative_path``).
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


def _document(spec: SceneSpec) -> tuple[tomlkit.TOMLDocument, Any]:
    """The document the scene was read from and that file's data as it reads now (defaults filled in, paths as
    written in it: a path the new location must rewrite differs from it, so it is written); or a new document
    with a header and no data (_UNKNOWN)."""
    from softsim.mechanics.scene.load import load_scene

    try:
        document = tomlkit.parse(Path(spec.source).read_text(encoding="utf-8"))
    except (OSError, ValueError, tomlkit.exceptions.TOMLKitError):
        document = tomlkit.document()
        document.add(tomlkit.comment(_HEADER))
        return document, _UNKNOWN
    try:
        original = to_data(load_scene(spec.source, check_files=False))
    except (OSError, ValueError):  # the file no longer reads as a scene: every value is written
        original = _UNKNOWN
    return document, original


_UNKNOWN = object()


def _merge(table, data: dict[str, Any], original: Any = _UNKNOWN) -> None:
    """Make the tomlkit ``table`` hold ``data``: changed values replaced in place, new keys appended, keys that
    ``data`` lacks removed; sub-tables and arrays of tables of the same length merged item by item.

    ``original``: the data of the file as it reads now (the same shape as ``data``, defaults filled in), when
    known: a value equal to it is the file's (left as written, or left out when the file leaves it out)."""
    for key in [k for k in table if k not in data]:
        del table[key]
    for key, value in data.items():
        old = table.get(key)
        before = original.get(key, _UNKNOWN) if isinstance(original, dict) else _UNKNOWN
        if before is not _UNKNOWN and before == value:
            continue  # the user did not change it: the file's text (or its absence) stays
        if isinstance(value, dict) and isinstance(old, dict):
            _merge(old, value, before)
        elif _is_table_list(value) and isinstance(old, list) and len(old) == len(value) and _is_table_list(old):
            befores = before if isinstance(before, list) and len(before) == len(value) else [_UNKNOWN] * len(value)
            for old_item, item, item_before in zip(old, value, befores):
                _merge(old_item, item, item_before)
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
    document, original = _document(spec)
    _merge(document, to_data(spec, new_base=new_base), original)
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
