"""Solved and drawn frame rates over a sliding window of recent draws (for the status bar)."""

from __future__ import annotations

from collections import deque

__all__ = ["FrameRates", "simulated_time_text"]


class FrameRates:
    """Rates over the draws of the last ``window`` seconds: ``add(frame_index, time)`` at each draw.

    ``drawn``: draws per second; ``solved``: frames the worker finished per second (the frame index advances by
    one per solved frame, drawn or skipped). Both are 0.0 until two draws lie in the window.
    """

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, frame_index: int, time: float) -> None:
        if self._samples and frame_index < self._samples[-1][1]:
            self._samples.clear()  # a reset or a new scene starts the count again
        self._samples.append((time, frame_index))
        while len(self._samples) > 2 and time - self._samples[0][0] > self.window:
            self._samples.popleft()

    def clear(self) -> None:
        self._samples.clear()

    def _span(self) -> float:
        return self._samples[-1][0] - self._samples[0][0] if len(self._samples) > 1 else 0.0

    @property
    def drawn(self) -> float:
        span = self._span()
        return (len(self._samples) - 1) / span if span > 0 else 0.0

    @property
    def solved(self) -> float:
        span = self._span()
        return (self._samples[-1][1] - self._samples[0][1]) / span if span > 0 else 0.0


def simulated_time_text(index: int, dt: float, solved_per_second: float | None = None) -> str:
    """A dynamic scene's clock for the status bar: ``t = 1.25 s`` (frame ``index`` of ``dt`` seconds), and
    while frames are being solved the real-time factor, simulated seconds per wall second: ``0.4x real time``
    (``solved_per_second x dt``)."""
    text = f"t = {index * dt:.4g} s"
    if solved_per_second:
        text += f" ({solved_per_second * dt:.2g}x real time)"
    return text
