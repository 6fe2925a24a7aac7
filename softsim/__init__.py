"""softsim: an interactive desktop soft-robot simulator (SOFA's constraint-based soft-robot mechanics).

The installed package holds ``softsim.mechanics`` (FEM, solvers, constraints, scenes; no GUI imports),
``softsim.meshes`` (tetrahedral meshes: loading, validation, generators), ``softsim.app`` (the Qt window and the
command line) and ``softsim.resources`` (shipped scenes and meshes). In the repository those folders sit next
to this one; a source checkout that is on ``sys.path`` finds them there.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_HERE = Path(__file__).resolve().parent
if not (_HERE / "mechanics").is_dir() and (_HERE.parent / "mechanics" / "__init__.py").is_file():
    # source checkout: the subpackages are the repository's top-level folders
    __path__.append(str(_HERE.parent))  # noqa: F821 - the package's own __path__


def __getattr__(name: str):
    """``softsim.sweep``: :func:`softsim.app.sweep.sweep`, imported on first use (it needs Dask and pandas)."""
    if name == "sweep":
        from softsim.app.sweep import sweep

        return sweep
    raise AttributeError(f"module 'softsim' has no attribute {name!r}")
