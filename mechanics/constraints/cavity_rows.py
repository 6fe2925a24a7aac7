"""The rows of all the cavities of a frame at once (:class:`SurfacePressureConstraint`): their volumes, volume
gradients and rows on the free DOFs in one compiled pass, as :mod:`~mechanics.constraints.cable_rows` does for
cables. One at a time, a cavity's row cost two passes of numpy cross products over its triangles (the row and
its violation), a sparse matrix and its columns mapped to the free DOFs, at each of a frame's four to five builds.

For a cavity with orientation s and signed volume ``V = (1/6) sum p0 . (p1 x p2)`` over its triangles: the row
``s dV/dx`` (SoftRobots' gradient: a third of each triangle's area vector ``(p1 - p0) x (p2 - p0) / 2`` on each
of its vertices), the violation and motion ``s (V - V_rest)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from softsim.mechanics.constraints.cable_rows import PointRows, rows_for
from softsim.mechanics.constraints.cavity import SurfacePressureConstraint

__all__ = ["CavityRows", "cavity_rows_for"]


@njit(cache=True, nogil=True)
def _cavities(x, point_ptr, point_nodes, point_weights, first_point, triangles, first_triangle, orientation, slots,
              volumes, points, gradient, data, with_rows):
    """Signed volumes (r,) of the cavities whose points are ``first_point[i]:first_point[i + 1]`` (at
    ``sum_j point_weights[j] x[point_nodes[j]]``) and triangles ``first_triangle[i]:first_triangle[i + 1]`` (ids
    among all points), and, when ``with_rows``, their rows ``orientation[i] dV/dx`` on the free DOFs written into
    ``data`` (``slots`` as in :func:`mechanics.constraints.cable_rows._cables`). ``points``, ``gradient`` (K, 3)
    are scratch. The gradient's sums run in numpy's order of :func:`surface_volume_gradient`."""
    for p in range(point_ptr.size - 1):
        for c in range(3):
            total = 0.0
            for j in range(point_ptr[p], point_ptr[p + 1]):
                total += point_weights[j] * x[point_nodes[j], c]
            points[p, c] = total
            gradient[p, c] = 0.0
    for i in range(volumes.size):
        volume = 0.0
        for t in range(first_triangle[i], first_triangle[i + 1]):
            a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
            a0, a1, a2 = points[a, 0], points[a, 1], points[a, 2]
            b0, b1, b2 = points[b, 0], points[b, 1], points[b, 2]
            c0, c1, c2 = points[c, 0], points[c, 1], points[c, 2]
            volume += a0 * (b1 * c2 - b2 * c1) + a1 * (b2 * c0 - b0 * c2) + a2 * (b0 * c1 - b1 * c0)
            if with_rows:
                u0, u1, u2 = b0 - a0, b1 - a1, b2 - a2
                v0, v1, v2 = c0 - a0, c1 - a1, c2 - a2
                t0 = (u1 * v2 - u2 * v1) / 6.0
                t1 = (u2 * v0 - u0 * v2) / 6.0
                t2 = (u0 * v1 - u1 * v0) / 6.0
                for vertex in (a, b, c):
                    gradient[vertex, 0] += t0
                    gradient[vertex, 1] += t1
                    gradient[vertex, 2] += t2
        volumes[i] = volume / 6.0
    if not with_rows:
        return
    for e in range(data.size):
        data[e] = 0.0
    for i in range(volumes.size):
        s = orientation[i]
        for p in range(first_point[i], first_point[i + 1]):
            for j in range(point_ptr[p], point_ptr[p + 1]):
                for c in range(3):
                    slot = slots[3 * j + c]
                    if slot >= 0:
                        data[slot] += point_weights[j] * (s * gradient[p, c])


class CavityRows(PointRows):
    """The rows ``s dV/dx`` of cavities; their quantity is the signed volume V, their motion the volume growth
    ``s (V - V_rest)``."""

    def __init__(self, cavities: list, free_dofs: np.ndarray, n_nodes: int) -> None:
        super().__init__(cavities, free_dofs, n_nodes)
        offsets = self.first_point[:-1]
        self.triangles = np.ascontiguousarray(np.concatenate([c.triangles + o for c, o in zip(cavities, offsets)]),
                                              dtype=np.int64)
        self.first_triangle = np.concatenate([[0], np.cumsum([len(c.triangles) for c in cavities])]).astype(np.int64)

    def _run(self, x: np.ndarray, with_rows: bool) -> tuple[np.ndarray, np.ndarray]:
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(self.n_nodes, 3)
        orientation = np.array([c.orientation for c in self.constraints], dtype=np.float64)
        volumes = np.empty(len(self.constraints))
        data = np.empty(int(self.indptr[-1]) if with_rows else 0)
        _cavities(x, self.point_ptr, self.point_nodes, self.point_weights, self.first_point, self.triangles,
                  self.first_triangle, orientation, self.slots, volumes, self._points, self._gradient, data, with_rows)
        return volumes, data

    def _motions(self, quantities: np.ndarray) -> np.ndarray:
        """The growths ``s (V - V_rest)`` (SurfacePressureConstraint.growth)."""
        return np.array([c.orientation * (v - c._signed_rest_volume) for c, v in zip(self.constraints, quantities)])


def cavity_rows_for(constraints: list, free_dofs: np.ndarray, n_nodes: int) -> CavityRows | None:
    """The (kept) :class:`CavityRows` of the active plain cavities among ``constraints``, or None."""
    return rows_for(CavityRows, SurfacePressureConstraint, constraints, free_dofs, n_nodes)
