"""The inverse model (SoftRobots.Inverse's QPInverseProblemSolver): effectors carry goals, actuators become the
unknowns of a quadratic program in constraint space.

- :mod:`~mechanics.inverse.qp`: small dense QPs through qpsolvers' backends (DAQP by default), with fallbacks;
- :mod:`~mechanics.inverse.problem`: the QP of one linearisation, with the contacts' and slack cables' states;
- :mod:`~mechanics.inverse.frame`: one inverse frame (constrained Newton steps with the QP, or QPs each followed
  by a forward frame) and its report.
"""

from softsim.mechanics.inverse.frame import InverseReport, InverseSettings, solve_inverse_frame
from softsim.mechanics.inverse.problem import InverseParameters, solve_inverse_qp

__all__ = ["InverseParameters", "InverseReport", "InverseSettings", "solve_inverse_frame", "solve_inverse_qp"]
