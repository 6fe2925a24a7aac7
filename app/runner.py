"""The simulation worker: one thread owns the simulation state and runs frames.

The GUI never touches the simulation directly. It sends commands, small typed messages applied between two
frames (:class:`SetParameter`, :class:`SetField`, :class:`StartDrag`, ..., and :class:`Call` for anything
else), and receives everything through one channel: :meth:`SimulationRunner.take_output` drains it into the
newest frame (latest wins, so a slow renderer never builds a backlog), the messages to show, and the replies
to commands that asked for one. ``on_output`` is called on the worker thread whenever something was posted, so
the GUI can be woken instead of polling.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Command:
    """A change applied to the simulation between two frames; ``apply`` may raise ValueError or KeyError.

    ``changes_state=False`` marks a command that only reads the simulation (an export, a save): applied while
    paused, it does not make the worker post a new frame. A command with a ``token`` gets a :class:`Reply`.
    """

    token: int | None = field(default=None, kw_only=True)
    changes_state = True

    @property
    def description(self) -> str:
        return type(self).__name__

    def apply(self, scene) -> Any:  # pragma: no cover - every command defines it
        raise NotImplementedError


@dataclass(frozen=True)
class Call(Command):
    """Run ``function(scene)``: the general command (tests, reads of the worker's spec, exports)."""

    what: str
    function: Callable[[object], Any]
    changes: bool = True

    @property
    def description(self) -> str:
        return self.what

    @property
    def changes_state(self) -> bool:  # noqa: D102
        return self.changes

    def apply(self, scene) -> Any:
        return self.function(scene)


@dataclass(frozen=True)
class SetParameter(Command):
    """``scene.set(path, value)``: a value by its key path."""

    path: str
    value: Any

    @property
    def description(self) -> str:
        return f"set {self.path}"

    def apply(self, scene) -> None:
        scene.set(self.path, self.value)


@dataclass(frozen=True)
class SetField(Command):
    """The colour field the worker's frames carry from now on (the runner applies it itself)."""

    name: str
    changes_state = False


@dataclass(frozen=True)
class SetPace(Command):
    """At most ``max_fps`` frames per second from now on (None: as fast as the solver goes); the runner applies
    it itself. ValueError for a rate that is not positive."""

    max_fps: float | None
    changes_state = False


@dataclass(frozen=True)
class StartDrag(Command):
    node: int
    target: tuple[float, float, float]

    def apply(self, scene) -> None:
        scene.start_drag(self.node, self.target)


@dataclass(frozen=True)
class MoveDrag(Command):
    target: tuple[float, float, float]

    def apply(self, scene) -> None:
        scene.move_drag(self.target)


@dataclass(frozen=True)
class StopDrag(Command):
    def apply(self, scene) -> None:
        scene.stop_drag()


@dataclass(frozen=True)
class Reset(Command):
    """Back to the rest shape (the drag released)."""

    def apply(self, scene) -> None:
        scene.stop_drag()
        scene.reset()


@dataclass(frozen=True)
class Save(Command):
    path: Path
    changes_state = False

    @property
    def description(self) -> str:
        return f"save {self.path.name}"

    def apply(self, scene) -> None:
        scene.save(self.path)


@dataclass(frozen=True)
class Gradients(Command):
    """The exact gradients of ``outputs`` with respect to the keys ``wrt`` at the last frame
    (:mod:`mechanics.sensitivity`). Replies ``{"values": {output: {key: d output / d key}}, "outputs": {output:
    value}, "parameters": {key: value}, "frame": index}``, or the GradientError of a frame without a gradient."""

    outputs: tuple[str, ...]
    wrt: tuple[str, ...]
    changes_state = False

    @property
    def description(self) -> str:
        return "gradients"

    def apply(self, scene) -> dict:
        from softsim.mechanics.sensitivity import gradient_report

        report = gradient_report(scene, list(self.outputs), list(self.wrt))
        return {"values": report.values, "outputs": report.outputs, "parameters": report.parameters,
                "frame": scene.simulation.frame}


@dataclass(frozen=True)
class Message:
    """Something the GUI must show: a refused command, a failed frame, a hint."""

    level: str  # "error", "warning" or "info"
    text: str


@dataclass(frozen=True)
class Reply:
    """The result of a command sent with a token: ``result``, or the ``error`` it raised."""

    token: int
    result: Any
    error: Exception | None


@dataclass
class WorkerOutput:
    """What the channel held: the newest frame (or None), the messages and the replies, in order; ``crashed``:
    how the simulation process ended when it died (app.sim_process), else None."""

    frame: object | None
    messages: list[Message] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    crashed: str | None = None


#: the worker thread runs this much "nicer" than the GUI thread (Linux): on a machine whose cores are all busy
#: (the solver, a software OpenGL, the X server), the clicks, keys and draws get the CPU first; an idle window
#: takes nothing from the solver
WORKER_NICENESS = 10


def _niceness() -> int:
    """WORKER_NICENESS, or the environment's ``SOFTSIM_WORKER_NICENESS`` (0: the GUI's priority)."""
    import os

    try:
        return int(os.environ.get("SOFTSIM_WORKER_NICENESS", WORKER_NICENESS))
    except ValueError:
        return WORKER_NICENESS


def _lower_priority(niceness: int) -> None:
    """Lower the calling thread's scheduling priority (Linux: threads are tasks with their own nice value;
    elsewhere nothing is done)."""
    import os
    import sys

    if not sys.platform.startswith("linux") or niceness <= 0:
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(os.getpriority(os.PRIO_PROCESS, thread) + niceness, 19))
    except OSError as error:  # not allowed (a sandbox): run at the normal priority
        logger.debug("cannot lower the worker's priority: %s", error)


