"""The simulation worker: one thread owns the simulation state and runs frames.

The GUI never touches the simulation directly. It sends commands (small callables applied between frames)
and polls ``take_frame()`` from a timer; the worker keeps only the newest frame (latest wins), so a slow
renderer never builds a backlog and a slow frame never blocks the GUI.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass
class Command:
    """A change applied to the simulation between two frames; ``apply(simulation)`` may raise ValueError.

    ``changes_state=False`` marks a command that only reads the simulation (an export, a field computed for a
    frame already shown): applied while paused, it does not make the worker post a new frame.
    """

    description: str
    apply: Callable[[object], None]
    changes_state: bool = True


@dataclass
class Message:
    """Something the GUI must show: a refused command or a failed frame."""

    level: str  # "error" or "warning"
    text: str


@dataclass
class WorkerOutput:
    """What the GUI picks up on each poll: the newest frame (or None) and the messages since the last poll."""

    frame: object | None
    messages: list[Message] = field(default_factory=list)


def default_snapshot(simulation, report):
    """The frame of a Scene (``scene.simulation.snapshot``) or of a bare Simulation (``snapshot``)."""
    inner = getattr(simulation, "simulation", simulation)
    return inner.snapshot(report)


class SimulationRunner:
    """Runs ``simulation.step()`` on a worker thread; ``snapshot(simulation, report)`` makes the frame.

    ``simulation`` is a :class:`mechanics.scene_runtime.Scene` (or anything with ``step()``);
    ``snapshot`` must return an object holding copies only (positions, fields, report), never live state
    (default: :func:`default_snapshot`). ``frames_attempted`` counts every frame run, failed or not;
    ``frames_run`` only the frames that produced a new state.
    """

    def __init__(self, simulation, *, min_frame_interval: float = 0.0,
                 snapshot: Callable[[object, object], object] = default_snapshot) -> None:
        self._simulation = simulation
        self._snapshot = snapshot
        self.frames_attempted = 0
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._latest = None
        self._messages: list[Message] = []
        self._playing = False
        self._pending_steps = 0
        self._wake = threading.Event()
        self._stopping = False
        self._min_frame_interval = min_frame_interval
        self.frames_run = 0
        self._thread = threading.Thread(target=self._loop, name="softsim-simulation", daemon=True)

    # -- GUI side -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the worker to finish its current frame and exit; waits at most ``timeout`` seconds."""
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def playing(self) -> bool:
        return self._playing

    def play(self) -> None:
        self._playing = True
        self._wake.set()

    def pause(self) -> None:
        self._playing = False

    def step_once(self, count: int = 1) -> None:
        """Run ``count`` more frames (in addition to playing, if playing)."""
        with self._lock:
            self._pending_steps += int(count)
        self._wake.set()

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return self._pending_steps

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, description: str, apply: Callable[[object], None], *, changes_state: bool = True) -> None:
        """Queue a change; it is applied before the next frame (and immediately when paused, when a command that
        ``changes_state`` is followed by a new frame showing its effect)."""
        self._commands.put(Command(description, apply, changes_state))
        self._wake.set()

    def take_output(self) -> WorkerOutput:
        """The newest frame since the last call (None if there is none) and the pending messages."""
        with self._lock:
            output = WorkerOutput(self._latest, self._messages)
            self._latest = None
            self._messages = []
        return output

    # -- worker side ----------------------------------------------------------------------------------
    def _post(self, frame=None, message: Message | None = None) -> None:
        with self._lock:
            if frame is not None:
                self._latest = frame
            if message is not None:
                self._messages.append(message)

    def _apply_commands(self) -> bool:
        """Apply the queued commands; True when one that changes the state succeeded."""
        applied = False
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return applied
            try:
                command.apply(self._simulation)
                applied = applied or command.changes_state
            except (ValueError, KeyError) as error:
                self._post(message=Message("error", f"{command.description}: {error}"))
            except Exception as error:  # keep the session alive whatever a command does
                logger.exception("command %s failed", command.description)
                self._post(message=Message("error", f"{command.description} failed: {error}"))

    def _loop(self) -> None:
        while not self._stopping:
            changed = self._apply_commands()
            with self._lock:
                run_one = self._pending_steps > 0
                if run_one:
                    self._pending_steps -= 1
            if self._playing or run_one:
                started = time.perf_counter()
                self._run_frame()
                spare = self._min_frame_interval - (time.perf_counter() - started)
                if spare > 0:
                    time.sleep(spare)
                continue
            if changed:  # show the effect of a change made while paused (e.g. a reset)
                self._post_snapshot(None)
            self._wake.wait(0.1)
            self._wake.clear()

    def _post_snapshot(self, report) -> None:
        try:
            frame = self._snapshot(self._simulation, report)
        except Exception as error:
            logger.exception("snapshot failed")
            self._post(message=Message("error", f"cannot read the frame: {error}"))
            return
        self._post(frame=frame)

    def _run_frame(self) -> None:
        """One frame; the counters move after the frame and its messages are posted."""
        try:
            report = self._simulation.step()
        except Exception as error:  # a bug or an unexpected failure: report it, keep the last good state
            logger.exception("frame failed")
            self._playing = False
            self._post(message=Message("error", f"frame failed: {error}"))
            self.frames_attempted += 1
            return
        if not report.ok:
            self._post(message=Message("warning", f"frame {report.frame} failed: {report.message}"))
        elif report.message:  # converged badly (e.g. Newton or the constraint solver hit its iteration cap)
            self._post(message=Message("warning", f"frame {report.frame}: {report.message}"))
        self._post_snapshot(report)
        if report.ok:
            self.frames_run += 1
        self.frames_attempted += 1
