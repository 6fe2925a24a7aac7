"""When a simulation process that is alive has stopped answering (issue 30): the GUI's requests and how long they
have waited, against what the process's frames cost.

A process that dies ends its pipe and is seen at once; one that hangs (a deadlock, a native library spinning, a
stopped process) is only seen by waiting for answers. :class:`Watchdog` keeps the requests the process owes an
answer (a command with a token, a scene to open) and the last sign of progress (a reply, a frame, the frame
counters moving). A request is overdue when neither it nor any progress came for

    limit = max(minimum, factor x the longest of the recent frames' times, build_factor x the last build's time)

seconds (the recent frames: the last :data:`RECENT` timed; before any frame was timed, the ``first_frame``
allowance instead of the frame term: a frame that found nothing changed costs next to nothing and says nothing
of what the next solve costs); opening a scene
is allowed ``open_seconds``, and while one is being built the requests queued behind it wait for it. While the
process plays or has steps to run and nothing is owed, :meth:`should_ping` asks for a request that costs
nothing (answered between two frames), so a process that hangs while playing is seen too.

Times are seconds on one monotonic clock, passed in (``now``), so the rules are testable without processes.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from dataclasses import dataclass, field

__all__ = ["Watchdog", "hang_minimum"]

#: the shortest wait for an answer [s] (``SOFTSIM_HANG_SECONDS`` overrides it)
MINIMUM = 20.0
#: how many of the last frame's time a request may wait
FACTOR = 20.0
#: how many of the last scene build's time a request may wait (an edit may rebuild the scene)
BUILD_FACTOR = 3.0
#: how many of the last frames' times the frame term looks at
RECENT = 50
#: the wait allowed before the process has timed a frame (the first frame compiles numba's kernels) [s]
FIRST_FRAME = 120.0
#: the wait allowed for a scene to be built [s] (a fresh process imports numpy, SciPy, numba first)
OPEN_SECONDS = 600.0


def hang_minimum() -> float:
    """``SOFTSIM_HANG_SECONDS`` if set to a positive number, else :data:`MINIMUM`."""
    try:
        value = float(os.environ.get("SOFTSIM_HANG_SECONDS", ""))
    except ValueError:
        return MINIMUM
    return value if value > 0 else MINIMUM


@dataclass
class _Request:
    order: int
    sent: float
    allowance: float | None  # None: the frame-based limit


@dataclass
class Watchdog:
    """The requests a simulation process owes an answer, and whether one is overdue.

    minimum, factor, build_factor, first_frame, open_seconds: see the module's formula [s, -, -, s, s];
    ``override``: a fixed limit [s] instead of the formula (tests, a user who knows the scene).
    """

    minimum: float = field(default_factory=hang_minimum)
    factor: float = FACTOR
    build_factor: float = BUILD_FACTOR
    first_frame: float = FIRST_FRAME
    open_seconds: float = OPEN_SECONDS
    override: float | None = None
    frame_times: deque = field(default_factory=lambda: deque(maxlen=RECENT))  # the recent frames' times [s]
    build_seconds: float | None = None  # the last scene build's time, request to answer [s]
    progress: float = 0.0  # when the process last showed progress
    _requests: dict = field(default_factory=dict)  # token -> _Request
    _orders: itertools.count = field(default_factory=itertools.count)

    @property
    def frame_seconds(self) -> float | None:
        """The longest of the recent frames' times [s] (None before one was timed)."""
        return max(self.frame_times) if self.frame_times else None

    def frame_done(self, seconds: float | None, now: float) -> None:
        """A frame was done at ``now`` in ``seconds`` (None: not timed)."""
        self.progress = now
        if seconds is not None:
            self.frame_times.append(float(seconds))

    def limit(self) -> float:
        """How long [s] a request may wait without an answer or any progress."""
        if self.override is not None:
            return self.override
        frame = self.first_frame if self.frame_seconds is None else self.factor * self.frame_seconds
        build = 0.0 if self.build_seconds is None else self.build_factor * self.build_seconds
        return max(self.minimum, frame, build)

    def sent(self, token: int, now: float, *, opening: bool = False) -> None:
        """A request that will be answered under ``token`` was sent at ``now`` (``opening``: a scene to build)."""
        self._requests[token] = _Request(next(self._orders), now, self.open_seconds if opening else None)

    def answered(self, token: int, now: float) -> None:
        """The answer to ``token`` came (an open's answer also times the build, and drops the requests sent
        before it: the scene they were for is gone, and its queued commands are never answered)."""
        request = self._requests.pop(token, None)
        self.progress = now
        if request is not None and request.allowance is not None:
            self.build_seconds = now - request.sent
            self._requests = {t: r for t, r in self._requests.items() if r.order > request.order}

    def forget(self) -> None:
        """Nothing is owed any more (the scene was closed: its queued commands are dropped unanswered)."""
        self._requests.clear()

    def progressed(self, now: float) -> None:
        self.progress = now

    @property
    def waiting(self) -> bool:
        return bool(self._requests)

    def overdue(self, now: float) -> float | None:
        """How long [s] the oldest overdue request has waited, or None when none is overdue. While a scene is
        being built, only the build is timed (the requests behind it wait for it)."""
        opening = [r for r in self._requests.values() if r.allowance is not None]
        requests = opening[:1] if opening else list(self._requests.values())
        limit = self.limit()
        for request in sorted(requests, key=lambda r: r.order):
            waited = now - max(request.sent, self.progress)
            if waited > (request.allowance if request.allowance is not None else limit):
                return waited
        return None

    def should_ping(self, now: float, busy: bool) -> bool:
        """Whether to send a request that costs nothing: the process is ``busy`` (playing, or steps to run),
        nothing is owed, and it has been quiet for half the limit."""
        return busy and not self._requests and now - self.progress > 0.5 * self.limit()
