"""Material parameters of the tetrahedral FEM: Lame conversion, validation and the model catalogue.

Hyperelastic models (first Piola-Kirchhoff stress P, energy density Psi per unit rest volume, F the
deformation gradient, C = F^T F, J = det F, mu/lam the Lame parameters from E and nu):

- ``linear``: small strain eps = sym(F) - I, Psi = mu eps:eps + lam/2 tr(eps)^2, P = 2 mu eps + lam tr(eps) I.
- ``corotational``: SOFA TetrahedronFEMForceField; the linear law applied to R^T F, with R an element
  rotation, P = R P_lin(R^T F). SOFA's methods ``large``, ``polar`` and ``svd`` compute SOFA's rotations
  (a current frame of the element's edges composed with the same frame at rest, see
  :class:`mechanics.fem.TetElasticity`); softsim's ``polarF`` and ``svdF`` take the rotation of F itself.
  For ``polarF`` and ``svdF``, R^T F is symmetric and P is the gradient of the corotated energy
  Psi = mu |F - R|^2 + lam/2 tr(R^T F - I)^2 = mu sum (s_i - 1)^2 + lam/2 (sum s_i - 3)^2 (s_i the singular
  values, signed for ``svdF``); its exact Hessian is available as ``corotational_tangent="exact"`` (SOFA's
  tangent R K0 R^T neglects dR/dF).
- ``stvk``: Saint Venant-Kirchhoff (Caribou), E = (C - I)/2, Psi = lam/2 tr(E)^2 + mu tr(E^2), P = F S.
- ``neohookean``: Caribou's ln J form, Psi = mu/2 (tr C - 3) - mu ln J + lam/2 (ln J)^2. Undefined for
  J <= 0: energy, stress and tangent are NaN there, so a Newton solver reports divergence.
- ``stable_neohookean``: Smith, de Goes, Kim 2018, Psi = mu'/2 (I_C - 3) + lam'/2 (J - alpha)^2
  - mu'/2 ln(I_C + 1) (shifted by a constant so Psi(I) = 0), with the paper's reparametrisation
  mu' = 4/3 mu, lam' = lam + 5/6 mu, alpha = 1 + 3 mu' / (4 lam') so that the small-strain response is
  exactly that of linear elasticity with (mu, lam); defined for every F, inverted elements included.
"""

import numpy as np

from softsim.mechanics.errors import ParameterError

#: Material model names accepted by :class:`mechanics.fem.TetElasticity`.
MODELS = ("linear", "corotational", "stvk", "neohookean", "stable_neohookean")
#: Rotation methods of the corotational model: softsim's rotations of F (``polarF``, the default, and
#: ``svdF``) and SOFA TetrahedronFEMForceField's ``method`` values with SOFA's formulas.
ROTATION_METHODS = ("polarF", "svdF", "large", "polar", "svd")
#: Tangents of the corotational model: SOFA's R K0 R^T (dR/dx neglected) or the exact Hessian of the
#: corotated energy (rotation methods ``polarF`` and ``svdF`` only).
COROTATIONAL_TANGENTS = ("sofa", "exact")


#: The Young's moduli accepted, in any unit. Far beyond them the stiffness, the displacements of a soft body
#: under its loads and the squared norms of forces and residuals (past about 1e154) under- or overflow float64;
#: no material needs more than these 60 orders of magnitude in any consistent unit system.
YOUNG_MODULUS_RANGE = (1e-30, 1e30)


def _check_young(young):
    young = np.asarray(young, dtype=np.float64)
    bad = ~(np.isfinite(young) & (young > 0.0))
    if np.any(bad):
        first = np.flatnonzero(bad.ravel())[0]
        where = "" if young.ndim == 0 else f" (element {first})"
        raise ParameterError(f"youngModulus must be > 0, got {float(young.ravel()[first])!r}{where}")
    low, high = YOUNG_MODULUS_RANGE
    bad = (young < low) | (young > high)
    if np.any(bad):
        first = np.flatnonzero(bad.ravel())[0]
        where = "" if young.ndim == 0 else f" (element {first})"
        raise ParameterError(
            f"youngModulus {float(young.ravel()[first]):g}{where} is outside [{low:g}, {high:g}]: the stiffness "
            "and the forces would under- or overflow floating point; choose units that bring it into the range"
        )
    return young


