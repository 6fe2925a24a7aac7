"""The viewport's mouse and keys: picking a body node, dragging it, selecting and marking it, and the effector
goal handles of inverse mode.

:class:`PickingMixin` is mixed into :class:`app.viewport.Viewport` (before ``QtInteractor``, whose Qt event
handlers it extends); it reads the viewport's renderers, bodies, camera and signals, and keeps the drag state.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyvista as pv
from PyQt6.QtCore import Qt

#: the effector goal handles' colour, and how near (logical pixels) a press must be to grab one
GOAL_RGB = (0.2, 0.9, 0.35)
GOAL_PICK_PIXELS = 12
#: a press and release of the left button at most this many pixels apart is a click (selects a node)
CLICK_TOLERANCE = 4
#: the mouse hovering over the body is probed at most this often (seconds)
HOVER_INTERVAL = 0.05


class PickingMixin:
    """Picking, dragging and the goal handles of :class:`app.viewport.Viewport` (see the module docstring)."""

    # -- effector goals (inverse mode) ------------------------------------------------------------------
    def show_goals(self, goals: dict[str, np.ndarray]) -> None:
        """Draw a handle (a green sphere) on each goal point, ``{effector name: goals (k, 3)}``; {} hides them.
        Goals are positions in the simulation's space: the deformation scale does not move them."""
        self.goals = {name: np.asarray(points, dtype=np.float64).reshape(-1, 3) for name, points in goals.items()}
        points = np.concatenate(list(self.goals.values())) if self.goals else np.zeros((0, 3))
        if self._goal_poly is None and not len(points):
            return  # nothing shown, nothing to show
        if self._goal_poly is not None and self._goal_poly.n_points == len(points):
            if np.array_equal(self._goal_poly.points, points):
                return  # an edit of another key: the handles stand (no redraw)
            self._goal_poly.points[:] = points
            self._goal_poly.Modified()
        else:
            if self._goal_actor is not None:
                self.top_renderer.RemoveActor(self._goal_actor)
                self._goal_actor, self._goal_poly = None, None
            if len(points):
                self._goal_poly = pv.PolyData(points)
                self._goal_actor = self._add_top(None, self._goal_poly, GOAL_RGB, line_width=1)
                self._goal_actor.GetProperty().SetPointSize(18)
                self._goal_actor.GetProperty().SetRenderPointsAsSpheres(True)
        self.draw()

    def _display_point(self, point: np.ndarray) -> tuple[float, float]:
        """VTK display coordinates (device pixels, y up) of a point (3,) in the scene."""
        self.renderer.SetWorldPoint(*point, 1.0)
        self.renderer.WorldToDisplay()
        x, y, _ = self.renderer.GetDisplayPoint()
        return x, y

    def widget_position(self, point: np.ndarray) -> tuple[float, float]:
        """Where a point (3,) of the scene appears in the view: Qt widget coordinates (logical pixels, y down),
        the inverse of :meth:`display_coordinates`."""
        x, y = self._display_point(point)
        scale = self.devicePixelRatioF()
        return x / scale, self.height() - 1 - y / scale

    def goal_at(self, display_x: float, display_y: float) -> tuple[str, int] | None:
        """The goal handle within GOAL_PICK_PIXELS of display coordinates: (effector, point index), or None."""
        best, distance = None, GOAL_PICK_PIXELS * self.devicePixelRatioF()
        for name, points in self.goals.items():
            for index, point in enumerate(points):
                x, y = self._display_point(point)
                gap = math.hypot(x - display_x, y - display_y)
                if gap <= distance:
                    best, distance = (name, index), gap
        return best

    def begin_goal_drag(self, display_x: float, display_y: float) -> bool:
        """Start dragging the goal handle under the mouse in the camera plane through it; False when none is."""
        hit = self.goal_at(display_x, display_y)
        if hit is None:
            return False
        name, index = hit
        camera = self.camera
        normal = np.asarray(camera.focal_point) - np.asarray(camera.position)
        self._goal_drag = {"name": name, "index": index, "point": self.goals[name][index].copy(),
                           "normal": normal / np.linalg.norm(normal)}
        return True

    def continue_goal_drag(self, display_x: float, display_y: float) -> None:
        drag = self._goal_drag
        origin, direction = self._display_ray(display_x, display_y)
        denominator = float(np.dot(direction, drag["normal"]))
        if abs(denominator) < 1e-12:
            return
        target = origin + float(np.dot(drag["point"] - origin, drag["normal"])) / denominator * direction
        self.goals[drag["name"]][drag["index"]] = target
        self.show_goals(self.goals)
        self.goal_moved.emit(drag["name"], drag["index"], target)

    def end_goal_drag(self) -> None:
        if self._goal_drag is not None:
            name, self._goal_drag = self._goal_drag["name"], None
            self.goal_released.emit(name)

    # -- picking and dragging --------------------------------------------------------------------------
    def display_coordinates(self, x: float, y: float) -> tuple[float, float]:
        """VTK display coordinates (device pixels, y up) of a Qt widget position (logical pixels, y down)."""
        scale = self.devicePixelRatioF()
        return round(x * scale), round((self.height() - y - 1) * scale)

    def pick_node(self, display_x: float, display_y: float) -> tuple[int, np.ndarray] | None:
        """The body node nearest to the surface point under display coordinates, and that point (3,)."""
        body = self.bodies.get("body")
        if body is None or not self._picker.Pick(display_x, display_y, 0.0, self.renderer):
            return None
        local = self._picker.GetPointId()
        if local < 0:
            return None
        return int(body.surface_nodes[local]), np.array(self._picker.GetPickPosition(), dtype=np.float64)

    def _display_ray(self, display_x: float, display_y: float) -> tuple[np.ndarray, np.ndarray]:
        points = []
        for depth in (0.0, 1.0):
            self.renderer.SetDisplayPoint(display_x, display_y, depth)
            self.renderer.DisplayToWorld()
            world = np.array(self.renderer.GetWorldPoint(), dtype=np.float64)
            points.append(world[:3] / world[3])
        origin, end = points
        return origin, end - origin

    def drag_target(self, display_x: float, display_y: float) -> np.ndarray | None:
        """The point of the current drag plane (through the picked point, facing the camera) under the mouse,
        shifted by the offset between the picked node and the picked surface point."""
        if self._dragging is None:
            return None
        origin, direction = self._display_ray(display_x, display_y)
        normal = self._dragging["normal"]
        denominator = float(np.dot(direction, normal))
        if abs(denominator) < 1e-12:
            return None
        t = float(np.dot(self._dragging["point"] - origin, normal)) / denominator
        return origin + t * direction + self._dragging["offset"]

    def begin_drag(self, display_x: float, display_y: float) -> bool:
        """Pick the node under the mouse and start dragging it; False when the mouse is not on the body."""
        picked = self.pick_node(display_x, display_y)
        if picked is None:
            return False
        node, point = picked
        body = self.bodies["body"]
        node_position = np.array(body.surface.points[np.searchsorted(body.surface_nodes, node)])
        camera = self.camera
        normal = np.asarray(camera.focal_point) - np.asarray(camera.position)
        normal = normal / np.linalg.norm(normal)
        self._dragging = {"node": node, "point": point, "normal": normal, "offset": node_position - point}
        self.node_picked.emit(node, node_position)
        self.drag_started.emit(node, self._simulation_point(node, node_position))
        return True

    def _simulation_point(self, node: int, drawn: np.ndarray) -> np.ndarray:
        """A point of the drawn (magnified) space near ``node`` in the simulation's space."""
        scale = self.bodies["body"].scale
        return drawn if scale == 1.0 else self.rest[node] + (drawn - self.rest[node]) / scale

    def continue_drag(self, display_x: float, display_y: float) -> None:
        target = self.drag_target(display_x, display_y)
        if target is not None:
            self.drag_moved.emit(self._simulation_point(self._dragging["node"], target))

    def end_drag(self) -> None:
        if self._dragging is not None:
            self._dragging = None
            self.drag_finished.emit()

    @property
    def dragging(self) -> bool:
        return self._dragging is not None

    def _wants_drag(self, event) -> bool:
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        return event.button() == Qt.MouseButton.LeftButton and (self.drag_mode or ctrl)

    def select_at(self, display_x: float, display_y: float) -> int | None:
        """Select the body node under display coordinates (a click): marks it and emits ``node_picked``."""
        picked = self.pick_node(display_x, display_y)
        if picked is None:
            return None
        node = picked[0]
        self.node_picked.emit(node, self.node_position(node))
        return node

    def node_position(self, node: int) -> np.ndarray:
        """Where ``node`` is drawn now (3,) (with the deformation scale)."""
        body = self.bodies["body"]
        frame = self._frame
        x = frame.x[node] if frame is not None and node < len(frame.x) else self.rest[node]
        return body.drawn(np.asarray(x, dtype=np.float64)[None, :], self.rest[[node]])[0]

    def mark_node(self, node: int | None) -> None:
        """Draw a marker on ``node`` (None: remove it); it follows the node frame after frame."""
        if self.selected_marker is not None:
            self.top_renderer.RemoveActor(self.selected_marker[1])
            self.selected_marker = None
        if node is not None and "body" in self.bodies and 0 <= node < len(self.rest):
            poly = pv.PolyData(self.node_position(node)[None, :])
            actor = self._add_top(None, poly, (1.0, 1.0, 1.0), line_width=1)
            actor.GetProperty().SetPointSize(14)
            actor.GetProperty().SetRenderPointsAsSpheres(True)
            self.selected_marker = (node, actor, poly)
        self.render()

    def _place_marker(self) -> None:
        node, _actor, poly = self.selected_marker
        poly.points[:] = self.node_position(node)[None, :]
        poly.Modified()

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """Emit :attr:`key_pressed` with the key's text (a printable character) or its name (``Up``, ``F1``),
        then let the view handle it."""
        text = event.text()
        if not (text and text.isprintable() and not text.isspace()):
            from PyQt6.QtGui import QKeySequence

            text = QKeySequence(event.key()).toString()
        if text:
            self.key_pressed.emit(text)
        super().keyPressEvent(event)

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        position = event.position()
        if event.button() == Qt.MouseButton.LeftButton and self.goals and self.begin_goal_drag(
                *self.display_coordinates(position.x(), position.y())):
            event.accept()
            return
        if self._wants_drag(event):
            if self.begin_drag(*self.display_coordinates(position.x(), position.y())):
                event.accept()
                return
        if event.button() == Qt.MouseButton.LeftButton:
            self._press_position = (position.x(), position.y())
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        position = event.position()
        if self._goal_drag is not None:
            self.continue_goal_drag(*self.display_coordinates(position.x(), position.y()))
            event.accept()
            return
        if self._dragging is not None:
            self.continue_drag(*self.display_coordinates(position.x(), position.y()))
            event.accept()
            return
        if event.buttons() == Qt.MouseButton.NoButton:
            now = time.perf_counter()
            if now - self._last_hover >= HOVER_INTERVAL:
                self._last_hover = now
                picked = self.pick_node(*self.display_coordinates(position.x(), position.y()))
                self.node_hovered.emit(-1 if picked is None else picked[0])
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self._goal_drag is not None and event.button() == Qt.MouseButton.LeftButton:
            self.end_goal_drag()
            event.accept()
            return
        if self._dragging is not None and event.button() == Qt.MouseButton.LeftButton:
            self.end_drag()
            event.accept()
            return
        press, self._press_position = self._press_position, None
        position = event.position()
        if (press is not None and event.button() == Qt.MouseButton.LeftButton
                and abs(position.x() - press[0]) + abs(position.y() - press[1]) <= CLICK_TOLERANCE):
            self.select_at(*self.display_coordinates(position.x(), position.y()))  # a click, not a rotation
        super().mouseReleaseEvent(event)

    def leaveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.node_hovered.emit(-1)
        super().leaveEvent(event)
