"""``[[controller]]``: what changes a scene between frames (docs/controllers.md).

- :class:`KeyframeController`: ``key`` and ``keyframes = [[t0, v0], [t1, v1], ...]``; before every frame the
  value at the frame's time (:func:`interpolate`: linear between keyframes, ``v0`` before ``t0``, the last value
  after the last time) is set with ``Scene.set``.
- :class:`ScriptController`: a Python file with ``on_frame(scene, time)`` and/or ``on_key(scene, key)``. A script
  is a program: it runs only when the user allowed the scene's scripts (``softsim run --allow-scripts``, the
  window's question). An exception in a script becomes a :class:`ControllerError` whose message names the
  script's file and line.

The time of a frame is the time at its end, as for moving obstacles: the simulation's time + dt in dynamic
mode, (frame number + 1) x dt in static mode (the first frame is at t = dt).
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["ControllerError", "KeyframeController", "ScriptController", "interpolate", "make_controllers",
           "script_paths"]

#: the functions a script may define
HOOKS = ("on_frame", "on_key")


class ControllerError(ParameterError):
    """A controller failed: a script raised (the message names its file and line) or set a value the scene
    refused."""


def interpolate(keyframes, time: float):
    """The value at ``time`` of ``keyframes`` ``((t0, v0), (t1, v1), ...)`` (times increasing, values numbers or
    tuples of numbers): linear between two keyframes, ``v0`` before ``t0``, the last value after the last time.
    Returns a float or a tuple of floats."""
    times = np.array([t for t, _ in keyframes], dtype=np.float64)
    values = np.array([np.atleast_1d(np.asarray(v, dtype=np.float64)) for _, v in keyframes])  # (k, d)
    result = np.array([np.interp(time, times, values[:, j]) for j in range(values.shape[1])])
    vector = isinstance(keyframes[0][1], tuple | list)
    return tuple(float(v) for v in result) if vector else float(result[0])


class KeyframeController:
    """Sets ``key`` to its keyframes' value before every frame (only when the value changed, so a held value
    costs nothing)."""

    def __init__(self, name: str, key: str, keyframes) -> None:
        self.name, self.key, self.keyframes = name, key, tuple(keyframes)

    def on_frame(self, scene, time: float) -> None:
        value = interpolate(self.keyframes, time)
        current = scene.get(self.key)
        if current is not None and np.allclose(np.asarray(current, dtype=np.float64), value, rtol=0.0, atol=0.0):
            return
        try:
            scene.set(self.key, value)
        except (ParameterError, ValueError) as error:
            raise ControllerError(f"controller {self.name}: {self.key} = {value} at t = {time:g}: {error}") from None

    def on_key(self, scene, key: str) -> None:
        """Keyframes do not answer keys."""


def _where(error: BaseException, path: Path) -> str:
    """``file.py, line N`` of the innermost frame of ``error``'s traceback that is in the script ``path``."""
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename) == path:
            line = frame.lineno
    if line is None and isinstance(error, SyntaxError) and error.lineno is not None:
        line = error.lineno
    return f"{path.name}, line {line}" if line is not None else path.name


class ScriptController:
    """A Python file run in its own namespace; its ``on_frame(scene, time)`` and ``on_key(scene, key)`` (either
    may be missing) are called with the :class:`~mechanics.scene_runtime.Scene`.

    Raises ControllerError (file and line named) when the file cannot be read, does not compile, raises while it
    runs its top level, or defines neither hook.
    """

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, Path(path)
        try:
            source = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ControllerError(f"controller {name}: cannot read the script {self.path}: {error}") from None
        namespace: dict[str, Any] = {"__name__": f"softsim_controller_{name}", "__file__": str(self.path)}
        try:
            code = compile(source, str(self.path), "exec")
            exec(code, namespace)  # noqa: S102 - the user allowed this scene's scripts
        except Exception as error:  # a script may raise anything; report where
            raise ControllerError(f"controller {name}: {_where(error, self.path)}: "
                                  f"{type(error).__name__}: {error}") from None
        self.hooks = {hook: namespace[hook] for hook in HOOKS if callable(namespace.get(hook))}
        if not self.hooks:
            raise ControllerError(f"controller {name}: {self.path.name} defines neither on_frame(scene, time) nor "
                                  "on_key(scene, key)")

    def _call(self, hook: str, scene, argument) -> None:
        function = self.hooks.get(hook)
        if function is None:
            return
        try:
            function(scene, argument)
        except Exception as error:  # a script may raise anything; report where
            raise ControllerError(f"controller {self.name}: {_where(error, self.path)}: in {hook}: "
                                  f"{type(error).__name__}: {error}") from None

    def on_frame(self, scene, time: float) -> None:
        self._call("on_frame", scene, float(time))

    def on_key(self, scene, key: str) -> None:
        self._call("on_key", scene, str(key))


def script_paths(spec) -> list[Path]:
    """The script files of the scene's controllers, in file order."""
    return [c.script_path for c in spec.controllers if c.script is not None and c.script_path is not None]


def make_controllers(spec, *, allow_scripts: bool) -> list:
    """The scene's controllers: every keyframed one, and the scripts when ``allow_scripts`` (else none of them)."""
    controllers = []
    for controller in spec.controllers:
        if controller.script is not None:
            if allow_scripts:
                controllers.append(ScriptController(controller.name, controller.script_path))
        else:
            controllers.append(KeyframeController(controller.name, controller.key, controller.keyframes))
    return controllers
