"""The report of one frame, static or dynamic (:class:`FrameReport`), and how a static frame's is made."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from softsim.mechanics.equilibrium import EquilibriumReport
from softsim.mechanics.indefinite_projection import REFUSED
from softsim.mechanics.inversion import count_new_inversions


@dataclass
class FrameReport:
    """What one frame did; the GUI and the CLI show it.

    ``times`` holds seconds per phase: assembly (forces and tangents), factorization, newton_solve (the rest
    of the Newton solve: triangular solves, residual norms), build (constraint rows), W, constraint_solve,
    correction, and reequilibration when enabled. ``forces`` and ``projection_forces`` start the next frame's
    complementarity solves (``solve_frame(last_report=...)``).
    """

    frame: int
    #: the frame ran and its state was kept (False: it failed and the simulation kept its last good state)
    ran: bool
    message: str
    newton: object | None = None
    constraint: object | None = None
    n_constraint_rows: int = 0
    times: dict[str, float] = field(default_factory=dict)
    x_free: np.ndarray | None = None
    #: (constraint, multipliers (rows,)) of every constraint that had rows this frame: the final ones and
    #: those of the projection about x_free (they differ when the frame re-equilibrates)
    forces: list = field(default_factory=list)
    projection_forces: list = field(default_factory=list)
    #: the constrained equilibrium iterations (None with the linear correction or without constraint rows)
    equilibrium: EquilibriumReport | None = None
    #: True when nothing the frame depends on changed since the last converged frame (its state was kept)
    unchanged: bool = False
    #: what the projection about x_free was made of (compared by the next frame to detect "unchanged")
    signature: tuple | None = None
    #: the contact set the frame ended with, per contact constraint (:func:`contact_sets`): the rows the
    #: equilibrium steps added to the projection's are not in ``signature``
    contact_sets: tuple | None = None
    #: the implicit time step of a dynamic frame (mechanics.dynamics.DynamicReport); None for static frames
    dynamic: object | None = None
    #: the inverse model's part of the frame (mechanics.inverse.frame.InverseReport); None in forward mode
    inverse: object | None = None
    #: with the asynchronous preconditioner (``[solver.linear] type = "async"``): ``cg_iterations``, the Krylov
    #: iterations (CG, or GMRES for the exact tangent when it is not symmetric positive definite) of the frame's
    #: solves, the ``factorization_age`` (tangents assembled since the one the preconditioner factorized;
    #: the largest of the frame's solvers) and the ``background_factorizations`` finished during the frame
    preconditioner: dict | None = None
    #: names of the actuators a bound or rate limit held this frame (filled by the simulation)
    limited: list = field(default_factory=list)

    @property
    def wall_time(self) -> float:
        return sum(self.times.values())

    @property
    def ok(self) -> bool:
        """The frame's answer can be trusted: it ran and converged. A frame that ran without converging keeps
        its best state but is not ok; ``ran`` tells it from a failed one."""
        return self.converged

    @property
    def status(self) -> str:
        """"ok", "limited" (converged, an actuator held by a bound or rate limit), "not_converged" (ran, best
        state kept) or "diverged" (failed, last good state kept)."""
        if not self.ran:
            return "diverged"
        if not self.converged:
            return "not_converged"
        return "limited" if self.limited else "ok"

    @property
    def converged(self) -> bool:
        """The frame ran and its answer meets the tolerances: the constrained equilibrium converged (or, with
        the linear correction or without constraint rows, the free Newton solve did) and the complementarity
        solve converged."""
        if not self.ran:
            return False
        if self.inverse is not None and not self.inverse.converged:
            return False
        if self.constraint is not None and not self.constraint.converged:
            return False
        if self.dynamic is not None:
            return bool(self.dynamic.converged)
        if self.equilibrium is not None:
            return self.equilibrium.converged
        return self.newton is None or bool(self.newton.converged)

    @property
    def iterations(self) -> int:
        """The frame's nonlinear iterations: the free Newton solve's (static) or the implicit step's (dynamic)."""
        solve = self.dynamic if self.dynamic is not None else self.newton
        return 0 if solve is None else int(solve.iterations)

    @property
    def residual_norms(self) -> np.ndarray:
        """How the nonlinear iterations converged, for plots and logs: ``|R_0|, |R_1|, ...`` of the free Newton
        solve (force units), or the velocity corrections ``|delta_1|, ...`` of a dynamic step."""
        if self.dynamic is not None:
            return np.asarray(self.dynamic.correction_norms, dtype=np.float64)
        if self.newton is None:
            return np.zeros(0)
        return np.sqrt([self.newton.squared_initial_residual, *self.newton.squared_residuals])


