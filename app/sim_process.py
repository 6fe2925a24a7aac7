"""The simulation in its own process: the window's GIL never waits for the solver, and a crash of the solver
(a segfault in a native library, out of memory, a kill) leaves the window open.

The child process (started with multiprocessing's ``spawn``; no Qt is imported in it) owns the ``Scene`` and
runs :class:`app.runner.SimulationRunner` on it as the window's worker thread did. Between the processes:

- **commands** (GUI to child, one pipe): ``open`` (build a scene from a picklable callable, optionally continue
  from given positions), ``play``/``pause`` (numbered, so the GUI knows which one the child's state answers),
  ``step``, ``command`` (any :class:`app.runner.Command`: ``SetParameter``, ``SetField``, ``StartDrag``, ...,
  and ``Call``, whose function travels with cloudpickle: a lambda or a module-level function both work),
  ``close`` (drop the scene, keep the process) and ``quit``.
- **the output channel** (child to GUI, one pipe): messages, replies (to commands sent with a token), the
  worker's counters (``status``) and a note that a new frame was written.
- **frames** through shared memory (:class:`FrameWriter`, :class:`FrameReader`): a 16-byte header (sequence
  number of the newest frame, its slot) and two slots, each a 16-byte header (sequence number, length) and
  the pickled frame. The writer alternates slots; the reader copies the newest slot and checks its header
  did not change while copying (a seqlock), so the newest frame wins and a slow GUI never builds a backlog.

:class:`ProcessRunner` is the GUI side: the interface of ``SimulationRunner`` (``play``, ``pause``,
``step_once``, ``send``, ``take_output``, ``frames_attempted``, ``frames_run``, ``pending_steps``, ``playing``,
``field``) plus ``open``. A reader thread blocks on the output pipe (it holds the GIL only to file what
arrives) and calls ``on_output`` so the GUI thread polls. When the pipe ends without a ``quit``, the child
died: ``take_output`` returns its cause in ``WorkerOutput.crashed`` and the session restarts it. A child that is
alive but stopped answering is ended by the same thread when its :class:`app.watchdog.Watchdog` finds a request
overdue (the crash path then follows, with the cause ``it stopped answering``); while the child plays and owes
nothing, the thread asks it for a cheap answer now and then, so a hang while playing is seen too.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import pickle
import signal
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from softsim.app.runner import Call, Command, Message, Reply, SetField, WorkerOutput
from softsim.app.watchdog import OPEN_SECONDS, Watchdog

logger = logging.getLogger(__name__)

#: frame channel headers: (sequence number of the newest frame, its slot); per slot (sequence number, length)
_HEADER = struct.Struct("<QQ")
_SLOT = struct.Struct("<QQ")
_MIN_CAPACITY = 1 << 16
#: how long ``open`` waits for the child to build a scene (a fresh process imports numpy, SciPy, numba first)
OPEN_TIMEOUT = OPEN_SECONDS
#: how often [s] the reader thread looks at the watchdog while nothing arrives
WATCH_INTERVAL = 0.25


def _answer(_scene) -> None:
    """The watchdog's request: costs nothing, answered between two frames."""


# -- what the GUI keeps of an open scene ------------------------------------------------------------------
@dataclass(frozen=True)
class SceneInfo:
    """What the GUI keeps of a scene opened in the simulation process (copies, never live state).

    spec: the SceneSpec as built; rest_positions (n, 3); tets (m, 4) int64; surface_triangles (k, 3) int64;
    fixed_nodes (f,) int64; cavity_triangles: cavity name -> (t, 3) int64; warnings: the scene's warnings;
    frame: the first DisplayFrame (the state as opened or restored).
    """

    spec: Any
    rest_positions: np.ndarray
    tets: np.ndarray
    surface_triangles: np.ndarray
    fixed_nodes: np.ndarray
    cavity_triangles: dict
    warnings: tuple
    frame: Any

    @property
    def n_points(self) -> int:
        return len(self.rest_positions)

    @property
    def n_tets(self) -> int:
        return len(self.tets)


