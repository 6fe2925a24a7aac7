"""The rows of all the cables of a frame at once (the trunk has eight): their lengths, gradients and Jacobian
on the free DOFs in one compiled pass, and their laws in one table.

Built one cable at a time (:meth:`CableConstraint.jacobian`, ``violation``, ``blocks``), each row cost about
60 Python calls: a sparse matrix per cable, its columns mapped to the free DOFs, the length computed three times
(row, violation, rate-limited target) and its law's table checked. A frame builds its rows four to five times,
and the trunk spent a fifth of its slider frame there. Here the pattern of the stacked Jacobian (each cable's
free DOFs, in DOF order, zeros included, exactly as the one-at-a-time rows give it) is found once per set of
cables and free DOFs, and every build only fills its values: for each cable point p (at ``sum_j w_pj x_j``, the
barycentric mapping, or a node) and each of its nodes j, ``J[r, 3 j + c] -= w_pj dL_r/dp_c``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.cable import CableConstraint
from softsim.mechanics.constraints.row_kernels import cable_lengths
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.same_state import same_values

__all__ = ["CableRows", "PointRows", "cable_rows_for", "fast_csr", "rows_for"]

#: the plans of the last few sets of cables (a scene's frames use one; tests alternate a few scenes)
_PLANS: list = []
_MAX_PLANS = 4


def fast_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int], *,
             canonical: bool = False) -> sp.csr_matrix:
    """A CSR matrix on arrays whose structure is valid by construction (``indices`` and ``indptr`` int32 or
    int64 alike, ``indptr`` non-decreasing from 0 to ``data.size``): scipy's constructor checks the format and
    chooses the index type on every call, which cost more than the cables' rows themselves. ``canonical``: each
    row's columns are known to be strictly increasing (scipy then need not check it)."""
    matrix = sp.csr_matrix.__new__(sp.csr_matrix)
    matrix._shape = (int(shape[0]), int(shape[1]))
    matrix.maxprint = 50
    matrix.data, matrix.indices, matrix.indptr = data, indices, indptr
    if canonical:
        matrix._has_sorted_indices = True
        matrix._has_canonical_format = True
    return matrix


