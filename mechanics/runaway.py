"""The runaway test's scan of a trial state (:func:`mechanics.frame_step.check_state`): whether positions are
finite, and the node that moved the most from rest and how far, in one numba pass without allocation (every trial
state of the equilibrium steps is checked)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["scan_positions"]


@njit(cache=True, nogil=True)
def _scan(x, rest):
    finite = True
    largest, node = -1.0, 0
    for i in range(x.shape[0]):
        squared = 0.0
        for k in range(3):
            value = x[i, k]
            if not np.isfinite(value):
                finite = False
            difference = value - rest[i, k]
            squared += difference * difference
        if squared > largest:
            largest, node = squared, i
    return finite, node, math.sqrt(max(largest, 0.0))


def scan_positions(x: np.ndarray, rest: np.ndarray) -> tuple[bool, int, float]:
    """``(every value of x finite, the node farthest from its rest position, that distance)`` for positions ``x``
    and ``rest`` (n, 3), the distance in their length unit. With a non-finite value the node and distance are not
    meaningful."""
    return _scan(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(rest, dtype=np.float64))
