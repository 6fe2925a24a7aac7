"""Several deformable bodies in one system, mappings and compliant constraints (SOFA's Compliant plugin).

Assembly. The independent DOFs of every body are concatenated (node-major inside each body, bodies one after
the other). Body ``b`` owns nodes ``node_offsets[b] .. node_offsets[b+1]-1`` of the global vector; its
*shift matrix* ``S_b`` (``(3 n_b, N)``, an identity block at the body's columns) maps global DOFs to the
body's. Global matrices are ``sum_b S_b^T A_b S_b = block_diag(A_b)`` (built with ``scipy.sparse.block_diag``);
a mapped state ``p = B_b x_b = (B_b S_b) x`` has the Jacobian ``J = B_b S_b`` over the global DOFs, and a
multimapping of two parents (a distance between points of two bodies) the Jacobian ``dphi/dp_a J_a +
dphi/dp_b J_b``. Bodies interact only through constraints or interaction force fields.

Constraints (Compliant). A :class:`CompliantConstraint` owns ``r`` scalar rows ``phi(x)`` given by a mapping,
with compliance ``c`` (``0``: hard; ``> 0``: a spring of stiffness ``1/c``, i.e. ``lambda = -(phi + d
phi_dot) / c``) and damping ratio ``d``. The same mapping can instead carry a :class:`SpringForceField`
(a force with stiffness ``k``): the two formulations of the Compliant plugin.

Mapping protocol (used by the constraints and force fields): ``n_rows``, ``value(x) -> (r,)``,
``jacobian(x) -> csr (r, N)`` and ``geometric_stiffness(x, weights) -> csr (N, N)`` (``sum_i w_i d2phi_i/dx2``,
the mapping's ``getKs``). Positions ``x`` are always the global ``(N/3, 3)`` array.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.mapping import BarycentricMapping
from softsim.mechanics.mass import TetMass
from softsim.mechanics.resolutions import Blocks

logger = logging.getLogger(__name__)

__all__ = [
    "Body",
    "CompliantConstraint",
    "DifferenceMapping",
    "DistanceMapping",
    "MappedPoints",
    "MultiBodySystem",
    "SpringForceField",
    "StrainMapping",
    "block_diagonal",
    "linear_elasticity_as_compliance",
]


@dataclass
class Body:
    """One deformable body.

    name: identifier; elasticity: object with ``forces_and_tangent(x_b)`` (``(n_b, 3)``, csr ``(3n_b, 3n_b)``,
    K = -df/dx) and ``energy(x_b)``, e.g. :class:`mechanics.fem.TetElasticity` (its own material), or None
    (no internal force: the body's elasticity is then handled as a compliance constraint);
    mass: a :class:`mechanics.mass.TetMass` or a csr ``(3n_b, 3n_b)`` mass matrix; fixed_nodes: local node ids
    eliminated from the system; loads: objects with ``force(x_b) -> (n_b, 3)`` (and ``potential`` for energy);
    rest_positions: ``(n_b, 3)``, default the elasticity's.
    """

    name: str
    elasticity: object
    mass: object
    fixed_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    loads: list = field(default_factory=list)
    rest_positions: np.ndarray | None = None

    def __post_init__(self) -> None:
        matrix = self.mass.matrix if isinstance(self.mass, TetMass) else self.mass
        if not sp.issparse(matrix) or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] % 3:
            raise ParameterError(f"body {self.name!r}: mass must be a TetMass or a square (3n, 3n) sparse matrix")
        self.mass_matrix = sp.csr_matrix(matrix)
        self.n_nodes = matrix.shape[0] // 3
        if self.rest_positions is None:
            self.rest_positions = getattr(self.elasticity, "rest_positions", None)
        if self.rest_positions is not None:
            self.rest_positions = np.asarray(self.rest_positions, dtype=np.float64)
            if self.rest_positions.shape != (self.n_nodes, 3):
                raise ParameterError(f"body {self.name!r}: rest_positions must have shape ({self.n_nodes}, 3)")
        elastic_nodes = getattr(self.elasticity, "n_nodes", self.n_nodes)
        if elastic_nodes != self.n_nodes:
            raise ParameterError(
                f"body {self.name!r}: elasticity has {elastic_nodes} nodes but the mass matrix {self.n_nodes}"
            )
        fixed = np.asarray(self.fixed_nodes)
        if fixed.size and not np.issubdtype(fixed.dtype, np.integer):
            raise ParameterError(f"body {self.name!r}: fixed_nodes must be integer node ids")
        fixed = np.unique(fixed.astype(np.int64).reshape(-1))
        if fixed.size and (fixed[0] < 0 or fixed[-1] >= self.n_nodes):
            raise ParameterError(f"body {self.name!r}: fixed_nodes must lie in 0..{self.n_nodes - 1}")
        self.fixed_nodes = fixed
        self.loads = list(self.loads)


class MultiBodySystem:
    """Bodies with concatenated DOFs, plus optional interaction force fields acting on the global positions.

    Attributes: ``bodies``, ``node_offsets (b+1,)``, ``n_nodes``, ``n_dofs = 3 n_nodes``, ``free_dofs``
    (sorted global DOF ids that are not fixed), ``mass_matrix`` csr ``(N, N)`` (block-diagonal), ``rest_positions``
    ``(n_nodes, 3)`` (from the bodies' elasticity when they have ``rest_positions``).
    """

    def __init__(self, bodies, *, interactions=()):
        self.bodies = list(bodies)
        if not self.bodies:
            raise ParameterError("MultiBodySystem needs at least one body")
        names = [body.name for body in self.bodies]
        if len(set(names)) != len(names):
            raise ParameterError(f"MultiBodySystem: body names must be unique, got {names}")
        sizes = np.array([body.n_nodes for body in self.bodies], dtype=np.int64)
        self.node_offsets = np.concatenate(([0], np.cumsum(sizes)))
        self.n_nodes = int(self.node_offsets[-1])
        self.n_dofs = 3 * self.n_nodes
        self.interactions = list(interactions)
        fixed = np.concatenate([body.fixed_nodes + offset for body, offset in zip(self.bodies, self.node_offsets)])
        free_mask = np.ones(self.n_dofs, dtype=bool)
        free_mask[(3 * fixed[:, None] + np.arange(3)).reshape(-1)] = False
        self.free_mask = free_mask
        self.free_dofs = np.flatnonzero(free_mask).astype(np.int64)
        self.mass_matrix = sp.block_diag([body.mass_matrix for body in self.bodies], format="csr")
        rest = [body.rest_positions for body in self.bodies]
        self.rest_positions = np.concatenate(rest) if all(r is not None for r in rest) else None

    def body_index(self, body) -> int:
        """Index of a body given as index, name or :class:`Body`."""
        if isinstance(body, Body):
            body = body.name
        if isinstance(body, str):
            for index, candidate in enumerate(self.bodies):
                if candidate.name == body:
                    return index
            raise ParameterError(f"no body named {body!r}; bodies: {[b.name for b in self.bodies]}")
        index = int(body)
        if not 0 <= index < len(self.bodies):
            raise ParameterError(f"body index must lie in 0..{len(self.bodies) - 1}, got {body}")
        return index

    def shift_matrix(self, body) -> sp.csr_matrix:
        """``S_b`` ``(3 n_b, N)``: body DOFs = ``S_b @`` global DOFs."""
        index = self.body_index(body)
        n_local = 3 * self.bodies[index].n_nodes
        start = 3 * int(self.node_offsets[index])
        return sp.csr_matrix(
            (np.ones(n_local), (np.arange(n_local), start + np.arange(n_local))), shape=(n_local, self.n_dofs)
        )

    def split(self, x) -> list[np.ndarray]:
        """Global ``(n_nodes, 3)`` array to the list of body arrays (views)."""
        x = self.check_positions(x)
        return [x[self.node_offsets[b] : self.node_offsets[b + 1]] for b in range(len(self.bodies))]

    def check_positions(self, x, name: str = "positions") -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.size != self.n_dofs:
            raise ParameterError(f"{name} must have shape ({self.n_nodes}, 3), got {x.shape}")
        return x.reshape(self.n_nodes, 3)

    def forces_and_tangent(self, x) -> tuple[np.ndarray, sp.csr_matrix]:
        """Total force ``(n_nodes, 3)`` (internal + loads + interactions) and ``K = -df/dx`` csr ``(N, N)``.

        Loads are treated as position independent (their tangent is not added), as in the static problem.
        The returned K is a new matrix (not shared with the bodies' elasticity objects).
        """
        parts = self.split(x)
        forces, tangents = [], []
        for body, x_body in zip(self.bodies, parts):
            if body.elasticity is None:
                f_body, K_body = np.zeros((body.n_nodes, 3)), sp.csr_matrix(body.mass_matrix.shape)
            else:
                f_body, K_body = body.elasticity.forces_and_tangent(x_body)
            f_body = np.array(f_body, dtype=np.float64)
            for load in body.loads:
                f_body += load.force(x_body)
            forces.append(f_body)
            tangents.append(K_body)
        f = np.concatenate(forces)
        K = tangents[0].copy().tocsr() if len(tangents) == 1 else sp.block_diag(tangents, format="csr")
        for interaction in self.interactions:
            f_extra, K_extra = interaction.forces_and_tangent(x)
            f += f_extra
            K = K + K_extra
        return f, sp.csr_matrix(K)

    def potential_energy(self, x) -> float:
        """Elastic energy of every body + load potentials + interaction energies [energy]."""
        total = 0.0
        for body, x_body in zip(self.bodies, self.split(x)):
            if body.elasticity is not None:
                total += float(body.elasticity.energy(x_body))
            total += sum(float(load.potential(x_body)) for load in body.loads)
        total += sum(float(interaction.energy(x)) for interaction in self.interactions)
        return total

    def kinetic_energy(self, v) -> float:
        flat = self.check_positions(v, "velocities").reshape(-1)
        return 0.5 * float(flat @ (self.mass_matrix @ flat))

    def points(self, body, *, points=None, indices=None) -> MappedPoints:
        """A mapped state of ``body``: node ids ``indices`` or rest positions ``points`` (barycentric)."""
        return MappedPoints(self, body, points=points, indices=indices)


class MappedPoints:
    """Points of one body (a mapping with one parent): ``p = B_b S_b x``, shape ``(k, 3)``.

    ``indices``: node ids local to the body (a subset mapping); ``points``: rest positions embedded in the
    body's tets with :class:`mechanics.mapping.BarycentricMapping` (needs ``rest_positions`` and ``tets`` on the
    body's elasticity). The Jacobian ``(3k, N)`` is constant.
    """

    def __init__(self, system: MultiBodySystem, body, *, points=None, indices=None):
        index = system.body_index(body)
        owner = system.bodies[index]
        if (points is None) == (indices is None):
            raise ParameterError("MappedPoints: give exactly one of points and indices")
        if indices is not None:
            ids = np.asarray(indices)
            if ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
                raise ParameterError(f"MappedPoints: indices must be non-empty integer node ids, got {indices!r}")
            ids = ids.astype(np.int64).reshape(-1)
            if ids.min() < 0 or ids.max() >= owner.n_nodes:
                raise ParameterError(f"MappedPoints: indices of body {owner.name!r} must lie in 0..{owner.n_nodes - 1}")
            k = ids.size
            local = sp.csr_matrix(
                (np.ones(3 * k), (np.arange(3 * k), (3 * ids[:, None] + np.arange(3)).reshape(-1))),
                shape=(3 * k, 3 * owner.n_nodes),
            )
        else:
            X = owner.rest_positions
            tets = getattr(owner.elasticity, "tets", None)
            if X is None or tets is None:
                raise ParameterError(f"MappedPoints: body {owner.name!r} has no rest_positions/tets to embed points")
            local = BarycentricMapping(X, tets, points).matrix()
        self.system = system
        self.body = index
        self.n_points = local.shape[0] // 3
        self.matrix = (local @ system.shift_matrix(index)).tocsr()

    def apply(self, x) -> np.ndarray:
        """Point positions ``(k, 3)`` at global positions ``x`` ``(N/3, 3)``."""
        return (self.matrix @ np.asarray(x, dtype=np.float64).reshape(-1)).reshape(self.n_points, 3)

    def jacobian(self, x=None) -> sp.csr_matrix:
        return self.matrix


class _FixedPoints:
    """World points that do not move (a parent with no DOFs)."""

    def __init__(self, positions, n_dofs: int):
        positions = np.asarray(positions, dtype=np.float64)
        if positions.ndim == 1:
            positions = positions.reshape(1, 3)
        if positions.ndim != 2 or positions.shape[1] != 3 or not np.all(np.isfinite(positions)):
            raise ParameterError(f"fixed points must be a finite (k, 3) array, got shape {positions.shape}")
        self.positions = positions
        self.n_points = positions.shape[0]
        self.matrix = sp.csr_matrix((3 * self.n_points, n_dofs))

    def apply(self, x) -> np.ndarray:
        return self.positions

    def jacobian(self, x=None) -> sp.csr_matrix:
        return self.matrix


def _parents(a, b) -> tuple:
    if isinstance(a, np.ndarray | list | tuple):
        raise ParameterError("the first parent of a multimapping must be MappedPoints")
    if not isinstance(b, MappedPoints):
        b = _FixedPoints(b, a.matrix.shape[1])
    if a.n_points != b.n_points:
        raise ParameterError(f"multimapping parents must have as many points: {a.n_points} and {b.n_points}")
    return a, b


class DifferenceMapping:
    """Multimapping ``phi = p_b - p_a - rest`` (``3k`` rows; linear): an attachment between two parents.

    ``b`` may be MappedPoints of another (or the same) body, or fixed world positions ``(k, 3)``.
    """

    def __init__(self, a: MappedPoints, b, *, rest=None):
        self.a, self.b = _parents(a, b)
        self.n_rows = 3 * self.a.n_points
        self.rest = (
            np.zeros((self.a.n_points, 3))
            if rest is None
            else np.broadcast_to(np.asarray(rest, dtype=np.float64), (self.a.n_points, 3)).copy()
        )
        self.matrix = (self.b.jacobian() - self.a.jacobian()).tocsr()

    def value(self, x) -> np.ndarray:
        return (self.b.apply(x) - self.a.apply(x) - self.rest).reshape(-1)

    def jacobian(self, x=None) -> sp.csr_matrix:
        return self.matrix

    def geometric_stiffness(self, x, weights) -> sp.csr_matrix:
        n = self.matrix.shape[1]
        return sp.csr_matrix((n, n))


class DistanceMapping:
    """Multimapping ``phi_i = |p_b,i - p_a,i| - L_i`` (``k`` rows): distance between two parents.

    ``rest_length`` (scalar or ``(k,)``, >= 0) defaults to the distance at the system's rest positions.
    ``J_i = u_i^T (J_b - J_a)_i`` with ``u_i`` the unit vector from a to b; the geometric stiffness is
    ``sum_i w_i (J_b - J_a)_i^T (I - u_i u_i^T) / |p_b,i - p_a,i| (J_b - J_a)_i``.
    """

    def __init__(self, a: MappedPoints, b, *, rest_length=None):
        self.a, self.b = _parents(a, b)
        self.n_rows = self.a.n_points
        self.delta = (self.b.jacobian() - self.a.jacobian()).tocsr()  # (3k, N)
        if rest_length is None:
            rest = self.a.system.rest_positions
            if rest is None:
                raise ParameterError("DistanceMapping: give rest_length (the bodies have no rest positions)")
            rest_length = np.linalg.norm(self.b.apply(rest) - self.a.apply(rest), axis=1)
        rest_length = np.broadcast_to(np.asarray(rest_length, dtype=np.float64), (self.n_rows,)).copy()
        if not np.all(np.isfinite(rest_length)) or np.any(rest_length < 0.0):
            raise ParameterError("DistanceMapping: rest_length must be finite and >= 0")
        self.rest_length = rest_length

    def _directions(self, x) -> tuple[np.ndarray, np.ndarray]:
        d = self.b.apply(x) - self.a.apply(x)
        length = np.linalg.norm(d, axis=1)
        if np.any(length <= 1e-300):
            raise ParameterError("DistanceMapping: two mapped points coincide, the direction is undefined")
        return d / length[:, None], length

    def value(self, x) -> np.ndarray:
        return np.linalg.norm(self.b.apply(x) - self.a.apply(x), axis=1) - self.rest_length

    def jacobian(self, x) -> sp.csr_matrix:
        u, _ = self._directions(x)
        k = self.n_rows
        U = sp.csr_matrix((u.reshape(-1), (np.repeat(np.arange(k), 3), np.arange(3 * k))), shape=(k, 3 * k))
        return (U @ self.delta).tocsr()

    def geometric_stiffness(self, x, weights) -> sp.csr_matrix:
        u, length = self._directions(x)
        blocks = (np.eye(3)[None] - u[:, :, None] * u[:, None, :]) * (np.asarray(weights) / length)[:, None, None]
        G = block_diagonal(blocks)
        return (self.delta.T @ G @ self.delta).tocsr()


class StrainMapping:
    """Small-strain mapping of a body: ``phi_e = B_e (x_e - X_e)`` (6 Voigt rows per tet, linear).

    Voigt order ``[e_xx, e_yy, e_zz, g_xy, g_yz, g_xz]`` with engineering shears ``g = 2 e``. Built from
    ``elasticity.shape_gradients (m, 4, 3)`` and ``tets`` (a TetElasticity of the body's mesh). Used to handle
    linear elasticity as a compliance: :func:`linear_elasticity_as_compliance`.
    """

    def __init__(self, system: MultiBodySystem, body, elasticity):
        index = system.body_index(body)
        grads = np.asarray(elasticity.shape_gradients)  # (m, 4, 3)
        tets = np.asarray(elasticity.tets)
        m = tets.shape[0]
        # (m, 6 rows, 4 nodes, 3 components) coefficients
        B = np.zeros((m, 6, 4, 3))
        for comp in range(3):
            B[:, comp, :, comp] = grads[:, :, comp]
        for row, (i, j) in zip((3, 4, 5), ((0, 1), (1, 2), (0, 2))):
            B[:, row, :, i] = grads[:, :, j]
            B[:, row, :, j] = grads[:, :, i]
        rows = np.broadcast_to(np.arange(6 * m).reshape(m, 6, 1, 1), B.shape)
        cols = np.broadcast_to(3 * tets[:, None, :, None] + np.arange(3), B.shape)
        local = sp.csr_matrix(
            (B.reshape(-1), (rows.reshape(-1), cols.reshape(-1))), shape=(6 * m, 3 * system.bodies[index].n_nodes)
        )
        self.matrix = (local @ system.shift_matrix(index)).tocsr()
        self.rest = self.matrix @ system.rest_positions.reshape(-1)
        self.n_rows = 6 * m
        self.n_elements = m

    def value(self, x) -> np.ndarray:
        return self.matrix @ np.asarray(x, dtype=np.float64).reshape(-1) - self.rest

    def jacobian(self, x=None) -> sp.csr_matrix:
        return self.matrix

    def geometric_stiffness(self, x, weights) -> sp.csr_matrix:
        n = self.matrix.shape[1]
        return sp.csr_matrix((n, n))


def block_diagonal(blocks: np.ndarray) -> sp.csr_matrix:
    """Sparse block-diagonal matrix ``(m b, m b)`` from dense blocks ``(m, b, b)`` (vectorised)."""
    m, b, _ = blocks.shape
    base = b * np.arange(m)[:, None, None]
    rows = np.broadcast_to(base + np.arange(b)[None, :, None], blocks.shape)
    cols = np.broadcast_to(base + np.arange(b)[None, None, :], blocks.shape)
    return sp.csr_matrix((blocks.reshape(-1), (rows.reshape(-1), cols.reshape(-1))), shape=(m * b, m * b))


def _check_nonnegative(name: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a real number >= 0, got {value!r}") from None
    if not np.isfinite(number) or number < 0.0:
        raise ParameterError(f"{name}={value!r} is outside the allowed range [0, inf)")
    return number


class SpringForceField:
    """Springs on a mapping's rows as a *force*: energy ``0.5 k sum phi_i^2``, ``f = -k J^T phi``,
    ``K = k (J^T J + sum_i phi_i d2phi_i/dx2)`` (with the mapping's geometric stiffness). ``stiffness`` > 0."""

    def __init__(self, mapping, stiffness: float):
        self.mapping = mapping
        self.stiffness = _check_nonnegative("stiffness", stiffness)
        if self.stiffness == 0.0:
            raise ParameterError("stiffness must be > 0")

    def energy(self, x) -> float:
        phi = self.mapping.value(x)
        return 0.5 * self.stiffness * float(phi @ phi)

    def forces_and_tangent(self, x) -> tuple[np.ndarray, sp.csr_matrix]:
        phi = self.mapping.value(x)
        J = self.mapping.jacobian(x)
        f = -self.stiffness * (J.T @ phi)
        K = self.stiffness * ((J.T @ J) + self.mapping.geometric_stiffness(x, phi))
        return f.reshape(-1, 3), sp.csr_matrix(K)


class CompliantConstraint:
    """Constraint rows ``phi(x)`` of a mapping with compliance and damping ratio (Compliant's law
    ``lambda = -(phi + d phi_dot) / c``).

    compliance: ``0`` (hard), a scalar ``c > 0``, ``(r,)`` per-row values, or a symmetric sparse ``(r, r)``
    matrix (e.g. the inverse element stiffness of a material). damping: ratio ``d >= 0`` [time].
    blocks: resolution table (default one EQUALITY block per row); e.g. ``Blocks.unilateral(r)`` for
    ``phi >= 0``. After each dynamic step ``force`` holds the time-averaged multipliers ``(r,)`` [force] and
    ``violation`` the values ``phi`` at the new positions.
    """

    enforced = True
    active = True

    def __init__(
        self, mapping, *, compliance=0.0, damping: float = 0.0, blocks: Blocks | None = None, name: str = "compliant"
    ):
        self.name = name
        self.mapping = mapping
        self.damping = _check_nonnegative(f"{name}: damping", damping)
        if sp.issparse(compliance):
            if compliance.shape != (mapping.n_rows, mapping.n_rows):
                raise ParameterError(f"{name}: compliance matrix must be ({mapping.n_rows}, {mapping.n_rows})")
            self._compliance = sp.csr_matrix(compliance)
        else:
            values = np.broadcast_to(np.asarray(compliance, dtype=np.float64), (mapping.n_rows,)).copy()
            if not np.all(np.isfinite(values)) or np.any(values < 0.0):
                raise ParameterError(f"{name}: compliance must be finite and >= 0 (0 = hard constraint)")
            self._compliance = values
        self._blocks = Blocks.equality(mapping.n_rows) if blocks is None else blocks
        if self._blocks.n_rows != mapping.n_rows:
            raise ParameterError(f"{name}: blocks have {self._blocks.n_rows} rows, the mapping {mapping.n_rows}")
        self.force = np.zeros(mapping.n_rows)
        self.violation = np.zeros(mapping.n_rows)

    @property
    def n_rows(self) -> int:
        return self.mapping.n_rows

    def value(self, x) -> np.ndarray:
        return self.mapping.value(x)

    def jacobian(self, x) -> sp.csr_matrix:
        return self.mapping.jacobian(x)

    def compliance_matrix(self):
        """``None`` when hard, else ``(r,)`` diagonal values or a sparse ``(r, r)`` matrix."""
        if sp.issparse(self._compliance):
            return self._compliance
        return self._compliance if np.any(self._compliance > 0.0) else None

    def blocks(self, x=None) -> Blocks:
        return self._blocks

    def store(self, force, x_new) -> None:
        self.force = np.asarray(force, dtype=np.float64).copy()
        self.violation = self.mapping.value(x_new)

    @property
    def outputs(self) -> dict[str, float]:
        return {
            "force": float(np.abs(self.force).max()) if self.force.size else 0.0,
            "maxViolation": float(np.abs(self.violation).max()) if self.violation.size else 0.0,
        }


def linear_elasticity_as_compliance(
    system: MultiBodySystem, body, elasticity, *, damping: float = 0.0, name: str = "elasticity"
) -> CompliantConstraint:
    """The small-strain elasticity of ``body`` (``elasticity``'s ``mu``/``lam`` per tet) as a compliant
    constraint: ``phi`` = strains (:class:`StrainMapping`), compliance ``blockdiag((V_e D_e)^-1)`` (6x6 per tet),
    so that ``0.5 phi^T C^-1 phi`` is the linear elastic energy and ``J^T C^-1 J`` the linear stiffness."""
    mapping = StrainMapping(system, body, elasticity)
    mu = np.broadcast_to(np.asarray(elasticity.mu, dtype=np.float64), (mapping.n_elements,))
    lam = np.broadcast_to(np.asarray(elasticity.lam, dtype=np.float64), (mapping.n_elements,))
    D = np.zeros((mapping.n_elements, 6, 6))
    D[:, :3, :3] = lam[:, None, None]
    D[:, [0, 1, 2], [0, 1, 2]] += 2.0 * mu[:, None]
    D[:, [3, 4, 5], [3, 4, 5]] = mu[:, None]
    stiffness = np.asarray(elasticity.volumes)[:, None, None] * D
    compliance = block_diagonal(np.linalg.inv(stiffness))
    return CompliantConstraint(mapping, compliance=compliance, damping=damping, name=name)
