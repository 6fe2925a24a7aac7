"""Effector goals as handles in the view (inverse mode): the user drags a goal and the robot follows.

:func:`effector_goals` reads the goals of a scene spec; :class:`GoalHandles` keeps the viewport's handles in step
with the session's spec (a new scene, an edit, an undo, inverse mode switched on or off) and turns a handle
drag into throttled edits of ``body.<body>.effector.<name>.effectorGoal`` (one undo step per drag: the history
merges edits of one key).
"""

from __future__ import annotations

import numpy as np
from PyQt6.QtCore import QObject

from softsim.app.panels.actuators import Throttle, inverse_active

__all__ = ["GoalHandles", "effector_goals", "inverse_active"]


def effector_goals(spec) -> dict[str, tuple[str, np.ndarray]]:
    """``{effector name: (its effectorGoal key path, goals (k, 3))}`` for every effector with a goal."""
    goals = {}
    for body in [] if spec is None else spec.bodies:
        for effector in body.effectors:
            if effector.effectorGoal is not None:
                path = f"body.{body.name}.effector.{effector.name}.effectorGoal"
                goals[effector.name] = (path, np.array(effector.effectorGoal, dtype=np.float64).reshape(-1, 3))
    return goals


class GoalHandles(QObject):
    """Shows the goals of ``session.spec`` on ``viewport`` while inverse mode is on and sends handle drags as edits
    (at most MAX_EDITS_PER_SECOND per second, the last one when the handle is released)."""

    def __init__(self, session, viewport, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.viewport = viewport
        self.throttle = Throttle(self._send, parent=self)
        session.scene_opened.connect(lambda _scene=None: self.refresh(), owner=self)
        session.parameter_changed.connect(lambda _path, _value: self.refresh(), owner=self)
        viewport.goal_moved.connect(self._on_goal_moved)
        viewport.goal_released.connect(lambda _name: self.throttle.flush())

    def refresh(self) -> None:
        """Draw the spec's goals (none outside inverse mode), unless a handle is being dragged; the view redraws
        only when they moved."""
        if self.throttle.pending:
            return
        spec = self.session.spec
        goals = effector_goals(spec) if inverse_active(spec) else {}
        self.viewport.show_goals({name: points for name, (_path, points) in goals.items()})

    def _on_goal_moved(self, name: str, index: int, target) -> None:
        path, points = effector_goals(self.session.spec)[name]
        points[index] = np.asarray(target, dtype=np.float64)
        self.throttle.push((path, points))

    def _send(self, edit) -> None:
        path, points = edit
        error = self.session.set_parameter(path, [[float(v) for v in point] for point in points])
        if error is not None:
            self.session.message.emit("error", error)
