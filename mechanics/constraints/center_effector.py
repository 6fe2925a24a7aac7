"""SoftRobots.Inverse ``BarycentricCenterEffector``: the mean position of some nodes as an effector.

With ``k`` nodes and ``c(x) = (1/k) sum_i x_i``, one row per used axis j (``axis`` flags, in x, y, z order):
``J_j = weight e_j / k`` on every node and ``dfree_j = J_j (x_free - x) + weight (c(x) - goal)_j``. Like the
position effector (:mod:`mechanics.constraints.effector`) it is an objective of the inverse model, never
enforced by the direct step (``enforced = False``), which only publishes the outputs ``x``, ``y``, ``z`` (the
mean position) and ``distance`` (to the goal, over the used axes).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, check_positions
from softsim.mechanics.constraints.effector import goal_violation
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.scene.schema import CenterEffectorSpec

__all__ = ["CenterEffector"]


class CenterEffector(Constraint):
    """The mean of the nodes ``indices`` (None: every node) tracked toward ``effectorGoal`` (3,) (None: no goal)
    along the ``axis`` flags, rows weighted by ``weight``; ``X`` ``(n, 3)`` are the body's rest positions."""

    SPEC = CenterEffectorSpec
    PARAMETERS = frozenset({"effectorGoal", "axis", "weight"})

    def __init__(self, X: np.ndarray, *, indices=None, effectorGoal=None, axis=(1, 1, 1), weight=1.0,
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
        self.enforced = False
        self.has_goal = False
        self.effectorGoal = np.zeros((1, 3))
        self.set_parameters(axis=axis, weight=weight)
        if effectorGoal is not None:
            self.set_parameters(effectorGoal=effectorGoal)
        self.current_positions = self.center(X)[None, :]
        self.frame_start_positions: np.ndarray | None = None

    def set_parameters(self, **parameters) -> None:
        """``effectorGoal`` (3,), ``axis`` (3 flags), ``weight`` (> 0), checked by the scene's declarations."""
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
        for key, value in new.items():
            setattr(self, key, value)

    @property
    def directions(self) -> np.ndarray:
        """Ids of the used axes ``(u,)``."""
        return np.flatnonzero(self.axis)

    def center(self, x: np.ndarray) -> np.ndarray:
        """The mean position ``(3,)`` of the nodes at ``x`` ``(n, 3)``."""
        return check_positions(self.name, x, self.n_nodes)[self.nodes].mean(axis=0)

    @property
    def n_rows(self) -> int:
        return int(self.directions.size) if self.active else 0

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """``(u, 3n)``: ``weight / k`` on axis j of every node, one row per used axis; constant."""
        check_positions(self.name, x, self.n_nodes)
        axes = self.directions if self.active else np.zeros(0, dtype=np.int64)
        k = self.nodes.size
        rows = np.repeat(np.arange(axes.size), k)
        cols = (3 * np.tile(self.nodes, axes.size) + np.repeat(axes, k))
        values = np.full(rows.size, self.weight / k)
        return sp.csr_matrix((values, (rows, cols)), shape=(axes.size, 3 * self.n_nodes))

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = J (x_free - x) + weight (c(x) - goal)`` on the used axes."""
        return goal_violation(self, x, x_free, J, lambda x: self.center(x)[None, :], self.weight)

    def begin_frame(self, x: np.ndarray) -> None:
        """The inverse frame calls this at the start of a frame (the goal is not limited: nothing to keep)."""
        self.frame_start_positions = self.center(x)[None, :]

    def goal(self) -> np.ndarray:
        """The goal ``(1, 3)``."""
        return self.effectorGoal

    def blocks(self, x: np.ndarray) -> Blocks:
        """EQUALITY(target 0) per row (used only by a solver told to enforce the effector)."""
        return Blocks.equality(self.n_rows, 0.0)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        self.current_positions = self.center(x_new)[None, :]

    @property
    def outputs(self) -> dict[str, float]:
        x, y, z = (float(v) for v in self.current_positions[0])
        axes = self.directions
        distance = float(np.linalg.norm((self.current_positions - self.effectorGoal)[0, axes])) if self.has_goal \
            else 0.0
        return {"x": x, "y": y, "z": z, "distance": distance}
