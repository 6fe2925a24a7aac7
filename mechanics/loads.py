"""External loads: lumped masses, gravity, nodal forces and follower pressure on triangle sets.

Every load has ``force(x) -> (n, 3)`` (external force at current positions ``x`` of shape ``(n, 3)``, in the
scene's force unit) and ``tangent(x)``: ``None`` for loads that do not depend on ``x``, else a
``csr_matrix (3n, 3n)`` equal to ``-d force / d x`` (the sign convention of the elastic tangent ``K``).
Conservative position-independent loads (:class:`Gravity`, :class:`NodalForce`) also have
``potential(x) -> float`` (``-sum(force . x)``), used by the Newton line search's energy merit function.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices

logger = logging.getLogger(__name__)

__all__ = ["Gravity", "NodalForce", "PressureLoad", "lumped_masses"]


def _as_points(X, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 3:
        raise ParameterError(f"{name} must have shape (n, 3), got {X.shape}")
    return X


def _as_index_array(values, n_nodes: int | None, name: str, width: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ParameterError(f"{name} must hold integer node ids, got dtype {array.dtype}")
    array = array.astype(np.int64)
    if width is not None and (array.ndim != 2 or array.shape[1] != width):
        raise ParameterError(f"{name} must have shape (k, {width}), got {array.shape}")
    if array.size and array.min() < 0:
        raise ParameterError(f"{name} has a negative node id {int(array.min())}")
    if n_nodes is not None and array.size and array.max() >= n_nodes:
        raise ParameterError(f"{name} has node id {int(array.max())}, allowed range is 0..{n_nodes - 1}")
    return array


def lumped_masses(X, tets, density=None, *, total_mass=None) -> np.ndarray:
    """Lumped nodal masses ``(n,)``: each tet gives a quarter of its mass ``density * volume`` to each node.

    Give exactly one of ``density`` (scalar or ``(m,)`` per tet, mass per unit volume, > 0) and
    ``total_mass`` (> 0, spread with a uniform density over the total volume). Nodes used by no tet get 0.
    """
    X = _as_points(X, "X")
    tets = _as_index_array(tets, X.shape[0], "tets", width=4)
    if (density is None) == (total_mass is None):
        raise ParameterError("lumped_masses needs exactly one of density and total_mass")
    edges = X[tets[:, 1:]] - X[tets[:, :1]]
    volumes = np.abs(np.linalg.det(edges)) / 6.0
    if total_mass is not None:
        total_mass = float(total_mass)
        if not np.isfinite(total_mass) or total_mass <= 0.0:
            raise ParameterError(f"total_mass must be a finite number > 0, got {total_mass}")
        total_volume = volumes.sum()
        if total_volume <= 0.0:
            raise ParameterError("total_mass given but the tets have zero total volume")
        density = total_mass / total_volume
    density = np.asarray(density, dtype=np.float64)
    if density.ndim not in (0, 1) or (density.ndim == 1 and density.shape[0] != tets.shape[0]):
        raise ParameterError(
            f"density must be a scalar or have shape ({tets.shape[0]},), got {density.shape}"
        )
    if not np.all(np.isfinite(density)) or np.any(density <= 0.0):
        raise ParameterError("density must be finite and > 0")
    quarter_masses = np.broadcast_to(density * volumes / 4.0, (tets.shape[0],))
    return np.bincount(tets.reshape(-1), weights=np.repeat(quarter_masses, 4), minlength=X.shape[0])


class Gravity:
    """Weight of lumped masses: ``force = masses[:, None] * g``, independent of ``x``.

    ``masses`` ``(n,)`` (>= 0), ``g`` ``(3,)`` acceleration (e.g. ``(0, 0, -9.81)`` m/s^2 or ``(0, -9810, 0)``
    mm/s^2 in SoftRobots scenes). ``g`` can be changed live through the attribute.
    """

    def __init__(self, masses, g):
        masses = np.asarray(masses, dtype=np.float64)
        if masses.ndim != 1 or not np.all(np.isfinite(masses)) or np.any(masses < 0.0):
            raise ParameterError("Gravity masses must be a finite (n,) array of values >= 0")
        self.masses = masses
        self.g = g

    @property
    def g(self) -> np.ndarray:
        return self._g

    @g.setter
    def g(self, value) -> None:
        value = np.asarray(value, dtype=np.float64)
        if value.shape != (3,) or not np.all(np.isfinite(value)):
            raise ParameterError(f"gravity g must be a finite 3-vector, got {value!r}")
        self._g = value
        self._force = self.masses[:, None] * value

    def force(self, x) -> np.ndarray:
        if x.shape[0] != self.masses.shape[0]:
            raise ParameterError(f"Gravity built for {self.masses.shape[0]} nodes, x has {x.shape[0]}")
        return self._force.copy()

    def potential(self, x) -> float:
        """Potential energy of the load, ``-sum(force . x)`` (its gradient is ``-force``)."""
        return -float(np.sum(self._force * x))

    def tangent(self, x):
        return None


class NodalForce:
    """A total force ``(3,)`` spread equally over ``nodes`` (each gets ``total_force / len(nodes)``).

    Mirrors SOFA's ConstantForceField with ``totalForce``. ``total_force`` can be changed live.
    """

    def __init__(self, nodes, total_force):
        nodes = _as_index_array(np.atleast_1d(nodes), None, "NodalForce nodes")
        if nodes.ndim != 1 or nodes.size == 0:
            raise ParameterError("NodalForce nodes must be a non-empty 1-D array of node ids")
        if np.unique(nodes).size != nodes.size:
            raise ParameterError("NodalForce nodes must not repeat a node id")
        self.nodes = nodes
        self.total_force = total_force

    @property
    def total_force(self) -> np.ndarray:
        return self._total_force

    @total_force.setter
    def total_force(self, value) -> None:
        value = np.asarray(value, dtype=np.float64)
        if value.shape != (3,) or not np.all(np.isfinite(value)):
            raise ParameterError(f"NodalForce total_force must be a finite 3-vector, got {value!r}")
        self._total_force = value

    def force(self, x) -> np.ndarray:
        if self.nodes.max() >= x.shape[0]:
            raise ParameterError(
                f"NodalForce node id {int(self.nodes.max())} >= number of nodes {x.shape[0]}"
            )
        f = np.zeros((x.shape[0], 3))
        f[self.nodes] = self._total_force / self.nodes.size
        return f

    def potential(self, x) -> float:
        """Potential energy of the load, ``-sum(force . x)`` (its gradient is ``-force``)."""
        return -float(np.sum(x[self.nodes] @ self._total_force) / self.nodes.size)

    def tangent(self, x):
        return None


class PressureLoad:
    """Follower pressure on a triangle set: each vertex gets ``pressure * area_normal / 3``.

    ``area_normal = (x1 - x0) x (x2 - x0) / 2`` at the *current* positions, so a positive pressure pushes
    along the right-hand normal of each triangle (for outward-oriented triangles of a cavity wall whose
    normals point into the material, a positive pressure inflates the cavity). ``pressure`` is in
    force / area and can be changed live.

    ``tangent(x)`` returns the exact derivative ``-d force / d x`` (a non-symmetric matrix). The static
    problem does not add it to the symmetric elastic tangent (which keeps Cholesky usable), so Newton
    treats the follower load explicitly: still convergent, but only linearly when the pressure dominates.
    """

    def __init__(self, triangles, pressure: float):
        self.triangles = _as_index_array(triangles, None, "PressureLoad triangles", width=3)
        if self.triangles.shape[0] == 0:
            raise ParameterError("PressureLoad needs at least one triangle")
        self.pressure = pressure

    @property
    def pressure(self) -> float:
        return self._pressure

    @pressure.setter
    def pressure(self, value) -> None:
        value = float(value)
        if not np.isfinite(value):
            raise ParameterError(f"pressure must be finite, got {value}")
        self._pressure = value

    def _edges(self, x):
        if self.triangles.max() >= x.shape[0]:
            raise ParameterError(
                f"PressureLoad triangle node id {int(self.triangles.max())} >= number of nodes {x.shape[0]}"
            )
        corners = x[self.triangles]
        return corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]

    def force(self, x) -> np.ndarray:
        e1, e2 = self._edges(x)
        vertex_force = (self._pressure / 6.0) * np.cross(e1, e2)
        f = np.zeros((x.shape[0], 3))
        for corner in range(3):
            np.add.at(f, self.triangles[:, corner], vertex_force)
        return f

    def tangent(self, x) -> sp.csr_matrix:
        e1, e2 = self._edges(x)
        # d(e1 x e2)/dx1 = -[e2]_x, d(e1 x e2)/dx2 = [e1]_x, d/dx0 = [e2]_x - [e1]_x; force = p/6 (e1 x e2).
        scale = self._pressure / 6.0
        derivative = np.stack(
            [cross_matrices(e2) - cross_matrices(e1), -cross_matrices(e2), cross_matrices(e1)], axis=1
        )  # (k, 3 columns-nodes, 3, 3): d force_a / d x_b, identical for the 3 rows-nodes a
        blocks = -scale * np.broadcast_to(derivative[:, None], (derivative.shape[0], 3, 3, 3, 3))
        tri = self.triangles
        row_dofs = 3 * tri[:, :, None] + np.arange(3)  # (k, 3, 3)
        rows = np.broadcast_to(row_dofs[:, :, None, :, None], blocks.shape)
        cols = np.broadcast_to(row_dofs[:, None, :, None, :], blocks.shape)
        n_dofs = 3 * x.shape[0]
        return sp.csr_matrix(
            (blocks.reshape(-1), (rows.reshape(-1), cols.reshape(-1))), shape=(n_dofs, n_dofs)
        )
