"""Editors for one scene value each, chosen by the value's kind; a refused value is shown, never kept.

Every editor holds the last accepted value. A user edit calls ``apply(path, value)`` (the Session's
``set_parameter``), which returns None when accepted or the SceneError text; on refusal the editor restores the
accepted value, draws a red border and shows the message under the field (and in its tooltip).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from typing import Any

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from softsim.app.panels.schema_info import ParameterInfo, format_real, tooltip_for
from softsim.mechanics.scene.kinds import Choice, Flag, Integer, Real, Vector
from softsim.mechanics.scene.schema import Table

__all__ = ["ParameterEditor", "make_editor", "format_value", "ERROR_STYLE"]

#: Style of an input whose last edit was refused.
ERROR_STYLE = "border: 1px solid #d22; background: #fff0f0;"
UNSET_TEXT = "(unset)"
_INT_MAX = 2**31 - 1

Apply = Callable[[str, Any], "str | None"]


def format_value(value: Any) -> str:
    """A stored value as TOML-like text for a line edit: ``1e-08``, ``[0, 1, 0]``, ``{radius = 2}``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_real(value)
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if hasattr(value, "__dataclass_fields__"):
        items = [(k, getattr(value, k)) for k in value.__dataclass_fields__]
        return "{" + ", ".join(f"{k} = {format_value(v)}" for k, v in items if v is not None) + "}"
    return str(value)


def _parse_number(text: str) -> Any:
    """A float when ``text`` reads as one (``1e-8``, ``inf``), else the text (the kind check names it)."""
    try:
        return float(text)
    except ValueError:
        return text


class ParameterEditor(QWidget):
    """Base editor: the input row, an error label under it, and the accept/refuse logic.

    Subclasses build ``self.inputs`` (the widgets that get the red border), implement ``_show(value)`` and
    call ``_commit(value)`` on a user edit.
    """

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.info = info
        self.path = info.path
        self._apply = apply
        self._value = info.value
        self._refreshes = 0
        self.error_text = ""
        self.inputs: list[QWidget] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        self.row = QHBoxLayout()
        self.row.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.row)
        self.error_label = QLabel(self)
        self.error_label.setObjectName("error_label")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c11;")
        self.error_label.hide()
        layout.addWidget(self.error_label)
        self._tooltip = tooltip_for(info)
        self.setToolTip(self._tooltip)

    # -- public ----------------------------------------------------------------------------------------
    @property
    def value(self) -> Any:
        """The last accepted value."""
        return self._value

    def set_value(self, value: Any) -> None:
        """Show ``value`` (accepted elsewhere) without sending it back; clears a shown error."""
        self._value = value
        self._refreshes += 1
        self._show(value)
        self.clear_error()

    def show_error(self, message: str) -> None:
        self.error_text = message
        self.error_label.setText(message)
        self.error_label.show()
        for widget in self.inputs:
            widget.setStyleSheet(ERROR_STYLE)
        self.setToolTip(f"{message}\n\n{self._tooltip}")

    def clear_error(self) -> None:
        if not self.error_text:
            return
        self.error_text = ""
        self.error_label.hide()
        for widget in self.inputs:
            widget.setStyleSheet("")
        self.setToolTip(self._tooltip)

    # -- for subclasses --------------------------------------------------------------------------------
    def _show(self, value: Any) -> None:
        raise NotImplementedError

    def _commit(self, value: Any) -> bool:
        """Send a user edit; on refusal restore the accepted value and show why. Returns acceptance."""
        if _same(value, self._value):
            self.clear_error()
            self._show(self._value)
            return True
        refreshes = self._refreshes
        error = self._apply(self.path, value)
        if error is not None:
            self._show(self._value)
            self.show_error(error)
            return False
        if self._refreshes == refreshes:
            # Nobody showed the validated value yet (the panel does so on parameter_changed): keep the edit.
            self._value = value
        self.clear_error()
        return True


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


class ChoiceEditor(ParameterEditor):
    """A combo box of the kind's options (plus "(unset)" for an optional key)."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        assert isinstance(info.kind, Choice)
        self.combo = QComboBox(self)
        self.combo.setObjectName("input")
        self._options: list[Any] = list(info.kind.options)
        if info.optional:
            self._options.insert(0, None)
        for option in self._options:
            self.combo.addItem(UNSET_TEXT if option is None else option)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.inputs = [self.combo]
        self.row.addWidget(self.combo)
        self.row.addStretch(1)
        self._show(info.value)
        self.combo.currentIndexChanged.connect(self._edited)

    def _show(self, value: Any) -> None:
        self.combo.blockSignals(True)
        if value in self._options:
            self.combo.setCurrentIndex(self._options.index(value))
        self.combo.blockSignals(False)

    def _edited(self, index: int) -> None:
        if 0 <= index < len(self._options):
            self._commit(self._options[index])


class FlagEditor(ParameterEditor):
    """A check box."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        self.check = QCheckBox(self)
        self.check.setObjectName("input")
        self.inputs = [self.check]
        self.row.addWidget(self.check)
        self.row.addStretch(1)
        self._show(info.value)
        self.check.toggled.connect(self._commit)

    def _show(self, value: Any) -> None:
        self.check.blockSignals(True)
        self.check.setChecked(bool(value))
        self.check.blockSignals(False)


