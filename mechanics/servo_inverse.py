"""Inverse control of servo joints (SoftRobots.Inverse ``JointActuator`` on Tripod's servos).

A servo is a ``[[body.fixed]]`` region that turns about its axis (``angle``, degrees) with ``actuated = true``:
its nodes stay eliminated (prescribed by the angle, :mod:`mechanics.rigid_frames`) and the inverse frame chooses
the angles. SoftRobots solves one QP per time step over the joints' efforts, the effectors' offsets linear in
them (``delta_E = dfree_E + W_EA lambda_A``), within the joints' angle range and per-step variation. Here the
joints' angles are the unknowns of the same problem: one frame

1. starts from the equilibrium at the current angles ``theta`` (solved first when the state is not one);
2. measures the effectors' weighted offsets to their goals ``r`` (m,) there (each goal limited by its
   ``maxShiftToTarget`` from the frame's start, as SoftRobots' ``Effector::getTarget``), and their sensitivity
   ``S = dr / dtheta`` (m, s) by central differences of re-solved equilibria (step :data:`ANGLE_STEP` degrees; the
   state is put back after each);
3. solves the bounded least-squares problem (scipy's ``lsq_linear``)::

       min_d |S d + r|^2 + epsilon w |d|^2,   max(minAngle - theta, -maxAngleVariation) <= d
                                                 <= min(maxAngle - theta, maxAngleVariation)

   with ``w = |S^T S|_inf`` (SoftRobots' relative scaling of the energy term);
4. turns the servos to ``theta + d`` in pieces of at most :data:`MAX_TURN` (a static frame moves prescribed nodes
   at once), each with its equilibrium; the last is the frame the report describes. When the offsets grew (the
   linearisation overshot, at a goal out of reach) or an equilibrium failed, the step is halved, at most
   :data:`HALVINGS` times, after which the servos stay at ``theta``.

A goal the servos can reach is approached by one such Gauss-Newton step per frame, as SOFA's scene approaches it
by one QP per time step. Scenes mixing actuated servos with inverse cables or cavities are refused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import lsq_linear

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

__all__ = ["ANGLE_STEP", "HALVINGS", "MAX_TURN", "Servo", "ServoInverse", "ServoInverseReport", "effector_offsets",
           "effector_points", "servo_increment"]

#: the central-difference step of the sensitivities (degrees)
ANGLE_STEP = 0.05
#: the largest turn of a servo between two equilibria solved within a frame (degrees)
MAX_TURN = 1.0
#: how many times a step that raises the offsets is halved before the frame stays where it started
HALVINGS = 4


@dataclass(frozen=True)
class Servo:
    """An actuated servo: its region's key path (``body.B.fixed[i]``) and limits in degrees (None: unset)."""

    path: str
    minAngle: float | None = None
    maxAngle: float | None = None
    maxAngleVariation: float | None = None

    def step_bounds(self, angle: float) -> tuple[float, float]:
        """The admissible change ``(lo, hi)`` of the angle from ``angle`` this frame: within the range and within
        the variation. An angle outside its range moves toward it by at most the variation."""
        lo = -np.inf if self.minAngle is None else self.minAngle - angle
        hi = np.inf if self.maxAngle is None else self.maxAngle - angle
        if lo > hi:
            raise ParameterError(f"{self.path}: minAngle {self.minAngle:g} > maxAngle {self.maxAngle:g}")
        if self.maxAngleVariation is not None:
            v = self.maxAngleVariation
            lo, hi = max(lo, -v), min(hi, v)
            if lo > hi:  # outside the range by more than one variation: as far toward it as allowed
                lo = hi = v if lo > 0 else -v
        return float(lo), float(hi)


@dataclass
class ServoInverseReport:
    """What a servo-inverse frame did: the angles before and after (degrees), the sensitivities (m, s), the
    offsets to the goals before (the goals limited) and the largest distance to a goal after, the servos whose
    answer sits on a limit, the equilibria solved."""

    angles_before: np.ndarray = field(default_factory=lambda: np.zeros(0))
    angles_after: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sensitivity: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    goal_distance: float = float("nan")
    limited: list = field(default_factory=list)
    solves: int = 0
    #: no step along the answer lowered the offsets: the servos stayed (a goal out of reach, at its nearest)
    stalled: bool = False


