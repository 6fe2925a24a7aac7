"""Plain-numpy transcription of SOFA's TetrahedronFEMForceField for one tetrahedron (methods large, polar, svd).

Written from SOFA's sources, independently of softsim's kernels, to test softsim's rotation methods against
SOFA's own arithmetic rather than against a formula of the project. Each block names the SOFA function it
transcribes:

- ``TetrahedronFEMForceField.inl``: computeStrainDisplacement, peudo_determinant_for_coef,
  computeMaterialStiffness, computeForce, computeStiffnessMatrix, computeRotationLarge, initLarge,
  accumulateForceLarge, initPolar, accumulateForcePolar, initSVD, accumulateForceSVD,
  applyStiffnessCorotational, getRotation.
- ``helper/decompose.inl``: polarDecomposition (Shoemake / Higham iteration, as simplified by Barbic),
  polarDecomposition_stable and SVD_stable; ``type/Mat.h``: oneNorm, infNorm; ``geometry/Tetrahedron.h``:
  volume.

SOFA's conventions kept here: a ``Transformation`` is a 3x3 matrix whose rows are set by ``A[i] = ...``;
``R * v`` is the matrix-vector product; ``rotations[i]`` is the transpose of the current frame R_0_2 and
``_initialRotations[i]`` the transpose of the rest frame R_0_1. ``Displacement`` and forces are 12-vectors
(node-major x, y, z), ``StrainDisplacement`` J is 12x6, ``MaterialStiffness`` K is 6x6 (Voigt xx, yy, zz,
xy, yz, zx, engineering shear). The plasticity, assembling and updateStiffnessMatrix options are left at
SOFA's defaults (off) and not transcribed.

The single substitution: SVD_stable obtains the eigenvectors of F^T F from
``Decompose::eigenDecomposition_iterative``; here ``numpy.linalg.eigh``. Eigenvectors are defined up to
sign and order, and the rotation U V^T that SVD_stable returns for a non-degenerate or plane-collapsed
element does not depend on either (the sorting by singular value and the sign fixes below are SOFA's).
"""

import numpy as np

#: Decompose<double>::zeroTolerance()
ZERO_TOLERANCE = 1e-8


# ------------------------------------------------------------------ type/Mat.h, geometry/Tetrahedron.h
def one_norm(A):
    """Mat.h oneNorm: largest column sum of absolute values."""
    norm = 0.0
    for i in range(3):
        column_abs_sum = abs(A[0, i]) + abs(A[1, i]) + abs(A[2, i])
        if column_abs_sum > norm:
            norm = column_abs_sum
    return norm


def inf_norm(A):
    """Mat.h infNorm: largest row sum of absolute values."""
    norm = 0.0
    for i in range(3):
        row_sum = abs(A[i, 0]) + abs(A[i, 1]) + abs(A[i, 2])
        if row_sum > norm:
            norm = row_sum
    return norm


def tetrahedron_volume(n0, n1, n2, n3):
    """geometry::Tetrahedron::volume: |signed volume| = |(n1-n0) . ((n2-n0) x (n3-n0))| / 6."""
    return abs(np.dot(n1 - n0, np.cross(n2 - n0, n3 - n0)) / 6.0)


# ------------------------------------------------------------------ helper/decompose.inl
def polar_decomposition(M):
    """Decompose::polarDecomposition(M, Q): the orthogonal factor Q of M = Q S (det Q = sign det M)."""
    Mk = M.T.copy()  # Mk = M^T
    M_one_norm = one_norm(Mk)
    M_inf_norm = inf_norm(Mk)
    while True:
        MadjTk = np.empty((3, 3))
        MadjTk[0] = np.cross(Mk[1], Mk[2])  # row 2 x row 3
        MadjTk[1] = np.cross(Mk[2], Mk[0])  # row 3 x row 1
        MadjTk[2] = np.cross(Mk[0], Mk[1])  # row 1 x row 2
        det = Mk[0, 0] * MadjTk[0, 0] + Mk[0, 1] * MadjTk[0, 1] + Mk[0, 2] * MadjTk[0, 2]
        if det == 0.0:  # SOFA warns "zero determinant encountered" and stops
            break
        MadjT_one = one_norm(MadjTk)
        MadjT_inf = inf_norm(MadjTk)
        gamma = np.sqrt(np.sqrt((MadjT_one * MadjT_inf) / (M_one_norm * M_inf_norm)) / abs(det))
        g1 = gamma * 0.5
        g2 = 0.5 / (gamma * det)
        Ek = Mk.copy()
        Mk = Mk * g1 + MadjTk * g2
        Ek -= Mk
        E_one_norm = one_norm(Ek)
        M_one_norm = one_norm(Mk)
        M_inf_norm = inf_norm(Mk)
        if not E_one_norm > M_one_norm * ZERO_TOLERANCE:
            break
    return Mk.T.copy()  # Q = Mk^T


