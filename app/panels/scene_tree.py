"""The Scene panel: the scene's components as a tree, as runSofa shows a scene graph.

Bodies (with their material, fixed regions, loads, cables, cavities, effectors and rigid groups), obstacles,
free rigid bodies, attachments and the solvers. Selecting an entry lists its parameters with their values and
units below the tree, highlights it in the 3D view (``highlight(kind, name)``, when the panel is given one) and
offers to edit it in the Parameters panel (its filter set to the entry's key path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import (
    QHeaderView,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from softsim.app.panels.schema_info import describe_parameters, format_real

__all__ = ["Component", "SceneTreePanel", "scene_components"]


@dataclass(frozen=True)
class Component:
    """One entry of the tree: its ``title``, the key path ``prefix`` of its parameters ("" for a group), what
    the view highlights for it (``kind``, ``name``; kind None: nothing) and its children."""

    title: str
    prefix: str = ""
    kind: str | None = None
    name: str | None = None
    children: tuple[Component, ...] = ()


def _body(body) -> Component:
    prefix = f"body.{body.name}"
    material = body.material
    children = [Component(f"Material: {material.model}", f"{prefix}.material", "body", body.name)]
    children += [Component(f"Fixed region {i}", f"{prefix}.fixed[{i}]", "fixed", body.name)
                 for i in range(len(body.fixed))]
    children += [Component(f"Force {i}", f"{prefix}.force[{i}]", "body", body.name) for i in range(len(body.forces))]
    children += [Component(f"Cable {c.name} ({c.valueType})", f"{prefix}.cable.{c.name}", "cable", c.name)
                 for c in body.cables]
    children += [Component(f"Cavity {c.name} ({c.valueType})", f"{prefix}.cavity.{c.name}", "cavity", c.name)
                 for c in body.cavities]
    children += [Component(f"Effector {e.name}", f"{prefix}.effector.{e.name}", "effector", e.name)
                 for e in body.effectors]
    children += [Component(f"Rigid group {i}", f"{prefix}.rigidGroup[{i}]", "body", body.name)
                 for i in range(len(body.rigidGroups))]
    return Component(f"Body {body.name}", prefix, "body", body.name, tuple(children))


def scene_components(spec) -> list[Component]:
    """The tree of a scene spec: Bodies, Obstacles, Rigid bodies, Attachments (when there are any), Solvers,
    Scene."""
    tree = [Component("Bodies", children=tuple(_body(b) for b in spec.bodies))]
    if spec.obstacles:
        tree.append(Component("Obstacles", children=tuple(
            Component(f"{o.type.capitalize()} {o.name}", f"obstacle.{o.name}", "obstacle", o.name)
            for o in spec.obstacles)))
    if spec.rigids:
        tree.append(Component("Rigid bodies", children=tuple(
            Component(f"Rigid {r.shape} {r.name}", f"rigid.{r.name}") for r in spec.rigids)))
    if spec.attachments:
        tree.append(Component("Attachments", children=tuple(
            Component(f"Attachment {a.name}: {a.bodyA} - {a.bodyB}", f"attachment.{a.name}")
            for a in spec.attachments)))
    solver = spec.solver
    solvers = [Component("Newton (static)", "solver.newton"),
               Component(f"Linear solver: {solver.linear.type}", "solver.linear"),
               Component(f"Constraint solver: {solver.constraint.type}", "solver.constraint")]
    if spec.scene.mode == "dynamic":
        solvers.append(Component("Dynamics", "solver.dynamic"))
    if solver.inverse is not None:
        state = "on" if solver.inverse.active else "off"
        solvers.append(Component(f"Inverse model: {solver.inverse.type} ({state})", "solver.inverse"))
    tree.append(Component("Solvers", children=tuple(solvers)))
    tree.append(Component(f"Scene ({spec.scene.mode}, {spec.scene.units})", "scene"))
    tree.append(Component("Mouse drag", "drag"))
    return tree


def _value_text(value) -> str:
    if isinstance(value, float):
        return format_real(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return "(unset)" if value is None else str(value)


class SceneTreePanel(QWidget):
    """The tree and, below it, the selected entry's parameters. ``highlight(kind, name)`` is called on a
    selection (kind None: clear); ``edit(prefix)`` by the "Edit in Parameters" button."""

    def __init__(self, session, parent: QWidget | None = None, *,
                 highlight: Callable[[str | None, str | None], None] | None = None,
                 edit: Callable[[str], None] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scene_tree_panel")
        self.session = session
        self.highlight = highlight
        self.edit = edit
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("scene_tree")
        self.tree.setHeaderHidden(True)
        self.tree.itemSelectionChanged.connect(self._selected)
        self.table = QTableWidget(0, 2, self)
        self.table.setObjectName("scene_tree_parameters")
        self.table.setHorizontalHeaderLabels(["key", "value"])
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.edit_button = QPushButton("Edit in Parameters", self)
        self.edit_button.setEnabled(False)
        self.edit_button.clicked.connect(self._edit)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.tree)
        below = QWidget(splitter)
        below_layout = QVBoxLayout(below)
        below_layout.setContentsMargins(0, 0, 0, 0)
        below_layout.addWidget(self.table, 1)
        below_layout.addWidget(self.edit_button)
        splitter.addWidget(below)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(splitter)
        self.components: dict[int, Component] = {}
        session.scene_opened.connect(self.rebuild)
        session.parameter_changed.connect(lambda _path, _value: self._show_parameters(self.selected()),
                                          owner=self)
        self.rebuild()

    def rebuild(self, _scene=None) -> None:
        """The tree of ``session.spec`` (empty without a scene)."""
        self.tree.clear()
        self.components.clear()
        self.table.setRowCount(0)
        spec = self.session.spec
        if spec is None:
            return
        for component in scene_components(spec):
            self.tree.addTopLevelItem(self._item(component))
        self.tree.expandAll()

    def _item(self, component: Component) -> QTreeWidgetItem:
        item = QTreeWidgetItem([component.title])
        item.setToolTip(0, component.prefix)
        self.components[id(item)] = component
        item.setData(0, Qt.ItemDataRole.UserRole, component.prefix)
        for child in component.children:
            item.addChild(self._item(child))
        return item

    def item(self, prefix: str) -> QTreeWidgetItem:
        """The tree item of the component with this key path prefix (KeyError if none)."""
        for item in self._items():
            if item.data(0, Qt.ItemDataRole.UserRole) == prefix:
                return item
        raise KeyError(f"no scene tree entry {prefix!r}")

    def _items(self):
        stack = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        while stack:
            item = stack.pop()
            yield item
            stack += [item.child(i) for i in range(item.childCount())]

    def selected(self) -> Component | None:
        items = self.tree.selectedItems()
        return self.components.get(id(items[0])) if items else None

    def select(self, prefix: str) -> None:
        self.tree.setCurrentItem(self.item(prefix))

    def _selected(self) -> None:
        component = self.selected()
        self._show_parameters(component)
        self.edit_button.setEnabled(component is not None and bool(component.prefix))
        if self.highlight is not None:
            self.highlight(component.kind if component else None, component.name if component else None)

    def parameters(self, component: Component | None) -> list[tuple[str, str]]:
        """(key relative to the entry, value with unit) of every parameter of ``component``."""
        spec = self.session.spec
        if component is None or not component.prefix or spec is None:
            return []
        rows = []
        for info in describe_parameters(spec):
            if info.path.startswith(component.prefix + ".") or info.path.startswith(component.prefix + "["):
                unit = f" {info.unit}" if info.unit and info.value is not None else ""
                rows.append((info.path[len(component.prefix):].lstrip("."), _value_text(info.value) + unit))
        return rows

    def _show_parameters(self, component: Component | None) -> None:
        rows = self.parameters(component)
        self.table.setRowCount(len(rows))
        for row, (key, value) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(key))
            self.table.setItem(row, 1, QTableWidgetItem(value))

    def _edit(self) -> None:
        component = self.selected()
        if component is not None and component.prefix and self.edit is not None:
            self.edit(component.prefix)
