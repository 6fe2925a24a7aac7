"""Mouse drag: a soft (compliant) 3-row constraint pulling one node toward a target point.

The rows are the identity on the node's DOFs and the violation is ``x_free[node] - target``; the per-row
compliance ``c`` (length / force) is added to W's diagonal, so ``W + c I`` is positive definite even when the
node's own compliance is zero or the rows are redundant with other constraints, and the drag force
``lambda = -(W + cI)^-1 dfree`` stays finite: the drag acts like a spring of stiffness ``1/c`` attached to the
target. With ``active = False`` (:meth:`release`) the constraint has no rows.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, check_positions
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.scene.schema import DragSpec

logger = logging.getLogger(__name__)

__all__ = ["DragConstraint"]


class DragConstraint(Constraint):
    """Soft attachment of ``node`` to ``target``.

    Args:
        node: the dragged node id.
        target: target position ``(3,)``.
        compliance: ``c > 0``, compliance per row (length / force); the drag stiffness is ``1/c``.
        name: identifier.

    Outputs (after :meth:`store`): ``force`` (magnitude of the force on the node), ``distance`` (node-target).
    """

    SPEC = DragSpec
    PARAMETERS = frozenset({"compliance"})

    def set_parameters(self, **parameters) -> None:
        """``compliance`` (> 0). Stored as ``compliance_value`` (``compliance()`` is the protocol method)."""
        self.compliance_value = self.check(parameters).get("compliance", getattr(self, "compliance_value", None))

    def __init__(self, node: int, target, *, compliance: float, name: str = "drag") -> None:
        super().__init__(name)
        if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or node < 0:
            raise ParameterError(f"{name}: node must be a node id >= 0, got {node!r}")
        self.node = int(node)
        self.set_target(target)
        self.set_parameters(compliance=compliance)
        self.force_vector = np.zeros(3)
        self.distance = 0.0

    def set_target(self, target) -> None:
        """Move the target point ``(3,)`` (e.g. following the mouse) and (re)activate the drag."""
        target = np.asarray(target, dtype=np.float64).reshape(-1)
        if target.shape != (3,) or not np.all(np.isfinite(target)):
            raise ParameterError(f"{self.name}: target must be 3 finite coordinates, got {target!r}")
        self.target = target
        self.active = True

    def release(self) -> None:
        """Deactivate: no rows until the next :meth:`set_target`."""
        self.active = False
        self.force_vector = np.zeros(3)

    @property
    def n_rows(self) -> int:
        return 3 if self.active else 0

    def _check_node(self, x: np.ndarray) -> np.ndarray:
        n_nodes = np.asarray(x).size // 3
        if self.node >= n_nodes:
            raise ParameterError(f"{self.name}: node {self.node} must be < {n_nodes} (the body's node count)")
        return check_positions(self.name, x, n_nodes)

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Identity rows on the node's 3 DOFs, ``(3, 3n)``."""
        x = self._check_node(x)
        n_dofs = 3 * x.shape[0]
        if not self.active:
            return sp.csr_matrix((0, n_dofs))
        return sp.csr_matrix((np.ones(3), (np.arange(3), 3 * self.node + np.arange(3))), shape=(3, n_dofs))

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``x_free[node] - target`` ``(3,)``."""
        x_free = self._check_node(x_free)
        if not self.active:
            return np.zeros(0)
        return x_free[self.node] - self.target

    def blocks(self, x: np.ndarray) -> Blocks:
        """One EQUALITY block of 3 rows, target 0."""
        return Blocks.equality(self.n_rows, 0.0, block_size=3)

    def compliance(self) -> np.ndarray:
        return np.full(self.n_rows, self.compliance_value)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        x_new = self._check_node(x_new)
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        self.force_vector = force.copy() if force.size == 3 else np.zeros(3)
        self.distance = float(np.linalg.norm(x_new[self.node] - self.target))

    @property
    def outputs(self) -> dict[str, float]:
        return {"force": float(np.linalg.norm(self.force_vector)), "distance": self.distance}