def _main_direction_helper(edge):
    """The "check the main direction ... to take a not too close arbitrary vector" block of SVD_stable."""
    abs0, abs1, abs2 = abs(edge[0]), abs(edge[1]), abs(edge[2])
    if abs0 > abs1:
        return np.array([0.0, 1.0, 0.0]) if abs0 > abs2 else np.array([1.0, 0.0, 0.0])
    return np.array([0.0, 0.0, 1.0]) if abs1 > abs2 else np.array([1.0, 0.0, 0.0])


def svd_stable(F):
    """Decompose::SVD_stable(F, U, S, V) for 3x3 F: returns (U, S, V, degenerated or inverted)."""
    FtF = F.T @ F  # F.multTranspose(F)
    S, V = np.linalg.eigh(FtF)  # eigenDecomposition_iterative( FtF, V, S ); S holds the squares here
    V = V.copy()
    if np.linalg.det(V) < 0.0:  # V a reflexion -> made a rotation by negating a column
        V[:, 0] = -V[:, 0]
    degenerated = 0
    S_1 = np.empty(3)
    for i in range(3):
        if S[i] < ZERO_TOLERANCE:
            degenerated += 1
            S[i] = 0.0
            S_1[i] = 1.0
        else:
            S[i] = np.sqrt(S[i])
            S_1[i] = 1.0 / S[i]
    # sort singular values from small to large (SOFA's explicit comparisons)
    if S[0] < S[1]:
        if S[0] < S[2]:
            order = (0, 1, 2) if S[1] < S[2] else (0, 2, 1)
        else:
            order = (2, 0, 1)
    else:
        if S[1] < S[2]:
            order = (1, 0, 2) if S[0] < S[2] else (1, 2, 0)
        else:
            order = (2, 1, 0)
    U = F @ V @ np.diag(S_1)  # F * V.multDiagonal(S_1), in every case below
    if degenerated == 1:  # collapsed to a plane: keep the 2 valid edges, construct the third
        U[:, order[0]] = np.cross(U[:, order[1]], U[:, order[2]])
    elif degenerated == 2:  # collapsed to an edge (SOFA's edge2 mixes columns Sorder[2] and Sorder[0])
        edge2 = np.array([U[0, order[2]], U[1, order[0]], U[2, order[0]]])
        edge0 = _main_direction_helper(edge2)
        edge1 = np.cross(edge2, edge0)
        edge1 /= np.linalg.norm(edge1)
        edge0 = np.cross(edge1, edge2)
        U[:, order[0]] = edge0
        U[:, order[1]] = edge1
    elif degenerated == 3:  # collapsed to a point
        U = np.eye(3)
    inverted = np.linalg.det(U) < 0.0
    if inverted:  # un-inverting: negate the column of the smallest singular value
        U[:, order[0]] *= -1.0
        S[order[0]] *= -1.0
    return U, S, V, bool(degenerated) or inverted


def polar_decomposition_stable(M):
    """Decompose::polarDecomposition_stable(M, Q): Q = U V^T of SVD_stable (a rotation)."""
    U, _, V, _ = svd_stable(M)
    return U @ V.T  # U.multTransposed(V)


