"""The model of a scene: N deformable bodies over concatenated DOFs (one body is the case N = 1).

Body ``b`` owns nodes ``node_offsets[b] .. node_offsets[b+1]-1`` of the concatenated positions ``(n, 3)``
(node-major inside each body, bodies one after the other). Bodies interact only through constraints. The
same model feeds both modes: :meth:`Model.static_problem` for the static frame step (the bodies'
elasticities stacked by :class:`mechanics.composite.CompositeElasticity`, loads and constraints placed on the
concatenated DOFs by ``OffsetLoad``/``OffsetConstraint``) and :class:`mechanics.dynamics.DynamicSolver`, which
reads ``forces_and_tangent``, ``mass_matrix`` and ``free_dofs``. With one body nothing is wrapped: the
static problem sees the body's own elasticity, loads and constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.composite import CompositeElasticity, OffsetConstraint, OffsetLoad
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.mass import TetMass
from softsim.mechanics.static_problem import StaticProblem

__all__ = ["Body", "Model"]


@dataclass
class Body:
    """One deformable body.

    name: identifier; elasticity: object with ``forces_and_tangent(x_b)`` (``(n_b, 3)``, csr ``(3n_b, 3n_b)``,
    K = -df/dx), ``rest_positions``, ``n_nodes`` and ``energy(x_b)``, e.g. :class:`mechanics.fem.TetElasticity`;
    mass: a :class:`mechanics.mass.TetMass`, a csr ``(3n_b, 3n_b)`` mass matrix, or None (static only);
    fixed_nodes: local node ids eliminated from the system; loads: objects with ``force(x_b) -> (n_b, 3)``
    (and ``potential`` for the energy).
    """

    name: str
    elasticity: object
    mass: object = None
    fixed_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    loads: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rest_positions = np.asarray(self.elasticity.rest_positions, dtype=np.float64)
        self.n_nodes = self.rest_positions.shape[0]
        self.mass_matrix = None
        if self.mass is not None:
            matrix = self.mass.matrix if isinstance(self.mass, TetMass) else self.mass
            if not sp.issparse(matrix) or matrix.shape != (3 * self.n_nodes, 3 * self.n_nodes):
                raise ParameterError(f"body {self.name!r}: mass must be a TetMass or a ({3 * self.n_nodes}, "
                                     f"{3 * self.n_nodes}) sparse matrix")
            self.mass_matrix = sp.csr_matrix(matrix)
        fixed = np.asarray(self.fixed_nodes)
        if fixed.size and not np.issubdtype(fixed.dtype, np.integer):
            raise ParameterError(f"body {self.name!r}: fixed_nodes must be integer node ids")
        fixed = np.unique(fixed.astype(np.int64).reshape(-1))
        if fixed.size and (fixed[0] < 0 or fixed[-1] >= self.n_nodes):
            raise ParameterError(f"body {self.name!r}: fixed_nodes must lie in 0..{self.n_nodes - 1}")
        self.fixed_nodes = fixed
        self.loads = list(self.loads)


class Model:
    """Bodies with concatenated DOFs.

    Attributes: ``bodies``, ``node_offsets (b+1,)``, ``n_nodes``, ``n_dofs = 3 n_nodes``, ``rest_positions
    (n_nodes, 3)``, ``fixed_nodes`` (concatenated ids), ``free_dofs`` (sorted DOF ids that are not fixed),
    ``elasticity`` (the body's own for one body, else a CompositeElasticity), ``loads`` (on the concatenated
    positions), ``mass_matrix`` csr ``(N, N)`` block-diagonal, or None when a body has no mass.
    """

    def __init__(self, bodies) -> None:
        self.bodies = list(bodies)
        if not self.bodies:
            raise ParameterError("a model needs at least one body")
        names = [body.name for body in self.bodies]
        if len(set(names)) != len(names):
            raise ParameterError(f"body names must be unique, got {names}")
        sizes = [body.n_nodes for body in self.bodies]
        self.node_offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.n_nodes = int(self.node_offsets[-1])
        self.n_dofs = 3 * self.n_nodes
        self.rest_positions = np.concatenate([body.rest_positions for body in self.bodies])
        self.fixed_nodes = np.concatenate([b.fixed_nodes + off for b, off in zip(self.bodies, self.node_offsets)])
        free_mask = np.ones(self.n_dofs, dtype=bool)
        free_mask[(3 * self.fixed_nodes[:, None] + np.arange(3)).reshape(-1)] = False
        self.free_dofs = np.flatnonzero(free_mask).astype(np.int64)
        single = len(self.bodies) == 1
        self.elasticity = self.bodies[0].elasticity if single else CompositeElasticity(
            [body.elasticity for body in self.bodies])
        self.loads = [self._place_load(load, b) for b, body in enumerate(self.bodies) for load in body.loads]
        masses = [body.mass_matrix for body in self.bodies]
        self.mass_matrix = None if any(m is None for m in masses) else sp.block_diag(masses, format="csr")

    def _place_load(self, load, body: int):
        if len(self.bodies) == 1:
            return load
        return OffsetLoad(load, int(self.node_offsets[body]), self.bodies[body].n_nodes, self.n_nodes)

    def place(self, constraint, body: int):
        """A one-body constraint model acting on the concatenated positions (itself when there is one body)."""
        if len(self.bodies) == 1:
            return constraint
        return OffsetConstraint(constraint, int(self.node_offsets[body]), self.bodies[body].n_nodes, self.n_nodes)

    def static_problem(self) -> StaticProblem:
        return StaticProblem(self.elasticity, fixed_nodes=self.fixed_nodes, loads=self.loads)

    def split(self, x) -> list[np.ndarray]:
        """Concatenated ``(n_nodes, 3)`` positions to the list of body arrays (views)."""
        x = self.check_positions(x)
        return [x[a:b] for a, b in zip(self.node_offsets[:-1], self.node_offsets[1:])]

    def check_positions(self, x, name: str = "positions") -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.size != self.n_dofs:
            raise ParameterError(f"{name} must have shape ({self.n_nodes}, 3), got {x.shape}")
        return x.reshape(self.n_nodes, 3)

    def forces_and_tangent(self, x) -> tuple[np.ndarray, sp.csr_matrix]:
        """Total force ``(n_nodes, 3)`` (internal + loads) and ``K = -df/dx`` csr ``(N, N)`` (a new matrix).
        Loads are treated as position independent (their tangent is not added), as in the static problem."""
        x = self.check_positions(x)
        f, K = self.elasticity.forces_and_tangent(x)
        f = np.array(f, dtype=np.float64)
        for load in self.loads:
            f += load.force(x)
        return f, sp.csr_matrix(K, copy=True)

    def potential_energy(self, x) -> float:
        """Elastic energy of every body + load potentials [energy]."""
        x = self.check_positions(x)
        return float(self.elasticity.energy(x)) + sum(float(load.potential(x)) for load in self.loads)

    def kinetic_energy(self, v) -> float:
        flat = self.check_positions(v, "velocities").reshape(-1)
        return 0.5 * float(flat @ (self.mass_matrix @ flat))