class PointRows:
    """The stacked one-row-each rows of ``constraints`` (active, one body of ``n_nodes`` nodes, in order), each
    written on its :class:`~mechanics.constraints.base.PointSet`'s points, on the free DOFs ``free_dofs``: the
    pattern is found at construction (each row's free DOFs in DOF order, zeros included, exactly as
    ``PointSet.rows_to_dofs`` gives them), :meth:`build` fills the values. A subclass gives the compiled pass
    (:meth:`_run`: a quantity per row and, when asked, the row values) and the motion of each row from its
    quantity (:meth:`_motions`)."""

    def __init__(self, constraints: list, free_dofs: np.ndarray, n_nodes: int) -> None:
        self.constraints = list(constraints)
        self.point_sets = [c.point_set for c in self.constraints]
        self.free_dofs = free_dofs
        self.n_nodes = int(n_nodes)
        dof_to_free = np.full(3 * self.n_nodes, -1, dtype=np.int64)
        dof_to_free[free_dofs] = np.arange(free_dofs.size)
        ptr, nodes, weights, first, slots, indices, indptr = [0], [], [], [0], [], [], [0]
        for point_set in self.point_sets:
            if point_set.mapping is not None:
                node_ids, node_weights = point_set.mapping.node_ids, point_set.mapping.weights
            else:
                node_ids, node_weights = point_set.indices[:, None], np.ones((point_set.n_points, 1))
            node_ids = np.asarray(node_ids, dtype=np.int64)
            dofs = (3 * node_ids[:, :, None] + np.arange(3)).reshape(-1)  # (k q 3,) in the kernel's order
            columns = np.unique(dofs)  # the row's DOFs, as the one-constraint row has them (zeros included)
            free = dof_to_free[columns]
            kept = columns[free >= 0]
            position = np.full(3 * self.n_nodes, -1, dtype=np.int64)
            position[kept] = indptr[-1] + np.arange(kept.size)
            slots.append(position[dofs])
            indices.append(free[free >= 0])
            indptr.append(indptr[-1] + kept.size)
            ptr.extend(ptr[-1] + node_ids.shape[1] * np.arange(1, node_ids.shape[0] + 1))
            nodes.append(node_ids.reshape(-1))
            weights.append(np.asarray(node_weights, dtype=np.float64).reshape(-1))
            first.append(first[-1] + point_set.n_points)
        index_type = np.int32 if max(free_dofs.size, indptr[-1]) < np.iinfo(np.int32).max else np.int64
        self.point_ptr = np.asarray(ptr, dtype=np.int64)
        self.point_nodes = np.concatenate(nodes)
        self.point_weights = np.concatenate(weights)
        self.first_point = np.asarray(first, dtype=np.int64)
        self.slots = np.concatenate(slots)
        #: each row's columns strictly increasing (free DOFs in increasing order): the matrices are canonical
        self.canonical = all(np.all(np.diff(part) > 0) for part in indices)
        self.indices = np.concatenate(indices).astype(index_type)
        self.indptr = np.asarray(indptr, dtype=index_type)
        self.row_ranges = [slice(i, i + 1) for i in range(len(self.constraints))]
        self._block_start = np.arange(len(self.constraints), dtype=np.int64)
        self._block_size = np.ones(len(self.constraints), dtype=np.int64)
        n_points = int(self.first_point[-1])
        self._points, self._gradient = np.empty((n_points, 3)), np.empty((n_points, 3))
        self._last: tuple | None = None  # (positions, quantities) of the rate limits' reference positions

    def matches(self, constraints: list, free_dofs: np.ndarray, n_nodes: int) -> bool:
        return (free_dofs is self.free_dofs and n_nodes == self.n_nodes and len(constraints) == len(self.constraints)
                and all(a is b and a.point_set is p for a, b, p in zip(constraints, self.constraints,
                                                                       self.point_sets)))

    def _run(self, x: np.ndarray, with_rows: bool) -> tuple[np.ndarray, np.ndarray]:
        """(quantity per row (r,), the rows' values on the pattern, or an empty array) at ``x`` (n, 3)."""
        raise NotImplementedError

    def _motions(self, quantities: np.ndarray) -> np.ndarray:
        """Each row's motion (its violation at the positions, ScalarActuator.motion_at) from its quantity."""
        raise NotImplementedError

    def quantities(self, x: np.ndarray) -> np.ndarray:
        """The rows' quantities (r,) at ``x`` (n, 3); the last answer is kept (the rate limits' reference
        positions are the last frame's, the same in every build of a frame)."""
        if self._last is not None and same_values(self._last[0], x):
            return self._last[1]
        quantities = self._run(x, False)[0]
        self._last = (np.array(x, dtype=np.float64), quantities)
        return quantities

    def rows(self, at: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
        """The quantities (r,) and the rows on the free DOFs, CSR (r, n_free), at ``at`` (n, 3)."""
        quantities, data = self._run(at, True)
        return quantities, fast_csr(data, self.indices, self.indptr, (len(self.constraints), self.free_dofs.size),
                                    canonical=self.canonical)

    def build(self, x: np.ndarray, at: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray, Blocks]:
        """The rows linearised at ``at`` (n, 3), their violations (the motions at ``at``, (r,)) and their laws,
        the rate limits measured from ``x`` (n, 3) (:meth:`ScalarActuator.block_values`)."""
        quantities, J_free = self.rows(at)
        last: list = []

        def motion(i):
            if not last:
                last.append(self._motions(self.quantities(x)))
            return last[0][i]

        values = [c.block_values(lambda i=i: motion(i)) for i, c in enumerate(self.constraints)]
        for _kind, target, lo, hi in values:  # Blocks' checks, on a few floats
            if not lo <= hi:
                raise ParameterError("Blocks: lo must be <= hi (no NaN)")
            if not math.isfinite(target):
                raise ParameterError("Blocks: target must be finite")
        r = len(self.constraints)
        kind, target, lo, hi = zip(*values)
        blocks = Blocks._trusted(self._block_start, self._block_size, np.array(kind, dtype=np.int8),
                                 np.array(target, dtype=np.float64), np.array(lo, dtype=np.float64),
                                 np.array(hi, dtype=np.float64), np.zeros(r))
        return J_free, self._motions(quantities), blocks


class CableRows(PointRows):
    """The rows ``-dL/dx`` of cables (:class:`CableConstraint`); their quantity is the length L, their motion
    the displacement ``L0 - L``."""

    def __init__(self, cables: list, free_dofs: np.ndarray, n_nodes: int) -> None:
        super().__init__(cables, free_dofs, n_nodes)
        self.cables = self.constraints
        self.has_pull = np.array([c.pullPoint is not None for c in self.cables])
        self._minus_ones = np.full(len(self.cables), -1.0)  # the rows are -dL/dx

    def _run(self, x: np.ndarray, with_rows: bool) -> tuple[np.ndarray, np.ndarray]:
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(self.n_nodes, 3)
        pull = np.zeros((len(self.cables), 3))
        for i, cable in enumerate(self.cables):
            if cable.pullPoint is not None:
                pull[i] = cable.pullPoint
        lengths = np.empty(len(self.cables))
        data = np.empty(int(self.indptr[-1]) if with_rows else 0)
        cable_lengths(x, self.point_ptr, self.point_nodes, self.point_weights, self.first_point, pull, self.has_pull,
                      self._blend(), self.slots, self._minus_ones, lengths, self._points, self._gradient, data,
                      with_rows)
        return lengths, data

    def _blend(self) -> np.ndarray:
        """(K,) each point's segment blend length, from the cables that have them (``CableConstraint._blend``,
        kept by each cable while its pull point is the same), else zeros."""
        parts = []
        for cable in self.cables:
            own = getattr(cable, "_blend", None)
            parts.append(np.zeros(cable.point_set.n_points) if own is None else own(cable.pullPoint))
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float64)

    def _motions(self, quantities: np.ndarray) -> np.ndarray:
        return np.array([c.L0 for c in self.cables]) - quantities

    def lengths(self, x: np.ndarray) -> np.ndarray:
        """The cables' lengths (r,) at ``x`` (n, 3) (kept for the last ``x``)."""
        return self.quantities(x)


