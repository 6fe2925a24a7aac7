"""Unilateral contact (optionally with Coulomb friction) between body surface nodes and static rigid
obstacles.

SOFA semantics (reference sofa-constraints.md section 2, ``BaseContactLagrangianConstraint``,
``UnilateralLagrangianConstraint``) with the obstacle as object 1 (Q, static) and the body node as object 2
(P):

- one normal row ``+n`` on the node per contact; with friction (mu > 0) two more rows ``+t`` and ``+s``,
  where the
  frame is SOFA's: ``t = (n_z, n_x, n_y)``, ``s = normalize(n x t)``, ``t = (-n) x s`` (so ``n x t = s``);
- ``dfree_n = dist(x_free) - contactDistance`` (the signed distance of the node to the obstacle at the free
  configuration), ``dfree_t,s`` = the tangential parts of the node's free motion ``x_free - x``;
- resolution: BOUNDED(0, [0, inf)) for a frictionless contact, FRICTION(mu) for a 3-row contact.

Detection (SOFA's collision pipeline runs after the free motion): :meth:`ContactConstraint.update` evaluates
the
signed distance of every surface node to every obstacle at ``x_free`` (vectorised over nodes x obstacles)
and keeps
the pairs closer than ``alarmDistance``. The normal is the obstacle's outward normal at the node's free
position.

Where softsim departs (docs/sofa-departures.md): against a sphere, box or capsule the normal row follows the
node (the signed distance's gradient at its current position, :meth:`ContactConstraint.following`), and a
friction contact there takes its tangent frame from the normal at the node's position at the frame's start
(:meth:`ContactRows.begin_frame`), so that a static frame ends at its contact problem's own stationary point.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import Constraint, check_positions
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, FRICTION, Blocks
from softsim.mechanics.scene.schema import ObstacleSpec, check_parameters

logger = logging.getLogger(__name__)

__all__ = [
    "OBSTACLE_CLASSES",
    "BoxObstacle",
    "CapsuleObstacle",
    "ContactConstraint",
    "ContactRows",
    "Obstacle",
    "PlaneObstacle",
    "SphereObstacle",
    "friction_frame_derivatives",
    "friction_frames",
    "obstacle_shift",
    "penetrations",
]


def _vector(owner: str, key: str, value, *, unit: bool = False) -> np.ndarray:
    vector = np.asarray(value, dtype=np.float64).reshape(-1)
    if vector.shape != (3,) or not np.all(np.isfinite(vector)):
        raise ParameterError(f"{owner}: {key} must be 3 finite numbers, got {value!r}")
    if unit:
        norm = np.linalg.norm(vector)
        if norm == 0.0:
            raise ParameterError(f"{owner}: {key} must be a non-zero vector")
        vector = vector / norm
    return vector


def _normalize_rows(vectors: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Unit rows; rows of zero length get ``fallback`` (3,)."""
    norms = np.linalg.norm(vectors, axis=1)
    out = np.empty_like(vectors)
    good = norms > 0.0
    out[good] = vectors[good] / norms[good, None]
    out[~good] = fallback
    return out


_UP = np.array([0.0, 0.0, 1.0])


class Obstacle(abc.ABC):
    """A rigid shape. ``signed_distance_and_normal(points (k, 3)) -> (dist (k,), normal (k, 3))``: the distance
    is negative inside the shape; the normal is the unit gradient of the distance (outward). ``shift`` (3,)
    translates the shape from where its keys put it (a moving obstacle, :func:`obstacle_shift`); the contact
    rows use :meth:`distance_and_normal`, which applies it."""

    shift = np.zeros(3)

    @abc.abstractmethod
    def signed_distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`signed_distance_and_normal` of the shape moved by ``shift``."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return self.signed_distance_and_normal(points - self.shift if np.any(self.shift) else points)

    def signed_distance_hessian(self, points: np.ndarray) -> np.ndarray:
        """The second derivative (k, 3, 3) [1/length] of the signed distance at ``points`` (k, 3): the
        derivative of the normal, d n / d x, the shape's curvature (0 for a plane and on a box's faces)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return np.zeros((points.shape[0], 3, 3))

    def distance_hessian(self, points: np.ndarray) -> np.ndarray:
        """:meth:`signed_distance_hessian` of the shape moved by ``shift``."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return self.signed_distance_hessian(points - self.shift if np.any(self.shift) else points)


def _curvature(normal: np.ndarray, distance: np.ndarray, along: np.ndarray | None = None) -> np.ndarray:
    """(I - n n^T [- u u^T]) / distance (k, 3, 3): the Hessian of the distance to a point (or, with the unit
    ``along`` (k, 3) or (3,), to a line along it) at the unit normals ``normal`` (k, 3) and distances (k,); 0
    where the distance is 0 (the exact centre or axis, where the normal is a convention)."""
    projector = np.eye(3)[None] - normal[:, :, None] * normal[:, None, :]
    if along is not None:
        along = np.broadcast_to(along, normal.shape)
        projector = projector - along[:, :, None] * along[:, None, :]
    safe = np.where(distance > 0.0, distance, np.inf)
    return projector / safe[:, None, None]


