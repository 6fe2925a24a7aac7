"""The Parameters panel: an editor for every value of the scene, grouped by section, generated from the schema.

Edits go through ``session.set_parameter`` (validated at once, applied by the worker before the next frame).
The panel follows the session: rebuilt when a scene opens, refreshed from ``session.spec`` whenever a value
changes (from this panel, the actuator sliders or anywhere else), rebuilt when the set of keys changes (a
fixed region switched from ``box`` to ``sphere`` has other keys).

An edit costs the GUI thread little (a slider sends up to 25 a second): the description of the keys is kept from
the last rebuild, and an edit of one plain value (a key shown by an editor that is neither a name, which is part
of the key paths, nor one of a group of which only one may be set) updates only that key's table and the editors
whose use depends on it (the cg settings on ``solver.linear.type``). Any other edit (a whole table, an item by
index, a key of an exclusive group) reads the whole schema again, once.
"""

from __future__ import annotations

import logging

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtWidgets import (
    QFormLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from softsim.app.panels.schema_info import (
    EXPANDED_SECTIONS,
    ParameterInfo,
    describe_parameters,
    hidden_when_irrelevant,
    is_relevant,
    relevance_key,
    section_order,
)
from softsim.app.panels.widgets import ParameterEditor, _same, make_editor
from softsim.mechanics.scene.edit import resolve
from softsim.mechanics.scene.kinds import Name

logger = logging.getLogger(__name__)

__all__ = ["CollapsibleSection", "ParametersPanel"]

#: Width range of the scrolled list [pixels].
#: the panel's narrowest width: it shares the dock column with the Actuators (a wider row scrolls sideways)
MIN_WIDTH = 240


class CollapsibleSection(QWidget):
    """A titled group whose body (a form of editors) folds away under its header button."""

    def __init__(self, title: str, *, expanded: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.header = QToolButton(self)
        self.header.setText(title)
        self.header.setCheckable(True)
        self.header.setChecked(expanded)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setStyleSheet("QToolButton { font-weight: bold; border: none; text-align: left; }")
        self.body = QWidget(self)
        self.form = QFormLayout(self.body)
        self.form.setContentsMargins(14, 2, 2, 6)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.body)
        self.header.toggled.connect(self._toggled)
        self._toggled(expanded)

    @property
    def expanded(self) -> bool:
        return self.header.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.header.setChecked(expanded)

    def _toggled(self, expanded: bool) -> None:
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)


