"""Allocation-free numba kernels for P1 tetrahedral elasticity (one Gauss point per element).

One fused loop over elements computes F, the first Piola stress P, the energy density, the nodal
internal forces f_a = -V P dN_a and the 12x12 tangent K_e, and scatters K_e straight into the
``.data`` array of a CSR matrix whose pattern was built once (see :mod:`mechanics.fem`).

Tangent of a hyperelastic model: K_e[3a+i, 3b+k] = V sum_{J,L} dN_a,J A[3i+J, 3k+L] dN_b,L with
A = dP/dF (9x9, row-major flattening of the 3x3 index pairs). Only the blocks b >= a are computed;
the lower blocks are their transposes, so the assembled K is exactly (bitwise) symmetric.
"""

import math

import numpy as np
from numba import njit

LINEAR = 0
COROTATIONAL = 1
STVK = 2
NEOHOOKEAN = 3
STABLE_NEOHOOKEAN = 4
MODEL_CODES = {"linear": LINEAR, "corotational": COROTATIONAL, "stvk": STVK, "neohookean": NEOHOOKEAN,
               "stable_neohookean": STABLE_NEOHOOKEAN}

# rotation methods: softsim's frame-invariant rotations of F, and SOFA TetrahedronFEMForceField's three
ROT_POLAR_F = 0
ROT_SVD_F = 1
ROT_LARGE = 2
ROT_POLAR = 3
ROT_SVD = 4
ROTATION_CODES = {"polarF": ROT_POLAR_F, "svdF": ROT_SVD_F, "large": ROT_LARGE, "polar": ROT_POLAR,
                  "svd": ROT_SVD}
#: SOFA's accumulateForceSVD takes its SVD branch below this det F (inverted or too flat element)
SOFA_SVD_MIN_DET = 1e-6


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


@njit(cache=True, nogil=True)
def rotation_from_f(F, proper, R, C, a, w, V, u):
    """Rotation part of F from its SVD F = U S V^T computed through the eigenvectors of F^T F.

    ``proper=True`` ('svdF', Irving et al. 2004; SOFA's polarDecomposition_stable in 'svd'): R = U V^T with
    det R = +1 even for inverted F (the sign goes to the smallest singular value). ``proper=False``
    ('polarF'): the orthogonal polar factor of F, a reflection (det -1) when det F < 0. A collapsed F (all
    singular values ~0) gives R = I.
    """
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += F[k, i] * F[k, j]
            C[i, j] = s
    _sym_eig3(C, a, w, V)
    u1 = u[0]
    u2 = u[1]
    for i in range(3):
        u1[i] = F[i, 0] * V[0, 0] + F[i, 1] * V[1, 0] + F[i, 2] * V[2, 0]
        u2[i] = F[i, 0] * V[0, 1] + F[i, 1] * V[1, 1] + F[i, 2] * V[2, 1]
    n1 = math.sqrt(u1[0] * u1[0] + u1[1] * u1[1] + u1[2] * u1[2])
    if not n1 > 1e-300:
        for i in range(3):
            for j in range(3):
                R[i, j] = 1.0 if i == j else 0.0
        return
    for i in range(3):
        u1[i] /= n1
    d = u1[0] * u2[0] + u1[1] * u2[1] + u1[2] * u2[2]
    for i in range(3):
        u2[i] -= d * u1[i]
    n2 = math.sqrt(u2[0] * u2[0] + u2[1] * u2[1] + u2[2] * u2[2])
    if not n2 > 1e-12 * n1:
        # rank-1 F: any unit vector orthogonal to u1
        k = 0
        if abs(u1[1]) < abs(u1[k]):
            k = 1
        if abs(u1[2]) < abs(u1[k]):
            k = 2
        for i in range(3):
            u2[i] = (1.0 if i == k else 0.0) - u1[k] * u1[i]
        n2 = math.sqrt(u2[0] * u2[0] + u2[1] * u2[1] + u2[2] * u2[2])
    for i in range(3):
        u2[i] /= n2
    sign = 1.0
    if not proper and _det3(F) < 0.0:
        sign = -1.0
    u30 = sign * (u1[1] * u2[2] - u1[2] * u2[1])
    u31 = sign * (u1[2] * u2[0] - u1[0] * u2[2])
    u32 = sign * (u1[0] * u2[1] - u1[1] * u2[0])
    for i in range(3):
        u3i = u30 if i == 0 else (u31 if i == 1 else u32)
        for j in range(3):
            R[i, j] = u1[i] * V[j, 0] + u2[i] * V[j, 1] + u3i * V[j, 2]


@njit(cache=True, nogil=True)
def _frame(x, tet, Q):
    """SOFA 'large' frame of the first three nodes: rows x_hat, y_hat, z_hat."""
    a = tet[0]
    b = tet[1]
    c = tet[2]
    e0 = x[b, 0] - x[a, 0]
    e1 = x[b, 1] - x[a, 1]
    e2 = x[b, 2] - x[a, 2]
    # a collapsed edge or face has no frame: NaN (never a division error) makes the frame step fail the state
    n = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2) or math.nan
    Q[0, 0] = e0 / n
    Q[0, 1] = e1 / n
    Q[0, 2] = e2 / n
    f0 = x[c, 0] - x[a, 0]
    f1 = x[c, 1] - x[a, 1]
    f2 = x[c, 2] - x[a, 2]
    z0 = Q[0, 1] * f2 - Q[0, 2] * f1
    z1 = Q[0, 2] * f0 - Q[0, 0] * f2
    z2 = Q[0, 0] * f1 - Q[0, 1] * f0
    n = math.sqrt(z0 * z0 + z1 * z1 + z2 * z2) or math.nan
    Q[2, 0] = z0 / n
    Q[2, 1] = z1 / n
    Q[2, 2] = z2 / n
    Q[1, 0] = Q[2, 1] * Q[0, 2] - Q[2, 2] * Q[0, 1]
    Q[1, 1] = Q[2, 2] * Q[0, 0] - Q[2, 0] * Q[0, 2]
    Q[1, 2] = Q[2, 0] * Q[0, 1] - Q[2, 1] * Q[0, 0]


