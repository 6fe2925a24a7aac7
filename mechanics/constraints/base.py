"""Common interface of the Lagrangian constraint models (SOFA constraints, SoftRobots actuators).

A constraint owns a few scalar rows of the global constraint system of one frame. Every model works on the
full
DOF vector of its body (``3n`` node-major DOFs, ``dof = 3*i + k``); the frame step drops the fixed columns.

Frame protocol (SOFA FreeMotionAnimationLoop order, reference sofa-constraints.md 1.3 and 4.1):

1. ``update(x_free)``: collision-type constraints rebuild their active set at the free configuration
   (a no-op for the others). ``n_rows`` is valid after this call.
2. ``J = jacobian(x)`` at the step-start positions ``x`` (SoftRobots evaluates actuator rows at the step-start
   state); ``dfree = violation(x, x_free, J)``: the violation linearised to ``x_free``.
3. ``blocks(x)``: how the solver projects the multipliers of these rows; ``compliance()``: per-row compliance
   added to the diagonal of W for soft constraints (None for hard ones).
4. ``store(force, x_new)`` after the correction: the models publish their ``outputs``.

``enforced = False`` marks a constraint that the direct solve must not enforce (position effectors: objectives
of the inverse problem); the frame step still calls ``store`` so that its outputs are up to date.
"""

from __future__ import annotations

import abc
import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.mapping import BarycentricMapping
from softsim.mechanics.resolutions import Blocks
from softsim.mechanics.scene.schema import check_parameters

logger = logging.getLogger(__name__)

__all__ = ["Constraint", "InverseLimits", "PointSet", "check_positions", "empty_jacobian", "inverse_range"]


def empty_jacobian(n_dofs: int) -> sp.csr_matrix:
    """A ``(0, n_dofs)`` CSR matrix (a constraint without rows this frame)."""
    return sp.csr_matrix((0, n_dofs), dtype=np.float64)


def check_positions(name: str, x: np.ndarray, n_nodes: int) -> np.ndarray:
    """``x`` as a float64 ``(n_nodes, 3)`` array, or ParameterError naming the constraint and the shape."""
    x = np.asarray(x, dtype=np.float64)
    if x.size != 3 * n_nodes:
        raise ParameterError(f"{name}: positions must have shape ({n_nodes}, 3), got {x.shape}")
    return x.reshape(n_nodes, 3)


