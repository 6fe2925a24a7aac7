"""The automatic colour range of a field: from 0 to a round number, steady from frame to frame, and 0 below
the field's noise floor (so a body at rest does not show round-off as 0..1e-12 with colliding labels)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NOISE_FLOOR", "noise_floor", "nice_ceiling", "auto_color_range", "readout_floor", "without_round_off"]

#: a field whose largest value is below this share of its scale (the body's size for a length, its Young's
#: modulus for a stress or an energy density) is round-off: it reads as 0
NOISE_FLOOR = 1e-9
#: the range of a field that is all noise: [0, this share of its scale], labels of round numbers
ZERO_FIELD_SHARE = 1e-3
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def noise_floor(quantity: str, body_size: float, young_modulus: float) -> float:
    """The value below which a field of this quantity ("length", "pressure", "energy density") is noise."""
    scale = body_size if quantity == "length" else young_modulus
    return NOISE_FLOOR * abs(scale) if scale else 0.0


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= ``value`` (> 0)."""
    if not value > 0.0 or not math.isfinite(value):
        raise ValueError(f"nice_ceiling needs a finite positive value, got {value!r}")
    power = 10.0 ** math.floor(math.log10(value))
    for step in _STEPS:
        if step * power >= value * (1.0 - 1e-12):
            return step * power
    return 10.0 * power


def auto_color_range(values: np.ndarray, floor: float,
                     previous: tuple[float, float] | None = None) -> tuple[float, float]:
    """``(0, hi)`` for non-negative values (n,): ``hi`` the nice ceiling of their maximum, kept from ``previous``
    while the maximum stays between 40 % and 100 % of it (the labels do not change every frame); a field whose
    maximum is at most ``floor`` reads as zero: ``(0, nice_ceiling(floor / NOISE_FLOOR * ZERO_FIELD_SHARE))``.
    A field with negative values gets ``(min, hi)`` with ``min`` as it is."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    top = float(finite.max()) if finite.size else 0.0
    low = min(float(finite.min()), 0.0) if finite.size else 0.0
    if top <= floor:
        zero_scale = floor / NOISE_FLOOR * ZERO_FIELD_SHARE if floor > 0 else 1.0
        return low, nice_ceiling(zero_scale)
    if previous is not None and previous[0] == low and 0.4 * previous[1] <= top <= previous[1]:
        return previous
    return low, nice_ceiling(top)


def readout_floor(quantity: str | None, body_size: float, young_modulus: float) -> float:
    """The noise floor of a readout of this quantity (``mechanics.units.output_quantity``): NOISE_FLOOR times its
    scale, the body's size L for a length, L^3 for a volume, the Young's modulus E for a pressure, E L^2 for a
    force; 0 for anything else (a count, a flag)."""
    size, young = abs(body_size), abs(young_modulus)
    scale = {"length": size, "volume": size ** 3, "pressure": young, "force": young * size ** 2}.get(quantity, 0.0)
    return NOISE_FLOOR * scale


def without_round_off(value: float, floor: float) -> float:
    """``value``, or 0.0 when it is within ``floor`` of 0 (a readout of -2.8e-14 mm on a 100 mm body is 0)."""
    return 0.0 if abs(value) <= floor else value
