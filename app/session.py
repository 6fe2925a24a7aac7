"""The GUI's handle on the running scene: opens scenes, owns the simulation worker, relays frames and messages.

The session has no Qt in it: its state is a :class:`app.model.ViewerModel` (shown field, playing, frame), its
signals are :class:`app.model.Event` objects (``scene_opened``, ``frame_ready``, ``frame_shown``, ``message``,
``parameter_changed``, ``running_changed``, ``edited``), it talks to the worker with the typed commands of
:mod:`app.runner`, and :meth:`Session.poll` drains the worker's one channel back (frames, messages, replies).
Whoever owns the GUI thread calls ``poll`` when the worker says it posted something: the window does it through
:func:`deliver_with_qt` (a queued Qt signal); a test or a script without Qt calls it itself.

All methods run on the GUI thread. The Scene lives in the simulation process (:mod:`app.sim_process`, the
default) or, with ``Session(process=False)``, on a worker thread of this process (``session.scene`` is then the
Scene; it is None with a process). Either way the GUI changes it only through commands (applied between
frames) and reads it only through frames, except for the validated spec values it shows, read from ``spec``
(a copy kept on the GUI side), and the static geometry copied when the scene is opened (``info``, a
:class:`app.sim_process.SceneInfo`: ``rest_positions``, ``tets``, ``surface_triangles``, ``fixed_nodes``,
``cavity_triangles``). ``scene_opened`` carries that ``SceneInfo``.

When the simulation process dies (a segfault in a native library, out of memory, a kill), the session says so
(a ``message`` of level "error" naming the cause), starts a new process and rebuilds the scene there from the
current ``spec`` (every accepted edit) at the last frame's positions; requests waiting for an answer get the
error "the simulation process stopped".

``frame_ready`` comes with every frame received; ``frame_shown`` with every frame the window draws (the window,
which draws at a pace its drawing's cost allows, sets ``draws_frames`` and calls :meth:`Session.shown`; without
one, every frame is shown). Views that only display a frame (readouts, plots) follow ``frame_shown``: they then
change in the same event-loop pass as the 3D view, and the window is composed once per drawn frame instead of
once per received frame (each composition of the window costs a software OpenGL about as much as a widget
repaint of the whole window).
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from softsim.app.frames import complete_frame, make_display_frame, probe_node
from softsim.app.model import Event, ViewerModel
from softsim.app.run_output import write_frame_vtu
from softsim.app.runner import (
    Call,
    Command,
    MoveDrag,
    Reset,
    Save,
    SetField,
    SetPace,
    SetParameter,
    SimulationRunner,
    StartDrag,
    StopDrag,
)
from softsim.mechanics.scene import SceneError, get_value, set_value

logger = logging.getLogger(__name__)

SCENE_SUFFIXES = (".toml",)
#: frames used to settle back to equilibrium after a drag started while paused
SETTLE_FRAMES_AFTER_DRAG = 5


def _use_process_default() -> bool:
    """The simulation runs in its own process unless ``SOFTSIM_SIMULATION_PROCESS=0``."""
    return os.environ.get("SOFTSIM_SIMULATION_PROCESS", "1").strip() not in ("0", "false", "no")


def scene_from_spec(spec, allow_scripts: bool = False):
    """``Scene(spec)``: how the simulation process rebuilds a scene after a crash (importable, so it pickles);
    its script controllers run again when they ran before."""
    from softsim.mechanics.scene_runtime import Scene

    return Scene(spec, allow_scripts=allow_scripts)


def _load_scene(path, allow_scripts: bool = False):
    from softsim.mechanics.scene_runtime import Scene

    return Scene.load(path, allow_scripts=allow_scripts)


def _press_key(key: str, scene) -> None:
    """A key press for the scene's scripts (``on_key``), applied by the worker."""
    scene.key_pressed(key)


def scene_scripts(path) -> list[Path]:
    """The script files of a scene file's ``[[controller]]`` tables (none when it cannot be read: opening it
    reports why)."""
    from softsim.mechanics.controllers import script_paths
    from softsim.mechanics.scene import load_scene

    try:
        return script_paths(load_scene(path, check_files=False))
    except (ValueError, OSError):
        return []