class PointSet:
    """The points a constraint acts on: body nodes (``indices``) or positions embedded in the body
    (``points``).

    Args:
        owner: constraint name for error messages.
        X: rest node positions ``(n, 3)``.
        tets: tetrahedra ``(m, 4)``; needed only for ``points``.
        points: ``(k, 3)`` positions in the rest configuration, mapped with a BarycentricMapping.
        indices: ``(k,)`` node ids. Exactly one of ``points`` and ``indices`` must be given.
        tolerance: mapping tolerance (see :class:`~mechanics.mapping.BarycentricMapping`).
    """

    def __init__(
        self,
        owner: str,
        X: np.ndarray,
        tets: np.ndarray | None,
        *,
        points: np.ndarray | None = None,
        indices: np.ndarray | None = None,
        tolerance: float | None = None,
    ) -> None:
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        if self.X.ndim != 2 or self.X.shape[1] != 3:
            raise ParameterError(f"{owner}: X must have shape (n, 3), got {self.X.shape}")
        self.n_nodes = self.X.shape[0]
        if (points is None) == (indices is None):
            raise ParameterError(f"{owner}: give exactly one of points (positions) and indices (node ids)")
        self.mapping: BarycentricMapping | None = None
        self.indices: np.ndarray | None = None
        if points is not None:
            points = np.asarray(points, dtype=np.float64)
            if points.ndim == 1 and points.size == 3:
                points = points[None, :]
            if points.ndim != 2 or points.shape[1] != 3 or points.shape[0] == 0:
                raise ParameterError(
                    f"{owner}: points must have shape (k, 3) with k >= 1, got {points.shape}"
                )
            if tets is None:
                raise ParameterError(f"{owner}: tets are needed to embed points in the body")
            self.mapping = BarycentricMapping(self.X, tets, points, tolerance=tolerance)
            self.n_points = points.shape[0]
        else:
            raw = np.asarray(indices)
            if raw.size == 0 or not np.issubdtype(raw.dtype, np.integer):
                raise ParameterError(
                    f"{owner}: indices must be a non-empty list of integer node ids, got {indices!r}"
                )
            self.indices = raw.astype(np.int64).reshape(-1)
            if self.indices.min() < 0 or self.indices.max() >= self.n_nodes:
                bad = self.indices[(self.indices < 0) | (self.indices >= self.n_nodes)]
                raise ParameterError(
                    f"{owner}: indices must lie in [0, {self.n_nodes - 1}], got {bad[:5].tolist()}"
                )
            self.n_points = self.indices.size

    def positions(self, x: np.ndarray) -> np.ndarray:
        """Point positions ``(k, 3)`` for node positions ``x`` ``(n, 3)``."""
        if self.mapping is not None:
            return self.mapping.apply(x)
        return x[self.indices]

    def _scatter(self) -> tuple[np.ndarray, sp.csr_matrix]:
        """``(columns (c,), M_t csr (c, 3k))``: the body DOFs the points depend on (sorted, unique) and the
        transposed point-to-body map restricted to them (built once; the rows of every frame reuse it)."""
        if getattr(self, "_scatter_cache", None) is None:
            if self.mapping is not None:
                full = self.mapping.matrix()
            else:
                cols = (3 * self.indices[:, None] + np.arange(3)[None, :]).reshape(-1)
                full = sp.csr_matrix(
                    (np.ones(cols.size), (np.arange(cols.size), cols)), shape=(cols.size, 3 * self.n_nodes)
                )
            full = full.tocsc()
            full.sum_duplicates()
            columns = np.flatnonzero(np.diff(full.indptr) > 0).astype(np.int64)
            self._scatter_cache = (columns, full[:, columns].T.tocsr())
        return self._scatter_cache

    def rows_to_dofs(self, rows: np.ndarray) -> sp.csr_matrix:
        """Constraint rows written on the points, ``(r, k, 3)``, as a CSR matrix ``(r, 3n)`` on the body
        DOFs (one entry per body DOF the points depend on, zeros included)."""
        n_rows = rows.shape[0]
        flat = np.asarray(rows, dtype=np.float64).reshape(n_rows, 3 * self.n_points)
        columns, scatter_t = self._scatter()
        values = np.asarray(scatter_t @ flat.T).T  # (r, c)
        indptr = np.arange(n_rows + 1, dtype=np.int64) * columns.size
        return sp.csr_matrix(
            (np.ascontiguousarray(values).reshape(-1), np.tile(columns, n_rows), indptr),
            shape=(n_rows, 3 * self.n_nodes),
        )

    def pair_structure(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The body-DOF layout of 3x3 blocks coupling the points ``first[e]`` and ``second[e]`` (e,): DOF ``rows``
        and ``cols`` (e q q 9,) and the products of the points' node weights ``(e, q, q)`` (q = 4 for embedded
        points, 1 for nodes). :meth:`pair_values` turns per-pair blocks into the matching values."""
        if self.mapping is None:
            nodes, weights = self.indices[:, None], np.ones((self.n_points, 1))
        else:
            nodes, weights = self.mapping.node_ids, self.mapping.weights
        a, b = nodes[first], nodes[second]
        axis = np.arange(3)
        shape = (a.shape[0], a.shape[1], b.shape[1], 3, 3)
        rows = np.broadcast_to(3 * a[:, :, None, None, None] + axis[None, None, None, :, None], shape)
        cols = np.broadcast_to(3 * b[:, None, :, None, None] + axis[None, None, None, None, :], shape)
        products = weights[first][:, :, None] * weights[second][:, None, :]
        return rows.reshape(-1).copy(), cols.reshape(-1).copy(), products

    @staticmethod
    def pair_values(products: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """Values matching :meth:`pair_structure`'s rows/cols for the point-space blocks ``(e, 3, 3)``."""
        return (products[:, :, :, None, None] * blocks[:, None, None, :, :]).reshape(-1)


