"""The 3D viewport: a pyvistaqt QtInteractor showing the surface of a tetrahedral body.

The surface actor is created once per body; every frame writes new positions and field values into the
existing VTK arrays (no ``add_mesh`` per frame), as pyvista's animation examples do.
"""

from __future__ import annotations

import numpy as np
import pyvista as pv
from pyvistaqt import QtInteractor

BACKGROUND = "#20242b"


class BodyView:
    """Boundary surface of one tetrahedral body, drawn with edges and coloured by a nodal field.

    Parameters
    ----------
    plotter : the pyvista plotter to draw into.
    points : (n, 3) float64 node positions of the whole body.
    surface_triangles : (k, 3) int64 outward boundary triangles (node ids of the body).
    field_name, field : the scalar field shown, one value per body node, shape (n,).
    """

    def __init__(self, plotter, points: np.ndarray, surface_triangles: np.ndarray, field_name: str,
                 field: np.ndarray, *, name: str = "body", clim: tuple[float, float] | None = None) -> None:
        self.plotter = plotter
        self.name = name
        self.field_name = field_name
        self.fixed_clim = clim
        self.surface_nodes = np.unique(surface_triangles)
        local = np.searchsorted(self.surface_nodes, surface_triangles)
        faces = np.hstack([np.full((len(local), 1), 3, dtype=np.int64), local]).ravel()
        self.surface = pv.PolyData(np.array(points[self.surface_nodes], dtype=np.float64), faces)
        self.surface.point_data[field_name] = np.asarray(field, dtype=np.float64)[self.surface_nodes]
        self.actor = plotter.add_mesh(
            self.surface, scalars=field_name, show_edges=True, edge_color="#303030", cmap="viridis",
            smooth_shading=False, name=name, clim=clim or self._auto_clim(),
            scalar_bar_args={"title": field_name, "vertical": True, "position_x": 0.88, "position_y": 0.1,
                             "height": 0.8, "width": 0.06, "color": "white", "fmt": "%.3g"},
        )

    def _auto_clim(self) -> tuple[float, float]:
        values = self.surface.point_data[self.field_name]
        lo, hi = float(np.min(values)), float(np.max(values))
        return (lo, hi) if hi > lo else (lo, lo + 1.0)

    def update(self, x: np.ndarray, field: np.ndarray | None = None) -> None:
        """Write new positions (n, 3) and optionally a new nodal field (n,) into the existing arrays."""
        self.surface.points[:] = x[self.surface_nodes]
        if field is not None:
            self.surface.point_data[self.field_name][:] = field[self.surface_nodes]
            self.actor.mapper.scalar_range = self.fixed_clim or self._auto_clim()
        self.surface.Modified()


class Viewport(QtInteractor):
    """The central 3D view; all calls happen on the GUI thread."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, auto_update=False)
        self.set_background(BACKGROUND)
        self.add_axes(color="white")
        self.bodies: dict[str, BodyView] = {}

    def show_body(self, name: str, points, surface_triangles, field_name: str, field, **kwargs) -> BodyView:
        """Add (or replace) a body; replacing happens only when a new scene or mesh is opened."""
        if name in self.bodies:
            self.remove_actor(self.bodies[name].actor)
        view = BodyView(self, points, surface_triangles, field_name, field, name=name, **kwargs)
        self.bodies[name] = view
        return view

    def clear_bodies(self) -> None:
        for view in self.bodies.values():
            self.remove_actor(view.actor)
        self.bodies.clear()
