"""Contact between deformable bodies: SOFA's collision pipeline (broad phase, point-triangle proximity within
``alarmDistance``, frictional contact rows keeping ``contactDistance``) on the model's concatenated DOFs.

Detection (:meth:`BodyContactConstraint.update`, at the free configuration as SOFA does after the free motion):

- **broad phase** (numba, :func:`nearest_triangles`): per colliding pair of bodies (A, B), a uniform grid over
  the region where A's surface nodes and B's triangles overlap: each triangle is entered in the cells its box,
  grown by ``alarmDistance``, covers; each node examines the triangles of its own cell whose box holds it, so
  only nearby pairs are examined, never all of them; then the same with A and B swapped (self-collision uses
  k-d trees and leaves out the triangles around the node);
- **narrow phase**: the closest point q of each candidate triangle to the node p (Ericson's region test), its
  barycentric weights w, the distance |p - q| and the normal: the triangle's outward normal when q lies inside
  the triangle, else (p - q) / |p - q| signed by that normal. Each node keeps its nearest triangle of each
  other body; it is a contact when that distance, at the free configuration or else at the last corrected
  positions (:meth:`remember`), is below ``alarmDistance``.

Rows (SOFA's ``BaseContactLagrangianConstraint`` with the triangle as object 1 and the node as object 2): the
normal row is ``+n`` on the node and ``-w_i n`` on the triangle's nodes, ``dfree_n = (p_free - q_free).n -
contactDistance`` with q = sum w_i x_i; with friction two more rows along SOFA's tangent frame measure the
relative tangential motion since the last frame. The rows of one contact sum to zero over the nodes: contact
forces are internal, the total momentum is kept. Resolutions: BOUNDED(0, [0, inf)) without friction,
FRICTION(mu) with it, as for the obstacles.

Where softsim departs from SOFA: only point-triangle proximity (no edge-edge pairs; surfaces that cross with
every node outside the other body are not detected), and self-collision ignores the triangles around the node
(its one-ring and theirs) and every triangle it is closer to than ``alarmDistance`` at rest (across a thin wall
or a corner of the body: the material keeps them apart), so that self-contact at rest is a no-op.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.spatial import cKDTree

from softsim.mechanics.constraints.base import check_positions
from softsim.mechanics.constraints.contact import ContactRows, friction_frame_derivatives, friction_frames
from softsim.mechanics.constraints.triangle_distance import plane_gap, plane_gap_hessian
from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["BodyContactConstraint", "ContactSurface", "closest_points_on_triangles"]


@dataclass
class ContactSurface:
    """One body's surface on the model's DOFs: ``triangles (t, 3)`` global node ids, outward oriented;
    ``nodes (k,)`` the surface nodes that can touch (free ones); ``name`` the body's."""

    name: str
    triangles: np.ndarray
    nodes: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _closest_weights(p, a, b, c):
    """Barycentric weights (u, v, w) of the point of the triangle (a, b, c) closest to p, and whether it lies
    inside the triangle (not on an edge or a corner). Ericson, Real-Time Collision Detection, 5.1.5."""
    ab0, ab1, ab2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    ac0, ac1, ac2 = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    ap0, ap1, ap2 = p[0] - a[0], p[1] - a[1], p[2] - a[2]
    d1 = ab0 * ap0 + ab1 * ap1 + ab2 * ap2
    d2 = ac0 * ap0 + ac1 * ap1 + ac2 * ap2
    bp0, bp1, bp2 = p[0] - b[0], p[1] - b[1], p[2] - b[2]
    d3 = ab0 * bp0 + ab1 * bp1 + ab2 * bp2
    d4 = ac0 * bp0 + ac1 * bp1 + ac2 * bp2
    cp0, cp1, cp2 = p[0] - c[0], p[1] - c[1], p[2] - c[2]
    d5 = ab0 * cp0 + ab1 * cp1 + ab2 * cp2
    d6 = ac0 * cp0 + ac1 * cp1 + ac2 * cp2
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0, False
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0, False
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return 1.0 - t, t, 0.0, False
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0, False
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return 1.0 - t, 0.0, t, False
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t, False
    denominator = 1.0 / (va + vb + vc)
    v, w = vb * denominator, vc * denominator
    return 1.0 - v - w, v, w, True


@njit(cache=True, nogil=True)
def _closest_points(x, points, triangles, pair_point, pair_triangle, distance, weights, normal, gap):
    """For each candidate (node pair_point[k], triangle pair_triangle[k]) at positions x: the distance of the
    node to the triangle, the closest point's barycentric weights (k, 3), the contact normal (k, 3) and the
    signed gap (distance along the normal; negative inside)."""
    for k in range(pair_point.shape[0]):
        p = x[points[pair_point[k]]]
        a = x[triangles[pair_triangle[k], 0]]
        b = x[triangles[pair_triangle[k], 1]]
        c = x[triangles[pair_triangle[k], 2]]
        ab0, ab1, ab2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
        ac0, ac1, ac2 = c[0] - a[0], c[1] - a[1], c[2] - a[2]
        n0, n1, n2 = ab1 * ac2 - ab2 * ac1, ab2 * ac0 - ab0 * ac2, ab0 * ac1 - ab1 * ac0
        area = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if area > 0.0:
            n0, n1, n2 = n0 / area, n1 / area, n2 / area
        u, v, w, inside = _closest_weights(p, a, b, c)
        e0 = p[0] - (u * a[0] + v * b[0] + w * c[0])
        e1 = p[1] - (u * a[1] + v * b[1] + w * c[1])
        e2 = p[2] - (u * a[2] + v * b[2] + w * c[2])
        length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        side = e0 * n0 + e1 * n1 + e2 * n2
        distance[k] = length
        weights[k, 0], weights[k, 1], weights[k, 2] = u, v, w
        if inside or length <= 1e-12 * (area + 1e-300) ** 0.5:
            normal[k, 0], normal[k, 1], normal[k, 2] = n0, n1, n2
            gap[k] = side
        else:
            sign = 1.0 if side >= 0.0 else -1.0
            normal[k, 0], normal[k, 1], normal[k, 2] = sign * e0 / length, sign * e1 / length, sign * e2 / length
            gap[k] = sign * length


@njit(cache=True, nogil=True)
def _triangle_bounds(x, triangles, low, high):
    """Axis-aligned bounds (t, 3) of each triangle at positions x (one pass, no temporaries)."""
    for t in range(triangles.shape[0]):
        for d in range(3):
            a, b, c = x[triangles[t, 0], d], x[triangles[t, 1], d], x[triangles[t, 2], d]
            low[t, d] = min(a, min(b, c))
            high[t, d] = max(a, max(b, c))


@njit(cache=True, nogil=True)
def _in_bounding_box(x, vertices, nodes, free, inside):
    """``inside[i]``: whether node ``nodes[free[i]]`` lies in the axis-aligned bounding box of ``x[vertices]``
    (x (n, 3); vertices, nodes, free int arrays; inside (len(free),) bool), without temporaries."""
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for v in vertices:
        lo0, hi0 = min(lo0, x[v, 0]), max(hi0, x[v, 0])
        lo1, hi1 = min(lo1, x[v, 1]), max(hi1, x[v, 1])
        lo2, hi2 = min(lo2, x[v, 2]), max(hi2, x[v, 2])
    for i in range(free.size):
        p = nodes[free[i]]
        inside[i] = (lo0 <= x[p, 0] <= hi0) and (lo1 <= x[p, 1] <= hi1) and (lo2 <= x[p, 2] <= hi2)