@dataclass(frozen=True)
class RestoreState:
    """The state a scene rebuilt in a new process continues from: positions ``x`` (n, 3) at frame ``index``, and a
    dynamic scene's ``velocities`` (n, 3), simulated ``time`` [s] and free rigid bodies' ``rigid_states`` (name ->
    RigidState) (None: a static scene's rest velocities and the time its frame number gives)."""

    x: np.ndarray
    index: int
    velocities: np.ndarray | None = None
    time: float | None = None
    rigid_states: dict | None = None

    @classmethod
    def of_frame(cls, frame) -> RestoreState:
        """The state of a DisplayFrame (its velocities and time only when it carries them: a dynamic scene's)."""
        velocities = getattr(frame, "velocities", None)
        dynamic = velocities is not None and velocities.shape == frame.x.shape
        return cls(np.array(frame.x, dtype=np.float64), int(frame.index),
                   np.array(velocities, dtype=np.float64) if dynamic else None,
                   float(frame.time) if dynamic else None,
                   dict(getattr(frame, "rigid_states", {})) if dynamic else None)

    def apply(self, scene) -> None:
        """Put ``scene`` (a mechanics Scene) in this state."""
        scene.restore(self.x, self.index, v=self.velocities, time=self.time, rigid_states=self.rigid_states)


def describe_scene(scene, field: str) -> SceneInfo:
    """The :class:`SceneInfo` of a built Scene, its first frame carrying the colour field ``field``."""
    import copy

    from softsim.app.frames import make_display_frame
    from softsim.mechanics.constraints import SurfacePressureConstraint

    simulation = scene.simulation
    return SceneInfo(
        spec=copy.deepcopy(scene.spec),
        rest_positions=np.array(simulation.X, dtype=np.float64),
        tets=np.array(simulation.tets, dtype=np.int64),
        surface_triangles=np.array(scene.mesh.surface_triangles(), dtype=np.int64),
        fixed_nodes=np.array(simulation.problem.fixed_nodes, dtype=np.int64),
        cavity_triangles={c.name: np.array(c.triangles, dtype=np.int64) for c in simulation.constraints
                          if isinstance(c, SurfacePressureConstraint)},
        warnings=tuple(scene.warnings),
        frame=make_display_frame(scene, None, fields=(field,)),
    )


def exit_cause(exitcode: int | None) -> str:
    """Words for how a process ended: ``killed by SIGKILL (a kill, or out of memory)``, ``exit code 3``."""
    if exitcode is None:
        return "it stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        why = {"SIGKILL": " (a kill, or the system ran out of memory)",
               "SIGSEGV": " (a fault in a native library)", "SIGABRT": " (a native library aborted)",
               "SIGBUS": " (a fault in a native library)"}.get(name, "")
        return f"killed by {name}{why}"
    return f"exit code {exitcode}"


# -- frames through shared memory -------------------------------------------------------------------------
def _untrack(shm) -> None:
    """Take a segment out of the resource tracker: the processes unlink their segments themselves (the GUI
    unlinks those of a child that died), and the tracker would otherwise warn or unlink one still in use."""
    try:
        from multiprocessing import resource_tracker

        resource_tracker.unregister(shm._name, "shared_memory")
    except Exception:  # pragma: no cover - the tracker's internals changed: only a warning at exit is lost
        pass


def _unlink(shm) -> None:
    """Remove a segment's name (its mappings stay valid) without telling the resource tracker (see _untrack)."""
    from multiprocessing import shared_memory

    try:
        shared_memory._posixshmem.shm_unlink(shm._name)
    except FileNotFoundError:
        pass


def _slot_base(slot: int, capacity: int) -> int:
    return _HEADER.size + slot * (_SLOT.size + capacity)


