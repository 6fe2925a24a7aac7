"""Nodes that move together as one rigid piece: a rigid frame without mass of its own that nothing drives
(SOFA: a free Rigid3 frame carrying nodes through a RigidMapping, Tripod's ``FreeCenter``).

The frame's 6 degrees of freedom are eliminated: the ``k`` nodes ``p_i`` keep their own masses, and the rows say
that they are a rigid motion of their rest positions ``X_i``. With ``A_i = X_i - mean(X)`` (the rest arms) and
``R`` the rotation that best takes the arms onto ``p_i - mean(p)`` (Kabsch, :func:`mechanics.rigid_frames.
best_rigid_motion`), the deviation of each node in the group's own frame is ``r_i = R^T (p_i - mean(p)) - A_i``
(zero exactly when the group is rigid). ``r`` is orthogonal to the group's 6 rigid motions at rest (translations
``e``, rotations ``e x A_i``: Kabsch's optimality), so the rows are its components on ``Q`` (3k, 3k - 6), an
orthonormal basis of their complement, computed once at rest::

    phi = Q^T vec(r),      J = Q^T blockdiag(R^T, ..., R^T) on the group's DOFs     ((3k - 6) rows, EQUALITY)

``J`` annihilates the group's rigid motions at its current pose (the centroid's removal and the change of ``R``
act only along them), so the rows neither push the group as a whole nor turn it: the multipliers are the
internal forces that keep it rigid, and the frame, massless, carries no force of its own (the forces ``J^T
lambda`` on the group add up to zero force and zero torque).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, check_positions
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.rigid_frames import best_rigid_motion

__all__ = ["RigidGroupConstraint"]


class RigidGroupConstraint(Constraint):
    """The nodes ``nodes`` (k,) of the model's ``n_nodes`` move as one rigid piece; ``X`` (n, 3) are the rest
    positions. At least 3 nodes, not all on one line (otherwise a rotation about that line is not fixed by them).

    Outputs: ``deviation``, the largest distance of a node from the rigid motion that fits the group best (length,
    as of the last :meth:`store`)."""

    ramped = False  # the target is the group's own rest shape, not a value that a frame moves

    def __init__(self, X: np.ndarray, nodes, *, name: str = "rigidGroup") -> None:
        super().__init__(name)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != 3:
            raise ParameterError(f"{name}: X must have shape (n, 3), got {X.shape}")
        self.n_nodes = X.shape[0]
        self.nodes = np.unique(np.asarray(nodes, dtype=np.int64).reshape(-1))
        if self.nodes.size and (self.nodes.min() < 0 or self.nodes.max() >= self.n_nodes):
            raise ParameterError(f"{name}: node ids must be in [0, {self.n_nodes})")
        self.arms = X[self.nodes] - X[self.nodes].mean(axis=0)  # (k, 3)
        k = self.nodes.size
        if k < 3 or np.linalg.matrix_rank(self.arms, tol=1e-9 * max(np.abs(self.arms).max(), 1.0)) < 2:
            raise ParameterError(f"{name}: a rigid group needs at least 3 nodes not on one line, got {k} "
                                 f"({'on one line' if k >= 3 else 'too few'})")
        basis = np.zeros((3 * k, 6))  # the rigid motions at rest: translations, then rotations e x A_i
        for axis in range(3):
            e = np.eye(3)[axis]
            basis[axis::3, axis] = 1.0
            basis[:, 3 + axis] = np.cross(e, self.arms).reshape(-1)
        full, _ = np.linalg.qr(basis, mode="complete")
        self.Q = full[:, 6:]  # (3k, 3k - 6), orthonormal, orthogonal to the rigid motions at rest
        self._QT = self.Q.T.reshape(3 * k - 6, k, 3)
        self._columns = (3 * self.nodes[:, None] + np.arange(3)[None, :]).reshape(-1)
        self._outputs = {"deviation": 0.0}

    @property
    def n_rows(self) -> int:
        return 3 * self.nodes.size - 6

    def rotation(self, x: np.ndarray) -> np.ndarray:
        """The rotation (3, 3) that best takes the rest arms onto the group's nodes in ``x`` (n, 3)."""
        points = check_positions(self.name, x, self.n_nodes)[self.nodes]
        return best_rigid_motion(self.arms, points)[0]

    def deviations(self, x: np.ndarray, R: np.ndarray | None = None) -> np.ndarray:
        """``r_i = R^T (p_i - mean(p)) - A_i`` (k, 3) at ``x`` (n, 3) (``R``: the best fit at ``x`` by default)."""
        points = check_positions(self.name, x, self.n_nodes)[self.nodes]
        R = self.rotation(x) if R is None else R
        return (points - points.mean(axis=0)) @ R - self.arms

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """``Q^T blockdiag(R^T)`` on the group's DOFs, ``(3k - 6, 3n)``, ``R`` the best fit at ``x``."""
        R = self.rotation(x)
        values = np.einsum("mkj,aj->mka", self._QT, R).reshape(self.n_rows, -1)  # row m, node k: R q_mk
        rows = np.repeat(np.arange(self.n_rows), self._columns.size)
        cols = np.tile(self._columns, self.n_rows)
        return sp.csr_matrix((values.reshape(-1), (rows, cols)), shape=(self.n_rows, 3 * self.n_nodes))

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``-d(J(x)^T lambda)/dx``: the force on node i is ``R g_i`` (``g = Q lambda``) and only ``R`` moves with
        ``x``: a change ``dp`` turns it by ``dtheta = H^-1 sum_j a_j x dp_j`` (``a_j = p_j - mean(p)``, ``H = sum_j
        (|a_j|^2 I - a_j a_j^T)``; exact at a rigid pose, the Kabsch rotation's derivative), so the block (i, j)
        is ``[R g_i]x H^-1 [a_j]x``. Triplets over the group's DOFs (the same index arrays on every call)."""
        points = check_positions(self.name, x, self.n_nodes)[self.nodes]
        arms = points - points.mean(axis=0)
        R = best_rigid_motion(self.arms, points)[0]
        g = (self.Q @ np.asarray(force, dtype=np.float64).reshape(-1)).reshape(-1, 3) @ R.T  # R g_i, (k, 3)
        H = (arms * arms).sum() * np.eye(3) - arms.T @ arms
        left = cross_matrices(g) @ np.linalg.inv(H)  # (k, 3, 3)
        blocks = np.einsum("iab,jbc->ijac", left, cross_matrices(arms))  # (k, k, 3, 3)
        if getattr(self, "_stiffness_pattern", None) is None:
            k = self.nodes.size
            dofs = self._columns.reshape(k, 3)
            rows = np.broadcast_to(dofs[:, None, :, None], (k, k, 3, 3)).reshape(-1).copy()
            cols = np.broadcast_to(dofs[None, :, None, :], (k, k, 3, 3)).reshape(-1).copy()
            self._stiffness_pattern = (rows, cols)
        return self._stiffness_pattern[0], self._stiffness_pattern[1], blocks.reshape(-1)

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """``Q^T vec(R^T (p - mean(p)) - A)`` at ``x_free`` with its own best fit ``R``: the exact deviation (a
        rotation since ``x`` is no violation); to first order ``phi(x) + J (x_free - x)``."""
        return self.Q.T @ self.deviations(x_free).reshape(-1)

    def blocks(self, x: np.ndarray) -> Blocks:
        return Blocks.equality(self.n_rows)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        self._outputs = {"deviation": float(np.linalg.norm(self.deviations(x_new), axis=1).max())}

    @property
    def outputs(self) -> dict[str, float]:
        return dict(self._outputs)
