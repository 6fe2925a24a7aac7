"""The constraint rows in constraint space, shared by static frames, inverse frames and dynamic steps: stacking
the rows (:class:`ConstraintSystem`, :func:`build_constraint_system`), the compliance W = s J K^-1 J^T (+ C), the
projection (Steps II-III's complementarity solve; a dynamic step's Schur complement), the forces stored on each
constraint, and the signature that tells an unchanged frame. (:mod:`mechanics.dynamics` uses them with K its
step matrix H and the scale s h of its time scheme.)"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constrained_tangent import ResponseCache
from softsim.mechanics.constraints.cable_rows import LazyJacobians, cable_rows_for
from softsim.mechanics.constraints.cavity_rows import cavity_rows_for
from softsim.mechanics.resolutions import BOUNDED, Blocks, slack_at_bound


@dataclass
class ConstraintSystem:
    """The stacked constraint rows of one frame, restricted to the free DOFs.

    J_free : csr (m, n_free); dfree : (m,); blocks : resolutions; compliance : (m,);
    row_ranges : one ``slice`` of rows per constraint, in the order of ``constraints``;
    jacobians : each constraint's own Jacobian (r_k, 3 n) on all DOFs, as it gave it (a dynamic step measures
    its violations at later iterates with them).
    """

    constraints: list
    J_free: sp.csr_matrix
    dfree: np.ndarray
    blocks: Blocks
    compliance: np.ndarray
    row_ranges: list[slice]
    jacobians: list = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return int(self.dfree.shape[0])

    def initial_force(self, last_forces, by_key: dict | None = None) -> np.ndarray | None:
        """The multipliers ``(m,)`` to start the complementarity solve from: each constraint's rows from
        ``last_forces`` (pairs ``(constraint, force)`` of the last frame) when its row count is unchanged,
        else zeros; None when no constraint has last forces. ``by_key`` ({contact constraint: its
        :func:`keyed_forces` of the last frame}) gives a contact constraint's rows contact by contact instead: a
        contact found again starts from its own last force, whatever the rows' count and order now."""
        if not last_forces:
            return None
        start, found = np.zeros(self.n_rows), False
        for constraint, rows in zip(self.constraints, self.row_ranges):
            force = next((f for c, f in last_forces if c is constraint), None)
            if force is not None and force.shape == (rows.stop - rows.start,):
                start[rows] = force
                found = True
        found = self.place_keyed_forces(start, by_key or {}) or found
        return start if found else None

    def place_keyed_forces(self, start: np.ndarray, by_key: dict) -> bool:
        """Write into ``start`` (m,) the rows of each contact constraint of ``by_key`` ({constraint: its forces
        per contact key, :meth:`~mechanics.constraints.contact.ContactRows.forces_by_key` of an earlier contact
        set}): a contact found again gets its own forces, a new one zeros. Returns whether any constraint of
        ``by_key`` has rows here."""
        placed = False
        for constraint, forces in by_key.items():
            rows = self.rows_of(constraint)
            if rows is not None:
                start[rows] = constraint.forces_from(forces)
                placed = True
        return placed

    def rows_of(self, constraint) -> slice | None:
        for candidate, rows in zip(self.constraints, self.row_ranges):
            if candidate is constraint:
                return rows
        return None