# ------------------------------------------------------------------ TetrahedronFEMForceField.inl
def peudo_determinant_for_coef(M):
    """peudo_determinant_for_coef (2x3 M)."""
    return (M[0][1] * M[1][2] - M[1][1] * M[0][2] - M[0][0] * M[1][2] + M[1][0] * M[0][2]
            + M[0][0] * M[1][1] - M[1][0] * M[0][1])


def compute_strain_displacement(a, b, c, d):
    """computeStrainDisplacement(J, a, b, c, d): J (12, 6) from the four (rotated rest) node positions."""
    J = np.zeros((12, 6))
    pd = peudo_determinant_for_coef
    M = [[0.0] * 3, [0.0] * 3]

    M[0] = [b[1], c[1], d[1]]
    M[1] = [b[2], c[2], d[2]]
    J[0][0] = J[1][3] = J[2][5] = -pd(M)
    M[0] = [b[0], c[0], d[0]]
    J[0][3] = J[1][1] = J[2][4] = pd(M)
    M[1] = [b[1], c[1], d[1]]
    J[0][5] = J[1][4] = J[2][2] = -pd(M)

    M[0] = [c[1], d[1], a[1]]
    M[1] = [c[2], d[2], a[2]]
    J[3][0] = J[4][3] = J[5][5] = pd(M)
    M[0] = [c[0], d[0], a[0]]
    J[3][3] = J[4][1] = J[5][4] = -pd(M)
    M[1] = [c[1], d[1], a[1]]
    J[3][5] = J[4][4] = J[5][2] = pd(M)

    M[0] = [d[1], a[1], b[1]]
    M[1] = [d[2], a[2], b[2]]
    J[6][0] = J[7][3] = J[8][5] = -pd(M)
    M[0] = [d[0], a[0], b[0]]
    J[6][3] = J[7][1] = J[8][4] = pd(M)
    M[1] = [d[1], a[1], b[1]]
    J[6][5] = J[7][4] = J[8][2] = -pd(M)

    M[0] = [a[1], b[1], c[1]]
    M[1] = [a[2], b[2], c[2]]
    J[9][0] = J[10][3] = J[11][5] = pd(M)
    M[0] = [a[0], b[0], c[0]]
    J[9][3] = J[10][1] = J[11][4] = -pd(M)
    M[1] = [a[1], b[1], c[1]]
    J[9][5] = J[10][4] = J[11][2] = pd(M)
    return J


def compute_material_stiffness(young, poisson, initial_points):
    """computeMaterialStiffness(i, a, b, c, d): K (6, 6) divided by 36 times the rest volume."""
    K = np.zeros((6, 6))
    K[0][0] = K[1][1] = K[2][2] = 1.0
    K[0][1] = K[0][2] = K[1][0] = K[1][2] = K[2][0] = K[2][1] = poisson / (1 - poisson)
    K[3][3] = K[4][4] = K[5][5] = (1 - 2 * poisson) / (2 * (1 - poisson))
    K *= (young * (1 - poisson)) / ((1 + poisson) * (1 - 2 * poisson))
    volume = tetrahedron_volume(*initial_points)
    K /= volume * 36
    return K


def compute_force(D, K, J, fact=1.0):
    """computeForce(F, Depl, K, J[, fact]): F = J K J^T D (SOFA's unrolled products skip only the
    structural zeros of J and K, so the dense product is the same sum)."""
    JtD = J.T @ D
    KJtD = K @ JtD
    KJtD *= fact
    return J @ KJtD


def compute_stiffness_matrix(K, J, Rot):
    """computeStiffnessMatrix(S, SR, K, J, Rot): SR = RR (J K J^T) RR^T, RR = diag(Rot, Rot, Rot, Rot)."""
    JKJt = J @ K @ J.T
    RR = np.kron(np.eye(4), Rot)
    S = RR @ JKJt
    return S @ RR.T


def compute_rotation_large(p, a, b, c):
    """computeRotationLarge(r, p, a, b, c): rows edgex, edgey, edgez of the frame of nodes a, b, c."""
    edgex = (p[b] - p[a]) / np.linalg.norm(p[b] - p[a])
    edgey = p[c] - p[a]
    edgez = np.cross(edgex, edgey)
    edgez = edgez / np.linalg.norm(edgez)
    edgey = np.cross(edgez, edgex)
    return np.array([edgex, edgey, edgez])


