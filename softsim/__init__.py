"""softsim: an interactive desktop soft-robot simulator (SOFA's constraint-based soft-robot mechanics).

The installed package holds ``softsim.mechanics`` (FEM, solvers, constraints, scenes; no GUI imports),
``softsim.meshes`` (tetrahedral meshes: loading, validation, generators), ``softsim.app`` (the Qt window and the
command line) and ``softsim.resources`` (shipped scenes and meshes). In the repository those folders sit next
to this one; a source checkout that is on ``sys.path`` finds them there.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

__version__ = "0.1.0"

#: the subpackages, which a source checkout keeps as the repository's top-level folders
SUBPACKAGES = ("app", "mechanics", "meshes", "resources")

_HERE = Path(__file__).resolve().parent


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds ``softsim.app``, ``softsim.mechanics``, ``softsim.meshes`` and ``softsim.resources`` in the folders
    beside this package in a source checkout, and nothing else there (``softsim.tests`` does not import)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.partition(".")
        if prefix != __name__ or name not in SUBPACKAGES:
            return None
        folder = self.root / name
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


if not (_HERE / "mechanics").is_dir() and (_HERE.parent / "mechanics" / "__init__.py").is_file():
    if not any(isinstance(finder, _CheckoutFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _CheckoutFinder(_HERE.parent))


def __getattr__(name: str):
    """``softsim.sweep``: :func:`softsim.app.sweep.sweep`, imported on first use (it needs Dask and pandas)."""
    if name == "sweep":
        from softsim.app.sweep import sweep

        return sweep
    raise AttributeError(f"module 'softsim' has no attribute {name!r}")
