"""Barycentric mapping of embedded points into a tetrahedral mesh (SOFA BarycentricMapping).

Each embedded point ``p`` is expressed as ``p = sum_a w_a x[tets[t, a]]`` with the weights ``w`` (4,) of the
tetrahedron ``t`` that contains it. The point DOFs are then a linear function of the body DOFs, and a
constraint
row written on the points is carried to the body by ``J_body = J_points @ mapping.matrix()``.

Points outside the mesh are attached to the nearest tetrahedron with the barycentric coordinates of their
closest
point on it (weights in [0, 1] summing to 1, i.e. clamped coordinates): the point is projected onto the mesh.
With ``extrapolate=True`` they keep their own coordinates in that tetrahedron instead (some weights negative,
still summing to 1), as SOFA's BarycentricMapping does: the point stays where it was given and follows the
tetrahedron's affine motion (a collision surface whose vertices lie slightly off a coarser volume mesh).
A warning is logged when the projection distance exceeds ``tolerance``; points farther than ``max_distance``
raise :class:`~mechanics.errors.ParameterError`.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["BarycentricMapping", "closest_point_on_triangles"]

#: Barycentric coordinates above ``-_INSIDE_EPS`` count as inside (points on shared faces and round-off).
_INSIDE_EPS = 1e-10
#: Number of nearest tet centroids tried first for every point.
_FIRST_CANDIDATES = 8

# The four faces of a tet as local vertex ids.
_TET_FACES = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]], dtype=np.int64)


def closest_point_on_triangles(
    points: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Closest point of each triangle ``(a, b, c)`` to each point (Ericson, Real-Time Collision Detection
    5.1.5).

    Args:
        points, a, b, c: ``(N, 3)`` arrays (one triangle per point).

    Returns:
        ``(closest (N, 3), barycentric (N, 3))`` with ``closest = bary[:,0] a + bary[:,1] b + bary[:,2] c``,
        barycentric coordinates in [0, 1] summing to 1.
    """
    ab = b - a
    ac = c - a
    ap = points - a
    d1 = np.einsum("ij,ij->i", ab, ap)
    d2 = np.einsum("ij,ij->i", ac, ap)
    bp = points - b
    d3 = np.einsum("ij,ij->i", ab, bp)
    d4 = np.einsum("ij,ij->i", ac, bp)
    cp = points - c
    d5 = np.einsum("ij,ij->i", ab, cp)
    d6 = np.einsum("ij,ij->i", ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4

    def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros_like(num)
        np.divide(num, den, out=out, where=den != 0.0)
        return np.clip(out, 0.0, 1.0)

    t_ab = safe_ratio(d1, d1 - d3)
    t_ac = safe_ratio(d2, d2 - d6)
    t_bc = safe_ratio(d4 - d3, (d4 - d3) + (d5 - d6))
    total = va + vb + vc
    v_in = safe_ratio(vb, total)
    w_in = safe_ratio(vc, total)

    zeros = np.zeros_like(d1)
    ones = np.ones_like(d1)
    # Voronoi regions in Ericson's order; np.select keeps the first region that matches.
    conditions = [
        (d1 <= 0.0) & (d2 <= 0.0),
        (d3 >= 0.0) & (d4 <= d3),
        (vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0),
        (d6 >= 0.0) & (d5 <= d6),
        (vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0),
        (va <= 0.0) & ((d4 - d3) >= 0.0) & ((d5 - d6) >= 0.0),
    ]
    bary_b = np.select(conditions, [zeros, ones, t_ab, zeros, zeros, 1.0 - t_bc], default=v_in)
    bary_c = np.select(conditions, [zeros, zeros, zeros, ones, t_ac, t_bc], default=w_in)
    bary = np.column_stack([1.0 - bary_b - bary_c, bary_b, bary_c])
    closest = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:3] * c
    return closest, bary


