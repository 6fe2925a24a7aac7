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

from softsim.mechanics._kernels.algebra import _det3
from softsim.mechanics._kernels.laws import (
    COROTATIONAL,
    LINEAR,
    NEOHOOKEAN,
    STVK,
    _corotated_exact_tangent,
    _corotated_linear,
    _hyperelastic,
    _project_psd,
    _sofa_consistent_tangent,
)
from softsim.mechanics._kernels.rotations import (
    ROT_POLAR_F,
    ROT_SVD_F,
    _element_rotation,
)


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


@njit(cache=True, nogil=True, inline="always")
def _gradient(x, tet, dNe, F):
    for i in range(3):
        for j in range(3):
            F[i, j] = (x[tet[0], i] * dNe[0, j] + x[tet[1], i] * dNe[1, j] + x[tet[2], i] * dNe[2, j]
                       + x[tet[3], i] * dNe[3, j])


@njit(cache=True, nogil=True)
def _element_scratch():
    """The per-element work arrays that :func:`assemble` and :func:`cauchy_stress` share, allocated once per call:
    F, P, R (identity: the rotation of models without one), the rotation's Q, C, sa, w, V, u, D, Pr, the laws'
    G, H, E and A (9, 9)."""
    return (np.empty((3, 3)), np.empty((3, 3)), np.eye(3), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)),
            np.empty(3), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((2, 3)),
            np.empty((3, 3)), np.empty((3, 3)), np.empty((9, 9)))


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
    F, P, R, Q, C, sa, w, V, G, H, E, u, D, Pr, A = _element_scratch()
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
                                         dNe, Ke, Sm, Minv, dR, dE, dP, v6, g)
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
    F, P, R, Q, C, sa, w, V, G, H, E, u, D, Pr, A = _element_scratch()
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
