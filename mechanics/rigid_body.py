"""Free rigid bodies (6 degrees of freedom) in dynamic mode, and their contacts with the soft bodies' nodes.

A :class:`RigidBody` has a mass ``m``, principal moments of inertia ``I`` (3,) in its own frame, a contact
shape (a box or a sphere, :mod:`mechanics.constraints.contact`, centred on its centre of mass), and a state
(:class:`RigidState`): centre ``c`` (3,), orientation ``R`` (3, 3, body to world), velocity ``v`` (3,) and
angular velocity ``w`` (3,, world frame). Its generalised velocity is ``q = [v, w]`` (6,), its mass matrix
``diag(m I3, R I R^T)``, its generalised force ``[m g, -w x (R I R^T) w]`` (gravity and the gyroscopic torque,
evaluated at the step start).

The dynamic step (:class:`mechanics.dynamics.DynamicSolver`) integrates it with the soft bodies' scheme,
``q+ = q + h M^-1 (f + J_r^T lambda)``, then moves it: ``c+ = c + h (beta v+ + (1 - beta) v)``,
``R+ = exp(h (beta w+ + (1 - beta) w)) R`` (the exact rotation of a constant angular velocity over the step).

:class:`RigidContact` rows join the soft nodes of one body to one rigid body: per contact a normal row (and two
friction rows) whose soft part is ``+n`` on the node (as against an obstacle) and whose rigid part is
``-[n, r x n]`` with ``r`` the node's position relative to the centre: the gap's rate is
``n . (v_node - v - w x r)``. Equal and opposite forces act on the node and on the body at the node's position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.spatial.transform import Rotation

from softsim.mechanics.constraints.base import check_positions
from softsim.mechanics.constraints.contact import BoxObstacle, ContactRows, Obstacle, SphereObstacle
from softsim.mechanics.errors import ParameterError

__all__ = ["RigidBody", "RigidContact", "RigidState", "box_inertia", "make_rigid_body", "sphere_inertia"]


def box_inertia(mass: float, half_extents) -> np.ndarray:
    """Principal moments (3,) of a solid box of ``mass`` and half extents ``(a, b, c)``: ``m (b^2 + c^2) / 3``..."""
    a, b, c = (float(v) for v in half_extents)
    return mass / 3.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Principal moments (3,) of a solid sphere: ``2 m r^2 / 5``."""
    return np.full(3, 0.4 * mass * radius * radius)


@dataclass(frozen=True)
class RigidState:
    """Centre ``c`` (3,), orientation ``R`` (3, 3), velocity ``v`` (3,), angular velocity ``w`` (3,, world)."""

    c: np.ndarray
    R: np.ndarray
    v: np.ndarray
    w: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """The generalised velocity ``[v, w]`` (6,)."""
        return np.concatenate([self.v, self.w])