def _mesh_scene(path):
    from softsim.mechanics.scene_runtime import Scene, default_scene_for_mesh

    return Scene(default_scene_for_mesh(path))


class Session:
    """One open scene at a time. Events carry immutable frames and human-readable messages.

    ``wake``: called on the worker thread whenever the worker posted output; it must make the GUI thread call
    :meth:`poll` soon. ``Session(qt=True)`` (the default when a QApplication exists) wires it through Qt.
    ``process``: run the scene in its own process (default: True unless ``SOFTSIM_SIMULATION_PROCESS=0``);
    the process is started at once, so it has imported the solver by the time a scene is opened.
    """

    def __init__(self, parent=None, *, qt: bool | None = None, process: bool | None = None) -> None:
        self.model = ViewerModel()
        self.scene_opened, self.frame_ready, self.message = Event(), Event(), Event()
        self.parameter_changed, self.running_changed = Event(), Event()
        self.edited, self.frame_shown = Event(), Event()
        #: a window draws the frames and says which it drew (``shown``); False: each frame is shown as it comes
        self.draws_frames = False
        self.scene = None
        self.spec = None  # GUI-side copy of the scene spec, kept in step with every accepted edit
        self.runner = None  # SimulationRunner or ProcessRunner while a scene is open
        self.info = None  # the open scene's SceneInfo
        self.use_process = _use_process_default() if process is None else bool(process)
        self._process = None  # the simulation process (kept between scenes)
        self.restarts = 0  # how many times the simulation process was restarted after it died
        self.pace: float | None = None  # the frame-rate cap (frames per second; None: none), kept across scenes
        self._restoring = False  # a restart is on its way
        self.path: Path | None = None  # the file the scene came from (scene or bare mesh)
        self.kind: str | None = None  # "scene" or "mesh"
        self.last_error: str | None = None  # the message of the last failed open/save/export
        self.rest_positions = np.zeros((0, 3))
        self.tets = np.zeros((0, 4), dtype=np.int64)
        self.surface_triangles = np.zeros((0, 3), dtype=np.int64)
        self.fixed_nodes = np.zeros(0, dtype=np.int64)
        self.cavity_triangles: dict[str, np.ndarray] = {}
        self.frames_received = 0
        self._replies: dict[int, Callable[[object, Exception | None], None]] = {}
        self._tokens = itertools.count(1)
        self._drag_auto_play = False
        self._probe_waiting = False
        self._next_probe = None
        self.wake: Callable[[], None] | None = None
        #: asked ``ask_scripts(path, scripts) -> bool`` before a scene with script controllers runs them (the
        #: window's question); None: they do not run. The answer is remembered per file for the session.
        self.ask_scripts: Callable[[Path, list[Path]], bool] | None = None
        self.script_answers: dict[Path, bool] = {}
        self.scripts_allowed = False  # the open scene runs its scripts
        self._connect_model()
        if qt if qt is not None else _qt_application_exists():
            deliver_with_qt(self, parent)
        if self.use_process:
            from softsim.app.sim_process import acquire

            self._process = acquire(self._posted)

    def _posted(self) -> None:
        """The worker or the simulation process posted output (called on its thread)."""
        wake = self.wake
        if wake is not None:
            wake()

    @property
    def latest_frame(self):
        return self.model.frame

    # -- opening ---------------------------------------------------------------------------------------
    def open(self, path: str | Path) -> bool:
        """Open a scene (.toml), a SOFA scene (.py, .pyscn, .scn: imported, :meth:`open_sofa`) or a bare mesh
        (any other extension ``meshes.load`` reads)."""
        from softsim.app.sofa_import import is_sofa_scene

        if is_sofa_scene(path):
            return self.open_sofa(path)
        if Path(path).suffix.lower() in SCENE_SUFFIXES:
            return self.open_scene(path)
        return self.open_mesh(path)

    def open_sofa(self, path: str | Path, *, allow_scripts: bool | None = None) -> bool:
        """Import a SOFA scene into a temporary folder (app.sofa_import) and open it; the import report is a
        ``message`` of level "warning". A Python scene runs only when scripts are allowed (``allow_scripts``,
        default: the session's ``allow_scripts`` attribute when it has one, else False)."""
        from softsim.app.sofa_import import ImportFailure, import_to_temporary

        allow = getattr(self, "allow_scripts", False) if allow_scripts is None else allow_scripts
        if not allow and Path(path).suffix.lower() in (".py", ".pyscn") and getattr(self, "ask_scripts", None):
            allow = bool(self.ask_scripts(Path(path), [Path(path)]))  # its createScene and controllers are code
        try:
            toml, report = import_to_temporary(path, allow_scripts=bool(allow))
        except (ImportFailure, OSError) as error:
            return self._fail(f"Cannot open {Path(path).name}:\n{error}")
        if hasattr(self, "script_answers"):  # the controller script the import wrote: the same answer, not asked again
            self.script_answers[Path(toml).resolve()] = bool(allow)
        if not self.open_scene(toml):
            return False
        self.message.emit("warning", report)
        return True

    def open_scene(self, path: str | Path) -> bool:
        """Load a scene file; on any error emit a message and keep the current scene running. A scene whose
        controllers run scripts runs them only when :attr:`ask_scripts` says yes (asked once per file)."""
        allow = self._allow_scripts(Path(path))
        if not self._open(path, "scene", functools.partial(_load_scene, Path(path), allow)):
            return False
        self.scripts_allowed = allow
        return True

    def _allow_scripts(self, path: Path) -> bool:
        scripts = scene_scripts(path)
        if not scripts:
            return False
        key = path.resolve()
        if key not in self.script_answers:
            if self.ask_scripts is None:
                return False
            self.script_answers[key] = bool(self.ask_scripts(path, scripts))
        return self.script_answers[key]

    def key_pressed(self, key: str) -> bool:
        """Send a key press to the open scene's scripts (``on_key(scene, key)``); False when no script of the
        open scene runs. A script's error comes back as a message naming its file and line."""
        if self.runner is None or not self.scripts_allowed:
            return False
        self.send(Call(f"key {key}", functools.partial(_press_key, key)))
        return True

    def open_mesh(self, path: str | Path) -> bool:
        """Open a bare mesh with a default scene (fixed base, gravity, corotational material)."""
        if not self._open(path, "mesh", functools.partial(_mesh_scene, Path(path))):
            return False
        self.scripts_allowed = False
        return True

    def _open(self, path, kind: str, build: Callable[[], object]) -> bool:
        """Build the scene with ``build()`` (in the simulation process: it travels with cloudpickle, so a
        module-level function or a partial of one is best) and show it; False with a message on failure."""
        if self.use_process:
            return self._open_in_process(path, kind, build)
        try:
            scene = build()
        except (ValueError, OSError) as error:  # SceneError, MeshError, ParameterError are ValueErrors
            return self._fail(f"Cannot open {Path(path).name}:\n{error}")
        except Exception as error:  # an unexpected failure while building must not end the session
            logger.exception("opening %s failed", path)
            return self._fail(f"Cannot open {Path(path).name}:\n{type(error).__name__}: {error}")
        self.path, self.kind = Path(path).resolve(), kind
        from softsim.app.sim_process import describe_scene

        self.close()
        runner = SimulationRunner(scene, snapshot=lambda scene, report: make_display_frame(
            scene, report, fields=(runner.field,)), on_output=self._posted)
        runner.field = self.model.field
        self.scene = scene
        self._install(describe_scene(scene, self.model.field), runner)
        return True

    def _open_in_process(self, path, kind: str, build) -> bool:
        from softsim.app.sim_process import acquire

        if self._process is None or not self._process.alive:
            if self._process is not None and self._process is not self.runner:
                self._process.forget()
            self._process = acquire(self._posted)
        process = self._process
        try:
            info = process.open(build, self.model.field)
        except (ValueError, OSError) as error:  # SceneError, MeshError, ParameterError are ValueErrors
            return self._fail(f"Cannot open {Path(path).name}:\n{error}")
        except Exception as error:  # the build failed unexpectedly, or the process died building it
            return self._fail(f"Cannot open {Path(path).name}:\n{type(error).__name__}: {error}")
        self.path, self.kind = Path(path).resolve(), kind
        self.scene = None
        self._install(info, process)
        return True

    def _fail(self, text: str) -> bool:
        self.last_error = text
        self.message.emit("error", text)
        return False

    def _install(self, info, runner) -> None:
        """Show the scene described by ``info`` (a SceneInfo) whose frames ``runner`` runs."""
        self.info = info
        self.spec = copy.deepcopy(info.spec)
        self.rest_positions = info.rest_positions
        self.tets = info.tets
        self.surface_triangles = info.surface_triangles
        self.fixed_nodes = info.fixed_nodes
        self.cavity_triangles = dict(info.cavity_triangles)
        self.frames_received = 0
        self._drag_auto_play = False
        self._probe_waiting, self._next_probe = False, None
        self._replies.clear()  # a request to the old scene is never answered
        self._restoring = False
        self.runner = runner
        for warning in info.warnings:
            self.message.emit("warning", warning)
        self.model.open(info.frame)
        self.scene_opened.emit(info)
        self._frame_arrived(self.model.frame)
        self.runner.start()
        if self.pace is not None:
            self.send(SetPace(self.pace))
        self.model.playing = False
        self.running_changed.emit(False)

    def reload(self) -> bool:
        """Open the current file again from disk (tuned values not saved are lost); False if it fails."""
        if self.path is None:
            return self._fail("no file to reload")
        return self.open_scene(self.path) if self.kind == "scene" else self.open_mesh(self.path)

    def close(self) -> None:
        """Stop the scene's frames (waits for the current frame on a worker thread; a simulation process is kept
        as the spare for the next scene or window)."""
        if self.runner is None:
            return
        if self.use_process:
            from softsim.app.sim_process import release

            self.poll()
            process, self._process, self.runner = self._process, None, None
            if process is not None:
                release(process)
            return
        self.runner.stop()
        self.poll()
        self.runner = None

    def shutdown(self) -> None:
        """Close the scene and hand the simulation process back (the window closes)."""
        self.close()
        if self._process is not None:
            from softsim.app.sim_process import release

            process, self._process = self._process, None
            release(process)

    def release_views(self) -> None:
        """Disconnect every view from the session's and the model's events (the window closes): nothing the
        session holds keeps the window alive after that."""
        for event in (self.scene_opened, self.frame_ready, self.message, self.parameter_changed,
                      self.running_changed, self.edited, self.frame_shown, *vars(self.model.events).values()):
            event.clear()
        self._connect_model()

    def _connect_model(self) -> None:
        """The session's own reactions to the model: a new field goes to the worker, a new frame is
        ``frame_ready`` (and ``frame_shown`` when no window paces the drawing), a change of playing is
        ``running_changed``."""
        self.model.events.field.connect(self._send_field)
        self.model.events.frame.connect(self._frame_arrived)
        self.model.events.playing.connect(self.running_changed.emit)

    def _frame_arrived(self, frame) -> None:
        self.frame_ready.emit(frame)
        if not self.draws_frames:
            self.frame_shown.emit(frame)

    def shown(self, frame) -> None:
        """The window drew ``frame``: ``frame_shown`` (the readouts and plots follow, in the same pass)."""
        self.frame_shown.emit(frame)

    # -- running ---------------------------------------------------------------------------------------
    def play(self) -> None:
        if self.runner is not None:
            self.runner.play()
            self._drag_auto_play = False
            self.model.playing = True

    def pause(self) -> None:
        if self.runner is not None:
            self.runner.pause()
            self._drag_auto_play = False
            self.model.playing = False

    @property
    def playing(self) -> bool:
        return self.runner is not None and self.runner.playing

    def step_once(self, count: int = 1) -> None:
        if self.runner is not None:
            self.runner.step_once(count)

    def send(self, command: Command, on_done: Callable[[object, Exception | None], None] | None = None) -> None:
        """Send a command to the worker; ``on_done(result, error)`` is then called on the GUI thread."""
        if self.runner is None:
            return
        if on_done is not None:
            token = next(self._tokens)
            self._replies[token] = on_done
            command = _with_token(command, token)
        self.runner.send(command)

    def submit(self, description: str, apply, *, changes_scene: bool = True) -> None:
        """Run ``apply(scene)`` on the worker between two frames (``changes_scene=False``: it only reads it, no
        new frame is posted for it while paused)."""
        self.send(Call(description, apply, changes_scene))

    def call(self, description: str, apply: Callable[[object], object],
             on_done: Callable[[object, Exception | None], None], *, changes_scene: bool = True) -> None:
        """Run ``apply(scene)`` on the worker; ``on_done(result, error)`` is then called on the GUI thread."""
        self.send(Call(description, apply, changes_scene), on_done)

    def reset(self) -> None:
        """Back to the rest shape with the parameters as tuned (reload reads the file again)."""
        self.send(Reset())

    def set_pace(self, max_fps: float | None) -> None:
        """Run at most ``max_fps`` frames per second (None: as fast as the solver goes), for this scene and the
        next ones. ValueError for a rate that is not positive."""
        if max_fps is not None and not (0 < float(max_fps) < float("inf")):
            raise ValueError(f"a frame-rate cap must be a positive number of frames per second, got {max_fps!r}")
        self.pace = None if max_fps is None else float(max_fps)
        self.send(SetPace(self.pace))

    # -- mouse drag ------------------------------------------------------------------------------------
    def start_drag(self, node: int, target) -> None:
        """Attach ``node`` to ``target`` (3,) through the scene's drag constraint; runs frames while dragging."""
        self.send(StartDrag(int(node), tuple(float(v) for v in target)))
        if self.runner is not None and not self.runner.playing:
            self.runner.play()
            self._drag_auto_play = True

    def move_drag(self, target) -> None:
        self.send(MoveDrag(tuple(float(v) for v in target)))

    def stop_drag(self) -> None:
        """Release the node; the body returns to equilibrium (a few frames are run if it was paused)."""
        self.send(StopDrag())
        if self._drag_auto_play and self.runner is not None:
            self.runner.pause()
            self.runner.step_once(SETTLE_FRAMES_AFTER_DRAG)
        self._drag_auto_play = False

    # -- display field ---------------------------------------------------------------------------------
    @property
    def display_field(self) -> str:
        """The colour field the frames carry (a key of app.frames.FIELDS): the one the viewport shows."""
        return self.model.field

    def set_display_field(self, field: str) -> None:
        """Show ``field`` (ValueError if unknown): the worker's frames carry it from now on, and the worker sends
        the state shown again with it at once (``frame_ready``)."""
        self.model.field = field

    def _send_field(self, field: str) -> None:
        self.send(SetField(field))

    # -- parameters ------------------------------------------------------------------------------------
    def set_parameter(self, path: str, value, *, record: bool = True) -> str | None:
        """Validate ``value`` for the key path now; if valid, apply it on the worker before the next frame.

        Returns None when accepted, else the message naming the key and the allowed range (nothing changes).
        An accepted edit is announced as ``edited(path, old value, new value)`` (the undo history records it)
        unless ``record`` is False (an undo or a redo sets values back without recording them again).
        """
        if self.spec is None:
            return "no scene is open"
        try:  # set_value changes nothing when it refuses: no copy of the spec is needed
            old = get_value(self.spec, path)
            set_value(self.spec, path, value)
        except SceneError as error:
            return str(error)
        if record:
            self.edited.emit(path, old, get_value(self.spec, path))

        def adopt(spec, error) -> None:
            if error is None:
                self.spec = spec
                self.parameter_changed.emit(path, get_value(spec, path))

        def done(_result, error) -> None:
            if error is None:
                return
            # The scene refused what the file's rules allow (e.g. a set the mesh does not have) and kept its
            # old values: take the worker's spec as the truth again (queued after every earlier edit), then
            # say why on the editor of that key.
            self.call("sync scene values", lambda scene: copy.deepcopy(scene.spec), adopt)
            self.message.emit("error", f"set {path}: {error}")

        self.send(SetParameter(path, value), done)
        self.parameter_changed.emit(path, value)
        return None

    # -- files -----------------------------------------------------------------------------------------
    def save(self, path: str | Path, on_done: Callable[[Exception | None], None] | None = None) -> None:
        """Write the scene with every value in effect to ``path`` (.toml) on the worker, between frames.

        On success the session's file becomes ``path`` (reload reads it); either way ``on_done(error)``
        is called on the GUI thread and a message is emitted.
        """
        path = Path(path).resolve()

        def done(_result, error) -> None:
            if error is None:
                self.path, self.kind = path, "scene"
            self._finish(error, f"saved {path.name}", f"Cannot save {path.name}", on_done)

        if self.runner is None:
            self._fail("no scene is open")
            return
        self.send(Save(path), done)

    def _finish(self, error, success: str, failure: str, on_done) -> None:
        """Emit ``success`` (info) or ``failure: error`` (error, kept in last_error), then ``on_done(error)``."""
        if error is None:
            self.message.emit("info", success)
        else:
            self.last_error = f"{failure}:\n{error}"
            self.message.emit("error", self.last_error)
        if on_done is not None:
            on_done(error)

    def export_frame(self, path: str | Path, on_done: Callable[[Exception | None], None] | None = None) -> None:
        """Write the shown frame as a .vtu on the worker: point data ``displacement`` (n, 3),
        ``displacement_magnitude``, ``von_mises_nodal`` and ``strain_energy_density_nodal`` (n,); cell data
        ``von_mises`` (m,). The fields the frame was made without are computed first, at its positions.

        ``on_done(error)`` is then called on the GUI thread (error: None, OSError or ValueError) and a message
        is emitted.
        """
        path = Path(path)
        frame = self.model.frame
        rest_positions, tets = self.rest_positions, self.tets  # never written in place: safe to read anywhere

        def done(_result, error) -> None:
            self._finish(error, f"exported {path.name}", f"Cannot export {path.name}", on_done)

        if frame is None or self.runner is None:
            done(None, ValueError("no frame to export: open a scene first"))
            return
        self.call(f"export {path.name}",
                  lambda scene: _export(path, complete_frame(scene, frame), rest_positions, tets),
                  done, changes_scene=False)

    def probe(self, node: int, on_done: Callable[[object], None]) -> None:
        """The values at ``node`` of the frame shown (:class:`app.frames.NodeProbe`), computed on the worker;
        ``on_done(probe)`` is called on the GUI thread (not at all if the node is not the scene's). While a
        probe is on its way, a new one replaces the one waiting (a moving mouse asks often)."""
        frame = self.model.frame
        if frame is None or self.runner is None:
            return
        if self._probe_waiting:
            self._next_probe = (node, on_done)
            return
        self._probe_waiting = True

        def done(result, error) -> None:
            self._probe_waiting = False
            if error is None:
                on_done(result)
            queued, self._next_probe = self._next_probe, None
            if queued is not None:
                self.probe(*queued)

        self.call(f"probe node {node}", lambda scene: probe_node(scene, frame, node), done, changes_scene=False)

    # -- the channel from the worker ------------------------------------------------------------------
    def poll(self) -> None:
        """Take what the worker posted: messages, replies (their callbacks run here), the newest frame."""
        if self.runner is None:
            return
        output = self.runner.take_output()
        if output.crashed is not None:
            self._restart(output.crashed)
            return
        for message in output.messages:
            self.message.emit(message.level, message.text)
        for reply in output.replies:
            on_done = self._replies.pop(reply.token, None)
            if on_done is not None:
                on_done(reply.result, reply.error)
        if output.frame is not None:
            self.frames_received += 1
            self.model.frame = output.frame
        if self.runner is not None:
            self.model.playing = self.runner.playing


    # -- crash isolation ------------------------------------------------------------------------------------
    def _restart(self, cause: str) -> None:
        """The simulation process died: say so, answer the waiting requests with an error, and rebuild the scene
        in a new process from the current spec at the last frame's state (positions; a dynamic scene's velocities
        and simulated time)."""
        from softsim.app.sim_process import RestoreState, acquire

        dead = self.runner
        dead.forget()
        self._process = self.runner = None
        waiting, self._replies = self._replies, {}
        self._probe_waiting, self._next_probe = False, None
        stopped = RuntimeError(f"the simulation process stopped: {cause}")
        for on_done in waiting.values():
            try:
                on_done(None, stopped)
            except Exception:  # a view's callback must not stop the restart
                logger.exception("a request's callback failed after the simulation process stopped")
        self.model.playing = False
        if self._restoring:  # it died again while rebuilding: do not loop
            self._restoring = False
            self.last_error = (f"The simulation process stopped again ({cause}) while restoring the scene; "
                               f"open the scene again to continue")
            self.message.emit("error", self.last_error)
            return
        frame = self.model.frame
        restore = None
        if frame is not None and frame.x.shape == self.rest_positions.shape:
            restore = RestoreState.of_frame(frame)  # a dynamic scene's velocities and time too
        where = f"frame {restore.index}" if restore is not None else "the rest shape"
        self.last_error = (f"The simulation process stopped ({cause}). The window restarted it from {where} "
                           f"with the current values.")
        self.message.emit("error", self.last_error)
        self.restarts += 1
        self._restoring = True
        process = self._process = acquire(self._posted)
        self.runner = process
        build = functools.partial(scene_from_spec, copy.deepcopy(self.spec),
                                  bool(getattr(self, "scripts_allowed", False)))

        def restored(info, error) -> None:
            self._restoring = False
            if error is not None:
                self.last_error = f"Cannot restore the scene in a new simulation process:\n{error}"
                self.message.emit("error", self.last_error)
                return
            self.info = info
            if self.pace is not None:
                self.send(SetPace(self.pace))
            self.message.emit("info", f"simulation restored at {where}")
            self.model.frame = info.frame

        token = next(self._tokens)
        self._replies[token] = restored
        process.open_async(build, self.model.field, restore=restore, token=token)