def unchanged_report(frame, last_report, newton_report, constraints, x, x_free, times) -> FrameReport:
    """The report of a frame whose inputs did not change: the last frame's state and multipliers."""
    for constraint, force in last_report.forces:
        constraint.store(force, x)
    report = FrameReport(frame, True, "", newton=newton_report, constraint=last_report.constraint,
                         n_constraint_rows=last_report.n_constraint_rows, times=times,
                         equilibrium=last_report.equilibrium, unchanged=True)
    report.x_free = x_free
    report.forces = last_report.forces
    report.projection_forces = last_report.projection_forces
    report.signature = last_report.signature
    report.contact_sets = last_report.contact_sets
    return report


def contact_sets(constraints) -> tuple:
    """(name, its contacts' keys) of each contact constraint among ``constraints`` (those with
    ``contact_keys``): which node touches which obstacle or triangle, as the rows stand now."""
    return tuple((constraint.name, tuple(constraint.contact_keys())) for constraint in constraints
                 if constraint.active and callable(getattr(constraint, "contact_keys", None)))


def inverted_elements_note(problem, x: np.ndarray) -> str:
    """The frame's note about elements inverted at ``x`` (n, 3) by a model that allows them (see
    :func:`check_state`), or ""."""
    elasticity = problem.elasticity
    if not getattr(elasticity, "inversion_admissible", False):
        return ""
    inverted = count_new_inversions(elasticity.rest_positions, x, elasticity.tets)
    if not inverted:
        return ""
    return (f"{inverted} element(s) inverted at the equilibrium (det F <= 0; the material model defines their forces, "
            f"as SOFA's does): refine the mesh there for a trustworthy stress")


def detached_contacts_note(constraints, forces: list, x: np.ndarray) -> str:
    """The frame's note about contact rows that push nodes farther than alarmDistance from the other body's
    surface at ``x`` (n, 3) (:meth:`~mechanics.constraints.body_contact.BodyContactConstraint.detached`;
    ``forces`` the frame's (constraint, multipliers) pairs), or ""."""
    notes = []
    for constraint, force in forces:
        if constraint in constraints and callable(getattr(constraint, "detached", None)):
            count, farthest = constraint.detached(x, force)
            if count:
                notes.append(f"{constraint.name}: {count} contact row(s) push nodes up to {farthest:.3g} away from "
                             f"the other body's surface (alarmDistance {constraint.alarmDistance:g}): the plane of "
                             f"the triangle each was found on reaches past its edges, so the contact forces there "
                             f"are not trustworthy")
    return "; ".join(notes)


def make_report(frame, newton_report, constraint_report, n_rows, times, equilibrium=None) -> FrameReport:
    warnings = []
    if equilibrium is not None:
        if not equilibrium.converged:
            warnings.append(f"constrained equilibrium {equilibrium.reason}")
    elif not newton_report.converged:
        warnings.append(f"Newton did not converge ({newton_report.reason})")
    if constraint_report is not None and not constraint_report.converged:
        if constraint_report.solver == REFUSED:
            # the iterative solver refused the problem and no fallback found an answer: say why, not "error inf"
            warnings.append(f"constraint solver did not converge: {constraint_report.solver}, and semi-smooth "
                            f"Newton found no answer to those rows")
        else:
            warnings.append(f"constraint solver did not converge (error {constraint_report.error:.3g} "
                            f"after {constraint_report.iterations} iterations)")
    return FrameReport(frame, True, "; ".join(warnings), newton=newton_report, constraint=constraint_report,
                       n_constraint_rows=n_rows, times=times, equilibrium=equilibrium)
