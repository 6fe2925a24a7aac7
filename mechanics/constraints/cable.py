"""SoftRobots ``CableConstraint`` (method ``point``): a cable through sliding points, pulled from a fixed
point.

Reference sofa-constraints.md 4.2 (SoftRobots ``CableModel.inl``, ``CableConstraint.inl``):

- length ``L(x) = |p_0 - P| + sum_k |p_k - p_{k-1}|`` with ``P = pullPoint``; without a pull point
  (``hasPullPoint=False``) the first cable point is the (moving) pull point and the sum starts at ``p_1``;
- one row ``J = -dL/dx`` (so that a positive multiplier pulls every point toward its neighbours on the pull
  side,
  i.e. shortens the cable), evaluated at the step-start positions;
- violation ``dfree = J.(x_free - x) + L0 - L(x)`` (about ``L0 - L(x_free)``): the displacement, positive when
  the cable is shortened;
- outputs ``cableLength = L``, ``displacement = L0 - L`` and ``force`` (the multiplier).

Cable points given as positions are embedded in the body with a :class:`~mechanics.mapping.BarycentricMapping`
(``J = J_points @ mapping``); points given as ``indices`` are body nodes.

Where two consecutive cable points meet, SOFA's length ``|p_k - p_{k-1}|`` has a kink: the segment's direction
flips as the points pass each other, and so does its force on them (2 x the tension). A static equilibrium
with the two points together (the tentacle's last hinge closed on its cable at 26.2 mm) then cannot be found
by Newton's method: the residual jumps by the tension between two states 1e-3 mm apart. So a segment shorter
than :data:`SEGMENT_BLEND` of its rest length ``s_0`` counts with the parabola ``(s^2 + delta^2) / (2 delta)``,
``delta = SEGMENT_BLEND s_0``, which meets ``s`` with the same value and slope at ``s = delta``: the length is
SOFA's wherever each segment is at least ``delta`` long, and continuously differentiable everywhere; below it
the two points are pulled together like a spring of stiffness ``force / delta`` (docs/equilibrium.md).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import PointSet, check_positions, short_of
from softsim.mechanics.constraints.row_kernels import polyline_length_and_gradient
from softsim.mechanics.constraints.scalar_actuator import Bounds, ScalarActuator
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.same_state import same_values
from softsim.mechanics.scene.schema import CableSpec, check_parameters

logger = logging.getLogger(__name__)

__all__ = ["CableConstraint", "cable_length_and_gradient"]


#: a cable segment shorter than this fraction of its rest length counts with a parabola instead of its length
#: (module docstring): 1e-3 of a 2.8 mm segment is 0.0028 mm, where the length is at most 0.0014 mm longer than
#: the polyline's. Measured on SoftRobots' ArticulatedTentacle (its last hinge's cable points meet at 26.2 mm):
#: with the kink the static ramp stalls at 26.21 mm; with this blend every 0.25 mm ramp frame to 35 mm converges
SEGMENT_BLEND = 1e-3


def cable_length_and_gradient(points: np.ndarray, pull_point: np.ndarray | None,
                              blend: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Length of the polyline ``[pull_point,] points[0], ..., points[-1]`` and its gradient.

    Args:
        points: ``(k, 3)`` cable points, from the pulled end to the far extremity.
        pull_point: ``(3,)`` fixed pull point, or None when ``points[0]`` is the pull point.
        blend: ``(k,)`` the blend length of the segment ending at each point (entry 0: the segment from the
            pull point), or None (the polyline's length: a zero-length segment then contributes no gradient).

    Returns:
        ``(L, dL/dpoints (k, 3))``.
    """
    points = np.ascontiguousarray(points, dtype=np.float64)
    gradient = np.empty_like(points)
    blend = np.zeros(points.shape[0]) if blend is None else np.ascontiguousarray(blend, dtype=np.float64)
    if blend.shape != (points.shape[0],):
        raise ParameterError(f"cable: blend must have shape ({points.shape[0]},), got {blend.shape}")
    if pull_point is None:
        length = polyline_length_and_gradient(points, _NO_PULL_POINT, False, blend, gradient)
    else:
        pull = np.ascontiguousarray(pull_point, dtype=np.float64)
        length = polyline_length_and_gradient(points, pull, True, blend, gradient)
    return float(length), gradient


