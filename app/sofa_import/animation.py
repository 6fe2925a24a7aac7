"""splib3 animations (``animate(onUpdate, params, duration)``) as softsim keyframes.

A scene's ``createScene`` may start an animation that, every frame, calls ``onUpdate(factor=f, **params)`` with
``f`` = time / duration clipped to [0, 1] (mode ``"once"``). Tripod's steps turn the three servos this way
(``arm.angleIn = -factor * pi / 4``). :func:`animation_keyframes` calls the function on the recorded graph for
factors 0, 0.05, ..., 1, reads the data fields the translation bound to scene keys, and gives one
``[[controller]]`` with keyframes (time = factor x duration) per key whose value changes; fields are restored
afterwards. The keyframes keep only the samples where the value stops changing linearly (two for a ramp).
Other modes (``"loop"``, ``"pingpong"``), a function that fails, or one that changes nothing bound are not
translated: the reason comes back for the report.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from softsim.app.sofa_import.graph import Component, Node, resolve_link
from softsim.app.sofa_import.rigid import FRAME, FRAME_REST, converts, from_scene, scene_key, to_scene

__all__ = ["animation_keyframes", "SAMPLES"]

#: factors sampled between 0 and 1
SAMPLES = 21


def _owner(root: Node, path: str) -> Component | Node | None:
    target, _ = resolve_link(root, "@" + path)
    return target if isinstance(target, Component | Node) else None


def _scene_value(key: str, value: Any) -> float | list[float] | None:
    """A SOFA value of a bound field as the scene key's value (radians to degrees, ``[v]`` to ``v``)."""
    if value is None:
        return None
    try:
        array = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
    if not array.size or not np.all(np.isfinite(array)):
        return None
    if converts(key):
        try:
            return to_scene(key, array)
        except ValueError:
            return None
    if array.size == 1:
        return float(array[0])
    return [float(v) for v in array] if array.size in (2, 3) else None


def _thin(times: list[float], values: list[Any]) -> list[list[Any]]:
    """The keyframes ``[[t, v], ...]`` without the samples that lie on the line between their neighbours kept."""
    points = [np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in values]
    scale = max(1.0, max(float(np.abs(p).max()) for p in points))
    kept = [0]
    for i in range(1, len(times) - 1):
        a, b = kept[-1], i + 1
        w = (times[i] - times[a]) / (times[b] - times[a])
        if np.abs(points[a] + w * (points[b] - points[a]) - points[i]).max() > 1e-9 * scale:
            kept.append(i)
    kept.append(len(times) - 1)
    return [[times[i], values[i]] for i in kept]


def animation_keyframes(root: Node, animation: dict[str, Any], bindings: dict[tuple[str, str], str]
                        ) -> tuple[list[dict[str, Any]], str]:
    """The ``[[controller]]`` tables (key, keyframes) that reproduce ``animation`` on the bound keys, or ``([],
    why not)``. ``bindings`` maps ``(data path, field)`` to a key path (``radians:`` prefix: the field is in
    radians, the key in degrees); the first field bound to a key gives its value."""
    function, params = animation.get("onUpdate"), animation.get("params") or {}
    name = animation.get("function", "animation")
    if animation.get("mode", "once") not in ("once", None):
        return [], f"mode {animation.get('mode')!r} (only 'once' is translated to keyframes)"
    if not callable(function):
        return [], "its update function was not recorded"
    try:
        duration = float(animation.get("duration", 0.0))
    except (TypeError, ValueError):
        return [], f"duration {animation.get('duration')!r} is not a number"
    sources: dict[str, tuple[Component | Node, str]] = {}
    for (path, data), key in bindings.items():  # one source per scene key (a servo angle is bound several ways)
        if key.startswith("rest_position:") or scene_key(key) in {scene_key(k) for k in sources}:
            continue
        owner = _owner(root, path)
        if owner is not None:
            sources[key] = (owner, data)
    snapshot = [(owner, copy.copy(owner.data)) for node in root.walk()
                for owner in [node, *[o for o in node.objects if isinstance(o, Component)]]]
    for (path, data), key in bindings.items():  # a base frame reads as SOFA has it after init: placed
        owner = _owner(root, path)
        if owner is not None and key.startswith((FRAME, FRAME_REST)):
            owner.data[data] = from_scene(key, [0.0, 0.0, 0.0])
    factors = np.linspace(0.0, 1.0, SAMPLES) if duration > 0 else np.array([1.0])
    samples: dict[str, list[Any]] = {key: [] for key in sources}
    initial = {key: _scene_value(key, owner._read(data)) for key, (owner, data) in sources.items()}
    bound = set(bindings)
    try:
        for factor in factors:
            function(factor=float(factor), **params)
            for key, (owner, data) in sources.items():
                samples[key].append(_scene_value(key, owner._read(data)))
            unbound = [f"{owner.getPathName()}.{key}" for owner, before in snapshot for key, value in owner.data.items()
                       if (owner.getPathName(), key) not in bound and (key not in before or before[key] is not value)
                       and not _same(before.get(key), value)]
            if unbound:
                return [], (f"it also changes {', '.join(sorted(unbound)[:5])}, which the translation does not bind "
                            f"to the scene")
    except Exception as error:  # the scene's own code: any failure means "not translated", with its message
        return [], f"calling {name}(factor, ...) failed: {type(error).__name__}: {error}"
    finally:
        for owner, data in snapshot:
            owner.data.clear()
            owner.data.update(data)
    controllers = []
    for key, values in samples.items():
        if any(v is None for v in values) or all(v == initial[key] for v in values):
            continue
        path = scene_key(key)
        times = [float(f) * duration for f in factors]
        keyframes = _thin(times, values) if len(times) > 1 else [[times[0], values[0]]]
        controllers.append({"name": f"{name}_{len(controllers)}", "key": path,
                            "keyframes": [[_round(t), _round(v)] for t, v in keyframes]})
    if not controllers:
        return [], "it changes no value the translation bound to a scene key"
    return controllers, ""


def _same(a: Any, b: Any) -> bool:
    """Whether two recorded values are equal (numbers and nested lists compared by value)."""
    try:
        return bool(a == b) if not isinstance(a, np.ndarray | list) else bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return a is b


def _round(value: Any) -> Any:
    if isinstance(value, list):
        return [_round(v) for v in value]
    rounded = round(float(value), 9)
    return 0.0 if rounded == 0 else rounded
