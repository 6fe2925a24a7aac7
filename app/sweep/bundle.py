"""A scene that travels: its text and the bytes of every file it names (meshes, cavity surfaces), so a Dask
worker on another machine runs it without seeing the user's files.

Each file is stored under a flat name (``file0_finger.vtu``); the scene text names the files by those names.
Files beside a mesh with the same stem travel too (``mesh.xdmf`` needs ``mesh.h5``). On a worker, the bundle
is unpacked once per process into a temporary directory (:func:`unpacked`).
"""

from __future__ import annotations

import copy
import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SceneBundle", "bundle_scene", "unpacked"]

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
            for sibling in sorted(path.parent.glob(path.stem + ".*")):
                if sibling.is_file():
                    files[prefix + sibling.name] = sibling.read_bytes()
        setattr(copy_obj, attribute, flat_names[path])
    text = dump_scene(travelling)
    digest = hashlib.sha256(text.encode() + b"".join(name.encode() + data for name, data in sorted(files.items())))
    return SceneBundle(text, tuple(sorted(files.items())), Path(spec.source or "scene.toml").name,
                       digest.hexdigest()[:16])


_UNPACKED: dict[str, Path] = {}


def unpacked(bundle: SceneBundle) -> Path:
    """The scene file of ``bundle`` in this process's temporary directory (written once per process)."""
    path = _UNPACKED.get(bundle.digest)
    if path is None or not path.exists():
        folder = Path(tempfile.mkdtemp(prefix=f"softsim-sweep-{bundle.digest}-"))
        for name, data in bundle.files:
            (folder / name).write_bytes(data)
        path = folder / SCENE_NAME
        path.write_text(bundle.text, encoding="utf-8")
        _UNPACKED[bundle.digest] = path
    return path