class IntegerEditor(ParameterEditor):
    """A spin box bounded by the kind's range (out-of-range integers cannot be typed)."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        kind = info.kind
        assert isinstance(kind, Integer)
        self.spin = QSpinBox(self)
        self.spin.setObjectName("input")
        self.spin.setRange(-_INT_MAX if kind.lo is None else kind.lo, _INT_MAX if kind.hi is None else kind.hi)
        self.spin.setKeyboardTracking(False)
        self.spin.setMinimumWidth(90)
        self.inputs = [self.spin]
        self.row.addWidget(self.spin)
        self.row.addStretch(1)
        self._show(info.value)
        self.spin.valueChanged.connect(self._commit)

    def _show(self, value: Any) -> None:
        self.spin.blockSignals(True)
        if value is not None:
            self.spin.setValue(int(value))
        self.spin.blockSignals(False)


class RealEditor(ParameterEditor):
    """A line edit taking any number notation (``1e-8``, ``inf`` where allowed); empty unsets an optional key.

    A line edit instead of a QDoubleSpinBox: tolerances span 1e-12..1 and an out-of-range value must reach the
    scene's validation to be refused with its message.
    """

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        self.line = QLineEdit(self)
        self.line.setObjectName("input")
        self.line.setMinimumWidth(90)
        self.line.setMaximumWidth(160)
        if info.optional:
            self.line.setPlaceholderText(UNSET_TEXT)
        self.inputs = [self.line]
        self.row.addWidget(self.line)
        self.row.addStretch(1)
        self._show(info.value)
        self.line.editingFinished.connect(self._edited)

    def _show(self, value: Any) -> None:
        self.line.setText("" if value is None else format_real(float(value)))

    def _edited(self) -> None:
        text = self.line.text().strip()
        self._commit(None if text == "" else _parse_number(text))

    def edit(self, text: str) -> bool:
        """Type ``text`` and press Enter (for scripts and tests); returns whether it was accepted."""
        self.line.setText(text)
        return self._commit(None if not text.strip() else _parse_number(text.strip()))


class VectorEditor(ParameterEditor):
    """One line edit per component; an edit of any component sends the whole vector."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        assert isinstance(info.kind, Vector)
        self.lines = []
        for axis in range(info.kind.n):
            line = QLineEdit(self)
            line.setObjectName(f"input{axis}")
            line.setMinimumWidth(55)
            line.setMaximumWidth(100)
            line.editingFinished.connect(self._edited)
            self.lines.append(line)
            self.row.addWidget(line)
        self.inputs = list(self.lines)
        self._show(info.value)

    def _show(self, value: Any) -> None:
        for axis, line in enumerate(self.lines):
            line.setText("" if value is None else format_real(float(value[axis])))

    def _components(self) -> Any:
        texts = [line.text().strip() for line in self.lines]
        if self.info.optional and not any(texts):
            return None
        return tuple(_parse_number(t) for t in texts)

    def _edited(self) -> None:
        self._commit(self._components())

    def edit(self, components: list[str]) -> bool:
        """Type every component and confirm (for scripts and tests); returns whether it was accepted."""
        for line, text in zip(self.lines, components, strict=True):
            line.setText(text)
        return self._commit(self._components())


class TextEditor(ParameterEditor):
    """Any other value as TOML text: a path, ``[1, 2, 3]``, ``{center = [0, 0, 0], radius = 2}``."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        self.line = QLineEdit(self)
        self.line.setObjectName("input")
        self.line.setMinimumWidth(120)
        self.line.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        if info.optional:
            self.line.setPlaceholderText(UNSET_TEXT)
        self.inputs = [self.line]
        self.row.addWidget(self.line)
        self._show(info.value)
        self.line.editingFinished.connect(self._edited)

    def _show(self, value: Any) -> None:
        self.line.setText(format_value(value))
        self.line.setCursorPosition(0)

    def _parse(self, text: str) -> Any:
        if not text:
            return None
        if self.info.kind.text:
            return text
        try:
            data = tomllib.loads(f"value = {text}")
        except (tomllib.TOMLDecodeError, RecursionError):
            return text  # the scene's check names what is wrong
        # "5\n[x]\ny = 1" reads as 5 followed by a table: hand the text on, the scene's check refuses it
        return data["value"] if list(data) == ["value"] else text

    def _edited(self) -> None:
        text = self.line.text().strip()
        if text == format_value(self._value):
            self.clear_error()
            return
        self._commit(self._parse(text))

    def edit(self, text: str) -> bool:
        """Type ``text`` and confirm (for scripts and tests); returns whether it was accepted."""
        self.line.setText(text)
        return self._commit(self._parse(text.strip()))


class ReadOnlyEditor(ParameterEditor):
    """A value shown but not edited here (names: they are part of every key path)."""

    def __init__(self, info: ParameterInfo, apply: Apply, parent: QWidget | None = None) -> None:
        super().__init__(info, apply, parent)
        self.label = QLabel(self)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.row.addWidget(self.label)
        self._show(info.value)

    def _show(self, value: Any) -> None:
        self.label.setText(format_value(value))


def make_editor(info: ParameterInfo, apply: Apply, parent: QWidget | None = None,
                *, read_only: bool = False) -> ParameterEditor:
    """The editor for ``info``'s kind: combo box, check box, spin box, number field, vector or text."""
    kind = info.kind
    if read_only:
        return ReadOnlyEditor(info, apply, parent)
    if isinstance(kind, Choice):
        return ChoiceEditor(info, apply, parent)
    if isinstance(kind, Flag):
        return FlagEditor(info, apply, parent)
    if isinstance(kind, Integer):
        return IntegerEditor(info, apply, parent)
    if isinstance(kind, Real):
        return RealEditor(info, apply, parent)
    if isinstance(kind, Vector):
        return VectorEditor(info, apply, parent)
    if isinstance(kind, Table) or kind is not None:
        return TextEditor(info, apply, parent)
    raise TypeError(f"{info.path}: no editor for kind {type(kind).__name__}")
