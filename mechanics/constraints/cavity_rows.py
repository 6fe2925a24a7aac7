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

from softsim.mechanics.constraints.cable_rows import PointRows, rows_for
from softsim.mechanics.constraints.cavity import SurfacePressureConstraint
from softsim.mechanics.constraints.row_kernels import cavity_volumes

__all__ = ["CavityRows", "cavity_rows_for"]


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
        cavity_volumes(x, self.point_ptr, self.point_nodes, self.point_weights, self.first_point, self.triangles,
                       self.first_triangle, orientation, self.slots, volumes, self._points, self._gradient, data,
                       with_rows)
        return volumes, data

    def _motions(self, quantities: np.ndarray) -> np.ndarray:
        """The growths ``s (V - V_rest)`` (SurfacePressureConstraint.growth)."""
        return np.array([c.orientation * (v - c._signed_rest_volume) for c, v in zip(self.constraints, quantities)])


def cavity_rows_for(constraints: list, free_dofs: np.ndarray, n_nodes: int) -> CavityRows | None:
    """The (kept) :class:`CavityRows` of the active plain cavities among ``constraints``, or None."""
    return rows_for(CavityRows, SurfacePressureConstraint, constraints, free_dofs, n_nodes)
