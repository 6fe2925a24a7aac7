"""The GUI's handle on the running scene: opens scenes, owns the simulation worker, relays frames and messages.

All methods run on the GUI thread. The Scene itself lives on the worker thread: the GUI changes it only
through ``set_parameter``/``submit``/``call`` (applied between frames) and reads it only through frames,
except for the validated spec values it shows, which are read from ``spec`` (a copy kept on the GUI side),
and the static geometry copied when the scene is opened (``rest_positions``, ``tets``, ``surface_triangles``,
``fixed_nodes``, ``cavity_triangles``).

Frames carry only the colour field the viewport shows (``set_display_field``; app.frames explains why): the
worker's snapshot function reads that name, and a shown frame without it (paused, or made just before the
switch) is completed on the worker at its own positions and shown again.
"""

from __future__ import annotations

import copy
import logging
import queue
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PyQt6.QtCore import QObject, QTimer, pyqtSignal
from softsim.app.frames import DisplaySnapshot, complete_frame, has_field, make_display_frame
from softsim.app.headless import write_frame_vtu
from softsim.app.runner import SimulationRunner
from softsim.mechanics.scene import SceneError, get_value, set_value

logger = logging.getLogger(__name__)

POLL_INTERVAL_MS = 15
SCENE_SUFFIXES = (".toml",)
#: frames used to settle back to equilibrium after a drag started while paused
SETTLE_FRAMES_AFTER_DRAG = 5


