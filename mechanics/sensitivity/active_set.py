"""Which constraint rows hold what at a converged equilibrium: the active set the implicit function theorem
differentiates through.

Every row is either

- ``HELD`` (its displacement-like law holds as an equality: ``d_i(x) + c_i lambda_i = target_i``): an EQUALITY
  row, a displacement-controlled actuator whose force lies strictly inside its bounds, an active contact
  (positive normal force), the tangential rows of a sticking friction contact, or a force-controlled actuator
  held at a bound of its displacement range;
- ``FORCED`` (its multiplier is fixed: ``lambda_i = its target``, a constant bound or 0): a force-controlled
  actuator inside its displacement range, a displacement actuator held at a force bound, an inactive contact
  (with its tangential rows).

A row whose force is at a bound while its displacement law also holds (a contact touching with zero force, a
cable just going slack) is on the edge of changing state, and a friction contact whose tangential force is on
the Coulomb cone slides: both are non-differentiable points and are reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FORCE, FRICTION

#: a multiplier within this fraction of the force scale of a bound is on that bound
FORCE_EDGE = 1e-7
#: a law violation within this fraction of the body's size of zero holds
LENGTH_EDGE = 1e-6


@dataclass
class ActiveSet:
    """``held (m,) bool``: rows whose displacement law is an equality; ``force_target (m,) bool``: FORCED rows
    whose multiplier is an imposed target (a force-controlled actuator; the others are fixed at a constant);
    ``edges``: the non-differentiable points found, in words."""

    held: np.ndarray
    force_target: np.ndarray
    edges: list


def classify(system, force: np.ndarray, force_scale: float, size: float) -> ActiveSet:
    """The active set of ``system`` (a ConstraintSystem at the equilibrium, whose ``dfree`` are the violations
    there) with the multipliers ``force`` (m,); ``force_scale`` [force] and ``size`` [length] set the
    tolerances (:data:`FORCE_EDGE`, :data:`LENGTH_EDGE`)."""
    m = system.n_rows
    held = np.zeros(m, dtype=bool)
    force_target = np.zeros(m, dtype=bool)
    edges: list[str] = []
    if m == 0:
        return ActiveSet(held, force_target, edges)
    blocks = system.blocks
    law = system.dfree + system.compliance * force
    f_tol = FORCE_EDGE * max(force_scale, float(np.max(np.abs(force), initial=0.0)))
    d_tol = LENGTH_EDGE * size
    owner = np.empty(m, dtype=object)
    for constraint, rows in zip(system.constraints, system.row_ranges):
        owner[rows] = constraint.name
    for b in range(blocks.size.size):
        start, rows = int(blocks.start[b]), int(blocks.size[b])
        kind, target, lo, hi = int(blocks.kind[b]), blocks.target[b], blocks.lo[b], blocks.hi[b]
        i = start
        where = f"{owner[i]} row {i - _first_row(system, i)}"
        if kind == EQUALITY:
            held[start:start + rows] = True
        elif kind == BOUNDED:
            at_lo, at_hi = force[i] - lo <= f_tol, hi - force[i] <= f_tol
            if not (at_lo or at_hi):
                held[i] = True
            elif abs(law[i] - target) <= d_tol:
                edges.append(f"{where}: force {force[i]:.4g} on its bound {lo if at_lo else hi:.4g} with its "
                             f"displacement law holding (on the edge of {'separating' if at_lo else 'slipping'})")
        elif kind == FORCE:
            at_lo, at_hi = law[i] - lo <= d_tol, hi - law[i] <= d_tol
            if not (at_lo or at_hi):
                force_target[i] = True
            elif abs(force[i] - target) <= f_tol:
                edges.append(f"{where}: displacement {law[i]:.4g} on its bound with the force at its target")
            else:
                held[i] = True
        elif kind == FRICTION:
            normal = force[i]
            if normal > f_tol:
                tangential = float(np.hypot(force[i + 1], force[i + 2]))
                held[i] = True
                if tangential < blocks.mu[b] * normal - f_tol:
                    held[i + 1:i + 3] = True  # sticking
                else:
                    edges.append(f"{where}: sliding (tangential force {tangential:.4g} on the Coulomb cone "
                                 f"{blocks.mu[b] * normal:.4g})")
            elif abs(law[i] - target) <= d_tol:
                edges.append(f"{where}: contact touching with zero force (on the edge of separating)")
    return ActiveSet(held, force_target, edges)


def _first_row(system, row: int) -> int:
    for rows in system.row_ranges:
        if rows.start <= row < rows.stop:
            return rows.start
    return 0
