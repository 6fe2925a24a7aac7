"""Step IV of a static frame: the nonlinear constrained equilibrium, reached in automatic increments.

At the current x, with the tangent K (the consistent Jacobian of the forces plus the constraint forces'
stiffness when the material tangent is exact) and R = f_int + f_ext: the free step is K^-1 R, the rows are
linearised to x + K^-1 R, the complementarity problem gives lambda and x <- x + K^-1 (R + J^T lambda). These
constrained Newton (SQP) steps converge quadratically with the exact tangent, but only from near the answer:
a slider jumped from 0 to 45 mm asks for a state far from the last equilibrium.

Automatic increments (Abaqus's automatic incrementation, FEBio's auto time stepper): the frame's change is
followed along the homotopy

    R(x) + J^T lambda - (1 - t) r_0 = 0,   d_i(x) - target_i - (1 - t) o_i   (actuator rows)

from t = 0, solved by the start state (x_0, lambda_0) by construction (r_0 and o_i are its unbalanced force
and the actuator rows' offsets from their new targets), to t = 1, the requested state. For a changed cable
or cavity target, gravity or force this is the physical load path (the target moves linearly from its old
value to the new one); for any other edit (a modulus) a path of fictitious forces that starts where the body
is. Contact rows are not shifted. The first increment is the whole change; an increment whose Newton steps
fail (an inverted element at every step length, a growing imbalance, no convergence within the step budget)
is halved from the last converged sub-state, and an increment solved in a few steps doubles the next one.
The frame fails only when an increment of :data:`MIN_INCREMENT` fails: it then ends at the last converged
sub-state and says how far it got.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constrained_tangent import ConstrainedTangent
from softsim.mechanics.indefinite_projection import equality_like_rows, needs_indefinite_projection, solve_indefinite
from softsim.mechanics.linear_solvers import LinearSolverError
from softsim.mechanics.newton import CORRECTION_ROUND_OFF, ROUND_OFF_FACTOR
from softsim.mechanics.resolutions import BOUNDED, EQUALITY, FORCE, Blocks, row_residuals, slack_at_bound
from softsim.mechanics.same_state import same_values

#: the constrained equilibrium iterations take at most this many steps per allowed factorization
STEPS_PER_FACTORIZATION = 5
#: unbalanced force (relative to the force scale) above which every equilibrium step refactorizes the tangent
FAR_FROM_EQUILIBRIUM = 1e-3
#: the same with the exact tangent. A slider frame predicted to 3e-4 of the force scale reached 2e-8 in one
#: Newton step with a new factorization, but only 1e-4 with the last frame's (a chord step converges linearly)
FAR_FROM_EQUILIBRIUM_EXACT = 1e-5
#: relative tolerance of an iterative solve in the equilibrium iterations (inexact Newton steps). Measured on a
#: 36k-tet beam with a ramping cable: 0.1 adds outer steps, 0.01-0.03 keeps the outer steps of exact solves.
INEXACT_FORCING = 0.02
#: with the exact tangent an inexact step keeps Newton's quadratic rate when its relative linear residual (the
#: forcing term) is at most the square of the relative imbalance, and it reaches the tolerance in one step when
#: that residual is below this fraction of tolerance / imbalance (:func:`_forcing`)
EXACT_FORCING_MARGIN = 0.1
#: halvings of a constrained equilibrium step that leads to an implausible or much worse state
MAX_STEP_HALVINGS = 8
#: an unconverged complementarity solve that misses the constraint laws by more than this fraction of the
#: body's size fails the frame
MAX_CONSTRAINT_MISS = 1e-2
#: the smallest increment, as a fraction of the frame's change; one that fails ends the frame short
MIN_INCREMENT = 1.0 / 256.0
#: Newton steps of one increment (with the exact tangent) within which it counts as easy: the next doubles
EASY_INCREMENT_STEPS = 4
#: Newton steps one increment may take with the exact tangent before it is cut (with SOFA's approximate tangent
#: the budget is ``newton_iterations`` factorizations and STEPS_PER_FACTORIZATION times as many steps)
EXACT_INCREMENT_STEPS = 20
#: an increment whose merit did not fall below this fraction of its best value STALL_STEPS steps earlier is
#: stalling (Newton wandering far from the answer): it is cut at once instead of spending its whole budget
STALL_FACTOR = 0.5
STALL_STEPS = 8
#: an increment whose step budget is spent goes on (up to this multiple of its budget) while its merit is below
#: CONVERGING_DROP of its start and fell in each of its last two steps: the trunk's first frame (gravity and
#: 1 mm of cable) reached 1e-5 of the force scale in its 20 steps, was cut and took 28 more
CONVERGING_EXTRA_STEPS = 2
CONVERGING_DROP = 1e-3
#: a chord step (the last factorization reused, made at relative imbalance r_0) cuts the imbalance by about this
#: factor times r_0: measured 2.3 r_0 on the finger's slider frames and 3.5 r_0 on the trunk's
CHORD_RATE_FACTOR = 4.0
#: with the exact tangent a step reuses the last factorization only when the step before cut the imbalance by
#: this factor (a chord step then still gains a lot; otherwise Newton's quadratic step is worth a factorization)
EXACT_REUSE_RATE = 0.1
#: a frame takes at most this many times ``newton_iterations`` factorizations since its last converged increment,
#: and at most FRAME_BUDGET_CAP times that in all (an interactive frame must end); then it ends at the last
#: converged sub-state, saying how far it got. Counting since the last converged increment lets a frame that
#: keeps making progress go on: ArticulatedTentacle's 35 mm jump converges in 153 steps and 9 increments with
#: its newton_iterations = 10, where a budget over the whole frame stopped it at 72 % after 100 factorizations.
#: A frame that converged within the budget before is unchanged.
FRAME_FACTORIZATION_BUDGET = 10
FRAME_BUDGET_CAP = 4
#: an increment whose start extrapolated along the path (:func:`_along_path`) failed is tried again from the last
#: converged sub-state at this fraction of its size (it was tried at the same size), and the frame's later
#: increments start from their sub-states too. The extrapolation fails where the path bends within the increment (a
#: cable's points meeting, a contact closing): the same increment from the sub-state then mostly failed as well (on
#: ArticulatedTentacle's 35 mm jump in 3 of 5 cases, 8 steps each), and so did the next extrapolations near the bend
#: (5 of 9). That jump took 154 steps, 121 with the smaller retry and 102 without the later extrapolations; its ramp
#: 147 -> 142; trunk_nolimit's jump 49 either way, the suite's other jumps and ramps unchanged. With the exact
#: tangent only: with SOFA's (linear steps, one factorization per increment) the finger's first frame, 2 mm of cable
#: from rest, no longer converged within its budget (65 % of the change; test_cli's frames that do not converge)
EXTRAPOLATION_FAILED_CUT = 0.5
#: relative imbalance and law residual (over the body's size) to which an intermediate increment is solved: it
#: only has to bring the next increment's start near the path; the last increment meets the Newton tolerances
INTERMEDIATE_TOLERANCE = 1e-4
#: a trial state whose merit exceeds this multiple of the current one is halved (a step may raise the merit
#: on the way to the answer, as Newton's steps do, but not by orders of magnitude)
MERIT_GROWTH = 10.0
INVERSION_CHECKED_STEPS = True
#: a plausible full Newton step whose merit grew by more than MERIT_GROWTH but at most this factor is taken on
#: trust (a watchdog, Chamberlain et al. 1982): when the next step does not bring the merit below that of the state
#: the trusted step was taken from, the iterations go back there and halve the step as usual, and the increment
#: trusts no other step. Near the answer a constrained Newton step can raise a merit that adds the imbalance to
#: the constraint residuals even though it converges (the Maratos effect): the trunk's first frame (gravity and
#: 1 mm of cable) went 7e-2 -> 9e-1 -> 1e-2 -> 3e-1 -> 1e-3 in full steps (9 steps), but zig-zagged through halved
#: steps for 17; the inflated gripper finger's full steps wander instead (21 steps halved, 49 in full steps).
WATCHDOG_GROWTH = 1e3
#: with the exact tangent, once a step taken from a merit above this failed to cut the merit below WANDER_FACTOR
#: of its value, the frame's next steps above this relative imbalance use the elasticity's positive semi-definite
#: tangent (SOFA's R K0 R^T, or the hyperelastic laws' clamped one), until one of those fails alike, which switches
#: back to the exact tangent. Far from the answer the exact tangent can be indefinite (a bent finger released): its
#: step is then no descent direction and Newton wanders. But the definite tangent ignores the rotation's
#: stiffness, and where the body turns a lot (a gripper's finger inflated in one frame) its steps wander instead.
#: Measured, total equilibrium steps with the exact tangent throughout / the definite one above 0.1 from the first
#: step / the switch without switching back / this rule: the shipped finger's eight jumps 142 / 62 / 73 / 77 (at
#: most 12 per jump); springy 8 / 43 / 9 / 9; bunny 5 / 26 / 5 / 5; pneunet_gripper 19 / 64 / 64 / 21;
#: trunk_nolimit's 20 mm jump fails / 84 / 84 / 83; the finger's 30 mm jump 13 / - / 13 / 10; finger_block's 17 / -
#: / 17 / 14. WANDER_FACTOR 0.5 gave springy 43
DEFINITE_TANGENT_ABOVE = 0.1
WANDER_FACTOR = 0.9
#: a far step with the definite tangent switches the next far steps back to the exact tangent unless it cut the
#: merit below this fraction. The definite tangent leaves out the rotation's stiffness, so its Newton steps converge
#: only linearly: where they merely shave the merit, the exact tangent's step is worth trying again. On
#: trunk_nolimit's 20 mm jump the definite steps cut the merit by 0.85 a step (0.48 to 0.115 in 10 steps) and
#: WANDER_FACTOR kept them: 83 steps, and 101 with EXTRAPOLATION_FAILED_CUT (its increments after a failed
#: extrapolation then start from their sub-states, where the definite steps crawl); 49 with this rule either way
#: (0.7: 50); finger_block's 30 mm 19 -> 18, the suite's other jumps and the shipped finger's eight unchanged
DEFINITE_WANDER_FACTOR = 0.5
#: contact inside the iterations: an accepted step that brings a surface node onto an obstacle or another body
#: where it has no contact row is shortened to the node's first touch, found by this many bisections of the step
#: (a 40 mm step then stops within 0.16 mm of it); the row is added there and the increment goes on from that
#: state, so no step tunnels through a surface on the way. At most MAX_STEP_DETECTIONS such stops per frame; the
#: frame's contact detection after the equilibrium does the rest
CONTACT_BISECTIONS = 8
MAX_STEP_DETECTIONS = 24
#: contact rows that follow the surface: after an accepted step, a contact whose node slid past its triangle moves
#: on to the triangle now nearest to it, at most this many times per frame (a node at an edge could otherwise
#: move to and fro)
MAX_FOLLOWS = 24


@dataclass
class EquilibriumReport:
    """The constrained Newton iterations that end a frame at the nonlinear constrained equilibrium.

    ``iterations``: factorizations done, ``steps``: Newton steps taken (a step may reuse the last
    factorization), ``increments``: the increments solved (1 when the change was solved at once);
    ``reached``: the fraction of the frame's change reached (1.0 when converged; less when the smallest
    increment failed, then ``x`` is the last converged sub-state and ``shortfall`` says what it reached);
    ``residual``: |R + J^T lambda| / force scale at the accepted state;
    ``constraint_residual``: the largest constraint-law residual of a row, as a length (violation / |J_i|);
    ``x`` (n, 3), ``system`` and ``constraint`` (the last complementarity report) describe that state.
    """

    iterations: int
    converged: bool
    diverged: bool
    reason: str
    residual: float
    constraint_residual: float
    x: np.ndarray | None = None
    system: object | None = None
    constraint: object | None = None
    steps: int = 0
    #: the multipliers (m,) of the accepted state (those of ``constraint`` unless no step was taken)
    force: np.ndarray | None = None
    increments: int = 1
    reached: float = 1.0
    #: per ramped constraint that fell short: (name, value reached, value requested)
    shortfall: list = field(default_factory=list)
    #: how often a step touched a surface where a node had no contact row (rows were added then)
    touches: int = 0


@dataclass
class State:
    """A candidate state of the equilibrium iterations at increment t and how far it is from the constrained
    equilibrium (lengths and forces in the scene's units, ``scene.units``). :meth:`Homotopy.at` takes the
    frame's start as one; :func:`quadratic_prediction` reads only ``x`` and ``force``."""

    x: np.ndarray  # (n, 3) node positions
    force: np.ndarray  # (m,) the rows' multipliers
    residual: np.ndarray  # (n_free,) R(x) - (1 - t) r_0 on the free DOFs (force)
    check: object  # the rows at x (ConstraintSystem), actuator rows shifted to the increment's targets
    unbalanced: float  # |R(x) - (1 - t) r_0 + J(x)^T lambda| (force)
    relative: float  # unbalanced / force scale (dimensionless)
    length: float  # largest constraint-law residual of a row, as a length
    balanced: bool  # unbalanced <= the residual tolerance x the force scale, or below the round-off floor

    def merit(self, body_size: float) -> float:
        """How far from the equilibrium, dimensionless: relative imbalance plus law residual / body size."""
        return self.relative + self.length / max(body_size, np.finfo(float).tiny)


class Homotopy:
    """The increments' path from a start state (x_0, lambda_0) to the frame's requested state.

    ``r0 (n_free,)`` is the start's unbalanced force, ``offsets`` maps each ramped constraint to
    ``(row offsets (rows,), force offsets (rows,), targets (rows,))``: d_i + c_i lambda_i - target_i of its
    displacement-like rows (EQUALITY, BOUNDED) and lambda_i - target_i of its FORCE rows at the start, and the
    requested targets.
    """

    def __init__(self, r0: np.ndarray, offsets: dict, held: dict | None = None) -> None:
        self.r0 = r0
        self.offsets = offsets
        #: per ramped constraint, (rows,) bool: the BOUNDED rows its force bound holds at the start with their law
        #: slack (a trunk's cable left at 0 that the bend shortens past it). Their offsets are the slack, a
        #: consequence of the state, not a change of the frame's inputs (:func:`_change` leaves them out)
        self.held = held or {}

    @classmethod
    def at(cls, state: State) -> Homotopy:
        check = state.check
        r0 = state.residual + (check.J_free.T @ state.force if check.n_rows == state.force.size else 0.0)
        offsets = {}
        if check.n_rows == state.force.size:
            kinds = _row_values(check.blocks, check.blocks.kind.astype(np.int64), check.n_rows)
            targets = _row_values(check.blocks, check.blocks.target, check.n_rows)
            law_d = check.dfree + check.compliance * state.force
            lo = _row_values(check.blocks, check.blocks.lo, check.n_rows)
            hi = _row_values(check.blocks, check.blocks.hi, check.n_rows)
            held = {}
            for constraint, rows in zip(check.constraints, check.row_ranges):
                if not getattr(constraint, "ramped", True):
                    continue
                kind = kinds[rows]
                displacement_like = (kind == EQUALITY) | (kind == BOUNDED)
                d_offset = np.where(displacement_like, law_d[rows] - targets[rows], 0.0)
                f_offset = np.where(kind == FORCE, state.force[rows] - targets[rows], 0.0)
                offsets[constraint] = (d_offset, f_offset, targets[rows].copy())
                at_lo, at_hi = slack_at_bound(state.force[rows], d_offset, lo[rows], hi[rows])
                held[constraint] = (kind == BOUNDED) & (at_lo | at_hi)
        return cls(np.asarray(r0, dtype=np.float64).copy(), offsets, held)

    def residual_shift(self, t: float) -> np.ndarray | float:
        return 0.0 if t >= 1.0 else (1.0 - t) * self.r0

    def shift(self, system, t: float):
        """``system`` (a ConstraintSystem at some x) with its ramped rows' targets at the increment ``t``:
        violations of displacement-like rows minus (1 - t) o_i, FORCE targets plus (1 - t) o_i."""
        if t >= 1.0 or not self.offsets:
            return system
        dfree = system.dfree.copy()
        target = system.blocks.target.copy()
        block_of_row = np.repeat(np.arange(system.blocks.size.size), system.blocks.size)
        for constraint, rows in zip(system.constraints, system.row_ranges):
            offset = self.offsets.get(constraint)
            if offset is None or offset[0].size != rows.stop - rows.start:
                continue
            dfree[rows] -= (1.0 - t) * offset[0]
            forced = np.flatnonzero(offset[1])
            if forced.size:
                target[block_of_row[rows.start + forced]] += (1.0 - t) * offset[1][forced]
        blocks = system.blocks
        shifted = Blocks(blocks.start, blocks.size, blocks.kind, target, blocks.lo, blocks.hi, blocks.mu)
        return type(system)(system.constraints, system.J_free, dfree, shifted, system.compliance,
                            system.row_ranges)

    def shortfall(self, system, t: float) -> list:
        """(name, target reached, target requested) of every ramped single-row constraint whose target moved,
        at ``t`` (a cable's displacement or force, a cavity's volume growth or pressure)."""
        found = []
        for constraint, rows in zip(system.constraints, system.row_ranges):
            offset = self.offsets.get(constraint)
            if offset is None or rows.stop - rows.start != 1 or offset[0].size != 1:
                continue
            moved = offset[0][0] if offset[0][0] != 0.0 else offset[1][0]
            if moved == 0.0:
                continue
            requested = float(offset[2][0])
            found.append((constraint.name, requested + (1.0 - t) * moved, requested))
        return found


def percent(fraction: float) -> str:
    """A fraction of the frame's change as a percentage to three digits: 0.72 -> "72", 0.996 -> "99.6" (not
    "100" for a frame that fell short)."""
    return f"{100.0 * fraction:.3g}"


def _row_values(blocks: Blocks, values: np.ndarray, n_rows: int) -> np.ndarray:
    """A per-block array repeated over each block's rows: (n_rows,)."""
    return np.repeat(values, blocks.size) if n_rows else np.zeros(0)


def law_lengths(J_free: sp.csr_matrix, w_diag: np.ndarray, violation: np.ndarray, force: np.ndarray,
                blocks: Blocks) -> float:
    """The largest constraint-law residual of a row as a length: row residual / |J_i|."""
    laws = row_residuals(np.maximum(np.abs(w_diag), np.finfo(float).tiny), violation, force, blocks)
    return float(np.max(laws / np.maximum(_row_norms(J_free), np.finfo(float).tiny), initial=0.0))


#: [(J_free, its data array, |J_i| (m,))] of the last call of :func:`_row_norms` (one tuple, replaced whole): a
#: frame's states share their rows (a state, its linearised candidate and its shifted copies), and the laws are
#: measured about twice per state
_last_row_norms: list = [None]


def _row_norms(J_free: sp.csr_matrix) -> np.ndarray:
    """|J_i| (m,) of the rows of ``J_free`` (csr)."""
    last = _last_row_norms[0]
    if last is not None and last[0] is J_free and last[1] is J_free.data:
        return last[2]
    summed = J_free
    if not J_free.has_canonical_format:  # a mapped cable's rows may hold a column twice: sum them first
        summed = J_free.copy()
        summed.sum_duplicates()
    rows = np.repeat(np.arange(summed.shape[0]), np.diff(summed.indptr))
    norms = np.sqrt(np.bincount(rows, weights=summed.data ** 2, minlength=summed.shape[0]))
    _last_row_norms[0] = (J_free, J_free.data, norms)
    return norms


def solve_accuracy(system, W: np.ndarray, force: np.ndarray) -> float:
    """How well the complementarity solve met the linearised laws (W, dfree) with ``force``, as a length."""
    return law_lengths(system.J_free, np.diag(W), system.dfree + W @ force, force, system.blocks)


def solve_failed(report, accuracy: float, body_size: float) -> bool:
    """An unconverged complementarity solve whose answer misses the laws by more than
    :data:`MAX_CONSTRAINT_MISS` of the body's size: a diverging iteration (e.g. ImprovedJacobi with too strong
    a spectral correction), not merely an unfinished one."""
    return not report.converged and accuracy > MAX_CONSTRAINT_MISS * body_size


def solve_failure(report, accuracy: float) -> str:
    return (f"the constraint solver diverged (error {report.error:.3g} after {report.iterations} "
            f"iterations; its answer misses the constraint laws by {accuracy:.3g} in length)")


def force_stiffness(system, x: np.ndarray, force: np.ndarray) -> list:
    """The constraints' force-stiffness triplets at ``x`` (n, 3) for the multipliers ``force`` (m,)."""
    terms = []
    for constraint, rows in zip(system.constraints, system.row_ranges):
        term = constraint.force_stiffness(x, force[rows])
        if term is not None:
            terms.append(term)
    return terms


def force_floor(elasticity) -> float:
    """The round-off floor of the internal force's norm (force units): :data:`ROUND_OFF_FACTOR` E_max h^2
    sqrt(m) per body, with h^3 the mean element volume and m the number of elements (each element's force is
    about E eps h^2 at rest, and m of them add up like random round-off). At rest under no load the internal
    force is round-off only (SOFA's ``large`` rotation of an undeformed element is the identity to a few ulps),
    so |f_int| + |f_ext| is no scale for it: an imbalance below this floor is balanced."""
    floor = 0.0
    for body in getattr(elasticity, "bodies", None) or [elasticity]:
        young, volumes = getattr(body, "young", None), getattr(body, "volumes", None)
        if young is None or volumes is None or len(volumes) == 0:
            continue
        mean_volume = float(np.mean(np.abs(volumes)))
        floor += float(np.max(young)) * mean_volume ** (2.0 / 3.0) * np.sqrt(len(volumes))
    return ROUND_OFF_FACTOR * floor


def body_size(rest: np.ndarray) -> float:
    """The diagonal of the bounding box of the rest positions (n, 3). (The extremes are taken per coordinate
    over a contiguous copy: numpy's reductions across the rows of an (n, 3) array are strided and cost tens of
    times more, and the runaway test of every trial state asks for the size.)"""
    if not rest.size:
        return 0.0
    coordinates = np.ascontiguousarray(np.asarray(rest).reshape(-1, 3).T)
    return float(np.linalg.norm(coordinates.max(axis=1) - coordinates.min(axis=1)))


class _Context:
    """What every step of a frame's equilibrium iterations shares."""

    def __init__(self, problem, newton, constraint_solver, enforced, x_last, W, tangent, build, project, check_state):
        self.problem = problem
        self.newton = newton
        self.constraint_solver = constraint_solver
        self.enforced = enforced
        self.x_last = x_last
        self.W = W
        self.tangent = tangent
        self.build = build
        self.project = project
        self.check_state = check_state
        self.residual_tolerance = max(newton.residual_tolerance_threshold, 0.0)
        self.body_size = body_size(problem.elasticity.rest_positions)
        self.length_tolerance = max(newton.correction_tolerance_threshold, CORRECTION_ROUND_OFF) * self.body_size
        self.force_floor = force_floor(problem.elasticity)
        self.exact = bool(getattr(problem.elasticity, "exact_tangent", False))
        self.solver = tangent.solver(newton.linear_solver)
        self.factorizations = 0
        self.steps = 0
        self.homotopy: Homotopy | None = None
        self._cache: list = []
        #: whether every trial state must be free of inverted elements (else only the accepted equilibria)
        self.inversion_checked = INVERSION_CHECKED_STEPS
        self.last_report = None
        self.last_system = None
        #: a step with the exact tangent from far did not cut the merit: later far steps take the definite one
        self.wandering = False
        #: the constraints that find contacts a step reaches (obstacle and body contacts), and how often they did
        self.detectors = [c for c in enforced if hasattr(c, "missed_contacts")]
        self.detections = 0
        #: the constraints whose contact rows move from triangle to triangle, and how often they did this frame
        self.followers = [c for c in enforced if hasattr(c, "follow_surface")]
        self.follows = 0
        self.rows_before = None  # the rows before the last contacts a step touched were added
        #: (x, K_free) when the last evaluation assembled the tangent at x with the forces (one pass over the
        #: elements instead of two): the next Newton step from that very state factorizes it
        self.tangent_at: tuple | None = None

    def _at(self, x: np.ndarray, with_tangent: bool = False) -> tuple:
        """(R (n_free,), the rows at x, the force scale) at ``x`` (n, 3); the last two are kept, since a state is
        evaluated again at another increment or after the homotopy is made (one assembly instead of two).
        ``with_tangent``: a state the next Newton step will almost surely refactorize at (a prediction, far from
        the answer) gets its tangent from the same pass over the elements as its forces (:attr:`tangent_at`)."""
        for cached_x, values in self._cache:
            if cached_x is x or same_values(cached_x, x):
                return values
        if with_tangent and hasattr(self.problem, "system"):
            residual, K_free = self.problem.system(x)
            self.tangent_at = (x, K_free)
        else:
            residual = self.problem.residual(x)
        check = self.build(self.enforced, self.x_last, x, self.problem.free_dofs, linearize_at=x)
        values = (residual, check, getattr(self.problem, "last_force_scale", 0.0))
        self._cache = [(x.copy(), values), *self._cache[:1]]
        return values

    def evaluate(self, x: np.ndarray, force: np.ndarray, t: float, with_tangent: bool = False) -> State:
        """R, J and the constraint laws at ``x`` (n, 3) with the multipliers ``force`` (m,), at increment t."""
        residual, check, scale = self._at(x, with_tangent)
        if self.homotopy is not None:
            residual = residual - self.homotopy.residual_shift(t)
            check = self.homotopy.shift(check, t)
        same = check.n_rows == force.size
        unbalanced = float(np.linalg.norm(residual + _transpose_times(check.J_free, force))) if same else np.inf
        length = np.inf
        if same and self.W.shape[0] == check.n_rows:
            length = law_lengths(check.J_free, np.diag(self.W), check.dfree + check.compliance * force, force,
                                 check.blocks)
        relative = unbalanced / scale if scale > 0 else (0.0 if unbalanced == 0 else np.inf)
        balanced = unbalanced <= max(max(self.residual_tolerance, ROUND_OFF_FACTOR) * scale, self.force_floor)
        return State(x, force, residual, check, unbalanced, relative, length, balanced)


def _transpose_times(J: sp.csr_matrix, force: np.ndarray) -> np.ndarray:
    """J^T force (n_free,) for J csr (m, n_free): the sums of scipy's J.T @ force in the same order (rows in
    turn), without building the transpose."""
    if J.shape[0] == 0:
        return np.zeros(J.shape[1])
    weights = J.data * np.repeat(force, np.diff(J.indptr))
    return np.bincount(J.indices, weights=weights, minlength=J.shape[1])


def equilibrate(problem, newton, constraint_solver, enforced, x_last, x_start, system, report, force, W,
                tangent: ConstrainedTangent, *, build, project, check_state,
                max_factorizations: int | None = None) -> EquilibriumReport:
    """Constrained Newton (SQP) iterations from ``x_start`` (n, 3) with the multipliers ``force`` (m,), in
    automatic increments (module docstring).

    ``system``/``report``/``W``: the rows, complementarity report and W (m, m) of the projection that gave
    the start. ``build`` (the frame step's ``build_constraint_system``), ``project`` (its projection, Steps
    II-III on a built system) and ``check_state`` are passed in so that this module has no import cycle.

    A state passes when the unbalanced force |R(x) + J(x)^T lambda| is below ``residual_tolerance_threshold``
    times |f_int| + |f_ext| (or at its round-off floor), and every constraint row obeys its law at x within
    ``correction_tolerance_threshold`` times the body's size of the accuracy the last complementarity solve
    reached on its linearised laws. K is refactorized at x on every step while the unbalanced force is above
    :data:`FAR_FROM_EQUILIBRIUM` of the force scale (:data:`FAR_FROM_EQUILIBRIUM_EXACT` with an exact
    tangent), and nearer the equilibrium when a step did not cut it by :data:`EXACT_REUSE_RATE` (with an exact
    tangent; with SOFA's approximate one, when it did not lower it by a tenth, unless the step before it was taken
    with a new factorization). The factorization outlives the frame (a new target
    starts from the last equilibrium, where it was made). A step that leads to an implausible state
    (``check_state``: a runaway displacement or an inverted element) or whose merit (relative imbalance plus
    law residual over the body's size) grows more than :data:`MERIT_GROWTH`-fold is halved, with the
    multipliers, up to :data:`MAX_STEP_HALVINGS` times. ``max_factorizations`` caps the factorizations of
    this call below the frame's budget (a solve whose failure costs nothing but its time).
    """
    ctx = _Context(problem, newton, constraint_solver, enforced, x_last, W, tangent, build, project, check_state)
    ctx.last_report, ctx.last_system = report, system
    start = ctx.evaluate(x_start, force, 1.0)
    accuracy = solve_accuracy(system, W, report.force) if system.n_rows == report.force.size else 0.0
    if start.check.n_rows != system.n_rows:
        return _finish(ctx, start, False, False, "the constraint rows changed during the iterations")
    if _passes(ctx, start, accuracy):
        return _finish(ctx, start, True, False, "converged")
    ctx.homotopy = Homotopy.at(start)
    converged_state = ctx.evaluate(x_start, force, 0.0)
    predicted = _predict(ctx, start)
    # ``load_steps`` is the least number of increments: no increment is larger than 1 / load_steps
    largest = 1.0 / max(1, int(getattr(ctx.newton, "load_steps", 1)))
    t, increment, increments, last_reason = 0.0, largest, 0, ""
    budget = FRAME_FACTORIZATION_BUDGET * ctx.newton.newton_iterations
    out_of_budget = False
    path: tuple | None = None  # (t, state) of the converged sub-state before the last one, for the path predictor
    resume: State | None = None  # where a step touched a surface that had no row: the increment goes on there
    progress_at = 0  # the factorizations done when the last increment converged
    extrapolation_failed = False  # an increment started from the path's extrapolation failed in this frame
    cap = FRAME_BUDGET_CAP * budget if max_factorizations is None else min(FRAME_BUDGET_CAP * budget,
                                                                            max_factorizations)
    anchor = _Anchor.at(ctx, converged_state)  # the last converged sub-state with its contact rows
    origin = "sub-state"  # where the go at the current increment started: "predicted", "extrapolated" or this
    while True:
        if ctx.factorizations - progress_at >= budget or ctx.factorizations >= cap:
            out_of_budget = True
            last_reason = (f"the frame's budget of factorizations is spent ({ctx.factorizations - progress_at} "
                           f"since the last converged increment, {ctx.factorizations} in all)") + (
                f" ({last_reason})" if last_reason else "")
            break
        target = min(1.0, t + increment)
        if resume is not None:  # the same go at this increment, on from where it touched
            from_state, resume = resume, None
        elif predicted is not None and target >= 1.0 and t == 0.0:
            from_state, origin = predicted, "predicted"
        else:
            along = None if extrapolation_failed else _along_path(ctx, path, t, converged_state, target)
            from_state = along or converged_state
            origin = "sub-state" if along is None else "extrapolated"  # (see _along_path)
        state, accuracy, outcome, reason = _increment(ctx, from_state, target)
        if outcome == "converged":
            anchor = _Anchor.at(ctx, state)
        elif outcome != "touched":
            # the next increment starts from the last converged sub-state with the contact rows it had: the rows
            # added where this increment's steps touched and those moved from triangle to triangle go
            converged_state = anchor.restore(ctx)
        if outcome == "touched":  # new contact rows: the states kept get multipliers for them, the path restarts
            converged_state = ctx.evaluate(converged_state.x, carry_forces(converged_state.force, state.check,
                                                                         ctx.rows_before), t)
            start = None
            predicted, path, resume = None, None, state
            continue
        if outcome != "converged" and origin == "predicted":  # a bad prediction: the increments from the start
            predicted = None
            continue
        if outcome != "converged" and origin == "extrapolated":  # a bad extrapolation: from the sub-state
            path = None
            if ctx.exact:  # the path bends within the increment: a smaller one
                increment *= EXTRAPOLATION_FAILED_CUT  # (EXTRAPOLATION_FAILED_CUT), no more extrapolation this frame
                extrapolation_failed = True
            continue
        if outcome == "converged":
            progress_at = ctx.factorizations
            path = (t, converged_state)
            t, converged_state = target, state
            increments += 1
            if t >= 1.0:
                final = _finish(ctx, state, True, False, "converged")
                final.increments = increments
                if start is not None:
                    _remember(ctx, start, state)
                else:  # the rows changed: the last frame's move is no predictor for the next frame
                    ctx.tangent.history = None
                return final
            if ctx.last_increment_steps <= EASY_INCREMENT_STEPS:
                increment = min(2.0 * increment, largest)
            continue
        last_reason = reason
        increment *= 0.5
        if increment < MIN_INCREMENT:
            break
    # the smallest increment failed: end at the last converged sub-state, saying how far it got
    shortfall = ctx.homotopy.shortfall(converged_state.check, t) if t > 0.0 or out_of_budget else []
    reached = "; ".join(f"{name} reached {got:.4g} of {wanted:.4g}" for name, got, wanted in shortfall)
    if t > 0.0 or out_of_budget:
        reason = (f"reached {percent(t)} % of the requested change" + (f" ({reached})" if reached else "")
                  + f": {last_reason}")
    else:
        reason = f"reached 0 % of the requested change (even 1/{round(1 / MIN_INCREMENT)} of it fails): {last_reason}"

    # no increment at all could be solved: the frame fails and keeps its last state; a part of the change, or a
    # budget spent: the frame ends at the last converged sub-state, not converged
    final = _finish(ctx, converged_state, False, t == 0.0 and not out_of_budget, reason)
    final.increments, final.reached, final.shortfall = increments, t, shortfall
    return final


@dataclass
class _Anchor:
    """A converged sub-state of a frame with what its contact rows were: the contact sets (``contact_state()``
    of the constraints that add or move rows), the rows, report and W of its last projection. A failed increment
    goes back to it: rows that steps of the failed increment added at touches, or moved, were found at states
    that were not equilibria (kept, they made finger_block's frames fail: 77 rows at a sub-state that had 43,
    where no complementarity solve converged)."""

    state: State
    contact_sets: list
    system: object
    report: object
    W: np.ndarray

    @classmethod
    def at(cls, ctx: _Context, state: State) -> _Anchor:
        contacts = {id(c): c for c in [*ctx.detectors, *ctx.followers] if hasattr(c, "contact_state")}
        return cls(state, [(c, c.contact_state()) for c in contacts.values()], ctx.last_system, ctx.last_report,
                   ctx.W)

    def restore(self, ctx: _Context) -> State:
        """Put the contact rows back as they were at the anchor; returns its state."""
        changed = False
        for constraint, saved in self.contact_sets:
            now = constraint.contact_state()  # the arrays a change replaces: the same objects when nothing changed
            if now.keys() != saved.keys() or any(now[key] is not value for key, value in saved.items()):
                constraint.restore_contact_state(saved)
                changed = True
        if changed:
            ctx._cache = []
            ctx.last_system, ctx.last_report, ctx.W = self.system, self.report, self.W
        return self.state


@dataclass
class Secant:
    """The last frame's move from one equilibrium to the next, for the next frame's predictor: the start
    ``x_start`` (n, 3) and end ``x_end`` (n, 3), their multipliers (m,), and the frame's change ``change`` (the
    homotopy's unbalanced force and actuator offsets, one vector) with the ``key`` of its layout."""

    x_start: np.ndarray
    force_start: np.ndarray
    x_end: np.ndarray
    force_end: np.ndarray
    change: np.ndarray
    key: tuple
    #: the frame before's move when it ended where this one started (same layout), for a quadratic predictor
    before: Secant | None = None


#: the predictor extrapolates the last frame's move only when this frame's change points the same way (cosine)
PREDICTOR_MIN_COSINE = 0.95
#: ... and is at most this many times as large
PREDICTOR_MAX_RATIO = 4.0
#: the quadratic predictor (through the last three equilibria) is used up to this ratio of this frame's change
#: to the last one's; beyond it the parabola's curvature error grows faster than the line's
QUADRATIC_MAX_RATIO = 2.0
#: ... and while it bends away from the line by at most this fraction of the line's move: a sharply bending path
#: (trunk_nolimit's 5 mm frames bend by 0.65) is not yet resolved by three equilibria, and Newton from the
#: parabola took 76 steps where it took 16 from the line. A steady slider bends by 0.02 (finger) to 0.12 (trunk).
QUADRATIC_MAX_BEND = 0.25


def _change(homotopy: Homotopy) -> tuple[np.ndarray, tuple]:
    """The frame's change of inputs as one vector (the unbalanced force at the start, the actuator rows' offsets,
    without those of rows held slack at a force bound: :attr:`Homotopy.held`) and the key of its layout (which
    constraints, how many rows)."""
    parts, key = [homotopy.r0], [homotopy.r0.size]
    for constraint, (d_offset, f_offset, _targets) in homotopy.offsets.items():
        held = homotopy.held.get(constraint)
        if held is not None and held.any():
            d_offset = np.where(held, 0.0, d_offset)
        parts += [d_offset, f_offset]
        key.append((id(constraint), d_offset.size))
    return np.concatenate(parts), tuple(key)


def _predict(ctx: _Context, start: State) -> State | None:
    """A secant predictor for slider drags: when the last frame moved the body from one equilibrium to this
    frame's start and this frame's change is a multiple alpha of that frame's (the same actuators moved the
    same way), start the Newton steps from x + alpha (x - x_previous) with the multipliers extrapolated alike.
    None when there is no such history or the predicted state is implausible (the Newton steps from a
    prediction that fails start again from the frame's start)."""
    history = getattr(ctx.tangent, "history", None)
    if history is None or history.x_end.shape != start.x.shape or not np.array_equal(history.x_end, start.x):
        return None
    change, key = _change(ctx.homotopy)
    if key != history.key or history.force_end.shape != start.force.shape:
        return None
    norm = float(np.linalg.norm(change) * np.linalg.norm(history.change))
    if norm == 0.0:
        return None
    cosine = float(change @ history.change) / norm
    alpha = float(change @ history.change) / float(history.change @ history.change)
    if cosine < PREDICTOR_MIN_COSINE or not 0.0 < alpha <= PREDICTOR_MAX_RATIO:
        return None
    x = start.x + alpha * (history.x_end - history.x_start)
    force = start.force + (alpha * (history.force_end - history.force_start)
                           if history.force_start.shape == start.force.shape else 0.0)
    quadratic = quadratic_prediction(history, change, start, x)
    if quadratic is not None and not ctx.check_state(ctx.problem, quadratic[0]):
        x, force = quadratic
    elif ctx.check_state(ctx.problem, x):
        return None
    if _into_contact(ctx, x):
        # the path extrapolated from the last frames knows nothing of a contact it runs into: finger_block's
        # prediction for 15 mm put finger nodes 3 mm inside the block, whose rows then held the wrong faces
        return None
    return ctx.evaluate(x, force, 1.0, with_tangent=True)


def _into_contact(ctx: _Context, x: np.ndarray) -> bool:
    """Whether the positions ``x`` (n, 3) bring a surface node closer than contactDistance to a surface where it
    has no contact row."""
    return any(c.missed_contacts(x) for c in ctx.detectors)


def quadratic_prediction(history: Secant, change: np.ndarray, start: State, linear: np.ndarray) -> tuple | None:
    """``(x (n, 3), multipliers (m,))`` on the parabola through the last three equilibria, at this frame's
    change, or None without a collinear frame before the last one, or when the parabola bends away from the
    line's prediction ``linear`` (n, 3) by more than :data:`QUADRATIC_MAX_BEND` of the line's move.

    ``history`` is the last frame's :class:`Secant` (its ``before`` the frame's before it), ``change`` (k,) this
    frame's change in the same layout (the start's unbalanced force, then the actuator rows' offsets), ``start``
    this frame's start, of which only ``x`` (n, 3) and ``force`` (m,) are read. Positions are in the scene's
    length unit, the multipliers in their rows' units.

    The equilibria are placed along this frame's change direction u at s = 0 (the start), -h_1 and -h_1 - h_2,
    with h_k = u . (the change of the k-th last frame); the prediction is the Lagrange interpolant at s = |change|.
    A slider dragged at a steady speed bends the body along a curve: the line through the last two equilibria
    misses the next one by 1.5 % of the move on the finger, the parabola by 0.05 %."""
    before = history.before
    if before is None or before.key != history.key or before.x_end.shape != start.x.shape:
        return None
    if not (before.force_end.shape == before.force_start.shape == history.force_start.shape == start.force.shape):
        return None
    length = float(np.linalg.norm(change))
    if length == 0.0 or float(np.linalg.norm(before.change)) == 0.0:
        return None
    if float(change @ before.change) / (length * float(np.linalg.norm(before.change))) < PREDICTOR_MIN_COSINE:
        return None
    h1, h2 = float(change @ history.change) / length, float(change @ before.change) / length
    if not (h1 > 0.0 and h2 > 0.0 and length <= QUADRATIC_MAX_RATIO * h1):
        return None
    s = length
    w0 = (s + h1) * (s + h1 + h2) / (h1 * (h1 + h2))
    w1 = -s * (s + h1 + h2) / (h1 * h2)
    w2 = s * (s + h1) / ((h1 + h2) * h2)
    x = w0 * start.x + w1 * history.x_start + w2 * before.x_start
    if np.max(np.abs(x - linear)) > QUADRATIC_MAX_BEND * np.max(np.abs(linear - start.x)):
        return None
    force = w0 * start.force + w1 * history.force_start + w2 * before.force_start
    return x, force


def _along_path(ctx: _Context, path: tuple | None, t: float, state: State, target: float) -> State | None:
    """The next increment's start extrapolated along the path: from the two last converged sub-states
    (t_0, x_0) (``path``) and (t, x) (``state``), x + (target - t) / (t - t_0) (x - x_0), with the multipliers
    alike. A Newton step from the converged sub-state is the tangent's linear prediction, which for a bending
    body stretches it (its nodes move on straight lines); the secant of the path already holds the rotation the
    increments made. None without two sub-states or when the extrapolation is implausible."""
    if path is None:
        return None
    t_0, state_0 = path
    if not t > t_0 or state_0.force.shape != state.force.shape:
        return None
    ratio = (target - t) / (t - t_0)
    x = state.x + ratio * (state.x - state_0.x)
    if ctx.check_state(ctx.problem, x):
        return None
    return ctx.evaluate(x, state.force + ratio * (state.force - state_0.force), target, with_tangent=True)


def _remember(ctx: _Context, start: State, end: State) -> None:
    """Keep this frame's move for the next frame's predictor (on the tangent object, which outlives frames)."""
    change, key = _change(ctx.homotopy)
    previous = getattr(ctx.tangent, "history", None)
    if previous is not None and (previous.key != key or previous.x_end.shape != start.x.shape
                                 or not np.array_equal(previous.x_end, start.x)):
        previous = None
    if previous is not None:
        previous.before = None  # keep two frames only
    ctx.tangent.history = Secant(start.x.copy(), start.force.copy(), end.x.copy(), end.force.copy(), change, key,
                                 previous)


def _converging(merits: list) -> bool:
    """Whether an increment's merits (one per step) are closing in on the answer: the last is below
    :data:`CONVERGING_DROP` of the first, and each of the last two steps lowered it."""
    return (len(merits) >= 3 and merits[-1] <= CONVERGING_DROP * merits[0]
            and merits[-1] < merits[-2] < merits[-3])


def _passes(ctx: _Context, state: State, accuracy: float) -> bool:
    return state.balanced and state.length <= ctx.length_tolerance + 2.0 * accuracy


def _finish(ctx: _Context, state: State, converged: bool, diverged: bool, reason: str) -> EquilibriumReport:
    system = state.check if state.check.n_rows == ctx.last_system.n_rows else ctx.last_system
    report = EquilibriumReport(ctx.factorizations, converged, diverged, reason, state.relative, state.length,
                               state.x, system, ctx.last_report, ctx.steps, state.force)
    report.touches = ctx.detections
    return report


def _increment(ctx: _Context, state: State, t: float):
    """Newton steps from the converged ``state`` to the equilibrium at increment ``t``.

    Returns ``(state, accuracy, outcome, reason)``: outcome "converged" or "cut" (this increment cannot be
    solved: try a smaller one from ``state``)."""
    newton = ctx.newton
    state = ctx.evaluate(state.x, state.force, t)
    reference = max(state.unbalanced, ROUND_OFF_FACTOR * getattr(ctx.problem, "last_force_scale", 0.0))
    last_unbalanced, refactorized_last, steps = None, False, 0
    factorizations_before = ctx.factorizations
    factorized_at: float | None = None  # the relative imbalance where this increment last factorized
    merits: list[float] = []
    accuracy = 0.0
    max_steps = (min(EXACT_INCREMENT_STEPS, STEPS_PER_FACTORIZATION * newton.newton_iterations) if ctx.exact
                 else STEPS_PER_FACTORIZATION * newton.newton_iterations)
    # an exact tangent's Newton steps refactorize while far from the answer: an increment may use its whole step
    # budget (``newton_iterations``, SOFA's count of factorizations, is a scene's setting for SOFA's tangent)
    max_factorizations = max(newton.newton_iterations, max_steps) if ctx.exact else newton.newton_iterations
    solver = ctx.solver
    ctx.last_increment_steps = 0
    watch: _Watch | None = None  # the state before a step taken on trust, until the next step says how it went
    distrust = False  # a step taken on trust did not pay off: this increment takes none again
    while True:
        if state.check.n_rows != ctx.last_system.n_rows:
            return state, accuracy, "cut", "the constraint rows changed during the iterations"
        if _passes(ctx, state, accuracy) or (t < 1.0 and state.merit(ctx.body_size) <= INTERMEDIATE_TOLERANCE):
            inverted = "" if ctx.inversion_checked else ctx.check_state(ctx.problem, state.x)
            if inverted:
                return state, accuracy, "cut", f"the equilibrium found is not admissible: {inverted}"
            ctx.last_increment_steps = steps
            return state, accuracy, "converged", ""
        merits.append(state.merit(ctx.body_size))
        if ctx.exact and len(merits) > STALL_STEPS and min(merits[-STALL_STEPS:]) > STALL_FACTOR * min(
                merits[:-STALL_STEPS]):
            return state, accuracy, "cut", (f"stalled: the imbalance did not halve in {STALL_STEPS} steps "
                                            f"(unbalanced force {state.relative:.3g} of the force scale)")
        # With the exact tangent a reused factorization converges linearly, a new one quadratically: reuse it
        # only while a step still cuts the imbalance tenfold. With SOFA's tangent the rate is the tangent's own
        # whatever is refactorized: refactorize when a step did not lower it by a tenth, unless the step before
        # was already taken with a new factorization.
        slow = last_unbalanced is not None and (
            state.unbalanced > EXACT_REUSE_RATE * last_unbalanced if ctx.exact
            else state.unbalanced > 0.9 * last_unbalanced and not refactorized_last)
        far = FAR_FROM_EQUILIBRIUM_EXACT if ctx.exact else FAR_FROM_EQUILIBRIUM
        # a factorization of the definite tangent is not reused once the exact one is wanted
        stale = ctx.tangent.definite and state.relative <= DEFINITE_TANGENT_ABOVE
        refactorize = state.relative > far or not solver.is_factorized or slow or stale
        if ctx.exact and not refactorize and t >= 1.0:
            # a chord step with a factorization made at imbalance r_0 converges at a rate of about
            # CHORD_RATE_FACTOR r_0 (the tangent changed in proportion to the distance moved since): refactorize
            # unless the chord step is expected to reach the tolerance at once
            made_at = FAR_FROM_EQUILIBRIUM_EXACT if factorized_at is None else factorized_at
            refactorize = state.relative * CHORD_RATE_FACTOR * made_at > ctx.residual_tolerance
        factorizations = ctx.factorizations - factorizations_before
        out_of_steps = steps >= max_steps or (refactorize and factorizations >= max_factorizations)
        if out_of_steps and ctx.exact and steps < CONVERGING_EXTRA_STEPS * max_steps and _converging(merits):
            out_of_steps = False  # Newton's last steps are closing in: cutting now would throw them away
        if out_of_steps:
            if state.unbalanced > 1e3 * reference:
                return state, accuracy, "cut", (f"the unbalanced force grew from {reference:.3g} to "
                                                f"{state.unbalanced:.3g} in {steps} steps")
            return state, accuracy, "cut", (f"not converged after {steps} steps and {factorizations} "
                                            f"factorizations (unbalanced force {state.relative:.3g} of the force "
                                            f"scale, constraint residual {state.length:.3g})")
        refactorized_last = refactorize
        if refactorize:
            factorized_at = state.relative
        last_unbalanced = state.unbalanced
        steps += 1
        ctx.steps += 1
        definite = ctx.exact and ctx.wandering and state.relative > DEFINITE_TANGENT_ABOVE
        step = _newton_step(ctx, state, refactorize, definite)
        if ctx.exact and not definite and _refused(ctx, step):
            # the exact tangent's W has no answer for these rows (a friction block with a non-positive diagonal
            # that semi-smooth Newton cannot solve either, a contact complement a solver diverges on): this
            # step takes the definite tangent, whose W is positive definite
            step = _newton_step(ctx, state, True, True)
        if isinstance(step, str):
            return state, accuracy, "cut", step
        candidate, candidate_report, W, step_x, step_force = step
        if not np.all(np.isfinite(step_force)):  # no step length helps
            return state, accuracy, "cut", (f"the constraint solver diverged (error {candidate_report.error:.3g} "
                                            f"after {candidate_report.iterations} iterations)")
        if not np.all(np.isfinite(step_x)):
            return state, accuracy, "cut", "the step is not finite"
        current_merit = state.merit(ctx.body_size)
        trial, alpha, trusted, why = _backtrack(ctx, state, step_x, step_force, W, t,
                                                trust=watch is None and not distrust and steps > 1)
        if watch is not None:  # this step followed one taken on trust (see WATCHDOG_GROWTH)
            if trial is None or trial.merit(ctx.body_size) >= watch.merit:
                # it did not pay off: back to where it was taken, and the usual step halving from there
                state, accuracy, current_merit = watch.state, watch.accuracy, watch.merit
                ctx.last_system, ctx.last_report = watch.system, watch.report
                candidate, candidate_report, W, step_x, step_force = watch.step
                trial, alpha, trusted, why = _backtrack(ctx, state, step_x, step_force, W, t, first_halving=1)
                distrust = True
            watch = None
        elif trusted:
            watch = _Watch(state, accuracy, ctx.last_system, ctx.last_report,
                           (candidate, candidate_report, W, step_x, step_force), current_merit)
        if trial is None:
            return state, accuracy, "cut", (f"every step length down to 1/{2 ** MAX_STEP_HALVINGS} gives an "
                                            f"implausible state: {why}")
        if steps == 1:
            reference = max(reference, trial.unbalanced)
        touched = _first_touch(ctx, state, alpha * step_x, alpha * step_force, t)
        if touched is not None:
            return touched, accuracy, "touched", "a step reached a surface without contact rows"
        if ctx.exact and current_merit > DEFINITE_TANGENT_ABOVE and (
                trial.merit(ctx.body_size) > (DEFINITE_WANDER_FACTOR if definite else WANDER_FACTOR)
                * current_merit):
            # this step's tangent did not help from far: the next far step takes the other (see
            # DEFINITE_TANGENT_ABOVE and DEFINITE_WANDER_FACTOR)
            ctx.wandering = not definite
        state = trial
        ctx.last_system, ctx.last_report = candidate, candidate_report
        accuracy = solve_accuracy(candidate, W, candidate_report.force)
        if solve_failed(candidate_report, accuracy, ctx.body_size):
            # a smaller increment may give the complementarity solver a better-posed problem; when none does,
            # the frame fails with this reason
            return state, accuracy, "cut", solve_failure(candidate_report, accuracy)
        state = _follow_surfaces(ctx, state, t)


def _rows(state: State, constraint) -> np.ndarray | None:
    """The multipliers of ``constraint``'s rows in ``state`` (None when it has none there)."""
    rows = state.check.rows_of(constraint)
    return None if rows is None or state.force.size != state.check.n_rows else state.force[rows]


def _follow_surfaces(ctx: _Context, state: State, t: float) -> State:
    """Contact rows that follow the surface (:data:`MAX_FOLLOWS`): the contacts whose nodes ``state`` carried
    past their triangles move on to the triangles now nearest (:meth:`~mechanics.constraints.body_contact.
    BodyContactConstraint.follow_surface`), and the state is evaluated again with those rows (their multipliers
    kept). Returns the state (the same one when no contact moved)."""
    if not ctx.followers or ctx.follows >= MAX_FOLLOWS:
        return state
    if not sum(constraint.follow_surface(state.x, _rows(state, constraint)) for constraint in ctx.followers):
        return state
    ctx.follows += 1
    ctx._cache = []
    return ctx.evaluate(state.x, state.force, t)


@dataclass
class _Watch:
    """A state from which a full Newton step was taken on trust (:data:`WATCHDOG_GROWTH`): the state, the
    accuracy of its last complementarity solve, its rows and report, the step ``(rows, report, W, step of x,
    step of the multipliers)`` and its merit."""

    state: State
    accuracy: float
    system: object
    report: object
    step: tuple
    merit: float


def _backtrack(ctx: _Context, state: State, step_x: np.ndarray, step_force: np.ndarray, W: np.ndarray, t: float,
               *, first_halving: int = 0, trust: bool = False):
    """The step from ``state`` (x step (n, 3), multiplier step (m,), with the W (m, m) it was projected with),
    halved from ``0.5 ** first_halving`` until the state is plausible and its merit at most
    :data:`MERIT_GROWTH` times ``state``'s (the last halving is taken whatever its merit). With ``trust``, a
    plausible full step whose merit grew by up to :data:`WATCHDOG_GROWTH` is taken as it is.

    Returns ``(trial state or None, step length, whether it was taken on trust, why no length would do)``."""
    current_merit = state.merit(ctx.body_size)
    why, alpha = "", 1.0
    for halving in range(first_halving, MAX_STEP_HALVINGS + 1):
        alpha = 0.5 ** halving
        x_trial = state.x + alpha * step_x
        why = ctx.check_state(ctx.problem, x_trial, inversion=ctx.inversion_checked)
        if why:
            continue
        ctx.W = W
        candidate_state = ctx.evaluate(x_trial, state.force + alpha * step_force, t)
        merit = candidate_state.merit(ctx.body_size)
        if merit <= MERIT_GROWTH * current_merit or halving == MAX_STEP_HALVINGS:
            return candidate_state, alpha, False, ""
        if trust and halving == 0 and merit <= WATCHDOG_GROWTH * current_merit:
            return candidate_state, alpha, True, ""
        why = "every shorter step makes the imbalance worse"
    return None, alpha, False, why


def _first_touch(ctx: _Context, state: State, step_x: np.ndarray, step_force: np.ndarray, t: float):
    """Contact inside the iterations (:data:`CONTACT_BISECTIONS`): when ``state.x + step_x`` (n, 3) brings a
    surface node closer than contactDistance to an obstacle or another body where it has no row, the step is cut
    to the node's first touch by bisection, the contacts missed just past it get rows, and the state at the
    touch is returned, evaluated with the new rows (their multipliers zero) at increment ``t``. None when the
    step touches nothing new (or the frame's :data:`MAX_STEP_DETECTIONS` are spent)."""
    if not ctx.detectors or ctx.detections >= MAX_STEP_DETECTIONS:
        return None
    touching = [c for c in ctx.detectors if c.missed_contacts(state.x + step_x)]
    if not touching:
        return None
    low, high = 0.0, 1.0
    for _ in range(CONTACT_BISECTIONS):
        middle = 0.5 * (low + high)
        if any(c.missed_contacts(state.x + middle * step_x) for c in touching):
            high = middle
        else:
            low = middle
    before = state.check
    # every node this step brings onto a surface gets its row now, paired with the face it moves onto
    added = sum(c.add_missed_contacts(state.x + step_x, at=state.x + low * step_x) for c in touching)
    if not added:
        return None
    ctx.detections += 1
    ctx._cache = []
    x = state.x + low * step_x
    _residual, check, _scale = ctx._at(x)
    force = carry_forces(state.force + low * step_force, check, before)
    shifted = ctx.homotopy.shift(check, t) if ctx.homotopy is not None else check
    # W of the new rows (the merit's law residuals use its diagonal), from the factorization the step was made with
    KinvJt = ctx.tangent.responses.solve(ctx.solver, check.J_free.T.toarray())
    ctx.rows_before = before
    try:
        _dx, report, W = ctx.project(
            ctx.constraint_solver, ctx.solver, shifted, force, KinvJt=KinvJt,
            solve=lambda W, system, start: project(ctx.constraint_solver, W, system, start, exact=ctx.exact))
    except ValueError:
        # the new rows make the projection fail here (two rows of a node against parallel faces: W singular):
        # the state at the touch goes on without their W (its merit is then infinite) and the increment's next
        # step says why it cannot go on, so the frame cuts the increment as for any failed step
        return ctx.evaluate(x, force, t)
    ctx.W, ctx.last_system, ctx.last_report = W, check, report
    return ctx.evaluate(x, force, t)


def carry_forces(force: np.ndarray, system, before) -> np.ndarray:
    """The multipliers ``force`` (of the rows of the system ``before``) laid out on ``system``'s rows: each
    constraint's rows keep their values, rows a contact constraint appended get zero."""
    if before is None or force.size == system.n_rows and before.n_rows == system.n_rows:
        return force.copy()
    mapped = np.zeros(system.n_rows)
    for constraint, rows in zip(system.constraints, system.row_ranges):
        old = before.rows_of(constraint)
        if old is None:
            continue
        kept = min(rows.stop - rows.start, old.stop - old.start)
        mapped[rows.start:rows.start + kept] = force[old.start:old.start + kept]
    return mapped


def _forcing(ctx: _Context, state: State) -> float:
    """The relative residual to which an iterative solver (the asynchronous preconditioner) may solve a step.

    With SOFA's tangent the steps converge linearly whatever the solve's accuracy: INEXACT_FORCING. With the
    exact tangent a loose solve would make them linear too (a 10k-tet beam's slider frames took 2 to 5 steps at
    0.02 instead of 1): the forcing follows the imbalance r as Eisenstat and Walker's choices do, r^2 (quadratic
    convergence) but no tighter than what takes r to the tolerance in this step, and never looser than
    INEXACT_FORCING."""
    if not ctx.exact:
        return INEXACT_FORCING
    relative = max(state.relative, np.finfo(float).tiny)
    wanted = max(relative * relative, EXACT_FORCING_MARGIN * max(ctx.residual_tolerance, ROUND_OFF_FACTOR) / relative)
    return float(min(INEXACT_FORCING, wanted))


#: the start of the reason :func:`_newton_step` gives when its projection raised
PROJECTION_FAILED = "constraint projection failed"


def _newton_step(ctx: _Context, state: State, refactorize: bool, definite: bool):
    """One constrained Newton step from ``state``: the tangent factorized at ``state.x`` when ``refactorize``
    (the elasticity's definite tangent when ``definite``), the free step, the rows linearised at it, their
    projection. Returns ``(linearised rows, complementarity report, W, step of x (n, 3), step of the multipliers
    (m,))``, or the reason (str) why no step could be computed."""
    solver = ctx.solver
    assembled, ctx.tangent_at = ctx.tangent_at, None  # the tangent assembled with this state's forces, if any
    if refactorize:
        if assembled is not None and assembled[0] is state.x and not definite:
            K_free = assembled[1]
        else:
            with definite_tangent(ctx.problem.elasticity, definite):
                K_free = ctx.problem.tangent(state.x)
        terms = force_stiffness(state.check, state.x, state.force) if ctx.exact else []
        ctx.tangent.definite = definite
        try:
            solver.factorize(ctx.tangent.matrix(K_free, terms))
        except (LinearSolverError, np.linalg.LinAlgError) as error:  # singular: a smaller increment may help
            return f"the tangent could not be factorized ({error})"
        ctx.factorizations += 1
    check = state.check
    try:
        KinvJt, free_step = ctx.tangent.responses.solve(solver, check.J_free.T.toarray(), extra=state.residual,
                                                        tolerance=_forcing(ctx, state))
    except (LinearSolverError, np.linalg.LinAlgError) as error:  # a runaway state's non-finite residual
        return f"the step could not be solved ({error})"
    x_lin = state.x + ctx.problem.expand(free_step)
    candidate = type(check)(check.constraints, check.J_free, check.dfree + check.J_free @ free_step,
                            check.blocks, check.compliance, check.row_ranges)
    try:
        correction_dx, candidate_report, W = ctx.project(
            ctx.constraint_solver, solver, candidate, state.force, KinvJt=KinvJt,
            solve=lambda W, system, start: project(ctx.constraint_solver, W, system, start, exact=ctx.exact))
    except ValueError as error:
        return f"{PROJECTION_FAILED}: {error}"
    step_x = x_lin + ctx.problem.expand(correction_dx) - state.x
    return candidate, candidate_report, W, step_x, candidate_report.force - state.force


def _refused(ctx: _Context, step) -> bool:
    """Whether a Newton step (:func:`_newton_step`'s answer) failed in its projection: W raised (a singular
    block, a non-positive diagonal without friction), the complementarity solve has no answer at all (error
    inf: a friction block the iterative solvers refuse and semi-smooth Newton does not solve), or its answer is
    not finite or misses the linearised laws as a diverging solve does (:func:`solve_failed`: contacts pressed
    hard into a soft body, whose Schur complement of the exact tangent is indefinite)."""
    if isinstance(step, str):
        return step.startswith(PROJECTION_FAILED)
    candidate, report, W, _step_x, step_force = step
    if not np.isfinite(report.error) or not np.all(np.isfinite(step_force)):
        return True
    # a converged solve never failed: its laws' accuracy (a pass over the rows) is left for _increment to measure
    return not report.converged and solve_failed(report, solve_accuracy(candidate, W, report.force), ctx.body_size)


def definite_tangent(elasticity, definite: bool):
    """A context in which ``elasticity`` assembles its positive semi-definite tangent (when ``definite`` and it
    has one; :meth:`mechanics.fem.TetElasticity.definite_tangent`), else a context that changes nothing."""
    switch = getattr(elasticity, "definite_tangent", None) if definite else None
    return switch() if switch is not None else contextlib.nullcontext()


def ramped_rows(system) -> np.ndarray:
    """(m,) bool: the rows of the constraints whose targets a frame ramps (actuators, drag, attachments)."""
    mask = np.zeros(system.n_rows, dtype=bool)
    for constraint, rows in zip(system.constraints, system.row_ranges):
        mask[rows] = getattr(constraint, "ramped", True)
    return mask


def project(constraint_solver, W: np.ndarray, system, initial_force, *, exact: bool = False):
    """The complementarity solve of ``system`` with W (m, m), returning its report.

    With an exact tangent (``exact``), K is indefinite at many stable equilibria (a cable-bent finger), and so
    may be W even where its diagonal is positive: the actuator rows are solved as equalities by the active-set
    solve of :mod:`mechanics.indefinite_projection` and the other rows (contacts) by the scene's constraint
    solver on their Schur complement, the stiffness the contacts see with the actuators holding (Gauss-Seidel on
    the whole W diverged on a finger pressed on a plane, and its inexact answer on the trunk's eight coupled,
    unsymmetric cable rows stalled the Newton steps at 3e-4 of the force scale). So is any problem whose W has a
    non-positive diagonal. Otherwise the scene's constraint solver solves the whole problem."""
    rows_a = equality_like_rows(system.blocks, ramped_rows(system)) if W.shape[0] else np.zeros(0, dtype=np.int64)
    if needs_indefinite_projection(W) or (exact and rows_a.size):
        return solve_indefinite(constraint_solver, W, system.dfree, system.blocks, rows_a, initial_force)
    return constraint_solver.solve(W, system.dfree, system.blocks, initial_force=initial_force)
