"""Bilateral point-to-point attachment (SOFA ``BilateralLagrangianConstraint``, reference section 2).

For each pair (a_i, b_i) there are 3 rows: ``-e_x, -e_y, -e_z`` on node a_i (object 1) and ``+e_x, +e_y,
+e_z`` on
node b_i (object 2); ``dfree = x_b_free - x_a_free - rest_vector_i`` (SOFA's default ``rest_vector`` is
zero: the
two points are glued together). Instead of second nodes, fixed world ``targets`` may be given: the rows then
only
have the ``-e`` entries on a_i and ``dfree = target_i - x_a_free - rest_vector_i``.

Several bodies: the frame step concatenates the DOF vectors of the bodies; ``dof_offset_a`` and
``dof_offset_b``
are the first DOF of the bodies of the a and b nodes in that vector and ``n_dofs`` its length. Positions
passed
to the methods are then the concatenated positions ``(n_dofs / 3, 3)``.

Resolution: one 3-row EQUALITY block per pair (SOFA Bilateral3Dof). An optional compliance ``c >= 0`` per row
turns the attachment into a stiff spring of stiffness ``1/c`` (``c = 0``: hard constraint).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.scene.schema import AttachmentSpec, check_parameters

logger = logging.getLogger(__name__)

__all__ = ["BilateralAttachment"]


def _node_ids(owner: str, key: str, value) -> np.ndarray:
    ids = np.asarray(value)
    if ids.size == 0 or not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0:
        raise ParameterError(f"{owner}: {key} must be a non-empty list of node ids >= 0, got {value!r}")
    return ids.astype(np.int64).reshape(-1)


def _offset(owner: str, key: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0 or value % 3:
        raise ParameterError(f"{owner}: {key} must be a DOF index >= 0 and a multiple of 3, got {value!r}")
    return int(value)


class BilateralAttachment(Constraint):
    """Glue pairs of nodes (or nodes to fixed points) with 3 bilateral rows per pair.

    Args:
        nodes_a: ``(p,)`` node ids of object 1 (local to its body).
        nodes_b: ``(p,)`` node ids of object 2 (local to its body); exclusive with ``targets``.
        targets: ``(p, 3)`` fixed world positions (or ``(3,)`` for every pair).
        rest_vector: ``(p, 3)`` or ``(3,)`` offsets kept between the two points; default zero (SOFA).
        compliance: per-row compliance ``c >= 0`` (0: hard).
        dof_offset_a, dof_offset_b: first DOF of the bodies of ``nodes_a`` / ``nodes_b`` in the DOF vector.
        n_dofs: length of the DOF vector; default: from the positions passed in.
        name: identifier.

    Outputs (after :meth:`store`): ``pairs``, ``force`` (largest pair force magnitude) and ``maxViolation``
    (largest ``|x_b - x_a - rest_vector|``).
    """

    def __init__(
        self,
        nodes_a,
        nodes_b=None,
        *,
        targets=None,
        rest_vector=None,
        compliance: float = 0.0,
        dof_offset_a: int = 0,
        dof_offset_b: int = 0,
        n_dofs: int | None = None,
        name: str = "attachment",
    ) -> None:
        super().__init__(name)
        self.nodes_a = _node_ids(name, "nodes_a", nodes_a)
        p = self.nodes_a.size
        if (nodes_b is None) == (targets is None):
            raise ParameterError(f"{name}: give exactly one of nodes_b and targets")
        self.nodes_b = None if nodes_b is None else _node_ids(name, "nodes_b", nodes_b)
        if self.nodes_b is not None and self.nodes_b.size != p:
            raise ParameterError(f"{name}: nodes_a ({p}) and nodes_b ({self.nodes_b.size}) must pair up")
        self.targets = None if targets is None else self._points(targets, "targets")
        self.rest_vector = (
            np.zeros((p, 3)) if rest_vector is None else self._points(rest_vector, "rest_vector")
        )
        self.dof_offset_a = _offset(name, "dof_offset_a", dof_offset_a)
        self.dof_offset_b = _offset(name, "dof_offset_b", dof_offset_b)
        self.n_dofs = None if n_dofs is None else _offset(name, "n_dofs", n_dofs)
        if self.n_dofs is not None:
            self._check_dofs(self.n_dofs)
        self.compliance_value = check_parameters(AttachmentSpec, name, {"compliance": compliance})["compliance"]
        self.pair_forces = np.zeros((p, 3))
        self.max_violation = 0.0

    def _points(self, value, key: str) -> np.ndarray:
        p = self.nodes_a.size
        array = np.asarray(value, dtype=np.float64)
        if array.size == 3:
            array = np.broadcast_to(array.reshape(1, 3), (p, 3))
        if array.shape != (p, 3) or not np.all(np.isfinite(array)):
            raise ParameterError(
                f"{self.name}: {key} must be (3,) or ({p}, 3) finite, got shape {array.shape}"
            )
        return np.array(array)

    def set_parameters(self, **parameters) -> None:
        """``compliance`` (>= 0) and ``rest_vector`` ((3,) or (p, 3))."""
        for key, value in parameters.items():
            if key == "compliance":
                self.compliance_value = check_parameters(AttachmentSpec, self.name, {key: value})[key]
            elif key == "rest_vector":
                self.rest_vector = self._points(value, key)
            else:
                raise ParameterError(
                    f"{self.name}: unknown parameter {key!r}; allowed: compliance, rest_vector"
                )

    def _check_dofs(self, n_dofs: int) -> None:
        if self.dof_offset_a + 3 * int(self.nodes_a.max()) + 3 > n_dofs:
            raise ParameterError(f"{self.name}: nodes_a exceed the DOF vector ({n_dofs} DOFs)")
        if self.nodes_b is not None and self.dof_offset_b + 3 * int(self.nodes_b.max()) + 3 > n_dofs:
            raise ParameterError(f"{self.name}: nodes_b exceed the DOF vector ({n_dofs} DOFs)")

    def _flat(self, x: np.ndarray) -> np.ndarray:
        flat = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.n_dofs is not None and flat.size != self.n_dofs:
            raise ParameterError(f"{self.name}: positions must hold {self.n_dofs} DOFs, got {flat.size}")
        self._check_dofs(flat.size)
        return flat

    def _dofs(self, offset: int, nodes: np.ndarray) -> np.ndarray:
        return offset + 3 * nodes[:, None] + np.arange(3)[None, :]  # (p, 3)

    def _relative(self, flat: np.ndarray) -> np.ndarray:
        """``x_b - x_a - rest_vector`` ``(p, 3)`` (``target`` instead of ``x_b`` for fixed targets)."""
        x_a = flat[self._dofs(self.dof_offset_a, self.nodes_a)]
        x_b = self.targets if self.nodes_b is None else flat[self._dofs(self.dof_offset_b, self.nodes_b)]
        return x_b - x_a - self.rest_vector

    # ------------------------------------------------------------------ protocol
    @property
    def n_rows(self) -> int:
        return 3 * self.nodes_a.size if self.active else 0

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """``(3p, n_dofs)``: -I on a_i, +I on b_i."""
        flat = self._flat(x)
        if not self.active:
            return sp.csr_matrix((0, flat.size))
        rows = np.arange(self.n_rows)
        cols = self._dofs(self.dof_offset_a, self.nodes_a).reshape(-1)
        matrix = sp.csr_matrix((-np.ones(rows.size), (rows, cols)), shape=(rows.size, flat.size))
        if self.nodes_b is not None:
            cols_b = self._dofs(self.dof_offset_b, self.nodes_b).reshape(-1)
            matrix = matrix + sp.csr_matrix(
                (np.ones(rows.size), (rows, cols_b)), shape=(rows.size, flat.size)
            )
        return matrix.tocsr()

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``dfree = x_b_free - x_a_free - rest_vector`` ``(3p,)`` (exact: the rows are linear)."""
        if not self.active:
            return np.zeros(0)
        return self._relative(self._flat(x_free)).reshape(-1)

    def blocks(self, x: np.ndarray) -> Blocks:
        """One 3-row EQUALITY block per pair."""
        return Blocks.equality(self.n_rows, 0.0, block_size=3)

    def compliance(self) -> np.ndarray | None:
        return np.full(self.n_rows, self.compliance_value) if self.compliance_value > 0.0 else None

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        if force.size != self.n_rows:
            raise ParameterError(f"{self.name}: store expects {self.n_rows} multipliers, got {force.size}")
        self.pair_forces = force.reshape(-1, 3).copy()
        residual = self._relative(self._flat(x_new))
        self.max_violation = float(np.linalg.norm(residual, axis=1).max()) if residual.size else 0.0

    @property
    def outputs(self) -> dict[str, float]:
        forces = np.linalg.norm(self.pair_forces, axis=1)
        return {
            "pairs": float(self.nodes_a.size),
            "force": float(forces.max()) if forces.size else 0.0,
            "maxViolation": self.max_violation,
        }
