"""Element inversion test for the Newton safeguard: which tetrahedra a step turns inside out.

An element is inverted at positions ``x`` when ``det F = det(Ds(x)) / det(Dm) <= 0``, with ``Ds`` the edge
matrix ``[x1 - x0, x2 - x0, x3 - x0]``. Rest edge matrices of a :class:`mechanics.fem.TetElasticity` have
``det(Dm) > 0`` (checked at construction), so the sign of ``det(Ds(x))`` decides. One numba pass over the
elements, without allocation; the start positions are only read for the elements inverted at the end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["count_new_inversions"]


@njit(cache=True, nogil=True, inline="always")
def _edge_determinant(x, tets, e):
    i0, i1, i2, i3 = tets[e, 0], tets[e, 1], tets[e, 2], tets[e, 3]
    ax, ay, az = x[i1, 0] - x[i0, 0], x[i1, 1] - x[i0, 1], x[i1, 2] - x[i0, 2]
    bx, by, bz = x[i2, 0] - x[i0, 0], x[i2, 1] - x[i0, 1], x[i2, 2] - x[i0, 2]
    cx, cy, cz = x[i3, 0] - x[i0, 0], x[i3, 1] - x[i0, 1], x[i3, 2] - x[i0, 2]
    return ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)


@njit(cache=True, nogil=True)
def _count_new_inversions(x_from, x_to, tets):
    count = 0
    for e in range(tets.shape[0]):
        if not _edge_determinant(x_to, tets, e) > 0.0 and _edge_determinant(x_from, tets, e) > 0.0:
            count += 1
    return count


def count_new_inversions(x_from: np.ndarray, x_to: np.ndarray, tets: np.ndarray) -> int:
    """Number of tetrahedra with ``det Ds > 0`` at ``x_from`` and ``det Ds <= 0`` (or NaN) at ``x_to``.

    ``x_from``, ``x_to``: ``(n, 3)`` positions; ``tets``: ``(m, 4)`` node ids. Elements already inverted at
    ``x_from`` are not counted, so a state that starts inverted is not locked in place.
    """
    return int(_count_new_inversions(np.ascontiguousarray(x_from, dtype=np.float64),
                                     np.ascontiguousarray(x_to, dtype=np.float64),
                                     np.ascontiguousarray(tets, dtype=np.int64)))
