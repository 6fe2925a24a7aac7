"""The Actuators panel: a slider and a spin box per cable and cavity, live readouts of every actuator and
effector output.

A slider edit is sent with ``session.set_parameter("body.<body>.cable.<name>.value", v)``, at most
``MAX_EDITS_PER_SECOND`` times a second (the first move at once, then the latest value at each tick), so a
drag never floods the worker with edits it would apply one by one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from PyQt6.QtCore import QObject, Qt, QTimer
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from softsim.app.colour_range import readout_floor, without_round_off
from softsim.app.panels.schema_info import format_real
from softsim.mechanics.scene import actuators, get_value
from softsim.mechanics.scene.schema import CableSpec, declarations
from softsim.mechanics.units import output_quantity, unit_label, with_unit

logger = logging.getLogger(__name__)

__all__ = ["ActuatorRange", "actuator_range", "Throttle", "ActuatorControl", "ActuatorsPanel",
           "MAX_EDITS_PER_SECOND", "SLIDER_STEPS", "inverse_active"]

MAX_EDITS_PER_SECOND = 30


def inverse_active(spec) -> bool:
    """True when ``spec`` solves the inverse problem (a ``[solver.inverse]`` that is active)."""
    return spec is not None and spec.solver.inverse is not None and spec.solver.inverse.active
#: The panel asks for the height of its controls up to this many pixels (then it scrolls).
MAX_MIN_HEIGHT = 200
SLIDER_STEPS = 1000
#: Default displacement range of a cable without maxPositiveDisp/maxNegativeDisp: this share of its length.
CABLE_DISPLACEMENT_SHARE = 0.3
#: Default pressure range of a cavity without min/maxPressure: this share of the Young's modulus.
CAVITY_PRESSURE_SHARE = 0.1
#: Outputs shown as time curves and slider readouts per actuator kind (the others are readouts only).
VALUE_QUANTITIES = {"cable": ("displacement", "force"), "cavity": ("pressure", "volumeGrowth")}
#: The geometric quantities (plotted apart from the forces and pressures: other units, other scales).
GEOMETRIC_QUANTITIES = ("displacement", "volumeGrowth")


@dataclass(frozen=True)
class ActuatorRange:
    """Slider range ``[lo, hi]`` (spin box accepts ``[hard_lo, hard_hi]``) and where it comes from."""

    lo: float
    hi: float
    hard_lo: float
    hard_hi: float
    source: str


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def force_scale(young_modulus: float, points: np.ndarray) -> float:
    """A force that bends a slender body of this size by about its length: ``E h^4 / L^2`` with ``h`` the
    smallest and ``L`` the largest bounding-box extent of ``points`` (n, 3) (beam: ``F = 3 E I d / L^3``)."""
    extent = np.ptp(np.asarray(points, dtype=np.float64), axis=0)
    h, length = float(max(extent.min(), 1e-12)), float(max(extent.max(), 1e-12))
    return young_modulus * h**4 / length**2


#: the rate limit of each value type: (key, quantity it changes by)
_RATE_KEYS = {("cable", "displacement"): "maxDispVariation", ("cavity", "pressure"): "maxPressureVariation",
              ("cavity", "volumeGrowth"): "maxVolumeGrowthVariation"}


def rate_limit_text(kind: str, item, unit: str) -> str:
    """``"; at most 5 kPa per frame (maxPressureVariation)"`` when the actuator's value type has a rate limit
    set (the value then reaches a new target over several frames: 20 of 30 kPa after 4 frames is the ramp,
    not a bound), else ``""``."""
    key = _RATE_KEYS.get((kind, item.valueType))
    rate = getattr(item, key, None) if key is not None else None
    return "" if rate is None else f"; at most {rate:.4g} {unit} per frame ({key})"


def actuator_range(kind: str, item, *, rest_outputs: dict[str, float], young_modulus: float,
                   points: np.ndarray) -> ActuatorRange:
    """The value range of a cable (``kind = "cable"``) or cavity spec ``item`` for its current valueType.

    Bounds set in the scene are used as they are (maxPositiveDisp/maxNegativeDisp for a displacement,
    minForce/maxForce for a force, min/maxPressure, min/maxVolumeGrowth). Unset bounds get a default from the
    geometry: +/- 30 % of the cable's rest length (0 as lower end when minForce >= 0 keeps the cable from
    pushing), ``[0, E h^4/L^2]`` for a force, ``[0, 0.1 E]`` for a pressure, ``[0, V0]`` for a volume growth.
    ``rest_outputs`` are the frame outputs at rest (``NAME.cableLength``, ``NAME.initialCavityVolume``).
    """
    name = item.name
    big = 1e12
    if kind == "cable" and item.valueType == "displacement":
        length = item.cableInitialLength
        if length is None:
            length = rest_outputs.get(f"{name}.cableLength", 0.0) + rest_outputs.get(f"{name}.displacement", 0.0)
        half = CABLE_DISPLACEMENT_SHARE * length if length > 0 else 1.0
        sources = []
        if item.maxPositiveDisp is not None:
            hi = item.maxPositiveDisp
            sources.append("maxPositiveDisp")
        else:
            hi = half
        if item.maxNegativeDisp is not None:
            lo = -item.maxNegativeDisp
            sources.append("maxNegativeDisp")
        else:
            lo = 0.0 if item.minForce is not None and item.minForce >= 0 else -half
        default = f"default: {CABLE_DISPLACEMENT_SHARE:.0%} of the cable length {length:.4g}"
        source = ", ".join(sources) if len(sources) == 2 else ", ".join([*sources, default])
        hard_hi = hi if item.maxPositiveDisp is not None else (length if length > 0 else big)
        hard_lo = lo if item.maxNegativeDisp is not None else -(length if length > 0 else big)
        return ActuatorRange(lo, hi, hard_lo, hard_hi, source)
    if kind == "cable":
        low_key, high_key, low, high = "minForce", "maxForce", item.minForce, item.maxForce
        default_lo, default_hi = 0.0, force_scale(young_modulus, points)
        default_text = "default: 0 to E h^4 / L^2 of the body"
    elif item.valueType == "pressure":
        low_key, high_key, low, high = "minPressure", "maxPressure", item.minPressure, item.maxPressure
        default_lo, default_hi = 0.0, CAVITY_PRESSURE_SHARE * young_modulus
        default_text = f"default: 0 to {CAVITY_PRESSURE_SHARE:g} E"
    else:
        low_key, high_key, low, high = ("minVolumeGrowth", "maxVolumeGrowth", item.minVolumeGrowth,
                                        item.maxVolumeGrowth)
        default_lo = 0.0
        default_hi = rest_outputs.get(f"{name}.initialCavityVolume", 0.0) or 1.0
        default_text = "default: 0 to the rest volume"
    lo = low if _finite(low) else default_lo
    hi = high if _finite(high) else default_hi
    if hi <= lo:  # e.g. a minForce above the default upper end
        hi = lo + (abs(default_hi) or abs(lo) or 1.0)
    sources = [key for key, value in ((low_key, low), (high_key, high)) if _finite(value)]
    source = ", ".join(sources) if len(sources) == 2 else ", ".join([*sources, default_text])
    hard_lo = low if _finite(low) else -big
    hard_hi = high if _finite(high) else big
    return ActuatorRange(lo, hi, hard_lo, hard_hi, source)

#: the quantity of an actuator's value by its valueType, from the declaration of ``value``
_VALUE_QUANTITIES = next(d for d in declarations(CableSpec) if d.key == "value").unit.quantities


class Throttle(QObject):
    """Sends at most one value per ``interval_ms``: the first at once, then the newest pending one per tick."""

    _NOTHING = object()

    def __init__(self, send, interval_ms: int = 1000 // MAX_EDITS_PER_SECOND, parent: QObject | None = None):
        super().__init__(parent)
        self._send = send
        self._pending = self._NOTHING
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    @property
    def pending(self) -> bool:
        return self._pending is not self._NOTHING

    def push(self, value) -> None:
        self._pending = value
        if not self._timer.isActive():
            self._flush()
            self._timer.start()

    def flush(self) -> None:
        """Send the pending value now (e.g. when the slider is released)."""
        if self.pending:
            self._flush()

    def _tick(self) -> None:
        if self.pending:
            self._flush()
            self._timer.start()

    def _flush(self) -> None:
        value, self._pending = self._pending, self._NOTHING
        self._send(value)


class ActuatorControl(QGroupBox):
    """One cable or cavity: value type, slider + spin box over its range, and readouts of its outputs."""

    def __init__(self, session, body_name: str, kind: str, index: int, *, rest_outputs: dict[str, float],
                 young_modulus: float, points: np.ndarray, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.kind = kind
        self._index = index
        self._body_name = body_name
        item = self._item()
        self.name = item.name
        self.prefix = f"body.{body_name}.{kind}.{self.name}"
        self.value_path = f"{self.prefix}.value"
        self._rest_outputs = rest_outputs
        self._young_modulus = young_modulus
        self._points = points
        self.setTitle(f"{kind} {self.name}")
        self.setObjectName(f"actuator:{self.name}")

        self.value_type = QComboBox(self)
        self.value_type.addItems(["displacement", "force"] if kind == "cable" else ["pressure", "volumeGrowth"])
        self.value_type.setToolTip(f"{self.prefix}.valueType: what the slider imposes")
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setMinimumWidth(90)
        self.spin = QDoubleSpinBox(self)
        self.spin.setKeyboardTracking(False)
        self.spin.setMinimumWidth(90)
        self.spin.setMaximumWidth(150)
        self.range_label = QLabel(self)
        self.range_label.setWordWrap(True)
        self.range_label.setStyleSheet("color: gray;")
        self.error_label = QLabel(self)
        self.error_label.setStyleSheet("color: #c11;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        self.readouts: dict[str, QLabel] = {}
        self._readout_form = QFormLayout()
        self._readout_form.setContentsMargins(0, 0, 0, 0)

        top = QHBoxLayout()
        top.addWidget(QLabel("value type", self))
        top.addWidget(self.value_type)
        top.addStretch(1)
        values = QHBoxLayout()
        values.addWidget(self.slider, 1)
        values.addWidget(self.spin)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(values)
        layout.addWidget(self.range_label)
        layout.addWidget(self.error_label)
        layout.addLayout(self._readout_form)

        self.throttle = Throttle(self._send, parent=self)
        self.range = None
        self.inverse = False
        self.sync_from_spec()
        self.slider.valueChanged.connect(self._slider_moved)
        self.slider.sliderReleased.connect(self.throttle.flush)
        self.spin.valueChanged.connect(self._spin_changed)
        self.value_type.currentTextChanged.connect(self._type_changed)

    # -- state -----------------------------------------------------------------------------------------
    def _item(self):
        body = next(b for b in self.session.spec.bodies if b.name == self._body_name)
        return (body.cables if self.kind == "cable" else body.cavities)[self._index]

    def set_inverse(self, inverse: bool) -> None:
        """Inverse mode: the inverse model finds the value; the controls show it and cannot be edited."""
        self.inverse = inverse
        for widget in (self.value_type, self.slider, self.spin):
            widget.setEnabled(not inverse)
        self.setTitle(f"{self.kind} {self.name}" + (" (found by the inverse model)" if inverse else ""))
        found = "displacement" if self.kind == "cable" else "volumeGrowth"
        tip = (f"inverse mode: the {found} the inverse model found; its limits bound it" if inverse else
               f"{self.value_path}: the imposed value")
        self.spin.setToolTip(tip)

    def sync_from_spec(self) -> None:
        """Show the value type, range and value of ``session.spec`` (not while the user drags)."""
        item = self._item()
        self._set_blocked(self.value_type, lambda: self.value_type.setCurrentText(item.valueType))
        self.range = actuator_range(self.kind, item, rest_outputs=self._rest_outputs,
                                    young_modulus=self._young_modulus, points=self._points)
        r = self.range
        self._set_blocked(self.spin, lambda: self.spin.setRange(r.hard_lo, r.hard_hi))
        step = (r.hi - r.lo) / 100.0
        self.spin.setSingleStep(step)
        self.spin.setDecimals(max(2, min(10, 3 - int(math.floor(math.log10(step))) if step > 0 else 3)))
        unit = unit_label(_VALUE_QUANTITIES[item.valueType], self.session.spec.scene.units)
        self.range_label.setText(f"{item.valueType} in [{r.lo:.4g}, {r.hi:.4g}] {unit} ({r.source})"
                                 + rate_limit_text(self.kind, item, unit))
        self.slider.setToolTip(f"{self.value_path}: {item.valueType}, slider range "
                               f"[{format_real(r.lo)}, {format_real(r.hi)}]")
        if self.slider.isSliderDown() or self.throttle.pending:
            return
        self._show_value(float(item.value))

    def _show_value(self, value: float) -> None:
        r = self.range
        if value < r.lo or value > r.hi:  # a value typed beyond the default range widens the slider
            self.range = ActuatorRange(min(r.lo, value), max(r.hi, value), r.hard_lo, r.hard_hi, r.source)
            r = self.range
        self._set_blocked(self.spin, lambda: self.spin.setValue(value))
        position = round((value - r.lo) / (r.hi - r.lo) * SLIDER_STEPS) if r.hi > r.lo else 0
        self._set_blocked(self.slider, lambda: self.slider.setValue(int(position)))

    @staticmethod
    def _set_blocked(widget, action) -> None:
        widget.blockSignals(True)
        try:
            action()
        finally:
            widget.blockSignals(False)

    def slider_value(self, position: int | None = None) -> float:
        """The actuator value of a slider position (default: the current one), rounded to a tenth of a slider
        step (the saved scene then reads ``value = 19.41``)."""
        position = self.slider.value() if position is None else position
        step = (self.range.hi - self.range.lo) / SLIDER_STEPS
        value = self.range.lo + step * position
        if step > 0 and math.isfinite(step):  # to the slider's resolution: 19.41, not 19.410133681490404
            value = round(value, 1 - math.floor(math.log10(step)))
        return value

    # -- edits -----------------------------------------------------------------------------------------
    def _slider_moved(self, position: int) -> None:
        value = self.slider_value(position)
        self._set_blocked(self.spin, lambda: self.spin.setValue(value))
        self.throttle.push(value)

    def _spin_changed(self, value: float) -> None:
        self._show_value(value)
        self.throttle.push(value)

    def _send(self, value: float) -> None:
        error = self.session.set_parameter(self.value_path, float(value))
        self._show_error(error)

    def _type_changed(self, value_type: str) -> None:
        error = self.session.set_parameter(f"{self.prefix}.valueType", value_type)
        self._show_error(error)
        self.sync_from_spec()

    def _show_error(self, error: str | None) -> None:
        self.error_label.setVisible(error is not None)
        self.error_label.setText(error or "")

    # -- readouts --------------------------------------------------------------------------------------
    def update_readouts(self, outputs: dict[str, float], units: str = "SI", floors=None) -> None:
        update_readouts(self, self._readout_form, self.readouts, self.name, outputs, units, floors)
        if self.inverse:  # the slider shows what the inverse model found (in the slider's value type when it can)
            found = outputs.get(f"{self.name}.{self._item().valueType}")
            if found is not None:
                self._show_value(float(found))


def update_readouts(owner: QWidget, form: QFormLayout, labels: dict[str, QLabel], name: str,
                    outputs: dict[str, float], units: str = "SI", floors: dict[str, float] | None = None) -> None:
    """Show every ``name.QUANTITY`` of ``outputs`` in ``form`` (rows created on first sight), each labelled with
    its unit in the scene's unit system (``force [mN]``); a value within its quantity's noise floor
    (``floors``: quantity -> floor, app.colour_range.readout_floor) reads 0."""
    prefix = name + "."
    floors = floors or {}
    for key, value in outputs.items():
        if not key.startswith(prefix):
            continue
        label = labels.get(key)
        if label is None:
            label = QLabel(owner)
            label.setObjectName(f"readout:{key}")
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            quantity = key[len(prefix):]
            form.addRow(with_unit(quantity, output_quantity(quantity), units), label)
            labels[key] = label
        label.setText(f"{without_round_off(value, floors.get(output_quantity(key[len(prefix):]), 0.0)):.6g}")


#: the slider range of a rigid frame's angle [degrees] (the spin box accepts any angle)
FRAME_ANGLE_RANGE = (-180.0, 180.0)


def rotating_regions(spec) -> list[tuple[str, int]]:
    """``(body name, index)`` of every fixed region whose rotation is set (``angle``, ``axis`` or ``center`` not
    at its default): a rigid frame on the body's nodes, a servo arm (docs/scene-format.md)."""
    from softsim.mechanics.scene.schema import FixedSpec, defaults

    default = defaults(FixedSpec, {"angle", "axis", "center"})
    return [(body.name, i) for body in spec.bodies for i, region in enumerate(body.fixed)
            if any(getattr(region, key) != value for key, value in default.items())]


