"""Value kinds of the scene format: how one TOML value is checked and converted.

A kind turns a decoded TOML value (or a Python value given to ``set_value``) into the value stored in the
scene dataclasses, or raises :class:`Invalid` with a message that names the allowed range, for example
``0.7 is outside (-1, 0.5)``. Stored values are immutable and comparable: floats, ints, bools, str, tuples.
``to_toml`` turns a stored value back into TOML data (lists instead of tuples).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "Invalid",
    "Kind",
    "Real",
    "Integer",
    "Flag",
    "Text",
    "Name",
    "Choice",
    "Vector",
    "Box",
    "VectorList",
    "IndexList",
    "Flags",
    "FilePath",
    "Keyframes",
    "show",
    "suggest",
]

#: Characters a name may not contain: names appear in key paths (``body.finger.cable.c1.value``) and in CSV
#: column headers (``NAME.QUANTITY``).
_NAME_FORBIDDEN = ".[]=\"' \t\n"


class Invalid(Exception):
    """A value that does not satisfy its kind; ``str(error)`` says what is wrong and what is allowed."""


def show(value: Any) -> str:
    """Render a value the way it would be written in a TOML file, for error messages."""
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if value is None:
        return "nothing"
    return repr(value)


#: keys that an earlier scene format had, with what replaces them (key in the same table, explanation)
REPLACED_KEYS = {
    "reequilibration_iterations": (
        "correction",
        'replaced by correction = "equilibrium" (the default: every static frame ends at the constrained '
        'equilibrium, iterating at most newton_iterations times) or "linear" (SOFA\'s single linear correction)',
    ),
}


def suggest(word: str, candidates: Sequence[str]) -> str:
    """``"; did you mean X?"`` for the closest candidate, or an empty string when none is close. A key of an
    earlier format (:data:`REPLACED_KEYS`) is answered with what replaces it."""
    replaced = REPLACED_KEYS.get(word)
    if replaced is not None and replaced[0] in candidates:
        return f"; {replaced[1]}"
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[match[0]]}?" if match else ""


def _bound(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def _number(raw: Any, *, allow_inf: bool = False) -> float:
    if isinstance(raw, bool | np.bool_) or not isinstance(raw, int | float | np.integer | np.floating):
        raise Invalid(f"expected a number, got {show(raw)}")
    value = float(raw)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise Invalid(f"expected a finite number, got {show(raw)}")
    return value


class Kind:
    """Base class. ``text``: a string typed on the command line is the value itself (not parsed as TOML)."""

    text = False
    #: Short description used in the parameter listing and in type errors.
    description = "a value"

    def convert(self, raw: Any) -> Any:
        raise NotImplementedError

    @property
    def allowed(self) -> str:
        """The allowed values as the error messages and the documentation write them."""
        return self.description

    def to_toml(self, value: Any) -> Any:
        return value


class Real(Kind):
    """A float in an interval; ``lo``/``hi`` of ``None`` mean unbounded; the ends are open when ``*_open``."""

    description = "a number"

    def __init__(
        self,
        lo: float | None = None,
        hi: float | None = None,
        *,
        lo_open: bool = False,
        hi_open: bool = False,
        allow_inf: bool = False,
    ) -> None:
        self.lo, self.hi, self.lo_open, self.hi_open, self.allow_inf = lo, hi, lo_open, hi_open, allow_inf

    @property
    def interval(self) -> str:
        left = "(" if self.lo is None or self.lo_open else "["
        right = ")" if self.hi is None or self.hi_open else "]"
        lo = "-inf" if self.lo is None else _bound(self.lo)
        hi = "inf" if self.hi is None else _bound(self.hi)
        return f"{left}{lo}, {hi}{right}"

    allowed = interval

    def check_range(self, value: float, shown: str) -> None:
        too_low = self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo))
        too_high = self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi))
        if too_low or too_high:
            raise Invalid(f"{shown} is outside {self.interval}")

    def convert(self, raw: Any) -> float:
        value = _number(raw, allow_inf=self.allow_inf)
        self.check_range(value, show(raw))
        return value


class Integer(Kind):
    """An integer (TOML integer; ``10.0`` is rejected) with inclusive bounds."""

    description = "an integer"

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi

    @property
    def allowed(self) -> str:
        lo = "(-inf" if self.lo is None else f"[{self.lo}"
        hi = "inf)" if self.hi is None else f"{self.hi}]"
        return f"an integer in {lo}, {hi}"

    def convert(self, raw: Any) -> int:
        if isinstance(raw, bool | np.bool_) or not isinstance(raw, int | np.integer):
            raise Invalid(f"expected an integer, got {show(raw)}")
        if (self.lo is not None and raw < self.lo) or (self.hi is not None and raw > self.hi):
            raise Invalid(f"{raw} is outside {self.allowed.removeprefix('an integer in ')}")
        return int(raw)


class Flag(Kind):
    """A TOML boolean (``true``/``false``); 0 and 1 are rejected so that a typo cannot flip a switch."""

    description = "true or false"

    def convert(self, raw: Any) -> bool:
        if not isinstance(raw, bool | np.bool_):
            raise Invalid(f"expected true or false, got {show(raw)}")
        return bool(raw)


class Text(Kind):
    """A non-empty string."""

    text = True
    description = "a string"

    def convert(self, raw: Any) -> str:
        if not isinstance(raw, str):
            raise Invalid(f"expected a string, got {show(raw)}")
        if not raw.strip():
            raise Invalid("expected a non-empty string")
        control = sorted({c for c in raw if (ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127})
        if control:
            shown = " ".join(f"\\x{ord(c):02x}" for c in control)
            visible = "".join(f"\\x{ord(c):02x}" if c in control else c for c in raw)
            raise Invalid(f"\"{visible}\" contains the control character(s) {shown} (a null byte or similar, "
                          "usually pasted by mistake); remove them")
        return raw


class Name(Text):
    """A name used in key paths and CSV columns: non-empty, without dots, brackets, quotes, '=' or spaces."""

    description = "a name"

    def convert(self, raw: Any) -> str:
        name = super().convert(raw)
        bad = sorted({c for c in name if c in _NAME_FORBIDDEN})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            raise Invalid(
                f"{show(name)} contains {shown}; a name may not contain dots, brackets, quotes, '=' or spaces"
            )
        return name


class Choice(Kind):
    """One string out of a fixed list (matched exactly; the message suggests the closest option)."""

    text = True

    def __init__(self, *options: str) -> None:
        self.options = options
        self.description = "one of " + ", ".join(options)

    @property
    def allowed(self) -> str:
        return " | ".join(self.options)

    def convert(self, raw: Any) -> str:
        if not isinstance(raw, str):
            raise Invalid(f"expected one of {', '.join(self.options)}, got {show(raw)}")
        if raw not in self.options:
            raise Invalid(f"{show(raw)} is not one of {', '.join(self.options)}{suggest(raw, self.options)}")
        return raw


def _numbers(raw: Any, count: int, what: str, *, allow_inf: bool = False) -> tuple[float, ...]:
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if not isinstance(raw, list | tuple):
        raise Invalid(f"expected {what}, got {show(raw)}")
    if len(raw) != count:
        raise Invalid(f"expected {what}, got {len(raw)} value{'s' if len(raw) != 1 else ''}")
    values = []
    for i, item in enumerate(raw):
        try:
            values.append(_number(item, allow_inf=allow_inf))
        except Invalid as error:
            raise Invalid(f"item {i}: {error}") from None
    return tuple(values)


class Vector(Kind):
    """``n`` finite numbers; with ``nonzero`` the vector may not be all zeros (a direction)."""

    def __init__(self, n: int = 3, *, nonzero: bool = False, positive: bool = False) -> None:
        self.n, self.nonzero, self.positive = n, nonzero, positive
        self.description = f"a list of {n} numbers"

    def convert(self, raw: Any) -> tuple[float, ...]:
        values = _numbers(raw, self.n, self.description)
        if self.nonzero and not any(values):
            raise Invalid(f"{show(raw)} is a zero vector; a direction must be non-zero")
        if self.positive and min(values) <= 0.0:
            raise Invalid(f"{show(raw)}: every component must be in (0, inf)")
        return values

    def to_toml(self, value: Any) -> Any:
        return list(value)


class Box(Kind):
    """An axis-aligned box ``[xmin, ymin, zmin, xmax, ymax, zmax]``, min <= max on each axis (SOFA BoxROI)."""

    description = "a list of 6 numbers [xmin, ymin, zmin, xmax, ymax, zmax]"

    def convert(self, raw: Any) -> tuple[float, ...]:
        values = _numbers(raw, 6, self.description)
        for axis, name in enumerate("xyz"):
            if values[axis] > values[axis + 3]:
                raise Invalid(
                    f"{name}min > {name}max ({values[axis]:g} > {values[axis + 3]:g}); "
                    "a box is [xmin, ymin, zmin, xmax, ymax, zmax]"
                )
        return values

    def to_toml(self, value: Any) -> Any:
        return list(value)


class VectorList(Kind):
    """A non-empty list of 3-vectors; a single 3-vector is accepted and stored as a list of one."""

    description = "a 3-vector or a list of 3-vectors"

    def convert(self, raw: Any) -> tuple[tuple[float, ...], ...]:
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if isinstance(raw, list | tuple) and raw and not isinstance(raw[0], list | tuple):
            return (_numbers(raw, 3, "a list of 3 numbers"),)
        if not isinstance(raw, list | tuple) or not raw:
            raise Invalid(f"expected {self.description}, got {show(raw)}")
        points = []
        for i, item in enumerate(raw):
            try:
                points.append(_numbers(item, 3, "a list of 3 numbers"))
            except Invalid as error:
                raise Invalid(f"point {i}: {error}") from None
        return tuple(points)

    def to_toml(self, value: Any) -> Any:
        return [list(p) for p in value]


class IndexList(Kind):
    """A non-empty list of node indices (integers >= 0)."""

    description = "a list of integers >= 0"

    def convert(self, raw: Any) -> tuple[int, ...]:
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if not isinstance(raw, list | tuple) or not raw:
            raise Invalid(f"expected a non-empty list of integers >= 0, got {show(raw)}")
        for i, item in enumerate(raw):
            if isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer):
                raise Invalid(f"item {i}: expected an integer >= 0, got {show(item)}")
            if item < 0:
                raise Invalid(f"item {i}: {item} is outside [0, inf)")
        return tuple(int(i) for i in raw)

    def to_toml(self, value: Any) -> Any:
        return list(value)


class NameList(Kind):
    """A non-empty list of names (each a :class:`Name`), without repeats."""

    description = "a list of names"

    def convert(self, raw: Any) -> tuple[str, ...]:
        if not isinstance(raw, list | tuple) or not raw:
            raise Invalid(f"expected a non-empty list of names, got {show(raw)}")
        names = []
        for i, item in enumerate(raw):
            try:
                names.append(Name().convert(item))
            except Invalid as error:
                raise Invalid(f"item {i}: {error}") from None
        if len(set(names)) != len(names):
            raise Invalid(f"{show(raw)} names one item twice")
        return tuple(names)

    def to_toml(self, value: Any) -> Any:
        return list(value)


class Flags(Kind):
    """``n`` integers each 0 or 1 (SoftRobots ``useDirections``)."""

    def __init__(self, n: int = 3) -> None:
        self.n = n
        self.description = f"a list of {n} integers, each 0 or 1"

    def convert(self, raw: Any) -> tuple[int, ...]:
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if not isinstance(raw, list | tuple) or len(raw) != self.n:
            got = f"{len(raw)} values" if isinstance(raw, list | tuple) else show(raw)
            raise Invalid(f"expected {self.description}, got {got}")
        for i, item in enumerate(raw):
            if isinstance(item, bool) or item not in (0, 1):
                raise Invalid(f"item {i}: {show(item)} is not 0 or 1")
        return tuple(int(v) for v in raw)

    def to_toml(self, value: Any) -> Any:
        return list(value)


class Keyframes(Kind):
    """``[[t0, v0], [t1, v1], ...]``: at least one pair of a time and a value, times strictly increasing, every
    value a number or every value a list of the same count of numbers. Stored as a tuple of ``(t, v)`` pairs
    (``v`` a float or a tuple of floats)."""

    description = "a list of [time, value] pairs, times increasing"

    def convert(self, raw: Any) -> tuple:
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if not isinstance(raw, list | tuple) or not raw:
            raise Invalid(f"expected {self.description} ([[0.0, 0.0], [1.0, 5.0]]), got {show(raw)}")
        pairs, size = [], None
        for i, item in enumerate(raw):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise Invalid(f"keyframe {i}: expected a pair [time, value], got {show(item)}")
            try:
                time = _number(item[0])
            except Invalid as error:
                raise Invalid(f"keyframe {i}: time: {error}") from None
            value = item[1]
            this = None if not isinstance(value, list | tuple) else len(value)
            try:
                value = _number(value) if this is None else _numbers(value, this, f"a list of {this} numbers")
            except Invalid as error:
                raise Invalid(f"keyframe {i}: value: {error}") from None
            if this == 0:
                raise Invalid(f"keyframe {i}: value: expected a number or a list of numbers, got []")
            if i and this != size:
                raise Invalid(f"keyframe {i}: value {show(item[1])} has another shape than keyframe 0's "
                              f"({'a number' if size is None else f'{size} numbers'}); every value must have one")
            if i and time <= pairs[-1][0]:
                raise Invalid(f"keyframe {i}: time {time:g} is not after keyframe {i - 1}'s {pairs[-1][0]:g}; "
                              "times must increase")
            size = this
            pairs.append((time, value))
        return tuple(pairs)

    def to_toml(self, value: Any) -> Any:
        return [[t, list(v) if isinstance(v, tuple) else v] for t, v in value]


class FilePath(Text):
    """A path relative to the scene file (or absolute); its existence is checked by the loader."""

    description = "a file path"
