"""A scene that travels: its text and the bytes of every file it names (meshes, cavity surfaces), so a Dask
worker on another machine runs it without seeing the user's files.

Each file is stored under a flat name (``file0_finger.vtu``); the scene text names the files by those names.
Files beside a mesh with the same stem travel too (``mesh.xdmf`` needs ``mesh.h5``). On a worker, the bundle
is unpacked into each sample's own temporary directory (:func:`unpack`), removed when the sample ends.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SceneBundle", "bundle_scene", "sibling_files", "unpack"]

SCENE_NAME = "scene.toml"


@dataclass(frozen=True)
class SceneBundle:
    """``text``: the scene (TOML) naming its files by flat names; ``files``: flat name -> bytes; ``name``: the
    original file's name (messages); ``digest``: identifies the bundle's content."""

    text: str
    files: tuple[tuple[str, bytes], ...]
    name: str
    digest: str


def _file_fields(spec):
    """(object, attribute, resolved path) of every file the spec names."""
    for body in spec.bodies:
        yield body, "mesh", Path(body.mesh_path)
        for cavity in body.cavities:
            if cavity.surface is not None:
                yield cavity, "surface", Path(cavity.surface_path)


def sibling_files(path: Path) -> list[Path]:
    """``path`` and the regular files beside it whose name is its stem, a dot, and more (``mesh.xdmf``:
    ``mesh.h5``), sorted. Names are compared as text: a name holding ``[``, ``*`` or ``?`` (``fing[1].vtu``) is
    no pattern."""
    start = path.stem + "."
    return sorted(entry for entry in path.parent.iterdir() if entry.name.startswith(start) and entry.is_file())


def bundle_scene(spec) -> SceneBundle:
    """The bundle of a loaded spec (its files read now)."""
    from softsim.mechanics.scene.save import dump_scene

    travelling = copy.deepcopy(spec)
    files: dict[str, bytes] = {}
    flat_names: dict[Path, str] = {}
    pairs = zip(_file_fields(spec), _file_fields(travelling), strict=True)
    for (_obj, _attribute, path), (copy_obj, attribute, _copy_path) in pairs:
        if path not in flat_names:
            prefix = f"file{len(flat_names)}_"
            flat_names[path] = prefix + path.name
            for sibling in sibling_files(path):
                files[prefix + sibling.name] = sibling.read_bytes()
        setattr(copy_obj, attribute, flat_names[path])
    text = dump_scene(travelling)
    digest = hashlib.sha256(text.encode() + b"".join(name.encode() + data for name, data in sorted(files.items())))
    return SceneBundle(text, tuple(sorted(files.items())), Path(spec.source or "scene.toml").name,
                       digest.hexdigest()[:16])


def unpack(bundle: SceneBundle, folder: str | Path) -> Path:
    """Write the scene and the files of ``bundle`` into ``folder`` (created if missing); returns the scene file.

    The caller owns ``folder`` and removes it (a sample unpacks into its own temporary directory, removed when
    the sample ends, so that no sweep leaves files behind in the temporary directory)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in bundle.files:
        (folder / name).write_bytes(data)
    path = folder / SCENE_NAME
    path.write_text(bundle.text, encoding="utf-8")
    return path
