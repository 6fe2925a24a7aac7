"""A constraint model that acts on the model's nodes and on points mapped from them (a collision surface's
vertices embedded in the tetrahedra, ``body.collisionMesh``).

The wrapped model sees ``N + k`` nodes: the model's ``N`` nodes followed by the ``k`` mapped points, at
``x_ext = [x; W x]`` with ``W`` ``(k, N)`` the barycentric weights. Its rows ``J_ext`` ``(r, 3(N + k))`` become
``J = J_ext P`` over the model's DOFs, ``P = [I; W (x) I_3]`` (the chain rule of the mapping: SOFA's
BarycentricMapping ``applyJT`` on the constraint matrix). Its multipliers, read-outs (contact points, forces)
and outputs are the wrapped model's; positions given to it are always extended.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError

__all__ = ["MappedConstraint"]


class MappedConstraint:
    """``constraint`` (over ``N + k`` nodes) seen on the model's ``N`` nodes through ``weights`` ``(k, N)``."""

    def __init__(self, constraint, weights: sp.spmatrix, n_nodes: int) -> None:
        weights = sp.csr_matrix(weights, dtype=np.float64)
        if weights.shape[1] != n_nodes:
            raise ParameterError(f"mapped constraint: weights must have {n_nodes} columns, got {weights.shape}")
        self.__dict__["constraint"] = constraint
        self.__dict__["weights"] = weights
        self.__dict__["n_nodes"] = int(n_nodes)
        expand = sp.vstack([sp.identity(3 * n_nodes, format="csr"), sp.kron(weights, sp.identity(3), format="csr")])
        self.__dict__["expand"] = sp.csr_matrix(expand)
        self.__dict__["_last_jacobians"] = (None, None)

    def __getattr__(self, name):
        attribute = getattr(self.__dict__["constraint"], name)
        # methods taking positions
        if name in ("remember", "missed_contacts", "begin_frame", "detached", "keep_held", "follow_surface"):
            return lambda x, *args, **kwargs: attribute(self.extend(x), *args, **kwargs)
        return attribute

    def __setattr__(self, name, value) -> None:
        setattr(self.constraint, name, value)

    def __repr__(self) -> str:
        return f"MappedConstraint({self.constraint!r}, {self.weights.shape[0]} mapped points)"

    def extend(self, x):
        """``[x; W x]`` ``(N + k, 3)`` for node positions ``x`` ``(N, 3)`` (None stays None)."""
        if x is None:
            return None
        x = np.asarray(x, dtype=np.float64).reshape(self.n_nodes, 3)
        return np.vstack([x, self.weights @ x])

    def update(self, x_free) -> None:
        self.constraint.update(self.extend(x_free))

    def add_missed_contacts(self, x, at=None, tolerance: float = 1e-9) -> int:
        return self.constraint.add_missed_contacts(self.extend(x), self.extend(at), tolerance)

    def jacobian(self, x) -> sp.csr_matrix:
        extended = sp.csr_matrix(self.constraint.jacobian(self.extend(x)))
        J = sp.csr_matrix(extended @ self.expand)
        self.__dict__["_last_jacobians"] = (J, extended)
        return J

    def law_jacobian(self, x) -> sp.csr_matrix:
        """The wrapped model's law derivative (``law_jacobian``, else its Jacobian) on the model's DOFs."""
        inner = getattr(self.constraint, "law_jacobian", self.constraint.jacobian)
        return sp.csr_matrix(sp.csr_matrix(inner(self.extend(x))) @ self.expand)

    def violation(self, x, x_free, J) -> np.ndarray:
        last, extended = self._last_jacobians
        if J is not last:
            extended = sp.csr_matrix(self.constraint.jacobian(self.extend(x)))
        return self.constraint.violation(self.extend(x), self.extend(x_free), extended)

    def blocks(self, x):
        return self.constraint.blocks(self.extend(x))

    def compliance(self):
        return self.constraint.compliance()

    def force_stiffness(self, x, force):
        """The wrapped model's stiffness (triplets over the extended DOFs, e.g. a contact's curvature on a mapped
        vertex) seen on the model's DOFs: ``E^T S E`` with ``E`` the mapping's expansion, so a block on a mapped
        vertex lands on its tetrahedron's nodes with the products of their weights. The index arrays stay the
        same objects while the wrapped model's do (the frame step keeps its matrix pattern)."""
        terms = self.constraint.force_stiffness(self.extend(x), force)
        if terms is None:
            return None
        rows, cols, values = terms
        cached = self.__dict__.get("_mapped_pattern")
        if cached is None or cached[0] is not rows or cached[1] is not cols:
            E = self.expand
            out_rows, out_cols, sources, coefficients = [], [], [], []
            for t, (r, c) in enumerate(zip(rows, cols)):
                r_dofs, r_weights = E.indices[E.indptr[r]:E.indptr[r + 1]], E.data[E.indptr[r]:E.indptr[r + 1]]
                c_dofs, c_weights = E.indices[E.indptr[c]:E.indptr[c + 1]], E.data[E.indptr[c]:E.indptr[c + 1]]
                out_rows.append(np.repeat(r_dofs, c_dofs.size))
                out_cols.append(np.tile(c_dofs, r_dofs.size))
                coefficients.append(np.outer(r_weights, c_weights).reshape(-1))
                sources.append(np.full(r_dofs.size * c_dofs.size, t))
            cached = (rows, cols, *(np.concatenate(parts).astype(kind) if parts else np.zeros(0, kind) for parts, kind
                                    in ((out_rows, np.int64), (out_cols, np.int64), (sources, np.int64),
                                        (coefficients, np.float64))))
            self.__dict__["_mapped_pattern"] = cached
        return cached[2], cached[3], cached[5] * np.asarray(values, dtype=np.float64)[cached[4]]

    def store(self, force, x_new) -> None:
        self.constraint.store(force, self.extend(x_new))