def _check_poisson(poisson):
    poisson = np.asarray(poisson, dtype=np.float64)
    bad = ~(np.isfinite(poisson) & (poisson > -1.0) & (poisson < 0.5))
    if np.any(bad):
        first = np.flatnonzero(bad.ravel())[0]
        where = "" if poisson.ndim == 0 else f" (element {first})"
        raise ParameterError(
            "poissonRatio must be in the open interval (-1, 0.5), "
            f"got {float(poisson.ravel()[first])!r}{where}"
        )
    return poisson


def lame(young, poisson):
    """Lame parameters from Young's modulus and Poisson's ratio.

    Parameters
    ----------
    young : float or array
        Young's modulus E [Pa or the scene's stress unit], must be > 0.
    poisson : float or array (broadcastable with ``young``)
        Poisson's ratio nu, must be in (-1, 0.5).

    Returns
    -------
    mu, lam : float or array
        mu = E / (2 (1 + nu)), lam = E nu / ((1 + nu)(1 - 2 nu)), same unit as E.

    Raises
    ------
    ParameterError
        if E <= 0 or nu is outside (-1, 0.5) (also NaN/inf), naming youngModulus / poissonRatio.
    """
    young = _check_young(young)
    poisson = _check_poisson(poisson)
    mu = young / (2.0 * (1.0 + poisson))
    lam = young * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    if mu.ndim == 0:
        return float(mu), float(lam)
    return mu, lam


def element_parameters(young, poisson, n_elements):
    """Validate scalar or per-element E and nu and broadcast them to arrays of shape ``(n_elements,)``.

    Returns ``(young (m,), poisson (m,), mu (m,), lam (m,))`` as float64 arrays.
    """
    arrays = []
    for name, value in (("youngModulus", young), ("poissonRatio", poisson)):
        value = np.asarray(value, dtype=np.float64)
        if value.ndim == 0:
            value = np.full(n_elements, float(value))
        elif value.shape != (n_elements,):
            raise ParameterError(
                f"{name} must be a scalar or an array of shape ({n_elements},) (one value per tetrahedron), "
                f"got shape {value.shape}"
            )
        arrays.append(np.ascontiguousarray(value))
    young_arr, poisson_arr = arrays
    mu, lam = lame(young_arr, poisson_arr)
    return young_arr, poisson_arr, np.ascontiguousarray(mu), np.ascontiguousarray(lam)


def stable_neohookean_parameters(mu, lam):
    """Smith et al. 2018 reparametrisation of the Lame parameters for the stable neo-Hookean model.

    Returns ``(mu', lam', alpha)`` with mu' = 4/3 mu, lam' = lam + 5/6 mu, alpha = 1 + 3 mu'/(4 lam'):
    with these, P(I) = 0 and the linearisation at rest equals linear elasticity with (mu, lam).
    lam' > 0 for every nu in (-1, 0.5).
    """
    mu = np.asarray(mu, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    mu_p = 4.0 / 3.0 * mu
    lam_p = lam + 5.0 / 6.0 * mu
    alpha = 1.0 + 0.75 * mu_p / lam_p
    return mu_p, lam_p, alpha


def check_model(model, rotation_method):
    """Raise :class:`ParameterError` if ``model`` or ``rotation_method`` is not a known name."""
    if model not in MODELS:
        raise ParameterError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if rotation_method not in ROTATION_METHODS:
        raise ParameterError(
            f"rotation_method must be one of {', '.join(ROTATION_METHODS)}, "
            f"got {rotation_method!r}"
        )


def check_corotational_tangent(corotational_tangent, model, rotation_method):
    """Raise :class:`ParameterError` if ``corotational_tangent`` is not ``"sofa"`` or ``"exact"``. Other
    models ignore the value; ``"exact"`` is the Hessian of the corotated energy for ``polarF``/``svdF`` and
    the consistent (unsymmetric) Jacobian of SOFA's force for ``large``, ``polar`` and ``svd``."""
    if corotational_tangent not in COROTATIONAL_TANGENTS:
        raise ParameterError(
            f"corotational_tangent (scene key corotationalTangent) must be one of "
            f"{', '.join(COROTATIONAL_TANGENTS)}, got {corotational_tangent!r}"
        )
