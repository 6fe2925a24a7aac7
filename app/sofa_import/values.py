"""Reading recorded SOFA data values: numbers from text or lists, booleans, links followed to the data they name.

A value recorded from Python is what the script passed (a number, a nested list, a string such as ``'0'``);
from XML it is text (``'-5 -15 -5  5 -4.5 5'``). These helpers give the translation one form, and
:func:`follow` resolves ``'@loader.position'``-style links to the recorded value or, for a field SOFA computes
(a BoxROI's ``indices``, a loader's ``position``), to a :class:`Ref` naming the component and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from softsim.app.sofa_import.graph import Component, Link, Node, resolve_link

__all__ = ["Ref", "ValueProblem", "as_bool", "as_float", "as_floats", "as_ints", "as_points", "follow", "is_link"]


class ValueProblem(ValueError):
    """A data value the translation cannot read (the message names the component path and the field)."""


@dataclass(frozen=True)
class Ref:
    """A link to a data field SOFA computes at init: ``component.field``."""

    component: Component
    field: str


def is_link(value: Any) -> bool:
    return isinstance(value, Link) or (isinstance(value, str) and value.strip().startswith("@"))


def follow(component: Component, field: str, depth: int = 0) -> Any:
    """The value of ``component.field`` with links followed: a recorded value, a :class:`Ref` to a computed
    field, or None when unset. A link to a node or a component without a field gives a Ref with field ''."""
    value = component.data.get(field)
    if not is_link(value) or depth > 20:
        return value
    if isinstance(value, Link):
        target, target_field = value.target, value.field
    else:
        target, target_field = resolve_link(component.node, value.strip())
    if target is None:
        raise ValueProblem(f"{component.getPathName()}: {field} links to {value!r}, which names nothing in the scene")
    if isinstance(target, Node):
        return Ref(target.getMechanicalState() or Component("Node", target, {}), target_field or "")
    if target_field is None:
        return Ref(target, "")
    if target_field in target.data and target_field != "name":
        return follow(target, target_field, depth + 1)
    return Ref(target, target_field)


def _flatten(value: Any) -> list:
    if isinstance(value, str):
        return value.replace(",", " ").replace("[", " ").replace("]", " ").split()
    if isinstance(value, list | tuple):
        out: list = []
        for item in value:
            out += _flatten(item)
        return out
    if hasattr(value, "tolist"):
        return _flatten(value.tolist())
    return [value]


def as_floats(value: Any, what: str) -> list[float]:
    """Every number of ``value`` (a number, nested lists, or whitespace-separated text), flattened."""
    try:
        return [float(v) for v in _flatten(value)]
    except (TypeError, ValueError):
        raise ValueProblem(f"{what}: {value!r} is not a list of numbers") from None


def as_float(value: Any, what: str) -> float:
    numbers = as_floats(value, what)
    if len(numbers) != 1:
        raise ValueProblem(f"{what}: expected one number, got {len(numbers)} ({value!r})")
    return numbers[0]


def as_ints(value: Any, what: str) -> list[int]:
    numbers = as_floats(value, what)
    if any(n != int(n) for n in numbers):
        raise ValueProblem(f"{what}: {value!r} are not integers")
    return [int(n) for n in numbers]


def as_points(value: Any, what: str) -> list[list[float]]:
    """``(k, 3)`` points from nested lists or flat text."""
    numbers = as_floats(value, what)
    if len(numbers) % 3:
        raise ValueProblem(f"{what}: {len(numbers)} numbers do not make 3D points")
    return [numbers[i:i + 3] for i in range(0, len(numbers), 3)]


def as_bool(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(value, list | tuple):
        return bool(value) and as_bool(value[0])
    return bool(value)
