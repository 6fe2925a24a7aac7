"""softsim's main window: the viewport in the centre, dockable panels, menus, toolbars and a status bar.

The window talks to the simulation only through its :class:`~app.session.Session`; frames arrive from the
session's poll timer and are drawn in place (see :mod:`app.viewport`).
"""

from __future__ import annotations

import gc
import logging
import re
import time
from pathlib import Path

import numpy as np
from PyQt6.QtCore import QPoint, Qt, QTimer
from PyQt6.QtGui import QAction, QActionGroup, QImage, QKeySequence, QPainter, QPixmap
from PyQt6.QtWidgets import (
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QToolBar,
    QWidget,
)

from softsim.app.frames import FIELDS
from softsim.app.goals import GoalHandles
from softsim.app.health import frame_problems
from softsim.app.interaction import InteractionWatch
from softsim.app.pacing import LatestPacer
from softsim.app.rates import FrameRates, simulated_time_text
from softsim.app.recording import Recorder
from softsim.app.session import Session
from softsim.app.settings import Settings
from softsim.app.status_labels import ElidedLabel, set_style_sheet
from softsim.app.undo import EditHistory
from softsim.app.viewport import CAMERA_PRESETS, MAX_DEFORMATION_SCALE, OVERLAYS, STYLES, Viewport

logger = logging.getLogger(__name__)

MESH_FILTER = "Meshes (*.vtk *.vtu *.msh *.mesh *.inp *.xdmf *.xmf *.med)"
OPEN_FILTER = (f"Scenes and meshes (*.toml *.scn *.py *.pyscn {MESH_FILTER[8:-1]});;Scenes (*.toml);;"
               f"SOFA scenes, imported (*.scn *.py *.pyscn);;{MESH_FILTER};;All (*)")
#: a paint slower than this (seconds) makes the view draw fast (no anti-aliasing, see Viewport.set_fast_drawing)
#: while frames stream in (playing, until a static scene is at rest) or a mouse button is held down on the window
FAST_DRAW_THRESHOLD = 0.008
#: a static scene at rest goes back to full-quality drawing only after this long (seconds) without a new frame:
#: a slider held down (by the keyboard, or a script) gives a frame at rest between its edits, and switching the
#: anti-aliasing on and off at each of them made most draws full-quality ones (issue 30, bench_gui)
STILL_SECONDS = 0.3
#: the view is redrawn at most every (this factor x the last draw time): drawing takes <= 1/3 of the time
RENDER_INTERVAL_FACTOR = 2.0
MOUSE_BINDINGS = (
    "Left drag             rotate the view",
    "Right drag / wheel    zoom",
    "Middle or Shift+left  pan",
    "Click on the body     select a node (its values in the status bar)",
    "Hover over the body   the values under the mouse",
    "Ctrl+left drag        drag a node (or Left drag in Drag mode, D)",
    "Left drag a green dot move an effector's goal (inverse mode)",
)
#: the banner names this many problems of a frame (the health label's tooltip lists them all)
BANNER_PROBLEMS = 2
#: the health label's word for the worst kind of problem of a frame (app.health), worst first
HEALTH_TEXT = {"failed": "FAILED", "not_converged": "NOT CONVERGED", "actuator_limited": "ACTUATOR LIMITED",
               "untrustworthy": "NOT TRUSTWORTHY"}
HEALTH_STYLE = {
    "ok": "color:#2e9a3e; font-weight:bold; padding:0 6px;",
    "warning": "background:#c08000; color:white; font-weight:bold; padding:0 6px;",
    "error": "background:#b02020; color:white; font-weight:bold; padding:0 6px;",
}
BANNER_STYLE = {
    "warning": "background:#5a4a10; color:#ffe9a8; padding:4px 8px; font-weight:bold;",
    "error": "background:#6a1c1c; color:#ffd0d0; padding:4px 8px; font-weight:bold;",
}