class BarycentricMapping:
    """Barycentric embedding of ``k`` points into a tetrahedral mesh.

    Args:
        X: rest node positions ``(n, 3)``; the embedding is computed in this configuration.
        tets: tetrahedra ``(m, 4)`` node ids.
        points: embedded point positions ``(k, 3)`` in the rest configuration.
        tolerance: distance (scene length unit) from the mesh above which a projected outside point is
            reported with a warning. Default: 1e-3 of the mesh bounding-box diagonal.
        max_distance: distance above which a point counts as far outside and raises ``ParameterError``.
            Default: 5e-2 of the bounding-box diagonal (and never below ``tolerance``).
        extrapolate: an outside point keeps its own barycentric coordinates in its nearest tetrahedron (so
            ``apply(X)`` gives it back exactly) instead of those of its projection onto the mesh.

    Attributes:
        tet_ids: ``(k,) int64`` tetrahedron of each point.
        weights: ``(k, 4) float64`` barycentric weights (sum 1) on ``tets[tet_ids]``.
        node_ids: ``(k, 4) int64`` = ``tets[tet_ids]``.
        distances: ``(k,)`` distance of each point to the mesh (0 for points inside).
    """

    def __init__(
        self,
        X: np.ndarray,
        tets: np.ndarray,
        points: np.ndarray,
        *,
        tolerance: float | None = None,
        max_distance: float | None = None,
        extrapolate: bool = False,
    ) -> None:
        X = np.ascontiguousarray(X, dtype=np.float64)
        tets = np.ascontiguousarray(tets, dtype=np.int64)
        points = np.ascontiguousarray(points, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != 3 or X.shape[0] == 0:
            raise ParameterError(f"mapping: X must have shape (n, 3) with n >= 1, got {X.shape}")
        if tets.ndim != 2 or tets.shape[1] != 4 or tets.shape[0] == 0:
            raise ParameterError(f"mapping: tets must have shape (m, 4) with m >= 1, got {tets.shape}")
        if tets.min() < 0 or tets.max() >= X.shape[0]:
            raise ParameterError(f"mapping: tet node ids must lie in [0, {X.shape[0] - 1}]")
        points = points.reshape(-1, 3) if points.size else np.zeros((0, 3))
        if not np.all(np.isfinite(points)):
            raise ParameterError("mapping: points contain NaN or infinite coordinates")
        diagonal = float(np.linalg.norm(X.max(axis=0) - X.min(axis=0)))
        self.tolerance = 1e-3 * diagonal if tolerance is None else float(tolerance)
        self.max_distance = (
            max(5e-2 * diagonal, self.tolerance) if max_distance is None else float(max_distance)
        )
        if self.tolerance < 0.0 or self.max_distance < self.tolerance:
            raise ParameterError(
                f"mapping: need 0 <= tolerance <= max_distance, got tolerance={self.tolerance}, "
                f"max_distance={self.max_distance}"
            )
        self.n_nodes = X.shape[0]
        self.n_points = points.shape[0]
        self.tets = tets
        self.extrapolate = bool(extrapolate)
        self._locate(X, tets, points)
        self.node_ids = tets[self.tet_ids]
        self._matrix: sp.csr_matrix | None = None

    # ------------------------------------------------------------------ location
    def _locate(self, X: np.ndarray, tets: np.ndarray, points: np.ndarray) -> None:
        k = points.shape[0]
        m = tets.shape[0]
        self.tet_ids = np.zeros(k, dtype=np.int64)
        self.weights = np.zeros((k, 4), dtype=np.float64)
        self.distances = np.zeros(k, dtype=np.float64)
        if k == 0:
            return
        corners = X[tets]  # (m, 4, 3)
        centroids = corners.mean(axis=1)
        edges = np.transpose(corners[:, 1:] - corners[:, :1], (0, 2, 1))  # columns x1-x0, x2-x0, x3-x0
        dets = np.linalg.det(edges)
        degenerate = np.abs(dets) <= 1e-14 * np.maximum(np.abs(edges).max(axis=(1, 2)), 1e-300) ** 3
        safe_edges = edges.copy()
        safe_edges[degenerate] = np.eye(3)
        inverse = np.linalg.inv(safe_edges)
        # Radius of each tet around its centroid: a tet containing p has |centroid - p| <= its radius.
        radii = np.linalg.norm(corners - centroids[:, None, :], axis=2).max(axis=1)
        radius = float(radii.max())
        tree = cKDTree(centroids)

        def barycentric(point_ids: np.ndarray, cand: np.ndarray) -> np.ndarray:
            local = np.einsum("nij,nj->ni", inverse[cand], points[point_ids] - corners[cand, 0])
            bary = np.empty((cand.shape[0], 4))
            bary[:, 1:] = local
            bary[:, 0] = 1.0 - local.sum(axis=1)
            bary[degenerate[cand]] = -np.inf
            return bary

        def first_inside(point_ids: np.ndarray, cand: np.ndarray) -> np.ndarray:
            """Assign points that lie in one of their candidate tets; return the mask of assigned rows."""
            bary = barycentric(point_ids, cand)
            inside = bary.min(axis=1) >= -_INSIDE_EPS
            # First inside candidate per point (candidates are ordered by centroid distance when from a
            # k-query).
            order = np.flatnonzero(inside)
            pts, first = np.unique(point_ids[order], return_index=True)
            chosen = order[first]
            self.tet_ids[pts] = cand[chosen]
            self.weights[pts] = bary[chosen]
            found = np.zeros(k, dtype=bool)
            found[pts] = True
            return found

        # 1. Nearest centroids first.
        n_first = min(_FIRST_CANDIDATES, m)
        _, near = tree.query(points, k=n_first)
        near = near.reshape(k, n_first)
        point_ids = np.repeat(np.arange(k), n_first)
        found = first_inside(point_ids, near.reshape(-1))
        # 2. Exhaustive candidates for the rest: every tet whose centroid lies within `radius`.
        pending = np.flatnonzero(~found)
        if pending.size:
            ball = tree.query_ball_point(points[pending], r=radius * (1.0 + 1e-9))
            counts = np.fromiter((len(b) for b in ball), dtype=np.int64, count=len(ball))
            if counts.sum():
                cand = np.concatenate([np.asarray(b, dtype=np.int64) for b in ball if len(b)])
                owners = np.repeat(pending, counts)
                near_enough = np.linalg.norm(centroids[cand] - points[owners], axis=1) <= radii[cand] * (
                    1 + 1e-9
                )
                found |= first_inside(owners[near_enough], cand[near_enough])
        # 3. Outside points: closest tet by true distance.
        outside = np.flatnonzero(~found)
        if outside.size:
            self._project_outside(points, corners, tree, radii, outside, near[outside], degenerate)
            if self.extrapolate:  # the point's own coordinates in the tetrahedron found (not its projection's)
                kept = outside[~degenerate[self.tet_ids[outside]]]
                self.weights[kept] = barycentric(kept, self.tet_ids[kept])

    def _project_outside(
        self,
        points: np.ndarray,
        corners: np.ndarray,
        tree: cKDTree,
        radii: np.ndarray,
        outside: np.ndarray,
        near: np.ndarray,
        degenerate: np.ndarray,
    ) -> None:
        def closest_in_candidates(point_ids: np.ndarray, cand: np.ndarray):
            # Distance from each point to each of the 4 faces of its candidate tet.
            n = cand.shape[0]
            face_corners = corners[cand][:, _TET_FACES]  # (n, 4, 3, 3)
            rep_points = np.repeat(points[point_ids], 4, axis=0)
            closest, bary = closest_point_on_triangles(
                rep_points,
                face_corners[:, :, 0].reshape(-1, 3),
                face_corners[:, :, 1].reshape(-1, 3),
                face_corners[:, :, 2].reshape(-1, 3),
            )
            dist = np.linalg.norm(closest - rep_points, axis=1).reshape(n, 4)
            dist[degenerate[cand]] = np.inf
            best_face = dist.argmin(axis=1)
            weights = np.zeros((n, 4))
            face_bary = bary.reshape(n, 4, 3)[np.arange(n), best_face]
            np.put_along_axis(weights, _TET_FACES[best_face], face_bary, axis=1)
            return dist[np.arange(n), best_face], weights

        def assign(point_ids: np.ndarray, cand: np.ndarray) -> None:
            dist, weights = closest_in_candidates(point_ids, cand)
            # Smallest distance per point: sort by (point, distance) and keep the first of each point.
            order = np.lexsort((dist, point_ids))
            pts, first = np.unique(point_ids[order], return_index=True)
            chosen = order[first]
            self.tet_ids[pts] = cand[chosen]
            self.weights[pts] = weights[chosen]
            self.distances[pts] = dist[chosen]

        n_first = near.shape[1]
        assign(np.repeat(outside, n_first), near.reshape(-1))
        # Any tet closer than the current best has its centroid within best + radius: check them all.
        # Only tets whose own bounding sphere reaches closer than the current best are evaluated.
        centroids = corners.mean(axis=1)
        best = self.distances[outside].copy()
        ball = tree.query_ball_point(points[outside], r=best + radii.max() * (1.0 + 1e-9))
        counts = np.fromiter((len(b) for b in ball), dtype=np.int64, count=len(ball))
        cand = np.concatenate([np.asarray(b, dtype=np.int64) for b in ball])
        owners = np.repeat(outside, counts)
        reach = np.linalg.norm(centroids[cand] - points[owners], axis=1) - radii[cand]
        closer = reach <= np.repeat(best, counts) * (1.0 + 1e-9) + 1e-300
        assign(owners[closer], cand[closer])

        far = outside[self.distances[outside] > self.max_distance]
        if far.size:
            first = ", ".join(
                f"#{i} {np.array2string(points[i], precision=4)} (distance {self.distances[i]:.4g})"
                for i in far[:5]
            )
            raise ParameterError(
                f"mapping: {far.size} of {points.shape[0]} points lie farther than max_distance="
                f"{self.max_distance:.4g} outside the mesh: {first}"
            )
        warned = outside[self.distances[outside] > self.tolerance]
        if warned.size:
            logger.warning(
                "mapping: %d points lie outside the mesh by more than tolerance=%.4g (max %.4g); "
                "they are %s the nearest tetrahedron (first: #%d)",
                warned.size,
                self.tolerance,
                float(self.distances[warned].max()),
                "carried by" if self.extrapolate else "projected onto",
                int(warned[0]),
            )

    # ------------------------------------------------------------------ operators
    def matrix(self) -> sp.csr_matrix:
        """Mapping matrix ``(3k, 3n)``: point DOFs = matrix @ body DOFs (node-major DOFs). Cached."""
        if self._matrix is None:
            k = self.n_points
            rows = (3 * np.arange(k)[:, None, None] + np.arange(3)[None, None, :]).repeat(4, axis=1)
            cols = 3 * self.node_ids[:, :, None] + np.arange(3)[None, None, :]
            vals = np.repeat(self.weights[:, :, None], 3, axis=2)
            self._matrix = sp.csr_matrix(
                (vals.ravel(), (rows.ravel(), cols.ravel())), shape=(3 * k, 3 * self.n_nodes)
            )
        return self._matrix

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Positions ``(k, 3)`` of the embedded points for node positions ``x`` ``(n, 3)``."""
        x = np.asarray(x, dtype=np.float64).reshape(self.n_nodes, 3)
        return np.einsum("ka,kac->kc", self.weights, x[self.node_ids])
