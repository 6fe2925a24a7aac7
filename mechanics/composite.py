"""One body's objects seen on the concatenated DOFs of several bodies (used by :class:`mechanics.model.Model`).

``CompositeElasticity`` stacks the bodies' elasticities (node offsets, block-diagonal tangent);
``OffsetConstraint`` and ``OffsetLoad`` let a one-body constraint model or load act on the concatenated
positions, so that the frame step, the dynamic solver and the Simulation see one big body. Node ``i`` of body
``b`` is node ``node_offsets[b] + i``.
"""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["CompositeElasticity", "OffsetConstraint", "OffsetLoad"]


class CompositeElasticity:
    """The elasticities of several bodies over concatenated positions ``(N, 3)``, ``N = sum n_b``.

    ``bodies``: objects like :class:`mechanics.fem.TetElasticity` (``rest_positions (n_b, 3)``, ``tets``,
    ``volumes``, ``n_nodes``, ``forces_and_tangent``, ``forces``, ``tangent``, ``energy``, ``von_mises``).
    The block-diagonal tangent ``(3N, 3N)`` csr is built once; each evaluation copies the bodies' ``K.data``
    into contiguous slices of its ``data`` (a block-diagonal CSR stores body after body, row by row), so its
    pattern never changes and the direct solver keeps its symbolic analysis. Change a body's material through
    ``composite.bodies[b].set_material(...)``.
    """

    def __init__(self, bodies) -> None:
        self.bodies = list(bodies)
        if not self.bodies:
            raise ParameterError("CompositeElasticity needs at least one body")
        sizes = np.array([int(body.n_nodes) for body in self.bodies], dtype=np.int64)
        self.node_offsets = np.concatenate(([0], np.cumsum(sizes)))
        self.n_nodes = int(self.node_offsets[-1])
        self.n_dofs = 3 * self.n_nodes
        self.rest_positions = np.concatenate([np.asarray(b.rest_positions, dtype=np.float64) for b in self.bodies])
        self.tets = np.concatenate([np.asarray(b.tets, dtype=np.int64) + off
                                    for b, off in zip(self.bodies, self.node_offsets)])
        self.volumes = np.concatenate([np.asarray(b.volumes, dtype=np.float64) for b in self.bodies])
        self._K = self._block_pattern([b.tangent(b.rest_positions) for b in self.bodies])

    def _block_pattern(self, tangents) -> sp.csr_matrix:
        indptr, indices, data_starts, nnz = [np.zeros(1, dtype=np.int64)], [], [0], 0
        for K, offset in zip(tangents, self.node_offsets):
            K = sp.csr_matrix(K)
            indptr.append(K.indptr[1:].astype(np.int64) + nnz)
            indices.append(K.indices.astype(np.int64) + 3 * offset)
            nnz += K.nnz
            data_starts.append(nnz)
        self._data_slices = [slice(a, b) for a, b in zip(data_starts[:-1], data_starts[1:])]
        K = sp.csr_matrix((np.zeros(nnz), np.concatenate(indices), np.concatenate(indptr)),
                          shape=(self.n_dofs, self.n_dofs))
        for K_body, rows in zip(tangents, self._data_slices):
            K.data[rows] = K_body.data
        return K

    def split(self, x) -> list[np.ndarray]:
        """The bodies' positions ``(n_b, 3)`` (views) of concatenated positions ``(N, 3)`` or ``(3N,)``."""
        x = np.asarray(x, dtype=np.float64)
        if x.size != self.n_dofs:
            raise ParameterError(f"x must have shape ({self.n_nodes}, 3), got {x.shape}")
        x = x.reshape(self.n_nodes, 3)
        return [x[a:b] for a, b in zip(self.node_offsets[:-1], self.node_offsets[1:])]

    def _fill(self, tangents) -> sp.csr_matrix:
        for K_body, rows in zip(tangents, self._data_slices):
            if K_body.nnz != rows.stop - rows.start:
                raise ParameterError("a body's tangent changed its sparsity pattern; rebuild the composite")
            self._K.data[rows] = K_body.data
        return self._K

    def forces_and_tangent(self, x):
        """``(f_int (N, 3), K csr (3N, 3N))``; K is the same object every call (values rewritten)."""
        results = [body.forces_and_tangent(xb) for body, xb in zip(self.bodies, self.split(x))]
        return np.concatenate([f for f, _ in results]), self._fill([K for _, K in results])

    @property
    def exact_tangent(self) -> bool:
        """True when every body's tangent is the exact Hessian of its energy."""
        return all(getattr(body, "exact_tangent", False) for body in self.bodies)

    @contextlib.contextmanager
    def definite_tangent(self):
        """Every body's positive semi-definite tangent within the block
        (:meth:`mechanics.fem.TetElasticity.definite_tangent`)."""
        with contextlib.ExitStack() as stack:
            for body in self.bodies:
                if hasattr(body, "definite_tangent"):
                    stack.enter_context(body.definite_tangent())
            yield

    @property
    def inversion_admissible(self) -> bool:
        """True when every body's model defines forces on an inverted element (see
        :attr:`mechanics.fem.TetElasticity.inversion_admissible`)."""
        return all(getattr(body, "inversion_admissible", False) for body in self.bodies)

    def forces(self, x) -> np.ndarray:
        return np.concatenate([body.forces(xb) for body, xb in zip(self.bodies, self.split(x))])

    def tangent(self, x) -> sp.csr_matrix:
        return self._fill([body.tangent(xb) for body, xb in zip(self.bodies, self.split(x))])

    def energy(self, x) -> float:
        return float(sum(body.energy(xb) for body, xb in zip(self.bodies, self.split(x))))

    def von_mises(self, x) -> np.ndarray:
        return np.concatenate([body.von_mises(xb) for body, xb in zip(self.bodies, self.split(x))])

    def strain_energy_density(self, x) -> np.ndarray:
        return np.concatenate([body.strain_energy_density(xb) for body, xb in zip(self.bodies, self.split(x))])