def _vec(name: str, key: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ParameterError(f"rigid body {name}: {key} must be 3 finite numbers, got {value!r}")
    return array


class RigidBody:
    """A free rigid body: ``mass`` > 0, ``inertia`` (3,) > 0 principal moments in its frame, ``shape`` (a box or
    sphere obstacle centred at the origin of its frame), the initial ``position`` (3,), ``rotation`` (3, 3),
    ``velocity`` and ``angular_velocity`` (3,), ``friction`` (Coulomb mu of its contacts) and ``gravity``."""

    def __init__(self, name: str, mass: float, inertia, shape: Obstacle, *, position=(0.0, 0.0, 0.0),
                 rotation=None, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                 friction: float = 0.0, gravity=(0.0, 0.0, 0.0)) -> None:
        self.name = name
        if not (np.isfinite(mass) and mass > 0):
            raise ParameterError(f"rigid body {name}: mass must be > 0, got {mass!r}")
        self.mass = float(mass)
        self.inertia = _vec(name, "inertia", inertia)
        if np.any(self.inertia <= 0):
            raise ParameterError(f"rigid body {name}: inertia must be > 0, got {self.inertia.tolist()}")
        if not isinstance(shape, BoxObstacle | SphereObstacle):
            raise ParameterError(f"rigid body {name}: shape must be a box or a sphere")
        self.shape = shape
        self.friction = float(friction)
        if not (self.friction >= 0):
            raise ParameterError(f"rigid body {name}: friction must be >= 0, got {friction!r}")
        self.gravity = _vec(name, "gravity", gravity)
        R = np.eye(3) if rotation is None else np.asarray(rotation, dtype=np.float64).reshape(3, 3)
        self.initial = RigidState(_vec(name, "position", position), R, _vec(name, "velocity", velocity),
                                  _vec(name, "angular_velocity", angular_velocity))
        self.state = self.initial
        self.detection = self.initial  # the pose contacts are detected at (the step's prediction)

    def reset(self) -> None:
        self.state = self.detection = self.initial

    def set_state(self, state: RigidState) -> None:
        self.state = state

    # -- dynamics --------------------------------------------------------------------------------------
    def mass_matrix(self, state: RigidState | None = None) -> np.ndarray:
        """``diag(m I3, R I R^T)`` (6, 6) at ``state`` (default: the current one)."""
        R = (self.state if state is None else state).R
        M = np.zeros((6, 6))
        M[:3, :3] = self.mass * np.eye(3)
        M[3:, 3:] = (R * self.inertia) @ R.T
        return M

    def forces(self, state: RigidState | None = None) -> np.ndarray:
        """``[m g, -w x (R I R^T) w]`` (6,): gravity and the gyroscopic torque."""
        state = self.state if state is None else state
        inertia = (state.R * self.inertia) @ state.R.T
        return np.concatenate([self.mass * self.gravity, -np.cross(state.w, inertia @ state.w)])

    def advanced(self, state: RigidState, q_new: np.ndarray, h: float, beta: float) -> RigidState:
        """The state after a step of ``h`` from ``state`` with the new generalised velocity ``q_new`` (6,)."""
        q_new = np.asarray(q_new, dtype=np.float64)
        v, w = q_new[:3], q_new[3:]
        c = state.c + h * (beta * v + (1.0 - beta) * state.v)
        turn = Rotation.from_rotvec(h * (beta * w + (1.0 - beta) * state.w)).as_matrix()
        return RigidState(c, turn @ state.R, v.copy(), w.copy())

    def predict(self, h: float) -> None:
        """Detect the next contacts at the pose the current velocities reach after ``h``."""
        self.detection = self.advanced(self.state, self.state.q, h, 1.0)

    # -- geometry --------------------------------------------------------------------------------------
    def distance_and_normal(self, points, state: RigidState | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Signed distance (k,) of ``points`` (k, 3) to the body's shape at ``state`` and its outward normal
        (k, 3) in world coordinates."""
        state = self.state if state is None else state
        local = (np.asarray(points, dtype=np.float64).reshape(-1, 3) - state.c) @ state.R
        distance, normal = self.shape.signed_distance_and_normal(local)
        return distance, normal @ state.R.T

    def outputs(self) -> dict[str, float]:
        """``NAME.x/y/z`` (the centre) and ``NAME.vx/vy/vz`` (its velocity)."""
        s = self.state
        values = {f"{self.name}.{axis}": float(s.c[i]) for i, axis in enumerate("xyz")}
        values.update({f"{self.name}.v{axis}": float(s.v[i]) for i, axis in enumerate("xyz")})
        return values


class RigidContact(ContactRows):
    """Contacts between the nodes ``nodes`` (k,) of the model's positions (``n_nodes`` nodes) and the rigid body
    ``body``, with ``contactDistance`` kept and ``alarmDistance`` for detection; friction is the body's.

    The dynamic solver reads :meth:`rigid_jacobian` ``(rows, 6)`` beside :meth:`jacobian` ``(rows, 3 n)``."""

    measures_motion = True

    def __init__(self, nodes, body: RigidBody, *, n_nodes: int, contactDistance: float = 0.0,
                 alarmDistance: float | None = None, name: str | None = None) -> None:
        super().__init__(name or f"{body.name}_contact")
        self.body = body
        self.nodes = np.asarray(nodes, dtype=np.int64).reshape(-1)
        self.n_nodes = int(n_nodes)
        if self.nodes.size and (self.nodes.min() < 0 or self.nodes.max() >= self.n_nodes):
            raise ParameterError(f"{self.name}: node ids must be in [0, {self.n_nodes})")
        self.contactDistance = float(contactDistance)
        self.alarmDistance = 2.0 * self.contactDistance if alarmDistance is None else float(alarmDistance)
        if not (0.0 <= self.contactDistance <= self.alarmDistance):
            raise ParameterError(f"{self.name}: need 0 <= contactDistance <= alarmDistance")
        self.rigid_bodies = (body,)  # the rigid bodies its rows touch (mechanics.dynamics._RigidBlock)
        self._init_rows()
        self._clear()

    def _clear(self) -> None:
        self.contact_nodes = np.zeros(0, dtype=np.int64)
        self.arms = np.zeros((0, 3))
        self._set_contacts(np.zeros((0, 3)), np.zeros(0))

    def update(self, x_free: np.ndarray) -> None:
        """Contacts: the nodes within alarmDistance of the body at its detection pose, at ``x_free`` (n, 3) or at
        the last corrected positions; normals and lever arms ``r = x - c`` from there."""
        x_free = check_positions(self.name, x_free, self.n_nodes)
        self._clear()
        if not self.active or self.nodes.size == 0:
            return
        pose = self.body.detection
        distance, normal = self.body.distance_and_normal(x_free[self.nodes], pose)
        nearest = distance
        last = self.last_positions
        if last is not None and last.shape == x_free.shape:
            nearest = np.minimum(nearest, self.body.distance_and_normal(last[self.nodes], pose)[0])
        near = np.flatnonzero(nearest < self.alarmDistance)
        self.contact_nodes = self.nodes[near]
        self.arms = x_free[self.contact_nodes] - pose.c
        self._set_contacts(normal[near], np.full(near.size, self.body.friction))

    def contact_keys(self) -> list:
        """The contact node's id per contact."""
        return self.contact_nodes.tolist()

    def _directions(self) -> np.ndarray:
        directions = np.stack([self.normals, self.tangents, self.bitangents], axis=1)  # (c, 3, 3)
        return directions[self._row_mask()]

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """``+n`` (and ``+t``, ``+s``) on each contact node, ``(rows, 3 n)``."""
        keep = self._row_mask()
        nodes = np.broadcast_to(self.contact_nodes[:, None], keep.shape)[keep]
        directions = self._directions()
        cols = 3 * nodes[:, None] + np.arange(3)[None, :]
        rows = np.repeat(np.arange(nodes.size), 3)
        return sp.csr_matrix((directions.reshape(-1), (rows, cols.reshape(-1))), shape=(nodes.size, 3 * self.n_nodes))

    def rigid_jacobian(self) -> np.ndarray:
        """``-[d, r x d]`` per row (rows, 6), ``d`` the row's direction and ``r`` the contact's lever arm."""
        keep = self._row_mask()
        arms = np.broadcast_to(self.arms[:, None, :], (*keep.shape, 3))[keep]
        directions = self._directions()
        return -np.hstack([directions, np.cross(arms, directions)])

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """Normal rows: the signed distance at ``x_free`` to the body where it is now, minus contactDistance;
        tangential rows: ``t . (x_free - x)``."""
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        if self.n_contacts == 0:
            return np.zeros(0)
        gap = self.body.distance_and_normal(x_free[self.contact_nodes])[0] - self.contactDistance
        return self._row_values(gap, (x_free - x)[self.contact_nodes])


def make_rigid_body(spec, gravity) -> RigidBody:
    """The :class:`RigidBody` of a ``[[rigid]]`` table (``mechanics.scene.schema.RigidSpec``) under ``gravity``."""
    if spec.shape == "box":
        shape: Obstacle = BoxObstacle((0.0, 0.0, 0.0), spec.halfExtents)
        inertia = box_inertia(spec.mass, spec.halfExtents)
    else:
        shape = SphereObstacle((0.0, 0.0, 0.0), spec.radius)
        inertia = sphere_inertia(spec.mass, spec.radius)
    rotation = Rotation.from_euler("xyz", spec.rotation, degrees=True).as_matrix()
    return RigidBody(spec.name, spec.mass, inertia if spec.inertia is None else spec.inertia, shape,
                     position=spec.position, rotation=rotation, velocity=spec.velocity,
                     angular_velocity=spec.angularVelocity, friction=spec.friction, gravity=gravity)
