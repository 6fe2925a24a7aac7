"""The compiled passes behind the cables' and cavities' rows: one copy of the cable-length sum, of the gather of
mapped points and of the scatter of point gradients onto a row's free DOFs, used by
:mod:`~mechanics.constraints.cable` (one cable) and :mod:`~mechanics.constraints.cable_rows` /
:mod:`~mechanics.constraints.cavity_rows` (all of a frame's cables or cavities at once).

The kernels that call each other live in this one file on purpose: numba's cache of a compiled function is
invalidated by changes to its own file only, so a cached kernel calling a compiled function of another file
would keep running that function's old code after an edit.

Shapes: ``x`` (n, 3) node positions; a set of K points, point p at ``sum_j point_weights[j] x[point_nodes[j]]``
for j in ``point_ptr[p]:point_ptr[p + 1]`` (a barycentric mapping, or one node with weight 1); rows r = 0..R-1
on the points ``first_point[r]:first_point[r + 1]``; ``slots[3 j + c]`` the entry of the rows' CSR values that
the mapping entry j's coordinate c adds to (-1 for a fixed DOF). Every kernel writes into arrays it is given
and allocates nothing.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["cable_lengths", "cavity_volumes", "polyline_length_and_gradient"]


@njit(cache=True, nogil=True)
def _gather_points(x, point_ptr, point_nodes, point_weights, points, gradient):
    """``points`` (K, 3) at the mapped positions of ``x``; ``gradient`` (K, 3) zeroed."""
    for p in range(point_ptr.size - 1):
        for c in range(3):
            total = 0.0
            for j in range(point_ptr[p], point_ptr[p + 1]):
                total += point_weights[j] * x[point_nodes[j], c]
            points[p, c] = total
            gradient[p, c] = 0.0


@njit(cache=True, nogil=True)
def _polyline(points, a, b, pull_point, has_pull, blend, gradient):
    """Length of the polyline ``[pull_point,] points[a], ..., points[b - 1]``, its gradient with respect to
    ``points[a:b]`` added into ``gradient[a:b]``. ``blend[p]``: the blend length delta of the segment ending at
    point p (0: none); a segment of length s shorter than its delta counts ``(s^2 + delta^2) / (2 delta)``,
    gradient d / delta (:mod:`~mechanics.constraints.cable`)."""
    total = 0.0
    for p in range(a if has_pull else a + 1, b):
        d0 = points[p, 0] - (pull_point[0] if p == a else points[p - 1, 0])
        d1 = points[p, 1] - (pull_point[1] if p == a else points[p - 1, 1])
        d2 = points[p, 2] - (pull_point[2] if p == a else points[p - 1, 2])
        length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        delta = blend[p]
        if length < delta:
            total += 0.5 * (length * length + delta * delta) / delta
            scale = delta
        else:
            total += length
            scale = length
        if scale > 0.0:
            u0, u1, u2 = d0 / scale, d1 / scale, d2 / scale
            gradient[p, 0] += u0
            gradient[p, 1] += u1
            gradient[p, 2] += u2
            if p > a:
                gradient[p - 1, 0] -= u0
                gradient[p - 1, 1] -= u1
                gradient[p - 1, 2] -= u2
    return total


@njit(cache=True, nogil=True)
def _scatter_rows(point_ptr, point_weights, first_point, slots, scale, gradient, data):
    """``data`` (the rows' CSR values) = for each row r, ``scale[r]`` times the gradient (K, 3) of its points
    mapped onto the nodes: ``data[slots[3 j + c]] += point_weights[j] (scale[r] gradient[p, c])``."""
    for e in range(data.size):
        data[e] = 0.0
    for r in range(first_point.size - 1):
        s = scale[r]
        for p in range(first_point[r], first_point[r + 1]):
            for j in range(point_ptr[p], point_ptr[p + 1]):
                for c in range(3):
                    slot = slots[3 * j + c]
                    if slot >= 0:
                        data[slot] += point_weights[j] * (s * gradient[p, c])


@njit(cache=True, nogil=True)
def polyline_length_and_gradient(points, pull_point, has_pull_point, blend, gradient):
    """Length of ``[pull_point,] points`` (points (k, 3), pull_point (3,)) and its gradient with respect to
    ``points`` written into ``gradient`` (k, 3); ``blend`` (k,) as in :func:`_polyline`."""
    for p in range(points.shape[0]):
        for c in range(3):
            gradient[p, c] = 0.0
    return _polyline(points, 0, points.shape[0], pull_point, has_pull_point, blend, gradient)


@njit(cache=True, nogil=True)
def cable_lengths(x, point_ptr, point_nodes, point_weights, first_point, pull_points, has_pull, blend, slots,
                  scale, lengths, points, gradient, data, with_rows):
    """Lengths (R,) of the cables (row r's pull point ``pull_points[r]`` (R, 3) when ``has_pull[r]``, each point's
    blend length ``blend`` (K,)) written into ``lengths``, and, when ``with_rows``, their rows ``scale[r] dL/dx``
    (scale -1: SoftRobots' ``-dL/dx``) on the free DOFs written into ``data``. ``points``, ``gradient`` (K, 3)
    are scratch."""
    _gather_points(x, point_ptr, point_nodes, point_weights, points, gradient)
    for r in range(lengths.size):
        lengths[r] = _polyline(points, first_point[r], first_point[r + 1], pull_points[r], has_pull[r], blend,
                               gradient)
    if with_rows:
        _scatter_rows(point_ptr, point_weights, first_point, slots, scale, gradient, data)


@njit(cache=True, nogil=True)
def cavity_volumes(x, point_ptr, point_nodes, point_weights, first_point, triangles, first_triangle, orientation,
                   slots, volumes, points, gradient, data, with_rows):
    """Signed volumes (R,) ``(1/6) sum p0 . (p1 x p2)`` of the cavities (row r's triangles
    ``first_triangle[r]:first_triangle[r + 1]`` of ``triangles`` (T, 3), ids among all points) written into
    ``volumes``, and, when ``with_rows``, their rows ``orientation[r] dV/dx`` on the free DOFs written into
    ``data`` (a third of each triangle's area vector on each of its vertices, summed in the order of
    :func:`~mechanics.constraints.cavity.surface_volume_gradient`). ``points``, ``gradient`` (K, 3) are
    scratch."""
    _gather_points(x, point_ptr, point_nodes, point_weights, points, gradient)
    for r in range(volumes.size):
        volume = 0.0
        for t in range(first_triangle[r], first_triangle[r + 1]):
            a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
            a0, a1, a2 = points[a, 0], points[a, 1], points[a, 2]
            b0, b1, b2 = points[b, 0], points[b, 1], points[b, 2]
            c0, c1, c2 = points[c, 0], points[c, 1], points[c, 2]
            volume += a0 * (b1 * c2 - b2 * c1) + a1 * (b2 * c0 - b0 * c2) + a2 * (b0 * c1 - b1 * c0)
            if with_rows:
                u0, u1, u2 = b0 - a0, b1 - a1, b2 - a2
                v0, v1, v2 = c0 - a0, c1 - a1, c2 - a2
                t0 = (u1 * v2 - u2 * v1) / 6.0
                t1 = (u2 * v0 - u0 * v2) / 6.0
                t2 = (u0 * v1 - u1 * v0) / 6.0
                for vertex in (a, b, c):
                    gradient[vertex, 0] += t0
                    gradient[vertex, 1] += t1
                    gradient[vertex, 2] += t2
        volumes[r] = volume / 6.0
    if with_rows:
        _scatter_rows(point_ptr, point_weights, first_point, slots, orientation, gradient, data)
