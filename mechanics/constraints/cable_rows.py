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
from numba import njit

from softsim.mechanics.constraints.cable import CableConstraint, _polyline_length_and_gradient
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import Blocks

__all__ = ["CableRows", "cable_rows_for", "fast_csr"]

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


@njit(cache=True, nogil=True)
def _cables(x, point_ptr, point_nodes, point_weights, first_point, pull_points, has_pull, slots, lengths, points,
            gradient, data, with_rows):
    """Lengths (r,) of the cables whose points ``first_point[i]:first_point[i + 1]`` are at
    ``sum_j point_weights[j] x[point_nodes[j]]`` (j in ``point_ptr[p]:point_ptr[p + 1]``), and, when
    ``with_rows``, the values of their rows ``-dL/dx`` on the free DOFs written into ``data`` (``slots[3 j + c]``
    is the entry of node j's coordinate c, -1 for a fixed DOF). ``points`` and ``gradient`` (K, 3) are scratch."""
    for p in range(point_ptr.size - 1):
        for c in range(3):
            total = 0.0
            for j in range(point_ptr[p], point_ptr[p + 1]):
                total += point_weights[j] * x[point_nodes[j], c]
            points[p, c] = total
    for i in range(lengths.size):
        a, b = first_point[i], first_point[i + 1]
        lengths[i] = _polyline_length_and_gradient(points[a:b], pull_points[i], has_pull[i], gradient[a:b])
    if not with_rows:
        return
    for e in range(data.size):
        data[e] = 0.0
    for p in range(point_ptr.size - 1):
        for j in range(point_ptr[p], point_ptr[p + 1]):
            for c in range(3):
                slot = slots[3 * j + c]
                if slot >= 0:
                    data[slot] += point_weights[j] * -gradient[p, c]


class CableRows:
    """The stacked rows of ``cables`` (active :class:`CableConstraint` of one body of ``n_nodes`` nodes, in
    order) on the free DOFs ``free_dofs``: the pattern is found at construction, :meth:`lengths` and
    :meth:`rows` fill the values."""

    def __init__(self, cables: list, free_dofs: np.ndarray, n_nodes: int) -> None:
        self.cables = list(cables)
        self.point_sets = [c.point_set for c in self.cables]
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
            columns = np.unique(dofs)  # the row's DOFs, as the one-cable row has them (zeros included)
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
        self.has_pull = np.array([c.pullPoint is not None for c in self.cables])
        self.row_ranges = [slice(i, i + 1) for i in range(len(self.cables))]
        self._block_start = np.arange(len(self.cables), dtype=np.int64)
        self._block_size = np.ones(len(self.cables), dtype=np.int64)
        n_points = int(self.first_point[-1])
        self._points, self._gradient = np.empty((n_points, 3)), np.empty((n_points, 3))
        self._last: tuple | None = None  # (positions, lengths) of the rate limits' reference positions

    def matches(self, cables: list, free_dofs: np.ndarray, n_nodes: int) -> bool:
        return (free_dofs is self.free_dofs and n_nodes == self.n_nodes and len(cables) == len(self.cables)
                and all(a is b and a.point_set is p for a, b, p in zip(cables, self.cables, self.point_sets)))

    def _run(self, x: np.ndarray, with_rows: bool) -> tuple[np.ndarray, np.ndarray | None]:
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(self.n_nodes, 3)
        pull = np.zeros((len(self.cables), 3))
        for i, cable in enumerate(self.cables):
            if cable.pullPoint is not None:
                pull[i] = cable.pullPoint
        lengths = np.empty(len(self.cables))
        data = np.empty(int(self.indptr[-1]) if with_rows else 0)
        _cables(x, self.point_ptr, self.point_nodes, self.point_weights, self.first_point, pull, self.has_pull,
                self.slots, lengths, self._points, self._gradient, data, with_rows)
        return lengths, data

    def lengths(self, x: np.ndarray) -> np.ndarray:
        """The cables' lengths (r,) at ``x`` (n, 3); the last answer is kept (the rate limits' reference
        positions are the last frame's, the same in every build of a frame)."""
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        lengths = self._run(x, False)[0]
        self._last = (np.array(x, dtype=np.float64), lengths)
        return lengths

    def rows(self, at: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
        """The lengths (r,) and the rows ``-dL/dx`` on the free DOFs, CSR (r, n_free), at ``at`` (n, 3)."""
        lengths, data = self._run(at, True)
        return lengths, fast_csr(data, self.indices, self.indptr, (len(self.cables), self.free_dofs.size),
                                 canonical=self.canonical)

    def build(self, x: np.ndarray, at: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray, Blocks]:
        """The rows linearised at ``at`` (n, 3), their violations ``L0 - L(at)`` (r,) and their laws, the rate
        limits measured from ``x`` (n, 3) (:meth:`ScalarActuator.block_values`)."""
        lengths, J_free = self.rows(at)
        rest = np.array([c.L0 for c in self.cables])
        last: list = []

        def motion(i):
            if not last:
                last.append(self.lengths(x))
            return rest[i] - last[0][i]

        values = [c.block_values(lambda i=i: motion(i)) for i, c in enumerate(self.cables)]
        for _kind, target, lo, hi in values:  # Blocks' checks, on a few floats
            if not lo <= hi:
                raise ParameterError("Blocks: lo must be <= hi (no NaN)")
            if not math.isfinite(target):
                raise ParameterError("Blocks: target must be finite")
        r = len(self.cables)
        kind, target, lo, hi = zip(*values)
        blocks = Blocks._trusted(self._block_start, self._block_size, np.array(kind, dtype=np.int8),
                                 np.array(target, dtype=np.float64), np.array(lo, dtype=np.float64),
                                 np.array(hi, dtype=np.float64), np.zeros(r))
        return J_free, rest - lengths, blocks


def cable_rows_for(constraints: list, free_dofs: np.ndarray, n_nodes: int) -> CableRows | None:
    """The (kept) :class:`CableRows` of the active plain cables among ``constraints``, or None when there are
    none (a cable wrapped for a body of a composite builds its rows one at a time)."""
    cables = [c for c in constraints if type(c) is CableConstraint and c.active and c.n_nodes == n_nodes]
    if not cables:
        return None
    for plan in _PLANS:
        if plan.matches(cables, free_dofs, n_nodes):
            return plan
    plan = CableRows(cables, free_dofs, n_nodes)
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