@njit(cache=True, nogil=True)
def _corotated_linear(F, R, mu, lam, P, eps):
    """Linear law on the unrotated gradient R^T F; P = R P_lin(R^T F) (3, 3). Returns Psi; ``eps`` is scratch.

    SOFA's tangent R K0 R^T of this law is written by :func:`_scatter_blocks` (``_dyads`` with T = R).
    """
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R[k, i] * F[k, j]
            eps[i, j] = s
    tr = eps[0, 0] + eps[1, 1] + eps[2, 2] - 3.0
    psi = 0.0
    for i in range(3):
        for j in range(i, 3):
            e = 0.5 * (eps[i, j] + eps[j, i]) - (1.0 if i == j else 0.0)
            eps[i, j] = e
            eps[j, i] = e
    for i in range(3):
        for j in range(3):
            psi += mu * eps[i, j] * eps[i, j]
    psi += 0.5 * lam * tr * tr
    # P = R (2 mu eps + lam tr I)
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R[i, k] * (2.0 * mu * eps[k, j] + (lam * tr if k == j else 0.0))
            P[i, j] = s
    return psi


@njit(cache=True, nogil=True)
def _corotated_exact_tangent(F, R, V, mu, lam, vol, dNe, project, Ke, U, sig, coef, w, h):
    """Exact element tangent of the corotated energy Psi = mu sum (s_i - 1)^2 + lam/2 (sum s_i - 3)^2.

    ``V`` holds the right singular vectors of F (columns, as left by :func:`rotation_from_f`) and ``R`` its
    rotation, so U = R V and the singular values s_i = u_i . F v_i (signed for 'svdF', det R = +1; unsigned
    for 'polarF', where R and U are reflections when det F < 0). With the analytic eigensystem of dP/dF
    (Smith et al. 2019: scaling modes with eigenvalues 2 mu, 2 mu, 2 mu + 3 lam, three flips with 2 mu and
    three twists T_ij = (u_i v_j^T - u_j v_i^T)/sqrt2 with lambda_ij = 2 mu + (2 lam (tr S - 3) - 4 mu) /
    (s_i + s_j)), dP/dF = 2 mu I + lam vec(R) vec(R)^T + sum_{i<j} (lambda_ij - 2 mu) vec(T_ij) vec(T_ij)^T.
    ``project`` clamps the twist eigenvalues at 0 (the only ones that can be negative): K_e is then
    positive semi-definite. Writes K_e (12, 12); the other arrays are scratch.
    """
    for i in range(3):
        for j in range(3):
            U[i, j] = R[i, 0] * V[0, j] + R[i, 1] * V[1, j] + R[i, 2] * V[2, j]
    for i in range(3):
        s = 0.0
        for k in range(3):
            s += U[k, i] * (F[k, 0] * V[0, i] + F[k, 1] * V[1, i] + F[k, 2] * V[2, i])
        sig[i] = s
    numerator = 2.0 * lam * (sig[0] + sig[1] + sig[2] - 3.0) - 4.0 * mu
    for p in range(3):
        i = 0 if p < 2 else 1
        j = 1 if p == 0 else 2
        den = sig[i] + sig[j]
        if abs(den) < 1e-8:  # s_i = -s_j: the twist eigenvalue is singular (a collapsed element)
            den = 1e-8 if den >= 0.0 else -1e-8
        eig = 2.0 * mu + numerator / den
        if project and eig < 0.0:
            eig = 0.0
        coef[p] = 0.5 * (eig - 2.0 * mu)  # the 1/2 of the two 1/sqrt2 of T_ij
    for a in range(4):
        for k in range(3):
            w[a, k] = V[0, k] * dNe[a, 0] + V[1, k] * dNe[a, 1] + V[2, k] * dNe[a, 2]
    # h[p, a] = sqrt2 T_p dN_a for the pairs p = (0,1), (0,2), (1,2); h[3, a] = R dN_a
    for a in range(4):
        for r in range(3):
            h[0, a, r] = U[r, 0] * w[a, 1] - U[r, 1] * w[a, 0]
            h[1, a, r] = U[r, 0] * w[a, 2] - U[r, 2] * w[a, 0]
            h[2, a, r] = U[r, 1] * w[a, 2] - U[r, 2] * w[a, 1]
            h[3, a, r] = U[r, 0] * w[a, 0] + U[r, 1] * w[a, 1] + U[r, 2] * w[a, 2]
    for a in range(4):
        for b in range(a, 4):
            dd = 2.0 * mu * (dNe[a, 0] * dNe[b, 0] + dNe[a, 1] * dNe[b, 1] + dNe[a, 2] * dNe[b, 2])
            for i in range(3):
                for k in range(3):
                    v = (lam * h[3, a, i] * h[3, b, k] + coef[0] * h[0, a, i] * h[0, b, k]
                         + coef[1] * h[1, a, i] * h[1, b, k] + coef[2] * h[2, a, i] * h[2, b, k])
                    if i == k:
                        v += dd
                    v *= vol
                    Ke[3 * a + i, 3 * b + k] = v
                    Ke[3 * b + k, 3 * a + i] = v