def _with_token(command: Command, token: int) -> Command:
    import dataclasses

    return dataclasses.replace(command, token=token)


def _qt_application_exists() -> bool:
    import sys

    qt = sys.modules.get("PyQt6.QtWidgets")
    return qt is not None and qt.QApplication.instance() is not None


def deliver_with_qt(session: Session, parent=None):
    """Make the worker's ``wake`` call ``session.poll()`` on the Qt GUI thread (a queued signal); returns the
    QObject that does it (owned by ``parent`` when given). Wakes are coalesced: while one poll is queued, the
    worker's further posts add none, so a slow GUI thread never falls behind a queue of polls."""
    import threading
    import weakref

    from PyQt6.QtCore import QObject, pyqtSignal

    class _Delivery(QObject):
        posted = pyqtSignal()

    delivery = _Delivery(parent)
    queued = threading.Event()

    def wake() -> None:  # on the worker thread
        if not queued.is_set():
            queued.set()
            delivery.posted.emit()  # queued to the GUI thread

    # the connection is held on the C++ side, out of the garbage collector's sight: through a weak reference
    # it keeps neither the session nor the window that owns it alive
    session_ref = weakref.ref(session)

    def deliver() -> None:
        queued.clear()
        alive = session_ref()
        if alive is not None:
            alive.poll()

    delivery.posted.connect(deliver)
    session.wake = wake
    session._delivery = delivery  # keeps it alive without a parent
    return delivery


def _export(path: Path, frame, rest_positions: np.ndarray, tets: np.ndarray) -> None:
    """A complete DisplayFrame (every field computed, see app.frames.complete_frame) as a .vtu."""
    write_frame_vtu(path, frame.x, rest_positions, tets, frame.von_mises,
                    {"von_mises_nodal": frame.von_mises_nodal,
                     "strain_energy_density_nodal": frame.energy_density_nodal})