def settle_heap() -> None:
    """Collect the garbage of the scene closed, then freeze the objects alive (the new scene, VTK, Qt, numba):
    Python's full garbage collections then skip them. Without it, a full collection every few seconds froze
    the GUI thread for a visible moment while a scene played; with it, collections are short (the numbers:
    benchmarks/RESULTS.md). The old scene's objects are unfrozen first, so closing a scene still frees its
    cycles."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


#: Simulation > Frame-rate cap: the choices (frames per second, "none" or "realtime")
PACES = {"none": "No cap (as fast as the solver goes)", "60": "60 frames/s", "30": "30 frames/s",
         "10": "10 frames/s", "2": "2 frames/s", "realtime": "Real time (dynamic scenes: 1 / dt frames/s)"}
#: the clocks a recording's video can follow (app.recording.TIMINGS), as File > Recording clock names them
RECORD_TIMINGS = {"wall": "Wall time (as the frames were drawn)",
                  "simulated": "Simulated time (dynamic scenes)",
                  "frames": "Frames (one video frame per drawn frame)"}


def frame_number_text(frame) -> str:
    """The status bar's frame number: the frame shown, and the frame its report is about when that differs (a
    failed frame keeps the last good state: ``frame 11 (frame 12 failed)``), so it and the banner agree."""
    text = f"frame {frame.index}"
    report = frame.report
    if report is not None and report.frame != frame.index:
        text += f" (frame {report.frame} {'failed' if not report.ran else 'ran'})"
    return text


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.1f}"


def phase_times(report, render_seconds: float | None) -> dict[str, float | None]:
    """Seconds per phase of a FrameReport: assembly (forces and tangents), factorization, newton (the rest of
    Step I), W (projection), constraint (constraint solve), render (GUI); None where the frame had no such
    phase. Reads ``report.times`` (assembly, factorization, newton_solve, W, constraint_solve) and falls back
    on the Newton and constraint reports where a frame's ``times`` lacks a phase (a dynamic frame has no
    factorization entry)."""
    times = dict(getattr(report, "times", {}) or {})
    newton = getattr(report, "newton", None)
    constraint = getattr(report, "constraint", None)
    solve = times.get("constraint_solve", getattr(constraint, "time", None) if constraint is not None else None)
    assembly = times.get("assembly", getattr(newton, "assembly_time", None))
    factorization = times.get("factorization", getattr(newton, "factorization_time", None))
    return {"assembly": assembly, "factorization": factorization, "newton": times.get("newton_solve"),
            "W": times.get("W"), "constraint": solve, "render": render_seconds}


class MainWindow(QMainWindow):
    """Top-level window; ``open_path`` opens a scene (.toml) or a bare mesh."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        self.setWindowTitle("softsim")
        self.resize(1280, 800)
        self.settings = settings or Settings()
        self.session = Session(self)
        self.session.draws_frames = True  # the panels' readouts and plots follow the frames drawn (_draw)
        central = QWidget(self)
        self.viewport = Viewport(central)  # its native window is made now: made in the widget that holds it
        self.viewport.bind(self.session.model)
        self.session.ask_scripts = self.ask_scripts
        self.viewport.key_pressed.connect(self.session.key_pressed)
        self.banner = QLabel("", central)
        self.banner.setObjectName("warning_banner")
        self.banner.setWordWrap(True)
        # the view is a native window (app.native_view), which covers whatever Qt paints under it: the banner
        # over it is a native window too
        self.banner.setAttribute(Qt.WidgetAttribute.WA_NativeWindow)
        self.banner.hide()
        layout = QGridLayout(central)  # the banner lies over the top of the view: showing it resizes nothing
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.viewport, 0, 0)
        layout.addWidget(self.banner, 0, 0, Qt.AlignmentFlag.AlignTop)
        self.setCentralWidget(central)
        # texts that do not fit end at a whole word with "…" (the whole text in the tooltip): at 1280 px the
        # status bar holds them all
        self.status_label = ElidedLabel("no scene", max_width=240, min_width=120)
        self.frame_label = QLabel("")
        self.timing_label = ElidedLabel("", max_width=220)
        self.warning_label = ElidedLabel("", max_width=220)
        self.warning_label.setStyleSheet("color:#c08000;")
        self.pick_label = ElidedLabel("", max_width=300)  # the selected node's values
        self.pick_label.setObjectName("pick_label")
        self.hover_label = ElidedLabel("", max_width=16777215, min_width=0)  # the values under the mouse
        self.hover_label.setObjectName("hover_label")
        self.hover_label.setStyleSheet("color:#808890;")
        self.health_label = QLabel("")  # converged / not converged / failed, coloured
        self.health_label.setObjectName("health_label")
        self.statusBar().addWidget(self.status_label)
        self.statusBar().addWidget(self.hover_label, 1)
        for label in (self.pick_label, self.frame_label, self.timing_label, self.warning_label, self.health_label):
            self.statusBar().addPermanentWidget(label)
        # a temporary message hides the left widgets and a coloured label is taller: a fixed height keeps the
        # view from resizing (and refitting) while frames play
        self.statusBar().setFixedHeight(self.statusBar().sizeHint().height() + 6)
        self.problems: list = []  # the Problems of the frame shown (app.health)
        self._fit_on_next_frame = False
        self.last_probe = None  # the NodeProbe of the selected node
        self.last_render_time: float | None = None
        self.at_rest = False  # the last frame received was a static scene's frame at rest (report.unchanged)
        #: fires STILL_SECONDS after a frame at rest with no frame since: the view is still, full quality again
        #: (public: a test or a scripted session may lengthen it, or fire it early with ``start(0)``)
        self.still_timer = QTimer(self)
        self.still_timer.setSingleShot(True)
        self.still_timer.setInterval(round(1e3 * STILL_SECONDS))
        self.still_timer.timeout.connect(self._update_drawing_quality)
        self._rates = FrameRates()
        self.recorder: Recorder | None = None
        self.record_timing = "wall"  # the clock of the next recording's video (RECORD_TIMINGS)
        self.pace_choice = "none"  # Simulation > Frame-rate cap (PACES)
        self.docks = []
        #: the pacer of the view's draws: frames are offered, the newest drawn when the last draw's cost allows
        self.draws = LatestPacer(self._draw, factor=RENDER_INTERVAL_FACTOR, parent=self,
                                  extra_cost=lambda: self.viewport.last_paint_seconds)
        self.history = EditHistory(self.session, self)
        self._build_actions()
        self._build_menus()
        self._build_toolbars()
        self._build_docks()
        self.session.scene_opened.connect(self._on_scene_opened)
        self.session.frame_ready.connect(self._on_frame)
        self.session.message.connect(self._on_message)
        self.session.running_changed.connect(self._on_running_changed)
        self.viewport.node_picked.connect(self._on_node_picked)
        self.viewport.node_hovered.connect(self._on_node_hovered)
        self.viewport.drag_started.connect(self.session.start_drag)
        self.viewport.drag_moved.connect(self.session.move_drag)
        self.viewport.drag_finished.connect(self.session.stop_drag)
        self.goal_handles = GoalHandles(self.session, self.viewport, self)
        #: a mouse button held down on the window (a slider, the view): the view draws fast meanwhile
        self.interaction = InteractionWatch(self, lambda _active: self._update_drawing_quality())

    # -- building ------------------------------------------------------------------------------------
    def _action(self, text: str, slot, *, shortcut=None, checkable: bool = False, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.setCheckable(checkable)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        return action

    def _build_actions(self) -> None:
        key = QKeySequence.StandardKey
        self.open_action = self._action("&Open...", self._ask_open, shortcut=key.Open,
                                        tip="Open a scene (.toml) or a tetrahedral mesh")
        self.save_action = self._action("&Save scene", self._save, shortcut=key.Save,
                                        tip="Save the scene with the tuned parameters")
        self.save_as_action = self._action("Save scene &as...", self._ask_save_as, shortcut=key.SaveAs)
        self.reload_action = self._action("&Reload from disk", self.reload, shortcut="Ctrl+R",
                                          tip="Read the file again (unsaved tuning is lost)")
        self.reset_action = self._action("Rese&t", self.reset, shortcut="Ctrl+Backspace",
                                         tip="Back to the rest shape, keeping the tuned parameters")
        self.play_action = self._action("&Play", self._toggle_play, shortcut="Space", checkable=True,
                                        tip="Play / pause the simulation")
        self.step_action = self._action("S&tep", lambda: self.session.step_once(), shortcut="N",
                                        tip="Run one frame")
        self.screenshot_action = self._action("Save scree&nshot...", self._ask_screenshot,
                                              tip="Save a PNG of the window")
        self.export_action = self._action("&Export frame (.vtu)...", self._ask_export)
        self.record_action = self._action("&Record frames...", self._toggle_recording, checkable=True,
                                          tip="Save every drawn frame as a PNG and an MP4 video into a folder")
        self.drag_action = self._action("&Drag mode", self._toggle_drag_mode, shortcut="D", checkable=True,
                                        tip="Left button drags a surface node (Ctrl+left always does)")
        self.quit_action = self._action("&Quit", self.close, shortcut=key.Quit)
        self.undo_action = self.history.createUndoAction(self, "&Undo")
        self.undo_action.setShortcut(key.Undo)
        self.redo_action = self.history.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence(key.Redo), QKeySequence("Ctrl+Y")])
        for action in (self.undo_action, self.redo_action):  # also while a panel's field has the focus
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.shortcuts_action = self._action("&Keyboard and mouse...", self.show_shortcuts, shortcut="F1",
                                             tip="Every shortcut and mouse binding of the window")

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        file_menu.addAction(self.reload_action)
        file_menu.addSeparator()
        file_menu.addAction(self.save_action)
        file_menu.addAction(self.save_as_action)
        file_menu.addSeparator()
        file_menu.addAction(self.export_action)
        file_menu.addAction(self.screenshot_action)
        file_menu.addAction(self.record_action)
        clock_menu = file_menu.addMenu("Recording &clock")
        clock_group = QActionGroup(self)
        self.record_timing_actions = {}
        for timing, label in RECORD_TIMINGS.items():
            action = self._action(label, lambda _checked=False, t=timing: self._set_record_timing(t),
                                  checkable=True)
            action.setChecked(timing == self.record_timing)
            clock_group.addAction(action)
            clock_menu.addAction(action)
            self.record_timing_actions[timing] = action
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = bar.addMenu("&Edit")
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        simulation_menu = bar.addMenu("&Simulation")
        for action in (self.play_action, self.step_action, self.reset_action):
            simulation_menu.addAction(action)
        pace_menu = simulation_menu.addMenu("&Frame-rate cap")
        self.pace_actions = self._radio_group(pace_menu, PACES, "none", self.set_pace)
        view_menu = bar.addMenu("&View")
        colour_menu = view_menu.addMenu("&Colour by")
        titles = {key: title for key, (title, _quantity) in FIELDS.items()}
        self.field_actions = self._radio_group(colour_menu, titles, self.viewport.field, self.set_field)
        style_menu = view_menu.addMenu("&Style")
        self.style_actions = self._radio_group(style_menu, {s: s.capitalize() for s in STYLES},
                                               self.viewport.style, self.set_style)
        range_menu = view_menu.addMenu("Colour &range")
        range_menu.addAction(self._action("&Automatic", lambda: self.set_color_range(None)))
        range_menu.addAction(self._action("&Fixed...", self._ask_color_range))
        show_menu = view_menu.addMenu("S&how")
        self.overlay_actions = {}
        labels = {"fixed": "Fixed nodes", "cables": "Cable paths", "cavities": "Cavities",
                  "contacts": "Contacts and forces", "obstacles": "Obstacles"}
        for key in OVERLAYS:
            action = self._action(labels[key], lambda checked, k=key: self.viewport.set_overlay_visible(k, checked),
                                  checkable=True)
            action.setChecked(True)
            show_menu.addAction(action)
            self.overlay_actions[key] = action
        camera_menu = view_menu.addMenu("C&amera")
        shortcuts = {"front": "1", "side": "2", "top": "3", "iso": "4", "fit": "F"}
        self.camera_actions = {}
        for preset in (*CAMERA_PRESETS, "fit"):
            action = self._action(preset.capitalize(), lambda _=False, p=preset: self.set_camera(p),
                                  shortcut=shortcuts[preset])
            camera_menu.addAction(action)
            self.camera_actions[preset] = action
        camera_menu.addSeparator()
        camera_menu.addAction(self._action("&Save view...", self._ask_camera_view_name,
                                           tip="Keep the current camera under a name (in the settings)"))
        self.saved_views_menu = camera_menu.addMenu("Saved &views")
        self.saved_views_menu.aboutToShow.connect(self._fill_saved_views_menu)
        self._fill_saved_views_menu()
        self.timings_action = self._action("&Timings in the view", self._toggle_timings, checkable=True,
                                           tip="Show the last frame's solve and draw times over the 3D view")
        view_menu.addAction(self.timings_action)
        view_menu.addAction(self.drag_action)
        self.panels_menu = bar.addMenu("&Panels")
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.shortcuts_action)

    def set_pace(self, choice: str) -> None:
        """Cap the frames solved per second (a key of PACES): a number, "none", or "realtime" (a dynamic scene
        runs no faster than its simulated time: 1 / dt frames per second; a static scene is not capped)."""
        spec = self.session.spec
        if choice == "realtime":
            dynamic = spec is not None and spec.scene.mode == "dynamic"
            rate = 1.0 / float(spec.scene.dt) if dynamic else None
        else:
            rate = None if choice == "none" else float(choice)
        self.pace_choice = choice
        self.pace_actions[choice].setChecked(True)
        self.session.set_pace(rate)

    def _radio_group(self, menu, entries: dict, current: str, slot) -> dict[str, QAction]:
        group = QActionGroup(self)
        actions = {}
        for key, label in entries.items():
            action = self._action(label, lambda _=False, k=key: slot(k), checkable=True)
            action.setChecked(key == current)
            group.addAction(action)
            menu.addAction(action)
            actions[key] = action
        return actions

    def _build_toolbars(self) -> None:
        for action, short in ((self.save_action, "Save"), (self.reload_action, "Reload"),
                              (self.screenshot_action, "Screenshot"), (self.record_action, "Record"),
                              (self.drag_action, "Drag")):
            action.setIconText(short)  # the toolbar's label; the menus keep the full text
        main = QToolBar("Main", self)
        main.setObjectName("main_toolbar")
        for action in (self.open_action, self.save_action, self.reload_action, None, self.reset_action,
                       self.play_action, self.step_action, None, self.screenshot_action, self.record_action,
                       self.drag_action):
            main.addSeparator() if action is None else main.addAction(action)
        self.addToolBar(main)
        display = QToolBar("Display", self)
        display.setObjectName("display_toolbar")
        self.field_combo = QComboBox(display)
        for key, (label, _quantity) in FIELDS.items():
            self.field_combo.addItem(label, key)
        self.field_combo.currentIndexChanged.connect(lambda i: self.set_field(self.field_combo.itemData(i)))
        self.style_combo = QComboBox(display)
        for style in STYLES:
            self.style_combo.addItem(style.capitalize(), style)
        self.style_combo.setCurrentIndex(STYLES.index(self.viewport.style))
        self.style_combo.currentIndexChanged.connect(lambda i: self.set_style(self.style_combo.itemData(i)))
        self.scale_spin = QDoubleSpinBox(display)
        self.scale_spin.setObjectName("deformation_scale")
        self.scale_spin.setRange(1.0, MAX_DEFORMATION_SCALE)
        self.scale_spin.setDecimals(0)
        self.scale_spin.setPrefix("x")
        self.scale_spin.setStepType(QDoubleSpinBox.StepType.AdaptiveDecimalStepType)
        self.scale_spin.setKeyboardTracking(False)
        self.scale_spin.setToolTip("Deformation scale: the drawn displacement is magnified this many times "
                                   "(the simulation and every number shown are not)")
        self.scale_spin.valueChanged.connect(self.viewport.set_deformation_scale)
        display.addWidget(self.field_combo)
        display.addWidget(self.style_combo)
        display.addWidget(self.scale_spin)
        display.addSeparator()
        for preset in (*CAMERA_PRESETS, "fit"):
            display.addAction(self.camera_actions[preset])
        self.addToolBar(display)
        self.toolbars = (main, display)
        self._toolbar_break = False

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """On a window too narrow for both toolbars, the second goes to a row of its own (nothing hidden
        behind an overflow arrow)."""
        super().resizeEvent(event)
        main, display = self.toolbars
        narrow = self.width() < main.sizeHint().width() + display.sizeHint().width() + 24
        if narrow != self._toolbar_break:
            if narrow:
                self.insertToolBarBreak(display)
            else:
                self.removeToolBarBreak(display)
            self._toolbar_break = narrow

    def _build_docks(self) -> None:
        """The panels of app.panels (parameters, actuators, plots), when that package provides them."""
        try:
            from softsim.app.panels import create_docks
        except ImportError:
            create_docks = None
        if create_docks is None:
            logger.info("app.panels.create_docks is not available: no panels")
            self.panels_menu.addAction("(no panels available)").setEnabled(False)
            return
        try:
            self.docks = list(create_docks(self.session, self, history=self.history,
                                           highlight=self.viewport.highlight, edit=self.edit_in_parameters,
                                           sensitivity=True))
        except Exception:  # a panel bug must not keep the viewport from opening
            logger.exception("building the panels failed")
            self.statusBar().showMessage("the panels could not be built (see the log)", 10000)
            self.docks = []
        for dock in self.docks:
            if self.dockWidgetArea(dock) == Qt.DockWidgetArea.NoDockWidgetArea:
                self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            self.panels_menu.addAction(dock.toggleViewAction())

    # -- opening and saving --------------------------------------------------------------------------
    def open_path(self, path: str | Path, *, dialog: bool = True) -> bool:
        """Open a scene (.toml) or a mesh; on failure show the message and keep what was open."""
        if not self.session.open(path):
            if dialog:
                self.show_error("Cannot open", self.session.last_error or f"cannot open {path}")
            return False
        self.settings.add_recent_file(path)
        return True

    def ask_scripts(self, path: Path, scripts: list[Path]) -> bool:
        """Ask whether the scene's controller scripts may run (the session remembers the answer for the file)."""
        names = "\n".join(f"  {script}" for script in scripts)
        box = QMessageBox(QMessageBox.Icon.Question, "Run the scene's scripts?",
                          f"{Path(path).name} has controllers that run Python scripts:\n{names}\n\nA script is a "
                          "program: it can do anything you can. Run them only if you trust this scene. Without them "
                          "the scene opens with its keyframed controllers only.",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        return box.exec() == QMessageBox.StandardButton.Yes

    def open_mesh(self, path: str | Path) -> bool:
        """Open a bare tetrahedral mesh with a default scene; on failure show a dialog, keep the view."""
        if not self.session.open_mesh(path):
            self.show_error("Cannot open mesh", self.session.last_error or f"cannot open {path}")
            return False
        self.settings.add_recent_file(path)
        return True

    def reload(self) -> bool:
        if self.session.path is None:
            return False
        if not self.session.reload():
            self.show_error("Cannot reload", self.session.last_error or "reload failed")
            return False
        return True

    def save_scene(self, path: str | Path) -> None:
        """Save the scene (tuned values) to ``path``; done on the worker between two frames."""

        def done(error) -> None:
            if error is None:
                self.settings.add_recent_file(path)
                self._update_title()
            else:
                self.show_error("Cannot save", self.session.last_error or str(error))

        self.session.save(path, done)

    def export_frame(self, path: str | Path, on_done=None) -> None:
        """Export the shown frame as a .vtu with every field (written on the worker, see Session.export_frame);
        an error shows a dialog. ``on_done(error)`` is called on the GUI thread when it is done."""

        def done(error) -> None:
            if error is not None:
                self.show_error("Cannot export the frame", f"{Path(path).name}: {error}")
            if on_done is not None:
                on_done(error)

        self.session.export_frame(path, done)

    def save_screenshot(self, path: str | Path) -> bool:
        """Save the whole window (panels included) as a PNG."""
        self.flush_frame()
        QApplication.processEvents()  # let the status bar labels take their new sizes
        self.viewport.render()
        if not self._window_image().save(str(path)):
            self.show_error("Cannot save the screenshot", f"cannot write {path}")
            return False
        return True

    def _window_image(self) -> QPixmap:
        """The whole window as drawn: Qt's grab, with the view's own image (VTK draws it in a native window,
        which the grab leaves out) and the banner over it."""
        pixmap = self.grab()
        pixels = np.ascontiguousarray(self.viewport.screenshot(return_img=True)[..., :3], dtype=np.uint8)
        height, width = pixels.shape[:2]
        image = QImage(pixels.data, width, height, 3 * width, QImage.Format.Format_RGB888)
        image.setDevicePixelRatio(self.viewport.devicePixelRatioF())
        painter = QPainter(pixmap)
        painter.drawImage(self.viewport.mapTo(self, QPoint(0, 0)), image)
        if self.banner.isVisible():
            painter.drawPixmap(self.banner.mapTo(self, QPoint(0, 0)), self.banner.grab())
        painter.end()
        return pixmap

    def start_recording(self, folder: str | Path, *, video: bool = True, timing: str | None = None) -> None:
        """Save every drawn frame of the viewport as ``frame_00000.png``, ... into ``folder``, and as a video
        ``softsim.mp4`` there (app.recording) that plays on the clock ``timing`` (default: the File > Recording
        clock choice): "wall" as drawn, "simulated" a dynamic scene's time, "frames" one video frame each."""
        self.stop_recording()
        self.recorder = Recorder(folder, video=video, timing=timing or self.record_timing)
        self.record_action.setChecked(True)
        clock = RECORD_TIMINGS[self.recorder.timing].split(" (")[0].lower()
        self.statusBar().showMessage(f"recording into {folder}; the video plays in {clock}", 5000)

    def _set_record_timing(self, timing: str) -> None:
        self.record_timing = timing
        self.record_timing_actions[timing].setChecked(True)

    def _record_clock(self, frame) -> float | None:
        """The time of ``frame`` on the recording's clock: now (wall), ``index x dt`` (simulated, a dynamic
        scene; a static scene has no simulated time: None, one video frame per drawn frame), None (frames)."""
        timing = self.recorder.timing
        if timing == "wall":
            return time.perf_counter()
        spec = self.session.spec
        if timing == "simulated" and spec is not None and spec.scene.mode == "dynamic":
            return frame.index * float(spec.scene.dt)
        return None

    def stop_recording(self) -> Path | None:
        """Finish the recording; returns the video's path (None: no recording or no frame)."""
        recorder, self.recorder = self.recorder, None
        self.record_action.setChecked(False)
        if recorder is None:
            return None
        try:
            video = recorder.close()
        except (OSError, RuntimeError) as error:
            self.show_error("Cannot write the video", f"{recorder.video_path}: {error}")
            return None
        self.statusBar().showMessage(f"recorded {recorder.frames} frames into {recorder.folder}"
                                     + (f" and {video.name}" if video else ""), 8000)
        return video

    @property
    def recorded_frames(self) -> int:
        return self.recorder.frames if self.recorder is not None else 0

    def show_error(self, title: str, message: str) -> None:
        logger.error("%s: %s", title, message)
        self.statusBar().showMessage(message.replace("\n", " "), 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_dialog")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda _result: self._hide_banner())  # the dialog said it: the banner goes with it
        box.open()

    # -- display -------------------------------------------------------------------------------------
    def set_field(self, field: str) -> None:
        """Colour the body by ``field``; the session then makes the frames carry that field (only that one)."""
        self.session.set_display_field(field)  # the viewport follows the model
        self.field_actions[field].setChecked(True)
        index = self.field_combo.findData(field)
        if index != self.field_combo.currentIndex():
            self.field_combo.setCurrentIndex(index)

    def set_style(self, style: str) -> None:
        self.viewport.set_style(style)
        self.style_actions[style].setChecked(True)
        index = self.style_combo.findData(style)
        if index != self.style_combo.currentIndex():
            self.style_combo.setCurrentIndex(index)

    def set_color_range(self, clim) -> None:
        self.viewport.set_color_range(clim)

    @property
    def picked_node(self) -> int | None:
        return self.session.model.selected_node

    def set_camera(self, preset: str) -> None:
        self.session.model.camera = preset
        self.viewport.set_camera_preset(preset)  # also when the preset is the same: the view may have moved

    def save_camera_view(self, name: str) -> None:
        """Keep the current camera under ``name`` in the settings (View > Camera > Saved views)."""
        self.settings.save_camera_view(name, self.viewport.camera_view())
        self._fill_saved_views_menu()
        self.statusBar().showMessage(f"camera view '{name.strip()}' saved", 5000)

    def restore_camera_view(self, name: str) -> None:
        """Put the camera where the saved view ``name`` has it (KeyError naming the saved ones if none)."""
        views = self.settings.camera_views
        if name not in views:
            raise KeyError(f"no saved camera view {name!r}; saved: {', '.join(views) or 'none'}")
        self.viewport.set_camera_view(views[name])

    def _ask_camera_view_name(self) -> None:
        name, ok = QInputDialog.getText(self, "Save camera view", "Name of the view:")
        if ok and name.strip():
            self.save_camera_view(name)

    def _fill_saved_views_menu(self) -> None:
        self.saved_views_menu.clear()
        views = self.settings.camera_views
        for name in views:
            self.saved_views_menu.addAction(self._action(name, lambda _=False, n=name: self.restore_camera_view(n)))
        self.saved_views_menu.setEnabled(bool(views))

    def _toggle_timings(self, checked: bool) -> None:
        self.viewport.set_timings(f"{self.frame_label.text()}\n{self.timing_label.text()}" if checked else None)
        self.viewport.draw()

    def _toggle_drag_mode(self, checked: bool) -> None:
        self.viewport.drag_mode = bool(checked)

    def _toggle_play(self, checked: bool) -> None:
        self.session.play() if checked else self.session.pause()

    def _on_running_changed(self, running: bool) -> None:
        self.play_action.setChecked(running)
        self.play_action.setText("&Pause" if running else "&Play")
        self._update_drawing_quality()

    def _update_drawing_quality(self) -> None:
        """A slow (software) OpenGL draws the view fast while frames stream in (playing, until a static scene is
        at rest) or while a mouse button is held down on the window; at full quality otherwise, drawn again at
        once when it comes back if the view was drawn meanwhile (a click that changed nothing renders nothing)."""
        still = self.at_rest and not self.still_timer.isActive()
        streaming = self.session.playing and not still
        busy = streaming or self.interaction.active
        if busy and not self.viewport.fast_drawing and self.viewport.last_paint_seconds > FAST_DRAW_THRESHOLD:
            self.viewport.set_fast_drawing(True)
        elif not busy and self.viewport.fast_drawing:
            redraw = self.viewport.drawn_fast
            self.viewport.set_fast_drawing(False)
            if redraw:
                self.viewport.draw()

    def reset(self) -> None:
        """Back to the rest shape with the tuned parameters; the camera frames the body again."""
        self._fit_on_next_frame = True
        self.session.reset()

    # -- session events -------------------------------------------------------------------------------
    def _update_title(self) -> None:
        path = self.session.path
        self.setWindowTitle(f"softsim - {path.name}" if path is not None else "softsim")

    def _on_scene_opened(self, scene) -> None:
        self._rates.clear()
        if self.pace_choice == "realtime":  # 1 / dt of this scene
            self.set_pace("realtime")
        self.pick_label.setText("")
        self.hover_label.setText("")
        self._clear_health()
        self.last_probe = None
        self._hide_banner()
        self.warning_label.setText("")
        self.viewport.show_scene(self.session)
        self.set_camera("iso")
        self._update_title()
        self.status_label.setText(f"{self.session.path.name}: {scene.n_points} nodes, {scene.n_tets} tetrahedra")
        QTimer.singleShot(0, settle_heap)  # once the panels are built for the scene

    def _on_frame(self, frame) -> None:
        """Take a new frame: drawn by the pacer (app.pacing) as soon as RENDER_INTERVAL_FACTOR times the last
        draw's cost (writing the arrays and the paint it asks for) has passed, the newest frame winning; drawing
        then takes at most 1 / (1 + factor) of the GUI thread however slow the OpenGL is.

        A static scene's frame at rest (``report.unchanged``: the converged state after the last edit, and no
        further frame is coming) is drawn at once, without waiting for the pace; at full quality once no other
        frame has come for STILL_SECONDS."""
        report = getattr(frame, "report", None)
        at_rest = bool(report is not None and getattr(report, "unchanged", False))
        self.draws.offer(frame)
        if at_rest:
            self.draws.flush()
            if not self.at_rest:
                self.still_timer.start()
        else:
            self.still_timer.stop()
        if at_rest != self.at_rest:
            self.at_rest = at_rest
            self._update_drawing_quality()

    def flush_frame(self) -> None:
        """Draw the newest frame now if the pacer is holding it back (rendered before returning), and redraw the
        plots now if their pacer holds a redraw back (a screenshot shows them with the frame in the view)."""
        if self.draws.flush():
            self.viewport.render()
        plots = self.dock("plots_dock")
        if plots is not None:
            plots.widget().flush()

    def _draw(self, frame) -> None:
        """Write ``frame`` into the view, ask for a paint, and show its status."""
        started = time.perf_counter()
        self.viewport.update_frame(frame)
        if self._fit_on_next_frame:
            self._fit_on_next_frame = False
            self.viewport.set_camera_preset("fit")
        self.viewport.draw()
        self.last_render_time = time.perf_counter() - started
        self._rates.add(frame.index, started)
        self._show_health(frame)
        self._show_frame_status(frame)
        if self.timings_action.isChecked():  # drawn with the next paint
            self.viewport.set_timings(f"{self.frame_label.text()}\n{self.timing_label.text()}")
        if self.picked_node is not None:
            self._show_pick(self.picked_node, frame)
        if self.recorder is not None:
            self.viewport.render()  # the frame must be rendered before it is read back
            self.recorder.add(self.viewport.screenshot(str(self.recorder.png_path()), return_img=True),
                              self._record_clock(frame))
        self.session.shown(frame)  # the panels' readouts change now too: the window is composed once for all

    def _show_frame_status(self, frame) -> None:
        rates = self._rates
        playing = self.session.playing and rates.drawn > 0
        spec = self.session.spec
        clock = ""
        if spec is not None and spec.scene.mode == "dynamic":
            clock = "  " + simulated_time_text(frame.index, float(spec.scene.dt), rates.solved if playing else None)
        self.frame_label.setText(frame_number_text(frame) + clock + (
            f"  solved {rates.solved:.1f}/s, drawn {rates.drawn:.1f}/s" if playing else ""))
        if frame.report is None:
            self.timing_label.setText(f"render {_ms(self.last_render_time)} ms")
            return
        inverse = frame.report.inverse
        if inverse is not None:
            times = frame.report.times
            forward = sum(v for k, v in times.items() if k not in ("free_solve", "inverse_linearization",
                                                                    "inverse_qp"))
            self.timing_label.setText(
                f"ms: free solve {_ms(times.get('free_solve'))} | {inverse.linearizations} linearisation(s) "
                f"{_ms(times.get('inverse_linearization'))} | QP {_ms(inverse.qp_time)} | forward frames "
                f"{_ms(forward) if inverse.forward_frames else '-'} | render {_ms(self.last_render_time)}")
            return
        t = phase_times(frame.report, self.last_render_time)
        preconditioner = frame.report.preconditioner
        self.timing_label.setText(
            f"ms: assembly {_ms(t['assembly'])} | factorization {_ms(t['factorization'])} | "
            f"Newton {_ms(t['newton'])} | W {_ms(t['W'])} | constraint {_ms(t['constraint'])} | "
            f"render {_ms(t['render'])}" + ("" if preconditioner is None else
                                            f" | Krylov {preconditioner['cg_iterations']} it., factorization "
                                            f"{preconditioner['factorization_age']} old"))

    def _on_message(self, level: str, text: str) -> None:
        """A message of the session: info in the status bar; a warning or an error also in the warning label.
        A frame's own problems are shown from the frame itself (``_show_health``); an error that is not a
        frame's (a refused edit, a failed save) shows in the banner until its dialog or the next edit."""
        if level == "info":
            self.statusBar().showMessage(text, 5000)
            return
        self.warning_label.setText(f"last {level}: {text.splitlines()[0]}")
        self.warning_label.setToolTip(text)
        self.statusBar().showMessage(text.replace("\n", " "), 10000)
        if not re.match(r"frame \d+", text):  # a frame's problems come with the frame, drawn with it
            self._show_banner(level, text)

    def _show_banner(self, level: str, text: str, *, last_good: bool = True, index: int | None = None) -> None:
        """The banner over the view, coloured by ``level``; ``last_good`` adds that the last good state (frame
        ``index`` when given, the number the status bar shows) is shown."""
        set_style_sheet(self.banner, BANNER_STYLE.get(level, BANNER_STYLE["warning"]))
        shown = f"the last good state, frame {index}, is shown" if index is not None else "the last good state is shown"
        self.banner.setText(("⚠ " if level == "warning" else "✖ ") + text + (f"  ({shown})" if last_good else ""))
        self.banner.show()
        self.banner.raise_()  # above the view's native window

    def _show_health(self, frame) -> None:
        """The frame's problems (app.health) in the banner and the coloured health label; a sound frame
        hides the banner and shows "converged" in green."""
        self.problems = frame_problems(frame, self.session.spec)
        if frame.report is None:
            self._clear_health()
            return
        if not self.problems:
            self.health_label.setText("converged")
            set_style_sheet(self.health_label, HEALTH_STYLE["ok"])
            self._hide_banner()
            return
        level = "error" if any(p.level == "error" for p in self.problems) else "warning"
        kinds = {p.kind for p in self.problems}
        self.health_label.setText(next(HEALTH_TEXT[kind] for kind in HEALTH_TEXT if kind in kinds))
        set_style_sheet(self.health_label, HEALTH_STYLE[level])
        self.health_label.setToolTip("\n".join(p.text for p in self.problems))
        shown = "; ".join(p.text for p in self.problems[:BANNER_PROBLEMS])
        if len(self.problems) > BANNER_PROBLEMS:
            shown += f"; and {len(self.problems) - BANNER_PROBLEMS} more (hover the status)"
        self._show_banner(level, shown, last_good=level == "error", index=frame.index)

    def _clear_health(self) -> None:
        """No verdict to show (a new scene, a reset): the label empty and without its coloured box."""
        self.health_label.setText("")
        set_style_sheet(self.health_label, "")
        self.health_label.setToolTip("")

    def _hide_banner(self) -> None:
        self.banner.hide()

    def _on_node_picked(self, node: int, position) -> None:
        """A click on the body (or the start of a drag) selects ``node``: marked in the view, probed."""
        self.session.model.selected_node = int(node)
        self.viewport.mark_node(int(node))
        self._show_pick(int(node), self.session.latest_frame)

    def _show_pick(self, node: int, frame) -> None:
        """Ask the worker for the values at the selected node of ``frame`` (they arrive as ``last_probe``)."""
        if frame is None or node >= len(frame.x):
            return

        def show(probe) -> None:
            if self.session.model.selected_node == probe.node:
                self.last_probe = probe
                self.pick_label.setText("selected " + probe.text(self._units()))

        self.session.probe(node, show)

    def _on_node_hovered(self, node: int) -> None:
        if node < 0:
            self.hover_label.setText("")
            return

        self.session.probe(node, lambda probe: self.hover_label.setText(probe.text(self._units())))

    def _units(self) -> str | None:
        return self.session.spec.scene.units if self.session.spec is not None else None

    def edit_in_parameters(self, prefix: str) -> None:
        """Show the Parameters panel filtered to the keys under ``prefix`` (the Scene panel's button)."""
        dock = self.dock("parameters_dock")
        if dock is not None:
            dock.show()
            dock.raise_()
            dock.widget().filter.setText(prefix + ".")

    def dock(self, name: str):
        """The dock with this object name (``app.panels.DOCK_NAMES``), or None."""
        return next((d for d in self.docks if d.objectName() == name), None)

    def shortcut_text(self) -> str:
        """Every action with a shortcut, then the mouse bindings (the F1 dialog's text)."""
        rows = []
        for action in self.findChildren(QAction):
            keys = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts())
            if keys:
                rows.append((action.text().replace("&", "").rstrip("."), keys))
        lines = [f"{keys:<22} {text}" for text, keys in sorted(set(rows), key=lambda r: r[0].lower())]
        lines += ["", *MOUSE_BINDINGS]
        return "\n".join(lines)

    def show_shortcuts(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "Keyboard and mouse", "", QMessageBox.StandardButton.Ok,
                          self)
        box.setObjectName("shortcuts_dialog")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText(self.shortcut_text())
        box.setStyleSheet("QLabel { font-family: monospace; }")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # -- dialogs --------------------------------------------------------------------------------------
    def _start_dir(self) -> str:
        return str(self.session.path.parent) if self.session.path is not None else ""

    def _ask_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open scene or mesh", self._start_dir(), OPEN_FILTER)
        if path:
            self.open_path(path)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files
        for path in files:
            self.recent_menu.addAction(Path(path).name, lambda p=path: self.open_path(p)).setToolTip(path)
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def _save(self) -> None:
        if self.session.kind == "scene" and self.session.path is not None:
            self.save_scene(self.session.path)
        else:
            self._ask_save_as()

    def _ask_save_as(self) -> None:
        suggestion = str(self.session.path.with_suffix(".toml")) if self.session.path is not None else "scene.toml"
        path, _ = QFileDialog.getSaveFileName(self, "Save scene", suggestion, "Scenes (*.toml)")
        if path:
            self.save_scene(path)

    def _ask_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export frame", "frame.vtu", "VTK unstructured grid (*.vtu)")
        if path:
            self.export_frame(path)

    def _ask_screenshot(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save screenshot", "softsim.png", "PNG (*.png)")
        if path:
            self.save_screenshot(path)

    def _toggle_recording(self, checked: bool) -> None:
        if not checked:
            self.stop_recording()
            return
        folder = QFileDialog.getExistingDirectory(self, "Record frames into folder", self._start_dir())
        if folder:
            self.start_recording(folder)
        else:
            self.record_action.setChecked(False)

    def _ask_color_range(self) -> None:
        body = self.viewport.bodies.get("body")
        lo, hi = body.actor.mapper.scalar_range if body is not None else (0.0, 1.0)
        text, ok = QInputDialog.getText(self, "Fixed colour range", "min, max:", text=f"{lo:.6g}, {hi:.6g}")
        if not ok:
            return
        try:
            values = [float(v) for v in text.replace(";", ",").split(",")]
            if len(values) != 2:
                raise ValueError(f"give two numbers 'min, max', got {text!r}")
            self.set_color_range(tuple(values))
        except ValueError as error:
            self.show_error("Invalid colour range", str(error))

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.stop_recording()
        self.draws.discard()
        self.session.release_views()  # nothing reaches the widgets once they start to go
        self.session.shutdown()
        self.viewport.close()
        super().closeEvent(event)
