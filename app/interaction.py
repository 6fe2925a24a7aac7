"""Whether the user is in the middle of an interaction with a window: a mouse button held down on it (a slider
dragged, the view rotated, a node or a goal dragged).

The window draws its 3D view at a lower cost while one is in progress (no anti-aliasing, no order-independent
transparency: see :meth:`app.viewport.Viewport.set_fast_drawing`), so that a slow software OpenGL keeps
answering the mouse, and at full quality again as soon as the button is released.
"""

from __future__ import annotations

from collections.abc import Callable

from PyQt6.QtCore import QEvent, QObject, Qt
from PyQt6.QtWidgets import QApplication, QWidget

__all__ = ["InteractionWatch"]

_PRESS = QEvent.Type.MouseButtonPress
_RELEASE = QEvent.Type.MouseButtonRelease
_DOUBLE = QEvent.Type.MouseButtonDblClick


class InteractionWatch(QObject):
    """Watches the application's mouse presses and releases on the widgets of ``window``: ``active`` is True
    from a press until every button is released, and ``changed(active)`` is called on each change.

    It is an event filter of the QApplication owned by ``window``: Qt removes it when the window is deleted,
    whatever the order of closing.
    """

    def __init__(self, window: QWidget, changed: Callable[[bool], None]) -> None:
        super().__init__(window)
        self._window = window
        self._changed = changed
        self.active = False
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        kind = event.type()
        if kind == _PRESS or kind == _DOUBLE:
            if not self.active and isinstance(watched, QWidget) and watched.window() is self._window:
                self._set(True)
        elif kind == _RELEASE and self.active and event.buttons() == Qt.MouseButton.NoButton:
            self._set(False)
        return False

    def _set(self, active: bool) -> None:
        self.active = active
        self._changed(active)
