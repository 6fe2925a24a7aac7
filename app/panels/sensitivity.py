"""The Sensitivity panel: for the output chosen (a readout, or the probed node's displacement), its normalised
sensitivity to each parameter, d output / d parameter x parameter / output, as a bar chart that follows the
frames (docs/gradients.md).

The gradients are computed where the scene lives, by the :class:`app.runner.Gradients` command, never on the
GUI thread; one request is in flight at a time, and a frame that arrives meanwhile is asked about when the
answer comes (the chart follows the frames at the pace the gradients cost).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pyqtgraph as pg
from PyQt6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from softsim.app.runner import Gradients
from softsim.mechanics.sensitivity import default_parameters

logger = logging.getLogger(__name__)

__all__ = ["SensitivityPanel", "differentiable_outputs", "normalised", "short_label"]

#: readout quantities that have a gradient (mechanics.sensitivity.outputs)
_QUANTITIES = {"displacement", "cableLength", "force", "volumeGrowth", "cavityVolume", "pressure", "distance",
               "normalForce", "x", "y", "z"}


def differentiable_outputs(outputs: dict, selected_node: int | None) -> list[str]:
    """The output names of a frame's readouts that have a gradient, and the probed node's displacement."""
    names = [name for name in outputs if name.rpartition(".")[2].rstrip("0123456789") in _QUANTITIES
             and not name.endswith(("initialCavityVolume", ".limited", ".contacts"))]
    if selected_node is not None:
        names.append(f"node[{int(selected_node)}].displacement")
    return names


def normalised(derivative: float, parameter: float, output: float) -> float:
    """d output / d parameter x parameter / output (0 when the output is 0: no relative change defined)."""
    return derivative * parameter / output if output != 0.0 else 0.0


def short_label(key: str) -> str:
    """A parameter key as a bar label: ``body.finger.material.youngModulus`` -> ``finger youngModulus``."""
    parts = key.split(".")
    if parts[0] == "body" and len(parts) > 2:
        rest = [p for p in parts[2:] if p not in ("material", "cable", "cavity")]
        return f"{parts[1]} {' '.join(rest)}"
    return " ".join(parts[1:]) if parts[0] in ("scene", "obstacle") else key


class SensitivityPanel(QWidget):
    """Output chooser, Live switch, status line and the bar chart of normalised sensitivities."""

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sensitivity_panel")
        self.session = session
        self.output_box = QComboBox(self)
        self.output_box.setObjectName("sensitivity_output")
        self.output_box.setToolTip("The output whose sensitivities are shown (a readout, or node[i].displacement "
                                   "of the node picked in the view)")
        self.output_box.currentTextChanged.connect(lambda _text: self.request())
        self.live = QCheckBox("Live", self)
        self.live.setObjectName("sensitivity_live")
        self.live.setChecked(True)
        self.live.setToolTip("Recompute after every frame (one request at a time)")
        self.status = QLabel("No frame yet.", self)
        self.status.setObjectName("sensitivity_status")
        self.status.setWordWrap(True)
        self.plot = pg.PlotWidget(self)
        self.plot.setObjectName("sensitivity_plot")
        self.plot.setBackground("w")
        self.plot.setLabel("bottom", "d out / d p x p / out")
        self.plot.showGrid(x=True, y=False, alpha=0.3)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.6, width=[], brush="#1f77b4")
        self.plot.addItem(self.bars)
        top = QHBoxLayout()
        top.addWidget(QLabel("output", self))
        top.addWidget(self.output_box, 1)
        top.addWidget(self.live)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.plot, 1)
        self.parameters: list[str] = []
        #: the last answer: {key: normalised sensitivity} of ``self.shown_output`` at frame ``self.shown_frame``
        self.values: dict[str, float] = {}
        self.shown_output = ""
        self.shown_frame = -1
        self._pending = False
        self._again = False
        self._last_frame = None
        session.scene_opened.connect(self.reset)
        session.frame_shown.connect(self.update_frame)
        self.reset()

    def reset(self, _scene=None) -> None:
        """The parameters of ``session.spec`` (mechanics.sensitivity.default_parameters); no answer yet."""
        spec = self.session.spec
        self.parameters = default_parameters(spec) if spec is not None else []
        self.values, self.shown_output, self.shown_frame = {}, "", -1
        self.output_box.blockSignals(True)
        self.output_box.clear()
        self.output_box.blockSignals(False)
        self._draw()
        self.status.setText("No frame yet." if spec is None else "Waiting for a converged frame.")

    def update_frame(self, frame) -> None:
        if frame is None:
            return
        self._last_frame = frame
        names = differentiable_outputs(frame.outputs, self.session.model.selected_node)
        if names != [self.output_box.itemText(i) for i in range(self.output_box.count())]:
            current = self.output_box.currentText()
            self.output_box.blockSignals(True)
            self.output_box.clear()
            self.output_box.addItems(names)
            preferred = current if current in names else next(
                (n for n in names if n.endswith(".y") and not n.startswith("node[")), names[0] if names else "")
            self.output_box.setCurrentText(preferred)
            self.output_box.blockSignals(False)
        # hidden: no cost (a dock tabbed behind another is visible to Qt but shows nothing: its region is empty)
        if self.live.isChecked() and frame.report is not None and self.isVisible() \
                and not self.visibleRegion().isEmpty():
            self.request()

    def request(self) -> None:
        """Ask for the chosen output's gradients at the last frame (again when the answer comes, if one is in
        flight)."""
        output = self.output_box.currentText()
        if not output or not self.parameters or self._last_frame is None or self.session.runner is None:
            return
        if self._pending:
            self._again = True
            return
        self._pending, self._again = True, False
        self.session.send(Gradients((output,), tuple(self.parameters)), self._answer)

    def _answer(self, result, error) -> None:
        self._pending = False
        if error is not None:
            self.values = {}
            self.status.setText(f"No gradient: {error}")
        else:
            output = next(iter(result["values"]))
            value = result["outputs"][output]
            self.values = {key: normalised(d, result["parameters"][key], value)
                           for key, d in result["values"][output].items()}
            self.shown_output, self.shown_frame = output, int(result["frame"])
            top = max(self.values, key=lambda k: abs(self.values[k])) if self.values else ""
            self.status.setText(f"{output} = {value:.5g} at frame {self.shown_frame}; most sensitive to "
                                f"{short_label(top)} ({self.values.get(top, math.nan):+.3g})")
        self._draw()
        if self._again:
            self.request()

    def _draw(self) -> None:
        keys = list(self.values)
        values = np.array([self.values[k] for k in keys], dtype=float)
        positions = np.arange(len(keys), dtype=float)
        self.bars.setOpts(x0=np.minimum(values, 0.0), y=positions, width=np.abs(values), height=0.6)
        self.plot.getAxis("left").setTicks([[(float(i), short_label(k)) for i, k in enumerate(keys)]])
        if keys:
            self.plot.setYRange(-0.6, len(keys) - 0.4, padding=0)