def build_constraint_system(constraints, x: np.ndarray, x_free: np.ndarray, free_dofs: np.ndarray, *,
                            linearize_at: np.ndarray | None = None) -> ConstraintSystem:
    """Stack the rows of the given constraints at x_free (J, violations, resolutions).

    ``x`` is the last frame's state: rate bounds are taken from it and constraints that ``measures_motion``
    (frictional contacts) measure their tangential rows from it; the others give their violation at x_free,
    linearised from ``linearize_at`` (default x_free itself, i.e. exact), where J is evaluated. The plain cables
    and cavities among them are built together (:mod:`~mechanics.constraints.cable_rows`,
    :mod:`~mechanics.constraints.cavity_rows`) when J is evaluated at x_free.
    """
    at = x_free if linearize_at is None else linearize_at
    plans = []
    if at is x_free and constraints:
        n_nodes = np.asarray(at).size // 3
        plans = [plan for plan in (cable_rows_for(constraints, free_dofs, n_nodes),
                                   cavity_rows_for(constraints, free_dofs, n_nodes)) if plan is not None]
    batched = {id(c): (k, i) for k, plan in enumerate(plans) for i, c in enumerate(plan.constraints)}
    if len(plans) == 1 and len(batched) == len(constraints):  # only cables (the finger, the trunk), or cavities
        plan = plans[0]
        J_free, dfree, blocks = plan.build(x, at)
        compliance = np.zeros(J_free.shape[0])
        for i, constraint in enumerate(plan.constraints):
            own = constraint.compliance()
            if own is not None:
                compliance[i] = float(np.asarray(own, float).reshape(-1)[0])
        return ConstraintSystem(list(plan.constraints), J_free, dfree, blocks, compliance, list(plan.row_ranges),
                                LazyJacobians(plan.constraints, [None] * len(batched), np.array(at, dtype=np.float64)))
    built = [plan.build(x, at) for plan in plans]
    J_parts, dfree_parts, block_parts, compliance_parts, row_ranges, active, jacobians = [], [], [], [], [], [], []
    row = 0
    for constraint in constraints:
        found = batched.get(id(constraint))
        if found is not None:
            plan_J, plan_dfree, plan_blocks = built[found[0]]
            index = found[1]
            J_parts.append(("free", plan_J[index:index + 1]))
            jacobians.append(None)
            dfree_parts.append(plan_dfree[index:index + 1])
            block_parts.append(plan_blocks.part(index, index + 1))
            rows = 1
        else:
            J = constraint.jacobian(at)
            rows = J.shape[0]
            if rows == 0:
                continue
            J_parts.append(J)
            jacobians.append(J)
            reference = x if getattr(constraint, "measures_motion", False) else at
            dfree_parts.append(np.asarray(constraint.violation(reference, x_free, J), dtype=np.float64))
            block_parts.append(constraint.blocks(x))
        compliance = constraint.compliance()
        compliance_parts.append(np.zeros(rows) if compliance is None else np.asarray(compliance, float))
        row_ranges.append(slice(row, row + rows))
        active.append(constraint)
        row += rows
    if not J_parts:
        empty = sp.csr_matrix((0, free_dofs.size))
        return ConstraintSystem([], empty, np.zeros(0), Blocks.concatenate([]), np.zeros(0), [])
    J_free = _stack_free_columns(J_parts, free_dofs)
    if plans:
        jacobians = LazyJacobians(active, jacobians, np.array(at, dtype=np.float64))
    return ConstraintSystem(active, J_free, np.concatenate(dfree_parts), Blocks.concatenate(block_parts),
                            np.concatenate(compliance_parts), row_ranges, jacobians)


#: (free_dofs, number of DOFs, DOF -> free index) of the last call: a problem's free DOFs are one array
_free_map: list = [None, 0, None]


def _dof_to_free(free_dofs: np.ndarray, n_dofs: int) -> np.ndarray:
    """(n_dofs,) the free index of each DOF, -1 for a fixed one (kept for the last ``free_dofs`` array)."""
    if _free_map[0] is not free_dofs or _free_map[1] != n_dofs:
        dof_to_free = np.full(n_dofs, -1, dtype=np.int64)
        dof_to_free[free_dofs] = np.arange(free_dofs.size)
        _free_map[:] = [free_dofs, n_dofs, dof_to_free]
    return _free_map[2]


def _stack_free_columns(parts: list, free_dofs: np.ndarray) -> sp.csr_matrix:
    """The rows of the sparse matrices ``parts`` stacked, with only the free DOFs' columns, renumbered:
    (sum r_k, n_free) CSR, built once (a vstack and a column slice each built a matrix again). A part is a
    matrix (r_k, 3n) on all DOFs, or ``("free", matrix)`` already on the free DOFs
    (:mod:`~mechanics.constraints.cable_rows`)."""
    full = [part for part in parts if not isinstance(part, tuple)]
    dof_to_free = _dof_to_free(free_dofs, full[0].shape[1]) if full else None
    columns, data, per_row = [], [], []
    for part in parts:
        if isinstance(part, tuple):
            J = part[1]
            columns.append(np.asarray(J.indices, dtype=np.int64))
        else:
            J = part if part.format == "csr" else part.tocsr()
            columns.append(dof_to_free[J.indices])
        data.append(J.data)
        per_row.append(np.diff(J.indptr))
    columns, data, per_row = np.concatenate(columns), np.concatenate(data), np.concatenate(per_row)
    n_rows = per_row.size
    keep = columns >= 0
    rows = np.repeat(np.arange(n_rows), per_row)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n_rows), out=indptr[1:])
    return sp.csr_matrix((data[keep], columns[keep], indptr), shape=(n_rows, free_dofs.size))


