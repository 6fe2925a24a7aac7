"""A point's signed distance to the plane of a triangle, and its first and second derivatives with respect to
the four points: the gap of a frictionless contact between bodies, whose row follows the nodes.

A point p and a triangle (a, b, c), k of each (positions (k, 3)). With r = p - a, e1 = b - a, e2 = c - a and
``N = e1 x e2``, the gap is

    g = T / L,   T = r . N (the triple product),   L = |N|,

the distance of p to the triangle's plane along its unit normal n = N / L (positive on the side n points to,
the outside of an outward surface). Its gradient with respect to (p, a, b, c) is ``[n, -w_a n, -w_b n, -w_c
n]`` with (w_a, w_b, w_c) the barycentric coordinates of p's projection on the plane: where the projection
falls inside the triangle this is the node-to-triangle distance and the closest point's weights; beyond an
edge the plane is extended (the weights leave [0, 1]), so that g is smooth wherever the triangle is not
degenerate, however the node moves along the surface during a frame. (The true distance to the triangle
beyond an edge or a corner, |p - q| signed by the side, is not smooth: its sign jumps across the plane's
extension beside the triangle; equilibrium iterations with it failed on the finger pressing into a block.)

The second derivative (k, 12, 12) [1/length] follows from g = T / L:

    H = H_T / L - (dT dL^T + dL dT^T) / L^2 - T H_L / L^2 + 2 T dL dL^T / L^3

in (r, e1, e2), with dT = [N, e2 x r, r x e1], dL = [0, e2 x n, n x e1], H_T the triple product's constant
second derivative (blocks -[e2]x, [e1]x, -[r]x), H_L = D^T (I - n n^T) D / L + the term of n . d2N (blocks
-+[n]x) with D = dN/d(r, e1, e2), mapped to (p, a, b, c) by the constant (r, e1, e2) = M (p, a, b, c).
"""

from __future__ import annotations

import numpy as np

from softsim.mechanics.kinematics import cross_matrices

__all__ = ["plane_gap", "plane_gap_hessian"]

_I = np.eye(3)

#: (r, e1, e2) = _MAP (p, a, b, c)
_MAP = np.kron(np.array([[1.0, -1.0, 0.0, 0.0], [0.0, -1.0, 1.0, 0.0], [0.0, -1.0, 0.0, 1.0]]), _I)


def _outer(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[:, :, None] * v[:, None, :]


def _parts(p: np.ndarray, triangle: np.ndarray):
    p = np.asarray(p, dtype=np.float64).reshape(-1, 3)
    triangle = np.asarray(triangle, dtype=np.float64).reshape(-1, 3, 3)
    a = triangle[:, 0]
    return p - a, triangle[:, 1] - a, triangle[:, 2] - a


def plane_gap(p: np.ndarray, triangle: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For points ``p`` (k, 3) and triangles ``triangle`` (k, 3, 3) (corner positions): the barycentric
    coordinates (k, 3) of p's projection on the triangle's plane, the plane's unit normal (k, 3) (right-handed
    in the corners' order) and the signed distance g (k,) along it."""
    r, e1, e2 = _parts(p, triangle)
    N = np.cross(e1, e2)
    N2 = np.einsum("ij,ij->i", N, N)
    wb = np.einsum("ij,ij->i", np.cross(r, e2), N) / N2
    wc = np.einsum("ij,ij->i", np.cross(e1, r), N) / N2
    n = N / np.sqrt(N2)[:, None]
    return np.column_stack([1.0 - wb - wc, wb, wc]), n, np.einsum("ij,ij->i", r, n)


def plane_gap_hessian(p: np.ndarray, triangle: np.ndarray) -> np.ndarray:
    """The second derivative (k, 12, 12) [1/length] of :func:`plane_gap`'s g with respect to (p, a, b, c), in
    that order (12 = 4 points x 3 coordinates)."""
    r, e1, e2 = _parts(p, triangle)
    k = r.shape[0]
    N = np.cross(e1, e2)
    L = np.linalg.norm(N, axis=1)
    n = N / L[:, None]
    T = np.einsum("ij,ij->i", r, N)
    dT = np.concatenate([N, np.cross(e2, r), np.cross(r, e1)], axis=1)
    dL = np.concatenate([np.zeros((k, 3)), np.cross(e2, n), np.cross(n, e1)], axis=1)
    HT = np.zeros((k, 9, 9))
    HT[:, 0:3, 3:6], HT[:, 0:3, 6:9], HT[:, 3:6, 6:9] = -cross_matrices(e2), cross_matrices(e1), -cross_matrices(r)
    HT = HT + HT.transpose(0, 2, 1)
    D = np.concatenate([np.zeros((k, 3, 3)), -cross_matrices(e2), cross_matrices(e1)], axis=2)  # dN / d(r, e1, e2)
    HL = np.einsum("kai,kab,kbj->kij", D, _I[None] - _outer(n, n), D) / L[:, None, None]
    HL[:, 3:6, 6:9] -= cross_matrices(n)
    HL[:, 6:9, 3:6] += cross_matrices(n)
    L1 = L[:, None, None]
    Tk = T[:, None, None]
    H = HT / L1 - (_outer(dT, dL) + _outer(dL, dT)) / L1 ** 2 - Tk * HL / L1 ** 2 + 2.0 * Tk * _outer(dL, dL) / L1 ** 3
    return np.einsum("ai,kab,bj->kij", _MAP, H, _MAP)