@njit(cache=True, nogil=True)
def _point_triangle_distance(p, a, b, c):
    """Distance from p to the triangle (a, b, c)."""
    u, v, w, _inside = _closest_weights(p, a, b, c)
    e0 = p[0] - (u * a[0] + v * b[0] + w * c[0])
    e1 = p[1] - (u * a[1] + v * b[1] + w * c[1])
    e2 = p[2] - (u * a[2] + v * b[2] + w * c[2])
    return np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)


@njit(cache=True, nogil=True)
def _nearest_triangles(x, nodes, triangles, reach, best_triangle, best_distance):
    """Each node's nearest triangle within ``reach`` (``best_triangle`` -1 when none), through a uniform grid:
    every triangle is entered in the cells its box (grown by ``reach``) covers, inside the region where the
    nodes and the triangles overlap; a node examines the triangles of its own cell whose box holds it."""
    n_triangles, n_nodes = triangles.shape[0], nodes.shape[0]
    for i in range(n_nodes):
        best_triangle[i] = -1
        best_distance[i] = np.inf
    if n_triangles == 0 or n_nodes == 0:
        return
    low, high = np.empty((n_triangles, 3)), np.empty((n_triangles, 3))
    region_low, region_high = np.full(3, np.inf), np.full(3, -np.inf)
    node_low, node_high = np.full(3, np.inf), np.full(3, -np.inf)
    extent = 0.0
    for t in range(n_triangles):
        largest = 0.0
        for d in range(3):
            a, b, c = x[triangles[t, 0], d], x[triangles[t, 1], d], x[triangles[t, 2], d]
            low[t, d] = min(a, min(b, c)) - reach
            high[t, d] = max(a, max(b, c)) + reach
            region_low[d] = min(region_low[d], low[t, d])
            region_high[d] = max(region_high[d], high[t, d])
            largest = max(largest, high[t, d] - low[t, d])
        extent += largest
    for i in range(n_nodes):
        for d in range(3):
            node_low[d] = min(node_low[d], x[nodes[i], d])
            node_high[d] = max(node_high[d], x[nodes[i], d])
    for d in range(3):
        region_low[d] = max(region_low[d], node_low[d])
        region_high[d] = min(region_high[d], node_high[d])
        if region_low[d] > region_high[d]:
            return
    cell = max(extent / n_triangles, 1e-300)
    dims = np.empty(3, dtype=np.int64)
    while True:
        for d in range(3):
            dims[d] = int((region_high[d] - region_low[d]) / cell) + 1
        if dims[0] * dims[1] * dims[2] <= 8 * (n_triangles + n_nodes):
            break
        cell *= 1.5
    # the cells' triangles by a counting sort: starts[c] .. starts[c + 1] are cell c's entries
    n_cells = dims[0] * dims[1] * dims[2]
    starts = np.zeros(n_cells + 1, dtype=np.int64)
    lo_cell, hi_cell = np.empty((n_triangles, 3), dtype=np.int64), np.empty((n_triangles, 3), dtype=np.int64)
    for t in range(n_triangles):
        empty = False
        for d in range(3):
            lo_cell[t, d] = max(0, int(np.floor((low[t, d] - region_low[d]) / cell)))
            hi_cell[t, d] = min(dims[d] - 1, int(np.floor((high[t, d] - region_low[d]) / cell)))
            empty = empty or hi_cell[t, d] < lo_cell[t, d]
        if empty:
            hi_cell[t, 0] = lo_cell[t, 0] - 1
            continue
        for i0 in range(lo_cell[t, 0], hi_cell[t, 0] + 1):
            for i1 in range(lo_cell[t, 1], hi_cell[t, 1] + 1):
                for i2 in range(lo_cell[t, 2], hi_cell[t, 2] + 1):
                    starts[(i0 * dims[1] + i1) * dims[2] + i2 + 1] += 1
    for c in range(n_cells):
        starts[c + 1] += starts[c]
    entries = np.empty(starts[n_cells], dtype=np.int64)
    filled = starts[:n_cells].copy()
    for t in range(n_triangles):
        for i0 in range(lo_cell[t, 0], hi_cell[t, 0] + 1):
            for i1 in range(lo_cell[t, 1], hi_cell[t, 1] + 1):
                for i2 in range(lo_cell[t, 2], hi_cell[t, 2] + 1):
                    key = (i0 * dims[1] + i1) * dims[2] + i2
                    entries[filled[key]] = t
                    filled[key] += 1
    for i in range(n_nodes):
        p = x[nodes[i]]
        outside = False
        key = 0
        for d in range(3):
            if p[d] < region_low[d] or p[d] > region_high[d]:
                outside = True
                break
            key = key * dims[d] + min(dims[d] - 1, int((p[d] - region_low[d]) / cell))
        if outside:
            continue
        for e in range(starts[key], starts[key + 1]):
            t = entries[e]
            if (p[0] < low[t, 0] or p[0] > high[t, 0] or p[1] < low[t, 1] or p[1] > high[t, 1]
                    or p[2] < low[t, 2] or p[2] > high[t, 2]):
                continue
            distance = _point_triangle_distance(p, x[triangles[t, 0]], x[triangles[t, 1]], x[triangles[t, 2]])
            if distance < best_distance[i]:
                best_distance[i] = distance
                best_triangle[i] = t
    for i in range(n_nodes):
        if best_distance[i] >= reach:
            best_triangle[i] = -1


def nearest_triangles(x: np.ndarray, nodes: np.ndarray, triangles: np.ndarray, reach: float):
    """Per node ``(k,)``: the index of its nearest triangle within ``reach`` (-1: none) and that distance."""
    best_triangle, best_distance = np.empty(nodes.size, dtype=np.int64), np.empty(nodes.size)
    _nearest_triangles(np.ascontiguousarray(x, dtype=np.float64), nodes.astype(np.int64),
                       np.ascontiguousarray(triangles, dtype=np.int64), float(reach), best_triangle, best_distance)
    return best_triangle, best_distance


def closest_points_on_triangles(x: np.ndarray, points: np.ndarray, triangles: np.ndarray, pair_point: np.ndarray,
                                pair_triangle: np.ndarray):
    """The narrow phase for candidate pairs: ``(distance (k,), weights (k, 3), normal (k, 3), gap (k,))`` of the
    nodes ``points[pair_point]`` to the triangles ``triangles[pair_triangle]`` at positions ``x (n, 3)``."""
    k = pair_point.size
    distance, gap = np.empty(k), np.empty(k)
    weights, normal = np.empty((k, 3)), np.empty((k, 3))
    if k:
        _closest_points(np.ascontiguousarray(x, dtype=np.float64), points.astype(np.int64),
                        np.ascontiguousarray(triangles, dtype=np.int64), pair_point.astype(np.int64),
                        pair_triangle.astype(np.int64), distance, weights, normal, gap)
    return distance, weights, normal, gap