def compliance_in_constraint_space(linear_solver, J_free: sp.csr_matrix, cache: ResponseCache | None = None,
                                   KinvJt: np.ndarray | None = None,
                                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """W = scale J K^-1 J^T (m, m) and K^-1 J^T (n_free, m) from the current factorization, in one multi-RHS
    solve (only the changed rows' with a ``cache`` that saw the same factorization; none when ``KinvJt`` is
    given). ``scale`` (default 1) is a dynamic step's ``s h`` (:mod:`mechanics.dynamics`)."""
    if J_free.shape[0] == 0:
        return np.zeros((0, 0)), np.zeros((J_free.shape[1], 0))
    if KinvJt is None:
        Jt = J_free.T.toarray()
        if cache is None:
            KinvJt = np.asarray(linear_solver.solve(Jt)).reshape(J_free.shape[1], J_free.shape[0])
        else:
            KinvJt = cache.solve(linear_solver, Jt)
    W = np.asarray(J_free @ KinvJt)
    if scale != 1.0:
        W *= scale
    if linear_solver.symmetric:  # round-off only; an unsymmetric tangent's W is unsymmetric
        W = 0.5 * (W + W.T)
    return W, KinvJt


def project_rows(constraint_solver, linear_solver, system: ConstraintSystem, initial_force=None, times=None,
             cache: ResponseCache | None = None, KinvJt: np.ndarray | None = None, solve=None, scale: float = 1.0):
    """Steps II-III on a built system: returns (K^-1 J^T lambda on the free DOFs, the solver's report, W with
    the compliance on its diagonal (m, m)).

    ``times`` (optional dict) accumulates the seconds spent on "W" and "constraint_solve". ``solve(W, system,
    initial_force) -> report`` replaces the constraint solver's own solve (the equilibrium steps' projection,
    :func:`mechanics.equilibrium.project`; a dynamic step's, which adds its rigid bodies' block to W).
    ``scale`` multiplies J K^-1 J^T (:func:`compliance_in_constraint_space`), not the compliance.
    """
    times = {} if times is None else times
    started = time.perf_counter()
    W, KinvJt = compliance_in_constraint_space(linear_solver, system.J_free, cache, KinvJt, scale)
    W[np.diag_indices_from(W)] += system.compliance
    times["W"] = times.get("W", 0.0) + time.perf_counter() - started
    if initial_force is not None and initial_force.size != system.n_rows:
        initial_force = None
    started = time.perf_counter()
    if solve is None:
        report = constraint_solver.solve(W, system.dfree, system.blocks, initial_force=initial_force)
    else:
        report = solve(W, system, initial_force)
    times["constraint_solve"] = times.get("constraint_solve", 0.0) + time.perf_counter() - started
    return KinvJt @ report.force, report, W


def store_forces(constraints, system: ConstraintSystem | None, force: np.ndarray, x: np.ndarray) -> list:
    """Let every constraint store its multipliers from ``force`` (m,) (the rows of ``system``; zeros for one
    without rows) at the positions ``x`` (n, 3); returns ``(constraint, multipliers)`` of those with rows (the
    next frame's warm starts)."""
    forces = []
    for constraint in constraints:
        rows = None if system is None else system.rows_of(constraint)
        constraint.store(np.zeros(constraint.n_rows) if rows is None else force[rows], x)
        if rows is not None:
            forces.append((constraint, force[rows].copy()))
    return forces


def keyed_forces(last_forces) -> dict:
    """{contact constraint: its multipliers per contact key} of ``last_forces`` (pairs from
    :func:`store_forces`), taken while each constraint still holds the contact set the forces belong to."""
    return {constraint: constraint.forces_by_key(force) for constraint, force in last_forces
            if callable(getattr(constraint, "forces_by_key", None))}


def system_signature(system: ConstraintSystem) -> tuple:
    """Copies of what a complementarity problem about x_free is made of (rows, J, violations, laws)."""
    J, blocks = system.J_free, system.blocks
    return (tuple(id(c) for c in system.constraints), J.indptr.copy(), J.indices.copy(), J.data.copy(),
            system.dfree.copy(), system.compliance.copy(), blocks.kind.copy(), blocks.size.copy(),
            blocks.target.copy(), blocks.lo.copy(), blocks.hi.copy(), blocks.mu.copy())


#: index of the blocks' targets in a :func:`system_signature`
_SIGNATURE_TARGET = 8


def slack_blocks(equilibrium_system, force: np.ndarray, new_system) -> np.ndarray | None:
    """(b,) bool: the one-row BOUNDED blocks (an actuator with a force bound, such as a cable that cannot push)
    whose multiplier sits on a bound at a converged equilibrium (``equilibrium_system``, the rows at its
    positions, with the multipliers ``force`` (m,)) and whose law holds there strictly, with the targets of
    both that system and ``new_system`` (the same rows, built about the next frame's free configuration with
    the rate limits measured from the equilibrium). Such a row is slack whatever its target in that range: its
    target may move with the state (a slack cable's rate-limited target follows its motion, 1 mm a frame on the
    trunk) without changing the equilibrium. None when the two systems do not have the same blocks."""
    old_blocks, new_blocks = equilibrium_system.blocks, new_system.blocks
    same_constraints = [id(c) for c in equilibrium_system.constraints] == [id(c) for c in new_system.constraints]
    if (not same_constraints or old_blocks.size.shape != new_blocks.size.shape
            or not np.array_equal(old_blocks.size, new_blocks.size) or force.size != equilibrium_system.n_rows
            or not np.array_equal(old_blocks.kind, new_blocks.kind)):
        return None
    start = old_blocks.start
    single = (old_blocks.kind == BOUNDED) & (old_blocks.size == 1)
    f = force[start]
    d = equilibrium_system.dfree[start] + equilibrium_system.compliance[start] * f
    old_lo, old_hi = slack_at_bound(f, d - old_blocks.target, old_blocks.lo, old_blocks.hi)
    new_lo, new_hi = slack_at_bound(f, d - new_blocks.target, old_blocks.lo, old_blocks.hi)
    same_bounds = (old_blocks.lo == new_blocks.lo) & (old_blocks.hi == new_blocks.hi)
    return single & same_bounds & ((old_lo & new_lo) | (old_hi & new_hi))


def same_signature(a: tuple, b: tuple, loose_targets: np.ndarray | None = None) -> bool:
    """True when two signatures describe the same problem: same constraints and structure, values equal to
    1e-13 of their magnitude (a round-off change of the state must not force a full frame). The targets of the
    blocks flagged in ``loose_targets`` (b,) bool may differ (rows whose law holds whatever the target:
    :func:`slack_blocks`)."""
    if a[0] != b[0]:
        return False
    if loose_targets is not None and loose_targets.any() and a[_SIGNATURE_TARGET].shape == loose_targets.shape \
            and b[_SIGNATURE_TARGET].shape == loose_targets.shape:
        a, b = list(a), list(b)
        a[_SIGNATURE_TARGET] = np.where(loose_targets, 0.0, a[_SIGNATURE_TARGET])
        b[_SIGNATURE_TARGET] = np.where(loose_targets, 0.0, b[_SIGNATURE_TARGET])
    for left, right in zip(a[1:], b[1:]):
        if left.shape != right.shape:
            return False
        if left.dtype.kind in "iu":
            if not np.array_equal(left, right):
                return False
            continue
        finite = np.isfinite(left)
        if not np.array_equal(finite, np.isfinite(right)) or not np.array_equal(left[~finite], right[~finite]):
            return False
        scale = np.max(np.abs(left[finite]), initial=0.0)
        if np.any(np.abs(left[finite] - right[finite]) > 1e-13 * scale):
            return False
    return True