@njit(cache=True, nogil=True)
def _hyperelastic(model, F, mu, lam, P, A, want_A, G, H, E):
    """First Piola stress P, its derivative A = dP/dF (9x9, if ``want_A``) and Psi for STVK, NEOHOOKEAN and
    STABLE_NEOHOOKEAN (for the latter ``mu``/``lam`` are the reparametrised mu'/lam'). Returns Psi."""
    if model == STVK:
        # E = (F^T F - I)/2, S = lam tr E I + 2 mu E, P = F S
        for i in range(3):
            for j in range(3):
                s = 0.0
                for k in range(3):
                    s += F[k, i] * F[k, j]
                E[i, j] = 0.5 * (s - (1.0 if i == j else 0.0))
        trE = E[0, 0] + E[1, 1] + E[2, 2]
        psi = 0.5 * lam * trE * trE
        for i in range(3):
            for j in range(3):
                psi += mu * E[i, j] * E[i, j]
                H[i, j] = 2.0 * mu * E[i, j] + (lam * trE if i == j else 0.0)  # S
        for i in range(3):
            for j in range(3):
                P[i, j] = F[i, 0] * H[0, j] + F[i, 1] * H[1, j] + F[i, 2] * H[2, j]
        if want_A:
            for i in range(3):  # G = F F^T
                for k in range(3):
                    G[i, k] = F[i, 0] * F[k, 0] + F[i, 1] * F[k, 1] + F[i, 2] * F[k, 2]
            for i in range(3):
                for J in range(3):
                    for k in range(3):
                        for L in range(3):
                            v = lam * F[i, J] * F[k, L] + mu * F[i, L] * F[k, J]
                            if i == k:
                                v += H[L, J]
                            if J == L:
                                v += mu * G[i, k]
                            A[3 * i + J, 3 * k + L] = v
        return psi
    if model == NEOHOOKEAN:
        J = _det3(F)
        if not J > 0.0:
            for i in range(3):
                for j in range(3):
                    P[i, j] = np.nan
            if want_A:
                for i in range(9):
                    for j in range(9):
                        A[i, j] = np.nan
            return np.nan
        _cofactor(F, G)
        lnJ = math.log(J)
        trC = 0.0
        for i in range(3):
            for j in range(3):
                H[i, j] = G[i, j] / J  # F^-T
                trC += F[i, j] * F[i, j]
        psi = 0.5 * mu * (trC - 3.0) - mu * lnJ + 0.5 * lam * lnJ * lnJ
        for i in range(3):
            for j in range(3):
                P[i, j] = mu * (F[i, j] - H[i, j]) + lam * lnJ * H[i, j]
        if want_A:
            c = mu - lam * lnJ
            for i in range(3):
                for Jj in range(3):
                    for k in range(3):
                        for L in range(3):
                            v = c * H[i, L] * H[k, Jj] + lam * H[i, Jj] * H[k, L]
                            if i == k and Jj == L:
                                v += mu
                            A[3 * i + Jj, 3 * k + L] = v
        return psi
    # STABLE_NEOHOOKEAN
    alpha = 1.0 + 0.75 * mu / lam
    J = _det3(F)
    _cofactor(F, G)
    Ic = 0.0
    for i in range(3):
        for j in range(3):
            Ic += F[i, j] * F[i, j]
    psi = (0.5 * mu * (Ic - 3.0) + 0.5 * lam * (J - alpha) ** 2 - 0.5 * mu * math.log(Ic + 1.0)
           - (0.5 * lam * (1.0 - alpha) ** 2 - 0.5 * mu * math.log(4.0)))
    s = mu * (1.0 - 1.0 / (Ic + 1.0))
    r = lam * (J - alpha)
    for i in range(3):
        for j in range(3):
            P[i, j] = s * F[i, j] + r * G[i, j]
    if want_A:
        t = 2.0 * mu / ((Ic + 1.0) * (Ic + 1.0))
        for i in range(3):
            for Jj in range(3):
                for k in range(3):
                    for L in range(3):
                        v = t * F[i, Jj] * F[k, L] + lam * G[i, Jj] * G[k, L]
                        if i == k and Jj == L:
                            v += s
                        if i != k and Jj != L:
                            mm = 3 - i - k
                            nn = 3 - Jj - L
                            v += r * _levi(i, k, mm) * _levi(Jj, L, nn) * F[mm, nn]
                        A[3 * i + Jj, 3 * k + L] = v
    return psi


@njit(cache=True, nogil=True)
def _project_psd(A):
    """Replace the symmetric 9x9 ``A`` by its nearest positive semi-definite matrix (negative eigenvalues
    clamped to 0). Makes K_e = V dN^T A dN positive semi-definite."""
    w, Q = np.linalg.eigh(A)
    if w[0] >= 0.0:
        return
    for i in range(9):
        for j in range(9):
            s = 0.0
            for k in range(9):
                if w[k] > 0.0:
                    s += Q[i, k] * w[k] * Q[j, k]
            A[i, j] = s


@njit(cache=True, nogil=True)
def _ke_from_a(A, dNe, vol, Ke, Gt):
    """K_e[3a+i, 3b+k] = V sum_{J,L} dN_a,J A[3i+J, 3k+L] dN_b,L (blocks b >= a, mirrored)."""
    for a in range(4):
        for i in range(3):
            for kl in range(9):
                Gt[a, i, kl] = (dNe[a, 0] * A[3 * i, kl] + dNe[a, 1] * A[3 * i + 1, kl]
                                + dNe[a, 2] * A[3 * i + 2, kl])
    for a in range(4):
        for b in range(a, 4):
            for i in range(3):
                for k in range(3):
                    v = vol * (Gt[a, i, 3 * k] * dNe[b, 0] + Gt[a, i, 3 * k + 1] * dNe[b, 1]
                               + Gt[a, i, 3 * k + 2] * dNe[b, 2])
                    Ke[3 * a + i, 3 * b + k] = v
                    Ke[3 * b + k, 3 * a + i] = v


