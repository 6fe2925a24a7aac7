"""What the GUI draws for one frame: the mechanics Frame plus the display-only data computed on the worker.

Everything here is computed on the simulation thread from the live scene (which only that thread may read)
and copied, so the GUI thread can draw it while the next frame runs. ``DisplayFrame`` is a
:class:`mechanics.simulation.Frame` (panels and plots read it as one) with a few extra fields.

The colour fields other than the displacement cost a pass over every element each, so a frame carries only the
field shown: the worker knows it (the runner's ``SetField`` command) and makes its frames with it;
:func:`complete_frame` adds the missing fields to a frame for the .vtu export.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from softsim.mechanics.simulation import Frame
from softsim.mechanics.units import unit_label, with_unit

logger = logging.getLogger(__name__)

#: the colour fields (the one list of them): key -> (title, quantity); "displacement" is in every frame
FIELDS = {
    "displacement": ("Displacement magnitude", "length"),
    "von_mises": ("von Mises stress", "pressure"),
    "energy_density": ("Strain energy density", "energy density"),
}


def field_title(field: str, units: str | None = None) -> str:
    """The title of a colour field with its unit in the scene's unit system: ``"von Mises stress [kPa]"``."""
    title, quantity = FIELDS[field]
    return title if units is None else with_unit(title, quantity, units)
#: the fields computed only on request
OPTIONAL_FIELDS = ("von_mises", "energy_density")


@dataclass(frozen=True)
class DisplayFrame(Frame):
    """A Frame with display extras (all arrays are copies).

    energy_density_nodal : (n,) strain energy density [energy / rest volume], volume-weighted nodal average;
        empty, shape (0,), when the frame was made without it (like ``von_mises``, see :func:`has_field`).
    cable_paths : cable name -> (k, 3) polyline (pull point first, if any, then the mapped cable points).
    cavity_points : cavity name -> (p, 3) current positions of the cavity surface points.
    drag_node, drag_target : the dragged node id and its target (3,), or -1 / None without a drag.
    velocities : (n, 3) a dynamic scene's nodal velocities [length / time]; (0, 3) for a static scene.
    time : a dynamic scene's simulated time [s] (0 for a static scene).
    rigid_states : free rigid body name -> its mechanics.rigid_body.RigidState (copies; dynamic scenes only).
    Velocities, time and rigid states are the rest of the state a dynamic scene continues from (a restart after a
    crash).
    """

    energy_density_nodal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cable_paths: dict = field(default_factory=dict)
    cavity_points: dict = field(default_factory=dict)
    drag_node: int = -1
    drag_target: np.ndarray | None = None
    velocities: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    time: float = 0.0
    rigid_states: dict = field(default_factory=dict)