class Constraint(abc.ABC):
    """Base class of every constraint model.

    Attributes:
        name: identifier used in outputs (``NAME.QUANTITY`` columns) and error messages.
        enforced: False for constraints the direct (non-inverse) step only observes.
        active: inactive constraints have no rows (``n_rows == 0``).
    """

    #: The scene table declaring this constraint's keys (e.g. CableSpec), and the keys :meth:`set_parameters`
    #: accepts: values are checked by those declarations, with the scene loader's messages.
    SPEC: type | None = None
    PARAMETERS: frozenset[str] = frozenset()

    #: True when some rows measure motion since the last frame (frictional contacts): the frame step then
    #: passes the last frame's positions as ``x`` to :meth:`violation`, otherwise ``x_free`` itself.
    measures_motion = False
    #: True when a frame may move the rows' targets from their old values to the new ones in increments (an
    #: actuator, the drag, an attachment: :mod:`mechanics.equilibrium`); False for contacts, whose targets
    #: are the geometry's
    ramped = True

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ParameterError(f"constraint name must be a non-empty string, got {name!r}")
        self.name = name
        self.enforced = True
        self.active = True

    # ------------------------------------------------------------------ protocol
    @property
    @abc.abstractmethod
    def n_rows(self) -> int:
        """Number of scalar rows this frame (contacts: after :meth:`update`)."""

    def update(self, x_free: np.ndarray) -> None:  # noqa: B027 - optional hook, no-op by default
        """Rebuild the active set at the free configuration ``x_free`` ``(n, 3)``. Default: nothing to do."""

    @abc.abstractmethod
    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Constraint Jacobian ``(n_rows, 3n)`` evaluated at the step-start positions ``x`` ``(n, 3)``."""

    @abc.abstractmethod
    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """Free violation ``dfree`` ``(n_rows,)`` at ``x_free`` (``J`` is ``jacobian(x)``)."""

    @abc.abstractmethod
    def blocks(self, x: np.ndarray) -> Blocks:
        """Resolution blocks of the rows (block starts are local: the first row is 0)."""

    def force_stiffness(self, x: np.ndarray, force: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The stiffness that the constraint force ``J(x)^T force`` adds to the tangent, ``-d(J(x)^T force)/dx``,
        as triplets ``(rows, cols, values)`` over the body DOFs (duplicates are summed), or None when J does not
        depend on x. ``rows`` and ``cols`` must be the same arrays on every call while the constraint's structure
        is unchanged: the frame step keeps the matrix pattern built from them. The constrained equilibrium
        iterations add it to K (the Hessian of the Lagrangian), which makes them converge quadratically."""
        return None

    def compliance(self) -> np.ndarray | None:
        """Per-row compliance ``(n_rows,)`` added to W's diagonal, or None for a hard constraint."""
        return None

    @abc.abstractmethod
    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        """Record the multipliers ``force`` ``(n_rows,)`` and the corrected positions ``x_new`` ``(n, 3)``."""

    @property
    @abc.abstractmethod
    def outputs(self) -> dict[str, float]:
        """Scalar outputs with SoftRobots names (e.g. ``cableLength``, ``displacement``, ``force``)."""

    # ------------------------------------------------------------------ parameters
    def set_parameters(self, **parameters: Any) -> None:
        """Change parameters by their SoftRobots names; every value is validated before any is applied."""
        validated = {key: np.asarray(value, dtype=np.float64) if isinstance(value, tuple) else value
                     for key, value in self.check(parameters).items()}
        missing = object()
        previous = {key: getattr(self, key, missing) for key in validated}
        for key, value in validated.items():
            setattr(self, key, value)
        try:
            self._check_consistency()
        except ParameterError:
            for key, value in previous.items():  # leave the constraint as it was
                if value is missing:
                    delattr(self, key)
                else:
                    setattr(self, key, value)
            raise
        logger.debug("%s: parameters set %s", self.name, validated)

    def check(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """``parameters`` validated by the declarations of :attr:`SPEC` (ParameterError naming the key)."""
        return check_parameters(self.SPEC, self.name, parameters, allowed=self.PARAMETERS)

    def _check_consistency(self) -> None:  # noqa: B027 - optional hook
        """Cross-parameter checks (e.g. min <= max), raising ParameterError. Default: none."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, n_rows={self.n_rows})"


# ---------------------------------------------------------------------- inverse mode
@dataclass(frozen=True)
class InverseLimits:
    """The admissible set of one actuator row in inverse mode: its multiplier (force or pressure) in
    ``[force_lo, force_hi]`` and its constraint value (displacement or volume growth) in ``[delta_lo,
    delta_hi]``; infinite where unbounded. ``names`` gives, for each of the four, the scene key that set it
    (e.g. ``"maxPositiveDisp"`` or ``"maxDispVariation"``), "" when unbounded."""

    force_lo: float
    force_hi: float
    delta_lo: float
    delta_hi: float
    names: tuple[str, str, str, str]


def inverse_range(lo: float | None, hi: float | None, lo_key: str, hi_key: str, reference: float,
                  variation: float | None, variation_key: str) -> tuple[float, float, str, str]:
    """``[lo, hi]`` intersected with ``reference +- variation`` (SoftRobots.Inverse's per-step limit), with the
    keys that set each end. ``reference`` is first brought into ``[lo, hi]``: an actuator whose value lies
    beyond its range (a slack cable whose path shortened further, a bound edited live) has its motor at the
    range's end."""
    low, high = or_inf(lo, -1), or_inf(hi, 1)
    low_key, high_key = (lo_key if lo is not None else ""), (hi_key if hi is not None else "")
    if variation is None:
        return low, high, low_key, high_key
    reference = min(max(reference, low), high)
    if reference - variation > low:
        low, low_key = reference - variation, variation_key
    if reference + variation < high:
        high, high_key = reference + variation, variation_key
    return low, high, low_key, high_key


# ---------------------------------------------------------------------- validators
def check_order(owner: str, lo_key: str, lo: float | None, hi_key: str, hi: float | None) -> None:
    """ParameterError if both bounds are set and ``lo > hi``."""
    if lo is not None and hi is not None and lo > hi:
        raise ParameterError(f"{owner}: {lo_key}={lo} must not exceed {hi_key}={hi}")


def short_of(achieved: float, commanded: float) -> float:
    """1.0 when ``achieved`` misses ``commanded`` by more than 1e-6 of their size (a bound or a rate limit
    stopped the actuator), else 0.0: the ``limited`` output of the actuators."""
    return float(abs(achieved - commanded) > 1e-6 * max(abs(achieved), abs(commanded)) + 1e-12)


def limit_binds(commanded: float, imposed: float | None, achieved: float, other: float, lo: float,
                hi: float, settled: bool = True) -> float:
    """The ``limited`` output of an actuator: 1.0 only when a limit actually holds it, else 0.0.

    ``commanded`` is its value, ``imposed`` the target its rows imposed after the range and rate clipping
    (None before a frame), ``achieved`` what it reached (the displacement or growth it controls, or the force
    or pressure), ``other`` its other quantity and [``lo``, ``hi``] that quantity's bounds (infinite when
    unset). It binds when the clipping moved the target, or when the command is missed with the other quantity
    on one of its bounds; an actuator short of its value because the frame did not converge (``settled`` False:
    its state is wherever the solve stopped, e.g. still at rest with a slack cable) is not limited."""
    if imposed is not None and short_of(imposed, commanded):
        return 1.0
    if not settled or not short_of(achieved, commanded):
        return 0.0
    on_bound = any(math.isfinite(bound) and not short_of(other, bound) for bound in (lo, hi))
    return float(on_bound)


def or_inf(value: float | None, sign: float) -> float:
    """``value``, or ``sign * inf`` when unset."""
    return sign * math.inf if value is None else float(value)
