"""Sensitivities: exact gradients of a converged static frame's outputs with respect to scene parameters, by
the implicit function theorem (one adjoint solve per output). ``Scene.gradients`` is the entry point; the
math is in :mod:`mechanics.sensitivity.adjoint` and docs/gradients.md."""

from softsim.mechanics.sensitivity.adjoint import GradientReport, check_names, column_name, gradient_report, gradients
from softsim.mechanics.sensitivity.errors import GradientError, NotConvergedError, NotDifferentiableError
from softsim.mechanics.sensitivity.outputs import output_names
from softsim.mechanics.sensitivity.parameters import default_parameters

__all__ = ["GradientError", "GradientReport", "NotConvergedError", "NotDifferentiableError", "check_names",
           "column_name", "default_parameters", "gradient_report", "gradients", "output_names"]