def _checked_fields(names: Iterable[str]) -> set[str]:
    wanted = {names} if isinstance(names, str) else set(names)
    unknown = sorted(wanted.difference(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(FIELDS)}")
    return wanted


def has_field(frame, name: str) -> bool:
    """Whether ``frame`` (a Frame or DisplayFrame) carries the nodal values (n,) of the field ``name``."""
    _checked_fields(name)
    if name == "von_mises":
        return frame.has_von_mises
    if name == "energy_density":
        return getattr(frame, "energy_density_nodal", np.zeros(0)).shape == frame.displacement.shape
    return True


def _energy_density_nodal(simulation, x: np.ndarray) -> np.ndarray:
    """(n,) nodal average of the strain energy density at positions ``x`` (n, 3); zeros if it cannot be had."""
    try:
        density = np.nan_to_num(simulation.problem.elasticity.strain_energy_density(x))
        return np.asarray(simulation.nodal_average(density), dtype=np.float64)
    except Exception as error:  # a display extra must never stop the simulation
        logger.warning("strain energy density not available: %s", error)
        return np.zeros(x.shape[0])


def effector_points(outputs: dict, name: str) -> np.ndarray:
    """An effector's points (k, 3) from a frame's outputs: ``name.x``, ``name.y``, ``name.z`` for one point,
    ``name.x0``, ... ``name.x1``, ... for several (mechanics.constraints.PositionEffector); (0, 3) for none."""

    def point(suffix: str) -> list[float] | None:
        keys = [f"{name}.{axis}{suffix}" for axis in "xyz"]
        return [outputs[key] for key in keys] if all(key in outputs for key in keys) else None

    points = [point("")] if point("") is not None else list(
        itertools.takewhile(lambda p: p is not None, (point(str(i)) for i in itertools.count())))
    return np.array(points, dtype=np.float64).reshape(-1, 3)


def cable_path(cable, x: np.ndarray) -> np.ndarray:
    """(k, 3) polyline of a CableConstraint at node positions ``x`` (n, 3): pull point, then cable points."""
    points = cable.point_set.positions(x)
    if getattr(cable, "pullPoint", None) is not None:
        points = np.vstack([np.asarray(cable.pullPoint, dtype=np.float64)[None, :], points])
    return np.array(points, dtype=np.float64)


def portable_report(report):
    """The frame report without what only the next frame reads (the multipliers paired with the live constraint
    objects, ``x_free``, the signature): what the GUI shows, small enough to cross to another process."""
    if report is None or not dataclasses.is_dataclass(report):
        return report
    names = {f.name for f in dataclasses.fields(report)}
    changes = {name: value for name, value in (("forces", []), ("projection_forces", []), ("x_free", None),
                                               ("signature", None)) if name in names}
    equilibrium = getattr(report, "equilibrium", None)
    if equilibrium is not None and dataclasses.is_dataclass(equilibrium):
        # the accepted state's positions, constraint system (live constraints) and multipliers stay behind
        changes["equilibrium"] = dataclasses.replace(equilibrium, x=None, system=None, force=None)
    return dataclasses.replace(report, **changes)


def make_display_frame(scene, report, fields: Iterable[str] = OPTIONAL_FIELDS) -> DisplayFrame:
    """Snapshot of ``scene`` (a mechanics Scene) for drawing; runs on the worker thread.

    fields : the FIELDS to compute (default: all); the optional ones not named are left empty (0,).
    """
    from softsim.mechanics.constraints import CableConstraint, SurfacePressureConstraint

    wanted = _checked_fields(fields)
    simulation = scene.simulation
    frame = simulation.snapshot(report, fields=[name for name in ("von_mises",) if name in wanted])
    x = simulation.x
    energy_nodal = _energy_density_nodal(simulation, x) if "energy_density" in wanted else np.zeros(0)
    cables, cavities = {}, {}
    for constraint in simulation.constraints:
        if isinstance(constraint, CableConstraint):
            cables[constraint.name] = cable_path(constraint, x)
        elif isinstance(constraint, SurfacePressureConstraint):
            cavities[constraint.name] = np.array(constraint.point_set.positions(x), dtype=np.float64)
    drag = getattr(scene, "drag", None)
    active = drag is not None and getattr(drag, "active", True)
    values = {f.name: getattr(frame, f.name) for f in dataclasses.fields(Frame)}
    values["report"] = portable_report(values["report"])
    dynamic = getattr(simulation, "mode", "static") == "dynamic"
    return DisplayFrame(**values, energy_density_nodal=energy_nodal,
                        cable_paths=cables, cavity_points=cavities,
                        drag_node=int(drag.node) if active else -1,
                        drag_target=np.array(drag.target, dtype=np.float64) if active else None,
                        velocities=np.array(simulation.v, dtype=np.float64) if dynamic else np.zeros((0, 3)),
                        time=float(simulation.time) if dynamic else 0.0,
                        rigid_states={body.name: _copied_state(body.state)
                                      for body in getattr(simulation, "rigid_bodies", ())} if dynamic else {})


def _copied_state(state):
    """A RigidState whose arrays are copies (the frame must not change with the live body)."""
    return dataclasses.replace(state, **{f.name: np.array(getattr(state, f.name), dtype=np.float64)
                                         for f in dataclasses.fields(state)})


def complete_frame(scene, frame: DisplayFrame, fields: Iterable[str] = OPTIONAL_FIELDS) -> DisplayFrame:
    """``frame`` with the named fields it lacks computed at its own positions ``frame.x`` (n, 3).

    Runs on the worker thread (it reads the scene's elasticity, with the material in effect now); ``frame``
    must be a frame of ``scene``. Returns ``frame`` itself when nothing is missing, else a new DisplayFrame.
    """
    wanted = _checked_fields(fields)
    simulation = scene.simulation
    if frame.x.shape != simulation.X.shape:
        raise ValueError(f"the frame has {len(frame.x)} nodes, the scene {len(simulation.X)}: not this scene's frame")
    changes = {}
    if "von_mises" in wanted and not has_field(frame, "von_mises"):
        changes["von_mises"], changes["von_mises_nodal"] = simulation.von_mises_fields(frame.x)
    if "energy_density" in wanted and not has_field(frame, "energy_density"):
        changes["energy_density_nodal"] = _energy_density_nodal(simulation, frame.x)
    return dataclasses.replace(frame, **changes) if changes else frame


@dataclass(frozen=True)
class NodeProbe:
    """What the window shows at one node of a frame: ``position`` and ``displacement`` (3,) in the scene's length
    unit, the von Mises stress (the volume-weighted nodal average the colours show) in its pressure unit."""

    node: int
    frame_index: int
    position: np.ndarray
    displacement: np.ndarray
    von_mises: float

    def text(self, units: str | None) -> str:
        """``node 54  x=(1, 2, 3) mm  u=(...) |u|=0.5 mm  von Mises=12.3 kPa``."""

        def unit(quantity: str) -> str:
            return "" if units is None else " " + unit_label(quantity, units)

        x, u = self.position, self.displacement
        return (f"node {self.node}  x=({x[0]:.4g}, {x[1]:.4g}, {x[2]:.4g}){unit('length')}  "
                f"u=({u[0]:.3g}, {u[1]:.3g}, {u[2]:.3g}) |u|={np.linalg.norm(u):.4g}{unit('length')}  "
                f"von Mises={self.von_mises:.4g}{unit('pressure')}")


def probe_node(scene, frame: DisplayFrame, node: int) -> NodeProbe:
    """The values of ``frame`` at ``node`` (the von Mises stress computed at the frame's positions if the frame
    was made without it); runs on the worker thread. IndexError for a node the scene does not have."""
    node = int(node)
    if not 0 <= node < len(frame.x):
        raise IndexError(f"node {node} is not a node of this scene (0..{len(frame.x) - 1})")
    full = complete_frame(scene, frame, ("von_mises",))
    rest = scene.simulation.X[node]
    return NodeProbe(node, frame.index, np.array(full.x[node]), np.array(full.x[node] - rest),
                     float(full.von_mises_nodal[node]))
