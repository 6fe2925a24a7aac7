"""Contacts of free rigid bodies (mechanics.rigid_body) with the obstacles and with each other, in dynamic mode.

The two sides of a contact are shapes: a rigid body's box or sphere at its pose, or a static obstacle (plane,
sphere, box, capsule; its ``shift`` applied). Contacts are found by *probes* of one side tested against the other
side's signed distance (mechanics.constraints.contact.Obstacle):

- a sphere's probe is its centre with its radius; a capsule's, its two ends with its radius; a box's, its 8
  corners (radius 0); a plane has none;
- when a side is a sphere, only its probe is tested against the other side (the distance of its centre to the
  other shape minus its radius is the exact gap: sphere-plane, sphere-sphere, sphere-box, sphere-capsule);
  otherwise both sides' probes are tested against the other (box-plane: the box's corners; box-box: each box's
  corners in the other, *vertex-in-box*; box-capsule: the box's corners and the capsule's end spheres). An edge
  of a box crossing an edge of another box, or a capsule's middle, makes no contact (no probe there).

A probe ``p`` (radius ``rho``) of side P against side Q gives a contact with the normal ``n`` (Q's outward
normal at ``p``, from Q towards P), the point ``q = p - rho n`` on P's surface and the gap ``dist_Q(p) - rho -
contactDistance``. Its rows are those of mechanics.constraints.contact (a normal row, and two friction rows in
SOFA's frame when mu > 0); the gap's rate is ``n . (v_P(q) - v_Q(q))`` with ``v(q) = v + w x (q - c)``, so a
rigid body on the P side has the rigid Jacobian ``+[d, (q - c_P) x d]`` per row direction ``d`` and one on the Q
side ``-[d, (q - c_Q) x d]``; an obstacle has none. The soft Jacobian is zero: these rows reach the soft bodies
only through the constraint solve they share (mechanics.dynamics._RigidBlock).

A pair is a contact when the probe is within ``alarmDistance`` at the step start or at the step's predicted pose
(``RigidBody.detection``); its normal, point, lever arms and gap are taken at the step start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.base import check_positions
from softsim.mechanics.constraints.contact import (
    BoxObstacle,
    CapsuleObstacle,
    ContactRows,
    Obstacle,
    PlaneObstacle,
    SphereObstacle,
)
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.rigid_body import RigidBody, RigidState

__all__ = ["RigidShapeContact", "box_corners"]

_SIGNS = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)])


def box_corners(center, half_extents, rotation=None) -> np.ndarray:
    """The 8 corners (8, 3) of a box of ``half_extents`` (3,) centred at ``center`` (3,), turned by
    ``rotation`` (3, 3, body to world; None: axis-aligned)."""
    local = _SIGNS * np.asarray(half_extents, dtype=np.float64)
    turned = local if rotation is None else local @ np.asarray(rotation, dtype=np.float64).T
    return turned + np.asarray(center, dtype=np.float64)


@dataclass(frozen=True)
class _Side:
    """One side of a contact pair: a rigid body (``index`` into the constraint's bodies) or an obstacle."""

    body: RigidBody | None = None
    index: int = -1
    obstacle: Obstacle | None = None

    @property
    def is_sphere(self) -> bool:
        shape = self.body.shape if self.body is not None else self.obstacle
        return isinstance(shape, SphereObstacle)

    def probes(self, pose: RigidState | None) -> tuple[np.ndarray, np.ndarray]:
        """Probe centres (k, 3) and radii (k,) in world coordinates at ``pose`` (rigid bodies)."""
        if self.body is not None:
            shape = self.body.shape
            if isinstance(shape, SphereObstacle):
                return pose.c[None, :].copy(), np.array([shape.radius])
            return box_corners(pose.c, shape.half_extents, pose.R), np.zeros(8)
        shape, shift = self.obstacle, self.obstacle.shift
        if isinstance(shape, SphereObstacle):
            return (shape.center + shift)[None, :], np.array([shape.radius])
        if isinstance(shape, CapsuleObstacle):
            return np.stack([shape.a + shift, shape.b + shift]), np.full(2, shape.radius)
        if isinstance(shape, BoxObstacle):
            return box_corners(shape.center + shift, shape.half_extents), np.zeros(8)
        return np.zeros((0, 3)), np.zeros(0)  # a plane

    def distance_and_normal(self, points: np.ndarray, pose: RigidState | None) -> tuple[np.ndarray, np.ndarray]:
        if self.body is not None:
            return self.body.distance_and_normal(points, pose)
        return self.obstacle.distance_and_normal(points)


class RigidShapeContact(ContactRows):
    """Contacts of the rigid body ``body`` with ``other`` (an obstacle, or a second rigid body), keeping
    ``contactDistance``, detected within ``alarmDistance`` (default 2 contactDistance), with Coulomb
    ``friction``.

    After :meth:`update`: per contact (c,) ``first`` and ``second`` (the side whose probe touched and the side
    touched: an index into :attr:`rigid_bodies`, or -1 for the obstacle), ``points`` (c, 3), ``normals`` (c, 3,
    from second towards first), ``gaps`` (c,) (at the step start, minus contactDistance). The dynamic solver
    reads :meth:`rigid_jacobian` ``(rows, 6 len(rigid_bodies))``; :meth:`jacobian` on the soft DOFs is zero.
    After :meth:`store`: ``contact_points`` and ``contact_forces`` (the force on the first side, (c, 3)) and
    :meth:`force_on`."""

    def __init__(self, body: RigidBody, other: RigidBody | Obstacle, *, contactDistance: float = 0.0,
                 alarmDistance: float | None = None, friction: float = 0.0, name: str | None = None) -> None:
        other_name = getattr(other, "name", type(other).__name__)
        super().__init__(name or f"{body.name}_{other_name}")
        if not isinstance(other, RigidBody | PlaneObstacle | SphereObstacle | BoxObstacle | CapsuleObstacle):
            raise ParameterError(f"{self.name}: the other side must be a rigid body or a plane, sphere, box or "
                                 f"capsule obstacle, got {type(other).__name__}")
        if other is body:
            raise ParameterError(f"{self.name}: a rigid body cannot touch itself")
        self.body, self.other = body, other
        self.rigid_bodies = (body, other) if isinstance(other, RigidBody) else (body,)
        self.friction = float(friction)
        if not (self.friction >= 0.0):
            raise ParameterError(f"{self.name}: friction must be >= 0, got {friction!r}")
        self.contactDistance = float(contactDistance)
        self.alarmDistance = 2.0 * self.contactDistance if alarmDistance is None else float(alarmDistance)
        if not (0.0 <= self.contactDistance <= self.alarmDistance):
            raise ParameterError(f"{self.name}: need 0 <= contactDistance <= alarmDistance, got "
                                 f"{self.contactDistance!r} and {self.alarmDistance!r}")
        self._init_rows()
        self._clear()

    # -- detection -------------------------------------------------------------------------------------
    def contact_keys(self) -> list:
        """(the touching side, the side touched) per contact (:attr:`first`, :attr:`second`)."""
        return list(zip(self.first.tolist(), self.second.tolist()))

    def _clear(self) -> None:
        self.first = np.zeros(0, dtype=np.int64)
        self.second = np.zeros(0, dtype=np.int64)
        self.points = np.zeros((0, 3))
        self.gaps = np.zeros(0)
        self._set_contacts(np.zeros((0, 3)), np.zeros(0))

    def update(self, x_free: np.ndarray) -> None:
        """Find the contacts (the soft positions ``x_free`` (n, 3) play no part) at the step start and at the
        bodies' predicted poses."""
        self._clear()
        if not self.active:
            return
        now = {id(b): b.state for b in self.rigid_bodies}
        ahead = {id(b): b.detection for b in self.rigid_bodies}
        a = _Side(body=self.body, index=0)
        b = _Side(body=self.other, index=1) if isinstance(self.other, RigidBody) else _Side(obstacle=self.other)
        if a.is_sphere:
            directions = [(a, b)]
        elif b.is_sphere:
            directions = [(b, a)]
        else:
            directions = [(a, b), (b, a)]
        first, second, points, normals, gaps = [], [], [], [], []
        for probe, touched in directions:
            found = self._probe(probe, touched, now, ahead)
            if found is None:
                continue
            q, n, gap = found
            first.append(np.full(gap.size, probe.index))
            second.append(np.full(gap.size, touched.index))
            points.append(q)
            normals.append(n)
            gaps.append(gap)
        if not gaps:
            return
        self.first, self.second = np.concatenate(first), np.concatenate(second)
        self.points, self.gaps = np.concatenate(points), np.concatenate(gaps)
        self._set_contacts(np.concatenate(normals), np.full(self.gaps.size, self.friction))

    def _probe(self, probe: _Side, touched: _Side, now: dict, ahead: dict):
        """The contacts of ``probe``'s probes against ``touched``: points on the probe's surface (k, 3), normals
        (k, 3) and gaps (k,) at the step start; None when no probe is within alarmDistance."""
        def pose(side: _Side, poses: dict):
            return None if side.body is None else poses[id(side.body)]

        centres, radii = probe.probes(pose(probe, now))
        if radii.size == 0:
            return None
        distance, normal = touched.distance_and_normal(centres, pose(touched, now))
        distance = distance - radii
        later_centres, _ = probe.probes(pose(probe, ahead))
        later = touched.distance_and_normal(later_centres, pose(touched, ahead))[0] - radii
        near = np.flatnonzero(np.minimum(distance, later) < self.alarmDistance)
        if near.size == 0:
            return None
        normal = normal[near]
        return centres[near] - radii[near, None] * normal, normal, distance[near] - self.contactDistance

    # -- rows ------------------------------------------------------------------------------------------
    @property
    def n_contacts(self) -> int:
        return int(self.gaps.size)

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Zero on the soft DOFs, ``(rows, 3 n)``."""
        return sp.csr_matrix((self.n_rows, np.asarray(x).size))

    def rigid_jacobian(self) -> np.ndarray:
        """``(rows, 6 len(rigid_bodies))``: ``+[d, r x d]`` on the first side's body, ``-[d, r x d]`` on the
        second's (``d`` the row's direction, ``r`` the contact point relative to that body's centre at the step
        start)."""
        keep = self._row_mask()
        directions = np.stack([self.normals, self.tangents, self.bitangents], axis=1)[keep]  # (rows, 3)
        points = np.broadcast_to(self.points[:, None, :], (*keep.shape, 3))[keep]
        J = np.zeros((directions.shape[0], 6 * len(self.rigid_bodies)))
        for side, sign in ((self.first, 1.0), (self.second, -1.0)):
            rows_side = np.broadcast_to(side[:, None], keep.shape)[keep]
            for i, body in enumerate(self.rigid_bodies):
                rows = np.flatnonzero(rows_side == i)
                if rows.size:
                    arms = points[rows] - body.state.c
                    J[rows, 6 * i:6 * i + 3] += sign * directions[rows]
                    J[rows, 6 * i + 3:6 * i + 6] += sign * np.cross(arms, directions[rows])
        return J

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """Normal rows: the gaps at the step start; tangential rows: 0 (no motion yet)."""
        return self._row_values(self.gaps, np.zeros((self.n_contacts, 3)))

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        """The contact points (at the step start) and the forces on the first side, ``f_n n + f_t t + f_s s``."""
        force = np.asarray(force, dtype=np.float64).reshape(-1)
        if force.size != self.n_rows:
            raise ParameterError(f"{self.name}: store expects {self.n_rows} multipliers, got {force.size}")
        check_positions(self.name, x_new, np.asarray(x_new).size // 3)
        per_contact = self._per_contact(force)
        self.contact_points = self.points.copy()
        self.contact_forces = (per_contact[:, :1] * self.normals + per_contact[:, 1:2] * self.tangents
                               + per_contact[:, 2:3] * self.bitangents)
        self._outputs = {"contacts": float(self.n_contacts), "normalForce": float(per_contact[:, 0].sum())}

    def force_on(self, body: RigidBody) -> np.ndarray:
        """The total force (3,) these contacts put on ``body`` as of the last :meth:`store`."""
        index = next((i for i, b in enumerate(self.rigid_bodies) if b is body), None)
        if index is None or self.contact_forces.shape[0] != self.n_contacts:
            return np.zeros(3)
        sign = (self.first == index).astype(float) - (self.second == index).astype(float)
        return sign @ self.contact_forces