class FrameWriter:
    """Writes pickled frames into two alternating slots of a shared memory segment (the child's side).

    ``write(payload)`` returns the segment's name when it had to be created or grown (the reader must attach to
    it), else None. Segment names start with ``prefix``.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.shm = None
        self.capacity = 0
        self.seq = 0
        self._generation = itertools.count()
        self.names: list[str] = []

    def write(self, payload: bytes) -> str | None:
        from multiprocessing import shared_memory

        new_name = None
        if len(payload) > self.capacity:
            capacity = max(_MIN_CAPACITY, 2 * len(payload))
            name = f"{self.prefix}-{next(self._generation)}"
            shm = shared_memory.SharedMemory(name=name, create=True, size=_slot_base(2, capacity))
            _untrack(shm)
            shm.buf[:_HEADER.size] = bytes(_HEADER.size)
            self._release()
            self.shm, self.capacity, new_name = shm, capacity, name
            self.names.append(name)
        self.seq += 1
        slot = self.seq % 2
        base = _slot_base(slot, self.capacity)
        buf = self.shm.buf
        _SLOT.pack_into(buf, base, 0, 0)  # being written
        start = base + _SLOT.size
        buf[start:start + len(payload)] = payload
        _SLOT.pack_into(buf, base, self.seq, len(payload))
        _HEADER.pack_into(buf, 0, self.seq, slot)
        return new_name

    def _release(self) -> None:
        if self.shm is not None:
            self.shm.close()
            _unlink(self.shm)
            self.shm = None

    def close(self) -> None:
        self._release()


class FrameReader:
    """Reads the newest frame the writer put into shared memory (the GUI's side)."""

    def __init__(self) -> None:
        self.shm = None
        self.name: str | None = None
        self.last_seq = 0
        self.names: list[str] = []  # every segment attached: unlinked if the writer dies

    def attach(self, name: str) -> None:
        from multiprocessing import shared_memory

        shm = shared_memory.SharedMemory(name=name)
        _untrack(shm)
        if self.shm is not None:
            self.shm.close()
        self.shm, self.name = shm, name
        self.names.append(name)

    def read(self) -> bytes | None:
        """The newest payload not read yet, or None (nothing new, or it was being overwritten: a newer frame is
        then on its way and will be read at its own notice)."""
        if self.shm is None:
            return None
        buf = self.shm.buf
        capacity = (len(buf) - _HEADER.size) // 2 - _SLOT.size
        for _attempt in range(8):
            seq, slot = _HEADER.unpack_from(buf, 0)
            if seq <= self.last_seq or slot > 1:
                return None
            base = _slot_base(slot, capacity)
            seq1, length = _SLOT.unpack_from(buf, base)
            if seq1 != seq or length > capacity:
                continue
            start = base + _SLOT.size
            payload = bytes(buf[start:start + length])
            if _SLOT.unpack_from(buf, base) == (seq1, length):
                self.last_seq = seq
                return payload
        return None

    def close(self, *, unlink: bool = False) -> None:
        if self.shm is not None:
            self.shm.close()
            self.shm = None
        if unlink:  # the writer died without unlinking its segments
            from multiprocessing import shared_memory

            for name in self.names:
                try:
                    segment = shared_memory.SharedMemory(name=name)
                except FileNotFoundError:
                    continue
                _untrack(segment)
                segment.close()
                _unlink(segment)


# -- the child process ------------------------------------------------------------------------------------
def portable_error(error: BaseException) -> BaseException:
    """``error`` if it survives pickling with its message intact, else one of its built-in bases with its
    message (an error whose constructor does not take its message back, e.g. one built from a list of
    problems, would come back garbled)."""
    try:
        if str(pickle.loads(pickle.dumps(error))) == str(error):
            return error
    except Exception:
        pass
    for base in (KeyError, ValueError, OSError, IndexError):
        if isinstance(error, base):
            return base(str(error))
    return RuntimeError(f"{type(error).__name__}: {error}")


class _Child:
    """The simulation process's state: the scene's runner, the output pipe and the frame writer."""

    def __init__(self, output, prefix: str) -> None:
        self.output = output
        self.writer = FrameWriter(prefix)
        self.lock = threading.RLock()
        self.runner = None
        self.scene_id = 0
        self.control_seq = 0
        self.steps_received = 0

    def send(self, item: tuple) -> None:
        import cloudpickle

        try:
            data = cloudpickle.dumps(item)
        except Exception as error:  # a reply whose result cannot travel: say so instead
            if item[0] != "reply":
                raise
            data = cloudpickle.dumps(("reply", item[1], None, RuntimeError(f"the result cannot be sent: {error}")))
        with self.lock:
            try:
                self.output.send_bytes(data)
            except (BrokenPipeError, OSError):  # the GUI is gone: the main loop ends at its next receive
                pass

    def status(self) -> None:
        """The worker's counters, read and sent under the pipe's lock: the main thread (a step received) and
        the worker thread (a frame done) both send them, and the one read last must arrive last (the GUI keeps
        the last one; an older one arriving after a newer one would leave a step pending forever)."""
        runner = self.runner
        if runner is None:
            return
        with self.lock:
            self.send(("status", self.scene_id, runner.frames_attempted, runner.frames_run, self.steps_received,
                       runner.pending_steps, self.control_seq, runner.playing, runner.frames_solved,
                       runner.last_frame_seconds))

    def forward(self, runner, scene_id: int) -> None:
        """The runner posted something (on its thread): messages and replies to the pipe, the newest frame to
        shared memory and a note of it to the pipe."""
        output = runner.take_output()
        for message in output.messages:
            self.send(("message", scene_id, message.level, message.text))
        for reply in output.replies:
            self.send(("reply", reply.token, reply.result, None if reply.error is None
                       else portable_error(reply.error)))
        if output.frame is not None:
            try:
                payload = pickle.dumps((scene_id, output.frame), protocol=5)
            except Exception as error:
                logger.exception("frame cannot be sent")
                self.send(("message", scene_id, "error", f"cannot send the frame: {error}"))
                return
            with self.lock:
                name = self.writer.write(payload)
            if name is not None:
                self.send(("shm", name))
            self.send(("frame", scene_id))

    def open(self, token: int, scene_id: int, build, field: str, restore) -> None:
        from softsim.app.frames import make_display_frame
        from softsim.app.runner import SimulationRunner

        try:
            scene = build()
            if restore is not None:
                restore.apply(scene)
            info = describe_scene(scene, field)
        except Exception as error:
            if not isinstance(error, (ValueError, OSError)):
                logger.exception("cannot build the scene")
            self.send(("reply", token, None, portable_error(error)))
            return
        self.close_scene()

        def snapshot(scene, report):
            return make_display_frame(scene, report, fields=(runner.field,))

        # the process's own niceness (serve) is the worker's: no thread-level +10 here, which made the solver
        # lose its core to any other program (the GUI is in another process and interpreter)
        runner = SimulationRunner(scene, snapshot=snapshot, on_output=lambda: self.forward(runner, scene_id),
                                  on_frame_done=self.status, niceness=0)
        runner.field = field
        self.runner, self.scene_id = runner, scene_id
        self.send(("reply", token, info, None))
        runner.start()
        self.status()

    def close_scene(self) -> None:
        if self.runner is not None:
            self.runner.stop()
            self.runner = None

    def handle(self, item: tuple) -> bool:
        """One command from the GUI; False for ``quit``."""
        kind = item[0]
        if kind == "quit":
            return False
        if kind == "open":
            self.open(*item[1:])
            return True
        if kind == "close":
            self.close_scene()
            return True
        runner = self.runner
        if kind == "command":
            command = item[1]
            if runner is None:
                if command.token is not None:
                    self.send(("reply", command.token, None, RuntimeError("no scene is open")))
                return True
            runner.send(command)
        elif runner is None:
            return True
        elif kind == "play":
            self.control_seq = item[1]
            runner.play()
        elif kind == "pause":
            self.control_seq = item[1]
            runner.pause()
        elif kind == "step":
            with self.lock:  # the two move together for status()
                runner.step_once(item[1])
                self.steps_received += item[1]
        self.status()
        return True


def own_session() -> bool:
    """Make the calling process (the simulation process) the leader of a new session (POSIX ``setsid``); False
    where that is not possible.

    Linux's scheduler shares the CPU fairly between sessions first ("autogroups", on by default on desktops),
    then between the tasks of a session. In the window's session the solver shared one session's share with the
    window's threads, among them a software OpenGL's rendering threads: with other programs busy, it got a
    fraction of what the same solver got as a program of its own (bench_gui, the solve-rate ratio). In its own
    session it gets a program's share. It still ends with the window: when the window's end of the command pipe
    closes, :func:`serve` returns."""
    if not hasattr(os, "setsid"):
        return False
    try:
        os.setsid()
    except OSError:  # already a session leader, or not allowed
        return False
    return True


def serve(commands, output, prefix: str, niceness: int) -> None:
    """The simulation process's main loop (the target of the spawned process): receive commands until
    ``quit`` or until the GUI's end of the pipe closes."""
    logging.basicConfig(level=logging.WARNING)
    from softsim.mechanics.linear_solvers import configure_threads

    configure_threads()  # the native solvers' thread settings (MKL's spin time, one OpenBLAS thread), before any solve
    own_session()
    if niceness > 0 and hasattr(os, "nice"):
        try:
            os.nice(niceness)
        except OSError:
            pass
    child = _Child(output, prefix)
    child.send(("ready", os.getpid()))
    try:
        while True:
            try:
                data = commands.recv_bytes()
            except (EOFError, OSError):
                break
            try:
                item = pickle.loads(data)
            except Exception as error:  # e.g. a Call whose function cannot be imported here
                logger.exception("command cannot be read")
                child.send(("message", child.scene_id, "error", f"a command cannot be read here: {error}"))
                continue
            if not child.handle(item):
                break
    finally:
        child.close_scene()
        child.writer.close()
        child.send(("bye",))


# -- the GUI side -----------------------------------------------------------------------------------------
def _start_without_main(process) -> None:
    """Start a spawned process without running the parent's ``__main__`` again in it: spawn imports the main
    module of the parent in the child (a script's top level, a benchmark's imports); the simulation process
    needs only this module, so the main module is hidden while the process's preparation data is taken."""
    import sys
    import types

    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        process.start()
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _niceness() -> int:
    """The simulation process's niceness: ``SOFTSIM_WORKER_NICENESS`` if set, else 0. (A worker thread ran
    nicer than the GUI thread because both shared one interpreter; a process has its own, and a lower priority
    would only give its core to other programs.)"""
    try:
        return int(os.environ.get("SOFTSIM_WORKER_NICENESS", "0"))
    except ValueError:
        return 0


class ProcessRunner:
    """The GUI's end of a simulation process; the interface of :class:`app.runner.SimulationRunner` plus
    :meth:`open`. ``on_output`` is called on the reader thread when something arrived."""

    def __init__(self, on_output: Callable[[], None] | None = None) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.on_output = on_output
        self._commands_read, self._commands = context.Pipe(duplex=False)
        self._output, output_write = context.Pipe(duplex=False)
        prefix = f"softsim-{os.getpid()}-{next(_process_numbers)}-{int(time.time() * 1e3) % 100000}"
        self.process = context.Process(target=serve, name="softsim-simulation", daemon=True,
                                       args=(self._commands_read, output_write, prefix, _niceness()))
        _start_without_main(self.process)
        output_write.close()
        self._commands_read.close()
        self.pid = self.process.pid
        self._reader = FrameReader()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._items: list = []  # messages and replies, in order
        self._frame_waiting = False
        self._sync: dict[int, tuple] = {}  # replies to the requests a caller waits for
        self._sync_tokens: set[int] = set()
        self._tokens = itertools.count(1 << 40)  # never the session's tokens
        self._stopping = False
        self.crashed: str | None = None
        self._crash_reported = False
        self.scene_id = 0
        self._scene_ids = itertools.count(1)
        self._opening: dict[int, int] = {}  # open token -> scene id
        self._playing = False
        self._control_seq = 0
        self._steps_sent = 0
        # attempted, run, steps received, pending, control seq, playing, solved, last frame's seconds
        self._status = (0, 0, 0, 0, 0, False, 0, None)
        self.field = "displacement"
        self._send_lock = threading.Lock()  # the GUI thread and the watchdog's pings both send
        self.watchdog = Watchdog(progress=time.monotonic())
        self._ping_token: int | None = None
        self._hang: str | None = None  # why the watchdog ended the process
        self._thread = threading.Thread(target=self._read_loop, name="softsim-simulation-output", daemon=True)
        self._thread.start()

    # -- sending ----------------------------------------------------------------------------------------
    def _send(self, item: tuple) -> None:
        import cloudpickle

        data = cloudpickle.dumps(item)
        with self._send_lock:
            try:
                self._commands.send_bytes(data)
            except (BrokenPipeError, OSError):  # the child died: the reader thread reports it
                pass

    def start(self) -> None:
        """The process runs from construction; kept for the interface of SimulationRunner."""

    def open(self, build: Callable[[], object], field: str, *, restore=None,
             timeout: float = OPEN_TIMEOUT) -> SceneInfo:
        """Build a scene in the child with ``build()`` (pickled with cloudpickle), continuing from ``restore`` (a
        :class:`RestoreState`) when given, and wait for it. Returns its :class:`SceneInfo`;
        raises the error the build raised (the child keeps the scene it had), or RuntimeError when the
        process died or did not answer within ``timeout`` seconds."""
        token = self.open_async(build, field, restore=restore, wait=True)
        deadline = time.monotonic() + timeout
        with self._arrived:
            while token not in self._sync:
                if self.crashed is not None:
                    raise RuntimeError(f"the simulation process stopped: {self.crashed}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the simulation process did not build the scene in {timeout:.0f} s")
                self._arrived.wait(0.1)
            result, error = self._sync.pop(token)
        if error is not None:
            raise error
        return result

    def open_async(self, build, field: str, *, restore=None, wait: bool = False, token: int | None = None) -> int:
        """Send an ``open``; its reply (a SceneInfo or the error) comes back through ``take_output`` under
        ``token`` (default: a new one; returned), or to :meth:`open` with ``wait``. The child's scene before it
        keeps running until the new one is built (and keeps running if the build fails)."""
        token = next(self._tokens) if token is None else token
        scene_id = next(self._scene_ids)
        with self._lock:
            self._opening[token] = scene_id
            if wait:
                self._sync_tokens.add(token)
            self.watchdog.sent(token, time.monotonic(), opening=True)
        self.field = field
        self._send(("open", token, scene_id, build, field, restore))
        return token

    def close_scene(self) -> None:
        """Stop the scene's frames and drop it; the process stays for the next scene."""
        self._send(("close",))
        with self._lock:
            self.scene_id = 0
            self._items.clear()
            self._frame_waiting = False
            self.watchdog.forget()  # the scene's queued commands are dropped unanswered
            self._ping_token = None
        self._playing = False

    def stop(self, timeout: float = 10.0) -> None:
        """End the process (it finishes its current frame); killed if it does not end within ``timeout``."""
        self._stopping = True
        self._send(("quit",))
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        self._thread.join(5.0)
        self._commands.close()
        with self._lock:
            self._reader.close(unlink=True)

    def play(self) -> None:
        self._control_seq += 1
        self._playing = True
        self._send(("play", self._control_seq))

    def pause(self) -> None:
        self._control_seq += 1
        self._playing = False
        self._send(("pause", self._control_seq))

    def step_once(self, count: int = 1) -> None:
        self._steps_sent += int(count)
        self._send(("step", int(count)))

    def send(self, command: Command) -> None:
        if isinstance(command, SetField):
            self.field = command.name
        if command.token is not None:
            with self._lock:
                self.watchdog.sent(command.token, time.monotonic())
        self._send(("command", command))

    def submit(self, description: str, apply, *, changes_state: bool = True) -> None:
        from softsim.app.runner import Call

        self.send(Call(description, apply, changes_state))

    # -- the child's state as last reported ---------------------------------------------------------------
    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def frames_attempted(self) -> int:
        return self._status[0]

    @property
    def frames_run(self) -> int:
        return self._status[1]

    @property
    def frames_solved(self) -> int:
        return self._status[6]

    @property
    def pending_steps(self) -> int:
        received, pending = self._status[2], self._status[3]
        return max(0, self._steps_sent - received) + pending

    @property
    def alive(self) -> bool:
        return self.process.is_alive() and self.crashed is None

    # -- receiving --------------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        import cloudpickle  # noqa: F401 - a reply pickled with cloudpickle may need it to load

        while True:
            try:
                if not self._output.poll(WATCH_INTERVAL):
                    self._watch()
                    continue
                data = self._output.recv_bytes()
            except (EOFError, OSError):
                break
            try:
                item = pickle.loads(data)
            except Exception as error:
                logger.exception("output of the simulation process cannot be read")
                item = ("message", self.scene_id, "error", f"output of the simulation process cannot be read: "
                                                           f"{error}")
            if item[0] == "bye":
                self._stopping = True
                continue
            self._file(item)
            if time.monotonic() - self.watchdog.progress > WATCH_INTERVAL:  # chatty, but no progress
                self._watch()
            if self.on_output is not None:
                self.on_output()
        if not self._stopping:
            self.process.join(5.0)
            with self._arrived:
                self.crashed = self._hang or exit_cause(self.process.exitcode)
                self._arrived.notify_all()
            if self.on_output is not None:
                self.on_output()

    def _watch(self) -> None:
        """On the reader thread, when nothing arrived for a while: end a process that owes an answer overdue (its
        pipe then ends, and the crash path restarts it), or ask a busy, quiet one for a cheap answer."""
        if self._stopping or self._hang is not None:
            return
        now = time.monotonic()
        with self._lock:
            waited = self.watchdog.overdue(now)
            busy = self.scene_id != 0 and (self._playing or self.pending_steps > 0)
            ping = waited is None and self.watchdog.should_ping(now, busy)
            if ping:
                self._ping_token = token = next(self._tokens)
                self.watchdog.sent(token, now)
        if ping:
            self._send(("command", Call("watchdog: are you there?", _answer, False, token=token)))
            return
        if waited is None:
            return
        frame = self.watchdog.frame_seconds
        took = "" if frame is None else f"; its last frame took {frame:.2g} s"
        self._hang = (f"it stopped answering: no answer for {waited:.0f} s{took}; the window ended it "
                      f"(process {self.pid})")
        logger.warning("simulation process %d %s", self.pid, self._hang)
        try:
            os.kill(self.pid, signal.SIGKILL)  # also ends a stopped process
        except OSError:
            pass

    def _file(self, item: tuple) -> None:
        kind = item[0]
        with self._arrived:
            if kind == "reply":
                _kind, token, result, error = item
                self.watchdog.answered(token, time.monotonic())
                if token == self._ping_token:
                    self._ping_token = None
                    return
                scene_id = self._opening.pop(token, None)
                if scene_id is not None and error is None:
                    self.scene_id = scene_id  # frames of the scene before are dropped from here on
                    self._playing = False  # the new scene starts paused
                    self._status = (0, 0, self._steps_sent, 0, self._control_seq, False, 0, None)
                    self.watchdog.frame_times.clear()  # another scene: its frames' cost is not known yet
                if token in self._sync_tokens:
                    self._sync_tokens.discard(token)
                    self._sync[token] = (result, error)
                    self._arrived.notify_all()
                else:
                    self._items.append(Reply(token, result, error))
            elif kind == "message":
                _kind, scene_id, level, text = item
                if scene_id in (0, self.scene_id):
                    self._items.append(Message(level, text))
            elif kind == "status":
                scene_id, *status = item[1:]
                if scene_id == self.scene_id:
                    if status[0] != self._status[0]:  # a frame was done
                        self.watchdog.frame_done(status[7], time.monotonic())
                    self._status = tuple(status)
                    if status[4] == self._control_seq:
                        self._playing = bool(status[5])
            elif kind == "frame":
                self.watchdog.progressed(time.monotonic())
                if item[1] == self.scene_id:
                    self._frame_waiting = True
            elif kind == "shm":
                self._reader.attach(item[1])
            elif kind == "ready":
                pass

    def take_output(self) -> WorkerOutput:
        """Everything that arrived since the last call: the newest frame of the open scene (None if none), the
        messages and replies in order, and ``crashed`` (the cause) once when the process died."""
        with self._lock:
            items, self._items = self._items, []
            frame_waiting, self._frame_waiting = self._frame_waiting, False
            payload = self._reader.read() if frame_waiting else None
            scene_id = self.scene_id
            crashed = None
            if self.crashed is not None and not self._crash_reported:
                self._crash_reported, crashed = True, self.crashed
        output = WorkerOutput(None, crashed=crashed)
        for item in items:
            (output.messages if isinstance(item, Message) else output.replies).append(item)
        if payload is not None:
            frame_scene, frame = pickle.loads(payload)
            if frame_scene == scene_id:
                output.frame = frame
        return output

    def forget(self) -> None:
        """After a crash: close the pipes and unlink the dead child's shared memory."""
        self._stopping = True
        try:
            self._commands.close()
        except OSError:
            pass
        with self._lock:
            self._reader.close(unlink=True)


_process_numbers = itertools.count()
#: one idle simulation process kept for the next scene or window (starting one imports numpy, SciPy, numba)
_spare: list[ProcessRunner] = []


def acquire(on_output: Callable[[], None] | None) -> ProcessRunner:
    """A running simulation process: the spare one if it is alive, else a new one."""
    while _spare:
        runner = _spare.pop()
        if runner.alive:
            runner.on_output = on_output
            with runner._lock:
                runner._items.clear()
                runner._frame_waiting = False
            return runner
        runner.forget()
    return ProcessRunner(on_output)


def release(runner: ProcessRunner) -> None:
    """Keep an idle process (its scene closed) as the spare; a second one is ended."""
    runner.on_output = None
    if not runner.alive:
        runner.forget()
        return
    runner.close_scene()
    if _spare:
        runner.stop()
    else:
        _spare.append(runner)


@atexit.register
def _end_spares() -> None:
    """End the idle process cleanly at exit (it unlinks its shared memory)."""
    while _spare:
        _spare.pop().stop(timeout=5.0)
