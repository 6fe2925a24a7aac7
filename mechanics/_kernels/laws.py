"""The material laws at one Gauss point: the corotated linear stress and its exact tangents (of the energy for
polarF/svdF, of SOFA's force for large/polar/svd), the hyperelastic laws and their dP/dF, the per-element
clamp of negative eigenvalues."""

import math

import numpy as np
from numba import njit

from softsim.mechanics._kernels.algebra import _cofactor, _det3, _levi
from softsim.mechanics._kernels.rotations import (
    ROT_LARGE,
    ROT_POLAR,
    ROT_SVD,
    SOFA_SVD_MIN_DET,
    _sofa_rotation_derivative,
)

LINEAR = 0
COROTATIONAL = 1
STVK = 2
NEOHOOKEAN = 3
STABLE_NEOHOOKEAN = 4
MODEL_CODES = {"linear": LINEAR, "corotational": COROTATIONAL, "stvk": STVK, "neohookean": NEOHOOKEAN,
               "stable_neohookean": STABLE_NEOHOOKEAN}


@njit(cache=True, nogil=True)
def _corotated_linear(F, R, mu, lam, P, eps):
    """Linear law on the unrotated gradient R^T F; P = R P_lin(R^T F) (3, 3). Returns Psi; ``eps`` is scratch.

    SOFA's tangent R K0 R^T of this law is written by :func:`mechanics._kernels.assembly._scatter_blocks`
    (``_dyads`` with T = R).
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

    ``V`` holds the right singular vectors of F (columns, as left by :func:`.rotations.rotation_from_f`) and ``R`` its
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
def _sofa_consistent_tangent(rot, x, tet, F, R, Q, D, Pp, R01, mu, lam, vol, dNe, Ke, S, Minv, dR, dE, dP, v, g):
    """The consistent (exact) element Jacobian K_e = -d f_e/dx_e (12, 12) of SOFA's corotational force
    f_a = -V R S(R^T F) dN_a, S(E) = 2 mu (sym E - I) + lam (tr E - 3) I, with the derivative of SOFA's
    rotation R included: dP = dR S + R (2 mu sym dE + lam tr dE I), dE = dR^T F + R^T dF.

    The matrix is not symmetric (SOFA's force is not the gradient of an energy). It is SOFA's R K0 R^T (the
    dE = R^T dF part: K_ab = V (mu dN_a.dN_b I + lam u_a u_b^T + mu u_b u_a^T), u_a = R dN_a) plus the
    rotation's part dP_r = dR S + R (2 mu sym(dR^T F) + lam tr(dR^T F) I) for the nodes b >= 1 that R depends
    on (ROT_LARGE: nodes 1 and 2; the polar methods: 1 to 3). R depends only on the edges from node 0, so node
    0's rotation part is minus the others' sum. ROT_SVD below SOFA_SVD_MIN_DET (SOFA's SVD branch of an
    inverted element) keeps dR = 0, i.e. SOFA's tangent for that element. ``Q`` (ROT_LARGE), ``D`` and ``Pp``
    (ROT_POLAR/ROT_SVD) are as left by :func:`mechanics._kernels.rotations._element_rotation`; the other arrays
    (``g`` (4, 3) among them) are scratch.
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
    for a in range(4):  # SOFA's R K0 R^T
        for i in range(3):
            g[a, i] = R[i, 0] * dNe[a, 0] + R[i, 1] * dNe[a, 1] + R[i, 2] * dNe[a, 2]
    for a in range(4):
        for b in range(4):
            sab = mu * (dNe[a, 0] * dNe[b, 0] + dNe[a, 1] * dNe[b, 1] + dNe[a, 2] * dNe[b, 2])
            for i in range(3):
                for k in range(3):
                    Ke[3 * a + i, 3 * b + k] = vol * (lam * g[a, i] * g[b, k] + mu * g[b, i] * g[a, k]
                                                      + (sab if i == k else 0.0))
    polar = rot == ROT_POLAR or (rot == ROT_SVD and _det3(F) >= SOFA_SVD_MIN_DET)
    if not (rot == ROT_LARGE or polar):
        return
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
    last = 2 if rot == ROT_LARGE else 3
    for b in range(1, last + 1):
        for k in range(3):
            _sofa_rotation_derivative(rot, x, tet, Q, D, Pp, R01, Minv, b, k, dR, v)
            for i in range(3):  # dE = dR^T F
                for j in range(3):
                    dE[i, j] = dR[0, i] * F[0, j] + dR[1, i] * F[1, j] + dR[2, i] * F[2, j]
            trd = dE[0, 0] + dE[1, 1] + dE[2, 2]
            for i in range(3):  # dS = mu (dE + dE^T) + lam tr(dE) I, in dE's place
                for j in range(i, 3):
                    ds = mu * (dE[i, j] + dE[j, i])
                    dE[i, j] = ds
                    dE[j, i] = ds
                dE[i, i] += lam * trd
            for i in range(3):  # dP = dR S + R dS
                for j in range(3):
                    dP[i, j] = (dR[i, 0] * S[0, j] + dR[i, 1] * S[1, j] + dR[i, 2] * S[2, j]
                                + R[i, 0] * dE[0, j] + R[i, 1] * dE[1, j] + R[i, 2] * dE[2, j])
            column = 3 * b + k
            for a in range(4):
                for i in range(3):
                    value = vol * (dP[i, 0] * dNe[a, 0] + dP[i, 1] * dNe[a, 1] + dP[i, 2] * dNe[a, 2])
                    Ke[3 * a + i, column] += value
                    Ke[3 * a + i, k] -= value
