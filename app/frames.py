"""What the GUI draws for one frame: the mechanics Frame plus the display-only data computed on the worker.

Everything here is computed on the simulation thread from the live scene (which only that thread may read)
and copied, so the GUI thread can draw it while the next frame runs. ``DisplayFrame`` is a
:class:`mechanics.simulation.Frame` (panels and plots read it as one) with a few extra fields.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields

import numpy as np

from mechanics.fields import nodal_average_operator
from mechanics.simulation import Frame

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DisplayFrame(Frame):
    """A Frame with display extras (all arrays are copies).

    energy_density_nodal : (n,) strain energy density [energy / rest volume], volume-weighted nodal average.
    cable_paths : cable name -> (k, 3) polyline (pull point first, if any, then the mapped cable points).
    cavity_points : cavity name -> (p, 3) current positions of the cavity surface points.
    drag_node, drag_target : the dragged node id and its target (3,), or -1 / None without a drag.
    """

    energy_density_nodal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cable_paths: dict = field(default_factory=dict)
    cavity_points: dict = field(default_factory=dict)
    drag_node: int = -1
    drag_target: np.ndarray | None = None


_average_cache: dict[int, tuple[object, object]] = {}


def _nodal_average(simulation):
    """The (n, m) nodal averaging operator of a simulation, built once per simulation object."""
    key = id(simulation)
    cached = _average_cache.get(key)
    if cached is None or cached[0] is not simulation:
        _average_cache.clear()  # one scene at a time: do not keep old simulations alive
        elasticity = simulation.problem.elasticity
        operator = nodal_average_operator(simulation.tets, elasticity.volumes, simulation.X.shape[0])
        cached = (simulation, operator)
        _average_cache[key] = cached
    return cached[1]


def cable_path(cable, x: np.ndarray) -> np.ndarray:
    """(k, 3) polyline of a CableConstraint at node positions ``x`` (n, 3): pull point, then cable points."""
    points = cable.point_set.positions(x)
    if getattr(cable, "pullPoint", None) is not None:
        points = np.vstack([np.asarray(cable.pullPoint, dtype=np.float64)[None, :], points])
    return np.array(points, dtype=np.float64)


def make_display_frame(scene, report) -> DisplayFrame:
    """Snapshot of ``scene`` (a mechanics Scene) for drawing; runs on the worker thread."""
    from mechanics.constraints import CableConstraint, SurfacePressureConstraint

    simulation = scene.simulation
    frame = simulation.snapshot(report)
    x = simulation.x
    try:
        density = np.nan_to_num(simulation.problem.elasticity.strain_energy_density(x))
        energy_nodal = _nodal_average(simulation) @ density
    except Exception as error:  # a display extra must never stop the simulation
        logger.warning("strain energy density not available: %s", error)
        energy_nodal = np.zeros(x.shape[0])
    cables, cavities = {}, {}
    for constraint in simulation.constraints:
        if isinstance(constraint, CableConstraint):
            cables[constraint.name] = cable_path(constraint, x)
        elif isinstance(constraint, SurfacePressureConstraint):
            cavities[constraint.name] = np.array(constraint.point_set.positions(x), dtype=np.float64)
    drag = getattr(scene, "drag", None)
    active = drag is not None and getattr(drag, "active", True)
    values = {f.name: getattr(frame, f.name) for f in fields(Frame)}
    return DisplayFrame(**values, energy_density_nodal=np.asarray(energy_nodal, dtype=np.float64),
                        cable_paths=cables, cavity_points=cavities,
                        drag_node=int(drag.node) if active else -1,
                        drag_target=np.array(drag.target, dtype=np.float64) if active else None)
