"""Constraint solvers in constraint space (SOFA Lagrangian constraint solvers).

``make_constraint_solver(type, **params)`` builds one of "BlockGaussSeidel" (SOFA's default, also under the
names "GenericConstraintSolver", "ProjectedGaussSeidel" and "BlockGaussSeidelConstraintSolver"),
"ImprovedJacobi", "NNCG", "BlockPivoting" (exact active set for frictionless problems) or "exact". Every
solver has ``solve(W, dfree, blocks, *, initial_force=None)`` returning a :class:`ConstraintReport` and
``set_parameters(**params)`` with SOFA's parameter names.
"""

from __future__ import annotations

from softsim.mechanics.constraint_solvers.base import ConstraintReport, ConstraintSolver, solver_keys
from softsim.mechanics.constraint_solvers.exact import ExactSolver, lemke, solve_mixed_lcp
from softsim.mechanics.constraint_solvers.gauss_seidel import NNCG, BlockGaussSeidel
from softsim.mechanics.constraint_solvers.jacobi import ImprovedJacobi, scaled_spectral_radius, sofa_spectral_radius
from softsim.mechanics.constraint_solvers.pivoting import BlockPivoting
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import complementarity_residual

SOLVER_TYPES: dict[str, type[ConstraintSolver]] = {
    "BlockGaussSeidel": BlockGaussSeidel,
    "ImprovedJacobi": ImprovedJacobi,
    "NNCG": NNCG,
    "BlockPivoting": BlockPivoting,
    "exact": ExactSolver,
}
SOFA_NAMES = {
    "GenericConstraintSolver": "BlockGaussSeidel",
    "ProjectedGaussSeidel": "BlockGaussSeidel",
    "BlockGaussSeidelConstraintSolver": "BlockGaussSeidel",
    "ImprovedJacobiConstraintSolver": "ImprovedJacobi",
    "NNCGConstraintSolver": "NNCG",
    "NonsmoothNonlinearConjugateGradient": "NNCG",
}


def make_constraint_solver(type: str, **params) -> ConstraintSolver:  # noqa: A002 - the scene key is "type"
    """Build a constraint solver by name (see the module docstring); params are validated SOFA parameters."""
    name = SOFA_NAMES.get(type, type)
    if name not in SOLVER_TYPES:
        raise ParameterError(
            f"constraint solver type {type!r} is unknown; allowed: "
            + ", ".join(list(SOLVER_TYPES) + list(SOFA_NAMES))
        )
    return SOLVER_TYPES[name](**params)


__all__ = [
    "NNCG",
    "SOLVER_TYPES",
    "BlockGaussSeidel",
    "BlockPivoting",
    "ConstraintReport",
    "ConstraintSolver",
    "ExactSolver",
    "ImprovedJacobi",
    "complementarity_residual",
    "lemke",
    "make_constraint_solver",
    "scaled_spectral_radius",
    "sofa_spectral_radius",
    "solve_mixed_lcp",
    "solver_keys",
]
