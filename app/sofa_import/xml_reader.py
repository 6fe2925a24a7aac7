"""Reader of SOFA's XML scenes (``.scn``, and ``.pyscn``-less XML): ``<Node>`` elements become recorded nodes,
every other element a recorded component whose attributes are its data values.

Attribute values stay text where SOFA would parse them by type: the translation converts the fields it reads
(``'-5 -15 -5  5 -4.5 5'`` -> six numbers, ``'true'``/``'1'`` -> True). ``<include href=...>`` and Python
components inside XML are not read; they are reported by the translation as unknown components.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

from softsim.app.sofa_import.graph import NODE_FIELDS, Node
from softsim.app.sofa_import.standin import ImportFailure
from softsim.meshes.files import MAX_SCENE_FILE_BYTES, InputFileError, read_input_bytes

__all__ = ["read_xml_scene"]


def _add_node(parent: Node | None, element: ElementTree.Element) -> Node:
    attributes = dict(element.attrib)
    name = attributes.pop("name", "root" if parent is None else "Node")
    fields = {key: value for key, value in attributes.items() if key in NODE_FIELDS}
    node = Node(name, **fields)
    if parent is not None:
        parent.addChild(node)
    for key, value in attributes.items():
        if key not in NODE_FIELDS:
            node.data[key] = value
    for child in element:
        if not isinstance(child.tag, str):
            continue  # comments and processing instructions
        if child.tag == "Node":
            _add_node(node, child)
        else:
            node.addObject(child.tag, **dict(child.attrib))
    return node


def read_xml_scene(path: Path | str) -> Node:
    """The recorded graph of the XML scene ``path``.

    Raises:
        ImportFailure: unreadable file, not XML, or a root element that is not ``<Node>``.
    """
    path = Path(path)
    try:
        text = read_input_bytes(path, max_bytes=MAX_SCENE_FILE_BYTES, what="scene")
    except InputFileError as error:
        raise ImportFailure(f"{path.name}: cannot read the scene file: it {error.reason}") from None
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise ImportFailure(f"{path.name}: not a valid XML scene: {error}") from None
    if root.tag != "Node":
        raise ImportFailure(f"{path.name}: the root element is <{root.tag}>; a SOFA XML scene starts with <Node>")
    return _add_node(None, root)
