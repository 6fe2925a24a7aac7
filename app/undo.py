"""Undo and redo of every parameter and actuator edit, on Qt's QUndoStack.

Every edit the session accepts (``Session.edited(path, old, new)``: a Parameters editor, an actuator slider or
spin box, a value type) becomes an :class:`EditCommand`. Undo sets the old value back through the session
(validated and applied on the worker like any edit; a paused static scene then solves again, so the previous
solution comes back too); redo sets the new value again. Successive edits of one key within
``MERGE_SECONDS`` merge into one step: a slider dragged from 0 to 12 is undone in one Ctrl+Z, not 300.
"""

from __future__ import annotations

import time

from PyQt6.QtGui import QUndoCommand, QUndoStack

__all__ = ["EditCommand", "EditHistory", "MERGE_SECONDS"]

#: edits of the same key closer than this (seconds) are one undo step
MERGE_SECONDS = 1.5
_EDIT_ID = 1701


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return "unset" if value is None else str(value)


class EditCommand(QUndoCommand):
    """``path`` from ``old`` to ``new``; the first ``redo`` (run by ``QUndoStack.push``) does nothing, the
    edit being already applied."""

    def __init__(self, session, path: str, old, new) -> None:
        super().__init__()
        self.session, self.path, self.old, self.new = session, path, old, new
        self.time = time.monotonic()
        self._applied = True
        self._update_text()

    def _update_text(self) -> None:
        self.setText(f"{self.path}: {_text(self.old)} -> {_text(self.new)}")

    def _set(self, value) -> None:
        error = self.session.set_parameter(self.path, value, record=False)
        if error is not None:  # the scene changed under the history (another file): say so, keep going
            self.session.message.emit("error", f"cannot undo/redo {self.path}: {error}")

    def undo(self) -> None:
        self._set(self.old)
        self._applied = False

    def redo(self) -> None:
        if self._applied:
            return
        self._set(self.new)
        self._applied = True

    def id(self) -> int:  # noqa: A003 (Qt API)
        return _EDIT_ID

    def mergeWith(self, other) -> bool:  # noqa: N802 (Qt API)
        """Take ``other`` (a later edit of the same key within MERGE_SECONDS) into this step."""
        if not isinstance(other, EditCommand) or other.path != self.path or other.time - self.time > MERGE_SECONDS:
            return False
        self.new, self.time = other.new, other.time
        self._update_text()
        return True


class EditHistory(QUndoStack):
    """The session's edits, undoable; cleared when a scene is opened (its edits belong to the old scene)."""

    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        session.edited.connect(self._record)
        session.scene_opened.connect(lambda _scene: self.clear())

    def _record(self, path: str, old, new) -> None:
        if old != new:
            self.push(EditCommand(self.session, path, old, new))
