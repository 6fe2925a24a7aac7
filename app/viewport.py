"""The 3D viewport: a pyvista plotter in a native child window (:class:`app.native_view.NativePlotter`) showing
the body, its boundary conditions and its actuators.

Every actor is created once when a scene is opened; each frame writes new positions and field values into
the existing VTK arrays (no ``add_mesh`` per frame), as pyvista's animation examples do. The mouse drags a
surface node with the left button while the drag mode is on or Ctrl is held; otherwise it moves the camera.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pyvista as pv
import vtk
from PyQt6.QtCore import pyqtSignal
from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray

from softsim.app.colour_range import auto_color_range, noise_floor
from softsim.app.frames import FIELDS, effector_points, field_title, has_field
from softsim.app.model import ViewerModel
from softsim.app.native_view import NativePlotter
from softsim.app.picking import PickingMixin

logger = logging.getLogger(__name__)

BACKGROUND = "#20242b"
STYLES = ("surface", "wireframe", "surface with edges")
OVERLAYS = ("fixed", "cables", "cavities", "contacts", "obstacles")
HIGHLIGHT_RGB = (1.0, 0.82, 0.0)
#: the largest magnification of the drawn displacement (View > Deformation scale)
MAX_DEFORMATION_SCALE = 1000.0
#: camera presets: direction from the focal point to the camera, and the view-up vector (y up)
CAMERA_PRESETS = {
    "front": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "side": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    "top": ((0.0, 1.0, 0.0), (0.0, 0.0, -1.0)),
    "iso": ((0.45, 0.55, 1.0), (0.0, 1.0, 0.0)),
}


def field_values(frame, field: str) -> np.ndarray | None:
    """The nodal values (n,) of ``field`` (a FIELDS key) in a frame, or None when the frame was made without
    that field (frames carry only the field shown; the worker sends the state again when the field changes)."""
    if field not in FIELDS:
        raise ValueError(f"unknown field {field!r}; allowed: {', '.join(FIELDS)}")
    if not has_field(frame, field):
        return None
    if field == "von_mises":
        return frame.von_mises_nodal
    if field == "energy_density":
        return frame.energy_density_nodal
    return frame.displacement


class BodyView:
    """Boundary surface of one tetrahedral body coloured by a nodal field, updated in place.

    Parameters
    ----------
    plotter : the pyvista plotter to draw into.
    points : (n, 3) float64 node positions of the whole body.
    surface_triangles : (k, 3) int64 outward boundary triangles (node ids of the body).
    field_name : scalar bar title; field : (n,) one value per body node.
    clim : fixed colour range, or None for the automatic range (:func:`app.colour_range.auto_color_range`).
    rest : (n, 3) rest positions (default: ``points``), from which ``scale`` magnifies the drawn displacement.
    floor : the field's noise floor (values up to it read as 0 in the automatic range).
    """

    def __init__(self, plotter, points: np.ndarray, surface_triangles: np.ndarray, field_name: str,
                 field: np.ndarray, *, name: str = "body", clim: tuple[float, float] | None = None,
                 rest: np.ndarray | None = None, floor: float = 0.0) -> None:
        self.plotter = plotter
        self.name = name
        self.field_name = field_name
        self.fixed_clim = clim
        self.floor = floor
        self.scale = 1.0
        self.auto_clim: tuple[float, float] | None = None
        self.surface_nodes = np.unique(surface_triangles)
        self.rest = np.array((points if rest is None else rest)[self.surface_nodes], dtype=np.float64)
        local = np.searchsorted(self.surface_nodes, surface_triangles)
        faces = np.hstack([np.full((len(local), 1), 3, dtype=np.int64), local]).ravel()
        self.x = np.array(points[self.surface_nodes], dtype=np.float64)
        self.surface = pv.PolyData(self.x.copy(), faces)
        self.surface.point_data["field"] = np.asarray(field, dtype=np.float64)[self.surface_nodes]
        self.actor = plotter.add_mesh(
            self.surface, scalars="field", show_edges=True, edge_color="#303030", cmap="viridis",
            smooth_shading=False, name=name, clim=clim or self._auto_clim(),
            scalar_bar_args={"title": field_name, "vertical": False, "position_x": 0.3, "position_y": 0.01,
                             "height": 0.13, "width": 0.4, "color": "white", "fmt": "%.3g",
                             "title_font_size": 16, "label_font_size": 14, "n_labels": 5},
        )
        self.scalar_bar = plotter.scalar_bars[field_name]
        self.style = "surface with edges"  # as added above
        self.fast = False  # drawn fast (see set_fast)

    def _auto_clim(self) -> tuple[float, float]:
        self.auto_clim = auto_color_range(self.surface.point_data["field"], self.floor, self.auto_clim)
        return self.auto_clim

    def update(self, x: np.ndarray, field: np.ndarray | None = None) -> None:
        """Write new positions (n, 3) and optionally a new nodal field (n,) into the existing arrays; the drawn
        shape is ``rest + scale * (x - rest)``."""
        self.x = x[self.surface_nodes]
        self.surface.points[:] = self.drawn(self.x)
        if field is not None:
            self.surface.point_data["field"][:] = field[self.surface_nodes]
        clim = self.fixed_clim or self._auto_clim()
        if tuple(self.actor.mapper.scalar_range) != tuple(clim):  # new labels cost a text render: only on change
            self.actor.mapper.scalar_range = clim
        self.surface.Modified()

    def drawn(self, x: np.ndarray, rest: np.ndarray | None = None) -> np.ndarray:
        """Where points at ``x`` (k, 3) are drawn: ``rest + scale * (x - rest)`` (rest: the surface's)."""
        if self.scale == 1.0:
            return x
        rest = self.rest if rest is None else rest
        return rest + self.scale * (x - rest)

    def set_title(self, title: str) -> None:
        self.field_name = title
        self.scalar_bar.SetTitle(title)

    def set_style(self, style: str) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown display style {style!r}; allowed: {', '.join(STYLES)}")
        self.style = style
        prop = self.actor.prop
        prop.style = "wireframe" if style == "wireframe" else "surface"
        self._show_edges()

    def set_fast(self, fast: bool) -> None:
        """Fast drawing leaves the edges of the "surface with edges" style out (they are drawn again when
        ``fast`` is False); the other styles are drawn as they are."""
        self.fast = bool(fast)
        self._show_edges()

    def _show_edges(self) -> None:
        show = self.style == "surface with edges" and not self.fast
        if bool(self.actor.prop.show_edges) != show:
            self.actor.prop.show_edges = show


def drop_back_lights(renderer) -> int:
    """Remove the camera lights that shine from behind the scene (pyvista's light kit has two, at azimuth
    +-110 degrees): they light only faces turned away from the camera, while a software OpenGL pays for every
    light on every pixel drawn (benchmarks/RESULTS_gui.md, eleventh session). Returns how many were removed."""
    back = [light for light in renderer.GetLights()
            if light.LightTypeIsCameraLight() and light.GetPosition()[2] - light.GetFocalPoint()[2] < 0.0]
    for light in back:
        renderer.RemoveLight(light)
        if light in getattr(renderer, "_lights", ()):
            renderer._lights.remove(light)  # pyvista's own list of the renderer's lights
    return len(back)


def _plane(obstacle, body_bounds: np.ndarray) -> pv.PolyData:
    """A square twice the body's size, centred under the body."""
    size = float(np.linalg.norm(body_bounds[3:] - body_bounds[:3])) or 1.0
    normal = np.asarray(obstacle.normal, dtype=np.float64)
    normal = normal / np.linalg.norm(normal)
    centre_body = 0.5 * (body_bounds[:3] + body_bounds[3:])
    centre = centre_body - np.dot(centre_body - np.asarray(obstacle.point, dtype=np.float64), normal) * normal
    return pv.Plane(center=centre, direction=normal, i_size=2 * size, j_size=2 * size)


def _box(obstacle, _body_bounds) -> pv.PolyData:
    lo = np.asarray(obstacle.center) - np.asarray(obstacle.halfExtents)
    hi = np.asarray(obstacle.center) + np.asarray(obstacle.halfExtents)
    return pv.Box(bounds=(lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]))


