"""Locations of the files shipped in the ``resources`` package (scenes, meshes, icons)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource_path(*parts: str) -> Path:
    """Absolute path of a shipped resource, e.g. ``resource_path("scenes", "finger.toml")``."""
    return Path(str(files("softsim.resources").joinpath(*parts)))


def default_scene() -> Path:
    """The scene ``make run`` opens: the SoftRobots cable-driven finger."""
    return resource_path("scenes", "finger.toml")
