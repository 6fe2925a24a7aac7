"""3x3 algebra for the element kernels: determinant, cofactors, the Levi-Civita symbol, the symmetric
eigen-decomposition."""

import math

from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _det3(F):
    return (F[0, 0] * (F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1])
            - F[0, 1] * (F[1, 0] * F[2, 2] - F[1, 2] * F[2, 0])
            + F[0, 2] * (F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0]))


@njit(cache=True, nogil=True)
def _cofactor(F, G):
    """G = cof(F) = det(F) F^-T = dJ/dF."""
    G[0, 0] = F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1]
    G[0, 1] = F[1, 2] * F[2, 0] - F[1, 0] * F[2, 2]
    G[0, 2] = F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0]
    G[1, 0] = F[0, 2] * F[2, 1] - F[0, 1] * F[2, 2]
    G[1, 1] = F[0, 0] * F[2, 2] - F[0, 2] * F[2, 0]
    G[1, 2] = F[0, 1] * F[2, 0] - F[0, 0] * F[2, 1]
    G[2, 0] = F[0, 1] * F[1, 2] - F[0, 2] * F[1, 1]
    G[2, 1] = F[0, 2] * F[1, 0] - F[0, 0] * F[1, 2]
    G[2, 2] = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]


@njit(cache=True, nogil=True)
def _levi(i, j, k):
    return (i - j) * (j - k) * (k - i) // 2


@njit(cache=True, nogil=True)
def _sym_eig3(C, a, w, V):
    """Cyclic Jacobi eigen-decomposition of the symmetric 3x3 ``C`` (``a`` is scratch).

    Writes eigenvalues ``w`` in decreasing order and orthonormal eigenvectors as columns of ``V`` with
    det V = +1.
    """
    for i in range(3):
        for j in range(3):
            a[i, j] = C[i, j]
            V[i, j] = 1.0 if i == j else 0.0
    for _sweep in range(30):
        off = a[0, 1] * a[0, 1] + a[0, 2] * a[0, 2] + a[1, 2] * a[1, 2]
        diag = a[0, 0] * a[0, 0] + a[1, 1] * a[1, 1] + a[2, 2] * a[2, 2]
        if off <= 1e-34 * diag or off == 0.0:
            break
        for pq in range(3):
            p = 0 if pq < 2 else 1
            q = 1 if pq == 0 else 2
            apq = a[p, q]
            if apq == 0.0:
                continue
            theta = (a[q, q] - a[p, p]) / (2.0 * apq)
            if abs(theta) > 1e150:
                t = 0.5 / theta
            else:
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):  # a <- a P
                akp = a[k, p]
                akq = a[k, q]
                a[k, p] = c * akp - s * akq
                a[k, q] = s * akp + c * akq
            for k in range(3):  # a <- P^T a
                apk = a[p, k]
                aqk = a[q, k]
                a[p, k] = c * apk - s * aqk
                a[q, k] = s * apk + c * aqk
            a[p, q] = 0.0
            a[q, p] = 0.0
            for k in range(3):  # V <- V P
                vkp = V[k, p]
                vkq = V[k, q]
                V[k, p] = c * vkp - s * vkq
                V[k, q] = s * vkp + c * vkq
    for i in range(3):
        w[i] = a[i, i]
    # sort decreasing (3 elements: bubble)
    for _ in range(2):
        for i in range(2):
            if w[i] < w[i + 1]:
                tmp = w[i]
                w[i] = w[i + 1]
                w[i + 1] = tmp
                for k in range(3):
                    tmp = V[k, i]
                    V[k, i] = V[k, i + 1]
                    V[k, i + 1] = tmp
    if _det3(V) < 0.0:
        for k in range(3):
            V[k, 2] = -V[k, 2]
