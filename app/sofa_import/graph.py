"""The recorded SOFA scene graph: nodes, components and their data fields, as a scene script builds them.

These classes stand in for SofaPython3's ``Sofa.Core.Node``, ``Sofa.Core.Object`` and ``Sofa.Core.Data``:
``node.addObject('MechanicalObject', name='dofs', position=...)`` records a :class:`Component` with its keyword
arguments as data values; ``node.addChild('finger')`` records a child :class:`Node`; ``obj.value``,
``obj.findData('value')`` and ``obj.getData('value')`` return a :class:`Data` whose ``value`` reads and writes
the recorded value; ``getLinkPath()`` gives SOFA's link text (``'@/finger/cable/aCableActuator.value'``).
Nothing is computed: a field a script reads but never set reads as ``None`` (or, for the few computed fields
the importer knows, such as a BoxROI's ``indices``, a link to them that the translation resolves).

A :class:`Data` may be *bound* (:mod:`app.sofa_import.live`): its reads and writes then go to a running
softsim scene instead of the record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["Component", "Data", "Link", "Node", "NODE_FIELDS", "components_of", "nearest_component", "resolve_link",
           "split_link"]

#: data fields of a SOFA node (Sofa.Core.Node) the importer records
NODE_FIELDS = {"gravity": [0.0, -9.81, 0.0], "dt": 0.01, "time": 0.0, "animate": False, "name": None,
               "activated": True, "bbox": None, "multiThreading": False}


class Data:
    """One data field ``name`` of ``owner`` (a :class:`Component` or :class:`Node`)."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: Component | Node, name: str) -> None:
        self.owner, self.name = owner, name

    @property
    def value(self) -> Any:
        return self.owner._read(self.name)

    @value.setter
    def value(self, value: Any) -> None:
        self.owner._write(self.name, value)

    def getValueString(self) -> str:  # noqa: N802 (SofaPython3's names)
        return str(self.value)

    def getName(self) -> str:  # noqa: N802
        return self.name

    def getLinkPath(self) -> str:  # noqa: N802
        return f"@{self.owner.getPathName()}.{self.name}"

    @property
    def linkpath(self) -> str:
        return self.getLinkPath()

    def getOwner(self):  # noqa: N802
        return self.owner

    def setParent(self, parent: Any) -> None:  # noqa: N802
        """SOFA's parent data: this field reads ``parent``'s value (a Data, or a link text) from now on."""
        self.owner.data[self.name] = _unwrap(parent, self.owner if isinstance(self.owner, Node) else
                                             self.owner.node)

    # a Data used as its value (SofaPython3's DataContainer behaves like an array)
    def __getitem__(self, index):
        return self.value[index]

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator:
        return iter(self.value)

    def __float__(self) -> float:
        value = self.value
        return float(value[0] if isinstance(value, list | tuple) else value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"Data({self.getLinkPath()} = {self.value!r})"


class Link:
    """A link resolved when it was made (as SofaPython3 resolves a link string passed to ``addObject``, while
    the prefab that makes it may not yet be in the scene): ``target`` (a Component or Node), ``field`` (None:
    the object itself) and the ``text`` as written."""

    __slots__ = ("target", "field", "text")

    def __init__(self, target: Any, field: str | None, text: str) -> None:
        self.target, self.field, self.text = target, field, text

    def __repr__(self) -> str:
        return f"Link({self.text})"


def _unwrap(value: Any, node: Node | None = None) -> Any:
    """A value as recorded: a Data assigned to another field is a link to it (SOFA's parent data); a link text
    that names something from ``node`` now is resolved now."""
    if isinstance(value, Data):
        return Link(value.owner, value.name, value.getLinkPath())
    if isinstance(value, Component | Node):
        return Link(value, None, value.getLinkPath())
    if isinstance(value, str) and value.strip().startswith("@") and node is not None:
        target, field = resolve_link(node, value.strip())
        return Link(target, field, value) if target is not None else value
    if isinstance(value, list | tuple):  # link texts in a list (a multi-mapping's inputs) resolve now too
        return [_unwrap(v, node) for v in value]
    if hasattr(value, "toList"):  # splib3's Vec3 / Quat
        return list(value.toList())
    if type(value).__module__ == "numpy":
        return value.tolist()
    return value


def _linked(value: Any, depth: int = 0) -> Any:
    """A recorded value as a script reads it: a link to another data field (a parent data, ``'@loader.position'``)
    reads that field's value."""
    if isinstance(value, Link) and value.field is not None and isinstance(value.target, Component | Node) \
            and depth < 20:
        return value.target._read(value.field)
    return value


class Component:
    """A recorded SOFA component: ``type`` (class name), ``name``, ``data`` (field -> recorded value),
    ``node`` (the node it was added to), ``explicit_name`` (whether the script named it)."""

    def __init__(self, type_name: str, node: Node | None, data: dict[str, Any]) -> None:
        explicit = "name" in data
        name = str(data.pop("name")) if explicit else type_name
        values = {key: _unwrap(value, node) for key, value in data.items()}
        object.__setattr__(self, "type", type_name)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "explicit_name", explicit)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "data", values)
        object.__setattr__(self, "binding", None)  # set by app.sofa_import.live while a controller runs

    # -- data access -------------------------------------------------------------------------------------
    def _read(self, name: str) -> Any:
        binding = self.binding
        if binding is not None:
            return binding.read(self, name)
        if name == "name":
            return self.name
        if name not in self.data:  # a field SOFA computes at init (a mesh's positions, an ROI's indices)
            from softsim.app.sofa_import.computed import computed_value

            return computed_value(self, name)
        return _linked(self.data[name])

    def _write(self, name: str, value: Any) -> None:
        binding = self.binding
        if binding is not None:
            binding.write(self, name, value)
            return
        if name == "name":
            object.__setattr__(self, "name", str(value))
            object.__setattr__(self, "explicit_name", True)
            return
        if name == "position" and self.type == "MechanicalObject" and "rest_position" not in self.data:
            # SOFA's rest_position is the position at init: keep it before the first change of the position
            from softsim.app.sofa_import.computed import computed_value

            rest = computed_value(self, "rest_position")
            if rest is not None:
                self.data["rest_position"] = rest
        self.data[name] = _unwrap(value, self.node)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Data(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._write(name, value.value if isinstance(value, Data) and value.owner is self else value)

    def findData(self, name: str) -> Data:  # noqa: N802
        return Data(self, name)

    getData = findData

    def getName(self) -> str:  # noqa: N802
        return self.name

    def getClassName(self) -> str:  # noqa: N802
        return self.type

    def getPathName(self) -> str:  # noqa: N802
        base = self.node.getPathName() if self.node is not None else ""
        return f"{base.rstrip('/')}/{self.name}"

    def getLinkPath(self) -> str:  # noqa: N802
        return f"@{self.getPathName()}"

    @property
    def linkpath(self) -> str:
        return self.getLinkPath()

    def getContext(self):  # noqa: N802
        return self.node

    def setDataValues(self, **values) -> None:  # noqa: N802
        for key, value in values.items():
            self._write(key, value)

    def init(self) -> None:
        """SOFA's init: nothing to compute in the record."""

    reinit = bwdInit = init

    def __repr__(self) -> str:
        return f"<{self.type} {self.getPathName()}>"


class Node:
    """A recorded SOFA node: ``name``, ``parents`` (a node added to several parents is one node, as in SOFA's
    graph), ``children``, ``objects`` (components and controllers, in order), ``data`` (gravity, dt, ...)."""

    def __init__(self, name: str = "root", **fields: Any) -> None:
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "parents", [])
        object.__setattr__(self, "children", [])
        object.__setattr__(self, "objects", [])
        object.__setattr__(self, "data", {key: _unwrap(value) for key, value in fields.items()})
        object.__setattr__(self, "attributes", {})

    # -- data access -------------------------------------------------------------------------------------
    def _bound(self, name: str):
        """The live binding (app.sofa_import.live) when it binds this node's field ``name``, else None."""
        binding = object.__getattribute__(self, "attributes").get("binding")
        if binding is None or binding.scene is None or binding.key(self, name) is None:
            return None
        return binding

    def _read(self, name: str) -> Any:
        if name == "name":
            return self.name
        binding = self._bound(name)
        if binding is not None:
            return binding.read(self, name)
        return _linked(self.data.get(name, NODE_FIELDS.get(name)))

    def _write(self, name: str, value: Any) -> None:
        binding = self._bound(name)
        if binding is not None:
            binding.write(self, name, value)
            return
        if name == "name":
            object.__setattr__(self, "name", str(value))
        else:
            self.data[name] = _unwrap(value)

    def findData(self, name: str) -> Data:  # noqa: N802
        return Data(self, name)

    getData = findData

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        attributes = object.__getattribute__(self, "attributes")
        if name in attributes:
            return attributes[name]
        found = self._find_local(name)
        if found is not None:
            return found
        if name in NODE_FIELDS or name in self.data:
            return Data(self, name)
        raise AttributeError(f"node {self.getPathName()} has no child, object or data field named {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in NODE_FIELDS or name in self.data:
            self._write(name, value.value if isinstance(value, Data) and value.owner is self else value)
        elif self._find_local(name) is not None and isinstance(value, Data | Component | Node):
            return  # SofaPython3 refuses to rebind a child; the record keeps it
        else:
            self.attributes[name] = value  # a Python attribute (stlib's prefabs attach functions this way)

    def _find_local(self, name: str) -> Node | Component | None:
        for child in self.children:
            if child.name == name:
                return child
        for obj in self.objects:
            if isinstance(obj, Component) and obj.name == name:
                return obj
            if not isinstance(obj, Component) and getattr(obj, "name", None) == name:
                return obj
        return None

    # -- building (SofaPython3's API) -----------------------------------------------------------------------
    def addObject(self, kind: Any, *args: Any, **data: Any) -> Any:  # noqa: N802
        if isinstance(kind, str):
            component = Component(kind, self, dict(data))
            self.objects.append(component)
            return component
        if isinstance(kind, Component):
            object.__setattr__(kind, "node", self)
            self.objects.append(kind)
            return kind
        # a Python object: a Sofa.Core.Controller instance (or another Python component)
        try:
            kind._sofa_node = self
        except AttributeError:
            pass
        self.objects.append(kind)
        return kind

    def createObject(self, kind: Any, *args: Any, **data: Any) -> Any:  # noqa: N802 (the SofaPython2 spelling)
        return self.addObject(kind, *args, **data)

    def addChild(self, child: str | Node, **fields: Any) -> Node:  # noqa: N802
        if isinstance(child, str):
            child = Node(child, **fields)
        if self not in child.parents:
            child.parents.append(self)
        if child not in self.children:
            self.children.append(child)
        return child

    createChild = addChild

    def removeChild(self, child: str | Node) -> None:  # noqa: N802
        node = self.getChild(child) if isinstance(child, str) else child
        if node in self.children:
            self.children.remove(node)
            node.parents.remove(self)

    def removeObject(self, obj: Any) -> None:  # noqa: N802
        if obj in self.objects:
            self.objects.remove(obj)

    def getChild(self, name: str) -> Node | None:  # noqa: N802
        return next((c for c in self.children if c.name == name), None)

    def getObject(self, name: str) -> Component | None:  # noqa: N802
        found = self._find_local(name)
        return found if not isinstance(found, Node) else None

    def hasObject(self, name: str) -> bool:  # noqa: N802
        return self.getObject(name) is not None

    def getChildren(self) -> list[Node]:  # noqa: N802
        return list(self.children)

    def getObjects(self) -> list[Any]:  # noqa: N802
        return list(self.objects)

    def getParents(self) -> list[Node]:  # noqa: N802
        return list(self.parents)

    def getRoot(self) -> Node:  # noqa: N802
        node = self
        while node.parents:
            node = node.parents[0]
        return node

    def getContext(self) -> Node:  # noqa: N802
        return self

    def getPathName(self) -> str:  # noqa: N802
        if not self.parents:
            return "/"
        return f"{self.parents[0].getPathName().rstrip('/')}/{self.name}"

    def getLinkPath(self) -> str:  # noqa: N802
        return f"@{self.getPathName()}"

    @property
    def linkpath(self) -> str:
        return self.getLinkPath()

    def getMechanicalState(self):  # noqa: N802
        return next((o for o in self.objects if isinstance(o, Component) and o.type == "MechanicalObject"), None)

    def init(self) -> None:
        """SOFA's init: nothing to compute in the record."""

    def __repr__(self) -> str:
        return f"<Node {self.getPathName()}>"

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, each once, parents before children."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            node = stack.pop(0)
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            stack[0:0] = node.children


def components_of(node: Node, types: set[str]) -> list[Component]:
    """The components of ``node`` whose class is one of ``types``, in scene order."""
    return [o for o in node.objects if isinstance(o, Component) and o.type in types]


def nearest_component(node: Node, types: set[str]) -> Component | None:
    """The first component of one of ``types`` in ``node`` or, breadth first, in its nearest ancestor that has
    one (the ODE solver that integrates a node, say), or None."""
    frontier, seen = [node], set()
    while frontier:
        current = frontier.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        found = components_of(current, types)
        if found:
            return found[0]
        frontier += current.parents
    return None


def split_link(text: str) -> tuple[str, str | None]:
    """``'@../a/b.indices'`` -> ``('../a/b', 'indices')``; ``'@loader'`` -> ``('loader', None)``."""
    body = text[1:] if text.startswith("@") else text
    head, slash, last = body.rpartition("/")
    if "." in last and last not in (".", ".."):
        name, _, field = last.partition(".")
        return f"{head}{slash}{name}", field
    return body, None


def resolve_link(node: Node, text: str) -> tuple[Node | Component | None, str | None]:
    """The node or component a link ``text`` (``'@loader'``, ``'@../x.y'``, ``'@/a/b.c'``) names, seen from
    ``node``, and the data field it names (None: the object itself). ``(None, field)`` when nothing matches.

    A name is looked up in the current node, then (as SOFA does for a bare ``@name``) in its ancestors."""
    path, field = split_link(text)
    if path.startswith("/"):
        current: Node | Component | None = node.getRoot()
        parts = [p for p in path.split("/") if p]
    else:
        current = node
        parts = [p for p in path.split("/") if p]
    if not parts:
        return current, field
    for index, part in enumerate(parts):
        if not isinstance(current, Node):
            return None, field
        if part == ".":
            continue
        if part == "..":
            current = current.parents[0] if current.parents else current
            continue
        found = current._find_local(part)
        if found is None and index == 0 and len(parts) == 1 and not path.startswith("/"):
            ancestor = current.parents[0] if current.parents else None
            while found is None and ancestor is not None:
                found = ancestor._find_local(part)
                ancestor = ancestor.parents[0] if ancestor.parents else None
        current = found
    return current, field
