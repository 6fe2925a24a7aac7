"""The Plots panel (pyqtgraph): Newton residual and constraint error per iteration of the last frame (log
scale), actuator displacements, actuator forces and effector positions over a rolling window of frames (in
three tabs); each plot exports as CSV. Clicking a legend entry hides or shows its curve.
"""

from __future__ import annotations

import csv
import logging
import math
from collections import deque
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from softsim.app.pacing import LatestPacer
from softsim.app.panels.actuators import GEOMETRIC_QUANTITIES, VALUE_QUANTITIES
from softsim.app.status_labels import set_style_sheet
from softsim.mechanics.scene import actuators
from softsim.mechanics.units import with_unit

logger = logging.getLogger(__name__)

__all__ = ["SeriesPlot", "PlotsPanel", "DEFAULT_HISTORY", "frame_summary"]

DEFAULT_HISTORY = 500
#: the plots are redrawn at most this often (seconds) while frames arrive, and at most every
#: REDRAW_COST_FACTOR times the last redraw's cost: a plot the user reads need not follow 100 frames a second
REDRAW_INTERVAL = 0.25
REDRAW_COST_FACTOR = 5.0
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


class DecadeAxis(pg.AxisItem):
    """A log axis with ticks and labels on whole decades only (at most six labels): pyqtgraph's own log ticks
    put 2e-7, 3e-7, ... all at one level, which a short plot draws on top of each other."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph API)
        if not self.logMode:
            return super().tickValues(minVal, maxVal, size)
        low, high = math.ceil(minVal), math.floor(maxVal)
        if high < low:
            return []
        step = max(1, math.ceil((high - low + 1) / 6))
        return [(float(step), [float(v) for v in range(low, high + 1, step)])]


class SeriesPlot(QWidget):
    """One plot of named curves over a shared x; ``export_csv`` writes exactly the plotted data.

    On a log axis the non-positive and non-finite values are left out of the drawing (they stay in the CSV).
    """

    def __init__(self, title: str, x_name: str, y_label: str, *, log_y: bool, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = title
        self.x_name = x_name
        self.log_y = log_y
        self.x = np.zeros(0)
        self.series: dict[str, np.ndarray] = {}
        self._curves: dict[str, pg.PlotDataItem] = {}
        self.plot = pg.PlotWidget(self, axisItems={"left": DecadeAxis("left")} if log_y else None)
        self.plot.setBackground("w")
        self.plot.setLabel("bottom", x_name)
        self.plot.setLabel("left", y_label)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.plot.setLogMode(x=False, y=log_y)
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).enableAutoSIPrefix(False)
        self.plot.setMinimumHeight(70)
        self.legend = self.plot.addLegend(offset=(-10, 10))
        self.empty_text = pg.TextItem("no data yet", color="#888888", anchor=(0.5, 0.5))
        view = self.plot.getPlotItem().getViewBox()
        self.empty_text.setParentItem(view)
        view.sigResized.connect(lambda _view: self._place_empty_text())
        self.title_label = QLabel(f"<b>{title}</b>", self)
        self.export_button = QPushButton("CSV...", self)
        self.export_button.setToolTip(f"Write the data of '{title}' to a CSV file")
        self.export_button.clicked.connect(self._export_dialog)
        self.status = QLabel(self)
        self.status.setStyleSheet("color: gray;")
        # a long note must not widen the dock column (and narrow the 3D view): it is cut, whole in the tooltip
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar = QHBoxLayout()  # one row above the plot: a short plot keeps its height for the curves
        bar.setSpacing(6)  # else it takes the column's spacing, 0: the note would touch the title
        bar.addWidget(self.title_label)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.plot, 1)

    def set_data(self, x, series: dict[str, np.ndarray]) -> None:
        """Replace the plotted data: ``x`` (k,), ``series`` name -> (k,) values (NaN = no value)."""
        self.x = np.asarray(x, dtype=np.float64)
        self.series = {name: np.asarray(y, dtype=np.float64) for name, y in series.items()}
        for name in [n for n in self._curves if n not in self.series]:
            self.plot.removeItem(self._curves.pop(name))
            self.legend.removeItem(name)
        hidden = 0
        for i, (name, y) in enumerate(self.series.items()):
            keep = np.isfinite(y) & (y > 0.0) if self.log_y else np.isfinite(y)
            hidden += int(np.count_nonzero(~keep & ~np.isnan(y)))
            curve = self._curves.get(name)
            if curve is None:
                curve = self.plot.plot(name=name, pen=pg.mkPen(_COLOURS[i % len(_COLOURS)], width=2),
                                       symbol="o" if self.log_y else None, symbolSize=4)
                self._curves[name] = curve
            curve.setData(self.x[keep], y[keep])
        empty = not any(np.isfinite(y).any() for y in self.series.values()) or self.x.size == 0
        self._show_empty(empty)
        if empty:  # no meaningless ticks (a log axis would show 10^0 .. 10^1 of nothing)
            self.plot.setXRange(0.0, 1.0, padding=0.0)
            self.plot.setYRange(0.0, 1.0, padding=0.0)
        else:
            if self.x.size == 1:  # one point: a unit-wide range around it instead of pyqtgraph's +/- 0.5 %
                self.plot.setXRange(self.x[0] - 1.0, self.x[0] + 1.0, padding=0.0)
            else:
                self.plot.enableAutoRange(axis="x")
            self._y_range()
        set_style_sheet(self.status, "color: gray;")
        # short enough for the bar beside the title and the CSV button of a 1280 px window's dock; the whole
        # sentence is the tooltip
        self.status.setText(f"{hidden} hidden (<= 0)" if hidden else "")
        self.status.setToolTip(f"{hidden} value(s) <= 0 are not drawn on the log axis" if hidden else "")

    def _y_range(self) -> None:
        """Automatic, but a log axis spans at least two decades (one value, or values within a few percent of
        each other, would get ticks packed into a sliver: 3.01e-9, 3.02e-9, ...)."""
        if not self.log_y:
            self.plot.enableAutoRange(axis="y")
            return
        values = np.concatenate([y[np.isfinite(y) & (y > 0)] for y in self.series.values()] or [np.zeros(0)])
        if values.size == 0:
            return
        low, high = np.log10(values.min()), np.log10(values.max())
        if high - low < 2.0:
            middle = 0.5 * (low + high)
            self.plot.setYRange(middle - 1.0, middle + 1.0, padding=0.05)
        else:
            self.plot.enableAutoRange(axis="y")

    def clear(self) -> None:
        """No curves; the axes forget the previous data's range (a new scene starts from nothing)."""
        self.set_data(np.zeros(0), {})

    def _show_empty(self, empty: bool) -> None:
        """Show "no data yet" in the middle of the plot and hide the tick labels while there is nothing."""
        self.empty_text.setVisible(empty)
        self._place_empty_text()
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setStyle(showValues=not empty)

    def _place_empty_text(self) -> None:
        self.empty_text.setPos(self.plot.getPlotItem().getViewBox().boundingRect().center())

    def export_csv(self, path: str | Path) -> Path:
        """Write ``x_name, <series names...>`` and one row per x value; an absent value is an empty cell."""
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([self.x_name, *self.series])
            for row, x in enumerate(self.x):
                cells = [_cell(x)] + [_cell(y[row]) for y in self.series.values()]
                writer.writerow(cells)
        return path

    def _export_dialog(self) -> None:
        default = self.title.lower().replace(" ", "_") + ".csv"
        path, _filter = QFileDialog.getSaveFileName(self, f"Export {self.title}", default, "CSV files (*.csv)")
        if not path:
            return
        try:
            self.export_csv(path)
        except OSError as error:
            self.status.setText(f"Cannot write {path}: {error.strerror or error}")
            self.status.setStyleSheet("color: #c11;")
            return
        self.status.setStyleSheet("color: gray;")
        self.status.setText(f"Wrote {Path(path).name}")


