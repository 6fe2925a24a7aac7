"""Running a costly GUI update (a draw, a plot redraw) on the newest data, at a pace its own cost allows.

A :class:`LatestPacer` keeps only the newest item offered. It runs ``handle(item)`` at once when the last run
ended long enough ago, else by a single-shot timer; "long enough" is ``max(min_interval, factor x cost)``,
with ``cost`` the last run's time plus ``extra_cost()`` (e.g. the paint that a draw asks for, which Qt does
later). Runs then take at most ``1 / (1 + factor)`` of the GUI thread, however slow they are, and the clicks
and keys keep being answered. ``grace`` delays the timer's run by that much more: an item offered once the wait
is over runs at once, so with offers that come often (the frames the window draws) the runs happen in their
pass, and the timer runs only the last item of a stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PyQt6.QtCore import QObject, QTimer

__all__ = ["LatestPacer"]

_NOTHING = object()


class LatestPacer(QObject):
    """``offer(item)``: keep it as the newest and run it when the pace allows; ``flush()``: run it now."""

    def __init__(self, handle: Callable[[object], None], *, factor: float, min_interval: float = 0.0,
                 extra_cost: Callable[[], float] | None = None, grace: float = 0.0,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.grace = grace
        self._handle = handle
        self.factor = factor
        self.min_interval = min_interval
        self._extra_cost = extra_cost
        self.last_seconds = 0.0  # how long the last run took
        self._last_end = 0.0
        self._pending = _NOTHING
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)

    def offer(self, item) -> None:
        self._pending = item
        cost = self.last_seconds + (self._extra_cost() if self._extra_cost is not None else 0.0)
        wait = self._last_end + max(self.min_interval, self.factor * cost) - time.perf_counter()
        if wait <= 0:
            self.flush()
        elif not self._timer.isActive():
            self._timer.start(max(1, int(1e3 * (wait + self.grace))))

    def flush(self) -> bool:
        """Run the newest item now (the waiting timer is cancelled); False when there was none."""
        self._timer.stop()
        item, self._pending = self._pending, _NOTHING
        if item is _NOTHING:
            return False
        started = time.perf_counter()
        self._handle(item)
        self._last_end = time.perf_counter()
        self.last_seconds = self._last_end - started
        return True

    def discard(self) -> None:
        """Forget the item waiting (a new scene, a closing window)."""
        self._timer.stop()
        self._pending = _NOTHING
