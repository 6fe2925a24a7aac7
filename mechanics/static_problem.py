"""The free-DOF static equilibrium problem solved by the Newton solver.

``R(x) = (f_int(x) + load_factor * (f_ext(x) + extra_force))[free_dofs]`` is the out-of-balance force on the
free DOFs (Caribou/SOFA sign: Newton solves ``K_free dx = R``), ``K_free = K[free][:, free]`` with
``K = -d f_int / d x``. Fixed nodes are eliminated (their rows and columns are dropped, SoftRobots'
"constraint resolution method" page), not held by stiff springs; their positions stay whatever ``x`` holds,
so prescribed displacements of fixed nodes are simply set in ``x`` before solving.

A :class:`mechanics.fem.TetElasticity` assembles ``K_free`` directly (its scatter map skips the blocks of
fixed nodes); other elasticity objects give the full ``K``, from which a precomputed map of the free
non-zeros gathers the values. Either way the values go into one of two CSR objects sharing ``indptr`` and
``indices`` (which never change: the direct solver reuses its symbolic analysis by identity), taken in turn
so that the matrix factorized last keeps its values while the next tangent is assembled.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.inversion import count_new_inversions

logger = logging.getLogger(__name__)

__all__ = ["StaticProblem"]


def _infer_node_count(elasticity) -> int:
    for attribute in ("n_nodes", "n_points"):
        value = getattr(elasticity, attribute, None)
        if isinstance(value, int | np.integer):
            return int(value)
    for attribute in ("X", "rest_positions", "points"):
        value = getattr(elasticity, attribute, None)
        if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == 3:
            return int(value.shape[0])
    raise ParameterError(
        "StaticProblem cannot tell the number of nodes of the elasticity object: pass n_nodes="
    )


class StaticProblem:
    """Static equilibrium of an elastic body with fixed nodes and external loads, on the free DOFs.

    Parameters
    ----------
    elasticity:
        Object with ``forces_and_tangent(x) -> (f_int (n,3), K csr (3n,3n))`` and preferably ``forces(x)``
        and ``tangent(x)`` (e.g. :class:`mechanics.fem.TetElasticity`).
    fixed_nodes:
        Node ids whose three DOFs are eliminated (``(k,)`` integers in ``0..n-1``, repeats allowed).
    loads:
        Objects with ``force(x) -> (n, 3)`` (see :mod:`mechanics.loads`). Their ``tangent`` is not used:
        loads are treated explicitly in Newton (exact for position-independent loads).
    n_nodes:
        Number of nodes; inferred from ``elasticity`` (``n_nodes``, ``X``, ...) when omitted.

    ``last_force_scale`` holds ``||f_int[free]|| + ||f_ext[free]||`` of the last residual evaluation: the
    round-off floor of the residual is about ``machine epsilon * last_force_scale``.
    """

    def __init__(self, elasticity, *, fixed_nodes, loads=(), n_nodes: int | None = None):
        self.elasticity = elasticity
        n = _infer_node_count(elasticity) if n_nodes is None else int(n_nodes)
        if n <= 0:
            raise ParameterError(f"n_nodes must be > 0, got {n}")
        fixed = np.asarray(fixed_nodes)
        if fixed.size and not np.issubdtype(fixed.dtype, np.integer):
            raise ParameterError(f"fixed_nodes must hold integer node ids, got dtype {fixed.dtype}")
        fixed = np.unique(fixed.astype(np.int64).reshape(-1))
        if fixed.size and (fixed[0] < 0 or fixed[-1] >= n):
            raise ParameterError(f"fixed_nodes must lie in 0..{n - 1}, got ids {fixed[0]}..{fixed[-1]}")
        for load in loads:
            if not callable(getattr(load, "force", None)):
                raise ParameterError(f"load {load!r} has no force(x) method")
        self.n_nodes = n
        self.fixed_nodes = fixed
        self.loads = list(loads)
        free_mask = np.ones(3 * n, dtype=bool)
        free_mask[(3 * fixed[:, None] + np.arange(3)).reshape(-1)] = False
        self.free_mask = free_mask
        self.free_dofs = np.flatnonzero(free_mask).astype(np.int64)
        if self.free_dofs.size == 0:
            raise ParameterError("StaticProblem: every node is fixed, there is nothing to solve")
        self.dof_to_free = np.full(3 * n, -1, dtype=np.int64)
        self.dof_to_free[self.free_dofs] = np.arange(self.free_dofs.size)
        self.last_force_scale = 0.0
        self._gather: np.ndarray | None = None  # positions of K_free's values in a full tangent's data
        self._gather_pattern = None  # (full indptr, full indices, free indptr, free indices)
        self._buffers: list[sp.csr_matrix] = []  # the two K_free matrices assemblies alternate between
        self._buffers_pattern = None  # the (indptr, indices) the buffers were made for
        self.tangent_matrix: sp.csr_matrix | None = None  # the last assembled K_free

    @property
    def n_free(self) -> int:
        return int(self.free_dofs.size)

    def _check_positions(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n_nodes, 3):
            raise ParameterError(f"positions must have shape ({self.n_nodes}, 3), got {x.shape}")
        return x

    def external_force(self, x, extra_force=None, *, load_factor: float = 1.0) -> np.ndarray:
        """``load_factor * (sum of load forces + extra_force)`` at ``x``, shape ``(n, 3)``."""
        x = self._check_positions(x)
        total = np.zeros((self.n_nodes, 3))
        for load in self.loads:
            total += load.force(x)
        if extra_force is not None:
            extra_force = np.asarray(extra_force, dtype=np.float64)
            if extra_force.shape != (self.n_nodes, 3):
                raise ParameterError(
                    f"extra_force must have shape ({self.n_nodes}, 3), got {extra_force.shape}"
                )
            total += extra_force
        if load_factor != 1.0:
            total *= load_factor
        return total

    @property
    def has_energy(self) -> bool:
        """True when :meth:`energy` is defined (elastic energy and a potential for every load)."""
        return callable(getattr(self.elasticity, "energy", None)) and all(
            callable(getattr(load, "potential", None)) for load in self.loads
        )

    def energy(self, x, extra_force=None, *, load_factor: float = 1.0) -> float | None:
        """Total potential ``E_int(x) + load_factor * (sum of load potentials - extra_force . x)``.

        Its gradient on the free DOFs is ``-residual``. ``None`` when a load has no ``potential`` (follower
        pressure) or the elasticity no ``energy``.
        """
        if not self.has_energy:
            return None
        x = self._check_positions(x)
        external = sum(load.potential(x) for load in self.loads)
        if extra_force is not None:
            external -= float(np.sum(np.asarray(extra_force, dtype=np.float64) * x))
        return float(self.elasticity.energy(x)) + load_factor * external

    def new_inversions(self, x_from, x_to) -> int:
        """Number of tetrahedra that the move from ``x_from`` to ``x_to`` (both ``(n, 3)``) turns inside out
        (``det F > 0`` before, ``<= 0`` after); 0 when the elasticity has no ``tets`` to test."""
        tets = getattr(self.elasticity, "tets", None)
        if tets is None:
            return 0
        return count_new_inversions(x_from, x_to, tets)

    def _residual_from(self, internal: np.ndarray, external: np.ndarray) -> np.ndarray:
        internal_free = internal.reshape(-1)[self.free_dofs]
        external_free = external.reshape(-1)[self.free_dofs]
        self.last_force_scale = float(np.linalg.norm(internal_free) + np.linalg.norm(external_free))
        return internal_free + external_free

    def residual(self, x, extra_force=None, *, load_factor: float = 1.0) -> np.ndarray:
        """Out-of-balance force on the free DOFs, ``(n_free,)``."""
        x = self._check_positions(x)
        if hasattr(self.elasticity, "forces"):
            internal = self.elasticity.forces(x)
        else:
            internal, _ = self.elasticity.forces_and_tangent(x)
        return self._residual_from(internal, self.external_force(x, extra_force, load_factor=load_factor))

    def _buffer(self, indptr, indices, has_sorted_indices: bool) -> sp.csr_matrix:
        """The K_free matrix the next assembly writes: of the two sharing ``indptr``/``indices``, the one not
        returned last (so the matrix a solver factorized last keeps its values through the next assembly)."""
        if self._buffers_pattern is None or self._buffers_pattern[0] is not indptr \
                or self._buffers_pattern[1] is not indices:
            first = sp.csr_matrix((np.zeros(len(indices)), indices, indptr), shape=(self.n_free, self.n_free))
            second = first.copy()
            second.indptr, second.indices = first.indptr, first.indices  # shared: one Pardiso analysis
            for matrix in (first, second):
                matrix.has_sorted_indices = has_sorted_indices
            self._buffers = [first, second]
            self._buffers_pattern = (indptr, indices)
        return self._buffers[1] if self.tangent_matrix is self._buffers[0] else self._buffers[0]

    def _build_gather(self, K: sp.csr_matrix) -> None:
        n_dofs = 3 * self.n_nodes
        rows = np.repeat(np.arange(n_dofs, dtype=np.int64), np.diff(K.indptr))
        keep = self.free_mask[rows] & self.free_mask[K.indices]
        gather = np.flatnonzero(keep)
        free_rows = self.dof_to_free[rows[gather]]
        indptr = np.zeros(self.n_free + 1, dtype=np.int32 if gather.size < 2**31 else np.int64)
        np.cumsum(np.bincount(free_rows, minlength=self.n_free), out=indptr[1:])
        self._gather = gather
        self._gather_pattern = (K.indptr, K.indices, indptr, self.dof_to_free[K.indices[gather]].astype(indptr.dtype))

    def _reduce(self, K) -> sp.csr_matrix:
        """``K[free][:, free]`` of a full tangent, gathered into the next K_free buffer."""
        if not sp.issparse(K) or K.format != "csr":
            K = sp.csr_matrix(K)
        if K.shape != (3 * self.n_nodes, 3 * self.n_nodes):
            raise ParameterError(
                f"tangent must have shape ({3 * self.n_nodes}, {3 * self.n_nodes}), got {K.shape}"
            )
        known = self._gather_pattern
        same = known is not None and (
            (K.indptr is known[0] and K.indices is known[1])
            or (K.indices.shape == known[1].shape and np.array_equal(K.indptr, known[0])
                and np.array_equal(K.indices, known[1]))
        )
        if not same:
            self._build_gather(K)
        matrix = self._buffer(self._gather_pattern[2], self._gather_pattern[3], bool(K.has_sorted_indices))
        np.take(K.data, self._gather, out=matrix.data, mode="clip")  # indices valid by construction
        return matrix

    def _assemble(self, x, want_forces: bool):
        """``(f_int (n, 3) or None, K_free)``: straight into the next K_free buffer when the elasticity can
        assemble the free-DOF tangent itself, else from its full tangent."""
        if hasattr(self.elasticity, "forces_and_free_tangent"):
            indptr, indices = self.elasticity.free_tangent_pattern(self.fixed_nodes)
            matrix = self._buffer(indptr, indices, True)
            internal = self.elasticity.forces_and_free_tangent(x, matrix.data, want_forces=want_forces)
        elif want_forces:
            internal, K = self.elasticity.forces_and_tangent(x)
            matrix = self._reduce(K)
        else:
            internal = None
            K = self.elasticity.tangent(x) if hasattr(self.elasticity, "tangent") else (
                self.elasticity.forces_and_tangent(x)[1])
            matrix = self._reduce(K)
        self.tangent_matrix = matrix
        return internal, matrix

    def tangent(self, x) -> sp.csr_matrix:
        """``K[free][:, free]`` at ``x``.

        Two K_free objects (sharing ``indptr``/``indices``, so a direct solver keeps its symbolic analysis)
        take turns: the matrix returned by the previous call keeps its values through this one, the one
        before that is overwritten. Copy a matrix to keep it longer.
        """
        x = self._check_positions(x)
        _, reduced = self._assemble(x, want_forces=False)
        return reduced

    def system(self, x, extra_force=None, *, load_factor: float = 1.0) -> tuple[np.ndarray, sp.csr_matrix]:
        """``(R (n_free,), K_free csr (n_free, n_free))`` at ``x`` from one force-and-tangent evaluation
        (K_free as returned by :meth:`tangent`)."""
        x = self._check_positions(x)
        internal, reduced = self._assemble(x, want_forces=True)
        residual = self._residual_from(internal, self.external_force(x, extra_force, load_factor=load_factor))
        return residual, reduced

    def expand(self, dx_free) -> np.ndarray:
        """Free-DOF vector ``(n_free,)`` to a node array ``(n, 3)`` with zeros on the fixed nodes."""
        dx_free = np.asarray(dx_free, dtype=np.float64)
        if dx_free.shape != (self.n_free,):
            raise ParameterError(f"free-DOF vector must have shape ({self.n_free},), got {dx_free.shape}")
        full = np.zeros(3 * self.n_nodes)
        full[self.free_dofs] = dx_free
        return full.reshape(self.n_nodes, 3)
