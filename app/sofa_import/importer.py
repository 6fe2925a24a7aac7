"""Import a SOFA scene (``.py``, ``.pyscn``, ``.scn``) as a softsim scene: read, translate, validate, write.

:func:`import_scene` returns the validated :class:`~mechanics.scene.schema.SceneSpec`, its TOML text and the
:class:`~app.sofa_import.report.ImportReport`; :func:`write_import` writes the TOML (and, when the scene has
Python controllers, the adapter script that runs them) next to each other.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from softsim.app.sofa_import.live import adapter_source
from softsim.app.sofa_import.report import ImportReport
from softsim.app.sofa_import.rigid import scene_key
from softsim.app.sofa_import.standin import ImportFailure, run_python_scene
from softsim.app.sofa_import.translate import has_key, translate
from softsim.app.sofa_import.values import ValueProblem
from softsim.app.sofa_import.xml_reader import read_xml_scene
from softsim.mechanics.scene import SceneError, SceneSpec, dump_scene, parse_data
from softsim.meshes.errors import MeshError
from softsim.meshes.files import write_text_atomically

__all__ = ["SOFA_SUFFIXES", "ImportFailure", "ImportResult", "import_scene", "import_to_temporary", "is_sofa_scene",
           "load_sofa_scene", "write_import"]

SOFA_SUFFIXES = (".py", ".pyscn", ".scn")


def is_sofa_scene(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SOFA_SUFFIXES


@dataclass
class ImportResult:
    """``spec`` (validated, paths relative to ``base_dir``), ``text`` (the TOML), ``report``, ``adapter`` (the
    controller script's text, or None), ``adapter_name`` (its file name)."""

    spec: SceneSpec
    text: str
    report: ImportReport
    adapter: str | None
    adapter_name: str | None


def _read(path: Path):
    if path.suffix.lower() == ".scn":
        return read_xml_scene(path)
    if path.suffix.lower() in (".py", ".pyscn"):
        root, _ = run_python_scene(path)
        return root
    raise ImportFailure(f"{path.name}: not a SOFA scene (expected {', '.join(SOFA_SUFFIXES)})")


def import_scene(path: str | Path, out: str | Path | None = None, *, with_controllers: bool = True
                 ) -> ImportResult:
    """Read and translate the SOFA scene ``path`` into a scene to be written at ``out`` (default: the scene
    with the suffix ``.toml``; paths in it are relative to its folder). A cavity surface that must be moved
    into its body's frame is written beside ``out``; when ``out`` is None it goes to a temporary folder.

    Raises:
        ImportFailure: the scene cannot be read or translated, or the translation does not validate (the
            message names the file and the component or key).
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ImportFailure(f"{path.name}: no such file ({path})")
    target = Path(out).resolve() if out is not None else path.with_suffix(".toml")
    artifacts = target.parent if out is not None else Path(tempfile.mkdtemp(prefix="softsim-import-"))
    root = _read(path)
    try:
        translation = translate(root, path, target.parent, artifacts)
    except (ValueProblem, MeshError) as error:
        raise ImportFailure(f"{path.name}: {error}") from None
    data, report = translation.data, translation.report
    adapter = adapter_name = None
    if translation.controllers:
        names = ", ".join(f"{c.path} ({c.class_name})" for c in translation.controllers)
        if not has_key(SceneSpec, "controller"):
            for record in translation.controllers:
                report.skip(record.path, record.class_name, "softsim's scene format has no [[controller]] yet",
                            mechanics=True)
        elif not with_controllers:
            for record in translation.controllers:
                report.skip(record.path, record.class_name, "Python controller not run (scripts not allowed: "
                            "--allow-scripts)", mechanics=True)
        else:
            adapter_name = f"{target.stem}.controllers.py"
            folder = target.parent if out is not None else artifacts
            scene_ref = os.path.relpath(path, folder) if out is not None else str(path)
            bindings = {f"{p}.{f}": key for (p, f), key in translation.bindings.items()}
            adapter = adapter_source(scene_ref, bindings, path.name)
            script = adapter_name if out is not None else str(artifacts / adapter_name)
            if out is None:
                write_text_atomically(artifacts / adapter_name, adapter)
            data.setdefault("controller", []).append({"name": "sofa_controllers", "script": script})
            report.notes.append(f"Python controllers {names}: run unmodified through {adapter_name} (a script: "
                                f"needs --allow-scripts); bound fields: "
                                f"{', '.join(sorted({scene_key(k) for k in translation.bindings.values()}))}")
    try:
        # the controller script is written with the scene (write_import); the meshes were checked by the translation
        spec = parse_data(data, source=str(target), base_dir=target.parent, check_files=adapter is None or out is None)
        spec.files_checked = True
    except SceneError as error:
        raise ImportFailure(f"{path.name}: the translated scene does not validate:\n{error}") from None
    spec.source = "<sofa import>"
    header = "\n".join(f"# {line}" if line else "#" for line in report.text().splitlines())
    text = f"{header}\n\n{dump_scene(spec, base_dir=target.parent)}"
    spec.source = str(target)
    return ImportResult(spec, text, report, adapter, adapter_name)


def write_import(result: ImportResult, out: str | Path) -> list[Path]:
    """Write the imported scene to ``out`` (and its controller script beside it); returns the files written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out, result.text, newline="\n")
    written = [out]
    if result.adapter is not None and result.adapter_name is not None:
        script = out.parent / result.adapter_name
        write_text_atomically(script, result.adapter, newline="\n")
        written.append(script)
    return written


def import_to_temporary(path: str | Path, *, allow_scripts: bool = False) -> tuple[Path, str]:
    """The SOFA scene ``path`` imported into a new temporary folder, for the window to open: (the TOML written
    there, the report's text). A Python scene runs only with ``allow_scripts``.

    Raises:
        ImportFailure: a Python scene without ``allow_scripts``, or the import failed.
    """
    path = Path(path)
    if path.suffix.lower() in (".py", ".pyscn") and not allow_scripts:
        raise ImportFailure(f"{path.name} is a SOFA Python scene: opening it runs its createScene (and its "
                            f"controllers); allow scripts (softsim --allow-scripts) or import it first "
                            f"(softsim import)")
    out = Path(tempfile.mkdtemp(prefix="softsim-import-")) / (path.stem + ".toml")
    result = import_scene(path, out, with_controllers=allow_scripts)
    write_import(result, out)
    return out, result.report.text()


def load_sofa_scene(path: str | Path, *, allow_scripts: bool = False) -> tuple[SceneSpec, ImportReport]:
    """The scene spec of a SOFA scene opened directly (no TOML written): paths relative to the scene's folder,
    controllers run through an adapter in a temporary folder when ``allow_scripts``."""
    path = Path(path)
    result = import_scene(path, None, with_controllers=allow_scripts)
    return result.spec, result.report
