"""SoftRobots.Inverse ``BarycentricCenterEffector``: the mean position of some nodes as an effector; or a point
carried with them as by a rigid piece (SOFA's ``PositionEffector`` on a free Rigid3 frame, Tripod's centre).

With ``k`` nodes and ``c(x) = sum_i w_i x_i``, one row per used axis j (``axis`` flags, in x, y, z order):
``J_j = weight w_i e_j`` on node i and ``dfree_j = J_j (x_free - x) + weight (c(x) - goal)_j``. The weights are
``1/k`` (the mean), or, with ``point`` ``P``, the affine weights of least norm with ``sum_i w_i X_i = P`` and ``sum_i
w_i = 1``: for any rigid motion ``x_i = R X_i + t`` then ``c(x) = R P + t`` exactly (the nodes must span 3D, or P
lie in their affine hull), so on a ``[[body.rigidGroup]]`` c follows the group's frame point P.

With ``rotationAxis`` flags it also tracks the nodes' orientation (SOFA's ``PositionEffector`` on a Rigid3 frame
with ``useDirections[3:]``): ``R(x)``, the rotation that best takes the rest positions onto the current ones
(Kabsch, :func:`mechanics.rigid_frames.best_rigid_motion`), against ``R_goal`` (``goalRotation``: degrees about
x, then y, then z, fixed axes). One more row per used axis j: the offset ``weight rotvec(R R_goal^T)_j``
(radians, as SOFA's ``coordDifference`` of two Rigid3 frames), and ``J = weight e_j^T H^-1 sum_i [a_i]x`` with
``a_i = x_i - mean(x)`` and ``H = sum_i (|a_i|^2 I - a_i a_i^T)`` (the best rotation's change under a change of
the nodes, exact at a rigid pose; SOFA's rows likewise take the frame's angular velocity, which is the offset's
derivative where ``R = R_goal``). Like the
position effector (:mod:`mechanics.constraints.effector`) it is an objective of the inverse model, never
enforced by the direct step (``enforced = False``), which only publishes the outputs ``x``, ``y``, ``z`` (the
mean position) and ``distance`` (to the goal, over the used axes).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.spatial.transform import Rotation

from softsim.mechanics.constraints.base import Constraint, check_positions
from softsim.mechanics.constraints.effector import goal_violation, shift_limited_goal
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.rigid_frames import best_rigid_motion
from softsim.mechanics.scene.schema import CenterEffectorSpec, check_parameters

__all__ = ["CenterEffector"]


class CenterEffector(Constraint):
    """The mean of the nodes ``indices`` (None: every node) tracked toward ``effectorGoal`` (3,) (None: no goal)
    along the ``axis`` flags, rows weighted by ``weight``; ``X`` ``(n, 3)`` are the body's rest positions."""

    SPEC = CenterEffectorSpec
    PARAMETERS = frozenset({"effectorGoal", "axis", "weight", "limitShiftToTarget", "maxShiftToTarget",
                            "goalRotation"})

    def __init__(self, X: np.ndarray, *, indices=None, effectorGoal=None, axis=(1, 1, 1), weight=1.0,
                 point=None, limitShiftToTarget: bool = False, maxShiftToTarget: float = 1.0,
                 rotationAxis=(0, 0, 0), goalRotation=(0.0, 0.0, 0.0),
                 name: str = "centerEffector") -> None:
        super().__init__(name)
        X = np.asarray(X, dtype=np.float64)
        self.n_nodes = X.shape[0] if X.ndim == 2 and X.shape[1] == 3 else 0
        X = check_positions(name, X, self.n_nodes)
        nodes = np.arange(self.n_nodes) if indices is None else np.asarray(indices)
        if nodes.size == 0 or not np.issubdtype(nodes.dtype, np.integer):
            raise ParameterError(f"{name}: indices must be a non-empty list of node ids, got {indices!r}")
        nodes = nodes.astype(np.int64).reshape(-1)
        if nodes.min() < 0 or nodes.max() >= self.n_nodes:
            raise ParameterError(f"{name}: indices must lie in [0, {self.n_nodes - 1}], got {int(nodes.max())}")
        self.nodes = nodes
        self.weights = np.full(nodes.size, 1.0 / nodes.size) if point is None else affine_weights(X[nodes], point,
                                                                                                    name)
        self.enforced = False
        self.has_goal = False
        self.effectorGoal = np.zeros((1, 3))
        self.rest = X[nodes].copy()
        self.rotationAxis = np.asarray(check_parameters(CenterEffectorSpec, name, {"rotationAxis": rotationAxis})[
            "rotationAxis"], dtype=bool)
        if self.rotationAxis.any() and np.linalg.matrix_rank(self.rest - self.rest.mean(axis=0), tol=1e-9 * max(
                float(np.abs(self.rest).max()), 1.0)) < 2:
            raise ParameterError(f"{name}: tracking a rotation needs at least 3 nodes not on one line")
        self.set_parameters(axis=axis, weight=weight, limitShiftToTarget=limitShiftToTarget,
                            maxShiftToTarget=maxShiftToTarget, goalRotation=goalRotation)
        if effectorGoal is not None:
            self.set_parameters(effectorGoal=effectorGoal)
        self.current_positions = self.center(X)[None, :]
        self.frame_start_positions: np.ndarray | None = None

    def set_parameters(self, **parameters) -> None:
        """``effectorGoal`` (3,), ``axis`` (3 flags), ``weight`` (> 0), ``limitShiftToTarget``,
        ``maxShiftToTarget`` (> 0), checked by the scene's declarations."""
        new = self.check(parameters)
        if "effectorGoal" in new:
            if new["effectorGoal"] is None:
                self.has_goal = False
                new["effectorGoal"] = np.zeros((1, 3))
            else:
                new["effectorGoal"] = np.asarray(new["effectorGoal"], dtype=np.float64).reshape(1, 3)
                self.has_goal = True
        if "axis" in new:
            new["axis"] = np.asarray(new["axis"], dtype=bool)
        if "weight" in new:
            new["weight"] = float(new["weight"])
        if "maxShiftToTarget" in new:
            new["maxShiftToTarget"] = float(new["maxShiftToTarget"])
        if "goalRotation" in new:
            new["goalRotation"] = np.asarray(new["goalRotation"], dtype=np.float64)
            self.goal_matrix = Rotation.from_euler("xyz", new["goalRotation"], degrees=True).as_matrix()
        for key, value in new.items():
            setattr(self, key, value)

    @property
    def directions(self) -> np.ndarray:
        """Ids of the used axes ``(u,)``."""
        return np.flatnonzero(self.axis)

    def center(self, x: np.ndarray) -> np.ndarray:
        """The tracked position ``(3,)`` at ``x`` ``(n, 3)``: ``sum_i w_i x_i`` (the mean, or the carried point)."""
        return self.weights @ check_positions(self.name, x, self.n_nodes)[self.nodes]

    @property
    def rotation_directions(self) -> np.ndarray:
        """Ids of the tracked rotation axes ``(r,)``."""
        return np.flatnonzero(self.rotationAxis)

    def rotation(self, x: np.ndarray) -> np.ndarray:
        """The rotation ``(3, 3)`` that best takes the nodes' rest positions onto their positions in ``x``."""
        return best_rigid_motion(self.rest, check_positions(self.name, x, self.n_nodes)[self.nodes])[0]

    def rotation_offset(self, x: np.ndarray) -> np.ndarray:
        """``rotvec(R(x) R_goal^T)`` ``(3,)`` in radians."""
        return Rotation.from_matrix(self.rotation(x) @ self.goal_matrix.T).as_rotvec()

    @property
    def n_rows(self) -> int:
        return int(self.directions.size + self.rotation_directions.size) if self.active else 0

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """``(u + r, 3n)``: ``weight w_i`` on axis j of node i, one row per used axis (constant); then one row per
        tracked rotation axis, ``weight e_j^T H^-1 [a_i]x`` on node i (see the module docstring)."""
        points = check_positions(self.name, x, self.n_nodes)[self.nodes]
        axes = self.directions if self.active else np.zeros(0, dtype=np.int64)
        turns = self.rotation_directions if self.active else np.zeros(0, dtype=np.int64)
        k = self.nodes.size
        rows = np.repeat(np.arange(axes.size), k)
        cols = (3 * np.tile(self.nodes, axes.size) + np.repeat(axes, k))
        values = self.weight * np.tile(self.weights, axes.size)
        position = sp.csr_matrix((values, (rows, cols)), shape=(axes.size, 3 * self.n_nodes))
        if not turns.size:
            return position
        arms = points - points.mean(axis=0)
        H = (arms * arms).sum() * np.eye(3) - arms.T @ arms
        blocks = np.einsum("ab,ibc->aic", np.linalg.inv(H), cross_matrices(arms))  # (3, k, 3): dtheta / dp_i
        dofs = (3 * self.nodes[:, None] + np.arange(3)[None, :]).reshape(-1)
        rotation = sp.csr_matrix((self.weight * blocks[turns].reshape(turns.size, -1).reshape(-1),
                                  (np.repeat(np.arange(turns.size), dofs.size), np.tile(dofs, turns.size))),
                                 shape=(turns.size, 3 * self.n_nodes))
        return sp.vstack([position, rotation]).tocsr()

    def offsets(self, x: np.ndarray) -> np.ndarray:
        """The rows' offsets to the goal at ``x`` ``(u + r,)``: ``weight (c(x) - goal)`` on the used axes, then
        ``weight rotvec(R(x) R_goal^T)`` on the tracked rotation axes."""
        position = (self.center(x) - self.goal()[0])[self.directions] * self.weight
        if not self.rotation_directions.size:
            return position
        return np.concatenate([position, self.weight * self.rotation_offset(x)[self.rotation_directions]])

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J (x_free - x) + offsets(x)`` (:meth:`offsets`)."""
        if not self.rotation_directions.size:
            return goal_violation(self, x, x_free, J, lambda x: self.center(x)[None, :], self.weight)
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        if not self.active:
            return np.zeros(0)
        return J @ (x_free - x).reshape(-1) + self.offsets(x)

    def begin_frame(self, x: np.ndarray) -> None:
        """The inverse frame calls this at the start of a frame: the goal's shift is limited from here."""
        self.frame_start_positions = self.center(x)[None, :]

    def goal(self) -> np.ndarray:
        """The goal ``(1, 3)`` (:func:`~mechanics.constraints.effector.shift_limited_goal`)."""
        return shift_limited_goal(self)

    def blocks(self, x: np.ndarray) -> Blocks:
        """EQUALITY(target 0) per row (used only by a solver told to enforce the effector)."""
        return Blocks.equality(self.n_rows, 0.0)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        self.current_positions = self.center(x_new)[None, :]
        if self.rotation_directions.size:
            self.current_turn = self.rotation_offset(x_new)

    @property
    def outputs(self) -> dict[str, float]:
        x, y, z = (float(v) for v in self.current_positions[0])
        axes = self.directions
        distance = float(np.linalg.norm((self.current_positions - self.effectorGoal)[0, axes])) if self.has_goal \
            else 0.0
        outputs = {"x": x, "y": y, "z": z, "distance": distance}
        if self.rotation_directions.size:  # the tracked rotation's offset to the goal, degrees
            turn = getattr(self, "current_turn", np.zeros(3))
            outputs["angleError"] = float(np.degrees(np.linalg.norm(turn[self.rotation_directions])))
        return outputs


def affine_weights(points: np.ndarray, point, name: str = "centerEffector") -> np.ndarray:
    """The affine weights ``w`` (k,) of least norm with ``w @ points = point`` and ``sum(w) = 1`` (``points`` (k,
    3), ``point`` (3,)); ParameterError when no such weights exist (the points span less than 3D and ``point`` is
    off their affine hull)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    target = np.asarray(point, dtype=np.float64).reshape(3)
    A = np.vstack([points.T, np.ones(points.shape[0])])  # (4, k)
    b = np.append(target, 1.0)
    w, *_ = np.linalg.lstsq(A, b, rcond=None)
    scale = max(float(np.abs(points).max()), float(np.abs(target).max()), 1.0)
    if np.abs(A @ w - b).max() > 1e-9 * scale:
        raise ParameterError(f"{name}: point {target.tolist()} is not an affine combination of its nodes (they lie "
                             f"in a plane or on a line that does not hold it)")
    return w
