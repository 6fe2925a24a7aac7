"""SoftRobots ``UnilateralPlaneConstraint``: one point kept on the positive side of the plane through three
others (ArticulatedTentacle keeps its segments from closing through each other with seven of them).

Points ``p0`` (the constrained one) and ``p1, p2, p3`` (the plane), body nodes or positions embedded in the
tetrahedra. With ``n = (p2 - p1) x (p3 - p1)`` (reversed by ``flipNormal``) and ``m = n / |n|``:

- the gap ``g(x) = (p0 - p1) . m`` (SoftRobots' ``getConstraintViolation``), length units;
- one row, ``J = dg/dx``: ``m`` on p0 and, on the plane's points, ``-m`` on p1 plus the terms of the plane's
  rotation (with ``w = (I - m m^T)(p0 - p1) / |n|``: ``(p3 - p1) x w`` on p2, ``w x (p2 - p1)`` on p3 and minus
  their sum on p1). SoftRobots writes ``n, -n/3, -n/3, -n/3`` (the rotation of the plane left out, the row
  not normalised: the same solution, a multiplier scaled by ``|n|``); the exact gradient lets the constrained
  equilibrium converge quadratically, and :meth:`force_stiffness` gives it the row's second derivative;
- ``dfree = J (x_free - x) + g(x)``, resolution BOUNDED(target 0, [0, inf)): the multiplier is >= 0, the gap
  >= 0, and one of them is 0 (SoftRobots' ``UnilateralPlaneConstraintResolution``).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, PointSet, check_positions
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, Blocks

logger = logging.getLogger(__name__)

__all__ = ["UnilateralPlaneConstraint", "plane_gap_and_gradient"]


def plane_gap_and_gradient(points: np.ndarray, flip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Gap ``(...,)`` of ``p0`` above the plane through ``p1, p2, p3`` and its gradient ``(..., 4, 3)``.

    ``points`` is ``(..., 4, 3)`` (real or complex: the complex step of :meth:`UnilateralPlaneConstraint.
    force_stiffness` differentiates this function). A degenerate plane (three points on a line) has gap 0 and
    gradient 0.
    """
    p0, p1, p2, p3 = (points[..., i, :] for i in range(4))
    e2, e3, d = p2 - p1, p3 - p1, p0 - p1
    n = np.cross(e2, e3)
    if flip:
        n = -n
    length = np.sqrt(np.sum(n * n, axis=-1))  # analytic in complex arguments (np.linalg.norm is not)
    degenerate = np.abs(length) == 0.0
    safe = np.where(degenerate, 1.0, length)
    m = n / safe[..., None]
    gap = np.sum(d * m, axis=-1)
    w = (d - gap[..., None] * m) / safe[..., None]
    sign = -1.0 if flip else 1.0
    g2 = sign * np.cross(e3, w)
    g3 = sign * np.cross(w, e2)
    gradient = np.stack([m, -m - g2 - g3, g2, g3], axis=-2)
    gap = np.where(degenerate, 0.0, gap)
    gradient = np.where(degenerate[..., None, None], 0.0, gradient)
    return gap, gradient


