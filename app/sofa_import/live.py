"""Running a SOFA scene's own Python controllers on a live softsim scene.

:class:`SofaControllers` runs the scene file's ``createScene`` again against the recording stand-in, keeps the
``Sofa.Core.Controller`` instances it adds, and binds the recorded data fields the import translated to key
paths of the running scene: while a controller handles an event, ``cable.value.value`` reads
``[scene.get('body.finger.cable.cable.value')]`` and ``cable.value = [v]`` (or ``.value.value = [v]``, or
``findData('value').value = v``) calls ``scene.set('body.finger.cable.cable.value', v)``. Only actuator values,
fixed-region translations, a servo's angle (a prefab's ``angleIn`` / ``angleOut`` in radians, the fixed region's
``angle`` in degrees: Tripod's arrow keys) and a body's ``rest_position`` (as a translation of every node, which
moves its fixed regions: PneunetGripper's arrow keys) are bound; reading or writing any other data field inside an event
raises :class:`ControllerError` naming the field.

``on_key(scene, key)`` calls each controller's ``onKeypressedEvent({'key': key})`` and ``on_frame(scene, time)``
its ``onAnimateBeginEvent({'dt': dt, 'time': time})``, after advancing the animations the controllers started
(``splib3.animation.animate``, Tripod's A key): the functions of softsim's ``[[controller]] script``
interface, so a script made by :func:`adapter_source` runs the controllers unmodified.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from softsim.app.sofa_import import prefabs
from softsim.app.sofa_import.graph import Component, Node
from softsim.app.sofa_import.rigid import HARDWARE, RELEASED, converts, from_scene, scene_key, to_scene
from softsim.app.sofa_import.standin import KEYS, stand_in
from softsim.app.sofa_import.values import as_floats

__all__ = ["ControllerError", "SofaControllers", "adapter_source", "sofa_key"]


class ControllerError(RuntimeError):
    """A SOFA controller touched a data field that is not bound to the running scene."""


class _Binding:
    """Reads and writes of bound fields go to ``scene``; the others raise while a scene is attached."""

    def __init__(self, bindings: dict[str, str]) -> None:
        self.bindings = bindings
        self.scene = None

    def key(self, owner: Component | Node, name: str) -> str | None:
        path = owner.getPathName()
        return self.bindings.get(f"{path}.{name}") or self.bindings.get(f"{path.rstrip('/')}/.{name}")

    def read(self, owner: Component | Node, name: str) -> Any:
        key = self.key(owner, name)
        if self.scene is None or (key is None and name == "name"):
            return owner.data.get(name) if name != "name" else owner.name
        if key is not None and key.startswith("rest_position:"):
            points, translation, _ = self._rest(key)
            return (points + translation).tolist()
        if key is not None and key.startswith((RELEASED, HARDWARE)):  # a servo's joint spring (as recorded, or as
            return owner.data.get(name)  # released); what a controller last sent to the robot's port
        if key is None:
            raise ControllerError(f"{owner.getPathName()}.{name}: a SOFA controller read this data field, which is "
                                  f"not bound to the softsim scene (bound: {', '.join(sorted(self.bindings))})")
        if converts(key):  # a servo's angle (radians there, degrees here) or its base frame (the translation here)
            return from_scene(key, self.scene.get(scene_key(key)))
        value = self.scene.get(key)
        if isinstance(value, tuple):
            return list(value)
        return [value] if key.endswith(".value") else value

    def write(self, owner: Component | Node, name: str, value: Any) -> None:
        key = self.key(owner, name)
        if self.scene is None:
            owner.data[name] = value
            return
        if key is None:
            raise ControllerError(f"{owner.getPathName()}.{name}: a SOFA controller set this data field, which is "
                                  f"not bound to the softsim scene (bound: {', '.join(sorted(self.bindings))})")
        if hasattr(value, "tolist"):
            value = value.tolist()
        if key.startswith("rest_position:"):
            self._move_rest(owner, name, key, value)
            return
        if key.startswith(RELEASED):
            self._release(owner, name, key, value)
            return
        if key.startswith(HARDWARE):  # the robot's serial port: kept on the record, sent nowhere
            owner.data[name] = value
            return
        if converts(key):
            try:
                converted = to_scene(key, value)
            except ValueError as error:
                raise ControllerError(f"{owner.getPathName()}.{name}: {error}") from None
            self.scene.set(scene_key(key), converted)
            return
        if key.endswith(".value") and isinstance(value, list | tuple):
            if len(value) != 1:
                raise ControllerError(f"{owner.getPathName()}.{name}: expected one value, got {value!r}")
            value = value[0]
        self.scene.set(key, float(value) if key.endswith(".value") else [float(v) for v in value])


    def _release(self, owner, name: str, key: str, value) -> None:
        """A servo's joint spring set to stiffness 0 (Tripod's InverseController on the I key): the angle is left to
        the inverse model, which the actuated region (``scene_key(key)``, true) already does from the first frame;
        any other stiffness is not bound."""
        numbers = np.asarray(as_floats(value, f"{owner.getPathName()}.{name}"), dtype=np.float64)
        if numbers.size == 0 or np.any(numbers != 0.0) or not self.scene.get(scene_key(key)):
            raise ControllerError(f"{owner.getPathName()}.{name}: only the release of the servo's joint spring "
                                  f"(stiffness 0, which hands its angle to the inverse model: {scene_key(key)} = true, "
                                  f"from the first frame in softsim) is bound, not {value!r}")
        owner.data[name] = value

    def _rest(self, key: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """The body's placed rest positions (n, 3), the fixed regions' translation (3,) and their key paths."""
        _, body, regions = key.split(":")
        names = [b.name for b in self.scene.spec.bodies]
        index = names.index(body)
        paths = [f"body.{body}.fixed[{i}].translation" for i in regions.split(",")]
        translation = np.asarray(self.scene.get(paths[0]), dtype=np.float64)
        return np.asarray(self.scene.meshes[index].points, dtype=np.float64), translation, paths

    def _move_rest(self, owner, name: str, key: str, value) -> None:
        """A new rest_position for every node: bound when it is the rest shape translated (the fixed regions'
        targets move by that translation)."""
        points, _, paths = self._rest(key)
        new = np.asarray(value, dtype=np.float64)
        if new.shape != points.shape:
            raise ControllerError(f"{owner.getPathName()}.{name}: {new.shape[0] if new.ndim else 0} positions for "
                                  f"{len(points)} nodes")
        delta = new - points
        size = float(np.ptp(points, axis=0).max()) or 1.0
        if np.abs(delta - delta.mean(axis=0)).max() > 1e-9 * size:
            raise ControllerError(f"{owner.getPathName()}.{name}: only a translation of the rest positions is bound "
                                  f"(it moves the fixed regions); this change is not one")
        for path in paths:
            self.scene.set(path, [float(v) for v in delta.mean(axis=0)])


#: Qt's key names (what softsim's window passes to on_key for keys without text) -> Sofa.constants.Key names
_QT_NAMES = {"Up": "uparrow", "Down": "downarrow", "Left": "leftarrow", "Right": "rightarrow", "PgUp": "pageup",
             "PgDown": "pagedown", "Space": "space", "Return": "enter", "Enter": "enter", "Esc": "escape",
             "Tab": "tab", "Backspace": "backspace", "Del": "delete", "Home": "home", "End": "end"}


def sofa_key(key: str) -> str:
    """The character SOFA's KeypressedEvent carries for ``key``: a character as it is (letters upper case, as
    runSofa gives them), a Sofa.constants.Key name (``'plus'``) or a Qt key name (``'Up'``) as SOFA's code."""
    key = _QT_NAMES.get(key, key)
    key = KEYS.get(key, key)
    return key.upper() if len(key) == 1 and key.isalpha() else key


