"""Element rotations of the corotational model: softsim's rotations of F (polarF, svdF) and SOFA
TetrahedronFEMForceField's (large, polar, svd), and the derivative of SOFA's rotations."""

import math

from numba import njit

from softsim.mechanics._kernels.algebra import _det3, _levi, _sym_eig3

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
def polar_newton(F, R):
    """Orthogonal polar factor of F by Higham's scaled Newton iteration R <- (g R + R^-T / g) / 2 (Frobenius
    scaling g while the steps are large), faster than :func:`rotation_from_f` (benchmarks/RESULTS.md) and
    equal to it to round-off. A reflection when det F < 0, like SOFA's polar. Returns False (R untouched) for a nearly
    singular F or no convergence in 30 iterations; the caller then falls back to :func:`rotation_from_f`.

    Written with scalar locals, which numba keeps in registers; it cannot keep the entries of 3x3 scratch arrays
    there across stores.
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
