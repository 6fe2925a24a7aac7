"""Mass matrices of linear (P1) tetrahedra: consistent and lumped, and Rayleigh damping.

Consistent mass of one tet of density ``rho`` and volume ``V``: ``M_ab = rho V / 20 (1 + delta_ab) I_3`` for its
four nodes a, b (the exact integral of ``rho N_a N_b``); lumped mass: the row sums, ``rho V / 4`` per node and
per tet, on the diagonal. DOFs are node-major (``dof = 3 i + k``), so both matrices are ``(3n, 3n)`` CSR.

Rayleigh damping, sign convention. SOFA writes the damping force's derivative ``B = df/dv = -(rayleighMass M -
rayleighStiffness K_sofa)`` with ``K_sofa = df/dx`` (negative semi-definite). softsim's ``K = -df_int/dx`` is
SPD, so ``K_sofa = -K`` and the damping force is ``f_damp = -C_damp v`` with the *positive semi-definite*
``C_damp = rayleighMass M + rayleighStiffness K`` (i.e. ``B = -C_damp``): :func:`rayleigh_damping` returns
``C_damp``.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["TetMass", "rayleigh_damping"]


def _positive_finite(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)) or np.any(array <= 0.0):
        raise ParameterError(f"{name} must be finite and > 0, got {value!r}")
    return array


class TetMass:
    """Mass of a tetrahedral body, consistent or lumped.

    Parameters
    ----------
    X : (n, 3) rest positions [length].
    tets : (m, 4) node ids (orientation is irrelevant: volumes are taken in absolute value).
    massDensity : float or (m,) per tet, > 0 [mass / length^3]; exclusive with ``totalMass``.
    totalMass : float > 0 [mass], spread with a uniform density over the mesh volume.
    lumped : False (default, consistent matrix) or True (diagonal matrix of the row sums).

    Attributes
    ----------
    density : (m,) density of each tet; volumes : (m,) rest volumes; total_mass : float;
    nodal_masses : (n,) lumped masses (the row sums of either matrix, per node); matrix : csr (3n, 3n).
    """

    def __init__(self, X, tets, *, massDensity=None, totalMass=None, lumped: bool = False):  # noqa: N803
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != 3 or X.shape[0] == 0:
            raise ParameterError(f"TetMass: X must have shape (n, 3) with n >= 1, got {X.shape}")
        tets = np.asarray(tets)
        if tets.ndim != 2 or tets.shape[1] != 4 or tets.shape[0] == 0 or not np.issubdtype(tets.dtype, np.integer):
            raise ParameterError(f"TetMass: tets must be an integer array of shape (m, 4), got {tets.shape}")
        tets = tets.astype(np.int64)
        if tets.min() < 0 or tets.max() >= X.shape[0]:
            raise ParameterError(f"TetMass: tet node ids must lie in 0..{X.shape[0] - 1}")
        if (massDensity is None) == (totalMass is None):
            raise ParameterError("TetMass needs exactly one of massDensity and totalMass")
        if not isinstance(lumped, bool | np.bool_):
            raise ParameterError(f"TetMass: lumped must be a boolean, got {lumped!r}")
        self.n_nodes = X.shape[0]
        self.tets = tets
        self.lumped = bool(lumped)
        self.volumes = np.abs(np.linalg.det(X[tets[:, 1:]] - X[tets[:, :1]])) / 6.0
        total_volume = float(self.volumes.sum())
        if total_volume <= 0.0:
            raise ParameterError("TetMass: the tetrahedra have zero total volume")
        if totalMass is not None:
            density = float(_positive_finite("totalMass", totalMass)) / total_volume
            self.density = np.full(tets.shape[0], density)
        else:
            density = _positive_finite("massDensity", massDensity)
            if density.ndim == 0:
                self.density = np.full(tets.shape[0], float(density))
            elif density.shape == (tets.shape[0],):
                self.density = density.copy()
            else:
                raise ParameterError(
                    f"massDensity must be a scalar or have shape ({tets.shape[0]},), got {density.shape}"
                )
        element_mass = self.density * self.volumes
        self.total_mass = float(element_mass.sum())
        self.nodal_masses = np.bincount(
            tets.reshape(-1), weights=np.repeat(element_mass / 4.0, 4), minlength=self.n_nodes
        )
        self.matrix = self._lumped_matrix() if self.lumped else self._consistent_matrix(element_mass)

    def _lumped_matrix(self) -> sp.csr_matrix:
        return sp.diags(np.repeat(self.nodal_masses, 3)).tocsr()

    def _consistent_matrix(self, element_mass: np.ndarray) -> sp.csr_matrix:
        local = (np.ones((4, 4)) + np.eye(4)) / 20.0  # M_ab / (rho V)
        values = np.broadcast_to(
            element_mass[:, None, None, None] * local[None, :, :, None], (element_mass.size, 4, 4, 3)
        )  # (m, a, b, k): the same value for k = 0, 1, 2
        row_nodes = np.broadcast_to(self.tets[:, :, None, None], values.shape)
        col_nodes = np.broadcast_to(self.tets[:, None, :, None], values.shape)
        component = np.arange(3)[None, None, None, :]
        rows = (3 * row_nodes + component).reshape(-1)
        cols = (3 * col_nodes + component).reshape(-1)
        n_dofs = 3 * self.n_nodes
        matrix = sp.coo_matrix((values.reshape(-1), (rows, cols)), shape=(n_dofs, n_dofs)).tocsr()
        matrix.sum_duplicates()
        return matrix

    def kinetic_energy(self, v) -> float:
        """``0.5 v^T M v`` for node velocities ``v`` ``(n, 3)`` [mass length^2 / time^2]."""
        flat = np.asarray(v, dtype=np.float64).reshape(-1)
        if flat.size != 3 * self.n_nodes:
            raise ParameterError(f"kinetic_energy: v must have shape ({self.n_nodes}, 3), got {np.shape(v)}")
        return 0.5 * float(flat @ (self.matrix @ flat))


def rayleigh_damping(M: sp.spmatrix, K: sp.spmatrix, rayleighMass: float, rayleighStiffness: float):  # noqa: N803
    """``C_damp = rayleighMass M + rayleighStiffness K`` (csr), with K = -df/dx (SPD): f_damp = -C_damp v."""
    for name, value in (("rayleighMass", rayleighMass), ("rayleighStiffness", rayleighStiffness)):
        if not np.isfinite(value) or value < 0.0:
            raise ParameterError(f"{name} must be finite and >= 0, got {value!r}")
    return (rayleighMass * M + rayleighStiffness * K).tocsr()