@njit(cache=True, nogil=True)
def _scatter_blocks(k_data, block_base, row_stride, tet, e, vol, dNe, u, s, alpha, beta, gamma, M):
    """Add the element tangent K_ab = V (s_ab I + alpha u_a u_b^T + beta u_b u_a^T + gamma (dN_a.dN_b) M) to
    ``k_data`` for every node pair, computing each block b >= a once and writing its transpose to (b, a).

    Every model whose dP/dF is a sum of such dyads takes this path (no 9x9 dP/dF, no 12x12 K_e):
    linear and SOFA's corotational (u_a = R dN_a, s_ab = mu dN_a.dN_b, alpha = lam, beta = mu), StVK
    (u_a = F dN_a, s_ab = dN_a.S dN_b, alpha = lam, beta = gamma = mu, M = F F^T) and neo-Hookean
    (u_a = F^-T dN_a, s_ab = mu dN_a.dN_b, alpha = lam, beta = mu - lam ln J). ``u`` (4, 3), ``s`` (4, 4)
    symmetric, ``M`` (3, 3) symmetric (read only when gamma != 0).
    """
    for a in range(4):
        stride_a = row_stride[tet[a]]
        for b in range(a, 4):
            stride_b = row_stride[tet[b]]
            base_ab = block_base[e, 4 * a + b]
            if base_ab < 0:  # a block of a dropped (fixed) node
                continue
            base_ba = block_base[e, 4 * b + a]
            sab = s[a, b]
            gd = gamma * (dNe[a, 0] * dNe[b, 0] + dNe[a, 1] * dNe[b, 1] + dNe[a, 2] * dNe[b, 2])
            ua0 = u[a, 0]
            ua1 = u[a, 1]
            ua2 = u[a, 2]
            ub0 = u[b, 0]
            ub1 = u[b, 1]
            ub2 = u[b, 2]
            for i in range(3):
                uai = ua0 if i == 0 else (ua1 if i == 1 else ua2)
                ubi = ub0 if i == 0 else (ub1 if i == 1 else ub2)
                ca = alpha * uai
                cb = beta * ubi
                v0 = vol * (ca * ub0 + cb * ua0 + (gd * M[i, 0] if gamma != 0.0 else 0.0) + (sab if i == 0 else 0.0))
                v1 = vol * (ca * ub1 + cb * ua1 + (gd * M[i, 1] if gamma != 0.0 else 0.0) + (sab if i == 1 else 0.0))
                v2 = vol * (ca * ub2 + cb * ua2 + (gd * M[i, 2] if gamma != 0.0 else 0.0) + (sab if i == 2 else 0.0))
                row = base_ab + i * stride_a
                k_data[row] += v0
                k_data[row + 1] += v1
                k_data[row + 2] += v2
                if b != a:
                    column = base_ba + i
                    k_data[column] += v0
                    k_data[column + stride_b] += v1
                    k_data[column + 2 * stride_b] += v2


@njit(cache=True, nogil=True)
def _dyads(T, dNe, u, s, S, scale):
    """u_a = T dN_a (4, 3) and s_ab (4, 4): dN_a . S dN_b when ``S`` is given, else scale dN_a . dN_b."""
    for a in range(4):
        for i in range(3):
            u[a, i] = T[i, 0] * dNe[a, 0] + T[i, 1] * dNe[a, 1] + T[i, 2] * dNe[a, 2]
    for a in range(4):
        for b in range(a, 4):
            if S is None:
                v = scale * (dNe[a, 0] * dNe[b, 0] + dNe[a, 1] * dNe[b, 1] + dNe[a, 2] * dNe[b, 2])
            else:
                v = 0.0
                for J in range(3):
                    v += dNe[a, J] * (S[J, 0] * dNe[b, 0] + S[J, 1] * dNe[b, 1] + S[J, 2] * dNe[b, 2])
            s[a, b] = v
            s[b, a] = v


@njit(cache=True, nogil=True)
def polar_newton(F, R):
    """Orthogonal polar factor of F by Higham's scaled Newton iteration R <- (g R + R^-T / g) / 2 (Frobenius
    scaling g while the steps are large), about 4x faster than :func:`rotation_from_f` and equal to it to
    round-off. A reflection when det F < 0, like SOFA's polar. Returns False (R untouched) for a nearly
    singular F or no convergence in 30 iterations; the caller then falls back to :func:`rotation_from_f`.

    Written with scalar locals: the same loop over 3x3 scratch arrays runs several times slower (numba cannot
    keep array entries in registers across stores).
    """
    r00 = F[0, 0]
    r01 = F[0, 1]
    r02 = F[0, 2]
    r10 = F[1, 0]
    r11 = F[1, 1]
    r12 = F[1, 2]
    r20 = F[2, 0]
    r21 = F[2, 1]
    r22 = F[2, 2]
    change = 1.0
    for _ in range(30):
        c00 = r11 * r22 - r12 * r21  # cofactor matrix: R^-T = cof(R) / det R
        c01 = r12 * r20 - r10 * r22
        c02 = r10 * r21 - r11 * r20
        c10 = r02 * r21 - r01 * r22
        c11 = r00 * r22 - r02 * r20
        c12 = r01 * r20 - r00 * r21
        c20 = r01 * r12 - r02 * r11
        c21 = r02 * r10 - r00 * r12
        c22 = r00 * r11 - r01 * r10
        det = r00 * c00 + r01 * c01 + r02 * c02
        if change > 1e-4:  # far from orthogonal: scale (near it, g ~ 1 and the square roots only cost time)
            norm_r = (r00 * r00 + r01 * r01 + r02 * r02 + r10 * r10 + r11 * r11 + r12 * r12
                      + r20 * r20 + r21 * r21 + r22 * r22)  # |R|_F^2
            norm_c = (c00 * c00 + c01 * c01 + c02 * c02 + c10 * c10 + c11 * c11 + c12 * c12
                      + c20 * c20 + c21 * c21 + c22 * c22)  # |cof R|_F^2 = det^2 |R^-1|_F^2
            if not abs(det) > 1e-12 * norm_r * math.sqrt(norm_r):
                return False
            g = math.sqrt(math.sqrt(norm_c) / (abs(det) * math.sqrt(norm_r)))  # sqrt(|R^-1|_F / |R|_F)
            a = 0.5 * g
            b = 0.5 / (g * det)
        else:
            a = 0.5
            b = 0.5 / det
        n00 = a * r00 + b * c00
        n01 = a * r01 + b * c01
        n02 = a * r02 + b * c02
        n10 = a * r10 + b * c10
        n11 = a * r11 + b * c11
        n12 = a * r12 + b * c12
        n20 = a * r20 + b * c20
        n21 = a * r21 + b * c21
        n22 = a * r22 + b * c22
        change = ((n00 - r00) ** 2 + (n01 - r01) ** 2 + (n02 - r02) ** 2 + (n10 - r10) ** 2 + (n11 - r11) ** 2
                  + (n12 - r12) ** 2 + (n20 - r20) ** 2 + (n21 - r21) ** 2 + (n22 - r22) ** 2)
        r00 = n00
        r01 = n01
        r02 = n02
        r10 = n10
        r11 = n11
        r12 = n12
        r20 = n20
        r21 = n21
        r22 = n22
        if change < 1e-16:  # quadratic convergence: this iterate is off by about change / 2 < 1e-16
            R[0, 0] = r00
            R[0, 1] = r01
            R[0, 2] = r02
            R[1, 0] = r10
            R[1, 1] = r11
            R[1, 2] = r12
            R[2, 0] = r20
            R[2, 1] = r21
            R[2, 2] = r22
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _edges(x, tet, D):
    """D = [x1 - x0, x2 - x0, x3 - x0] (edges as columns)."""
    for i in range(3):
        x0 = x[tet[0], i]
        D[i, 0] = x[tet[1], i] - x0
        D[i, 1] = x[tet[2], i] - x0
        D[i, 2] = x[tet[3], i] - x0