def segment_blend(rest_points: np.ndarray, pull_point: np.ndarray | None) -> np.ndarray:
    """``(k,)`` the blend length of each segment (the one ending at each point): :data:`SEGMENT_BLEND` times
    its rest length, from the rest positions ``rest_points`` (k, 3) of the cable points (entry 0 is the segment
    from ``pull_point``, 0 without one)."""
    rest_points = np.asarray(rest_points, dtype=np.float64)
    blend = np.zeros(rest_points.shape[0])
    if rest_points.shape[0] > 1:
        blend[1:] = SEGMENT_BLEND * np.linalg.norm(np.diff(rest_points, axis=0), axis=1)
    if pull_point is not None and rest_points.shape[0]:
        blend[0] = SEGMENT_BLEND * float(np.linalg.norm(rest_points[0] - np.asarray(pull_point, dtype=np.float64)))
    return blend


_NO_PULL_POINT = np.zeros(3)


class CableConstraint(ScalarActuator):
    """One-row cable actuator with SoftRobots parameters: its motion is the displacement ``L0 - L``, its effort
    the tension (:mod:`~mechanics.constraints.scalar_actuator`).

    Args:
        X: rest node positions ``(n, 3)`` of the body.
        tets: tetrahedra ``(m, 4)`` of the body (used to embed ``points``).
        points: cable points ``(k, 3)`` inside the body (mapped); exclusive with ``indices``.
        indices: cable points as node ids ``(k,)``.
        pullPoint: fixed pull point ``(3,)``; required when ``hasPullPoint`` (SoftRobots default (0,0,0)).
        hasPullPoint: if False the first point is the pull point and at least 2 points are needed.
        cableInitialLength: L0; default: the length at rest.
        valueType: ``"displacement"`` (impose L0 - L) or ``"force"`` (impose the multiplier).
        value: the imposed displacement (length unit) or force.
        minForce, maxForce: bounds on the multiplier (displacement mode) and on the imposed force (force
        mode).
        maxPositiveDisp, maxNegativeDisp: the displacement stays in ``[-maxNegativeDisp, maxPositiveDisp]``.
        maxDispVariation: largest change of the imposed displacement per step (>= 0).
        name: identifier.
        mapping_tolerance: ``tolerance`` of the barycentric mapping of ``points``.
    """

    SPEC = CableSpec
    MOTION_MODE = "displacement"
    MOTION = Bounds("maxNegativeDisp", "maxPositiveDisp", "maxDispVariation", negated_lower=True)
    EFFORT = Bounds("minForce", "maxForce")
    PARAMETERS = frozenset({"value", "valueType", "minForce", "maxForce", "maxPositiveDisp", "maxNegativeDisp",
                            "maxDispVariation", "cableInitialLength", "pullPoint"})

    def __init__(
        self,
        X: np.ndarray,
        tets: np.ndarray,
        *,
        points: np.ndarray | None = None,
        indices: np.ndarray | None = None,
        pullPoint: np.ndarray | None = None,
        hasPullPoint: bool = True,
        cableInitialLength: float | None = None,
        valueType: str = "displacement",
        value: float = 0.0,
        minForce: float | None = None,
        maxForce: float | None = None,
        maxPositiveDisp: float | None = None,
        maxNegativeDisp: float | None = None,
        maxDispVariation: float | None = None,
        name: str = "cable",
        mapping_tolerance: float | None = None,
    ) -> None:
        super().__init__(name)
        self.point_set = PointSet(name, X, tets, points=points, indices=indices, tolerance=mapping_tolerance)
        self.n_nodes = self.point_set.n_nodes
        self.hasPullPoint = check_parameters(CableSpec, name, {"hasPullPoint": hasPullPoint})["hasPullPoint"]
        if self.hasPullPoint:
            if pullPoint is None:
                raise ParameterError(f"{name}: pullPoint is required when hasPullPoint is true")
            self.pullPoint = np.asarray(self.check({"pullPoint": pullPoint})["pullPoint"])
        else:
            if self.point_set.n_points < 2:
                raise ParameterError(
                    f"{name}: without a pull point the cable needs at least 2 points, "
                    f"got {self.point_set.n_points}"
                )
            self.pullPoint = None
        self.set_parameters(
            value=value,
            valueType=valueType,
            minForce=minForce,
            maxForce=maxForce,
            maxPositiveDisp=maxPositiveDisp,
            maxNegativeDisp=maxNegativeDisp,
            maxDispVariation=maxDispVariation,
        )
        rest_length = self.length(self.point_set.X)
        self.set_parameters(
            cableInitialLength=rest_length if cableInitialLength is None else cableInitialLength
        )
        self.cableLength = rest_length
        self.force = 0.0

    def _check_consistency(self) -> None:
        super()._check_consistency()
        if self.hasPullPoint is False and getattr(self, "pullPoint", None) is not None:
            raise ParameterError(f"{self.name}: pullPoint cannot be set when hasPullPoint is false")

    # ------------------------------------------------------------------ geometry
    def length(self, x: np.ndarray) -> float:
        """Cable length ``L(x)`` for node positions ``x`` ``(n, 3)``."""
        return self._length_and_gradient(check_positions(self.name, x, self.n_nodes))[0]

    def _length_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(L, dL/dpoints (k, 3))`` at ``x`` (n, 3). The answer for the last positions (and pull point) is kept:
        building the rows asks for the length three times at the same state (the row, its violation and the
        rate-limited target). The gradient is shared: do not change it in place."""
        cached = getattr(self, "_geometry", None)
        pull = self.pullPoint
        if (cached is not None and same_values(cached[0], x) and cached[3] is self.point_set
                and (cached[4] is None if pull is None else np.array_equal(cached[4], pull))):
            return cached[1], cached[2]
        length, gradient = cable_length_and_gradient(self.point_set.positions(x), pull, self._blend(pull))
        self._geometry = (x.copy(), length, gradient, self.point_set, None if pull is None else np.copy(pull))
        return length, gradient

    def _blend(self, pull: np.ndarray | None) -> np.ndarray:
        """``(k,)`` the segments' blend lengths (:func:`segment_blend`) for the pull point ``pull``, kept while
        the pull point and the points are the same."""
        cached = getattr(self, "_blend_cache", None)
        if (cached is not None and cached[1] is self.point_set
                and (cached[0] is None if pull is None else np.array_equal(cached[0], pull))):
            return cached[2]
        blend = segment_blend(self.point_set.positions(self.point_set.X), pull)
        self._blend_cache = (None if pull is None else np.copy(pull), self.point_set, blend)
        return blend

    @property
    def L0(self) -> float:
        """Reference length ``cableInitialLength``."""
        return float(self.cableInitialLength)

    def motion_at(self, x: np.ndarray) -> float:
        """The displacement ``L0 - L(x)``."""
        return self.L0 - self.length(x)

    # ------------------------------------------------------------------ protocol
    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Row ``-dL/dx`` ``(1, 3n)`` at ``x`` (empty when inactive)."""
        x = check_positions(self.name, x, self.n_nodes)
        if not self.active:
            return sp.csr_matrix((0, 3 * self.n_nodes))
        _, gradient = self._length_and_gradient(x)
        return self.point_set.rows_to_dofs(-gradient[None, :, :])

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``force * d2L/dx2``: each segment of length l and direction n adds ``(force / l) (I - n n^T)`` on the
        difference of its end points (the pull point is fixed), one shorter than its blend length delta
        ``(force / delta) I`` (module docstring). Triplets, see
        :meth:`~mechanics.constraints.base.Constraint.force_stiffness`."""
        if not self.active:
            return None
        x = check_positions(self.name, x, self.n_nodes)
        points = self.point_set.positions(x)
        if getattr(self, "_pairs", None) is None:
            k = self.point_set.n_points
            moving = np.arange(1, k)  # segments between two cable points: (i - 1, i)
            first = np.concatenate([moving - 1, moving, moving - 1, moving])
            second = np.concatenate([moving - 1, moving, moving, moving - 1])
            if self.hasPullPoint:  # the segment from the fixed pull point moves point 0 only
                first, second = np.append(first, 0), np.append(second, 0)
            self._pairs = (first, second, *self.point_set.pair_structure(first, second))
        rows, cols, products = self._pairs[2:]
        tension = float(np.asarray(force).reshape(-1)[0])
        if tension == 0.0:  # a slack cable: no stiffness, the same pattern (the tangent's stays the same)
            return rows, cols, np.zeros(rows.size)
        starts = np.vstack([self.pullPoint[None, :], points[:-1]]) if self.hasPullPoint else points[:-1]
        ends = points if self.hasPullPoint else points[1:]
        difference = ends - starts
        length = np.linalg.norm(difference, axis=1)
        safe = np.where(length > 0.0, length, 1.0)
        n = difference / safe[:, None]
        blocks = (tension / safe)[:, None, None] * (np.eye(3)[None] - n[:, :, None] * n[:, None, :])
        blocks[length == 0.0] = 0.0
        # a segment shorter than its blend length counts (s^2 + delta^2) / (2 delta): its Hessian is I / delta
        blend = self._blend(self.pullPoint)
        blend = blend if self.hasPullPoint else blend[1:]
        short = length < blend
        blocks[short] = (tension / blend[short])[:, None, None] * np.eye(3)[None]
        # blocks[s] belongs to the segment ending at point s (with a pull point) or at point s + 1
        inner = blocks[1:] if self.hasPullPoint else blocks
        pair_blocks = np.concatenate([inner, inner, -inner, -inner])
        if self.hasPullPoint:
            pair_blocks = np.concatenate([pair_blocks, blocks[:1]])
        return rows, cols, self.point_set.pair_values(products, pair_blocks)

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J.(x_free - x) + L0 - L(x)`` ``(1,)``."""
        if not self.active:
            return np.zeros(0)
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        return J @ (x_free - x).reshape(-1) + (self.L0 - self.length(x))

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        self.force = float(force[0]) if force.size else 0.0
        self.cableLength = self.length(x_new)

    @property
    def displacement(self) -> float:
        """``L0 - cableLength`` after the last :meth:`store`."""
        return self.L0 - self.cableLength

    @property
    def motion(self) -> float:
        return self.displacement

    @property
    def effort(self) -> float:
        return self.force

    @property
    def slack(self) -> bool:
        """Told to shorten less than the body makes it (a cable at 0 while gravity or another cable bends the
        body), the cable goes slack: it cannot push, so its force stays on its lower bound (minForce, 0 when
        unset) and its displacement passes its value. Displacement control only."""
        if not self.imposes_motion or self.inverse_target is not None:
            return False
        return cable_is_slack(self.displacement, float(self.value), self.force, self.minForce)

    @property
    def limited(self) -> float:
        """As :attr:`ScalarActuator.limited`, except that a :attr:`slack` cable is not limited: slack is what a
        cable does when the body shortens it, not a limit holding it (its rate limit may have moved its target
        too, toward the shorter length, without holding anything)."""
        return 0.0 if self.slack else super().limited

    @property
    def outputs(self) -> dict[str, float]:
        return {"cableLength": self.cableLength, "displacement": self.displacement, "force": self.force,
                "limited": self.limited}


def cable_is_slack(displacement: float, value: float, force: float, min_force: float | None) -> bool:
    """Whether a displacement-controlled cable went slack: its displacement (mm) passes its ``value`` (the body
    shortened it more than it was told to) while its force (mN) sits on its lower bound ``min_force`` (0 when
    None). A cable cannot push, so that is what it does there, not a limit holding it (the window's health
    check and :attr:`CableConstraint.slack` both ask this)."""
    floor = 0.0 if min_force is None else float(min_force)
    return (displacement > value and bool(short_of(displacement, value))
            and force <= floor + 1e-9 * max(1.0, abs(floor)))