class OffsetLoad:
    """A one-body load (``force(x_b) -> (n_b, 3)``) acting on nodes ``offset .. offset + n_b`` of ``(N, 3)``."""

    def __init__(self, load, node_offset: int, n_nodes_body: int, n_nodes_total: int) -> None:
        self.load = load
        self.start, self.stop, self.n_nodes_total = int(node_offset), int(node_offset) + int(n_nodes_body), \
            int(n_nodes_total)
        if callable(getattr(load, "potential", None)):
            self.potential = lambda x: float(self.load.potential(np.asarray(x)[self.start:self.stop]))

    def force(self, x) -> np.ndarray:
        total = np.zeros((self.n_nodes_total, 3))
        total[self.start:self.stop] = self.load.force(np.asarray(x)[self.start:self.stop])
        return total


class OffsetConstraint:
    """A one-body constraint model (J of shape ``(rows, 3 n_b)``) acting on concatenated positions ``(N, 3)``.

    Positions are sliced to the body before being passed on; J's columns are shifted by ``3 node_offset`` and
    widened to ``3N``. Everything else (``name``, ``enforced``, ``active``, ``outputs``, ``set_parameters``,
    ``measures_motion``, contact read-outs...) is the wrapped model's.
    """

    def __init__(self, constraint, node_offset: int, n_nodes_body: int, n_nodes_total: int) -> None:
        self.__dict__["constraint"] = constraint
        self.__dict__["start"] = int(node_offset)
        self.__dict__["stop"] = int(node_offset) + int(n_nodes_body)
        self.__dict__["n_dofs"] = 3 * int(n_nodes_total)
        self.__dict__["_last_jacobians"] = (None, None)

    def __getattr__(self, name):
        attribute = getattr(self.__dict__["constraint"], name)
        if name in ("remember", "missed_contacts", "begin_frame"):  # methods taking positions: the body's slice
            return lambda x: attribute(self._local(x))
        return attribute

    def __setattr__(self, name, value) -> None:
        setattr(self.constraint, name, value)

    def __repr__(self) -> str:
        return f"OffsetConstraint({self.constraint!r}, nodes {self.start}..{self.stop - 1})"

    def _local(self, x):
        if x is None:
            return None
        return np.asarray(x, dtype=np.float64).reshape(-1, 3)[self.start:self.stop]

    def update(self, x_free) -> None:
        self.constraint.update(self._local(x_free))

    def add_missed_contacts(self, x, at=None, tolerance: float = 1e-9) -> int:
        return self.constraint.add_missed_contacts(self._local(x), self._local(at), tolerance)

    def jacobian(self, x) -> sp.csr_matrix:
        local = sp.csr_matrix(self.constraint.jacobian(self._local(x)))
        wide = sp.csr_matrix((local.data, local.indices + 3 * self.start, local.indptr),
                             shape=(local.shape[0], self.n_dofs))
        self.__dict__["_last_jacobians"] = (wide, local)
        return wide

    def law_jacobian(self, x) -> sp.csr_matrix:
        """The wrapped model's law derivative (``law_jacobian``, else its Jacobian), its columns widened as in
        :meth:`jacobian`."""
        inner = getattr(self.constraint, "law_jacobian", self.constraint.jacobian)
        local = sp.csr_matrix(inner(self._local(x)))
        return sp.csr_matrix((local.data, local.indices + 3 * self.start, local.indptr),
                             shape=(local.shape[0], self.n_dofs))

    def _local_jacobian(self, J) -> sp.csr_matrix:
        wide, local = self._last_jacobians
        if J is wide:
            return local
        return sp.csr_matrix(J)[:, 3 * self.start:3 * self.stop]

    def violation(self, x, x_free, J) -> np.ndarray:
        return self.constraint.violation(self._local(x), self._local(x_free), self._local_jacobian(J))

    def blocks(self, x):
        return self.constraint.blocks(self._local(x))

    def compliance(self):
        return self.constraint.compliance()

    def force_stiffness(self, x, force):
        """The wrapped model's triplets with DOFs shifted to the composite (the shifted index arrays are kept
        while the model returns the same ones, so the frame step's matrix pattern survives)."""
        terms = self.constraint.force_stiffness(self._local(x), force)
        if terms is None:
            return None
        rows, cols, values = terms
        cached = self.__dict__.get("_shifted")
        if cached is None or cached[0] is not rows or cached[1] is not cols:
            shift = 3 * self.start
            cached = (rows, cols, rows + shift, cols + shift)
            self.__dict__["_shifted"] = cached
        return cached[2], cached[3], values

    def store(self, force, x_new) -> None:
        self.constraint.store(force, self._local(x_new))

