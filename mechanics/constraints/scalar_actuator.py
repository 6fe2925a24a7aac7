"""The one-row SoftRobots actuators: what cables and cavities share.

Each has two scalar quantities: a motion, the constraint value its row imposes (the cable's displacement, length
unit; the cavity's volume growth, volume unit) and an effort, the row's multiplier (the cable's tension, force
unit; the cavity's pressure, pressure unit). ``valueType`` chooses which of the two the actuator imposes:

- the motion (:attr:`ScalarActuator.MOTION_MODE`): a BOUNDED row whose target is ``value`` clipped to the
  motion's rate limit and range, its multiplier within the effort's range;
- the effort (the other valueType): a FORCE row whose target is ``value`` clipped to the effort's rate limit and
  range, the motion within its range.

Each quantity's bounds and rate limit are scene keys, named by a :class:`Bounds` (SoftRobots
``CableConstraint``, ``SurfacePressureConstraint`` and their inverse-mode actuators,
SoftRobots.Inverse ``CableActuator::updateLimit``).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from softsim.mechanics.constraints.base import (
    Constraint,
    InverseLimits,
    check_order,
    inverse_range,
    limit_binds,
    or_inf,
)
from softsim.mechanics.resolutions import BOUNDED, FORCE, Blocks

__all__ = ["Bounds", "ScalarActuator", "clip_target"]


@dataclass(frozen=True)
class Bounds:
    """The scene keys that bound one quantity: its lower and upper bound and its largest change per frame (None
    when the quantity has no rate limit). ``negated_lower``: the lower key holds the bound's magnitude
    (SoftRobots' ``maxNegativeDisp`` bounds the displacement below at ``-maxNegativeDisp``)."""

    lo_key: str
    hi_key: str
    variation_key: str | None = None
    negated_lower: bool = False


def clip_target(value: float, current: float, variation: float | None, lo: float | None,
                hi: float | None) -> float:
    """SoftRobots' clipping of an imposed value: at most ``variation`` away from ``current``, then within
    ``[lo, hi]`` (None: no limit)."""
    if variation is not None:
        value = current + max(-variation, min(variation, value - current))
    if hi is not None:
        value = min(value, hi)
    if lo is not None:
        value = max(value, lo)
    return value


class ScalarActuator(Constraint):
    """A one-row actuator imposing a motion or an effort (see the module docstring).

    Subclasses declare :attr:`MOTION_MODE`, :attr:`MOTION` and :attr:`EFFORT`, and give the motion at positions
    ``x`` (:meth:`motion_at`) and, after :meth:`store`, the motion and effort reached (:attr:`motion`,
    :attr:`effort`). Parameters are set by :meth:`set_parameters`; ``value`` and ``valueType`` are among them.
    """

    #: the valueType that imposes the motion (the other one imposes the effort)
    MOTION_MODE: str = ""
    MOTION: Bounds
    EFFORT: Bounds

    def __init__(self, name: str) -> None:
        super().__init__(name)
        #: the target the rows imposed in the last frame, after the range and rate clipping (None before)
        self.imposed: float | None = None
        #: inverse mode: the motion the inverse solver imposes (None: forward mode, ``value`` applies), and the
        #: bound it found active ("" when none)
        self.inverse_target: float | None = None
        self.inverse_bound = ""
        #: whether the last stored frame converged (set by the simulation): only then is an actuator short of its
        #: value with its other quantity on a bound held by that bound (``limited``)
        self.settled = True

    # ------------------------------------------------------------------ what subclasses give
    @abc.abstractmethod
    def motion_at(self, x) -> float:
        """The motion at node positions ``x`` ``(n, 3)``."""

    @property
    @abc.abstractmethod
    def motion(self) -> float:
        """The motion after the last :meth:`store`."""

    @property
    @abc.abstractmethod
    def effort(self) -> float:
        """The multiplier after the last :meth:`store`."""

    # ------------------------------------------------------------------ bounds
    def bounds(self, quantity: Bounds) -> tuple[float | None, float | None, float | None]:
        """``(lo, hi, variation)`` of ``quantity`` (:attr:`MOTION` or :attr:`EFFORT`) from the parameters,
        None where unset."""
        lo = getattr(self, quantity.lo_key)
        if lo is not None and quantity.negated_lower:
            lo = -lo
        variation = getattr(self, quantity.variation_key) if quantity.variation_key else None
        return lo, getattr(self, quantity.hi_key), variation

    def _range(self, quantity: Bounds) -> tuple[float, float]:
        """``quantity``'s bounds, infinite where unset."""
        lo, hi, _ = self.bounds(quantity)
        return or_inf(lo, -1), or_inf(hi, 1)

    def _check_consistency(self) -> None:
        for quantity in (self.EFFORT, self.MOTION):
            lo, hi, _ = self.bounds(quantity)
            lo_name = f"-{quantity.lo_key}" if quantity.negated_lower else quantity.lo_key
            check_order(self.name, lo_name, lo, quantity.hi_key, hi)

    # ------------------------------------------------------------------ protocol
    @property
    def n_rows(self) -> int:
        return 1 if self.active else 0

    @property
    def imposes_motion(self) -> bool:
        """True when ``valueType`` imposes the motion, False when it imposes the effort."""
        return self.valueType == self.MOTION_MODE

    def target(self, x) -> float:
        """The imposed motion or effort after SoftRobots' clipping: within the rate limit of the current value
        (the motion at ``x``, or the last effort), then within the range."""
        return self._target(lambda: self.motion_at(x))

    def _target(self, motion) -> float:
        """:meth:`target` with ``motion()`` the current motion, asked only when the motion has a rate limit (the
        motion at positions costs a cable's length)."""
        if self.imposes_motion:
            variation, lo, hi = self._clip_bounds(self.MOTION)
            return clip_target(float(self.value), motion() if variation is not None else 0.0, variation, lo, hi)
        return clip_target(float(self.value), self.effort, *self._clip_bounds(self.EFFORT))

    def _clip_bounds(self, quantity: Bounds) -> tuple[float | None, float | None, float | None]:
        lo, hi, variation = self.bounds(quantity)
        return variation, lo, hi

    def blocks(self, x) -> Blocks:
        """Motion imposed: BOUNDED(target motion, the effort's range); effort imposed: FORCE(target effort, the
        motion's range). Inverse mode: BOUNDED(the inverse solver's motion, the effort's range)."""
        if not self.active:
            return Blocks.empty()
        kind, target, lo, hi = self.block_values(lambda: self.motion_at(x))
        return Blocks.force(1, target, lo, hi) if kind == FORCE else Blocks.bounded(1, target, lo, hi)

    def block_values(self, motion) -> tuple[int, float, float, float]:
        """The row's law as ``(kind, target, lo, hi)`` (see :meth:`blocks`), with ``motion()`` the motion at the
        positions the rate limit is measured from (asked only when there is one); records :attr:`imposed`.
        :mod:`~mechanics.constraints.cable_rows` builds many cables' rows from these values at once."""
        effort_lo, effort_hi = self._range(self.EFFORT)
        if self.inverse_target is not None:
            return BOUNDED, float(self.inverse_target), effort_lo, effort_hi
        target = self._target(motion)
        self.imposed = target
        if self.imposes_motion:
            return BOUNDED, target, effort_lo, effort_hi
        motion_lo, motion_hi = self._range(self.MOTION)
        return FORCE, target, motion_lo, motion_hi

    @property
    def limited(self) -> float:
        """1.0 when a limit holds the actuator short of its value (the rate limit or the range clipped the
        target, or the other quantity sits on one of its bounds), else 0.0; in inverse mode, when the solution
        sits on one of the limits. An actuator short of its value in a frame that did not converge is not
        limited."""
        if self.inverse_target is not None:
            return float(bool(self.inverse_bound))
        if self.imposes_motion:
            return limit_binds(float(self.value), self.imposed, self.motion, self.effort, *self._range(self.EFFORT),
                               self.settled)
        return limit_binds(float(self.value), self.imposed, self.effort, self.motion, *self._range(self.MOTION),
                           self.settled)

    # ------------------------------------------------------------------ inverse mode
    def inverse_limits(self, motion: float, effort: float) -> InverseLimits:
        """The admissible set in inverse mode from the motion and effort at the start of the frame: each within
        its range and within its rate limit of its start value."""
        effort_range = self._inverse_range(self.EFFORT, effort)
        motion_range = self._inverse_range(self.MOTION, motion)
        return InverseLimits(effort_range[0], effort_range[1], motion_range[0], motion_range[1],
                             (*effort_range[2:], *motion_range[2:]))

    def _inverse_range(self, quantity: Bounds, reference: float) -> tuple[float, float, str, str]:
        lo, hi, variation = self.bounds(quantity)
        return inverse_range(lo, hi, quantity.lo_key, quantity.hi_key, reference, variation,
                             quantity.variation_key or "")

    @property
    def inverse_state(self) -> tuple[float, float]:
        """(motion, effort) after the last store: where the next inverse frame starts."""
        return self.motion, self.effort
