"""SoftRobots.Inverse ``PositionEffector``: rows measuring the distance of points to a goal.

Reference sofa-constraints.md 4.4 (``PositionEffector.inl`` on ``PositionModel.inl``): for each point i and
each
used direction j (in that order: point-major), the row is ``directions[j] * weight[j]`` on the point, and
``dfree = J.(x_free - x) + (x_i - goal_i).directions[j] * weight[j]``. ``directions`` is the identity here.

The effector is an objective of the inverse problem, not something the direct step enforces:
``enforced = False``; the frame step only calls :meth:`store` to publish the current position. Its blocks are
EQUALITY(target 0) so that a solver that is told to enforce it drives the point to the goal.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, PointSet, check_positions
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.scene.schema import EffectorSpec

logger = logging.getLogger(__name__)

__all__ = ["PositionEffector"]

_AXES = ("x", "y", "z")


def shift_limited_goal(effector) -> np.ndarray:
    """An effector's goal ``(p, 3)``: ``effectorGoal``, or with ``limitShiftToTarget`` each component brought
    within ``maxShiftToTarget`` of the frame's start positions ``frame_start_positions`` (p, 3) when they are
    known (SoftRobots ``Effector::getTarget``)."""
    if not effector.limitShiftToTarget or effector.frame_start_positions is None:
        return effector.effectorGoal
    start = effector.frame_start_positions
    return np.clip(effector.effectorGoal, start - effector.maxShiftToTarget, start + effector.maxShiftToTarget)


def goal_violation(effector, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix, points, weight) -> np.ndarray:
    """An effector's ``dfree = J (x_free - x) + weight_j (points_i(x) - goal_i)_j`` on its used axes, point-major
    ``(p * u,)``: ``x``, ``x_free`` ``(n, 3)``; ``points`` maps ``x`` to the measured points ``(p, 3)``;
    ``weight`` a number or ``(3,)`` per axis. Empty for an inactive effector."""
    x = check_positions(effector.name, x, effector.n_nodes)
    x_free = check_positions(effector.name, x_free, effector.n_nodes)
    if not effector.active:
        return np.zeros(0)
    axes = effector.directions
    delta = (points(x) - effector.goal())[:, axes] * np.broadcast_to(weight, 3)[axes]
    return J @ (x_free - x).reshape(-1) + delta.reshape(-1)


class PositionEffector(Constraint):
    """Position effector with SoftRobots parameters.

    Args:
        X: rest node positions ``(n, 3)``; tets: ``(m, 4)`` (needed with ``position``).
        position: effector points ``(p, 3)`` embedded in the body; exclusive with
        indices: effector points as node ids ``(p,)``.
        effectorGoal: goal ``(3,)`` for every point or ``(p, 3)``.
        useDirections: three 0/1 flags selecting the x, y, z rows.
        weight: the weight of every row, > 0.
        limitShiftToTarget, maxShiftToTarget: SoftRobots.Inverse's goal limit: each goal component is brought
            within ``maxShiftToTarget`` of the point's position at the start of the frame
            (:meth:`begin_frame`), so that a far goal gives bounded steps.
        name: identifier.

    Outputs: the current position of each point (``x``, ``y``, ``z`` for a single point; ``x0``, ``y0``,
    ``z0``,
    ``x1``, ... for several) and ``distance``, the Euclidean distance of the used components to the goal.
    """

    def __init__(
        self,
        X: np.ndarray,
        tets: np.ndarray | None = None,
        *,
        position: np.ndarray | None = None,
        indices: np.ndarray | None = None,
        effectorGoal=None,
        useDirections=(1, 1, 1),
        weight=1.0,
        limitShiftToTarget: bool = False,
        maxShiftToTarget: float = 1.0,
        name: str = "effector",
        mapping_tolerance: float | None = None,
    ) -> None:
        super().__init__(name)
        self.point_set = PointSet(
            name, X, tets, points=position, indices=indices, tolerance=mapping_tolerance
        )
        self.n_nodes = self.point_set.n_nodes
        self.enforced = False
        rest = self.point_set.positions(self.point_set.X)
        self.set_parameters(
            effectorGoal=rest if effectorGoal is None else effectorGoal,
            useDirections=useDirections,
            weight=weight,
            limitShiftToTarget=limitShiftToTarget,
            maxShiftToTarget=maxShiftToTarget,
        )
        self.current_positions = rest.copy()
        self.has_goal = effectorGoal is not None
        self.frame_start_positions: np.ndarray | None = None

    # ------------------------------------------------------------------ parameters
    SPEC = EffectorSpec
    PARAMETERS = frozenset({"effectorGoal", "useDirections", "weight", "limitShiftToTarget", "maxShiftToTarget"})

    def set_parameters(self, **parameters) -> None:
        """``effectorGoal`` ((3,) for every point, or (p, 3)), ``useDirections`` (3 flags), ``weight`` (> 0)."""
        p = self.point_set.n_points
        new = self.check(parameters)
        if "effectorGoal" in new:
            goal = np.asarray(new["effectorGoal"], dtype=np.float64).reshape(-1, 3)
            if goal.shape[0] not in (1, p):
                raise ParameterError(f"{self.name}: effectorGoal: expected 1 or {p} goals, got {goal.shape[0]}")
            new["effectorGoal"] = np.array(np.broadcast_to(goal, (p, 3)))
            self.has_goal = True
        if "useDirections" in new:
            new["useDirections"] = np.asarray(new["useDirections"], dtype=bool)
        if "weight" in new:
            new["weight"] = np.full(3, new["weight"])
        for key, value in new.items():
            setattr(self, key, value)

    # ------------------------------------------------------------------ protocol
    @property
    def directions(self) -> np.ndarray:
        """Ids of the used axes ``(u,)``."""
        return np.flatnonzero(self.useDirections)

    @property
    def n_rows(self) -> int:
        return self.point_set.n_points * self.directions.size if self.active else 0

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Rows ``weight[j] e_j`` on each point (point-major), ``(p * u, 3n)``; constant."""
        check_positions(self.name, x, self.n_nodes)
        p = self.point_set.n_points
        axes = self.directions if self.active else np.zeros(0, dtype=np.int64)
        rows = np.zeros((p, axes.size, p, 3))
        rows[np.arange(p)[:, None], np.arange(axes.size)[None, :], np.arange(p)[:, None], axes[None, :]] = (
            self.weight[axes][None, :]
        )
        return self.point_set.rows_to_dofs(rows.reshape(p * axes.size, p, 3))

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J.(x_free - x) + weight_j (x_i - goal_i)_j``, point-major."""
        return goal_violation(self, x, x_free, J, self.point_set.positions, self.weight)

    def begin_frame(self, x: np.ndarray) -> None:
        """Remember the points' positions at the start of a frame (``x`` (n, 3)): the goal shift is limited
        from them."""
        self.frame_start_positions = self.point_set.positions(check_positions(self.name, x, self.n_nodes))

    def goal(self) -> np.ndarray:
        """The goal the rows measure ``(p, 3)`` (:func:`shift_limited_goal`)."""
        return shift_limited_goal(self)

    def blocks(self, x: np.ndarray) -> Blocks:
        """EQUALITY(target 0) per row (used only by a solver that enforces the effector)."""
        return Blocks.equality(self.n_rows, 0.0)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        x_new = check_positions(self.name, x_new, self.n_nodes)
        self.current_positions = self.point_set.positions(x_new)

    @property
    def delta(self) -> np.ndarray:
        """Weighted offsets to the goal of the used components ``(p * u,)`` after the last store (SoftRobots
        ``delta``)."""
        axes = self.directions
        return ((self.current_positions - self.effectorGoal)[:, axes] * self.weight[axes]).reshape(-1)

    @property
    def outputs(self) -> dict[str, float]:
        out: dict[str, float] = {}
        single = self.point_set.n_points == 1
        for i, point in enumerate(self.current_positions):
            for axis, value in zip(_AXES, point, strict=True):
                out[axis if single else f"{axis}{i}"] = float(value)
        axes = self.directions
        out["distance"] = float(np.linalg.norm((self.current_positions - self.effectorGoal)[:, axes]))
        return out