def obstacle_shift(velocity, start: float, end: float | None, time: float) -> np.ndarray:
    """How far (3,) an obstacle moving at ``velocity`` (3,) from ``start`` to ``end`` (None: for ever) has moved
    at ``time``."""
    moving = max(0.0, (time if end is None else min(time, end)) - start)
    return np.asarray(velocity, dtype=np.float64) * moving


class PlaneObstacle(Obstacle):
    """Half-space below the plane through ``point`` with outward unit ``normal`` (normalised here)."""

    def __init__(self, point, normal) -> None:
        self.point = _vector("plane", "point", point)
        self.normal = _vector("plane", "normal", normal, unit=True)

    def signed_distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        distance = (points - self.point) @ self.normal
        return distance, np.broadcast_to(self.normal, points.shape).copy()


class SphereObstacle(Obstacle):
    """Solid sphere. At the exact centre the normal is +z."""

    def __init__(self, center, radius: float) -> None:
        self.center = _vector("sphere", "center", center)
        self.radius = check_parameters(ObstacleSpec, "sphere", {"radius": radius})["radius"]

    def signed_distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        offset = points - self.center
        return np.linalg.norm(offset, axis=1) - self.radius, _normalize_rows(offset, _UP)

    def signed_distance_hessian(self, points: np.ndarray) -> np.ndarray:
        """(I - n n^T) / |x - c|."""
        offset = np.asarray(points, dtype=np.float64).reshape(-1, 3) - self.center
        return _curvature(_normalize_rows(offset, _UP), np.linalg.norm(offset, axis=1))