class UnilateralPlaneConstraint(Constraint):
    """The point ``indices[0]`` kept on the positive side of the plane through ``indices[1:4]``.

    Args:
        X: rest node positions ``(n, 3)``; tets: ``(m, 4)`` (needed with ``points``).
        indices: four ids: node ids, or rows of ``points``.
        points: positions ``(k, 3)`` embedded in the tetrahedra (a SoftRobots MechanicalObject with a
            BarycentricMapping); None: ``indices`` are node ids.
        flipNormal: reverse the normal.
        name: identifier.

    Outputs: ``gap`` (the point's distance above the plane, length) and ``force`` (the multiplier, >= 0).
    """

    ramped = False  # the target is the geometry's, not a value to move to in increments

    def __init__(self, X: np.ndarray, tets: np.ndarray | None = None, *, indices, points=None,
                 flipNormal: bool = False, name: str = "unilateralPlane",
                 mapping_tolerance: float | None = None) -> None:
        super().__init__(name)
        ids = np.asarray(indices)
        if ids.shape != (4,) or not np.issubdtype(ids.dtype, np.integer) or len(set(ids.tolist())) != 4:
            raise ParameterError(f"{name}: indices must be 4 different integer ids, got {indices!r}")
        if points is None:
            self.point_set = PointSet(name, X, tets, indices=ids, tolerance=mapping_tolerance)
        else:
            points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
            if ids.min() < 0 or ids.max() >= points.shape[0]:
                raise ParameterError(f"{name}: indices must be rows of points (0..{points.shape[0] - 1}), "
                                     f"got {ids.tolist()}")
            self.point_set = PointSet(name, X, tets, points=points[ids], tolerance=mapping_tolerance)
        self.n_nodes = self.point_set.n_nodes
        self.flipNormal = bool(flipNormal)
        self.gap, self.force = self._gap(self.point_set.X), 0.0
        self._pairs = None

    def _gap(self, x: np.ndarray) -> float:
        return float(plane_gap_and_gradient(self.point_set.positions(x), self.flipNormal)[0])

    @property
    def n_rows(self) -> int:
        return 1 if self.active else 0

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """The row ``dg/dx`` ``(1, 3n)`` at ``x``."""
        x = check_positions(self.name, x, self.n_nodes)
        if not self.active:
            return sp.csr_matrix((0, 3 * self.n_nodes))
        _gap, gradient = plane_gap_and_gradient(self.point_set.positions(x), self.flipNormal)
        return self.point_set.rows_to_dofs(gradient[None])

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J (x_free - x) + g(x)`` ``(1,)``."""
        if not self.active:
            return np.zeros(0)
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        return J @ (x_free - x).reshape(-1) + self._gap(x)

    def blocks(self, x: np.ndarray) -> Blocks:
        """BOUNDED(target 0, [0, inf)): a unilateral contact."""
        n = self.n_rows
        return Blocks(np.arange(n), np.ones(n), np.full(n, BOUNDED), 0.0, 0.0, np.inf, 0.0)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """``d2g/dp2`` ``(4, 3, 4, 3)`` over the four points at ``x``, by the complex step of the analytic
        gradient (exact to rounding: ``Im grad(p + i h e_k) / h`` has no subtraction)."""
        points = self.point_set.positions(check_positions(self.name, x, self.n_nodes))
        step = 1e-30 * max(1.0, float(np.abs(points).max()))
        probes = np.broadcast_to(points.astype(np.complex128), (12, 4, 3)).copy()
        probes.reshape(12, 12)[np.arange(12), np.arange(12)] += 1j * step
        _gap, gradient = plane_gap_and_gradient(probes, self.flipNormal)
        return (gradient.imag / step).reshape(4, 3, 4, 3).transpose(2, 3, 0, 1)

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``-force d2g/dx2`` as triplets over the body DOFs (see
        :meth:`~mechanics.constraints.base.Constraint.force_stiffness`)."""
        if not self.active:
            return None
        if self._pairs is None:
            first, second = np.repeat(np.arange(4), 4), np.tile(np.arange(4), 4)
            self._pairs = (first, second, *self.point_set.pair_structure(first, second))
        first, second, rows, cols, products = self._pairs
        hessian = self.hessian(x)
        blocks = -float(np.asarray(force).reshape(-1)[0]) * hessian[first, :, second, :]
        return rows, cols, self.point_set.pair_values(products, blocks)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        x_new = check_positions(self.name, x_new, self.n_nodes)
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        self.force = float(force[0]) if force.size else 0.0
        self.gap = self._gap(x_new)

    @property
    def outputs(self) -> dict[str, float]:
        return {"gap": self.gap, "force": self.force}
