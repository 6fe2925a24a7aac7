"""The GUI's handle on the running scene: opens scenes, owns the simulation worker, relays frames and messages.

All methods run on the GUI thread. The Scene itself lives on the worker thread: the GUI changes it only
through ``set_parameter``/``submit`` (applied between frames) and reads it only through frames, except for
the validated spec values it shows, which are read from ``spec`` (a copy kept on the GUI side).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

from PyQt6.QtCore import QObject, QTimer, pyqtSignal

from app.runner import SimulationRunner
from mechanics.scene import SceneError, set_value

logger = logging.getLogger(__name__)

POLL_INTERVAL_MS = 15


class Session(QObject):
    """One open scene at a time. Signals carry immutable frames and human-readable messages."""

    scene_opened = pyqtSignal(object)  # the Scene that was opened (for building views and panels)
    frame_ready = pyqtSignal(object)  # mechanics.simulation.Frame, newest only (latest wins)
    message = pyqtSignal(str, str)  # level ("error" | "warning" | "info"), text
    parameter_changed = pyqtSignal(str, object)  # key path, new value (after validation)
    running_changed = pyqtSignal(bool)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.scene = None
        self.spec = None  # GUI-side copy of the scene spec, kept in step with every accepted edit
        self.runner: SimulationRunner | None = None
        self.latest_frame = None
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_INTERVAL_MS)
        self._timer.timeout.connect(self._poll)

    # -- opening ---------------------------------------------------------------------------------------
    def open_scene(self, path: str | Path) -> bool:
        """Load a scene file; on any error emit a message and keep the current scene running."""
        from mechanics.scene_runtime import Scene

        try:
            scene = Scene.load(path)
        except (ValueError, OSError) as error:  # SceneError, MeshError, ParameterError are ValueErrors
            self.message.emit("error", f"Cannot open {Path(path).name}:\n{error}")
            return False
        self._install(scene)
        return True

    def open_mesh(self, path: str | Path) -> bool:
        """Open a bare mesh with a default scene (fixed base, gravity, corotational material)."""
        from mechanics.scene_runtime import Scene, default_scene_for_mesh

        try:
            scene = Scene(default_scene_for_mesh(path))
        except (ValueError, OSError) as error:
            self.message.emit("error", f"Cannot open {Path(path).name}:\n{error}")
            return False
        self._install(scene)
        return True

    def _install(self, scene) -> None:
        self.close()
        self.scene = scene
        self.spec = copy.deepcopy(scene.spec)
        self.runner = SimulationRunner(scene)
        self.runner.start()
        self.latest_frame = scene.simulation.snapshot(None)
        for warning in scene.warnings:
            self.message.emit("warning", warning)
        self.scene_opened.emit(scene)
        self.frame_ready.emit(self.latest_frame)
        self._timer.start()

    def close(self) -> None:
        """Stop the worker (waits for the current frame)."""
        self._timer.stop()
        if self.runner is not None:
            self.runner.stop()
            self.runner = None

    # -- running ---------------------------------------------------------------------------------------
    def play(self) -> None:
        if self.runner is not None:
            self.runner.play()
            self.running_changed.emit(True)

    def pause(self) -> None:
        if self.runner is not None:
            self.runner.pause()
            self.running_changed.emit(False)

    @property
    def playing(self) -> bool:
        return self.runner is not None and self.runner.playing

    def step_once(self) -> None:
        if self.runner is not None:
            self.runner.step_once()

    def submit(self, description: str, apply) -> None:
        """Run ``apply(scene)`` on the worker between two frames."""
        if self.runner is not None:
            self.runner.submit(description, apply)

    def reset(self) -> None:
        self.submit("reset", lambda scene: scene.reset())

    # -- parameters ------------------------------------------------------------------------------------
    def set_parameter(self, path: str, value) -> str | None:
        """Validate ``value`` for the key path now; if valid, apply it on the worker before the next frame.

        Returns None when accepted, else the message naming the key and the allowed range (nothing changes).
        """
        if self.spec is None:
            return "no scene is open"
        trial = copy.deepcopy(self.spec)
        try:
            set_value(trial, path, value)
        except SceneError as error:
            return str(error)
        self.spec = trial
        self.submit(f"set {path}", lambda scene: scene.set(path, value))
        self.parameter_changed.emit(path, value)
        return None

    # -- polling ---------------------------------------------------------------------------------------
    def _poll(self) -> None:
        if self.runner is None:
            return
        output = self.runner.take_output()
        for message in output.messages:
            self.message.emit(message.level, message.text)
        if output.frame is not None:
            self.latest_frame = output.frame
            self.frame_ready.emit(output.frame)