def _interval(max_fps: float | None) -> float:
    """The shortest time between two frame starts for at most ``max_fps`` frames per second (None: 0)."""
    if max_fps is None:
        return 0.0
    if not max_fps > 0 or max_fps == float("inf"):
        raise ValueError(f"a frame-rate cap must be a positive number of frames per second, got {max_fps!r}")
    return 1.0 / float(max_fps)


def default_snapshot(simulation, report):
    """The frame of a Scene (``scene.simulation.snapshot``) or of a bare Simulation (``snapshot``)."""
    inner = getattr(simulation, "simulation", simulation)
    return inner.snapshot(report)


class SimulationRunner:
    """Runs ``simulation.step()`` on a worker thread; ``snapshot(simulation, report)`` makes the frame.

    ``simulation`` is a :class:`mechanics.scene_runtime.Scene` (or anything with ``step()``);
    ``snapshot`` must return an object holding copies only (positions, fields, report), never live state
    (default: :func:`default_snapshot`). ``frames_attempted`` counts every frame run, failed or not;
    ``frames_run`` only the frames that produced a new state. ``on_frame_done`` is called on the worker thread
    after each frame, once the counters moved. ``niceness``: how much lower than its process the worker thread
    runs (Linux); None (default) for a worker in the GUI's own process: ``WORKER_NICENESS``, or the environment's
    ``SOFTSIM_WORKER_NICENESS``. The simulation process passes 0: there the GUI does not share the interpreter,
    and a nicer worker only lost its core to every other program on the machine.

    A static scene that plays does not spin once it is at rest: after a frame whose inputs were those of the
    converged frame before it (``report.unchanged``), the worker waits for a command instead of solving the
    same frame again (:attr:`at_rest`); an edit, a drag, a step or Play wakes it.
    """

    def __init__(self, simulation, *, min_frame_interval: float = 0.0,
                 snapshot: Callable[[object, object], object] = default_snapshot,
                 on_output: Callable[[], None] | None = None,
                 on_frame_done: Callable[[], None] | None = None, niceness: int | None = None) -> None:
        self._simulation = simulation
        self.niceness = _niceness() if niceness is None else int(niceness)
        self._snapshot = snapshot
        self._on_output = on_output
        self._on_frame_done = on_frame_done
        self.at_rest = False  # the last static frame changed nothing: playing waits for a command
        self.field = "displacement"  # the colour field of the frames: written by SetField, on the worker
        self.frames_attempted = 0
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._last_report = None
        self._playing = False
        self._pending_steps = 0
        self._wake = threading.Event()
        self._stopping = False
        self._edited = False
        self.min_frame_interval = min_frame_interval
        self.frames_run = 0
        self.frames_solved = 0  # frames run whose inputs changed (not an "unchanged" frame's reuse)
        self.last_frame_seconds: float | None = None  # wall time of the last frame's step [s]
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
        self.at_rest = False
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

    def send(self, command: Command) -> None:
        """Queue a command; it is applied before the next frame (and at once when paused; a command that
        ``changes_state`` is then followed by a new frame showing its effect: for a parameter edit of a static
        scene, a solved frame; for a dynamic scene, the state as it is, and a hint to press Play or Step)."""
        self._commands.put(command)
        self._wake.set()

    def submit(self, description: str, apply: Callable[[object], None], *, changes_state: bool = True) -> None:
        """``send(Call(description, apply, changes_state))``."""
        self.send(Call(description, apply, changes_state))

    def take_output(self) -> WorkerOutput:
        """Everything posted since the last call: the newest frame (None if none), the messages, the replies."""
        output = WorkerOutput(None)
        while True:
            try:
                item = self._outbox.get_nowait()
            except queue.Empty:
                return output
            if isinstance(item, Message):
                output.messages.append(item)
            elif isinstance(item, Reply):
                output.replies.append(item)
            else:
                output.frame = item

    # -- worker side ----------------------------------------------------------------------------------
    def _post(self, item) -> None:
        """Put a frame, a Message or a Reply into the channel to the GUI."""
        self._outbox.put(item)
        if self._on_output is not None:
            self._on_output()

    def _take_commands(self) -> list[Command]:
        """The queued commands, in order, without those a later one makes pointless: of a run of
        :class:`SetParameter` commands for one key path with nothing between them (a slider dragged while a frame
        runs sends one per tick of its throttle, ``MAX_EDITS_PER_SECOND``), only the last is applied. The others
        are answered as done (their reply has no error): the scene ends with the value it would have had applying
        them in turn (when the last is refused it keeps the value from before them, and the refusal's reply says
        so), and is not made to set and check each value (a scene check per edit: benchmarks/RESULTS.md,
        "Measurements moved out of docstrings"; the solver alone applies one value per frame)."""
        commands: list[Command] = []
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                break
            previous = commands[-1] if commands else None
            if (isinstance(command, SetParameter) and isinstance(previous, SetParameter)
                    and previous.path == command.path):
                if previous.token is not None:
                    self._post(Reply(previous.token, None, None))
                commands[-1] = command
            else:
                commands.append(command)
        return commands

    def _apply_commands(self) -> bool:
        """Apply the queued commands (:meth:`_take_commands`); True when one that changes the state succeeded. An
        accepted parameter edit sets ``_edited`` (a paused static scene then solves a frame with it)."""
        applied = False
        for command in self._take_commands():
            result, error = None, None
            try:
                if isinstance(command, SetField):
                    self.field = command.name
                    self._post_snapshot(self._last_report)  # the state shown, with the new field
                elif isinstance(command, SetPace):
                    self.min_frame_interval = _interval(command.max_fps)
                else:
                    result = command.apply(self._simulation)
                    self._edited = self._edited or isinstance(command, SetParameter)
                applied = applied or command.changes_state
            except (ValueError, KeyError, OSError) as caught:
                error = caught
            except Exception as caught:  # keep the session alive whatever a command does
                logger.exception("command %s failed", command.description)
                error = caught
            if command.token is not None:
                self._post(Reply(command.token, result, error))
            elif error is not None:
                self._post(Message("error", f"{command.description}: {error}"))
        return applied

    def _is_static(self) -> bool:
        spec = getattr(self._simulation, "spec", None)
        return spec is not None and getattr(spec.scene, "mode", "static") == "static"

    def _loop(self) -> None:
        _lower_priority(self.niceness)
        while not self._stopping:
            changed = self._apply_commands()
            edited, self._edited = self._edited, False
            with self._lock:
                run_one = self._pending_steps > 0
                if run_one:
                    self._pending_steps -= 1
            if edited and not self._playing and not run_one:
                if self._is_static():
                    run_one = True  # a static frame is a solve, not time: show the edit's effect at once
                else:
                    self._post(Message("info", "paused: press Play or Step (N) to see the edit's effect"))
            if changed or edited:
                self.at_rest = False
            if run_one or (self._playing and not self.at_rest):
                # A command sent before a step request is queued before the request is counted (one reader puts
                # both, in order), but it may have arrived after the drain above: apply it now, so that a frame
                # never runs ahead of an edit sent before it. The frame about to run shows its effect.
                if self._apply_commands():
                    self.at_rest = False
                self._edited = False
                started = time.perf_counter()
                self._run_frame()
                spare = self.min_frame_interval - (time.perf_counter() - started)
                if spare > 0:
                    time.sleep(spare)
                continue
            if changed:  # show the effect of a change made while paused (e.g. a reset)
                self._last_report = None
                self._post_snapshot(None)
            self._wake.wait(0.1)
            self._wake.clear()

    def _post_snapshot(self, report) -> None:
        try:
            frame = self._snapshot(self._simulation, report)
        except Exception as error:
            logger.exception("snapshot failed")
            self._post(Message("error", f"cannot read the frame: {error}"))
            return
        self._post(frame)

    def _run_frame(self) -> None:
        """One frame; the counters move after the frame and its messages are posted."""
        started = time.perf_counter()
        try:
            report = self._simulation.step()
        except Exception as error:  # a bug or an unexpected failure: report it, keep the last good state
            logger.exception("frame failed")
            self._playing = False
            self._post(Message("error", f"frame failed: {error}"))
            self.frames_attempted += 1
            if self._on_frame_done is not None:
                self._on_frame_done()
            return
        if not report.ran:
            self._post(Message("warning", f"frame {report.frame} failed: {report.message}"))
        elif report.message:  # converged badly (e.g. Newton or the constraint solver hit its iteration cap)
            self._post(Message("warning", f"frame {report.frame}: {report.message}"))
        self.last_frame_seconds = time.perf_counter() - started
        self._last_report = report
        self.at_rest = bool(report.ran and getattr(report, "unchanged", False) and self._is_static())
        if report.ran and not getattr(report, "unchanged", False):
            self.frames_solved += 1
        self._post_snapshot(report)
        if report.ran:
            self.frames_run += 1
        self.frames_attempted += 1
        if self._on_frame_done is not None:
            self._on_frame_done()
