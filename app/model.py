"""The GUI's state as plain Python with events, in the spirit of napari's Qt-free ``ViewerModel``.

:class:`ViewerModel` holds what the window shows: the colour field, whether the scene plays, the selected node,
the camera view asked for and the latest frame. Setting one of them emits its event
(``model.events.field.connect(callback)``); the Qt widgets are views that subscribe to these events and change
the model on user actions. :class:`Event` has the ``connect``/``emit`` interface of a Qt signal, so the session
can offer its events to the widgets the same way without importing Qt; its callbacks run on the thread that
emits, which for the session is the GUI thread (:meth:`app.session.Session.poll`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from softsim.app.frames import FIELDS

__all__ = ["Event", "ViewerModel"]


class Event:
    """A list of callbacks called with the emitted values, in the order they were connected.

    Closing is order-safe: a callback that is a method of a Qt object (anything with a ``destroyed`` signal),
    or that was connected with ``owner=`` such an object, is disconnected when that object is destroyed, so
    a frame that arrives while a window or a panel is going away never reaches a deleted widget.
    """

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any], *, owner: Any = None) -> None:
        self._callbacks.append(callback)
        owner = owner if owner is not None else getattr(callback, "__self__", None)
        destroyed = getattr(owner, "destroyed", None)
        if destroyed is not None and hasattr(destroyed, "connect"):
            forget = _Forget(self, callback)
            destroyed.connect(forget)

    def forget(self, callback: Callable[..., Any]) -> None:
        """Disconnect ``callback`` if it is connected (its owner was destroyed)."""
        self._callbacks = [c for c in self._callbacks if c is not callback and c != callback]

    def clear(self) -> None:
        """Forget every callback (the views that connected are going away)."""
        self._callbacks.clear()

    def emit(self, *values: Any) -> None:
        for callback in list(self._callbacks):
            callback(*values)


class _Forget:
    """Disconnects one callback from an Event (connected to its owner's ``destroyed`` signal)."""

    def __init__(self, event: Event, callback: Callable[..., Any]) -> None:
        self.event, self.callback = event, callback

    def __call__(self, *_args: Any) -> None:
        self.event.forget(self.callback)


class ViewerModel:
    """The window's state; each attribute of :attr:`STATE` emits ``events.<name>(new value)`` when it changes.

    field: the colour field shown (a key of :data:`app.frames.FIELDS`); playing: whether frames run;
    selected_node: the node picked (None: none); camera: the view asked for (a preset name or "fit");
    frame: the newest frame received (an immutable DisplayFrame, or None).
    """

    STATE = ("field", "playing", "selected_node", "camera", "frame")

    def __init__(self) -> None:
        object.__setattr__(self, "events", SimpleNamespace(**{name: Event() for name in self.STATE}))
        for name, value in (("field", "displacement"), ("playing", False), ("selected_node", None),
                            ("camera", "fit"), ("frame", None)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.STATE:
            raise AttributeError(f"ViewerModel has no state {name!r}; states: {', '.join(self.STATE)}")
        if name == "field" and value not in FIELDS:
            raise ValueError(f"unknown field {value!r}; allowed: {', '.join(FIELDS)}")
        old = getattr(self, name)
        object.__setattr__(self, name, value)
        changed = old is not value if name == "frame" else old != value
        if changed:
            getattr(self.events, name).emit(value)

    def open(self, frame) -> None:
        """A new scene's first frame, stored without an event: the views rebuild from it when the scene opens."""
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "selected_node", None)
