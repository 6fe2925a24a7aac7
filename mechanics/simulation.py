"""A running simulation: the state of the model (one or several bodies), its constraints and solvers, and the
frame loop.

``Simulation.step()`` runs one frame, static (mechanics.frame_step) or dynamic (mechanics.dynamics), returns one
:class:`FrameReport` either way, and keeps the last good state when a frame fails. Parameters change between
frames through ``set_*`` methods without rebuilding anything that does not depend on them (the sparsity pattern
and the symbolic factorization survive a material change).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from softsim.mechanics.constrained_tangent import ConstrainedTangent
from softsim.mechanics.dynamics import DynamicState
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fields import displacement_magnitude, nodal_average_operator
from softsim.mechanics.frame_report import FrameReport
from softsim.mechanics.frame_step import CORRECTIONS, solve_frame
from softsim.mechanics.inverse.frame import InverseSettings, solve_inverse_frame

logger = logging.getLogger(__name__)

#: the optional fields of a Frame: ``Simulation.snapshot(report, fields=...)`` computes only those asked for
SNAPSHOT_FIELDS = ("von_mises",)


@dataclass(frozen=True)
class Frame:
    """An immutable snapshot of the simulation for display or output; arrays are copies.

    x : (n, 3) positions; displacement : (n,) |x - X|; von_mises : (m,) per element;
    von_mises_nodal : (n,) volume-weighted nodal average; outputs : actuator/effector readouts
    (``NAME.QUANTITY`` -> value); report : the FrameReport of the frame that produced it (None after a reset).
    ``von_mises`` and ``von_mises_nodal`` are empty arrays, shape (0,), when the snapshot was taken without
    them (``has_von_mises`` tells; ``Simulation.von_mises_fields(frame.x)`` computes them later).
    """

    index: int
    x: np.ndarray
    displacement: np.ndarray
    von_mises: np.ndarray
    von_mises_nodal: np.ndarray
    outputs: dict[str, float]
    report: FrameReport | None
    contact_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: (k, 3): how far each obstacle (scene order) has moved from where its keys put it
    obstacle_shifts: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: (b, 4, 4): each free rigid body's pose (scene order), the homogeneous transform of its own frame
    rigid_poses: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 4)))

    @property
    def has_von_mises(self) -> bool:
        """True when the von Mises fields were computed (they are empty (0,) arrays otherwise)."""
        return self.von_mises_nodal.shape == self.displacement.shape


def _pose(state) -> np.ndarray:
    """The (4, 4) homogeneous transform of a rigid body's state (rotation R, centre c)."""
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = state.R, state.c
    return pose