@njit(cache=True, nogil=True, inline="always")
def _element_rotation(rot, x, tet, F, R01, dm_inv, R, Q, C, a, w, V, u, D, P, need_V):
    """The element rotation R (3, 3) of a corotational method (the stress is R P_lin(R^T F)).

    - ROT_POLAR_F / ROT_SVD_F (softsim): the polar factor of F (a reflection when det F < 0), resp. the
      proper rotation U V^T of F's SVD. ``need_V``: also leave the right singular vectors of F in ``V`` (the
      exact corotational tangent needs them).
    - SOFA's methods compose a current frame R_0_2 with the rest frame R_0_1 = ``R01`` (rows, as
      SOFA's ``_initialRotations`` transposed): R = R_0_2^T R_0_1 (TetrahedronFEMForceField::getRotation).
      ROT_LARGE: R_0_2 = the Gram-Schmidt frame of the edges from node 0 to nodes 1 and 2 (rows).
      ROT_POLAR: R_0_2 = polar(Ds^T) = polar(Ds)^T (Ds the current edges as columns), so R = polar(Ds) R_0_1.
      ROT_SVD: as ROT_POLAR when det F >= SOFA_SVD_MIN_DET; below it R_0_2 = U V^T(Ds^T Dm^-T) R_0_1 (a
      proper rotation, robust to inversion), so R = R_0_1^T (U V^T)^T R_0_1. U V^T is SOFA's
      SVD_stable rotation for every element but one collapsed onto a line or a point (two or three zero
      singular values), where both pick an arbitrary completion of the frame.
    ``dm_inv`` (Dm^-1) is read by ROT_SVD only; Q, C, a, w, V, u, D, P are scratch.
    """
    if rot == ROT_LARGE:
        _frame(x, tet, Q)
        for i in range(3):  # R = Q^T Q0
            for j in range(3):
                R[i, j] = Q[0, i] * R01[0, j] + Q[1, i] * R01[1, j] + Q[2, i] * R01[2, j]
        return
    if rot == ROT_POLAR or rot == ROT_SVD:
        _edges(x, tet, D)
        if rot == ROT_SVD and _det3(F) < SOFA_SVD_MIN_DET:
            for i in range(3):  # Q = Ds^T Dm^-T
                for j in range(3):
                    Q[i, j] = D[0, i] * dm_inv[j, 0] + D[1, i] * dm_inv[j, 1] + D[2, i] * dm_inv[j, 2]
            rotation_from_f(Q, True, P, C, a, w, V, u)
            for i in range(3):  # Q = P^T R_0_1
                for j in range(3):
                    Q[i, j] = P[0, i] * R01[0, j] + P[1, i] * R01[1, j] + P[2, i] * R01[2, j]
            for i in range(3):  # R = R_0_1^T Q
                for j in range(3):
                    R[i, j] = R01[0, i] * Q[0, j] + R01[1, i] * Q[1, j] + R01[2, i] * Q[2, j]
            return
        if not polar_newton(D, P):
            rotation_from_f(D, False, P, C, a, w, V, u)
        for i in range(3):  # R = polar(Ds) R_0_1
            for j in range(3):
                R[i, j] = P[i, 0] * R01[0, j] + P[i, 1] * R01[1, j] + P[i, 2] * R01[2, j]
        return
    # for det F > 0 the proper rotation U V^T of 'svdF' is the polar factor too
    if (rot == ROT_SVD_F and not _det3(F) > 0.0) or not polar_newton(F, R):
        rotation_from_f(F, rot == ROT_SVD_F, R, C, a, w, V, u)
    elif need_V:  # V from the eigenvectors of F^T F; R stays Newton's, so the forces never depend on need_V
        rotation_from_f(F, rot == ROT_SVD_F, Q, C, a, w, V, u)


@njit(cache=True, nogil=True, inline="always")
def _gradient(x, tet, dNe, F):
    for i in range(3):
        for j in range(3):
            F[i, j] = (x[tet[0], i] * dNe[0, j] + x[tet[1], i] * dNe[1, j] + x[tet[2], i] * dNe[2, j]
                       + x[tet[3], i] * dNe[3, j])