class BoxObstacle(Obstacle):
    """Solid axis-aligned box (``center``, positive ``halfExtents``); rotate the scene rather than the box.

    Outside, the distance is Euclidean to the nearest face, edge or corner; inside, it is minus the distance
    to
    the nearest face and the normal is that face's normal.
    """

    def __init__(self, center, halfExtents) -> None:  # noqa: N803 - the scene key
        self.center = _vector("box", "center", center)
        self.half_extents = _vector("box", "halfExtents", halfExtents)
        if np.any(self.half_extents <= 0.0):
            raise ParameterError(f"box: half_extents must be > 0, got {self.half_extents.tolist()}")

    def signed_distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        offset = points - self.center
        sign = np.where(offset >= 0.0, 1.0, -1.0)
        excess = np.abs(offset) - self.half_extents  # > 0 along the axes where the point is beyond a face
        outside_part = np.maximum(excess, 0.0)
        outside_distance = np.linalg.norm(outside_part, axis=1)
        outside = outside_distance > 0.0
        distance = np.where(outside, outside_distance, excess.max(axis=1))
        normal = np.zeros_like(points)
        normal[outside] = sign[outside] * outside_part[outside] / outside_distance[outside, None]
        inside_ids = np.flatnonzero(~outside)
        axis = excess[inside_ids].argmax(axis=1)
        normal[inside_ids, axis] = sign[inside_ids, axis]
        return distance, normal

    def signed_distance_hessian(self, points: np.ndarray) -> np.ndarray:
        """Outside, (P - n n^T) / d with P the projector on the axes along which the point is beyond the box (0
        in front of a face, the edge's line curvature beyond an edge, a corner's point curvature beyond it);
        inside, 0 (the distance to the nearest face is affine)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        excess = np.abs(points - self.center) - self.half_extents
        beyond = excess > 0.0
        distance, normal = self.signed_distance_and_normal(points)
        outside = beyond.any(axis=1) & (distance > 0.0)
        hessian = np.zeros((points.shape[0], 3, 3))
        n = normal[outside]
        projector = beyond[outside, :, None] * np.eye(3)[None] - n[:, :, None] * n[:, None, :]
        hessian[outside] = projector / distance[outside, None, None]
        return hessian


class CapsuleObstacle(Obstacle):
    """Solid capsule: the points within ``radius`` of the segment ``a``-``b``."""

    def __init__(self, a, b, radius: float) -> None:
        self.a = _vector("capsule", "a", a)
        self.b = _vector("capsule", "b", b)
        self.radius = check_parameters(ObstacleSpec, "capsule", {"radius": radius})["radius"]

    def signed_distance_and_normal(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        axis = self.b - self.a
        length2 = float(axis @ axis)
        t = (
            np.zeros(points.shape[0])
            if length2 == 0.0
            else np.clip((points - self.a) @ axis / length2, 0.0, 1.0)
        )
        offset = points - (self.a + t[:, None] * axis)
        return np.linalg.norm(offset, axis=1) - self.radius, _normalize_rows(offset, _UP)

    def signed_distance_hessian(self, points: np.ndarray) -> np.ndarray:
        """Beside the segment, (I - n n^T - u u^T) / d (u the segment's direction, d the distance to the axis);
        beyond an end, (I - n n^T) / d about that end."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        axis = self.b - self.a
        length2 = float(axis @ axis)
        raw = np.zeros(points.shape[0]) if length2 == 0.0 else (points - self.a) @ axis / length2
        t = np.clip(raw, 0.0, 1.0)
        offset = points - (self.a + t[:, None] * axis)
        distance = np.linalg.norm(offset, axis=1)
        normal = _normalize_rows(offset, _UP)
        hessian = _curvature(normal, distance)
        beside = (raw > 0.0) & (raw < 1.0)
        if length2 > 0.0 and beside.any():
            hessian[beside] = _curvature(normal[beside], distance[beside], axis / np.sqrt(length2))
        return hessian


def penetrations(obstacle: Obstacle, points: np.ndarray, tolerance: float = 0.0):
    """The points inside ``obstacle`` by more than ``tolerance`` (signed distance ``< -tolerance``).

    Returns ``(ids (k,), depths (k,), normals (k, 3))``: the points' indices, how deep each is (minus its signed
    distance) and the obstacle's outward normal there (the direction to move the point, or the obstacle
    the other way, to clear it).
    """
    distance, normal = obstacle.distance_and_normal(points)
    ids = np.flatnonzero(distance < -tolerance)
    return ids, -distance[ids], normal[ids]


def friction_frames(normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SOFA's contact frame for unit normals ``(c, 3)``: returns ``(t, s)`` with ``(n, t, s)`` orthonormal and
    ``n x t = s``. SOFA's first guess ``t = (n_z, n_x, n_y)`` is parallel to n for n = +-(1,1,1)/sqrt(3);
    there the
    guess ``(1, 0, 0)`` is used instead."""
    guess = normals[:, [2, 0, 1]].copy()
    s = np.cross(normals, guess)
    degenerate = np.linalg.norm(s, axis=1) < 1e-6
    if np.any(degenerate):
        s[degenerate] = np.cross(normals[degenerate], np.array([1.0, 0.0, 0.0]))
    s /= np.linalg.norm(s, axis=1)[:, None]
    t = np.cross(-normals, s)
    return t, s


def friction_frame_derivatives(normals: np.ndarray, d_normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The change ``(dt, ds)`` (c, 3) of :func:`friction_frames` of the unit ``normals`` (c, 3) when they change
    by ``d_normals`` (c, 3) (a directional derivative; ``d_normals`` orthogonal to the normals for unit ones).

    With g the guess (``(n_z, n_x, n_y)``, or the constant ``(1, 0, 0)`` where that is parallel to n), u = n x g,
    s = u / |u| and t = -n x s: du = dn x g + n x dg, ds = (du - s (s . du)) / |u|, dt = -(dn x s + n x ds)."""
    normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    d_normals = np.asarray(d_normals, dtype=np.float64).reshape(-1, 3)
    guess = normals[:, [2, 0, 1]].copy()
    d_guess = d_normals[:, [2, 0, 1]].copy()
    u = np.cross(normals, guess)
    degenerate = np.linalg.norm(u, axis=1) < 1e-6
    if np.any(degenerate):
        guess[degenerate] = [1.0, 0.0, 0.0]
        d_guess[degenerate] = 0.0
        u[degenerate] = np.cross(normals[degenerate], guess[degenerate])
    length = np.linalg.norm(u, axis=1)[:, None]
    s = u / length
    du = np.cross(d_normals, guess) + np.cross(normals, d_guess)
    ds = (du - s * np.einsum("ij,ij->i", s, du)[:, None]) / length
    dt = -(np.cross(d_normals, s) + np.cross(normals, ds))
    return dt, ds


def _per_obstacle(owner: str, key: str, value, n_obstacles: int, lo: float) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.size == 1:
        array = np.full(n_obstacles, float(array[0]))
    if array.size != n_obstacles or not np.all(np.isfinite(array)) or np.any(array < lo):
        raise ParameterError(
            f"{owner}: {key} must be one number >= {lo} or one per obstacle ({n_obstacles}), got {value!r}"
        )
    return array


#: the obstacle class of each ``[[obstacle]]`` type; its constructor takes that type's scene keys
OBSTACLE_CLASSES = {"plane": PlaneObstacle, "sphere": SphereObstacle, "box": BoxObstacle, "capsule": CapsuleObstacle}


class ContactRows(Constraint):
    """What contacts against obstacles and between bodies share: per contact a normal (c, 3) with SOFA's tangent
    frame and ``mu`` (c,); 1 row (frictionless) or 3 rows (n, t, s) per contact; resolutions BOUNDED(0, [0, inf))
    or FRICTION(mu); tangential rows that measure the motion since the last frame (``measures_motion``); the
    last corrected positions remembered for the next detection; contact points, forces and outputs after
    :meth:`store`. Subclasses detect (``update``), set ``contact_nodes`` and call :meth:`_set_contacts`."""

    measures_motion = True
    ramped = False
    last_positions: np.ndarray | None = None
    #: the positions (n, 3) the current frame starts from (:meth:`begin_frame`), None when not told
    frame_start: np.ndarray | None = None
    #: per contact (c, 3): the tangential motion its rows measure (the node's, relative to the obstacle or to its
    #: triangle's point) from the frame's start to where the equilibrium steps first touched it
    #: (``add_missed_contacts``). Its tangential rows measure the motion from there: a contact that begins within
    #: a static frame resists slip from its touch on, not the travel before it (a finger curled 30 mm into a
    #: soft block with friction in one frame stalled, its new contacts sliding back toward where their nodes
    #: were at the frame's start). Zero for the contacts found at the frame's start.
    slip_origin: np.ndarray = np.zeros((0, 3))
    n_nodes: int | None = None

    def _init_rows(self) -> None:
        """No contact points, forces or outputs yet (subclasses clear their contacts themselves)."""
        self.contact_points = np.zeros((0, 3))
        self.contact_forces = np.zeros((0, 3))
        self._outputs = {"contacts": 0.0, "normalForce": 0.0}

    def _set_contacts(self, normals: np.ndarray, mu: np.ndarray, slip_origin: np.ndarray | None = None) -> None:
        """The contacts' normals (c, 3), friction coefficients (c,) and :attr:`slip_origin` (c, 3; None: zeros):
        their frames and row counts."""
        self.normals, self.mu = normals, mu
        self.tangents, self.bitangents = friction_frames(normals)
        self._rows_per_contact = np.where(mu > 0.0, 3, 1).astype(np.int64)
        self.slip_origin = np.zeros((normals.shape[0], 3)) if slip_origin is None else slip_origin

    def _n_nodes(self, x: np.ndarray) -> int:
        return np.asarray(x).size // 3 if self.n_nodes is None else self.n_nodes

    def normals_at(self, x: np.ndarray) -> np.ndarray:
        """The contacts' normals (c, 3) at the positions ``x`` (n, 3): those found at detection (subclasses
        whose normals follow the nodes override this)."""
        return self.normals

    def frames_at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The contacts' (normals, tangents, bitangents), each (c, 3), at the positions ``x`` (n, 3): those
        found at detection (subclasses whose frames follow the nodes override this)."""
        return self.normals_at(x), self.tangents, self.bitangents

    def begin_frame(self, x: np.ndarray) -> None:
        """The positions ``(n, 3)`` the frame about to be solved starts from (the simulation says so before each
        frame; the frame step passes the same positions to :meth:`violation`, whose tangential rows measure the
        motion from them). The gradients read them (:meth:`ContactConstraint.law_jacobian`)."""
        self.frame_start = np.array(x, dtype=np.float64).reshape(-1, 3)
        self.slip_origin = np.zeros((self.n_contacts, 3))

    def remember(self, x: np.ndarray | None) -> None:
        """Positions ``(n, 3)`` at which the next :meth:`update` also detects (None forgets them)."""
        self.last_positions = None if x is None else np.array(x, dtype=np.float64).reshape(-1, 3)

    @property
    def n_contacts(self) -> int:
        return int(self.contact_nodes.size)

    def contact_keys(self) -> list:
        """One hashable key per contact (c,) that names what touches what (subclasses: node and obstacle, node
        and triangle)."""
        raise NotImplementedError

    def contact_state(self) -> dict:
        """The contact set as it is now, for :meth:`restore_contact_state` (detection and :meth:`update` replace
        the arrays they change, so a shallow copy keeps them)."""
        return dict(vars(self))

    def restore_contact_state(self, state: dict) -> None:
        vars(self).update(state)

    def forces_by_key(self, force: np.ndarray) -> dict:
        """The multipliers ``force`` (n_rows,) of the current contacts, per contact key: {key: its rows' values}."""
        ends = np.cumsum(self._rows_per_contact)
        return {key: force[end - size:end] for key, end, size in zip(self.contact_keys(), ends,
                                                                      self._row_counts())}

    def forces_from(self, by_key: dict) -> np.ndarray:
        """Multipliers (n_rows,) for the current contacts: a contact's rows from ``by_key`` (:meth:`forces_by_key`
        of an earlier contact set) when it has the same key and row count, else zeros."""
        force = np.zeros(self.n_rows)
        ends = np.cumsum(self._rows_per_contact)
        for key, end, size in zip(self.contact_keys(), ends, self._row_counts()):
            values = by_key.get(key)
            if values is not None and values.size == size:
                force[end - size:end] = values
        return force

    def _row_counts(self) -> np.ndarray:
        return np.asarray(self._rows_per_contact, dtype=np.int64)

    @property
    def n_rows(self) -> int:
        return int(self._rows_per_contact.sum())

    def _row_mask(self) -> np.ndarray:
        """(c, 3): which of each contact's n, t, s rows exist."""
        return np.arange(3)[None, :] < self._rows_per_contact[:, None]

    def _per_contact(self, force: np.ndarray) -> np.ndarray:
        """The multipliers ``force`` (n_rows,) laid out per contact (c, 3): normal, tangent, bitangent (zero for
        the rows a frictionless contact does not have)."""
        per_contact = np.zeros(self._row_mask().shape)
        per_contact[self._row_mask()] = np.asarray(force, dtype=np.float64).reshape(-1)
        return per_contact

    def _row_values(self, gap: np.ndarray, motion: np.ndarray, tangents: np.ndarray | None = None,
                    bitangents: np.ndarray | None = None) -> np.ndarray:
        """The violations of the rows from each contact's normal gap (c,) and tangential motion (c, 3), measured
        along ``tangents`` and ``bitangents`` (c, 3) (default: the frame found at detection)."""
        tangents = self.tangents if tangents is None else tangents
        bitangents = self.bitangents if bitangents is None else bitangents
        per_contact = np.column_stack([gap, np.einsum("ij,ij->i", tangents, motion),
                                       np.einsum("ij,ij->i", bitangents, motion)])
        return per_contact[self._row_mask()]

    def _rows_with_turning(self, x: np.ndarray, turning: np.ndarray, entries) -> sp.csr_matrix:
        """The rows (:meth:`jacobian` at ``x`` (n, 3)) plus the derivative of the tangent frames of the friction
        contacts ``turning`` (k,): ``entries(x, start, turning, first)``, with ``x`` and the frame's start
        :attr:`frame_start` (n, 3) and each contact's first row ``first`` (k,), gives their (values, rows,
        columns). The subclasses' ``law_jacobian``. ValueError when the frame's start is not known (a constraint
        used outside a simulation)."""
        J = self.jacobian(x)
        if turning.size == 0:
            return J
        start = self.frame_start
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        if start is None or start.shape != x.shape:
            raise ValueError(f"{self.name}: the frame's start positions are not known (begin_frame)")
        first = np.concatenate(([0], np.cumsum(self._rows_per_contact)[:-1]))[turning]
        values, rows, cols = entries(x, start, turning, first)
        return sp.csr_matrix(J + sp.csr_matrix((values, (rows, cols)), shape=J.shape))

    def blocks(self, x: np.ndarray) -> Blocks:
        """One BOUNDED(0, [0, inf)) block per frictionless contact, one FRICTION(mu) block per other
        contact."""
        size = self._rows_per_contact
        start = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64) if size.size else size.copy()
        return Blocks(start, size, np.where(size == 3, FRICTION, BOUNDED), 0.0, 0.0, np.inf, self.mu)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        """Contact points (the contact nodes at ``x_new``) and forces ``f_n n + f_t t + f_s s`` per contact."""
        self.remember(x_new)
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        if force.size != self.n_rows:
            raise ParameterError(f"{self.name}: store expects {self.n_rows} multipliers, got {force.size}")
        x_new = check_positions(self.name, x_new, self._n_nodes(x_new))
        per_contact = self._per_contact(force)
        self.contact_points = x_new[self.contact_nodes].copy()
        normals, tangents, bitangents = self.frames_at(x_new)
        self.contact_forces = (per_contact[:, :1] * normals + per_contact[:, 1:2] * tangents
                               + per_contact[:, 2:3] * bitangents)
        self._outputs = {"contacts": float(self.n_contacts), "normalForce": float(per_contact[:, 0].sum())}

    @property
    def outputs(self) -> dict[str, float]:
        """``contacts`` (count) and ``normalForce`` (sum of the normal multipliers), as of the last
        store()."""
        return dict(self._outputs)


class ContactConstraint(ContactRows):
    """Contacts of body surface nodes against static obstacles.

    Args:
        surface_nodes: ``(k,)`` node ids that can touch (usually the boundary nodes).
        obstacles: the obstacles.
        contactDistance: distance kept between a node and an obstacle (SOFA ``contactDistance``); one value or
            one per obstacle, >= 0.
        alarmDistance: a pair becomes a contact row when its distance at ``x_free`` is below this (SOFA
            ``alarmDistance``); one value or one per obstacle, >= contactDistance. Default: 2 *
            contactDistance.
        friction: Coulomb coefficient mu, one value or one per obstacle, >= 0. mu = 0 gives 1-row contacts.
        n_nodes: number of body nodes (``3 * n_nodes`` DOFs); default: taken from the positions passed in.
        name: identifier.

    ``measures_motion``: the tangential rows measure the motion since the last frame, so the frame step
    passes the last frame's positions as ``x`` to :meth:`violation` (sticking = no slip since then).

    Attributes after :meth:`update`: ``contact_nodes (c,)``, ``contact_obstacles (c,)``, ``normals (c, 3)``,
    ``tangents (c, 3)``, ``bitangents (c, 3)``, ``distances (c,)`` at x_free. After :meth:`store`:
    ``contact_points (c, 3)``, ``contact_forces (c, 3)`` (the force on each node, ``J^T lambda``).
    """

    def __init__(
        self,
        surface_nodes: np.ndarray,
        obstacles: Sequence[Obstacle],
        *,
        contactDistance=0.0,
        alarmDistance=None,
        friction=0.0,
        n_nodes: int | None = None,
        name: str = "contact",
    ) -> None:
        super().__init__(name)
        nodes = np.asarray(surface_nodes)
        if nodes.size and not np.issubdtype(nodes.dtype, np.integer):
            raise ParameterError(f"{name}: surface_nodes must be integer node ids")
        self.surface_nodes = nodes.astype(np.int64).reshape(-1)
        if self.surface_nodes.size and self.surface_nodes.min() < 0:
            raise ParameterError(f"{name}: surface_nodes must be >= 0")
        self.obstacles = list(obstacles)
        if not all(isinstance(o, Obstacle) for o in self.obstacles):
            raise ParameterError(f"{name}: obstacles must be Plane/Sphere/Box/CapsuleObstacle instances")
        n_obstacles = len(self.obstacles)
        self.contactDistance = _per_obstacle(name, "contactDistance", contactDistance, n_obstacles, 0.0)
        if alarmDistance is None:
            self.alarmDistance = 2.0 * self.contactDistance
        else:
            self.alarmDistance = _per_obstacle(name, "alarmDistance", alarmDistance, n_obstacles, 0.0)
        if np.any(self.alarmDistance < self.contactDistance):
            raise ParameterError(f"{name}: alarmDistance must be >= contactDistance for every obstacle")
        self.friction = _per_obstacle(name, "friction", friction, n_obstacles, 0.0)
        self.n_nodes = n_nodes
        if n_nodes is not None and self.surface_nodes.size and self.surface_nodes.max() >= n_nodes:
            raise ParameterError(f"{name}: surface_nodes must be < n_nodes={n_nodes}")
        self._init_rows()
        self._clear()

    def set_parameters(self, **parameters) -> None:
        """``contactDistance``, ``alarmDistance``, ``friction``: one value or one per obstacle."""
        n_obstacles = len(self.obstacles)
        new = {}
        for key, value in parameters.items():
            if key not in ("contactDistance", "alarmDistance", "friction"):
                raise ParameterError(
                    f"{self.name}: unknown parameter {key!r}; allowed: alarmDistance, "
                    f"contactDistance, friction"
                )
            new[key] = _per_obstacle(self.name, key, value, n_obstacles, 0.0)
        contact = new.get("contactDistance", self.contactDistance)
        alarm = new.get("alarmDistance", self.alarmDistance)
        if np.any(alarm < contact):
            raise ParameterError(f"{self.name}: alarmDistance must be >= contactDistance for every obstacle")
        for key, value in new.items():
            setattr(self, key, value)

    def _clear(self) -> None:
        self.contact_nodes = np.zeros(0, dtype=np.int64)
        self.contact_obstacles = np.zeros(0, dtype=np.int64)
        self.distances = np.zeros(0)
        self._set_contacts(np.zeros((0, 3)), np.zeros(0))

    # ------------------------------------------------------------------ detection
    def update(self, x_free: np.ndarray) -> None:
        """Rebuild the contact set: a surface node is a contact candidate when it is within alarmDistance of an
        obstacle at ``x_free`` ``(n, 3)`` or at the last corrected positions (see :meth:`remember`).

        The row is the signed distance at ``x_free``. Detecting at ``x_free`` alone misses contacts that an
        actuator or the drag causes: in a static frame ``x_free`` is the unconstrained equilibrium, which may
        stay far from the obstacle while the corrected body goes through it.
        """
        x_free = check_positions(self.name, x_free, self._n_nodes(x_free))
        self._clear()
        if not self.active or not self.obstacles or self.surface_nodes.size == 0:
            return
        if self.surface_nodes.max() >= x_free.shape[0]:
            raise ParameterError(
                f"{self.name}: surface_nodes must be < {x_free.shape[0]} (the body's node count)"
            )
        points = x_free[self.surface_nodes]
        last = self.last_positions
        last_points = last[self.surface_nodes] if last is not None and last.shape == x_free.shape else None
        n_obstacles = len(self.obstacles)
        distances = np.empty((points.shape[0], n_obstacles))
        normals = np.empty((points.shape[0], n_obstacles, 3))
        near = np.empty((points.shape[0], n_obstacles), dtype=bool)
        for j, obstacle in enumerate(self.obstacles):  # few obstacles; vectorised over the nodes
            distances[:, j], normals[:, j] = obstacle.distance_and_normal(points)
            nearest = distances[:, j]
            if last_points is not None:
                nearest = np.minimum(nearest, obstacle.distance_and_normal(last_points)[0])
            near[:, j] = nearest < self.alarmDistance[j]
        node_index, obstacle_index = np.nonzero(near)
        self.contact_nodes = self.surface_nodes[node_index]
        self.contact_obstacles = obstacle_index.astype(np.int64)
        self.distances = distances[node_index, obstacle_index]
        self._set_contacts(normals[node_index, obstacle_index], self.friction[self.contact_obstacles])
        logger.debug("%s: %d contacts", self.name, self.contact_nodes.size)

    def contact_keys(self) -> list:
        """(node, obstacle index) per contact."""
        return list(zip(self.contact_nodes.tolist(), self.contact_obstacles.tolist()))

    def _curved(self) -> np.ndarray:
        """(c,) bool: the contacts against a sphere, box or capsule (not a plane)."""
        curved = np.array([not isinstance(obstacle, PlaneObstacle) for obstacle in self.obstacles], dtype=bool)
        return curved[self.contact_obstacles] if self.n_contacts else np.zeros(0, dtype=bool)

    def missed_contacts(self, x: np.ndarray, tolerance: float = 1e-9) -> int:
        """Number of surface nodes closer than contactDistance - tolerance to an obstacle at ``x`` that have no
        contact row this frame (the frame step then re-detects and projects again)."""
        if not self.active or not self.obstacles or self.surface_nodes.size == 0:
            return 0
        candidates = np.setdiff1d(self.surface_nodes, self.contact_nodes, assume_unique=False)
        if candidates.size == 0:
            return 0
        points = np.asarray(x, dtype=np.float64).reshape(-1, 3)[candidates]
        missed = np.zeros(candidates.size, dtype=bool)
        for j, obstacle in enumerate(self.obstacles):
            missed |= obstacle.distance_and_normal(points)[0] < self.contactDistance[j] - tolerance
        return int(missed.sum())

    def add_missed_contacts(self, x: np.ndarray, at: np.ndarray | None = None, tolerance: float = 1e-9) -> int:
        """Give the contacts :meth:`missed_contacts` counts at ``x`` (n, 3) rows: each (node, obstacle) pair
        closer than contactDistance - tolerance that has none is appended after the existing contacts, whose
        rows keep their order (their multipliers stay valid). The new rows' normals are taken at ``at`` (n, 3;
        default ``x``): the equilibrium steps pass the state just before a step's first touch. Returns the
        number of contacts added."""
        if not self.active or not self.obstacles or self.surface_nodes.size == 0:
            return 0
        points = np.asarray(x, dtype=np.float64).reshape(-1, 3)[self.surface_nodes]
        at_points = points if at is None else np.asarray(at, dtype=np.float64).reshape(-1, 3)[self.surface_nodes]
        nodes, obstacles, distances, normals = [], [], [], []
        for j, obstacle in enumerate(self.obstacles):
            known = self.contact_nodes[self.contact_obstacles == j]
            new = (obstacle.distance_and_normal(points)[0] < self.contactDistance[j] - tolerance) & ~np.isin(
                self.surface_nodes, known)
            distance, normal = obstacle.distance_and_normal(at_points[new])
            nodes.append(self.surface_nodes[new])
            obstacles.append(np.full(int(new.sum()), j, dtype=np.int64))
            distances.append(distance)
            normals.append(normal)
        added = int(sum(part.size for part in nodes))
        if added:
            new_nodes = np.concatenate(nodes)
            start = self.frame_start
            touched = None if at is None else np.asarray(at, dtype=np.float64).reshape(-1, 3)
            origin = ((touched - start)[new_nodes] if touched is not None and start is not None
                      and start.shape == touched.shape else np.zeros((new_nodes.size, 3)))
            self.contact_nodes = np.concatenate([self.contact_nodes, new_nodes])
            self.contact_obstacles = np.concatenate([self.contact_obstacles, *obstacles])
            self.distances = np.concatenate([self.distances, *distances])
            self._set_contacts(np.concatenate([self.normals, *normals]), self.friction[self.contact_obstacles],
                               np.concatenate([self.slip_origin, origin]))
        return added

    def following(self) -> np.ndarray:
        """(c,) bool: the contacts against a curved obstacle (sphere, box, capsule). Their normal row is the
        gradient of the signed distance at the node's current position, not at detection, so the constrained
        equilibrium is the stationary point of the contact problem itself (the normal force along the surface's
        normal where the node touches it) and its derivatives are exact; :meth:`force_stiffness` gives the
        curvature term. With friction their tangent frame is SOFA's construction (:func:`friction_frames`) on
        that normal, so it turns with it, and the tangential rows measure the motion since the frame's start in
        it. A plane's normal, and so its frame, is constant."""
        return self._curved()

    def _hessians(self, ids: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The signed distance's Hessians (k, 3, 3) of the contacts ``ids`` (k,) at ``points`` (k, 3)."""
        hessian = np.zeros((ids.size, 3, 3))
        for j, obstacle in enumerate(self.obstacles):
            mine = self.contact_obstacles[ids] == j
            if mine.any():
                hessian[mine] = obstacle.distance_hessian(points[mine])
        return hessian

    def normals_at(self, x: np.ndarray) -> np.ndarray:
        """The contacts' normals (c, 3) at positions ``x`` (n, 3): the obstacle's outward normal at the node for
        the :meth:`following` contacts, the detection normal for the others."""
        following = self.following()
        if not following.any():
            return self.normals
        ids = np.flatnonzero(following)
        points = np.asarray(x, dtype=np.float64).reshape(-1, 3)[self.contact_nodes[ids]]
        normals = self.normals.copy()
        for j, obstacle in enumerate(self.obstacles):
            mine = self.contact_obstacles[ids] == j
            if mine.any():
                normals[ids[mine]] = obstacle.distance_and_normal(points[mine])[1]
        return normals

    def frames_at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(normals, tangents, bitangents) (c, 3) at positions ``x`` (n, 3): a :meth:`following` friction
        contact's tangent frame is built on its normal there (:func:`friction_frames`)."""
        normals = self.normals_at(x)
        turning = np.flatnonzero(self.following() & (self.mu > 0.0))
        if turning.size == 0:
            return normals, self.tangents, self.bitangents
        tangents, bitangents = self.tangents.copy(), self.bitangents.copy()
        tangents[turning], bitangents[turning] = friction_frames(normals[turning])
        return normals, tangents, bitangents

    def _row_directions(self, x: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per row: node id ``(r,)`` and direction ``(r, 3)`` (the frames at ``x``, see :meth:`frames_at`);
        contacts in order, each as n[, t, s]."""
        frames = (self.normals, self.tangents, self.bitangents) if x is None else self.frames_at(x)
        directions = np.stack(frames, axis=1)  # (c, 3, 3)
        keep = self._row_mask()
        return np.broadcast_to(self.contact_nodes[:, None], keep.shape)[keep], directions[keep]

    def _frame_derivatives(self, ids: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """d n / d x, d t / d x, d s / d x (k, 3, 3) of the :meth:`following` contacts ``ids`` (k,) at positions
        ``x`` (n, 3): the Hessian H of the signed distance, and its columns carried through
        :func:`friction_frame_derivatives`."""
        points = np.asarray(x, dtype=np.float64).reshape(-1, 3)[self.contact_nodes[ids]]
        hessian = self._hessians(ids, points)
        normals = self.normals_at(x)[ids]
        d_t, d_s = np.empty_like(hessian), np.empty_like(hessian)
        for k in range(3):
            d_t[:, :, k], d_s[:, :, k] = friction_frame_derivatives(normals, hessian[:, :, k])
        return hessian, d_t, d_s

    # ------------------------------------------------------------------ protocol
    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Rows ``+n`` (and ``+t``, ``+s`` with friction) on the contact nodes, ``(n_rows, 3n)``; a
        :meth:`following` contact's ``n`` is the obstacle's normal at the node's position in ``x``."""
        n_nodes = self._n_nodes(x)
        nodes, directions = self._row_directions(x)
        n_rows = nodes.size
        cols = 3 * nodes[:, None] + np.arange(3)[None, :]
        rows = np.repeat(np.arange(n_rows), 3)
        return sp.csr_matrix((directions.reshape(-1), (rows, cols.reshape(-1))), shape=(n_rows, 3 * n_nodes))

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``-d(lambda_n n + lambda_t t + lambda_s s)/dx`` on each :meth:`following` contact's node:
        ``-lambda_n H`` with H the Hessian of the obstacle's signed distance there (its curvature: ``(I - n n^T)
        / |x - c|`` for a sphere), and with friction ``-(lambda_t dt/dn + lambda_s ds/dn) H`` (the tangent frame
        turning with the normal; not symmetric); None when no contact follows. Triplets, see
        :meth:`~mechanics.constraints.base.Constraint.force_stiffness`."""
        following = self.following()
        if not following.any():
            return None
        ids = np.flatnonzero(following)
        per_contact = self._per_contact(force)
        nodes = self.contact_nodes[ids]
        hessian, d_t, d_s = self._frame_derivatives(ids, x)
        lam = per_contact[ids]
        blocks = -(lam[:, 0, None, None] * hessian + lam[:, 1, None, None] * d_t + lam[:, 2, None, None] * d_s)
        pattern = getattr(self, "_stiffness_pattern", None)
        if pattern is None or pattern[0] is not self.contact_nodes or not np.array_equal(pattern[1], ids):
            # the same index arrays while the contacts are the same: the frame step keeps its matrix pattern
            dofs = 3 * nodes[:, None] + np.arange(3)[None, :]
            rows = np.broadcast_to(dofs[:, :, None], blocks.shape).reshape(-1).copy()
            cols = np.broadcast_to(dofs[:, None, :], blocks.shape).reshape(-1).copy()
            pattern = self._stiffness_pattern = (self.contact_nodes, ids, rows, cols)
        return pattern[2], pattern[3], blocks.reshape(-1)

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """Normal rows: signed distance at ``x_free`` minus contactDistance; tangential rows: ``t.(x_free -
        x)``."""
        n_nodes = self._n_nodes(x)
        x = check_positions(self.name, x, n_nodes)
        x_free = check_positions(self.name, x_free, n_nodes)
        if self.n_contacts == 0:
            return np.zeros(0)
        points = x_free[self.contact_nodes]
        gap = np.empty(self.n_contacts)
        for j, obstacle in enumerate(self.obstacles):
            mine = self.contact_obstacles == j
            if np.any(mine):
                gap[mine] = obstacle.distance_and_normal(points[mine])[0]
        gap -= self.contactDistance[self.contact_obstacles]
        _normals, tangents, bitangents = self.frames_at(x_free)
        return self._row_values(gap, (x_free - x)[self.contact_nodes] - self.slip_origin, tangents, bitangents)

    def law_jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """The derivative ``(n_rows, 3n)`` of the rows' laws (:meth:`violation`, measured from the frame's start
        :attr:`frame_start`) at positions ``x`` (n, 3): the normal rows' is the row itself (n is the gradient of
        the signed distance); a :meth:`following` friction contact's tangential law ``t(x) . (x - x_start)``
        has ``t + (dt/dx)^T (x - x_start)``, which differs from its force row ``t`` by the frame's turning.
        ValueError when the frame's start is not known (a constraint used outside a simulation)."""
        return self._rows_with_turning(x, np.flatnonzero(self.following() & (self.mu > 0.0)), self._turning)

    def _turning(self, x: np.ndarray, start: np.ndarray, turning: np.ndarray, first: np.ndarray):
        """The entries ``(dt/dx)^T (x - x_start)`` (and the bitangent's) of the contacts ``turning``
        (:meth:`ContactRows._rows_with_turning`)."""
        _hessian, d_t, d_s = self._frame_derivatives(turning, x)
        motion = (x - start)[self.contact_nodes[turning]] - self.slip_origin[turning]
        nodes = self.contact_nodes[turning]
        cols = (3 * nodes[:, None] + np.arange(3)[None, :]).reshape(-1)
        rows = np.concatenate([np.repeat(first + 1, 3), np.repeat(first + 2, 3)])
        values = np.concatenate([np.einsum("kij,ki->kj", d_t, motion).reshape(-1),
                                 np.einsum("kij,ki->kj", d_s, motion).reshape(-1)])
        return values, rows, np.concatenate([cols, cols])