class Simulation:
    """The model's static problem, Newton solver, constraints, constraint solver and dynamic solver.

    Parameters
    ----------
    problem : mechanics.static_problem.StaticProblem (elasticity, fixed nodes, loads).
    newton : mechanics.newton.StaticNewtonSolver.
    constraint_solver : a solver from mechanics.constraint_solvers.
    constraints : constraint models (mechanics.constraints), each named.
    correction : "equilibrium" (every static frame ends at the nonlinear constrained equilibrium) or "linear"
        (SOFA's single linear correction x_free + K^-1 J^T lambda).
    dynamic_solver : a mechanics.dynamics.DynamicSolver over this body (needed for ``mode="dynamic"``).
    mode : "static" or "dynamic".
    inverse : mechanics.inverse.frame.InverseSettings: the inverse model (static mode only), or None.
    """

    def __init__(self, *, problem, newton, constraint_solver, constraints=(), correction: str = "equilibrium",
                 name: str = "body", dynamic_solver=None, mode: str = "static",
                 inverse: InverseSettings | None = None) -> None:
        self.problem = problem
        self.newton = newton
        self.constraint_solver = constraint_solver
        self.constraints = list(constraints)
        self.correction = "equilibrium"
        self.set_correction(correction)
        self.name = name
        elasticity = problem.elasticity
        self.X = np.array(elasticity.rest_positions, dtype=np.float64)
        self.tets = np.asarray(elasticity.tets)
        self._average = nodal_average_operator(self.tets, elasticity.volumes, self.X.shape[0])
        self.x = self.X.copy()
        self.v = np.zeros_like(self.X)
        self.time = 0.0
        self.x_free: np.ndarray | None = None
        self._last_static_report = None  # its multipliers start the next static frame's complementarity solves
        self._edited = False  # a parameter changed since the last frame: solve even if the rows look unchanged
        self._continued = False  # rebuilt about another simulation's equilibrium (continue_from) since then
        self._constrained_tangent = ConstrainedTangent(problem.dof_to_free)
        self.dynamic_solver = dynamic_solver
        self.mode_of_last_frame = ""
        self.mode = "static"
        self.inverse: InverseSettings | None = None
        self.set_mode(mode)
        self.set_inverse(inverse)
        self.frame = 0
        self.last_report: FrameReport | None = None
        #: more outputs, each a callable giving ``NAME.QUANTITY`` -> float (the scene's servo angles)
        self.output_sources: list = []

    # -- running --------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """"static" (Newton + constraint projection per frame) or "dynamic" (one implicit time step per frame)."""
        if mode not in ("static", "dynamic"):
            raise ParameterError(f"mode must be 'static' or 'dynamic', got {mode!r}")
        if mode == "dynamic" and self.dynamic_solver is None:
            raise ParameterError("dynamic mode needs a mass (totalMass or massDensity) and a dynamic solver")
        if mode == "static" and self.rigid_bodies:
            raise ParameterError(f"free rigid bodies ({', '.join(b.name for b in self.rigid_bodies)}) move only in "
                                 "dynamic mode: a static frame has no equilibrium for a free body")
        if mode == "dynamic" and self.inverse_active:
            raise ParameterError("the inverse model runs in static mode: turn it off (solver.inverse.active = "
                                 "false) before switching to dynamic mode")
        if mode != self.mode:
            self.v = np.zeros_like(self.X)  # switching starts from rest velocities
            self.x_free = None
        self.mode = mode

    @property
    def inverse_active(self) -> bool:
        """True when frames solve the inverse problem (an ``[solver.inverse]`` that is active)."""
        return self.inverse is not None and self.inverse.active

    def set_inverse(self, settings: InverseSettings | None) -> None:
        """Solve the inverse problem from the next frame on (``settings.active``), or forward (None or inactive:
        the actuators' own values apply again)."""
        if settings is not None and settings.active and self.mode == "dynamic":
            raise ParameterError("the inverse model runs in static mode (scene.mode = \"static\")")
        self.inverse = settings
        if not self.inverse_active:
            for constraint in self.constraints:
                if hasattr(constraint, "inverse_target"):
                    constraint.inverse_target, constraint.inverse_bound = None, ""
        self.mark_edited()

    @property
    def edited(self) -> bool:
        """Whether a parameter changed since the last frame (the state is then not the equilibrium of the
        current parameters)."""
        return self._edited

    @property
    def constrained_tangent(self) -> ConstrainedTangent:
        """The constrained tangent of the static equilibrium iterations: its ``current_solver`` holds the last
        frame's factorization, ``matrix(K, terms)`` sums K and the constraint forces' stiffness on its pattern."""
        return self._constrained_tangent

    def mark_edited(self) -> None:
        """A parameter changed: the next static frame is solved even if its constraint rows look unchanged."""
        self._edited = True
        if self.inverse is not None:
            self.inverse.forget_weight()

    def forget_warm_start(self) -> None:
        """Forget the last static frame's report: the next static frame starts its complementarity solves from zero
        forces instead of that frame's multipliers, is never taken as unchanged, and an inverse frame linearizes
        at its free configuration instead of at the last forces. The state reached is the same within the
        solvers' tolerances; only the work to reach it differs."""
        self._last_static_report = None

    def set_correction(self, correction: str) -> None:
        """How static frames end: "equilibrium" or "linear" (see :data:`mechanics.frame_step.CORRECTIONS`)."""
        if correction not in CORRECTIONS:
            raise ParameterError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
        if correction != self.correction:
            self.forget_warm_start()  # the next frame solves again instead of reusing an "unchanged" state
        self.correction = correction

    def step(self) -> FrameReport:
        """One frame from the current state; on failure the state stays as it was."""
        for constraint in self.constraints:  # contacts measure their tangential rows from the frame's start
            if getattr(constraint, "measures_motion", False) and hasattr(constraint, "begin_frame"):
                constraint.begin_frame(self.x)
        if self.mode == "dynamic":
            return self._dynamic_step()
        common = dict(problem=self.problem, newton=self.newton, constraint_solver=self.constraint_solver,
                      constraints=self.constraints, x=self.x, frame=self.frame + 1, free_start=self.x_free,
                      correction=self.correction,
                      x_is_equilibrium=self.frame > 0 and self.mode_of_last_frame == "static",
                      last_report=self._last_static_report if self.mode_of_last_frame == "static" else None,
                      constrained_tangent=self._constrained_tangent)
        before = {id(s): (s.stats["iterations"], s.stats["background_factorizations"]) for s in self._async_solvers()}
        if self.inverse_active:
            x_new, report = solve_inverse_frame(settings=self.inverse, reuse_unchanged=not self._edited, **common)
        else:
            x_new, report = solve_frame(reuse_unchanged=not self._edited,
                                        keep_contacts=not self._edited or self._continued, **common)
        solvers = self._async_solvers()
        if solvers:  # counts since the frame started (a solver made during the frame started from zero)
            start = [before.get(id(s), (0, 0)) for s in solvers]
            report.preconditioner = {
                "cg_iterations": sum(s.stats["iterations"] - b[0] for s, b in zip(solvers, start)),
                "factorization_age": max(s.age for s in solvers),
                "background_factorizations": sum(s.stats["background_factorizations"] - b[1]
                                                 for s, b in zip(solvers, start))}
        self._edited = self._continued = False
        if x_new is None:
            logger.warning("frame %d failed: %s", report.frame, report.message)
        else:
            self.x = x_new
            self.x_free = report.x_free
            self._last_static_report = report
            self.frame += 1
            self.mode_of_last_frame = "static"
            report.limited = self._limited_actuators(settled=report.converged)
        self.last_report = report
        return report

    def _limited_actuators(self, settled: bool = True) -> list[str]:
        """The names of the actuators a bound or rate limit held in the frame just stored (their ``limited``
        alone: building every constraint's whole ``outputs`` each frame made a still frame slower).
        ``settled``: the frame converged; otherwise an actuator on a bound of its other quantity is where the
        solve stopped, not held by that bound, and each actuator's ``limited`` output says so too."""
        for constraint in self.constraints:
            constraint.settled = settled
        return [c.name for c in self.constraints if getattr(c, "limited", 0.0) == 1.0]

    def _async_solvers(self) -> list:
        """The frame's linear solvers that are asynchronous preconditioners (Newton's, the equilibrium's)."""
        candidates = (self.newton.linear_solver, self._constrained_tangent.current_solver)
        return [s for s in candidates if s is not None and s.capabilities.background]

    def _dynamic_step(self) -> FrameReport:
        self.dynamic_solver.constraints = [c for c in self.constraints if c.enforced and c.active]
        result = self.dynamic_solver.step(DynamicState(self.x, self.v, self.time, self.frame))
        warnings = []
        if result.ok and not result.converged:
            warnings.append(f"implicit step did not converge ({result.message or 'iterations done'})")
        if result.ok and result.constraint is not None and not result.constraint.converged:
            warnings.append(f"constraint solver did not converge (error {result.constraint.error:.3g} "
                            f"after {result.constraint.iterations} iterations)")
        report = FrameReport(self.frame + 1, result.ok, "; ".join(warnings) if result.ok else result.message,
                             constraint=result.constraint, n_constraint_rows=result.n_constraint_rows,
                             times=dict(result.times), dynamic=result)
        if result.ok:
            self.x = np.array(result.state.x, dtype=np.float64).reshape(-1, 3)
            self.v = np.array(result.state.v, dtype=np.float64).reshape(-1, 3)
            for constraint in self.constraints:  # observed only (effectors): their outputs follow the body
                if constraint not in self.dynamic_solver.constraints:
                    constraint.store(np.zeros(constraint.n_rows), self.x)
            self.time = result.state.time
            for body, rigid_state in zip(self.dynamic_solver.rigid_bodies, result.rigid_states):
                body.set_state(rigid_state)
            self.frame += 1
            self.mode_of_last_frame = "dynamic"
            report.limited = self._limited_actuators()
        self.last_report = report
        return report

    # -- changing -------------------------------------------------------------------------------------
    def set_constraint_solver(self, constraint_solver) -> None:
        """Use another complementarity solver from the next frame on (static and dynamic)."""
        self.constraint_solver = constraint_solver
        if self.dynamic_solver is not None:
            self.dynamic_solver.constraint_solver = constraint_solver

    def add_constraint(self, constraint) -> None:
        self.constraints.append(constraint)
        self.mark_edited()

    def remove_constraint(self, constraint) -> None:
        self.constraints.remove(constraint)
        self.mark_edited()

    def restore(self, x: np.ndarray, frame: int, *, v: np.ndarray | None = None, time: float | None = None) -> None:
        """Continue from positions ``x`` (n, 3) at frame number ``frame``, with velocities ``v`` (n, 3) and the
        time ``time`` when given (a rebuilt scene keeps its state)."""
        self.x = np.array(x, dtype=np.float64).reshape(self.X.shape)
        self.frame = int(frame)
        if v is not None:
            self.v = np.array(v, dtype=np.float64).reshape(self.X.shape)
        if time is not None:
            self.time = float(time)

    def continue_from(self, old: Simulation) -> None:
        """Take over ``old``'s static equilibrium after a rebuild that kept its positions (a scene edit that
        changes structure, e.g. ``collision.friction``), so that the next frame starts from that equilibrium
        like any frame after an edit: with its free configuration, its multipliers (carried to the constraints
        of the same type and name), its contacts detected at the positions and those that held it.

        Without it the rebuilt simulation took a deformed state for a first frame: its increments started from
        those positions with no constraint force at all (a finger curled by 17 mm of cable into a soft block,
        released at once), and its frame failed ("W must have a positive diagonal", "the contact rows' block of
        W is singular") even when the edited value was unchanged. Does nothing unless both are static, ``old``'s
        last frame was a static one and the positions have the same shape."""
        if (self.mode != "static" or old.mode_of_last_frame != "static" or old._last_static_report is None
                or old.x.shape != self.x.shape or old.x_free is None):
            return
        by_name = {(type(c), c.name): c for c in self.constraints}

        def carried(pairs) -> list:
            return [(by_name[(type(c), c.name)], np.array(f, dtype=np.float64)) for c, f in pairs
                    if (type(c), c.name) in by_name]

        report = copy.copy(old._last_static_report)
        report.forces = carried(report.forces)
        report.projection_forces = carried(report.projection_forces)
        report.signature = None  # another simulation's rows: never "unchanged"
        self._last_static_report = report
        self.x_free = np.array(old.x_free, dtype=np.float64)
        self.mode_of_last_frame = "static"
        self._continued = True  # the next frame keeps the contacts that held the equilibrium
        for constraint in self.constraints:
            if hasattr(constraint, "remember"):
                constraint.remember(self.x)
        for old_constraint in old.constraints:  # the contacts that held the equilibrium (keep_held)
            new_constraint = by_name.get((type(old_constraint), old_constraint.name))
            held = getattr(old_constraint, "held", None)
            if new_constraint is not None and held is not None and hasattr(new_constraint, "keep_held"):
                new_constraint.held = held
        self.mark_edited()

    def run(self, frames: int) -> list[FrameReport]:
        return [self.step() for _ in range(frames)]

    def reset(self) -> None:
        """Back to the rest shape (parameters as currently tuned); contacts forget the last positions."""
        for constraint in self.constraints:
            if hasattr(constraint, "remember"):
                constraint.remember(None)
        self.x = self.X.copy()
        self.v = np.zeros_like(self.X)
        self.time = 0.0
        for body in self.rigid_bodies:
            body.reset()
        self.x_free = None
        self._last_static_report = None
        self.frame = 0
        self.last_report = None
        if self.inverse is not None:
            self.inverse.forget_weight()

    # -- reading --------------------------------------------------------------------------------------
    def constraint(self, name: str):
        for constraint in self.constraints:
            if constraint.name == name:
                return constraint
        names = ", ".join(c.name for c in self.constraints) or "none"
        raise KeyError(f"no actuator or constraint named {name!r} (have: {names})")

    @property
    def rigid_bodies(self) -> list:
        """The free rigid bodies the dynamic solver integrates (mechanics.rigid_body)."""
        return [] if self.dynamic_solver is None else self.dynamic_solver.rigid_bodies

    def outputs(self) -> dict[str, float]:
        """Every actuator and effector output as ``NAME.QUANTITY`` -> float, each rigid body's centre and
        velocity (``NAME.x``, ``NAME.vx``...), and those of :attr:`output_sources`."""
        values = {}
        for body in self.rigid_bodies:
            values.update(body.outputs())
        for constraint in self.constraints:
            for key, value in constraint.outputs.items():
                if np.ndim(value) == 0:
                    values[f"{constraint.name}.{key}"] = float(value)
        for source in self.output_sources:
            values.update(source())
        return values

    def von_mises(self) -> np.ndarray:
        return self.problem.elasticity.von_mises(self.x)

    def nodal_average(self, element_values: np.ndarray) -> np.ndarray:
        """Volume-weighted nodal average (n,) of per-element values (m,); 0 at nodes in no tetrahedron."""
        return self._average @ element_values

    def von_mises_fields(self, x: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Von Mises stress per element (m,) (NaN, e.g. of a degenerate element, as 0) and its nodal average (n,)
        at positions ``x`` (n, 3), by default the current state. New arrays; the material in effect now."""
        von_mises = np.nan_to_num(self.problem.elasticity.von_mises(self.x if x is None else x))
        return von_mises, self.nodal_average(von_mises)

    def snapshot(self, report: FrameReport | None, *, fields: Iterable[str] = SNAPSHOT_FIELDS) -> Frame:
        """A :class:`Frame` of the current state, made with ``report`` (the FrameReport of the last frame or None).

        fields : the optional fields to compute, names from SNAPSHOT_FIELDS (default: all of them). A field not
            asked for is left empty (shape (0,)): von Mises is a pass over every element, worth skipping when
            nothing shows it.

        Raises ParameterError for a name not in SNAPSHOT_FIELDS.
        """
        wanted = {fields} if isinstance(fields, str) else set(fields)
        unknown = sorted(wanted.difference(SNAPSHOT_FIELDS))
        if unknown:
            raise ParameterError(f"unknown snapshot field(s) {', '.join(map(repr, unknown))}; "
                                 f"allowed: {', '.join(SNAPSHOT_FIELDS)}")
        if "von_mises" in wanted:
            von_mises, von_mises_nodal = self.von_mises_fields()
        else:
            von_mises, von_mises_nodal = np.zeros(0), np.zeros(0)
        points, forces, shifts = [], [], np.zeros((0, 3))
        for constraint in self.constraints:
            if hasattr(constraint, "obstacles"):
                shifts = np.array([o.shift for o in constraint.obstacles], dtype=np.float64).reshape(-1, 3)
            if hasattr(constraint, "contact_points"):
                points.append(np.array(constraint.contact_points, dtype=np.float64).reshape(-1, 3))
                forces.append(np.array(constraint.contact_forces, dtype=np.float64).reshape(-1, 3))
        return Frame(
            index=self.frame, x=self.x.copy(), displacement=displacement_magnitude(self.x, self.X),
            von_mises=von_mises, von_mises_nodal=von_mises_nodal, outputs=self.outputs(),
            report=report,
            contact_points=np.concatenate(points) if points else np.zeros((0, 3)),
            contact_forces=np.concatenate(forces) if forces else np.zeros((0, 3)),
            obstacle_shifts=shifts,
            rigid_poses=np.array([_pose(body.state) for body in self.rigid_bodies]).reshape(-1, 4, 4),
        )
