"""Persistent user settings: the recent files list, in a JSON file under the softsim config directory.

The directory is ``$SOFTSIM_CONFIG_DIR`` when set (tests point it to a temporary directory), else the
platform's: ``%APPDATA%/softsim`` on Windows, ``~/Library/Application Support/softsim`` on macOS,
``$XDG_CONFIG_HOME/softsim`` (default ``~/.config/softsim``) elsewhere.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from softsim.meshes.files import read_input_bytes, write_text_atomically

logger = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
MAX_RECENT_FILES = 10
#: a settings file larger than this is ignored (it holds a list of recent files)
_MAX_SETTINGS_BYTES = 1024**2


def config_dir() -> Path:
    """The directory holding softsim's settings (not created here)."""
    override = os.environ.get("SOFTSIM_CONFIG_DIR")
    if override:
        return Path(override)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "softsim"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "softsim"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "softsim"


class Settings:
    """The settings file as a small dict; every change is written at once (atomically).

    A missing or unreadable file gives the defaults (and a logged warning when unreadable): settings must
    never keep the app from starting.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.path = Path(directory or config_dir()) / SETTINGS_FILE
        self._data: dict = {}
        if not self.path.exists():
            return
        try:
            text = read_input_bytes(self.path, max_bytes=_MAX_SETTINGS_BYTES, what="settings").decode("utf-8")
            self._data = json.loads(text)
            if not isinstance(self._data, dict):
                raise ValueError("the top level is not a table")
        except (OSError, ValueError, RecursionError) as error:
            logger.warning("ignoring the settings file %s: %s", self.path, error)
            self._data = {}

    def _write(self) -> None:
        try:
            write_text_atomically(self.path, json.dumps(self._data, indent=2), durable=True, make_parents=True)
        except OSError as error:
            logger.warning("cannot write the settings file %s: %s", self.path, error)

    @property
    def recent_files(self) -> list[str]:
        """Most recent first; absolute paths as strings (files that no longer exist are left out)."""
        files = self._data.get("recent_files", [])
        if not isinstance(files, list):
            return []
        return [f for f in files if isinstance(f, str) and Path(f).exists()]

    def add_recent_file(self, path: str | Path) -> None:
        """Put ``path`` first in the recent files (at most MAX_RECENT_FILES, no duplicates)."""
        entry = str(Path(path).resolve())
        files = [f for f in self._data.get("recent_files", []) if isinstance(f, str) and f != entry]
        self._data["recent_files"] = [entry, *files][:MAX_RECENT_FILES]
        self._write()

    @property
    def camera_views(self) -> dict[str, dict]:
        """Saved camera views by name (Viewport.camera_view's dicts); entries that are not tables are left out."""
        views = self._data.get("camera_views", {})
        if not isinstance(views, dict):
            return {}
        return {str(name): view for name, view in views.items() if isinstance(view, dict)}

    def save_camera_view(self, name: str, view: dict) -> None:
        """Keep ``view`` under ``name`` (a name used before is replaced); ValueError for an empty name."""
        name = str(name).strip()
        if not name:
            raise ValueError("a camera view needs a name")
        self._data["camera_views"] = {**self.camera_views, name: view}
        self._write()
