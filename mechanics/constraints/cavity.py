"""SoftRobots ``SurfacePressureConstraint``: a pressurised closed cavity surface, one row.

Reference sofa-constraints.md 4.3 (SoftRobots ``SurfacePressureModel.inl``):

- the cavity volume by the divergence theorem over the triangles of a closed surface;
- the row ``J = dV/dx``: each triangle adds a third of its area vector ``a_t = (p1-p0) x (p2-p0) / 2`` to
  each of
  its vertices. On a closed, consistently oriented surface this sum is the exact gradient of the enclosed
  volume
  (the extra terms of the exact per-triangle gradient cancel around every vertex fan), so ``J^T p`` is the
  pressure force ``p a_t / 3`` per vertex;
- violation ``dfree = J.(x_free - x) + V(x) - V0``: the linearised volume growth.

Orientation: SoftRobots reports ``|V|`` and leaves the sign of the row to the triangle orientation (hence
``flipNormal``). Here the orientation is fixed once from the rest configuration: the constrained quantity is
``s * V_signed(x)`` with ``s = sign(V_signed(X))`` (``-s`` with ``flipNormal``), so that a positive pressure
always
inflates the cavity whatever the triangle winding; ``flipNormal=True`` reverses the actuation (positive
pressure
deflates, ``volumeGrowth`` counts the volume lost). Outputs: ``cavityVolume = |V|``,
``initialCavityVolume = |V0|``, ``pressure`` (the multiplier) and ``volumeGrowth = s (V_signed - V_signed0)``.

Difference from SoftRobots (deliberate): under pressure control SoftRobots' resolution ignores
``minVolumeGrowth``
(its ``if`` overwrites the min correction); here both ``minVolumeGrowth`` and ``maxVolumeGrowth`` bound the
FORCE
block.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import PointSet, check_positions
from softsim.mechanics.constraints.scalar_actuator import Bounds, ScalarActuator
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices
from softsim.mechanics.scene.schema import CavitySpec, check_parameters

logger = logging.getLogger(__name__)

__all__ = ["SurfacePressureConstraint", "surface_volume", "surface_volume_gradient"]


def surface_volume(points: np.ndarray, triangles: np.ndarray) -> float:
    """Signed volume ``(1/6) sum p0 . (p1 x p2)`` enclosed by a closed triangle surface (positive when the
    triangles are oriented with outward normals). ``points (p, 3)``, ``triangles (k, 3)``."""
    p0, p1, p2 = (points[triangles[:, i]] for i in range(3))
    return float(np.einsum("ij,ij->", p0, np.cross(p1, p2)) / 6.0)


def surface_volume_gradient(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """SoftRobots' volume gradient ``(p, 3)``: a third of each triangle's area vector on each of its
    vertices."""
    p0, p1, p2 = (points[triangles[:, i]] for i in range(3))
    third_area = np.cross(p1 - p0, p2 - p0) / 6.0  # a_t / 3
    ids = triangles.reshape(-1)
    contributions = np.repeat(third_area, 3, axis=0)
    return np.column_stack(
        [np.bincount(ids, weights=contributions[:, c], minlength=points.shape[0]) for c in range(3)]
    )


class SurfacePressureConstraint(ScalarActuator):
    """One-row cavity actuator with SoftRobots parameters: its motion is the volume growth, its effort the
    pressure (:mod:`~mechanics.constraints.scalar_actuator`).

    Args:
        X: rest node positions ``(n, 3)``; tets: ``(m, 4)``.
        triangles: ``(k, 3)`` node ids of the cavity surface (a triangle set of the body), or
        surface_points, surface_triangles: a separate closed surface ``(p, 3)``, ``(k, 3)`` embedded in the
        body
            with a BarycentricMapping (SoftRobots' cavity child node).
        flipNormal: reverse the actuation direction (see the module docstring).
        valueType: ``"pressure"`` (impose the multiplier) or ``"volumeGrowth"`` (impose V - V0).
        value: imposed pressure or volume growth.
        minPressure, maxPressure: bounds on the multiplier (volumeGrowth mode) or on the imposed pressure.
        minVolumeGrowth, maxVolumeGrowth: bounds on the growth (pressure mode) or on the imposed growth.
        maxPressureVariation, maxVolumeGrowthVariation: largest change of the imposed value per step (>= 0).
    """

    SPEC = CavitySpec
    MOTION_MODE = "volumeGrowth"
    MOTION = Bounds("minVolumeGrowth", "maxVolumeGrowth", "maxVolumeGrowthVariation")
    EFFORT = Bounds("minPressure", "maxPressure", "maxPressureVariation")
    PARAMETERS = frozenset({"value", "valueType", "minPressure", "maxPressure", "minVolumeGrowth",
                            "maxVolumeGrowth", "maxPressureVariation", "maxVolumeGrowthVariation"})

    def __init__(
        self,
        X: np.ndarray,
        tets: np.ndarray | None = None,
        *,
        triangles: np.ndarray | None = None,
        surface_points: np.ndarray | None = None,
        surface_triangles: np.ndarray | None = None,
        flipNormal: bool = False,
        valueType: str = "pressure",
        value: float = 0.0,
        minPressure: float | None = None,
        maxPressure: float | None = None,
        minVolumeGrowth: float | None = None,
        maxVolumeGrowth: float | None = None,
        maxPressureVariation: float | None = None,
        maxVolumeGrowthVariation: float | None = None,
        name: str = "cavity",
        mapping_tolerance: float | None = None,
    ) -> None:
        super().__init__(name)
        if (triangles is None) == (surface_points is None):
            raise ParameterError(
                f"{name}: give either triangles (body node ids) or surface_points and surface_triangles"
            )
        if triangles is not None:
            surface = np.asarray(triangles)
            if surface.ndim != 2 or surface.shape[1] != 3 or surface.shape[0] == 0:
                raise ParameterError(
                    f"{name}: triangles must have shape (k, 3) with k >= 1, got {surface.shape}"
                )
            # Work on the surface nodes only; PointSet validates the node ids.
            used, local = np.unique(surface.reshape(-1), return_inverse=True)
            self.point_set = PointSet(name, X, tets, indices=used)
            self.triangles = local.reshape(-1, 3).astype(np.int64)
        else:
            if surface_triangles is None:
                raise ParameterError(f"{name}: surface_triangles are required with surface_points")
            surface = np.asarray(surface_triangles)
            if surface.ndim != 2 or surface.shape[1] != 3 or surface.shape[0] == 0:
                raise ParameterError(f"{name}: surface_triangles must have shape (k, 3), got {surface.shape}")
            n_surface = np.asarray(surface_points).reshape(-1, 3).shape[0]
            if (
                not np.issubdtype(surface.dtype, np.integer)
                or surface.min() < 0
                or surface.max() >= n_surface
            ):
                raise ParameterError(f"{name}: surface_triangles must hold point ids in [0, {n_surface - 1}]")
            self.point_set = PointSet(name, X, tets, points=surface_points, tolerance=mapping_tolerance)
            self.triangles = surface.astype(np.int64)
        self.n_nodes = self.point_set.n_nodes
        self._check_closed()
        self.flipNormal = check_parameters(CavitySpec, name, {"flipNormal": flipNormal})["flipNormal"]
        rest_volume = surface_volume(self.point_set.positions(self.point_set.X), self.triangles)
        if rest_volume == 0.0:
            raise ParameterError(f"{name}: the cavity surface encloses zero volume at rest")
        self._winding = 1.0 if rest_volume > 0.0 else -1.0
        self._signed_rest_volume = rest_volume
        self.set_parameters(
            value=value,
            valueType=valueType,
            minPressure=minPressure,
            maxPressure=maxPressure,
            minVolumeGrowth=minVolumeGrowth,
            maxVolumeGrowth=maxVolumeGrowth,
            maxPressureVariation=maxPressureVariation,
            maxVolumeGrowthVariation=maxVolumeGrowthVariation,
        )
        self.initialCavityVolume = abs(rest_volume)
        self.cavityVolume = abs(rest_volume)
        self.volumeGrowth = 0.0
        self.pressure = 0.0

    def _check_closed(self) -> None:
        """Warn if some edge is not shared by exactly two triangles (the volume gradient needs a closed
        surface)."""
        edges = np.sort(self.triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
        _, counts = np.unique(edges, axis=0, return_counts=True)
        open_edges = int(np.count_nonzero(counts != 2))
        if open_edges:
            logger.warning(
                "%s: the cavity surface is not closed (%d edges not shared by exactly 2 triangles); "
                "volume and pressure forces are approximate",
                self.name,
                open_edges,
            )

    # ------------------------------------------------------------------ geometry
    @property
    def orientation(self) -> float:
        """``s``: +1/-1 such that ``s * V_signed`` is the actuated quantity (positive pressure increases
        it)."""
        return -self._winding if self.flipNormal else self._winding

    def signed_volume(self, x: np.ndarray) -> float:
        """Signed enclosed volume for node positions ``x`` ``(n, 3)`` (sign of the triangle winding)."""
        x = check_positions(self.name, x, self.n_nodes)
        return surface_volume(self.point_set.positions(x), self.triangles)

    def growth(self, x: np.ndarray) -> float:
        """Actuated volume growth ``s (V_signed(x) - V_signed(X))``."""
        return self.orientation * (self.signed_volume(x) - self._signed_rest_volume)

    def motion_at(self, x: np.ndarray) -> float:
        """The volume growth at ``x``."""
        return self.growth(x)

    # ------------------------------------------------------------------ protocol
    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Row ``s dV_signed/dx`` ``(1, 3n)`` at ``x``."""
        x = check_positions(self.name, x, self.n_nodes)
        if not self.active:
            return sp.csr_matrix((0, 3 * self.n_nodes))
        gradient = surface_volume_gradient(self.point_set.positions(x), self.triangles)
        return self.point_set.rows_to_dofs(self.orientation * gradient[None, :, :])

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``-force * orientation * d2V/dx2`` (the pressure's follower-load stiffness): for a triangle (a, b, c),
        ``V = a.(b x c) / 6`` couples its vertices with ``d2V/da db = -[c]x / 6``, ``d2V/da dc = [b]x / 6``,
        ``d2V/db dc = -[a]x / 6`` (and their transposes). Triplets, see
        :meth:`~mechanics.constraints.base.Constraint.force_stiffness`."""
        if not self.active:
            return None
        x = check_positions(self.name, x, self.n_nodes)
        points = self.point_set.positions(x)
        t = self.triangles
        if getattr(self, "_pairs", None) is None:
            first = np.concatenate([t[:, 0], t[:, 0], t[:, 1], t[:, 1], t[:, 2], t[:, 2]])
            second = np.concatenate([t[:, 1], t[:, 2], t[:, 2], t[:, 0], t[:, 0], t[:, 1]])
            self._pairs = self.point_set.pair_structure(first, second)
        rows, cols, products = self._pairs
        a, b, c = (points[t[:, i]] for i in range(3))
        scale = -float(np.asarray(force).reshape(-1)[0]) * self.orientation / 6.0
        ab, ac, bc = -cross_matrices(c) * scale, cross_matrices(b) * scale, -cross_matrices(a) * scale
        blocks = np.concatenate([ab, ac, bc, np.swapaxes(ab, 1, 2), np.swapaxes(ac, 1, 2), np.swapaxes(bc, 1, 2)])
        return rows, cols, self.point_set.pair_values(products, blocks)

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J.(x_free - x) + growth(x)`` ``(1,)``."""
        if not self.active:
            return np.zeros(0)
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        return J @ (x_free - x).reshape(-1) + self.growth(x)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        self.pressure = float(force[0]) if force.size else 0.0
        signed = self.signed_volume(x_new)
        self.cavityVolume = abs(signed)
        self.volumeGrowth = self.orientation * (signed - self._signed_rest_volume)

    @property
    def motion(self) -> float:
        return self.volumeGrowth

    @property
    def effort(self) -> float:
        return self.pressure

    @property
    def outputs(self) -> dict[str, float]:
        return {
            "cavityVolume": self.cavityVolume,
            "initialCavityVolume": self.initialCavityVolume,
            "pressure": self.pressure,
            "volumeGrowth": self.volumeGrowth,
            "limited": self.limited,
        }