def effector_points(effector, x: np.ndarray) -> np.ndarray:
    """The tracked points ``(p, 3)`` of a position effector or a centre effector at ``x`` (n, 3)."""
    if hasattr(effector, "point_set"):
        return effector.point_set.positions(x)
    return effector.center(x)[None, :]


def effector_offsets(effectors, x: np.ndarray) -> np.ndarray:
    """The effectors' weighted offsets to their goals on their used axes, point-major, concatenated ``(m,)`` (as
    their rows' ``dfree`` at ``x``: ``weight_j (p_i - goal_i)_j``)."""
    parts = []
    for effector in effectors:
        if hasattr(effector, "offsets"):  # a centre effector, its rotation rows included
            parts.append(effector.offsets(x))
            continue
        axes = effector.directions
        weight = np.broadcast_to(np.asarray(effector.weight, dtype=np.float64), 3)[axes]
        parts.append(((effector_points(effector, x) - effector.goal())[:, axes] * weight).reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)


def servo_increment(S: np.ndarray, r: np.ndarray, bounds: list[tuple[float, float]], epsilon: float
                    ) -> tuple[np.ndarray, list[int]]:
    """The change ``d`` (s,) of the angles minimising ``|S d + r|^2 + epsilon w |d|^2`` within ``bounds`` (one
    ``(lo, hi)`` per servo), ``w = |S^T S|_inf``; and the servos whose answer sits on a bound."""
    S = np.asarray(S, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    s = S.shape[1]
    lo = np.array([b[0] for b in bounds], dtype=np.float64)
    hi = np.array([b[1] for b in bounds], dtype=np.float64)
    fixed = lo >= hi
    d = np.where(fixed, lo, 0.0)
    free = ~fixed
    if free.any() and S.size:
        w = float(np.abs(S.T @ S).sum(axis=1).max()) if S.size else 0.0
        A = np.vstack([S[:, free], np.sqrt(max(epsilon * w, 0.0)) * np.eye(int(free.sum()))])
        b = np.concatenate([-(r + S[:, fixed] @ d[fixed]), np.zeros(int(free.sum()))])
        result = lsq_linear(A, b, bounds=(lo[free], hi[free]), method="bvls", tol=1e-12)
        d[free] = result.x
    scale = np.maximum(np.abs(np.concatenate([lo, hi])[np.isfinite(np.concatenate([lo, hi]))]).max(initial=1.0),
                       1.0)
    on_bound = [j for j in range(s) if fixed[j] or min(abs(d[j] - lo[j]), abs(d[j] - hi[j])) <= 1e-9 * scale]
    return d, on_bound


class ServoInverse:
    """The inverse frames of a scene whose actuators are servos (see the module docstring).

    ``servos``: the actuated regions; ``regions``: their :class:`~mechanics.scene.schema.FixedSpec` objects (the
    scene's own: their ``angle`` is what the frame changes); ``hold``: puts the fixed nodes where their regions
    say (the scene's ``_hold_fixed``); ``epsilon``: the energy term's relative weight
    (``solver.inverse.epsilon``)."""

    def __init__(self, servos: list[Servo], regions: list, hold, epsilon: float) -> None:
        self.servos, self.regions, self.hold, self.epsilon = servos, regions, hold, float(epsilon)
        #: the state the last frame ended in is an equilibrium at the current angles (False after an edit)
        self.at_equilibrium = False
        self.last: ServoInverseReport | None = None

    def angles(self) -> np.ndarray:
        return np.array([float(region.angle) for region in self.regions])

    def set_angles(self, angles: np.ndarray, simulation) -> None:
        """Turn the servos to ``angles`` (degrees): the regions' nodes are put there and the next frame is solved
        (``simulation.mark_edited``, as an edit of the angle does)."""
        for region, angle in zip(self.regions, angles):
            region.angle = float(angle)
        self.hold()
        simulation.mark_edited()

    def _turn(self, simulation, start: np.ndarray, target: np.ndarray, frame: int, info: ServoInverseReport):
        """Turn the servos from ``start`` to ``target`` (degrees) from the equilibrium at ``start``: a static frame
        moves the prescribed nodes at once, and a turn of several degrees would crush the elements beside them
        before the equilibrium is solved, so the turn is made in pieces of at most :data:`MAX_TURN`, each
        followed by its equilibrium (the frame count put back after all but the last). The last report."""
        pieces = max(1, int(np.ceil(np.abs(target - start).max(initial=0.0) / MAX_TURN - 1e-12)))
        for piece in range(1, pieces + 1):
            self.set_angles(start + (target - start) * piece / pieces, simulation)
            report = simulation.step()
            info.solves += 1
            if piece < pieces:
                if not (report.ok and report.converged):
                    return report
                simulation.restore(simulation.x, frame)
        return report

    def step(self, simulation):
        """One inverse frame of ``simulation`` (a static :class:`~mechanics.simulation.Simulation`): returns the
        frame's report (the equilibrium at the new angles); :attr:`last` says what the inverse step did."""
        effectors = [c for c in simulation.constraints
                     if getattr(c, "has_goal", False) and c.active and not c.enforced]
        info = ServoInverseReport(angles_before=self.angles())
        frame = simulation.frame
        if not self.at_equilibrium:
            report = simulation.step()
            info.solves += 1
            if not (report.ok and report.converged):
                self.last = info
                return report
            simulation.restore(simulation.x, frame)
        x0 = simulation.x.copy()
        start = (x0, None if simulation.x_free is None else simulation.x_free.copy(), frame)
        for effector in effectors:
            effector.begin_frame(x0)
        r = effector_offsets(effectors, x0)
        theta = info.angles_before
        S = np.zeros((r.size, len(self.servos)))
        if r.size:
            for j in range(len(self.servos)):
                columns = []
                for sign in (1.0, -1.0):
                    moved = theta.copy()
                    moved[j] += sign * ANGLE_STEP
                    self.set_angles(moved, simulation)
                    report = simulation.step()
                    info.solves += 1
                    if not (report.ok and report.converged):
                        _back(simulation, *start)
                        self.set_angles(theta, simulation)
                        report.message = f"servo inverse: the equilibrium at {self.servos[j].path}.angle " \
                                         f"{moved[j]:g} did not converge ({report.message})"
                        self.last = info
                        return report
                    columns.append(effector_offsets(effectors, simulation.x))
                    _back(simulation, *start)
                S[:, j] = (columns[0] - columns[1]) / (2.0 * ANGLE_STEP)
        self.set_angles(theta, simulation)
        bounds = [servo.step_bounds(angle) for servo, angle in zip(self.servos, theta)]
        d, on_bound = servo_increment(S, r, bounds, self.epsilon) if r.size else (np.zeros(len(theta)), [])
        info.sensitivity, info.offsets = S, r
        info.limited = [self.servos[j].path for j in on_bound if r.size]
        objective = float(r @ r)
        scale = 1.0
        for attempt in range(HALVINGS + 1):
            report = self._turn(simulation, theta, theta + scale * d, frame, info)
            solved = report.ok and report.converged
            if solved and not r.size:
                break
            reached = effector_offsets(effectors, simulation.x) if solved else None
            if solved and float(reached @ reached) <= objective * (1.0 + 1e-12):
                break
            # the step raised the offsets (the linearisation overshot, at a goal out of reach) or its equilibrium
            # was not found: go back, take half
            _back(simulation, *start)
            self.set_angles(theta, simulation)
            if attempt == HALVINGS:  # no shorter step helps: stay where the frame started
                info.stalled = True
                report = simulation.step()
                info.solves += 1
                break
            scale *= 0.5
        info.angles_after = self.angles()
        self.at_equilibrium = bool(report.ok and report.converged)
        if effectors:
            distances = [float(np.linalg.norm((effector_points(e, simulation.x) - e.effectorGoal)[:, e.directions],
                                              axis=1).max()) for e in effectors]
            info.goal_distance = max(distances)
        self.last = info
        logger.debug("servo inverse frame %d: angles %s -> %s, goal distance %g", frame, info.angles_before,
                     info.angles_after, info.goal_distance)
        return report


def _back(simulation, x: np.ndarray, x_free: np.ndarray | None, frame: int) -> None:
    """Put ``simulation`` back to the equilibrium ``x`` (n, 3) at frame number ``frame``, with the free
    configuration it was solved from as the next frame's Newton start (a trial's own would start the next solve
    from positions made for other angles)."""
    simulation.restore(x, frame)
    simulation.x_free = None if x_free is None else x_free.copy()