@njit(cache=True, nogil=True)
def assemble(model, rot, x, tets, dN, vol, mu, lam, rest_rotations, dm_inv, want_f, want_K,
             psi_out, f_out, k_data, block_base, row_stride, project_psd, exact_corotational):
    """Fused element loop.

    Writes the energy density per element into ``psi_out`` (m,), the internal force f_int (n, 3) into
    ``f_out`` (if ``want_f``; zeroed first) and the tangent values into ``k_data`` (nnz,) through the block
    scatter map (if ``want_K``; zeroed first): entry (3a+i, 3b+k) of element e goes to
    ``k_data[block_base[e, 4a+b] + i * row_stride[tets[e, a]] + k]`` (blocks with a negative base are
    skipped: the rows and columns of fixed nodes when ``k_data`` holds the free-DOF tangent).
    ``project_psd`` clamps the negative eigenvalues of dP/dF per element (hyperelastic models, and the exact
    corotational tangent).
    ``exact_corotational`` (COROTATIONAL): the exact Jacobian of the force instead of SOFA's R K0 R^T: the
    Hessian of the corotated energy for ROT_POLAR_F and ROT_SVD_F (symmetric), the consistent Jacobian of
    SOFA's force with the derivative of its rotation for ROT_LARGE, ROT_POLAR and ROT_SVD (not symmetric:
    :func:`_sofa_consistent_tangent`). ``rest_rotations`` (m, 3, 3) are the rest frames R_0_1 of
    SOFA's methods (see :func:`_element_rotation`) and ``dm_inv`` (m, 3, 3) the inverse rest edge matrices;
    each is read only by the rotation methods that need it.
    """
    m = tets.shape[0]
    F = np.empty((3, 3))
    P = np.empty((3, 3))
    R = np.eye(3)
    Q = np.empty((3, 3))
    C = np.empty((3, 3))
    sa = np.empty((3, 3))
    w = np.empty(3)
    V = np.empty((3, 3))
    G = np.empty((3, 3))
    H = np.empty((3, 3))
    E = np.empty((3, 3))
    u = np.empty((2, 3))
    D = np.empty((3, 3))
    Pr = np.empty((3, 3))
    A = np.empty((9, 9))
    Ke = np.empty((12, 12))
    Gt = np.empty((4, 3, 9))
    g = np.empty((4, 3))
    U = np.empty((3, 3))
    sig = np.empty(3)
    coef = np.empty(3)
    h = np.empty((4, 4, 3))
    s = np.empty((4, 4))
    Sm = np.empty((3, 3))
    Minv = np.empty((3, 3))
    dR = np.empty((3, 3))
    dE = np.empty((3, 3))
    dP = np.empty((3, 3))
    v6 = np.empty((6, 3))
    exact = exact_corotational and model == COROTATIONAL
    of_f = rot == ROT_POLAR_F or rot == ROT_SVD_F
    # dyadic tangents go straight from a few vectors to k_data (_scatter_blocks); the others build K_e
    dyadic = (model == LINEAR or model == COROTATIONAL) and not exact
    dyadic = dyadic or ((model == STVK or model == NEOHOOKEAN) and not project_psd)
    if want_f:
        f_out[:] = 0.0
    if want_K:
        k_data[:] = 0.0
    for e in range(m):
        tet = tets[e]
        dNe = dN[e]
        _gradient(x, tet, dNe, F)
        if model == LINEAR or model == COROTATIONAL:
            if model == COROTATIONAL:
                _element_rotation(rot, x, tet, F, rest_rotations[e], dm_inv[e], R, Q, C, sa, w, V, u, D, Pr,
                                  want_K and exact and of_f)
            psi = _corotated_linear(F, R, mu[e], lam[e], P, E)
            if want_K and exact and of_f:
                _corotated_exact_tangent(F, R, V, mu[e], lam[e], vol[e], dNe, project_psd, Ke, U, sig, coef,
                                         g, h)
            elif want_K and exact:
                _sofa_consistent_tangent(rot, x, tet, F, R, Q, D, Pr, rest_rotations[e], mu[e], lam[e], vol[e],
                                         dNe, Ke, Sm, Minv, dR, dE, dP, v6)
            elif want_K:
                _dyads(R, dNe, g, s, None, mu[e])
                _scatter_blocks(k_data, block_base, row_stride, tet, e, vol[e], dNe, g, s, lam[e], mu[e], 0.0, G)
        else:
            psi = _hyperelastic(model, F, mu[e], lam[e], P, A, want_K and not dyadic, G, H, E)
            if want_K and dyadic and model == STVK:
                for i in range(3):  # G = F F^T
                    for k in range(3):
                        G[i, k] = F[i, 0] * F[k, 0] + F[i, 1] * F[k, 1] + F[i, 2] * F[k, 2]
                _dyads(F, dNe, g, s, H, 0.0)
                _scatter_blocks(k_data, block_base, row_stride, tet, e, vol[e], dNe, g, s, lam[e], mu[e], mu[e], G)
            elif want_K and dyadic:  # NEOHOOKEAN: H = F^-T when det F > 0
                if psi == psi:
                    _dyads(H, dNe, g, s, None, mu[e])
                    beta = mu[e] - lam[e] * math.log(_det3(F))
                else:
                    g[:] = np.nan
                    beta = np.nan
                _scatter_blocks(k_data, block_base, row_stride, tet, e, vol[e], dNe, g, s, lam[e], beta, 0.0, G)
            elif want_K:
                if project_psd:
                    _project_psd(A)
                _ke_from_a(A, dNe, vol[e], Ke, Gt)
        psi_out[e] = psi
        if want_f:
            ve = vol[e]
            for a in range(4):
                node = tet[a]
                for i in range(3):
                    f_out[node, i] -= ve * (P[i, 0] * dNe[a, 0] + P[i, 1] * dNe[a, 1] + P[i, 2] * dNe[a, 2])
        if want_K and not dyadic:
            for a in range(4):
                stride = row_stride[tet[a]]
                for b in range(4):
                    base = block_base[e, 4 * a + b]
                    if base < 0:  # a block of a dropped (fixed) node
                        continue
                    for i in range(3):
                        row = base + i * stride
                        for k in range(3):
                            k_data[row + k] += Ke[3 * a + i, 3 * b + k]