def _cell(value: float) -> str:
    value = float(value)
    if math.isnan(value):
        return ""
    return repr(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


class PlotsPanel(QWidget):
    """Four plots fed by the session: the time plots take a sample of every frame received (``frame_ready``)
    and keep the last ``history`` frames (a frame with a smaller index than the last one, i.e. a reset or a new
    scene, starts the history again); they are redrawn with the frames the window draws (``frame_shown``)."""

    def __init__(self, session, parent: QWidget | None = None, *, history: int = DEFAULT_HISTORY) -> None:
        super().__init__(parent)
        self.setObjectName("plots_panel")
        self.session = session
        self.summary = QLabel("No frame yet.", self)
        self.summary.setObjectName("frame_summary")
        self.summary.setWordWrap(True)
        self.history_spin = QSpinBox(self)
        self.history_spin.setRange(10, 100_000)
        self.history_spin.setValue(history)
        self.history_spin.setSuffix(" frames")
        self.history_spin.setToolTip("How many past frames the time plots keep")
        self.history_spin.valueChanged.connect(self.set_history)
        self.newton_plot = SeriesPlot("Newton residual", "iteration", "|R|", log_y=True)
        self.constraint_plot = SeriesPlot("Constraint error", "iteration", "error", log_y=True)
        self.actuator_plot = SeriesPlot("Actuator displacements", "frame", "displacement / volume growth",
                                        log_y=False)
        self.force_plot = SeriesPlot("Actuator forces", "frame", "force / pressure", log_y=False)
        self.effector_plot = SeriesPlot("Effectors", "frame", "position", log_y=False)
        self.plots = {"newton": self.newton_plot, "constraint": self.constraint_plot,
                      "actuators": self.actuator_plot, "forces": self.force_plot, "effectors": self.effector_plot}
        self.tabs = QTabWidget(self)
        for title, members in (("Convergence", (self.newton_plot, self.constraint_plot)),
                               ("Actuators", (self.actuator_plot, self.force_plot)),
                               ("Effectors", (self.effector_plot,))):
            splitter = QSplitter(Qt.Orientation.Vertical, self.tabs)
            for plot in members:
                splitter.addWidget(plot)
            self.tabs.addTab(splitter, title)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(QLabel("history", self))
        top.addWidget(self.history_spin)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        self.setMinimumHeight(200)
        self.history: deque[tuple[int, dict[str, float]]] = deque(maxlen=history)
        self._actuator_keys: list[str] = []
        self._force_keys: list[str] = []
        self._effector_names: list[str] = []
        # a redraw that is due runs with the frame drawn; only when no frame is drawn for REDRAW_INTERVAL more does
        # the timer redraw on its own (a redraw apart from the 3D view's costs one more composition of the window)
        self._redraws = LatestPacer(self._redraw, factor=REDRAW_COST_FACTOR, min_interval=REDRAW_INTERVAL,
                                    grace=REDRAW_INTERVAL, parent=self)
        session.scene_opened.connect(self.reset)
        session.frame_ready.connect(self.take)
        session.frame_shown.connect(self._redraws.offer)
        self.reset()

    def set_history(self, frames: int) -> None:
        self.history = deque(self.history, maxlen=int(frames))
        self._update_time_plots()

    def reset(self, _scene=None) -> None:
        """Forget the history and take the actuator and effector names of ``session.spec``."""
        self.history.clear()
        self._redraws.discard()
        self._actuator_keys, self._force_keys, self._effector_names = [], [], []
        spec = self.session.spec
        if spec is not None:
            for actuator in actuators(spec):
                for quantity in VALUE_QUANTITIES[actuator.kind]:
                    keys = self._actuator_keys if quantity in GEOMETRIC_QUANTITIES else self._force_keys
                    keys.append(f"{actuator.item.name}.{quantity}")
            self._effector_names = [e.name for body in spec.bodies for e in body.effectors]
        for plot in self.plots.values():
            plot.clear()
        if spec is not None:
            units, dynamic = spec.scene.units, spec.scene.mode == "dynamic"

            def label(*parts):
                return " / ".join(with_unit(text, quantity, units) for text, quantity in parts)

            self.newton_plot.plot.setLabel("left", "|dv|" if dynamic else label(("|R|", "force")))
            self.constraint_plot.plot.setLabel("left", label(("error", "length")))
            self.actuator_plot.plot.setLabel("left", label(("displacement", "length"), ("volume growth", "volume")))
            self.force_plot.plot.setLabel("left", label(("force", "force"), ("pressure", "pressure")))
            self.effector_plot.plot.setLabel("left", label(("position", "length")))
        self.summary.setText("No frame yet.")

    def update_frame(self, frame) -> None:
        """Take one frame: one sample of the time plots now; the plots are redrawn (per-iteration plots from the
        newest report) at once if the last redraw is at least ``REDRAW_INTERVAL`` (or REDRAW_COST_FACTOR times
        its cost) ago, else by a timer (app.pacing): while a scene plays the plots cost a bounded share of the GUI
        thread."""
        self.take(frame)
        self._redraws.offer(frame)

    def take(self, frame) -> None:
        """One sample of the time plots from ``frame`` (drawn at the next redraw)."""
        if self.history and frame.index < self.history[-1][0]:
            self.history.clear()
        if self.history and frame.index == self.history[-1][0]:
            self.history[-1] = (frame.index, dict(frame.outputs))
        else:
            self.history.append((frame.index, dict(frame.outputs)))

    def flush(self) -> None:
        """Redraw the plots with every frame taken so far (the pending redraw is done now)."""
        self._redraws.flush()

    def _redraw(self, frame) -> None:
        self._update_time_plots()
        report = frame.report
        if report is None:
            return
        norms = report.residual_norms
        if norms.size:
            self.newton_plot.set_data(np.arange(norms.size), {"residual_norm": norms})
        constraint = report.constraint
        if constraint is not None:
            errors = np.asarray(constraint.error_history, dtype=np.float64)
            self.constraint_plot.set_data(np.arange(1, errors.size + 1), {"error": errors})
        else:
            self.constraint_plot.clear()
        self.summary.setText(frame_summary(frame, short=True))
        self.summary.setToolTip(frame_summary(frame))

    def _update_time_plots(self) -> None:
        frames = np.array([index for index, _ in self.history], dtype=np.float64)
        effector_keys = []
        for _index, outputs in self.history:
            for key in outputs:
                if key.split(".", 1)[0] in self._effector_names and key not in effector_keys:
                    effector_keys.append(key)
        for plot, keys in ((self.actuator_plot, self._actuator_keys), (self.force_plot, self._force_keys),
                           (self.effector_plot, effector_keys)):
            series = {key: np.array([outputs.get(key, np.nan) for _, outputs in self.history]) for key in keys}
            plot.set_data(frames, series)

    def export_csv(self, plot: str, path: str | Path) -> Path:
        """Write the data of one plot (``newton``, ``constraint``, ``actuators``, ``forces``, ``effectors``) to
        ``path``."""
        self.flush()
        try:
            return self.plots[plot].export_csv(path)
        except KeyError:
            raise KeyError(f"no plot {plot!r}; plots: {', '.join(self.plots)}") from None


#: the frame's status (FrameReport.status) as the Plots header starts with it: the same verdict as the banner
STATUS_WORDS = {"ok": "converged", "limited": "converged, an actuator at its limit",
                "not_converged": "NOT CONVERGED", "diverged": "FAILED"}
#: the header shows at most this many characters (the whole text is in its tooltip)
SUMMARY_CHARACTERS = 150


def frame_summary(frame, *, short: bool = False) -> str:
    """One line about the frame's solves, starting with the frame's own verdict (``report.status``, the one the
    banner and the health label show); ``short`` leaves out the reasons (they go into the tooltip) and is cut
    to SUMMARY_CHARACTERS."""
    report = frame.report
    status = getattr(report, "status", "ok" if report.ran else "diverged")
    head = f"frame {frame.index}: {STATUS_WORDS.get(status, status)}"
    parts = [head + ("" if report.ran or short else f" ({report.message})")]
    solve = report.dynamic if report.dynamic is not None else report.newton
    if solve is not None:
        state = "converged" if solve.converged else ("diverged" if solve.diverged else "not converged")
        reason = getattr(solve, "reason", "") or getattr(solve, "message", "")
        name = "Newton" if report.dynamic is not None or report.equilibrium is None else "free Newton"
        parts.append(f"{name} {report.iterations} it, {state}" + (f" ({reason})" if reason and not short else ""))
    equilibrium = report.equilibrium
    if equilibrium is not None:
        state = "converged" if equilibrium.converged else "not converged"
        reached = "" if equilibrium.reached >= 1.0 else f", reached {100.0 * equilibrium.reached:.0f} %"
        parts.append(f"equilibrium {equilibrium.steps} steps{reached}, {state}"
                     + (f" ({equilibrium.reason})" if equilibrium.reason and not short else ""))
    constraint = report.constraint
    if constraint is not None:
        state = "converged" if constraint.converged else "not converged"
        parts.append(f"constraints {constraint.iterations} it, error {constraint.error:.3g}, {state}")
    inverse = report.inverse
    if inverse is not None:
        state = "converged" if inverse.converged else "not converged"
        parts.append(f"inverse {inverse.linearizations} QP(s), goal {inverse.goal_distance:.3g} away, {state}"
                     + (f" ({inverse.message})" if inverse.message and not short else ""))
    parts.append(f"{1e3 * sum(report.times.values()):.1f} ms")
    text = " | ".join(parts)
    if short and len(text) > SUMMARY_CHARACTERS:
        text = text[:SUMMARY_CHARACTERS - 1].rstrip() + "…"
    return text