class FrameControl(QGroupBox):
    """The angle of a fixed region's rigid frame (``body.NAME.fixed[i].angle``, degrees): a slider over
    [-180, 180] and a spin box, sent like an actuator value."""

    def __init__(self, session, body_name: str, index: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.path = f"body.{body_name}.fixed[{index}].angle"
        self.name = f"{body_name}.fixed[{index}]"
        self.setTitle(f"rigid frame {self.name}")
        self.setObjectName(f"frame:{self.name}")
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setMinimumWidth(90)
        self.spin = QDoubleSpinBox(self)
        self.spin.setKeyboardTracking(False)
        self.spin.setRange(-1e6, 1e6)
        self.spin.setDecimals(2)
        self.spin.setSingleStep(1.0)
        self.spin.setMaximumWidth(150)
        self.error_label = QLabel(self)
        self.error_label.setStyleSheet("color: #c11;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        values = QHBoxLayout()
        values.addWidget(self.slider, 1)
        values.addWidget(self.spin)
        layout = QVBoxLayout(self)
        layout.addLayout(values)
        self.axis_label = QLabel(self)
        self.axis_label.setWordWrap(True)
        self.axis_label.setStyleSheet("color: gray;")
        layout.addWidget(self.axis_label)
        layout.addWidget(self.error_label)
        tip = f"{self.path}: the region's nodes turn by this angle (degrees) about its axis through its center"
        self.slider.setToolTip(tip)
        self.spin.setToolTip(tip)
        self.throttle = Throttle(self._send, parent=self)
        self.sync_from_spec()
        self.slider.valueChanged.connect(self._slider_moved)
        self.slider.sliderReleased.connect(self.throttle.flush)
        self.spin.valueChanged.connect(self._spin_changed)

    def sync_from_spec(self) -> None:
        region = get_value(self.session.spec, self.path.rsplit(".", 1)[0])
        self.axis_label.setText(f"angle in degrees about [{', '.join(format_real(v) for v in region.axis)}] "
                                f"through [{', '.join(format_real(v) for v in region.center)}]")
        if self.slider.isSliderDown() or self.throttle.pending:
            return
        self._show(float(region.angle))

    def _show(self, angle: float) -> None:
        lo, hi = FRAME_ANGLE_RANGE
        position = round((min(max(angle, lo), hi) - lo) / (hi - lo) * SLIDER_STEPS)
        ActuatorControl._set_blocked(self.spin, lambda: self.spin.setValue(angle))
        ActuatorControl._set_blocked(self.slider, lambda: self.slider.setValue(int(position)))

    def slider_value(self, position: int | None = None) -> float:
        """The angle of a slider position, to a tenth of a degree."""
        lo, hi = FRAME_ANGLE_RANGE
        position = self.slider.value() if position is None else position
        return round(lo + (hi - lo) * position / SLIDER_STEPS, 1)

    def _slider_moved(self, position: int) -> None:
        angle = self.slider_value(position)
        ActuatorControl._set_blocked(self.spin, lambda: self.spin.setValue(angle))
        self.throttle.push(angle)

    def _spin_changed(self, angle: float) -> None:
        self._show(angle)
        self.throttle.push(angle)

    def _send(self, angle: float) -> None:
        error = self.session.set_parameter(self.path, float(angle))
        self.error_label.setVisible(error is not None)
        self.error_label.setText(error or "")


class EffectorReadout(QGroupBox):
    """An effector's position (and distance to its goal) from each frame."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(f"effector {name}", parent)
        self.name = name
        self.setObjectName(f"effector:{name}")
        self.readouts: dict[str, QLabel] = {}
        self._form = QFormLayout(self)

    def update_readouts(self, outputs: dict[str, float], units: str = "SI", floors=None) -> None:
        update_readouts(self, self._form, self.readouts, self.name, outputs, units, floors)


class ActuatorsPanel(QWidget):
    """A control per cable and cavity of every body, one per rotating fixed region (a rigid frame's angle), and a
    readout group per effector; rebuilt on ``scene_opened``, values kept in step with ``parameter_changed``,
    readouts from ``frame_shown`` (the frames the window draws)."""

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("actuators_panel")
        self.session = session
        self.controls: dict[str, ActuatorControl] = {}
        self.frames: dict[str, FrameControl] = {}
        self.effectors: dict[str, EffectorReadout] = {}
        self.inverse_box = QCheckBox("Inverse mode: drag the green goals, the actuators follow", self)
        self.inverse_box.setObjectName("inverse_mode")
        self.inverse_box.setToolTip("solver.inverse.active: find the actuation that brings the effectors to their "
                                    "goals (SoftRobots.Inverse QPInverseProblemSolver)")
        self.inverse_box.toggled.connect(self._inverse_toggled)
        self.scroll = QScrollArea(self)
        self.scroll.setWidgetResizable(True)
        self.scroll.setMinimumWidth(260)
        # the controls shrink to the dock's width (a slider, a spin box, wrapped text): never a sideways scroll
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.inverse_box)
        layout.addWidget(self.scroll)
        session.scene_opened.connect(self.rebuild)
        session.parameter_changed.connect(self._on_parameter_changed)
        session.frame_shown.connect(self.update_frame)
        self.rebuild()

    def rebuild(self, _scene=None) -> None:
        content = QWidget()
        layout = QVBoxLayout(content)
        self.controls, self.effectors, self.frames = {}, {}, {}
        spec = self.session.spec
        frame = self.session.latest_frame
        if spec is None or frame is None:
            layout.addWidget(QLabel("No scene is open.", content))
        else:
            rest_outputs = dict(frame.outputs)
            for body in spec.bodies:
                young = get_value(spec, f"body.{body.name}.material.youngModulus")
                for actuator in actuators(spec, body.name):
                    control = ActuatorControl(self.session, body.name, actuator.kind, actuator.index,
                                              rest_outputs=rest_outputs, young_modulus=young, points=frame.x,
                                              parent=content)
                    self.controls[control.name] = control
                    layout.addWidget(control)
                for effector in body.effectors:
                    readout = EffectorReadout(effector.name, content)
                    self.effectors[effector.name] = readout
                    layout.addWidget(readout)
            for body_name, index in rotating_regions(spec):
                control = FrameControl(self.session, body_name, index, parent=content)
                self.frames[control.name] = control
                layout.addWidget(control)
            if not self.controls and not self.effectors and not self.frames:
                layout.addWidget(QLabel("This scene has no cable, cavity, rotating fixed region or effector.",
                                        content))
        layout.addStretch(1)
        self.scroll.setWidget(content)
        self.scroll.setMinimumHeight(min(content.sizeHint().height() + 4, MAX_MIN_HEIGHT))
        self._show_inverse()
        if frame is not None:
            self.update_frame(frame)

    def _show_inverse(self) -> None:
        """The inverse check box and the controls' read-only state from ``session.spec``."""
        spec = self.session.spec
        self.inverse_box.setVisible(bool(self.controls) and bool(self.effectors))
        self.inverse_box.setEnabled(spec is not None and spec.scene.mode == "static")
        active = inverse_active(spec)
        self.inverse_box.blockSignals(True)
        self.inverse_box.setChecked(active)
        self.inverse_box.blockSignals(False)
        for control in self.controls.values():
            control.set_inverse(active)

    def _inverse_toggled(self, on: bool) -> None:
        """Switch inverse mode live; an effector without a goal gets one at its current position."""
        spec = self.session.spec
        if spec is None:
            return
        error = None
        if on:
            frame = self.session.latest_frame
            for body in spec.bodies:
                for effector in body.effectors:
                    if effector.effectorGoal is None and frame is not None:
                        suffixes = [""] if effector.n_points == 1 else [str(i) for i in range(effector.n_points)]
                        points = [[frame.outputs.get(f"{effector.name}.{axis}{suffix}", 0.0) for axis in "xyz"]
                                  for suffix in suffixes]
                        error = error or self.session.set_parameter(
                            f"body.{body.name}.effector.{effector.name}.effectorGoal", points)
        if spec.solver.inverse is None:
            error = error or self.session.set_parameter("solver.inverse", {} if on else None)
        else:
            error = error or self.session.set_parameter("solver.inverse.active", on)
        if error is not None:
            self.session.message.emit("error", error)
        self._show_inverse()

    def _on_parameter_changed(self, _path: str, _value) -> None:
        spec = self.session.spec
        if spec is not None and sorted(self.frames) != sorted(f"{b}.fixed[{i}]" for b, i in rotating_regions(spec)):
            self.rebuild()  # a region started or stopped rotating
            return
        for control in (*self.controls.values(), *self.frames.values()):
            control.sync_from_spec()
        self._show_inverse()

    def update_frame(self, frame) -> None:
        """Readouts from ``frame.outputs``."""
        units = self.session.spec.scene.units if self.session.spec is not None else "SI"
        floors = self._floors()
        for group in (*self.controls.values(), *self.effectors.values()):
            group.update_readouts(frame.outputs, units, floors)

    def _floors(self) -> dict[str, float]:
        """The readouts' noise floors: the rest shape's size and the largest Young's modulus of the scene."""
        spec, rest = self.session.spec, np.asarray(self.session.rest_positions)
        if spec is None or rest.size == 0:
            return {}
        size = float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0)))
        young = max((float(get_value(spec, f"body.{b.name}.material.youngModulus")) for b in spec.bodies),
                    default=0.0)
        return {q: readout_floor(q, size, young) for q in ("length", "volume", "pressure", "force")}