def _capsule(obstacle, _body_bounds) -> pv.PolyData:
    a, b = np.asarray(obstacle.a, dtype=np.float64), np.asarray(obstacle.b, dtype=np.float64)
    length = float(np.linalg.norm(b - a))
    if length == 0.0:
        return pv.Sphere(radius=obstacle.radius, center=a)
    return pv.Capsule(center=0.5 * (a + b), direction=(b - a) / length, radius=obstacle.radius,
                      cylinder_length=length, resolution=32)


#: the surface drawn for each obstacle type of the scene format (mechanics.constraints.OBSTACLE_CLASSES)
OBSTACLE_SURFACES = {
    "plane": _plane,
    "sphere": lambda o, _bounds: pv.Sphere(radius=o.radius, center=o.center, theta_resolution=32,
                                           phi_resolution=32),
    "box": _box,
    "capsule": _capsule,
}


def _obstacle_mesh(obstacle, body_bounds: np.ndarray) -> pv.PolyData:
    """The surface of an obstacle spec (``body_bounds`` (6,) sizes an infinite plane)."""
    return OBSTACLE_SURFACES[obstacle.type](obstacle, body_bounds)


class ContactGlyphs:
    """Contact points (small spheres) and contact forces (arrows); the point count changes every frame, so
    the data is copied into the same PolyData objects and the same actors are kept."""

    def __init__(self, plotter, body_size: float) -> None:
        self.body_size = body_size
        self.points = pv.PolyData()
        self._set_data(np.zeros((0, 3)), np.zeros((0, 3)))
        points_mapper = vtk.vtkPolyDataMapper()
        points_mapper.SetInputData(self.points)
        points_mapper.ScalarVisibilityOff()
        self.points_actor = vtk.vtkActor()
        self.points_actor.SetMapper(points_mapper)
        points_property = self.points_actor.GetProperty()
        points_property.SetColor(1.0, 0.31, 0.31)
        points_property.SetPointSize(9)
        points_property.SetRenderPointsAsSpheres(True)
        plotter.add_actor(self.points_actor, name="contact_points", reset_camera=False, pickable=False)
        self.glyph = vtk.vtkGlyph3D()
        self.glyph.SetSourceData(pv.Arrow(tip_length=0.3, tip_radius=0.12, shaft_radius=0.04))
        self.glyph.SetInputData(self.points)
        self.glyph.SetVectorModeToUseVector()
        self.glyph.SetScaleModeToScaleByVector()
        self.glyph.OrientOn()
        self.glyph.SetInputArrayToProcess(1, 0, 0, 0, "force")
        mapper = vtk.vtkPolyDataMapper()
        mapper.SetInputConnection(self.glyph.GetOutputPort())
        mapper.ScalarVisibilityOff()
        self.arrows_actor = vtk.vtkActor()
        self.arrows_actor.SetMapper(mapper)
        self.arrows_actor.GetProperty().SetColor(1.0, 0.85, 0.2)
        self.arrows_actor.PickableOff()
        plotter.top_renderer.AddActor(self.arrows_actor)  # forces point into the body: draw them on top

    def _set_data(self, points: np.ndarray, forces: np.ndarray) -> None:
        """Replace the points, vertices and force vectors of the same vtkPolyData (pyvista refuses empty arrays)."""
        vtk_points = vtk.vtkPoints()
        vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(points), deep=True))
        vertices = vtk.vtkCellArray()
        count = len(points)
        offsets = numpy_to_vtkIdTypeArray(np.arange(count + 1, dtype=np.int64), deep=True)
        connectivity = numpy_to_vtkIdTypeArray(np.arange(count, dtype=np.int64), deep=True)
        vertices.SetData(offsets, connectivity)
        vectors = numpy_to_vtk(np.ascontiguousarray(forces), deep=True)
        vectors.SetName("force")
        self.points.SetPoints(vtk_points)
        self.points.SetVerts(vertices)
        self.points.GetPointData().SetVectors(vectors)
        self.points.Modified()

    def update(self, points: np.ndarray, forces: np.ndarray) -> None:
        """points, forces : (c, 3); the longest arrow is drawn 15 % of the body's size long."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        forces = np.asarray(forces, dtype=np.float64).reshape(-1, 3)
        if len(forces) != len(points):
            forces = np.zeros_like(points)
        self._set_data(points, forces)
        largest = float(np.max(np.linalg.norm(forces, axis=1))) if len(forces) else 0.0
        self.glyph.SetScaleFactor(0.15 * self.body_size / largest if largest > 0 else 0.0)
        self.glyph.Modified()


class Viewport(PickingMixin, NativePlotter):
    """The central 3D view; all calls happen on the GUI thread.

    Signals: ``node_picked(node, position (3,))`` when a node is picked (a plain click on the body, or the start
    of a drag); ``node_hovered(node)`` while the mouse moves over the body without a button (-1: off the body;
    at most every :data:`app.picking.HOVER_INTERVAL` seconds); ``drag_started(node, target)``,
    ``drag_moved(target)``, ``drag_finished()`` while the mouse drags it (targets are (3,) arrays in the
    camera plane through the picked point). ``goal_moved(effector, point index, goal (3,))`` while the mouse
    drags an effector's goal handle (shown in inverse mode, :meth:`show_goals`), ``goal_released(effector)`` at
    the end.
    """

    node_picked = pyqtSignal(int, object)
    node_hovered = pyqtSignal(int)
    drag_started = pyqtSignal(int, object)
    drag_moved = pyqtSignal(object)
    drag_finished = pyqtSignal()
    goal_moved = pyqtSignal(str, int, object)
    goal_released = pyqtSignal(str)
    #: a key pressed in the view, as the scene scripts' ``on_key`` receives it (``"a"``, ``"+"``, ``"Up"``)
    key_pressed = pyqtSignal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.set_background(BACKGROUND)
        drop_back_lights(self.renderer)
        self.add_axes(color="white")
        self.bodies: dict[str, BodyView] = {}
        self.overlay_actors: dict[str, list] = {key: [] for key in OVERLAYS}
        self.overlay_visible = dict.fromkeys(OVERLAYS, True)
        self.model = ViewerModel()  # the window gives the session's model (bind)
        self.units: str | None = None  # the scene's unit system, for the colour bar's title
        self.style = "surface with edges"
        self.fixed_clim: tuple[float, float] | None = None
        self.drag_mode = False
        self.body_size = 1.0
        self.last_paint_seconds = 0.0  # the cost of the last paint (one VTK render and the blit)
        self.deformation_scale = 1.0
        self.young_modulus = 1.0
        self.rest = np.zeros((0, 3))
        self.quality_samples = self.render_window.GetMultiSamples()
        self.quality_oit = bool(self.renderer.GetUseOIT())  # VTK's order-independent transparency (default on)
        self.fast_drawing = False
        self.drawn_fast = False  # the view was rendered since fast drawing began (a camera turn renders too)
        self.render_window.AddObserver("StartEvent", self._render_started)
        self.selected_marker = None
        self._frame = None
        self._rest_paths: dict[str, np.ndarray] = {}
        self._rest_cavities: dict[str, np.ndarray] = {}
        self._press_position: tuple[float, float] | None = None
        self._fitted: tuple | None = None  # the camera of the last fit (None: never fitted)
        self._named_actors: dict[tuple, list] = {}  # (kind, name) -> actors, for highlight()
        self._highlighted: list = []
        self._effector_marker = None
        self.highlighted: tuple | None = None
        self._last_hover = 0.0
        self.setMouseTracking(True)
        self._fixed_poly: pv.PolyData | None = None
        self._fixed_nodes = np.zeros(0, dtype=np.int64)
        self._cables: dict[str, pv.PolyData] = {}
        self._cavities: dict[str, pv.PolyData] = {}
        self._timings = None  # the text actor of set_timings (made on first use)
        self._contacts: ContactGlyphs | None = None
        self._drag_line: pv.PolyData | None = None
        self._drag_actor = None
        self._dragging: dict | None = None
        self.goals: dict[str, np.ndarray] = {}  # effector name -> goals (k, 3) drawn as handles
        self._goal_actor = None
        self._goal_poly: pv.PolyData | None = None
        self._goal_drag: dict | None = None
        self._picker = vtk.vtkCellPicker()
        self._picker.SetTolerance(0.002)
        self._picker.PickFromListOn()
        # cables and the drag line are drawn in a second layer on top of the body (cables run inside it)
        self.top_renderer = vtk.vtkRenderer()
        self.top_renderer.SetLayer(1)
        self.top_renderer.InteractiveOff()
        self.render_window.SetNumberOfLayers(2)
        self.render_window.AddRenderer(self.top_renderer)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """Qt's paint of the view (asked by :meth:`draw`, or the view exposed or resized): VTK renders here, once
        per paint, into the view's own window; its cost is kept in ``last_paint_seconds``."""
        started = time.perf_counter()
        super().paintEvent(event)
        self.last_paint_seconds = time.perf_counter() - started

    def draw(self) -> None:
        """Ask for one repaint with the current data (drawn at the next paint event; several asks before it make
        one render). ``render()`` renders at once, which a frame read back needs (a screenshot)."""
        self.update()

    def _render(self, *args, **kwargs):
        if self.render_window is not None and self.top_renderer.GetActiveCamera() is not self.camera:
            self.top_renderer.SetActiveCamera(self.camera)
        return super()._render(*args, **kwargs)

    def close(self) -> None:
        if getattr(self, "render_window", None) is not None and getattr(self, "top_renderer", None) is not None:
            self.top_renderer.RemoveAllViewProps()
            self.render_window.RemoveRenderer(self.top_renderer)
        super().close()

    # -- building (once per scene) --------------------------------------------------------------------
    def show_body(self, name: str, points, surface_triangles, field_name: str, field, **kwargs) -> BodyView:
        """Add (or replace) a body; replacing happens only when a new scene or mesh is opened."""
        if name in self.bodies:
            self.remove_actor(self.bodies[name].actor)
        view = BodyView(self, points, surface_triangles, field_name, field, name=name, **kwargs)
        view.set_fast(self.fast_drawing)
        self.bodies[name] = view
        self._picker.InitializePickList()
        for body in self.bodies.values():
            self._picker.AddPickList(body.actor)
        return view

    def clear_bodies(self) -> None:
        for view in self.bodies.values():
            self.remove_actor(view.actor)
        self.bodies.clear()
        for actors in self.overlay_actors.values():
            for actor in actors:
                self.remove_actor(actor)
        self.overlay_actors = {key: [] for key in OVERLAYS}
        self.top_renderer.RemoveAllViewProps()
        for title in list(self.scalar_bars.keys()):
            self.remove_scalar_bar(title)
        self._cables, self._cavities, self._contacts, self._fixed_poly = {}, {}, None, None
        self.selected_marker, self._frame = None, None
        self._named_actors, self._highlighted, self._effector_marker, self.highlighted = {}, [], None, None
        self._drag_line, self._drag_actor, self._dragging = None, None, None
        self.goals, self._goal_actor, self._goal_poly, self._goal_drag = {}, None, None, None

    def set_timings(self, text: str | None) -> None:
        """Show ``text`` (the last frame's timings) in the view's lower-left corner, drawn with the next paint;
        None hides it."""
        if text is None:
            if self._timings is not None:
                self._timings.SetVisibility(False)
            return
        if self._timings is None:
            self._timings = self.add_text(text, position=(8, 8), font_size=9, color="#c8ccd2", name="timings")
        self._timings.SetInput(text)
        self._timings.SetVisibility(True)

    @property
    def timings_text(self) -> str | None:
        """The timings shown in the view (None: hidden)."""
        if self._timings is None or not self._timings.GetVisibility():
            return None
        return self._timings.GetInput()

    def camera_view(self) -> dict:
        """The camera as plain numbers: position, focal point, view up (3,) and the view angle (degrees)."""
        camera = self.camera
        return {"position": [float(v) for v in camera.position], "focal_point": [float(v) for v in camera.focal_point],
                "view_up": [float(v) for v in camera.up], "view_angle": float(camera.view_angle)}

    def set_camera_view(self, view: dict) -> None:
        """Put the camera where :meth:`camera_view` read it (ValueError naming a missing or bad entry)."""
        try:
            position, focal, up = (tuple(float(v) for v in view[key]) for key in ("position", "focal_point",
                                                                                     "view_up"))
            angle = float(view.get("view_angle", self.camera.view_angle))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"a camera view needs position, focal_point and view_up (3 numbers each): {error}") \
                from None
        if not (len(position) == len(focal) == len(up) == 3):
            raise ValueError("a camera view needs position, focal_point and view_up of 3 numbers each")
        camera = self.camera
        camera.position, camera.focal_point, camera.up = position, focal, up
        camera.view_angle = angle
        self.renderer.ResetCameraClippingRange()
        self.draw()

    def show_scene(self, session) -> None:
        """Build every actor for the scene open in ``session`` (static geometry and its latest frame)."""
        frame = session.latest_frame
        self.clear_bodies()
        x = frame.x
        bounds = np.concatenate([x.min(axis=0), x.max(axis=0)])
        self.body_size = float(np.linalg.norm(bounds[3:] - bounds[:3])) or 1.0
        values = field_values(frame, self.field)
        spec = session.spec
        self.units = spec.scene.units if spec is not None else None
        self.young_modulus = max((b.material.youngModulus for b in spec.bodies), default=1.0) if spec else 1.0
        rest = np.asarray(session.rest_positions, dtype=np.float64)
        self.rest = rest if rest.shape == x.shape else np.array(x)
        self._frame = frame
        body = self.show_body("body", x, session.surface_triangles, field_title(self.field, self.units),
                              np.zeros(len(x)) if values is None else values, clim=self.fixed_clim,
                              rest=self.rest, floor=self._floor(self.field))
        body.scale = self.deformation_scale
        body.set_style(self.style)
        self._named_actors[("body", None)] = [body.actor]  # the bodies are drawn as one surface
        self._fixed_nodes = np.asarray(session.fixed_nodes, dtype=np.int64)
        if self._fixed_nodes.size:
            self._fixed_poly = pv.PolyData(np.array(x[self._fixed_nodes]))
            self._named_actors[("fixed", None)] = [self._add_overlay(
                "fixed", self._fixed_poly, color="#4aa3ff", point_size=7, render_points_as_spheres=True)]
        # the scene opens at rest: its first frame's paths and cavity points are the rest positions
        self._rest_paths = {name: np.array(path) for name, path in frame.cable_paths.items()}
        self._rest_cavities = {name: np.array(points) for name, points in frame.cavity_points.items()}
        for name, path in frame.cable_paths.items():
            poly = pv.lines_from_points(path)
            self._cables[name] = poly
            self._named_actors[("cable", name)] = [self._add_top("cables", poly, (1.0, 0.55, 0.1), line_width=4)]
        for name, points in frame.cavity_points.items():
            triangles = session.cavity_triangles.get(name)
            if triangles is None or len(points) == 0:
                continue
            faces = np.hstack([np.full((len(triangles), 1), 3, dtype=np.int64), triangles]).ravel()
            poly = pv.PolyData(np.array(points), faces)
            self._cavities[name] = poly
            self._named_actors[("cavity", name)] = [
                self._add_overlay("cavities", poly, color="#e04fd0", opacity=0.35, name=f"cavity:{name}")]
        self._contacts = ContactGlyphs(self, self.body_size)
        self.overlay_actors["contacts"] += [self._contacts.points_actor, self._contacts.arrows_actor]
        self._contacts.update(frame.contact_points, frame.contact_forces)
        self._obstacle_actors = []
        for obstacle in getattr(session.spec, "obstacles", []):
            # a plane's shade is the same all over under directional lights: drawn unlit it reads the same, and a
            # software OpenGL does not light each of its many pixels (RESULTS_gui.md, eleventh session)
            actor = self._add_overlay("obstacles", _obstacle_mesh(obstacle, bounds), color="#b0b8c0", opacity=0.3,
                                      name=f"obstacle:{obstacle.name}", lighting=obstacle.type != "plane")
            self._named_actors[("obstacle", obstacle.name)] = [actor]
            self._obstacle_actors.append(actor)
        self._rigid_actors = []
        for rigid in getattr(session.spec, "rigids", []):  # free rigid bodies: drawn in their own frame, moved
            shape = (pv.Box(bounds=[v for h in rigid.halfExtents for v in (-h, h)]) if rigid.shape == "box"
                     else pv.Sphere(radius=rigid.radius))
            actor = self._add_overlay("obstacles", shape, color="#8a9bb0", opacity=0.8, name=f"rigid:{rigid.name}")
            self._named_actors[("rigid", rigid.name)] = [actor]
            self._rigid_actors.append(actor)
        self._update_rigid_poses(frame)
        self._drag_line = pv.PolyData(np.zeros((2, 3)), lines=np.array([2, 0, 1]))
        self._drag_actor = self._add_top(None, self._drag_line, (1.0, 0.2, 0.2), line_width=3)
        self._drag_actor.SetVisibility(False)
        for key in OVERLAYS:
            self.set_overlay_visible(key, self.overlay_visible[key])

    def _add_top(self, key: str | None, poly, rgb, *, line_width: float):
        """An actor in the top layer (drawn over the body): polylines such as cable paths."""
        mapper = vtk.vtkPolyDataMapper()
        mapper.SetInputData(poly)
        mapper.ScalarVisibilityOff()
        actor = vtk.vtkActor()
        actor.SetMapper(mapper)
        actor.GetProperty().SetColor(*rgb)
        actor.GetProperty().SetLineWidth(line_width)
        actor.GetProperty().SetRenderLinesAsTubes(True)
        actor.PickableOff()
        self.top_renderer.AddActor(actor)
        if key is not None:
            self.overlay_actors[key].append(actor)
        return actor

    def _update_rigid_poses(self, frame) -> None:
        """Each free rigid body's actor placed at its pose in ``frame`` (``rigid_poses``, (b, 4, 4))."""
        poses = getattr(frame, "rigid_poses", np.zeros((0, 4, 4)))
        for actor, pose in zip(getattr(self, "_rigid_actors", []), poses):
            actor.user_matrix = np.asarray(pose, dtype=np.float64)

    def _add_overlay(self, key: str, poly, *, name: str | None = None, **kwargs):
        actor = self.add_mesh(poly, name=name or key, reset_camera=False, pickable=False, **kwargs)
        self.overlay_actors[key].append(actor)
        return actor

    # -- highlighting (the Scene panel's selection) ---------------------------------------------------
    def highlight(self, kind: str | None, name: str | None) -> None:
        """Draw the component ``kind`` ("body", "fixed", "cable", "cavity", "effector", "obstacle") called
        ``name`` in the highlight colour (thicker, opaque, edges shown); None: back to normal."""
        for prop, saved in self._highlighted:
            prop.SetColor(saved[0])
            prop.SetEdgeColor(saved[1])
            prop.SetEdgeVisibility(saved[2])
            prop.SetOpacity(saved[3])
            prop.SetLineWidth(saved[4])
            prop.SetPointSize(saved[5])
        self._highlighted = []
        if self._effector_marker is not None:
            self.top_renderer.RemoveActor(self._effector_marker[0])
            self._effector_marker = None
        if kind == "effector" and name is not None:
            points = self._effector_points(name)
            if len(points):
                poly = pv.PolyData(points)
                actor = self._add_top(None, poly, HIGHLIGHT_RGB, line_width=1)
                actor.GetProperty().SetPointSize(16)
                actor.GetProperty().SetRenderPointsAsSpheres(True)
                self._effector_marker = (actor, poly, name)
        for actor in self.actors(kind, name):
            prop = actor.GetProperty()
            self._highlighted.append((prop, (prop.GetColor(), prop.GetEdgeColor(), prop.GetEdgeVisibility(),
                                             prop.GetOpacity(), prop.GetLineWidth(), prop.GetPointSize())))
            prop.SetColor(HIGHLIGHT_RGB)
            prop.SetEdgeColor(HIGHLIGHT_RGB)
            prop.SetEdgeVisibility(True)
            prop.SetOpacity(max(prop.GetOpacity(), 0.8))
            prop.SetLineWidth(prop.GetLineWidth() * 2.0)
            prop.SetPointSize(prop.GetPointSize() * 1.8)
        self.highlighted = (kind, name) if kind is not None else None
        self.render()

    def actors(self, kind: str | None, name: str | None = None) -> list:
        """The VTK actors drawing the scene component ``kind`` called ``name`` (the kinds of :meth:`highlight`,
        and "rigid"); the bodies and the fixed nodes are drawn as one actor each, whatever ``name``. [] when
        nothing draws it."""
        return list(self._named_actors.get((kind, name)) or self._named_actors.get((kind, None), []))

    @property
    def effector_marker(self) -> np.ndarray | None:
        """The points (k, 3) of the marker drawn on the highlighted effector; None when no effector is
        highlighted."""
        return None if self._effector_marker is None else np.array(self._effector_marker[1].points)

    @property
    def drag_line(self) -> np.ndarray | None:
        """The ends (2, 3) of the line drawn from the dragged node to the mouse's target (as drawn: with the
        deformation scale); None when no node is dragged."""
        if self._drag_actor is None or not self._drag_actor.GetVisibility():
            return None
        return np.array(self._drag_line.points)

    def _effector_points(self, name: str) -> np.ndarray:
        """The effector's points (k, 3) in the frame shown (:func:`app.frames.effector_points`)."""
        return effector_points(self._frame.outputs if self._frame is not None else {}, name)

    def _floor(self, field: str) -> float:
        return noise_floor(FIELDS[field][1], self.body_size, self.young_modulus)

    # -- per frame ------------------------------------------------------------------------------------
    def update_frame(self, frame) -> None:
        """Write the frame's positions and fields into the existing arrays (no actor is created); a frame without
        the shown field keeps the colours drawn."""
        body = self.bodies.get("body")
        if body is None:
            return
        x = frame.x
        self._frame = frame
        body.update(x, field_values(frame, self.field))
        if self._fixed_poly is not None:
            self._fixed_poly.points[:] = body.drawn(x[self._fixed_nodes], self.rest[self._fixed_nodes])
            self._fixed_poly.Modified()
        # paths and cavity points move with the mesh (barycentric), so rest + scale * (p - rest) is exact
        for name, path in getattr(frame, "cable_paths", {}).items():
            poly = self._cables.get(name)
            if poly is not None and poly.n_points == len(path):
                poly.points[:] = body.drawn(path, self._rest_paths[name])
                poly.Modified()
        for name, points in getattr(frame, "cavity_points", {}).items():
            poly = self._cavities.get(name)
            if poly is not None and poly.n_points == len(points):
                poly.points[:] = body.drawn(points, self._rest_cavities[name])
                poly.Modified()
        if self._contacts is not None:
            self._contacts.update(self._drawn_free_points(frame.contact_points), frame.contact_forces)
        shifts = getattr(frame, "obstacle_shifts", np.zeros((0, 3)))
        for actor, shift in zip(getattr(self, "_obstacle_actors", []), shifts):  # moving obstacles
            actor.SetPosition(*shift)
        self._update_rigid_poses(frame)
        node = getattr(frame, "drag_node", -1)
        if self._drag_line is not None:
            if node >= 0 and frame.drag_target is not None:
                ends = np.vstack([x[node], frame.drag_target])
                self._drag_line.points[:] = body.drawn(ends, self.rest[[node, node]])
                self._drag_line.Modified()
            self._drag_actor.SetVisibility(node >= 0)
        if self.selected_marker is not None:
            self._place_marker()
        if self._effector_marker is not None:
            points = self._effector_points(self._effector_marker[2])
            poly = self._effector_marker[1]
            if len(points) == poly.n_points:
                poly.points[:] = points
                poly.Modified()

    def _drawn_free_points(self, points: np.ndarray) -> np.ndarray:
        """Points on the body that are not mesh-embedded (contact points): shifted with the nearest surface
        node's magnified displacement (an approximation used only while the deformation scale is not 1)."""
        body = self.bodies["body"]
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if body.scale == 1.0 or len(points) == 0:
            return points
        from scipy.spatial import cKDTree

        nearest = cKDTree(body.x).query(points)[1]
        return points + (body.scale - 1.0) * (body.x[nearest] - body.rest[nearest])

    def set_deformation_scale(self, scale: float) -> None:
        """Draw the displacement magnified ``scale`` times (1 to 1000); the simulation is not changed."""
        scale = float(scale)
        if not (np.isfinite(scale) and 1.0 <= scale <= MAX_DEFORMATION_SCALE):
            raise ValueError(f"the deformation scale must be in [1, {MAX_DEFORMATION_SCALE:g}], got {scale!r}")
        self.deformation_scale = scale
        body = self.bodies.get("body")
        if body is not None:
            body.scale = scale
            if self._frame is not None:
                self.update_frame(self._frame)
        self.render()

    def _render_started(self, *_args) -> None:
        if self.fast_drawing:
            self.drawn_fast = True

    def set_fast_drawing(self, fast: bool) -> None:
        """Draw at a lower cost (fast) or at full quality. Fast: no anti-aliasing (multisampling), translucent
        surfaces (obstacles, cavities) blended in drawing order instead of VTK's order-independent transparency,
        and the body's surface without its edges (:meth:`BodyView.set_fast`; a few percent of a fast draw on a
        software OpenGL, benchmarks/RESULTS_gui.md). On a software OpenGL the first two cost most of a draw's CPU
        (benchmarks/RESULTS.md, "Measurements moved out of docstrings"): the window draws fast while frames stream
        in or the mouse is held down, and at full quality again once the view is still."""
        if self.render_window is None:
            return
        samples = 0 if fast else self.quality_samples
        if self.render_window.GetMultiSamples() != samples:
            self.render_window.SetMultiSamples(samples)
        for renderer in (*self.renderers, self.top_renderer):
            renderer.SetUseOIT(not fast and self.quality_oit)
        for body in self.bodies.values():
            body.set_fast(fast)
        if fast and not self.fast_drawing:
            self.drawn_fast = False
        self.fast_drawing = bool(fast)

    # -- display options -------------------------------------------------------------------------------
    @property
    def field(self) -> str:
        """The colour field shown: the model's."""
        return self.model.field

    def bind(self, model: ViewerModel) -> None:
        """Show the state of ``model``: its colour field (the frames arrive through the session)."""
        self.model = model
        model.events.field.connect(self._on_field)

    def _on_field(self, field: str) -> None:
        """Colour by ``field``, with its values in the model's frame if it carries them (else the colours stay
        until the frame the worker sends with them arrives)."""
        body = self.bodies.get("body")
        if body is not None:
            body.set_title(field_title(field, self.units))
            body.floor, body.auto_clim = self._floor(field), None
            frame = self.model.frame
            if frame is not None:
                body.update(frame.x, field_values(frame, field))
        self.render()

    def set_style(self, style: str) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown display style {style!r}; allowed: {', '.join(STYLES)}")
        self.style = style
        for body in self.bodies.values():
            body.set_style(style)
        self.render()

    def set_color_range(self, clim: tuple[float, float] | None) -> None:
        """A fixed colour range (lo < hi), or None for the automatic range."""
        if clim is not None:
            lo, hi = float(clim[0]), float(clim[1])
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError(f"the colour range needs finite lo < hi, got {clim!r}")
            clim = (lo, hi)
        self.fixed_clim = clim
        for body in self.bodies.values():
            body.fixed_clim = clim
            body.auto_clim = None
            body.actor.mapper.scalar_range = clim or body._auto_clim()
        self.render()

    def set_overlay_visible(self, key: str, visible: bool) -> None:
        if key not in OVERLAYS:
            raise ValueError(f"unknown overlay {key!r}; allowed: {', '.join(OVERLAYS)}")
        self.overlay_visible[key] = bool(visible)
        for actor in self.overlay_actors[key]:
            actor.SetVisibility(bool(visible))
        self.render()

    def set_camera_preset(self, preset: str) -> None:
        """``front`` (look along -z), ``side`` (along -x), ``top`` (along -y), ``iso``, or ``fit`` (keep the
        direction, frame the body); y is up except in ``top``. The view stays fitted when the viewport is
        resized (a dock opens, the window grows) until the user moves the camera."""
        if preset != "fit":
            if preset not in CAMERA_PRESETS:
                raise ValueError(f"unknown camera preset {preset!r}; allowed: fit, {', '.join(CAMERA_PRESETS)}")
            direction, up = CAMERA_PRESETS[preset]
            body = self.bodies.get("body")
            centre = np.asarray(body.surface.center) if body is not None else np.zeros(3)
            direction = np.asarray(direction) / np.linalg.norm(direction)
            self.camera.focal_point = tuple(centre)
            self.camera.position = tuple(centre + direction * 3.0 * self.body_size)
            self.camera.up = up
        self._fit()
        self.render()

    def _fit(self) -> None:
        """Frame the whole drawn body (its bounds, with a margin for the deformation and the colour legend)."""
        body = self.bodies.get("body")
        # the renderer's own reset (the plotter's would render twice); the caller draws
        self.renderer.reset_camera(render=False, bounds=body.surface.bounds if body is not None else None)
        if body is not None:
            self.camera.zoom(0.9)
        self._fitted = self._camera_state()

    def _camera_state(self) -> tuple:
        camera = self.camera
        return (tuple(camera.position), tuple(camera.focal_point), tuple(camera.up), camera.parallel_scale,
                camera.view_angle)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """A fitted view is fitted again to the new size (the aspect ratio decides what fits)."""
        fitted = self._fitted is not None and self._fitted == self._camera_state()
        super().resizeEvent(event)
        if fitted and self.bodies:
            self._fit()
            self.draw()
