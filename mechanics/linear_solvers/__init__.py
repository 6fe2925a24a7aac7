"""Linear solvers for the Newton solvers, the equilibrium iterations and the constraint step.

Every solver implements :class:`LinearSolver` (``base``): ``factorize(A)`` takes a square
``scipy.sparse.csr_matrix`` with both triangles stored and prepares to solve with it; ``solve(b) -> x`` takes
``b`` of shape ``(n,)`` or ``(n, k)`` (``k`` right-hand sides in one call) and returns ``x`` of the shape of ``b``;
``is_factorized``, ``symmetric``, ``like()`` (a new solver of the same settings), ``close()``, ``name``, ``stats``
(counters and accumulated seconds) and ``capabilities`` (:class:`Capabilities`: what it can do beyond that).
Callers ask a solver's capabilities, never its class.

Solvers, one module each:

- :class:`DirectSolver` (``direct``; Pardiso's ctypes calls in ``pardiso``): MKL Pardiso through
  ``pypardiso`` (real SPD Cholesky, ``mtype=2``, upper triangle), falling back to symmetric indefinite LDL^T
  (``mtype=-2``, Bunch-Kaufman pivoting) when the Cholesky factorization meets a non-positive pivot, or LU
  (``mtype=11``) for an unsymmetric matrix; or SciPy's SuperLU. The Pardiso symbolic analysis (phase 11,
  METIS ordering) is kept while the sparsity pattern (``indptr``/``indices``) is unchanged, so a new
  tangent of the same mesh only costs a numeric factorization (phase 22).
- :class:`CGSolver` (``iterative``): preconditioned conjugate gradient with Caribou's
  ``ConjugateGradientSolver`` semantics (stop when ``||r_k|| / ||b|| < residual_tolerance_threshold``;
  squared residuals recorded per iteration).
- :class:`ReusedFactorizationSolver`: CG preconditioned by the direct factorization of an *earlier*
  matrix ("LastFactorization"); the matrix is refactorized only when CG needs more than
  ``refactorization_iteration_threshold`` iterations. This is the factorization-reuse-across-frames policy:
  while the tangent changes little between frames, each frame costs a few CG iterations (each one a
  triangular solve pair) instead of a numeric factorization.
- :class:`mechanics.async_preconditioner.AsyncPreconditionedSolver`: CG preconditioned by the newest
  factorization a background thread finished.

Process-wide thread settings for the native libraries are made by the entry points (``threads``), never on
import.
"""

from __future__ import annotations

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.linear_solvers.base import Capabilities, LinearSolver, LinearSolverError
from softsim.mechanics.linear_solvers.direct import (
    DIRECT_BACKENDS,
    SYMMETRY_TOLERANCE,
    DirectSolver,
    relative_asymmetry,
    transpose_map,
)
from softsim.mechanics.linear_solvers.iterative import PRECONDITIONING_METHODS, CGSolver, ReusedFactorizationSolver
from softsim.mechanics.linear_solvers.threads import configure_threads

__all__ = [
    "DIRECT_BACKENDS",
    "PRECONDITIONING_METHODS",
    "SYMMETRY_TOLERANCE",
    "CGSolver",
    "Capabilities",
    "DirectSolver",
    "LinearSolver",
    "LinearSolverError",
    "ReusedFactorizationSolver",
    "configure_threads",
    "make_linear_solver",
    "relative_asymmetry",
    "transpose_map",
]


def make_linear_solver(kind: str = "direct", **parameters):
    """Build a linear solver by name: ``"direct"``, ``"cg"``, ``"reused_factorization"`` or ``"async"``
    (:class:`mechanics.async_preconditioner.AsyncPreconditionedSolver`; its ``preconditioner_iterations`` is
    the solver's ``maximum_number_of_iterations``)."""
    if kind == "async":
        from softsim.mechanics.async_preconditioner import AsyncPreconditionedSolver

        if "preconditioner_iterations" in parameters:
            parameters["maximum_number_of_iterations"] = parameters.pop("preconditioner_iterations")
        return AsyncPreconditionedSolver(**parameters)
    kinds = {"direct": DirectSolver, "cg": CGSolver, "reused_factorization": ReusedFactorizationSolver}
    if kind not in kinds:
        raise ParameterError(f"linear solver kind must be one of {(*kinds, 'async')}, got {kind!r}")
    return kinds[kind](**parameters)