class SofaTetrahedron:
    """One TetrahedronFEMForceField element with nodes 0, 1, 2, 3 (``index = [a, b, c, d]``).

    ``SofaTetrahedron(rest_points (4, 3), young, poisson, method)`` runs computeMaterialStiffness and
    init<Method> (reinit); :meth:`add_force` runs accumulateForce<Method> and returns the force it adds (the
    internal force f(x)); :meth:`add_dforce` runs applyStiffnessCorotational with the rotation of the last
    :meth:`add_force` and returns the df it adds (-K dx for kFactor 1); :meth:`stiffness_matrix` is the
    element block of buildStiffnessMatrix (df/dx = -SR); :meth:`rotation` the getRotation composition
    rotations * _initialRotations^T.
    """

    def __init__(self, rest_points, young, poisson, method):
        if method not in ("large", "polar", "svd"):
            raise ValueError(method)
        self.method = method
        self.initialPoints = np.asarray(rest_points, dtype=np.float64).copy()
        self.index = (0, 1, 2, 3)
        self.materialsStiffnesses = compute_material_stiffness(young, poisson, self.initialPoints)
        {"large": self._init_large, "polar": self._init_polar, "svd": self._init_svd}[method]()

    # ---------------------------------------------------------------- large
    def _init_large(self):
        """initLarge."""
        initialPoints = self.initialPoints
        a, b, c, d = self.index
        R_0_1 = compute_rotation_large(initialPoints, a, b, c)
        self._initialRotations = R_0_1.T.copy()
        self.rotations = self._initialRotations.copy()
        rie = [R_0_1 @ initialPoints[a], R_0_1 @ initialPoints[b], R_0_1 @ initialPoints[c],
               R_0_1 @ initialPoints[d]]
        rie[1] = rie[1] - rie[0]
        rie[2] = rie[2] - rie[0]
        rie[3] = rie[3] - rie[0]
        rie[0] = np.zeros(3)
        self._rotatedInitialElements = rie
        self.strainDisplacements = compute_strain_displacement(*rie)

    def _accumulate_force_large(self, p):
        """accumulateForceLarge (not assembling)."""
        index = self.index
        R_0_2 = compute_rotation_large(p, index[0], index[1], index[2])
        self.rotations = R_0_2.T.copy()
        deforme = [R_0_2 @ p[index[i]] for i in range(4)]
        deforme[1][0] -= deforme[0][0]
        deforme[2][0] -= deforme[0][0]
        deforme[2][1] -= deforme[0][1]
        deforme[3] = deforme[3] - deforme[0]
        rie = self._rotatedInitialElements
        D = np.zeros(12)
        D[3] = rie[1][0] - deforme[1][0]
        D[6] = rie[2][0] - deforme[2][0]
        D[7] = rie[2][1] - deforme[2][1]
        D[9] = rie[3][0] - deforme[3][0]
        D[10] = rie[3][1] - deforme[3][1]
        D[11] = rie[3][2] - deforme[3][2]
        F = compute_force(D, self.materialsStiffnesses, self.strainDisplacements)
        f = np.zeros((4, 3))
        for i in range(0, 12, 3):
            f[index[i // 3]] += self.rotations @ F[i:i + 3]
        return f

    # ---------------------------------------------------------------- polar
    def _init_polar(self):
        """initPolar."""
        initialPoints = self.initialPoints
        a, b, c, d = self.index
        A = np.array([initialPoints[b] - initialPoints[a], initialPoints[c] - initialPoints[a],
                      initialPoints[d] - initialPoints[a]])
        R_0_1 = polar_decomposition(A)
        self._initialRotations = R_0_1.T.copy()
        self.rotations = self._initialRotations.copy()
        rie = [R_0_1 @ initialPoints[a], R_0_1 @ initialPoints[b], R_0_1 @ initialPoints[c],
               R_0_1 @ initialPoints[d]]
        self._rotatedInitialElements = rie
        self.strainDisplacements = compute_strain_displacement(*rie)

    def _full_displacement_force(self, p, R_0_2):
        """The common tail of accumulateForcePolar and accumulateForceSVD (not assembling)."""
        index = self.index
        self.rotations = R_0_2.T.copy()
        deforme = [R_0_2 @ p[index[i]] for i in range(4)]
        rie = self._rotatedInitialElements
        D = np.empty(12)
        for node in range(4):
            for k in range(3):
                D[3 * node + k] = rie[node][k] - deforme[node][k]
        F = compute_force(D, self.materialsStiffnesses, self.strainDisplacements)
        f = np.zeros((4, 3))
        for i in range(0, 12, 3):
            f[index[i // 3]] += self.rotations @ F[i:i + 3]
        return f

    def _accumulate_force_polar(self, p):
        """accumulateForcePolar."""
        index = self.index
        A = np.array([p[index[1]] - p[index[0]], p[index[2]] - p[index[0]], p[index[3]] - p[index[0]]])
        R_0_2 = polar_decomposition(A)
        return self._full_displacement_force(p, R_0_2)

    # ---------------------------------------------------------------- svd
    def _init_svd(self):
        """initSVD."""
        initialPoints = self.initialPoints
        a, b, c, d = self.index
        A = np.array([initialPoints[b] - initialPoints[a], initialPoints[c] - initialPoints[a],
                      initialPoints[d] - initialPoints[a]])
        self._initialTransformation = np.linalg.inv(A)
        R_0_1 = polar_decomposition(A)
        self._initialRotations = R_0_1.T.copy()
        self.rotations = self._initialRotations.copy()
        rie = [R_0_1 @ initialPoints[a], R_0_1 @ initialPoints[b], R_0_1 @ initialPoints[c],
               R_0_1 @ initialPoints[d]]
        self._rotatedInitialElements = rie
        self.strainDisplacements = compute_strain_displacement(*rie)

    def _accumulate_force_svd(self, p):
        """accumulateForceSVD."""
        index = self.index
        A = np.array([p[index[1]] - p[index[0]], p[index[2]] - p[index[0]], p[index[3]] - p[index[0]]])
        F = A @ self._initialTransformation
        if np.linalg.det(F) < 1e-6:  # inverted or too flat element -> SVD decomposition
            R_0_2 = polar_decomposition_stable(F)
            R_0_2 = R_0_2 @ self._initialRotations.T  # R_0_2.multTransposed(_initialRotations)
            self.used_svd_branch = True
        else:  # not inverted & not degenerated -> classical polar
            R_0_2 = polar_decomposition(A)
            self.used_svd_branch = False
        return self._full_displacement_force(p, R_0_2)

    # ---------------------------------------------------------------- common
    def add_force(self, p):
        """addForce on this element: the force (4, 3) accumulated by accumulateForce<Method>."""
        p = np.asarray(p, dtype=np.float64)
        return {"large": self._accumulate_force_large, "polar": self._accumulate_force_polar,
                "svd": self._accumulate_force_svd}[self.method](p)

    def add_dforce(self, dx, kfactor=1.0):
        """addDForce -> applyStiffnessCorotational(df, dx, i, a, b, c, d, kFactor): the df (4, 3) it adds."""
        a, b, c, d = self.index
        R = self.rotations
        dx = np.asarray(dx, dtype=np.float64)
        X = np.concatenate([R.T @ dx[a], R.T @ dx[b], R.T @ dx[c], R.T @ dx[d]])  # rotate by R^T
        F = compute_force(X, self.materialsStiffnesses, self.strainDisplacements, kfactor)
        df = np.zeros((4, 3))
        for node, i in zip((a, b, c, d), range(0, 12, 3)):
            df[node] -= R @ F[i:i + 3]  # rotate by R
        return df

    def stiffness_matrix(self):
        """buildStiffnessMatrix's element block: SR = R J K J^T R^T with R = rotations (df/dx = -SR)."""
        return compute_stiffness_matrix(self.materialsStiffnesses, self.strainDisplacements, self.rotations)

    def rotation(self):
        """getRotation's per-element term: rotations * transpose(_initialRotations) = R_0_2^T R_0_1."""
        return self.rotations @ self._initialRotations.T
