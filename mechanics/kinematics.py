"""Rest geometry and kinematics of linear (P1) tetrahedra, vectorised over elements.

Shape gradients: for a tet with rest nodes X0..X3, Dm = [X1-X0, X2-X0, X3-X0] (columns, 3x3) and
dN[a] = dN_a/dX for a = 1..3 are the rows of Dm^-1, dN[0] = -(dN[1] + dN[2] + dN[3]). The deformation
gradient of current nodes x is F = sum_a x_a (outer) dN_a = Ds Dm^-1 (one Gauss point, constant per tet).
"""

import numpy as np

from softsim.mechanics.errors import ParameterError


def cross_matrices(vectors) -> np.ndarray:
    """The cross-product matrices ``[v]x`` (k, 3, 3) of ``vectors`` (k, 3), or (1, 3, 3) of one (3,):
    ``[v]x u = v x u``."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    out = np.zeros((v.shape[0], 3, 3))
    out[:, 0, 1], out[:, 0, 2], out[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    out[:, 1, 0], out[:, 2, 0], out[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    return out


def rest_shape(X, tets):
    """Rest-state quantities of every tetrahedron.

    Parameters
    ----------
    X : (n, 3) float64 rest positions.
    tets : (m, 4) int64 node ids, positively oriented (det[X1-X0, X2-X0, X3-X0] > 0).

    Returns
    -------
    dm_inv : (m, 3, 3) inverse rest edge matrices Dm^-1 [1/length].
    shape_gradients : (m, 4, 3) dN_a/dX of the four nodes [1/length].
    volumes : (m,) rest volumes [length^3].

    Raises
    ------
    ParameterError
        if a tetrahedron is inverted or degenerate (volume <= 1e-14 times its edge length cubed).
    """
    nodes = X[tets]  # (m, 4, 3)
    dm = np.transpose(nodes[:, 1:, :] - nodes[:, :1, :], (0, 2, 1))  # columns are edges
    det = np.linalg.det(dm)
    volumes = det / 6.0
    scale = np.max(np.abs(dm), axis=(1, 2)) ** 3 if len(tets) else np.zeros(0)
    bad = ~(det > 1e-14 * scale)
    if np.any(bad):
        ids = np.flatnonzero(bad)
        raise ParameterError(
            f"tets must be positively oriented and non-degenerate (volume > 0): {ids.size} bad "
            f"tetrahedra, first ids {ids[:10].tolist()} with volumes {volumes[ids[:3]].tolist()}"
        )
    dm_inv = np.linalg.inv(dm)
    shape_gradients = np.empty((len(tets), 4, 3))
    shape_gradients[:, 1:, :] = dm_inv
    shape_gradients[:, 0, :] = -dm_inv.sum(axis=1)
    return dm_inv, shape_gradients, volumes


def edge_frames(nodes):
    """SOFA 'large' element frames (Nesme et al. 2005) from the first three nodes a, b, c of each tet.

    Parameters
    ----------
    nodes : (m, 4, 3) or (m, 3, 3) node positions per element.

    Returns
    -------
    (m, 3, 3) rotation matrices whose rows are x_hat = unit(b - a), y_hat = z_hat cross x_hat,
    z_hat = unit(x_hat cross (c - a)). A world vector v has local coordinates frame @ v.
    """
    ab = nodes[:, 1] - nodes[:, 0]
    ac = nodes[:, 2] - nodes[:, 0]
    xh = ab / np.linalg.norm(ab, axis=1, keepdims=True)
    zh = np.cross(xh, ac)
    zh /= np.linalg.norm(zh, axis=1, keepdims=True)
    yh = np.cross(zh, xh)
    return np.stack([xh, yh, zh], axis=1)


def polar_frames(nodes):
    """SOFA 'polar' / 'svd' rest frames R_0_1 = polar(A) of A = Dm^T (rows the edges from node 0).

    Parameters
    ----------
    nodes : (m, 4, 3) node positions per element, positively oriented.

    Returns
    -------
    (m, 3, 3) rotations R_0_1 = polar(Dm)^T (Dm = [X1-X0, X2-X0, X3-X0], columns), the orthogonal factor of
    Dm^T = R_0_1 S; like :func:`edge_frames`, a world vector v has local coordinates R_0_1 @ v.
    """
    dm = np.transpose(nodes[:, 1:, :] - nodes[:, :1, :], (0, 2, 1))
    u, _, vt = np.linalg.svd(dm)
    return np.ascontiguousarray(np.transpose(u @ vt, (0, 2, 1)))