#: a node through another body's surface whose contact rows all see it farther out than its nearest triangle by
#: more than this fraction of alarmDistance slid past its triangle's edge onto another face: it gets a row there
STALE_ROW_MARGIN = 1e-3
#: a contact whose node lies more than this fraction of alarmDistance beside its triangle (past an edge, measured
#: in the triangle's plane) moves on to the triangle now nearest to the node (:meth:`BodyContactConstraint.
#: follow_surface`); the margin keeps a node sliding along an edge from moving to and fro
FOLLOW_MARGIN = 1.0
#: distances within this fraction of alarmDistance count as equally near (:meth:`BodyContactConstraint.
#: follow_surface`)
TIE_FRACTION = 1e-9
#: a contact does not move onto a triangle whose normal is this close to that of another row of its node
PARALLEL_ROWS = 0.9


class BodyContactConstraint(ContactRows):
    """Frictional contacts between the surfaces of several bodies on the model's concatenated DOFs.

    Args:
        surfaces: one :class:`ContactSurface` per body.
        pairs: ``(a, b, mu)`` per colliding pair of surface indices (a == b: self-collision).
        contactDistance: the gap kept (>= 0); alarmDistance: the detection distance (>= contactDistance).
        n_nodes: the model's node count.

    After :meth:`update`: ``contact_nodes (c,)``, ``contact_triangles (c, 3)`` (node ids), ``weights (c, 3)``,
    ``normals``, ``tangents``, ``bitangents`` (c, 3), ``gaps (c,)``, ``mu (c,)``. After :meth:`store`:
    ``contact_points`` and ``contact_forces`` (c, 3) (the force on each contact's node).
    """

    def __init__(self, surfaces: list[ContactSurface], pairs: list[tuple[int, int, float]], *,
                 contactDistance: float = 0.0, alarmDistance: float | None = None, n_nodes: int,
                 name: str = "collision", rest_positions: np.ndarray | None = None) -> None:
        super().__init__(name)
        self.surfaces = surfaces
        self.pairs = [(int(a), int(b), float(mu)) for a, b, mu in pairs]
        for a, b, mu in self.pairs:
            if not (0 <= a < len(surfaces) and 0 <= b < len(surfaces)) or mu < 0.0:
                raise ParameterError(f"{name}: a pair needs two surface indices and mu >= 0, got {(a, b, mu)}")
        self.contactDistance = float(contactDistance)
        self.alarmDistance = 2.0 * self.contactDistance if alarmDistance is None else float(alarmDistance)
        if self.contactDistance < 0.0 or self.alarmDistance < self.contactDistance or self.alarmDistance <= 0.0:
            raise ParameterError(f"{name}: need 0 <= contactDistance <= alarmDistance and alarmDistance > 0, got "
                                 f"{self.contactDistance} and {self.alarmDistance}")
        self.n_nodes = int(n_nodes)
        self._rings = {a: _ring_triangles(surfaces[a].triangles) for a, b, _mu in self.pairs if a == b}
        self._vertices = [np.unique(surface.triangles) for surface in surfaces]  # each surface's corners
        self._rest = None if rest_positions is None else check_positions(name, rest_positions, self.n_nodes).copy()
        self._near_at_rest: dict[int, np.ndarray] = {}
        self._near_reach = None
        self._init_rows()
        self._clear()

    def _rest_neighbours(self, surface: int, x: np.ndarray) -> np.ndarray:
        """Self-collision of ``surface``: the (node, triangle) pairs closer than alarmDistance at rest, as sorted
        keys ``node index * 2**32 + triangle index``. They are never contacts: the material between them keeps
        them apart (a thin wall, a corner of the body), so self-contact at rest is a no-op. The rest positions
        are ``rest_positions`` when given, else the first positions seen."""
        if self._rest is None:
            self._rest = np.array(x, dtype=np.float64)
        if self._near_reach != self.alarmDistance:
            self._near_at_rest, self._near_reach = {}, self.alarmDistance
        near = self._near_at_rest.get(surface)
        if near is None:
            point, triangle = self._candidates(self._rest, surface, surface)
            nodes, triangles = self.surfaces[surface].nodes, self.surfaces[surface].triangles
            distance = closest_points_on_triangles(self._rest, nodes, triangles, point, triangle)[0]
            close = distance < self.alarmDistance
            near = np.unique(point[close] * (1 << 32) + triangle[close])
            self._near_at_rest[surface] = near
        return near

    def _clear(self) -> None:
        self.contact_nodes = np.zeros(0, dtype=np.int64)
        self.contact_triangles = np.zeros((0, 3), dtype=np.int64)
        self.contact_surface = np.zeros(0, dtype=np.int64)  # (c,): the surface the contact's triangle is on
        self.weights = np.zeros((0, 3))
        self.gaps = np.zeros(0)
        self._set_contacts(np.zeros((0, 3)), np.zeros(0))

    # ------------------------------------------------------------------ detection
    def _candidates(self, x: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Broad phase: (node index into surface a's nodes, triangle index into surface b's) pairs. The nodes of a
        outside b's bounding box (grown by alarmDistance) and b's triangles outside the box of the remaining
        nodes are left out first, then two k-d trees pair what is left."""
        nodes, triangles = self.surfaces[a].nodes, self.surfaces[b].triangles
        empty = np.zeros(0, dtype=np.int64)
        if nodes.size == 0 or triangles.size == 0:
            return empty, empty
        low, high = np.empty((triangles.shape[0], 3)), np.empty((triangles.shape[0], 3))
        _triangle_bounds(x, triangles, low, high)
        reach = self.alarmDistance
        points = x[nodes]
        near_box = np.all((points >= low.min(axis=0) - reach) & (points <= high.max(axis=0) + reach), axis=1)
        node_index = np.flatnonzero(near_box)
        if node_index.size == 0:
            return empty, empty
        box_low, box_high = points[node_index].min(axis=0) - reach, points[node_index].max(axis=0) + reach
        triangle_index = np.flatnonzero(np.all((high >= box_low) & (low <= box_high), axis=1))
        if triangle_index.size == 0:
            return empty, empty
        kept = x[triangles[triangle_index]]
        centroids = kept.mean(axis=1)
        radius = float(np.sqrt(((kept - centroids[:, None, :]) ** 2).sum(axis=2)).max())
        near = cKDTree(points[node_index]).sparse_distance_matrix(cKDTree(centroids), radius + reach,
                                                                  output_type="ndarray")
        return node_index[near["i"]], triangle_index[near["j"]]

    def _detect(self, x: np.ndarray, last: np.ndarray | None):
        """Per pair and direction, each node's nearest triangle of the other surface within alarmDistance (at
        ``x`` or at ``last``), with its geometry at ``x``: a tuple of (k,) or (k, 3) arrays (node ids, triangles'
        node ids, weights, normals, gaps, mu, then the nodes' indices into the first surface's nodes and the
        triangles' indices into the second surface's triangles, and the second surface's index)."""
        found = []
        for a, b, mu in self.pairs:
            for first, second in ((a, b), (b, a)) if a != b else ((a, a),):
                if first != second:
                    found.append(self._nearest(x, last, first, second, mu))
                    continue
                point, triangle = self._candidates(x, first, second)
                if last is not None:
                    old_point, old_triangle = self._candidates(last, first, second)
                    keys = np.unique(np.concatenate([point, old_point]) * (1 << 32)
                                     + np.concatenate([triangle, old_triangle]))
                    point, triangle = keys >> 32, keys & ((1 << 32) - 1)
                nodes, triangles = self.surfaces[first].nodes, self.surfaces[second].triangles
                if first == second and point.size:  # self-collision: not the triangles around the node ...
                    ring = self._rings[first]
                    keep = np.array([t not in ring.get(int(nodes[p]), ()) for p, t in zip(point, triangle)],
                                    dtype=bool)
                    # ... nor those it is near at rest
                    keep &= ~np.isin(point * (1 << 32) + triangle, self._rest_neighbours(first, x))
                    point, triangle = point[keep], triangle[keep]
                distance, weights, normal, gap = closest_points_on_triangles(x, nodes, triangles, point, triangle)
                reach = distance
                if last is not None:
                    reach = np.minimum(distance, closest_points_on_triangles(last, nodes, triangles, point,
                                                                             triangle)[0])
                close = reach < self.alarmDistance
                point, triangle, distance = point[close], triangle[close], distance[close]
                weights, normal, gap = weights[close], normal[close], gap[close]
                # each node: its nearest triangle of this surface
                order = np.lexsort((distance, point))
                first_of_node = order[np.r_[True, point[order][1:] != point[order][:-1]]] if order.size else order
                point, triangle = point[first_of_node], triangle[first_of_node]
                found.append((nodes[point], triangles[triangle], weights[first_of_node], normal[first_of_node],
                              gap[first_of_node], np.full(first_of_node.size, mu), point, triangle,
                              np.full(point.size, second)))
        return found

    def _nearest(self, x: np.ndarray, last: np.ndarray | None, first: int, second: int, mu: float):
        """The contacts of surface ``first``'s nodes with surface ``second``'s triangles: each node's nearest
        triangle within alarmDistance at ``x``, or else at ``last``, with its geometry at ``x``."""
        nodes, triangles = self.surfaces[first].nodes, self.surfaces[second].triangles
        best, _distance = nearest_triangles(x, nodes, triangles, self.alarmDistance)
        if last is not None:
            before, _distance = nearest_triangles(last, nodes, triangles, self.alarmDistance)
            best = np.where(best >= 0, best, before)
        best = _inside_nodes(x, nodes, triangles, best, self._vertices[second])
        if last is not None:
            best = _inside_nodes(last, nodes, triangles, best, self._vertices[second])
        point = np.flatnonzero(best >= 0)
        triangle = best[point]
        _distance, weights, normal, gap = closest_points_on_triangles(x, nodes, triangles, point, triangle)
        return (nodes[point], triangles[triangle], weights, normal, gap, np.full(point.size, mu), point, triangle,
                np.full(point.size, second))

    def update(self, x_free: np.ndarray) -> None:
        """Rebuild the contact set at ``x_free`` (n, 3) (and at the last corrected positions, see
        :meth:`remember`)."""
        x_free = check_positions(self.name, x_free, self.n_nodes)
        self._clear()
        if not self.active or not self.pairs:
            return
        last = self.last_positions if self.last_positions is not None and \
            self.last_positions.shape == x_free.shape else None
        found = [f for f in self._detect(x_free, last) if f[0].size]
        if not found:
            return
        self.contact_nodes, self.contact_triangles, self.weights, normals, self.gaps, mu, self.contact_surface = (
            np.concatenate(parts) for parts in zip(*(f[:6] + f[8:9] for f in found)))
        self._set_contacts(normals, mu)
        logger.debug("%s: %d contacts", self.name, self.contact_nodes.size)

    def store(self, force: np.ndarray, x_new: np.ndarray) -> None:
        """:meth:`ContactRows.store`, and the contacts whose normal row pushes (multiplier > 0) kept as
        :attr:`held` (their nodes, triangles and the triangles' surfaces) for :meth:`keep_held`."""
        super().store(force, x_new)
        pushing = self._per_contact(force)[:, 0] > 0.0
        self.held = (self.contact_nodes[pushing], self.contact_triangles[pushing], self.contact_surface[pushing])

    def keep_held(self, x: np.ndarray) -> int:
        """A static frame that starts from the last frame's equilibrium ``x`` (n, 3) with nothing edited since
        (the frame step decides: ``keep_contacts``) keeps the contacts that pushed there (:attr:`held`), in place
        of the row the detection found for the same node against the same surface (its nearest triangle, which
        can be another one: the frame's rows follow the nodes from the triangle each was found on). Without them
        the same frame solved again could end elsewhere, and the next one back: finger_block at 20 mm of cable
        flipped between two states 0.86 mm apart for ever. A contact whose node is now farther than
        alarmDistance from the other body's surface is not kept (its row held the node past its triangle:
        :meth:`detached`). Returns the number of contacts kept."""
        held = getattr(self, "held", None)
        if held is None or held[0].size == 0 or not self.active:
            return 0
        x = check_positions(self.name, x, self.n_nodes)
        nodes, triangles, surfaces = held
        near = self._surface_distances(x, nodes, surfaces) <= self.alarmDistance
        nodes, triangles, surfaces = nodes[near], triangles[near], surfaces[near]
        if nodes.size == 0:
            return 0
        mu = self._pair_friction(nodes, surfaces)
        held_keys = set(zip(nodes.tolist(), surfaces.tolist()))
        keep = np.array([(node, surface) not in held_keys for node, surface in
                         zip(self.contact_nodes.tolist(), self.contact_surface.tolist())], dtype=bool)
        weights, normals, gaps = plane_gap(x[nodes], x[triangles])
        self.contact_nodes = np.concatenate([self.contact_nodes[keep], nodes])
        self.contact_triangles = np.concatenate([self.contact_triangles[keep], triangles])
        self.contact_surface = np.concatenate([self.contact_surface[keep], surfaces])
        self.weights = np.concatenate([self.weights[keep], weights])
        self.gaps = np.concatenate([self.gaps[keep], gaps])
        self._set_contacts(np.concatenate([self.normals[keep], normals]), np.concatenate([self.mu[keep], mu]),
                           np.concatenate([self.slip_origin[keep], np.zeros((nodes.size, 3))]))
        return int(nodes.size)

    def _surface_distances(self, x: np.ndarray, nodes: np.ndarray, surfaces: np.ndarray) -> np.ndarray:
        """(k,) the distance at ``x`` (n, 3) of each node ``nodes`` (k,) to the whole surface ``surfaces`` (k,)
        (an index into :attr:`surfaces`), at any distance (:func:`nearest_triangle_anywhere`)."""
        distance = np.zeros(nodes.size)
        for surface in np.unique(surfaces):
            ids = np.flatnonzero(surfaces == surface)
            distance[ids] = nearest_triangle_anywhere(x, nodes[ids], self.surfaces[surface].triangles)[1]
        return distance

    def _pair_friction(self, nodes: np.ndarray, surfaces: np.ndarray) -> np.ndarray:
        """(k,) the friction coefficient of the pair of surfaces each node ``nodes`` (k,) and the surface
        ``surfaces`` (k,) of its triangle make (the scene's value now: an edit may have changed it)."""
        own = {}
        for index, surface in enumerate(self.surfaces):
            own.update(dict.fromkeys(surface.nodes.tolist(), index))
        friction = {frozenset((a, b)): mu for a, b, mu in self.pairs}
        return np.array([friction.get(frozenset((own.get(node, surface), surface)), 0.0)
                         for node, surface in zip(nodes.tolist(), surfaces.tolist())])

    def contact_keys(self) -> list:
        """(node, its triangle's three nodes) per contact."""
        return [(node, tuple(triangle)) for node, triangle in zip(self.contact_nodes.tolist(),
                                                                  self.contact_triangles.tolist())]

    def missed_contacts(self, x: np.ndarray, tolerance: float = 1e-9) -> int:
        """Number of surface nodes at ``x`` (n, 3) that their contact rows do not hold (the frame step then
        gives them rows and solves again): nodes closer than contactDistance - tolerance to another body's
        surface with no row, and nodes through the other surface (gap < -tolerance) with no row against the
        triangle they are nearest (a node that slid past its triangle's edge onto another face)."""
        return sum(int(found[0].size) for found, _stale in self._missed(x, tolerance))

    def _missed(self, x: np.ndarray, tolerance: float) -> list:
        """Per detection direction: (the rows found at ``x`` (n, 3) that :meth:`missed_contacts` counts, as a
        tuple of arrays like :meth:`_detect`'s, and (k,) bool: which of them are nodes that have rows)."""
        if not self.active or not self.pairs:
            return []
        x = check_positions(self.name, x, self.n_nodes)
        row_gaps = None  # the rows' gaps at x, taken once a node through the surface has rows (rarely)
        # a row against a triangle in the plane of the one the node is nearest (a flat face's next triangle) holds
        # it as well: only a row that sees the node this much farther out than the nearest triangle does not
        margin = STALE_ROW_MARGIN * self.alarmDistance
        missed = []
        for found in self._detect(x, None):
            nodes, gap = found[0], found[4]
            has_rows = np.isin(nodes, self.contact_nodes)
            new = (gap < self.contactDistance - tolerance) & ~has_rows
            for i in np.flatnonzero((gap < -tolerance) & has_rows):  # few: nodes through the surface
                if row_gaps is None:
                    row_gaps = self._geometry(x, np.arange(self.n_contacts))[2]
                own = self.contact_nodes == nodes[i]
                # not when a row of the node already holds it against that triangle (beside it, the node is
                # nearest to its edge, deeper than the row's plane sees it)
                new[i] = bool(np.all(row_gaps[own] > gap[i] + margin)) and not bool(
                    np.any(np.all(self.contact_triangles[own] == found[1][i], axis=1)))
            missed.append((tuple(values[new] for values in found), has_rows[new]))
        return missed

    def add_missed_contacts(self, x: np.ndarray, at: np.ndarray | None = None, tolerance: float = 1e-9) -> int:
        """Give the nodes :meth:`missed_contacts` counts at ``x`` (n, 3) rows, appended after the existing
        contacts, whose rows keep their order (their multipliers stay valid). A node with no row is paired with
        its nearest triangle of the other surface at the positions ``at`` (n, 3; default ``x``), at any
        distance: the equilibrium steps pass the state just before a step's first touch, where the node is
        still outside and its nearest triangle is the face it moves onto (after a deep step the nearest one
        at ``x`` could be a far face). A node that slid onto another face keeps its rows and gets one more,
        against that face. Returns the number of contacts added."""
        if not self.active or not self.pairs:
            return 0
        x = check_positions(self.name, x, self.n_nodes)
        touched = at is not None  # the tangential rows measure the motion from ``at`` (see slip_origin)
        at = x if at is None else check_positions(self.name, at, self.n_nodes)
        directions = [(first, second, mu) for a, b, mu in self.pairs
                      for first, second in (((a, b), (b, a)) if a != b else ((a, a),))]
        parts = []
        for (first, second, mu), (found, stale) in zip(directions, self._missed(x, tolerance)):
            if found[0].size == 0:
                continue
            surface_nodes, triangles = self.surfaces[first].nodes, self.surfaces[second].triangles
            point, triangle = found[6], found[7]  # indices into the surfaces' nodes and triangles
            moving = np.flatnonzero(~stale)
            if first != second and at is not x and moving.size:  # the face each node without a row moves onto
                candidates = np.repeat(point[moving], triangles.shape[0])
                every = np.tile(np.arange(triangles.shape[0]), moving.size)
                distance = closest_points_on_triangles(at, surface_nodes, triangles, candidates, every)[0]
                triangle[moving] = np.argmin(distance.reshape(-1, triangles.shape[0]), axis=1)
            _distance, weights, normal, gap = closest_points_on_triangles(at, surface_nodes, triangles, point,
                                                                          triangle)
            parts.append((surface_nodes[point], triangles[triangle], weights, normal, gap, np.full(point.size, mu),
                          np.full(point.size, second)))
        if not parts:
            return 0
        nodes, triangles, weights, normals, gaps, mu, surfaces = (np.concatenate(values) for values in zip(*parts))
        start = self.frame_start
        if touched and start is not None and start.shape == at.shape:  # see slip_origin
            origin = _relative_motion(at - start, nodes, triangles, weights)
        else:
            origin = np.zeros((nodes.size, 3))
        self.contact_nodes = np.concatenate([self.contact_nodes, nodes])
        self.contact_triangles = np.concatenate([self.contact_triangles, triangles])
        self.contact_surface = np.concatenate([self.contact_surface, surfaces])
        self.weights = np.concatenate([self.weights, weights])
        self.gaps = np.concatenate([self.gaps, gaps])
        self._set_contacts(np.concatenate([self.normals, normals]), np.concatenate([self.mu, mu]),
                           np.concatenate([self.slip_origin, origin]))
        return int(nodes.size)

    def detached(self, x: np.ndarray, force: np.ndarray) -> tuple[int, float]:
        """The contacts whose normal row pushes (multiplier ``force`` (n_rows,) > 0, its node within alarmDistance
        of contactDistance from its triangle's plane) a node that is farther than alarmDistance from the whole
        other surface at ``x`` (n, 3): (how many, the largest such distance). A row
        measures its node against the plane of the triangle it was found on; when the node slides past that
        triangle (a finger rolling along a block's face that bends), the plane holds it where the surface is not,
        and the equilibrium is the contact problem's but not the bodies' (the frame's message says so)."""
        if self.n_contacts == 0:
            return 0, 0.0
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        gaps = self._geometry(x, np.arange(self.n_contacts))[2]
        # a row holds its node at its plane (a direct solve leaves 1e-17 mN on rows whose nodes are millimetres off)
        pushing = np.flatnonzero((self._per_contact(force)[:, 0] > 0.0)
                                 & (gaps - self.contactDistance < self.alarmDistance))
        distance = self._surface_distances(x, self.contact_nodes[pushing], self.contact_surface[pushing])
        far = distance > self.alarmDistance
        return int(far.sum()), float(distance[far].max(initial=0.0))

    def follow_surface(self, x: np.ndarray, force: np.ndarray | None = None) -> int:
        """Move each contact (with ``force``, the rows' multipliers (n_rows,): each one that pushes)
        whose node at ``x`` (n, 3) has slid past its triangle, more than
        :data:`FOLLOW_MARGIN` x alarmDistance beside it, onto the triangle of the same surface now nearest to the
        node (of equally near ones, :data:`TIE_FRACTION`, the one whose plane sees it farthest out), when that
        triangle's plane sees the node farther out (a convex edge: the old plane, extended past its edge, holds the
        node where the surface bends away; past a sharp edge the node is as near the next face as its own, and that
        face lets it go; at a concave fold the node goes through the next face and gets a second row there,
        :meth:`add_missed_contacts`). The row keeps its place, so its multiplier stays valid. A contact does not
        move onto a plane nearly parallel to another row of its node (:data:`PARALLEL_ROWS`).

        A friction contact's tangential rows measure the relative motion of its node and its triangle's point
        since the frame's start (:meth:`_motion`): its :attr:`slip_origin` takes the difference the new triangle
        makes, so that the motion measured at ``x`` stays what it was. The equilibrium steps move only rows that
        push: moving every row past its triangle, also those that hold nothing, made 3 of 24 typed frames fail
        at their first 1/256 (rows moved at far states). Returns the number of contacts moved."""
        if self.n_contacts == 0 or not self.active:
            return 0
        x = check_positions(self.name, x, self.n_nodes)
        ids = np.arange(self.n_contacts)
        distance = closest_points_on_triangles(x, self.contact_nodes, self.contact_triangles, ids, ids)[0]
        weights_now, normals, gaps = self._geometry(x, ids)
        beside = np.sqrt(np.maximum(distance ** 2 - gaps ** 2, 0.0))
        past = beside > FOLLOW_MARGIN * self.alarmDistance
        if force is not None:
            past &= self._per_contact(force)[:, 0] > 0.0
        past = np.flatnonzero(past)
        if past.size == 0:
            return 0
        keys = set(self.contact_keys())
        tie = TIE_FRACTION * self.alarmDistance  # equally near: beside a sharp edge, both faces' nearest point is on it
        triangles = self.contact_triangles.copy()
        moved = []
        for surface in np.unique(self.contact_surface[past]):
            on_surface = past[self.contact_surface[past] == surface]
            nearest, nearest_distance = nearest_triangle_anywhere(x, self.contact_nodes[on_surface],
                                                                  self.surfaces[surface].triangles, tie)
            candidates = self.surfaces[surface].triangles[nearest]
            _w, new_normals, new_gaps = plane_gap(x[self.contact_nodes[on_surface]], x[candidates])
            for i, triangle, new_distance, new_gap, new_normal in zip(on_surface, candidates, nearest_distance,
                                                                      new_gaps, new_normals):
                key = (int(self.contact_nodes[i]), tuple(int(v) for v in triangle))
                if new_distance > distance[i] + tie or new_gap <= gaps[i] or key in keys:
                    continue
                others = np.flatnonzero((self.contact_nodes == self.contact_nodes[i]) & (ids != i))
                if others.size and np.max(normals[others] @ new_normal) > PARALLEL_ROWS:
                    continue  # the node's other row already holds it against that plane: W would be singular
                keys.add(key)
                triangles[i] = triangle
                moved.append(i)
        if not moved:
            return 0
        moved = np.asarray(moved)
        start = self.frame_start
        # friction contacts: their tangential rows measure the motion since the frame's start (when it is known)
        slipping = moved[self.mu[moved] > 0.0] if start is not None and start.shape == x.shape else moved[:0]
        before = self._motion(x, start, weights_now)[slipping] if slipping.size else None
        self.contact_triangles = triangles
        new_weights, new_normals, new_gaps = self._geometry(x, moved)
        # new arrays, not written in place: contact_state() keeps the old ones (a failed increment restores them)
        weights, gaps, normals = self.weights.copy(), self.gaps.copy(), self.normals.copy()
        weights[moved], gaps[moved], normals[moved] = new_weights, new_gaps, new_normals
        self.weights, self.gaps = weights, gaps
        slip_origin = self.slip_origin
        if before is not None:  # the relative motion the tangential rows measure at x does not jump
            slip_origin = slip_origin.copy()
            slip_origin[slipping] += self._motion(x, start, weights)[slipping] - before
        self._set_contacts(normals, self.mu, slip_origin)
        return int(moved.size)

    # ------------------------------------------------------------------ following normals
    def following(self) -> np.ndarray:
        """(c,) bool: every contact. Its normal row is the gradient of the node's signed gap to the plane of its
        triangle at the current positions (:func:`~mechanics.constraints.triangle_distance.plane_gap`: the normal
        and the projection's weights taken again, the triangle kept until :meth:`follow_surface` moves the contact
        on), so the constrained equilibrium is the
        stationary point of the contact problem itself, the force normal to the triangle where the node touches
        it, and its derivatives are exact; :meth:`force_stiffness` gives the gap's second derivative. A friction
        contact's tangent frame is SOFA's construction (:func:`friction_frames`) on that normal, so it turns with
        the triangle, and its tangential rows measure the relative motion since the frame's start
        (:meth:`~ContactRows.begin_frame`) of the node and its triangle's point at the current weights, in that
        frame (:meth:`violation`, :meth:`law_jacobian`)."""
        return np.ones(self.n_contacts, dtype=bool)

    def _geometry(self, x: np.ndarray, ids: np.ndarray):
        """Weights (k, 3), normals (k, 3) and signed gaps (k,) of the contacts ``ids`` at positions ``x`` (n, 3):
        the node against its triangle's plane."""
        return plane_gap(x[self.contact_nodes[ids]], x[self.contact_triangles[ids]])

    def _frame_at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weights and normals (c, 3) at positions ``x`` (n, 3) (see :meth:`following`)."""
        if self.n_contacts == 0:
            return self.weights, self.normals
        weights, normals, _gaps = self._geometry(np.asarray(x, dtype=np.float64).reshape(-1, 3),
                                                 np.arange(self.n_contacts))
        return weights, normals

    def normals_at(self, x: np.ndarray) -> np.ndarray:
        """The contacts' normals (c, 3) at positions ``x`` (n, 3) (see :meth:`following`)."""
        return self._frame_at(x)[1]

    def frames_at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(normals, tangents, bitangents) (c, 3) at positions ``x`` (n, 3): a friction contact's tangent frame is
        built on its normal there (:func:`friction_frames`)."""
        normals = self.normals_at(x)
        turning = np.flatnonzero(self.mu > 0.0)
        if turning.size == 0:
            return normals, self.tangents, self.bitangents
        tangents, bitangents = self.tangents.copy(), self.bitangents.copy()
        tangents[turning], bitangents[turning] = friction_frames(normals[turning])
        return normals, tangents, bitangents

    def _factors(self, weights: np.ndarray) -> np.ndarray:
        """(c, 4): each row's factor on the node and its triangle's three nodes, ``[1, -w_a, -w_b, -w_c]``."""
        return np.column_stack([np.ones(self.n_contacts), -weights])

    def _points(self) -> np.ndarray:
        """(c, 4): the node and its triangle's three nodes."""
        return np.column_stack([self.contact_nodes, self.contact_triangles])

    # ------------------------------------------------------------------ protocol
    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """Per row: ``+d`` on the node, ``-w_i d`` on the triangle's nodes (d = n, t or s), ``(n_rows, 3n)``, with
        the weights, normal and tangent frame at ``x`` (the normal row is the gradient of the signed gap)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        weights, _normals = self._frame_at(x)
        directions = np.stack(self.frames_at(x), axis=1)  # (c, 3, 3)
        keep = self._row_mask()
        directions, contact = directions[keep], np.nonzero(keep)[0]
        n_rows = directions.shape[0]
        nodes = self._points()[contact]  # (r, 4)
        factors = self._factors(weights)[contact]  # (r, 4)
        values = factors[:, :, None] * directions[:, None, :]  # (r, 4, 3)
        cols = 3 * nodes[:, :, None] + np.arange(3)[None, None, :]
        rows = np.repeat(np.arange(n_rows), 12)
        return sp.csr_matrix((values.reshape(-1), (rows, cols.reshape(-1))), shape=(n_rows, 3 * self.n_nodes))

    def _derivatives(self, x: np.ndarray, ids: np.ndarray):
        """For the contacts ``ids`` (k,) at positions ``x`` (n, 3), over their 12 DOFs y = (p, a, b, c): the
        gap's Hessian H (k, 12, 12); the derivatives (k, 3, 12) of the normal (``H``'s p rows, as the gap's
        gradient on p is n) and, for friction contacts, of the tangent and bitangent
        (:func:`friction_frame_derivatives`, per column); and those (k, 4, 12) of the factors ``[1, -w]``
        (``-dw_i = n^T H_i`` over the corner i's rows, as the gradient there is ``-w_i n`` and ``n . dn = 0``)."""
        points = self._points()[ids]
        hessian = plane_gap_hessian(x[points[:, 0]], x[points[:, 1:]])
        _weights, normals, _gaps = self._geometry(x, ids)
        d_normal = hessian[:, 0:3, :]
        d_factors = np.zeros((ids.size, 4, 12))
        for i in range(3):
            d_factors[:, 1 + i, :] = np.einsum("kd,kdj->kj", normals, hessian[:, 3 + 3 * i:6 + 3 * i, :])
        d_t, d_s = np.zeros_like(d_normal), np.zeros_like(d_normal)
        for j in range(12):
            d_t[:, :, j], d_s[:, :, j] = friction_frame_derivatives(normals, d_normal[:, :, j])
        return hessian, d_t, d_s, d_factors

    def _dofs(self, ids: np.ndarray) -> np.ndarray:
        """(k, 12): the DOFs of the contacts' node and triangle nodes."""
        points = self._points()[ids]
        return (3 * points[:, :, None] + np.arange(3)[None, None, :]).reshape(ids.size, 12)

    def force_stiffness(self, x: np.ndarray, force: np.ndarray):
        """``-d(J(x)^T lambda)/dy`` over each contact's node and triangle nodes (y, 12 DOFs): the force on point k
        is ``c_k f`` with c = [1, -w] and ``f = lambda_n n + lambda_t t + lambda_s s``, so the blocks are
        ``-(lambda_n H + c_k (lambda_t dt/dy + lambda_s ds/dy) + (lambda_t t + lambda_s s) dc_k/dy)``, H the
        signed gap's second derivative (:func:`~mechanics.constraints.triangle_distance.plane_gap_hessian`: the
        triangle's turning and stretching as its nodes move) and the rest the tangent frame turning with the
        normal (not symmetric); None without contacts. Triplets, see
        :meth:`~mechanics.constraints.base.Constraint.force_stiffness`."""
        if self.n_contacts == 0:
            return None
        ids = np.arange(self.n_contacts)
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        per_contact = self._per_contact(force)
        friction = np.flatnonzero(self.mu > 0.0)
        if friction.size == 0:
            blocks = -per_contact[:, 0][:, None, None] * plane_gap_hessian(x[self.contact_nodes],
                                                                         x[self.contact_triangles])
        else:
            hessian, d_t, d_s, d_factors = self._derivatives(x, ids)
            weights, _normals = self._frame_at(x)
            _n, tangents, bitangents = self.frames_at(x)
            lam = per_contact
            turning = lam[:, 1, None, None] * d_t + lam[:, 2, None, None] * d_s  # (c, 3, 12)
            tangential = lam[:, 1:2] * tangents + lam[:, 2:3] * bitangents  # (c, 3)
            factors = self._factors(weights)  # (c, 4)
            extra = (factors[:, :, None, None] * turning[:, None, :, :]
                     + tangential[:, None, :, None] * d_factors[:, :, None, :])  # (c, 4, 3, 12)
            blocks = -(lam[:, 0, None, None] * hessian + extra.reshape(-1, 12, 12))
        pattern = getattr(self, "_stiffness_pattern", None)
        if pattern is None or pattern[0] is not self.contact_nodes or pattern[1] is not self.contact_triangles:
            # the same index arrays while the contacts are the same: the frame step keeps its matrix pattern. A
            # row moved to another triangle (follow_surface) is a new contact_triangles array
            dofs = self._dofs(ids)
            rows = np.broadcast_to(dofs[:, :, None], blocks.shape).reshape(-1).copy()
            cols = np.broadcast_to(dofs[:, None, :], blocks.shape).reshape(-1).copy()
            pattern = self._stiffness_pattern = (self.contact_nodes, self.contact_triangles, rows, cols)
        return pattern[2], pattern[3], blocks.reshape(-1)

    def _motion(self, x: np.ndarray, start: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """(c, 3): the node's motion from ``start`` to ``x`` (n, 3) minus that of its triangle's point at
        ``weights`` (c, 3), less the contact's :attr:`slip_origin`: the relative motion the tangential rows
        measure."""
        return _relative_motion(x - start, self.contact_nodes, self.contact_triangles, weights) - self.slip_origin

    def violation(self, x: np.ndarray, x_free: np.ndarray, J: sp.csr_matrix) -> np.ndarray:
        """Normal rows: the node's signed gap to its triangle's plane at ``x_free`` minus contactDistance;
        tangential rows: the relative motion from ``x`` (the frame's start) to ``x_free`` of the node and its
        triangle's point at the weights at ``x_free``, along the tangent frame at ``x_free``."""
        x = check_positions(self.name, x, self.n_nodes)
        x_free = check_positions(self.name, x_free, self.n_nodes)
        if self.n_contacts == 0:
            return np.zeros(0)
        weights, _normals, gap = self._geometry(x_free, np.arange(self.n_contacts))
        _n, tangents, bitangents = self.frames_at(x_free)
        return self._row_values(gap - self.contactDistance, self._motion(x_free, x, weights), tangents, bitangents)

    def law_jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """The derivative ``(n_rows, 3n)`` of the rows' laws (:meth:`violation`, measured from the frame's start
        :attr:`frame_start`) at positions ``x`` (n, 3): a normal row's is the row itself; a friction contact's
        tangential law ``t(y) . sum_k c_k(y) (y_k - y_k0)`` has ``c_k t + (dt/dy)^T m + sum_k (t . (y_k - y_k0))
        dc_k/dy`` (m the relative motion), which differs from its force row by the frame's turning and the
        weights' change. ValueError when the frame's start is not known (a constraint used outside a
        simulation)."""
        return self._rows_with_turning(x, np.flatnonzero(self.mu > 0.0), self._turning)

    def _turning(self, x: np.ndarray, start: np.ndarray, turning: np.ndarray, first: np.ndarray):
        """The entries ``(dt/dy)^T m + sum_k (t . (y_k - y_k0)) dc_k/dy`` (and the bitangent's) of the contacts
        ``turning`` (:meth:`~mechanics.constraints.contact.ContactRows._rows_with_turning`)."""
        _hessian, d_t, d_s, d_factors = self._derivatives(x, turning)
        weights, _normals = self._frame_at(x)
        _n, tangents, bitangents = self.frames_at(x)
        motion = self._motion(x, start, weights)[turning]  # (k, 3)
        delta = (x - start)[self._points()[turning]]  # (k, 4, 3)
        values, rows = [], []
        for offset, direction, d_direction in ((1, tangents, d_t), (2, bitangents, d_s)):
            along = np.einsum("kpd,kd->kp", delta, direction[turning])  # (k, 4): t . (y_k - y_k0)
            values.append(np.einsum("kdj,kd->kj", d_direction, motion) + np.einsum("kp,kpj->kj", along, d_factors))
            rows.append(np.repeat(first + offset, 12))
        cols = np.tile(self._dofs(turning).reshape(-1), 2)
        return np.concatenate(values).reshape(-1), np.concatenate(rows), cols


def _relative_motion(delta: np.ndarray, nodes: np.ndarray, triangles: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(k, 3): the displacement ``delta`` (n, 3) of each node ``nodes`` (k,) minus that of its triangle's point
    at ``weights`` (k, 3) on ``triangles`` (k, 3)."""
    return delta[nodes] - np.einsum("ck,ckd->cd", weights, delta[triangles])


def winding_numbers(x: np.ndarray, points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(k,) the winding number of the closed, outward oriented surface ``triangles`` (t, 3) (node ids into
    ``x`` (n, 3)) about each of ``points`` (k, 3): 1 inside, 0 outside (the sum of the triangles' solid angles
    over 4 pi, Van Oosterom and Strackee's formula). Unlike the sign of the gap to the nearest triangle, it
    stays right next to edges and corners and on a deformed, concave surface."""
    total = np.empty(points.shape[0])
    _winding_numbers(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(points, dtype=np.float64),
                     np.ascontiguousarray(triangles, dtype=np.int64), total)
    return total


@njit(cache=True, nogil=True)
def _winding_numbers(x, points, triangles, total):
    """:func:`winding_numbers` into ``total`` (k,), one point and triangle at a time (no temporaries)."""
    for k in range(points.shape[0]):
        angle = 0.0
        for t in range(triangles.shape[0]):
            i, j, m = triangles[t, 0], triangles[t, 1], triangles[t, 2]
            a0, a1, a2 = x[i, 0] - points[k, 0], x[i, 1] - points[k, 1], x[i, 2] - points[k, 2]
            b0, b1, b2 = x[j, 0] - points[k, 0], x[j, 1] - points[k, 1], x[j, 2] - points[k, 2]
            c0, c1, c2 = x[m, 0] - points[k, 0], x[m, 1] - points[k, 1], x[m, 2] - points[k, 2]
            la = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
            lb = math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
            lc = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
            numerator = a0 * (b1 * c2 - b2 * c1) + a1 * (b2 * c0 - b0 * c2) + a2 * (b0 * c1 - b1 * c0)
            denominator = (la * lb * lc + (a0 * b0 + a1 * b1 + a2 * b2) * lc + (a0 * c0 + a1 * c1 + a2 * c2) * lb
                           + (b0 * c0 + b1 * c1 + b2 * c2) * la)
            angle += 2.0 * math.atan2(numerator, denominator)
        total[k] = angle / (4.0 * math.pi)


def _inside_nodes(x: np.ndarray, nodes: np.ndarray, triangles: np.ndarray, best: np.ndarray,
                  vertices: np.ndarray) -> np.ndarray:
    """``best`` (k,) (each node's triangle within alarmDistance, -1: none) with the nodes that have none but lie
    inside the closed surface ``triangles`` given their nearest triangle at any distance: a node that a large
    step carried deeper than alarmDistance into the other body (a finger jumped into a block), which proximity
    alone never finds again. Only the nodes inside the surface's bounding box (of its ``vertices``, the node ids
    its triangles use) are examined: inside when the surface's winding number about them is above one half;
    their nearest triangle is searched among those whose centroid could hold it (a k-d tree over the
    centroids). The box comes from the vertices, not from every triangle's corners, in one compiled pass
    (:func:`_in_bounding_box`): on a 10k-triangle surface with no node inside, gathering the corners, or numpy's
    reductions over the gathered vertices, were most of a detection's time (benchmarks/RESULTS.md)."""
    free = np.flatnonzero(best < 0)
    if free.size == 0 or triangles.size == 0:
        return best
    in_box = np.empty(free.size, dtype=np.bool_)
    _in_bounding_box(x, vertices, nodes, free, in_box)
    candidates = free[in_box]
    if candidates.size == 0:
        return best
    candidates = candidates[winding_numbers(x, x[nodes[candidates]], triangles) > 0.5]
    if candidates.size == 0:
        return best
    best = best.copy()
    best[candidates] = nearest_triangle_anywhere(x, nodes[candidates], triangles)[0]
    return best


def nearest_triangle_anywhere(x: np.ndarray, points: np.ndarray, triangles: np.ndarray, outward_tie: float = -1.0):
    """For each node ``points`` (k,) at positions ``x`` (n, 3): the index of the triangle of ``triangles`` (t, 3)
    nearest to it, at any distance, and that distance ((k,), (k,)). Searched among the triangles whose centroid
    could hold the nearest point (a k-d tree over the centroids: within the nearest centroid's distance plus twice
    the largest triangle's radius). With ``outward_tie`` >= 0, of the triangles within that much of the nearest
    distance the one whose plane sees the node farthest out (a node beside a sharp edge is equally near both
    faces: the one it is not over holds it farther out)."""
    corners = x[triangles]
    centroids = corners.mean(axis=1)
    radius = float(np.sqrt(((corners - centroids[:, None, :]) ** 2).sum(axis=2)).max())
    tree = cKDTree(centroids)
    nearest_centroid, _ = tree.query(x[points])
    near = tree.query_ball_point(x[points], nearest_centroid + 2.0 * radius)
    pair_point = np.repeat(np.arange(points.size), [len(ids) for ids in near])
    pair_triangle = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in near])
    distance, _weights, _normal, _gap = closest_points_on_triangles(x, points, triangles, pair_point, pair_triangle)
    order = np.lexsort((distance, pair_point))
    first = order[np.r_[True, pair_point[order][1:] != pair_point[order][:-1]]]
    if outward_tie < 0.0:
        return pair_triangle[first], distance[first]
    nearest = np.empty(points.size)
    nearest[pair_point[first]] = distance[first]
    tied = np.flatnonzero(distance <= nearest[pair_point] + outward_tie)
    out = plane_gap(x[points[pair_point[tied]]], x[triangles[pair_triangle[tied]]])[2]
    order = tied[np.lexsort((-out, pair_point[tied]))]
    first = order[np.r_[True, pair_point[order][1:] != pair_point[order][:-1]]]
    return pair_triangle[first], distance[first]


def _ring_triangles(triangles: np.ndarray) -> dict[int, set]:
    """Per node: the triangles around it and around its neighbours (the ones a node's own surface may not
    count as contacts)."""
    around: dict[int, set] = {}
    for t, triangle in enumerate(triangles.tolist()):
        for node in triangle:
            around.setdefault(node, set()).add(t)
    neighbours: dict[int, set] = {}
    for triangle in triangles.tolist():
        for node in triangle:
            neighbours.setdefault(node, set()).update(triangle)
    return {node: set().union(*(around[m] for m in neighbours[node])) for node in around}