@njit(cache=True, nogil=True)
def cauchy_stress(model, rot, x, tets, dN, mu, lam, rest_rotations, dm_inv, sigma_out, psi_out):
    """Cauchy stress (m, 3, 3) and energy density (m,) per element.

    linear: the small-strain stress; corotational: R sigma_lin(R^T F) R^T; hyperelastic: P F^T / J
    (NaN for the neo-Hookean model when J <= 0).
    """
    m = tets.shape[0]
    F = np.empty((3, 3))
    P = np.empty((3, 3))
    R = np.eye(3)
    Q = np.empty((3, 3))
    C = np.empty((3, 3))
    sa = np.empty((3, 3))
    w = np.empty(3)
    V = np.empty((3, 3))
    G = np.empty((3, 3))
    H = np.empty((3, 3))
    E = np.empty((3, 3))
    u = np.empty((2, 3))
    D = np.empty((3, 3))
    Pr = np.empty((3, 3))
    A = np.empty((9, 9))
    for e in range(m):
        tet = tets[e]
        dNe = dN[e]
        _gradient(x, tet, dNe, F)
        if model == LINEAR or model == COROTATIONAL:
            if model == COROTATIONAL:
                _element_rotation(rot, x, tet, F, rest_rotations[e], dm_inv[e], R, Q, C, sa, w, V, u, D, Pr, False)
            psi_out[e] = _corotated_linear(F, R, mu[e], lam[e], P, E)
            for i in range(3):  # sigma = P R^T = R sigma_local R^T
                for j in range(3):
                    sigma_out[e, i, j] = P[i, 0] * R[j, 0] + P[i, 1] * R[j, 1] + P[i, 2] * R[j, 2]
        else:
            psi_out[e] = _hyperelastic(model, F, mu[e], lam[e], P, A, False, G, H, E)
            J = _det3(F)
            for i in range(3):
                for j in range(3):
                    sigma_out[e, i, j] = (P[i, 0] * F[j, 0] + P[i, 1] * F[j, 1] + P[i, 2] * F[j, 2]) / J


@njit(cache=True, nogil=True)
def _sofa_rotation_derivative(rot, x, tet, Q, D, Pp, R01, Minv, b, k, dR, v):
    """dR/dx_{b,k} (3, 3) of SOFA's element rotation R (see :func:`_element_rotation`) for node ``b`` of the
    element and direction ``k``; zero where R does not depend on that coordinate.

    - ROT_LARGE: R = Q^T R_0_1 with Q's rows the Gram-Schmidt frame x = e/|e|, z = x X f/|x X f|, y = z X x
      of the edges e = x_1 - x_0, f = x_2 - x_0 (``Q`` as left by :func:`_frame`): dx = (I - x x^T) de/|e|,
      dz = (I - z z^T)(dx X f + x X df)/|x X f|, dy = dz X x + z X dx.
    - ROT_POLAR (and ROT_SVD above SOFA_SVD_MIN_DET): R = polar(Ds) R_0_1 with Ds = Pp S (``D``, ``Pp``):
      d polar(Ds) = Pp [w]x with w = (tr S I - S)^-1 axial(A - A^T), A = Pp^T dDs (``Minv`` holds
      (tr S I - S)^-1).
    ``v`` (6, 3) is scratch.
    """
    for i in range(3):
        for j in range(3):
            dR[i, j] = 0.0
    if rot == ROT_LARGE:
        se = (1.0 if b == 1 else 0.0) - (1.0 if b == 0 else 0.0)
        sf = (1.0 if b == 2 else 0.0) - (1.0 if b == 0 else 0.0)
        if se == 0.0 and sf == 0.0:
            return
        e0 = x[tet[1], 0] - x[tet[0], 0]
        e1 = x[tet[1], 1] - x[tet[0], 1]
        e2 = x[tet[1], 2] - x[tet[0], 2]
        f0 = x[tet[2], 0] - x[tet[0], 0]
        f1 = x[tet[2], 1] - x[tet[0], 1]
        f2 = x[tet[2], 2] - x[tet[0], 2]
        # a collapsed edge or face has no frame derivative: NaN, never a division error (the state is refused)
        ne = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2) or math.nan
        z0 = Q[0, 1] * f2 - Q[0, 2] * f1
        z1 = Q[0, 2] * f0 - Q[0, 0] * f2
        z2 = Q[0, 0] * f1 - Q[0, 1] * f0
        nz = math.sqrt(z0 * z0 + z1 * z1 + z2 * z2) or math.nan
        # dx_hat = (I - x x^T) de / |e| with de = se e_k
        for i in range(3):
            v[0, i] = se * ((1.0 if i == k else 0.0) - Q[0, i] * Q[0, k]) / ne
        # dz = dx_hat X f + x_hat X df, df = sf e_k
        v[1, 0] = v[0, 1] * f2 - v[0, 2] * f1
        v[1, 1] = v[0, 2] * f0 - v[0, 0] * f2
        v[1, 2] = v[0, 0] * f1 - v[0, 1] * f0
        if sf != 0.0:
            for i in range(3):
                # x_hat X (sf e_k): component i = sf * eps_{i j k} x_j
                for j in range(3):
                    v[1, i] += sf * _levi(i, j, k) * Q[0, j]
        zd = Q[2, 0] * v[1, 0] + Q[2, 1] * v[1, 1] + Q[2, 2] * v[1, 2]
        for i in range(3):
            v[2, i] = (v[1, i] - Q[2, i] * zd) / nz  # dz_hat
        # dy_hat = dz_hat X x_hat + z_hat X dx_hat
        v[1, 0] = v[2, 1] * Q[0, 2] - v[2, 2] * Q[0, 1] + Q[2, 1] * v[0, 2] - Q[2, 2] * v[0, 1]
        v[1, 1] = v[2, 2] * Q[0, 0] - v[2, 0] * Q[0, 2] + Q[2, 2] * v[0, 0] - Q[2, 0] * v[0, 2]
        v[1, 2] = v[2, 0] * Q[0, 1] - v[2, 1] * Q[0, 0] + Q[2, 0] * v[0, 1] - Q[2, 1] * v[0, 0]
        for i in range(3):  # dR = dQ^T R_0_1, dQ's rows v[0], v[1], v[2]
            for j in range(3):
                dR[i, j] = v[0, i] * R01[0, j] + v[1, i] * R01[1, j] + v[2, i] * R01[2, j]
        return
    # ROT_POLAR / ROT_SVD: A = Pp^T dDs; dDs has e_k in column b - 1 (b >= 1) or -e_k in every column (b = 0)
    for i in range(3):
        for j in range(3):
            col = (1.0 if j == b - 1 else 0.0) if b > 0 else -1.0
            v[i, j] = Pp[k, i] * col
    w0 = v[2, 1] - v[1, 2]
    w1 = v[0, 2] - v[2, 0]
    w2 = v[1, 0] - v[0, 1]
    o0 = Minv[0, 0] * w0 + Minv[0, 1] * w1 + Minv[0, 2] * w2
    o1 = Minv[1, 0] * w0 + Minv[1, 1] * w1 + Minv[1, 2] * w2
    o2 = Minv[2, 0] * w0 + Minv[2, 1] * w1 + Minv[2, 2] * w2
    for i in range(3):  # d polar = Pp [o]x, then dR = d polar R_0_1
        v[3, i] = Pp[i, 1] * o2 - Pp[i, 2] * o1  # column 0 of Pp [o]x
        v[4, i] = -Pp[i, 0] * o2 + Pp[i, 2] * o0  # column 1
        v[5, i] = Pp[i, 0] * o1 - Pp[i, 1] * o0  # column 2
    for i in range(3):
        for j in range(3):
            dR[i, j] = v[3, i] * R01[0, j] + v[4, i] * R01[1, j] + v[5, i] * R01[2, j]