def cable_rows_for(constraints: list, free_dofs: np.ndarray, n_nodes: int) -> CableRows | None:
    """The (kept) :class:`CableRows` of the active plain cables among ``constraints``, or None when there are
    none (a cable wrapped for a body of a composite builds its rows one at a time)."""
    return rows_for(CableRows, CableConstraint, constraints, free_dofs, n_nodes)


def rows_for(kind, model, constraints: list, free_dofs: np.ndarray, n_nodes: int):
    """The (kept) ``kind`` (a :class:`PointRows`) of the active constraints of class ``model`` exactly among
    ``constraints``, or None when there are none."""
    chosen = [c for c in constraints if type(c) is model and c.active and c.n_nodes == n_nodes]
    if not chosen:
        return None
    for plan in _PLANS:
        if type(plan) is kind and plan.matches(chosen, free_dofs, n_nodes):
            return plan
    plan = kind(chosen, free_dofs, n_nodes)
    _PLANS.insert(0, plan)
    del _PLANS[_MAX_PLANS:]
    return plan


class LazyJacobians(Sequence):
    """Each constraint's own Jacobian (r_k, 3 n), as :attr:`ConstraintSystem.jacobians` lists them: given ones
    as they are, those of batched cables (None in ``given``) computed when asked (only dynamic steps ask)."""

    def __init__(self, constraints: list, given: list, at: np.ndarray) -> None:
        self._constraints, self._given, self._at = constraints, list(given), at

    def __len__(self) -> int:
        return len(self._given)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._given[index] is None:
            self._given[index] = self._constraints[index].jacobian(self._at)
        return self._given[index]