class SofaControllers:
    """The controllers of the SOFA scene ``scene_file``, bound by ``bindings`` (``'/path/component.field'`` ->
    key path)."""

    def __init__(self, scene_file: str | Path, bindings: dict[str, str]) -> None:
        from softsim.app.sofa_import.standin import run_python_scene

        self.binding = _Binding(dict(bindings))
        root, _ = run_python_scene(Path(scene_file))
        self.controllers = []
        for node in root.walk():
            node.attributes["binding"] = self.binding  # a prefab's own data (a servo's angleIn), when bound
            for obj in node.objects:
                if isinstance(obj, Component):
                    object.__setattr__(obj, "binding", self.binding)
                elif type(obj).__name__ != "AnimationManagerController":
                    self.controllers.append(obj)
        self.root = root
        self.scene_file = Path(scene_file)
        self.animations: list[dict[str, Any]] = []  # started by the controllers while the scene runs

    def start_animation(self, on_update, params: dict[str, Any], duration: float, mode: str, on_done) -> None:
        """``splib3.animation.animate`` called by a controller: from the next frame on, each frame calls
        ``on_update(factor=f, **params)`` with f = (time - the first frame's time) / duration, at most 1, as
        splib3's AnimationManager does; after f = 1 the animation ends (then ``on_done``). Only mode "once"."""
        name = getattr(on_update, "__name__", "animation")
        if mode != "once":
            raise ControllerError(f"splib3.animation.animate({name}, mode={mode!r}) called while the scene runs: "
                                  f"only mode 'once' is run (write a [[controller]] with keyframes instead)")
        self.animations.append({"update": on_update, "params": dict(params), "duration": float(duration),
                                "done": on_done, "start": None, "name": name})

    def _animate(self, time: float) -> None:
        running = []
        for animation in self.animations:
            if animation["start"] is None:
                animation["start"] = time
            duration = animation["duration"]
            factor = 1.0 if duration <= 0 else min(max((time - animation["start"]) / duration, 0.0), 1.0)
            animation["update"](factor=factor, **animation["params"])
            if factor < 1.0:
                running.append(animation)
            elif animation["done"] is not None:
                animation["done"](factor=factor, **animation["params"])
        self.animations = running

    @contextlib.contextmanager
    def _live(self, scene) -> Iterator[None]:
        self.binding.scene = scene
        prefabs.RUNNING.append(self)
        try:
            with stand_in():  # a controller may import Sofa modules while it runs (no chdir: other threads run)
                yield
        finally:
            prefabs.RUNNING.remove(self)
            self.binding.scene = None

    def on_key(self, scene, key: str) -> None:
        """``onKeypressedEvent({'key': sofa_key(key)})`` of every controller that has one."""
        key = sofa_key(key)
        with self._live(scene):
            for controller in self.controllers:
                handler = getattr(controller, "onKeypressedEvent", None)
                if handler is not None:
                    handler({"key": key})

    def on_frame(self, scene, time: float) -> None:
        """``onAnimateBeginEvent({'dt': dt, 'time': time})`` of every controller that has one."""
        dt = scene.get("scene.dt")
        with self._live(scene):
            self._animate(time)  # splib3's AnimationManager, a controller of its own
            for controller in self.controllers:
                handler = getattr(controller, "onAnimateBeginEvent", None)
                if handler is not None:
                    handler({"dt": dt, "time": time})


def adapter_source(scene_file: str, bindings: dict[str, str], source_name: str) -> str:
    """The text of a ``[[controller]] script`` that runs the controllers of ``scene_file`` (a path relative to
    the script's folder, or absolute)."""
    lines = "\n".join(f"    {k!r}: {v!r}," for k, v in sorted(bindings.items()))
    return f'''"""softsim controller script written by `softsim import` from {source_name}.

It runs the Sofa.Core.Controller classes of that SOFA scene unmodified: on_key and on_frame call their
onKeypressedEvent and onAnimateBeginEvent with the scene's data fields bound to the key paths below
(docs/sofa-import.md).
"""

from pathlib import Path

from softsim.app.sofa_import.live import SofaControllers

BINDINGS = {{
{lines}
}}
_CONTROLLERS = SofaControllers(Path(__file__).resolve().parent / {scene_file!r}, BINDINGS)


def on_key(scene, key):
    _CONTROLLERS.on_key(scene, key)


def on_frame(scene, time):
    _CONTROLLERS.on_frame(scene, time)
'''