@njit(cache=True, nogil=True)
def _sofa_consistent_tangent(rot, x, tet, F, R, Q, D, Pp, R01, mu, lam, vol, dNe, Ke, S, Minv, dR, dE, dP, v):
    """The consistent (exact) element Jacobian K_e = -d f_e/dx_e (12, 12) of SOFA's corotational force
    f_a = -V R S(R^T F) dN_a, S(E) = 2 mu (sym E - I) + lam (tr E - 3) I, with the derivative of SOFA's
    rotation R included: dP = dR S + R (2 mu sym dE + lam tr dE I), dE = dR^T F + R^T dF.

    The matrix is not symmetric (SOFA's force is not the gradient of an energy). Without the dR terms it is
    SOFA's R K0 R^T. ROT_SVD below SOFA_SVD_MIN_DET (SOFA's SVD branch of an inverted element) keeps dR = 0,
    i.e. SOFA's tangent for that element. ``Q`` (ROT_LARGE), ``D`` and ``Pp`` (ROT_POLAR/ROT_SVD) are as left by
    :func:`_element_rotation`; the other arrays are scratch.
    """
    for i in range(3):  # S = 2 mu eps + lam tr(eps) I, eps = sym(R^T F) - I
        for j in range(3):
            s = 0.0
            for m in range(3):
                s += R[m, i] * F[m, j]
            dE[i, j] = s
    tr = dE[0, 0] + dE[1, 1] + dE[2, 2] - 3.0
    for i in range(3):
        for j in range(3):
            S[i, j] = mu * (dE[i, j] + dE[j, i]) - (2.0 * mu if i == j else 0.0) + (lam * tr if i == j else 0.0)
    polar = rot == ROT_POLAR or (rot == ROT_SVD and _det3(F) >= SOFA_SVD_MIN_DET)
    if polar:  # Minv = (tr S_p I - S_p)^-1 with S_p = Pp^T Ds
        for i in range(3):
            for j in range(3):
                dP[i, j] = Pp[0, i] * D[0, j] + Pp[1, i] * D[1, j] + Pp[2, i] * D[2, j]
        trs = dP[0, 0] + dP[1, 1] + dP[2, 2]
        for i in range(3):
            for j in range(3):
                dE[i, j] = (trs if i == j else 0.0) - 0.5 * (dP[i, j] + dP[j, i])
        _cofactor(dE, Minv)  # cofactor matrix; the inverse is its transpose over the determinant
        det = _det3(dE) or math.nan  # tr S I - S is singular only for a collapsed element
        for i in range(3):
            for j in range(i, 3):
                a = Minv[i, j] / det
                Minv[i, j] = Minv[j, i] / det
                Minv[j, i] = a
    for b in range(4):
        for k in range(3):
            if rot == ROT_LARGE or polar:
                _sofa_rotation_derivative(rot, x, tet, Q, D, Pp, R01, Minv, b, k, dR, v)
            else:
                for i in range(3):
                    for j in range(3):
                        dR[i, j] = 0.0
            for i in range(3):  # dE = dR^T F + R^T dF, dF = e_k dN_b^T
                for j in range(3):
                    dE[i, j] = (dR[0, i] * F[0, j] + dR[1, i] * F[1, j] + dR[2, i] * F[2, j]
                                + R[k, i] * dNe[b, j])
            trd = dE[0, 0] + dE[1, 1] + dE[2, 2]
            for i in range(3):  # dP = dR S + R dS, dS = mu (dE + dE^T) + lam tr(dE) I
                for j in range(3):
                    s = 0.0
                    for m in range(3):
                        ds = mu * (dE[m, j] + dE[j, m]) + (lam * trd if m == j else 0.0)
                        s += dR[i, m] * S[m, j] + R[i, m] * ds
                    dP[i, j] = s
            column = 3 * b + k
            for a in range(4):
                for i in range(3):
                    Ke[3 * a + i, column] = vol * (dP[i, 0] * dNe[a, 0] + dP[i, 1] * dNe[a, 1]
                                                   + dP[i, 2] * dNe[a, 2])