class ParametersPanel(QWidget):
    """Every scene value in a scrollable list of sections (Newton, Linear solver, Constraint solver, Scene,
    Material per body, actuators, ...). ``editors`` maps each key path (``list_parameters`` form) to its
    editor; ``sections`` maps titles to their :class:`CollapsibleSection`."""

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("parameters_panel")
        self.session = session
        self.editors: dict[str, ParameterEditor] = {}
        self.sections: dict[str, CollapsibleSection] = {}
        self._labels: dict[str, QLabel] = {}
        self._paths: list[str] = []
        self._infos: dict[str, ParameterInfo] = {}  # the description the editors were built from, by key path
        self._tables: dict[str, list[str]] = {}  # table path -> the key paths in it
        self._dependents: dict[str, list[str]] = {}  # key path -> the key paths whose use depends on its value
        self._enabled: dict[str, bool] = {}  # the enabled state shown, by key path
        self._hidden: set[str] = set()  # rows hidden while unused (hidden_when_irrelevant), by key path
        self.filter = QLineEdit(self)
        self.filter.setObjectName("parameter_filter")
        self.filter.setPlaceholderText("Filter keys (e.g. tolerance)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.scroll = QScrollArea(self)
        self.scroll.setWidgetResizable(True)
        # long key names scroll sideways rather than widen the dock column (and narrow the 3D view)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.scroll.setMinimumWidth(MIN_WIDTH)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.filter)
        layout.addWidget(self.scroll)
        self._rebuild_pending = False
        self._building = False
        session.scene_opened.connect(self.rebuild)
        session.parameter_changed.connect(self._on_parameter_changed)
        session.message.connect(self._on_message)
        self.rebuild()

    # -- building --------------------------------------------------------------------------------------
    def rebuild(self, _scene=None) -> None:
        """Recreate every editor from ``session.spec`` (keeps which sections are folded)."""
        self._rebuild_pending = False
        expanded = {title: s.expanded for title, s in self.sections.items()}
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(4)
        self.editors, self.sections, self._labels = {}, {}, {}
        self._infos, self._tables, self._dependents, self._enabled = {}, {}, {}, {}
        self._hidden = set()
        self._building = True
        spec = self.session.spec
        if spec is None:
            layout.addWidget(QLabel("No scene is open.", content))
            self._paths = []
        else:
            infos = describe_parameters(spec)
            self._paths = [info.path for info in infos]
            for info in infos:
                self._infos[info.path] = info
                self._tables.setdefault(_table_of(info.path), []).append(info.path)
                key = relevance_key(info)
                if key is not None:
                    self._dependents.setdefault(key, []).append(info.path)
            grouped: dict[str, list[ParameterInfo]] = {}
            for info in infos:
                grouped.setdefault(info.section, []).append(info)
            for title in sorted(grouped, key=section_order):
                default_open = title.split(":")[0] in EXPANDED_SECTIONS
                section = CollapsibleSection(title, expanded=expanded.get(title, default_open), parent=content)
                section.setObjectName(f"section:{title}")
                for info in grouped[title]:
                    self._add_row(section, info, spec)
                self.sections[title] = section
                layout.addWidget(section)
        self._building = False
        layout.addStretch(1)
        self.scroll.setWidget(content)  # deletes the previous content widget
        self._apply_filter(self.filter.text())

    def _add_row(self, section: CollapsibleSection, info: ParameterInfo, spec) -> None:
        editor = make_editor(info, self.session.set_parameter, section.body,
                             read_only=isinstance(info.kind, Name))
        editor.setObjectName(f"editor:{info.path}")
        label = QLabel(_label_text(info, section.title), section.body)
        label.setToolTip(editor.toolTip())
        section.form.addRow(label, editor)
        self.editors[info.path] = editor
        self._labels[info.path] = label
        self._set_enabled(info, spec)

    def _set_enabled(self, info: ParameterInfo, spec) -> None:
        if isinstance(info.kind, Name):
            return
        relevant = is_relevant(info, spec)
        if self._enabled.get(info.path) is not relevant:
            self._enabled[info.path] = relevant
            self.editors[info.path].setEnabled(relevant)
            self._labels[info.path].setEnabled(relevant)
            hidden = not relevant and hidden_when_irrelevant(info)
            if hidden != (info.path in self._hidden):
                (self._hidden.add if hidden else self._hidden.discard)(info.path)
                if not self._building:  # a rebuild applies the filter once at its end
                    self._apply_filter(self.filter.text())

    # -- following the session -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show the values of ``session.spec`` (a rebuild when its keys changed)."""
        spec = self.session.spec
        if spec is None:
            return
        infos = describe_parameters(spec)
        if [info.path for info in infos] != self._paths:
            self.rebuild()
            return
        self._show(infos, spec)

    def _show(self, infos: list[ParameterInfo], spec) -> None:
        """The values and enabled states of ``infos`` (described from ``spec``) in their editors."""
        for info in infos:
            editor = self.editors[info.path]
            if not _same(editor.value, info.value):
                editor.set_value(info.value)
            self._set_enabled(info, spec)

    def _on_parameter_changed(self, path: str, _value) -> None:
        spec = self.session.spec
        if spec is None:
            return
        info = self._infos.get(path)
        if info is not None and not info.exclusive and not isinstance(info.kind, Name):
            self._show_key(path, spec)
            return
        infos = describe_parameters(spec)
        if [info.path for info in infos] != self._paths:
            # The edit may come from an editor of this panel, still on the call stack: rebuild afterwards.
            if not self._rebuild_pending:
                self._rebuild_pending = True
                QTimer.singleShot(0, self.rebuild)
            return
        self._show(infos, spec)

    def _show_key(self, path: str, spec) -> None:
        """After an edit of the plain value at ``path``: the values of its table (a value the loader derives
        from it sits there) and the enabled state of the keys whose use depends on it; the set of keys is the
        same (a plain value is never a table, a name, nor one of an exclusive group)."""
        table = resolve(spec, path).table
        for other in self._tables[_table_of(path)]:
            value = getattr(table, self._infos[other].declaration.attribute)
            editor = self.editors[other]
            if not _same(editor.value, value):
                editor.set_value(value)
        for dependent in self._dependents.get(path, ()):
            self._set_enabled(self._infos[dependent], spec)

    def _on_message(self, level: str, text: str) -> None:
        """Show a refusal by the worker (``set PATH: why``, e.g. a value the scene file allows but the solver
        does not) on the editor of that key."""
        if level != "error" or not text.startswith("set "):
            return
        path, _, reason = text[4:].partition(": ")
        editor = self.editors.get(path)
        if editor is not None:
            editor.show_error(f"not applied: {reason}")

    def editor(self, path: str) -> ParameterEditor:
        """The editor of a key path in ``list_parameters`` form (``body.finger.material.poissonRatio``)."""
        try:
            return self.editors[path]
        except KeyError:
            raise KeyError(f"no parameter editor for {path!r}") from None

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for section in self.sections.values():
            shown = 0
            for path, editor in self.editors.items():
                if editor.parent() is not section.body:
                    continue
                visible = (not needle or needle in path.lower()) and path not in self._hidden
                section.form.setRowVisible(editor, visible)
                shown += visible
            section.setVisible(shown > 0)
            if needle and shown:
                section.set_expanded(True)


def _table_of(path: str) -> str:
    """The path of the table holding the key at ``path`` (``body.finger.cable.cable`` for its ``value``)."""
    return path.rsplit(".", 1)[0] if "." in path else ""


def _label_text(info: ParameterInfo, section_title: str) -> str:
    """The row label: the key, with the item prefix when the key sits below the section's own table
    (``fixed[0].box``, ``region[1].youngModulus``)."""
    parts = info.path.split(".")
    if section_title.startswith(("Material", "Body")):
        for i, part in enumerate(parts):
            if part.startswith(("fixed[", "force[", "region[")):
                return ".".join(parts[i:])
    return info.key
