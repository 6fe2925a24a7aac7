"""`mechanics` and `meshes` are a library usable without a display: they never import Qt, VTK,
pyvista or the `app` package (ARCHITECTURE.md)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"PyQt6", "PyQt5", "PySide6", "qtpy", "vtk", "vtkmodules", "pyvista", "pyvistaqt", "pyqtgraph",
             "softsim.app"}
LIBRARY_PACKAGES = ("mechanics", "meshes")  # installed as softsim.mechanics, softsim.meshes


def _top(name: str) -> str:
    """The top-level module of ``name``; inside softsim, its subpackage (``softsim.app.cli`` -> ``softsim.app``)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "softsim" and len(parts) > 1 else parts[0]


def _imported_top_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(_top(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(_top(node.module))
            if node.module == "softsim":  # from softsim import app
                names.update(f"softsim.{alias.name}" for alias in node.names)
    return names


def test_library_sources_import_no_gui_module():
    offenders = []
    files = [f for package in LIBRARY_PACKAGES for f in sorted((ROOT / package).rglob("*.py"))]
    assert len(files) >= 2
    for file in files:
        bad = _imported_top_modules(file.read_text()) & FORBIDDEN
        if bad:
            offenders.append(f"{file.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_importing_every_library_module_loads_no_gui_module():
    modules = []
    for package in LIBRARY_PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            parts = file.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            modules.append("softsim." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN)!r}\n"
        f"             or m.startswith('softsim.app')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_scan_detects_a_forbidden_import():
    assert _imported_top_modules("import numpy\nfrom PyQt6.QtCore import Qt\nimport vtk.util") == {
        "numpy", "PyQt6", "vtk"}
    assert _imported_top_modules("from softsim.app.cli import main\nfrom softsim import app") == {
        "softsim.app", "softsim"}


def test_a_source_checkout_imports_the_four_subpackages_and_nothing_else():
    """From the repository root (the checkout first on sys.path), ``softsim.mechanics`` and its siblings import
    from the folders beside ``softsim/``, while other folders there (``tests``, ``benchmarks``, ``softsim``
    itself) are not subpackages."""
    code = (
        "import importlib, softsim\n"
        "for name in ('app', 'mechanics', 'meshes', 'resources'):\n"
        "    module = importlib.import_module('softsim.' + name)\n"
        "    print(name, module.__file__)\n"
        "for name in ('tests', 'benchmarks', 'softsim', 'docs'):\n"
        "    try:\n"
        "        importlib.import_module('softsim.' + name)\n"
        "    except ImportError:\n"
        "        print(name, 'refused')\n"
        "    else:\n"
        "        print(name, 'imported')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            check=True)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    for name in ("app", "mechanics", "meshes", "resources"):
        assert Path(lines[name]) == ROOT / name / "__init__.py"
    for name in ("tests", "benchmarks", "softsim", "docs"):
        assert lines[name] == "refused"


def test_every_package_folder_is_listed_for_the_wheel():
    """pyproject.toml lists the installed packages one by one: every folder of app/, mechanics/, meshes/ and
    resources/ with an __init__.py is there (a new subpackage left out would be missing from the wheel)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"softsim"}
    for top in ("app", "mechanics", "meshes", "resources"):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            if "__pycache__" not in parts:
                found.add(".".join(("softsim", *parts)))
    assert sorted(found - listed) == []
