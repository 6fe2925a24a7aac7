"""Allocation-free numba kernels of P1 tetrahedral elasticity, one job per module:

- ``algebra``: 3x3 determinant, cofactors, the symmetric eigen-decomposition;
- ``rotations``: the corotational model's element rotations (softsim's of F, SOFA's three) and the derivative
  of SOFA's;
- ``laws``: the stress and tangent of every material law at one Gauss point;
- ``assembly``: the fused element loop that assembles energy, forces and the sparse tangent, and the Cauchy
  stress field.
"""

from softsim.mechanics._kernels.assembly import assemble, cauchy_stress
from softsim.mechanics._kernels.laws import (
    COROTATIONAL,
    LINEAR,
    MODEL_CODES,
    NEOHOOKEAN,
    STABLE_NEOHOOKEAN,
    STVK,
)
from softsim.mechanics._kernels.rotations import (
    ROT_LARGE,
    ROT_POLAR,
    ROT_POLAR_F,
    ROT_SVD,
    ROT_SVD_F,
    ROTATION_CODES,
    SOFA_SVD_MIN_DET,
    polar_newton,
    rotation_from_f,
)

__all__ = [
    "COROTATIONAL", "LINEAR", "MODEL_CODES", "NEOHOOKEAN", "ROTATION_CODES", "ROT_LARGE", "ROT_POLAR",
    "ROT_POLAR_F", "ROT_SVD", "ROT_SVD_F", "SOFA_SVD_MIN_DET", "STABLE_NEOHOOKEAN", "STVK", "assemble",
    "cauchy_stress", "polar_newton", "rotation_from_f",
]