class Session(QObject):
    """One open scene at a time. Signals carry immutable frames and human-readable messages."""

    scene_opened = pyqtSignal(object)  # the Scene that was opened (for building views and panels)
    frame_ready = pyqtSignal(object)  # app.frames.DisplayFrame (a mechanics Frame), newest only
    message = pyqtSignal(str, str)  # level ("error" | "warning" | "info"), text
    parameter_changed = pyqtSignal(str, object)  # key path, new value (after validation)
    running_changed = pyqtSignal(bool)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.scene = None
        self.spec = None  # GUI-side copy of the scene spec, kept in step with every accepted edit
        self.runner: SimulationRunner | None = None
        self.latest_frame = None
        self.path: Path | None = None  # the file the scene came from (scene or bare mesh)
        self.kind: str | None = None  # "scene" or "mesh"
        self.last_error: str | None = None  # the message of the last failed open/save/export
        self.rest_positions = np.zeros((0, 3))
        self.tets = np.zeros((0, 4), dtype=np.int64)
        self.surface_triangles = np.zeros((0, 3), dtype=np.int64)
        self.fixed_nodes = np.zeros(0, dtype=np.int64)
        self.cavity_triangles: dict[str, np.ndarray] = {}
        self.frames_received = 0
        self.frame_rate = 0.0  # frames shown per second (exponential average)
        self._last_frame_time: float | None = None
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._drag_auto_play = False
        self._snapshot = DisplaySnapshot()  # read by the worker: the field its frames carry
        self._completing: tuple[object, str] | None = None  # (frame, field) being completed on the worker
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_INTERVAL_MS)
        self._timer.timeout.connect(self._poll)

    # -- opening ---------------------------------------------------------------------------------------
    def open(self, path: str | Path) -> bool:
        """Open a scene (.toml) or a bare mesh (any other extension ``meshes.load`` reads)."""
        if Path(path).suffix.lower() in SCENE_SUFFIXES:
            return self.open_scene(path)
        return self.open_mesh(path)

    def open_scene(self, path: str | Path) -> bool:
        """Load a scene file; on any error emit a message and keep the current scene running."""
        from softsim.mechanics.scene_runtime import Scene

        return self._open(path, "scene", lambda: Scene.load(path))

    def open_mesh(self, path: str | Path) -> bool:
        """Open a bare mesh with a default scene (fixed base, gravity, corotational material)."""
        from softsim.mechanics.scene_runtime import Scene, default_scene_for_mesh

        return self._open(path, "mesh", lambda: Scene(default_scene_for_mesh(path)))

    def _open(self, path, kind: str, build: Callable[[], object]) -> bool:
        try:
            scene = build()
        except (ValueError, OSError) as error:  # SceneError, MeshError, ParameterError are ValueErrors
            return self._fail(f"Cannot open {Path(path).name}:\n{error}")
        except Exception as error:  # an unexpected failure while building must not end the session
            logger.exception("opening %s failed", path)
            return self._fail(f"Cannot open {Path(path).name}:\n{type(error).__name__}: {error}")
        self.path, self.kind = Path(path).resolve(), kind
        self._install(scene)
        return True

    def _fail(self, text: str) -> bool:
        self.last_error = text
        self.message.emit("error", text)
        return False

    def _install(self, scene) -> None:
        from softsim.mechanics.constraints import SurfacePressureConstraint

        self.close()
        self.scene = scene
        self.spec = copy.deepcopy(scene.spec)
        simulation = scene.simulation
        self.rest_positions = simulation.X.copy()
        self.tets = np.array(simulation.tets, dtype=np.int64)
        self.surface_triangles = np.array(scene.mesh.surface_triangles(), dtype=np.int64)
        self.fixed_nodes = np.array(simulation.problem.fixed_nodes, dtype=np.int64)
        self.cavity_triangles = {c.name: np.array(c.triangles, dtype=np.int64) for c in simulation.constraints
                                 if isinstance(c, SurfacePressureConstraint)}
        self.latest_frame = make_display_frame(scene, None, fields=(self.display_field,))
        self.frames_received, self.frame_rate, self._last_frame_time = 0, 0.0, None
        self._drag_auto_play = False
        self._completing = None  # a request to the old worker may never be answered
        self.runner = SimulationRunner(scene, snapshot=self._snapshot)
        for warning in scene.warnings:
            self.message.emit("warning", warning)
        self.scene_opened.emit(scene)
        self.frame_ready.emit(self.latest_frame)
        self.runner.start()
        self._timer.start()
        self.running_changed.emit(False)

    def reload(self) -> bool:
        """Open the current file again from disk (tuned values not saved are lost); False if it fails."""
        if self.path is None:
            return self._fail("no file to reload")
        return self.open_scene(self.path) if self.kind == "scene" else self.open_mesh(self.path)

    def close(self) -> None:
        """Stop the worker (waits for the current frame)."""
        self._timer.stop()
        if self.runner is not None:
            self.runner.stop()
            self.runner = None
            self._poll_results()

    # -- running ---------------------------------------------------------------------------------------
    def play(self) -> None:
        if self.runner is not None:
            self.runner.play()
            self._drag_auto_play = False
            self.running_changed.emit(True)

    def pause(self) -> None:
        if self.runner is not None:
            self.runner.pause()
            self._drag_auto_play = False
            self.running_changed.emit(False)

    @property
    def playing(self) -> bool:
        return self.runner is not None and self.runner.playing

    def step_once(self, count: int = 1) -> None:
        if self.runner is not None:
            self.runner.step_once(count)

    def submit(self, description: str, apply, *, changes_scene: bool = True) -> None:
        """Run ``apply(scene)`` on the worker between two frames (``changes_scene=False``: it only reads it, no
        new frame is posted for it while paused)."""
        if self.runner is not None:
            self.runner.submit(description, apply, changes_state=changes_scene)

    def call(self, description: str, apply: Callable[[object], object],
             on_done: Callable[[object, Exception | None], None], *, changes_scene: bool = True) -> None:
        """Run ``apply(scene)`` on the worker; ``on_done(result, error)`` is then called on the GUI thread."""

        def run(scene) -> None:
            try:
                result = apply(scene)
            except Exception as error:  # handed to on_done on the GUI thread
                self._results.put((on_done, None, error))
                return
            self._results.put((on_done, result, None))

        self.submit(description, run, changes_scene=changes_scene)

    def reset(self) -> None:
        """Back to the rest shape with the parameters as tuned (reload reads the file again)."""
        self.submit("reset", lambda scene: (scene.stop_drag(), scene.reset()))

    # -- mouse drag ------------------------------------------------------------------------------------
    def start_drag(self, node: int, target) -> None:
        """Attach ``node`` to ``target`` (3,) through the scene's drag constraint; runs frames while dragging."""
        target = np.array(target, dtype=np.float64)
        self.submit(f"drag node {node}", lambda scene: scene.start_drag(int(node), target))
        if self.runner is not None and not self.runner.playing:
            self.runner.play()
            self._drag_auto_play = True

    def move_drag(self, target) -> None:
        target = np.array(target, dtype=np.float64)
        self.submit("move drag", lambda scene: scene.move_drag(target))

    def stop_drag(self) -> None:
        """Release the node; the body returns to equilibrium (a few frames are run if it was paused)."""
        self.submit("release drag", lambda scene: scene.stop_drag())
        if self._drag_auto_play and self.runner is not None:
            self.runner.pause()
            self.runner.step_once(SETTLE_FRAMES_AFTER_DRAG)
        self._drag_auto_play = False

    # -- display field ---------------------------------------------------------------------------------
    @property
    def display_field(self) -> str:
        """The colour field the frames carry (app.frames.DISPLAY_FIELDS): the one the viewport shows."""
        return self._snapshot.field

    def set_display_field(self, field: str) -> None:
        """Make the next frames carry ``field`` (ValueError if unknown); if the shown frame lacks it, it is
        computed for that frame on the worker and the frame is emitted again with it (``frame_ready``)."""
        self._snapshot.field = field
        self._complete_shown_frame()

    def _complete_shown_frame(self) -> None:
        frame, field = self.latest_frame, self.display_field
        if frame is None or self.runner is None or has_field(frame, field):
            return
        if self._completing is not None and self._completing[0] is frame and self._completing[1] == field:
            return  # already asked (the window sets the field again when its combo box follows the menu)
        self._completing = (frame, field)

        def adopt(completed, error) -> None:
            if self._completing is not None and self._completing[0] is frame and self._completing[1] == field:
                self._completing = None
            if error is not None:
                self.message.emit("warning", f"cannot compute {field}: {error}")
            elif self.latest_frame is frame:
                self.latest_frame = completed
                self.frame_ready.emit(completed)
            else:  # a newer frame came meanwhile, or another field was added: it may still lack the field shown
                self._complete_shown_frame()

        self.call(f"compute {field}", lambda scene: complete_frame(scene, frame, (field,)), adopt,
                  changes_scene=False)

    # -- parameters ------------------------------------------------------------------------------------
    def set_parameter(self, path: str, value) -> str | None:
        """Validate ``value`` for the key path now; if valid, apply it on the worker before the next frame.

        Returns None when accepted, else the message naming the key and the allowed range (nothing changes).
        """
        if self.spec is None:
            return "no scene is open"
        trial = copy.deepcopy(self.spec)
        try:
            set_value(trial, path, value)
        except SceneError as error:
            return str(error)
        self.spec = trial

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

        self.call(f"set {path}", lambda scene: scene.set(path, value), done)
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
        self.call(f"save {path.name}", lambda scene: scene.save(path), done)

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
        frame = self.latest_frame
        rest_positions, tets = self.rest_positions, self.tets  # never written in place: safe to read anywhere

        def done(_result, error) -> None:
            self._finish(error, f"exported {path.name}", f"Cannot export {path.name}", on_done)

        if frame is None or self.runner is None:
            done(None, ValueError("no frame to export: open a scene first"))
            return
        self.call(f"export {path.name}",
                  lambda scene: _export(path, complete_frame(scene, frame), rest_positions, tets),
                  done, changes_scene=False)

    # -- polling ---------------------------------------------------------------------------------------
    def _poll_results(self) -> None:
        while True:
            try:
                on_done, result, error = self._results.get_nowait()
            except queue.Empty:
                return
            on_done(result, error)

    def _poll(self) -> None:
        self._poll_results()
        if self.runner is None:
            return
        output = self.runner.take_output()
        for message in output.messages:
            self.message.emit(message.level, message.text)
        if output.frame is not None:
            now = time.perf_counter()
            if self._last_frame_time is not None:
                rate = 1.0 / max(now - self._last_frame_time, 1e-6)
                self.frame_rate = rate if self.frame_rate == 0.0 else 0.8 * self.frame_rate + 0.2 * rate
            self._last_frame_time = now
            self.frames_received += 1
            self.latest_frame = output.frame
            self.frame_ready.emit(output.frame)
            self._complete_shown_frame()  # made before the field was switched: rare
        self._poll_results()


def _export(path: Path, frame, rest_positions: np.ndarray, tets: np.ndarray) -> None:
    """A complete DisplayFrame (every field computed, see app.frames.complete_frame) as a .vtu."""
    write_frame_vtu(path, frame.x, rest_positions, tets, frame.von_mises,
                    {"von_mises_nodal": frame.von_mises_nodal,
                     "strain_energy_density_nodal": frame.energy_density_nodal})
