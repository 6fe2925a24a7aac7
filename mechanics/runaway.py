"""The runaway test of a trial state (:func:`mechanics.frame_step.check_state`): whether positions are finite, the
node that moved the most from rest and how far, and the body's size, in one numba pass without allocation (every
trial state of the equilibrium steps is checked)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["scan_positions"]


@njit(cache=True, nogil=True)
def _scan(x, rest):
    finite = True
    largest, node = -1.0, 0
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i in range(x.shape[0]):
        squared = 0.0
        for k in range(3):
            value = x[i, k]
            if not np.isfinite(value):
                finite = False
            difference = value - rest[i, k]
            squared += difference * difference
            r = rest[i, k]
            if r < lo[k]:
                lo[k] = r
            if r > hi[k]:
                hi[k] = r
        if squared > largest:
            largest, node = squared, i
    size = 0.0
    if x.shape[0]:
        size = math.sqrt((hi[0] - lo[0]) ** 2 + (hi[1] - lo[1]) ** 2 + (hi[2] - lo[2]) ** 2)
    return finite, node, math.sqrt(max(largest, 0.0)), size


def scan_positions(x: np.ndarray, rest: np.ndarray) -> tuple[bool, int, float, float]:
    """``(every value of x finite, the node farthest from its rest position, that distance, the diagonal of the
    rest positions' bounding box)`` for positions ``x`` and ``rest`` (n, 3), lengths in their unit. With a
    non-finite value the node and distance are not meaningful."""
    return _scan(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(rest, dtype=np.float64))
