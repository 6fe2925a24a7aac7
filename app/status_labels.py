"""Status bar labels that never cut a text mid-word: what does not fit ends at a whole word with "…", the whole
text is in the tooltip."""

from __future__ import annotations

from PyQt6.QtGui import QFontMetrics
from PyQt6.QtWidgets import QLabel, QSizePolicy, QWidget

__all__ = ["ElidedLabel", "elide_words", "set_style_sheet"]

ELLIPSIS = "…"


def elide_words(text: str, fits) -> str:
    """``text`` if ``fits(text)``, else its longest run of leading whole words followed by "…" that fits (just
    "…" when not even one word does). ``fits(candidate) -> bool`` measures a candidate."""
    if fits(text):
        return text
    words = text.split(" ")
    for count in range(len(words) - 1, 0, -1):
        candidate = " ".join(words[:count]).rstrip(" ,;:|") + ELLIPSIS
        if fits(candidate):
            return candidate
    return ELLIPSIS


def set_style_sheet(widget: QWidget, style: str) -> None:
    """``widget.setStyleSheet(style)`` unless it already has that style: Qt polishes the widget again and lays
    its parent out even for the same style, which the per-frame updates (the health label, the plots' notes) then
    paid on every frame."""
    if widget.styleSheet() != style:
        widget.setStyleSheet(style)


class ElidedLabel(QLabel):
    """A QLabel from ``min_width`` to ``max_width`` pixels wide that shows its text cut at a word ("…") when it
    does not fit.

    ``text()`` returns the whole text (what the program set); ``shown()`` what is drawn; the tooltip holds the
    whole text when it was cut (unless a tooltip was set explicitly with ``setToolTip``).
    """

    def __init__(self, text: str = "", parent: QWidget | None = None, *, max_width: int = 360,
                 min_width: int = 60) -> None:
        super().__init__(parent)
        self._full = ""
        self._own_tip = ""
        self.setMaximumWidth(max_width)
        self.setMinimumWidth(min_width)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        if str(text) == self._full and self.shown():  # the same text: no new layout of the status bar
            return
        self._full = str(text)
        self._refresh()

    def text(self) -> str:
        return self._full

    def shown(self) -> str:
        """The text as drawn (cut at a word with "…" when it does not fit)."""
        return super().text()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 (Qt API)
        self._own_tip = tip
        super().setToolTip(tip)

    def sizeHint(self):  # noqa: N802 (Qt API)
        hint = super().sizeHint()
        metrics = QFontMetrics(self.font())
        margins = self.contentsMargins()
        width = metrics.horizontalAdvance(self._full) + margins.left() + margins.right() + 8
        hint.setWidth(min(width, self.maximumWidth()))
        return hint

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._refresh()

    def _refresh(self) -> None:
        metrics = QFontMetrics(self.font())
        margins = self.contentsMargins()
        room = min(self.width(), self.maximumWidth()) - margins.left() - margins.right() - 8
        room = max(room, 0) if self.isVisible() else self.maximumWidth() - 8
        shown = elide_words(self._full, lambda candidate: metrics.horizontalAdvance(candidate) <= room)
        super().setText(shown)
        if not self._own_tip:
            super().setToolTip(self._full if shown != self._full else "")
        self.updateGeometry()
