"""Reader for Gmsh's first mesh format (MSH 1.0), the format of SOFA's sample meshes (``share/mesh/*.msh``).

A file holds two sections, read as whitespace-separated numbers::

    $NOD
    number-of-nodes
    node-number x y z                                   (one line per node; numbers need not be contiguous)
    $ENDNOD
    $ELM
    number-of-elements
    elm-number elm-type reg-phys reg-elem number-of-nodes node-number-list   (one line per element)
    $ENDELM

``reg-phys`` is the element's physical group (0: none) and ``reg-elem`` its elementary (geometric) entity.
Element types 1 to 15 are Gmsh's (:data:`ELEMENT_TYPES`): 2 is a triangle, 4 a tetrahedron, 11 a 10-node
tetrahedron, 15 a point, ...

The reader is strict: a section that is not closed, a count that does not match the lines that follow, a
line with the wrong number of fields, a field that is not a number, a node defined twice, an element with
the wrong number of nodes for its type or a node number that ``$NOD`` does not define raise
:class:`~meshes.errors.MeshError` naming the file, the line and what is wrong.

Parsing is vectorised: the fields are located with numpy on the file's bytes (their offsets and the number
on each line), each section's numbers are converted by one ``numpy.fromstring`` call, and the field-by-field
Python scan that names a bad field runs only when that conversion fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from softsim.meshes.errors import MeshError
from softsim.meshes.files import MAX_MESH_FILE_BYTES, InputFileError, read_input_bytes

__all__ = ["ELEMENT_TYPES", "Gmsh1Block", "Gmsh1Mesh", "is_gmsh1", "parse", "read"]

#: Gmsh element type -> (nodes per element, meshio cell type, words for messages).
ELEMENT_TYPES: dict[int, tuple[int, str, str]] = {
    1: (2, "line", "line"),
    2: (3, "triangle", "triangle"),
    3: (4, "quad", "quadrangle"),
    4: (4, "tetra", "tetrahedron"),
    5: (8, "hexahedron", "hexahedron"),
    6: (6, "wedge", "prism"),
    7: (5, "pyramid", "pyramid"),
    8: (3, "line3", "3-node line"),
    9: (6, "triangle6", "6-node triangle"),
    10: (9, "quad9", "9-node quadrangle"),
    11: (10, "tetra10", "10-node tetrahedron"),
    12: (27, "hexahedron27", "27-node hexahedron"),
    13: (18, "wedge18", "18-node prism"),
    14: (14, "pyramid14", "14-node pyramid"),
    15: (1, "vertex", "point"),
}

_NODE_HEADERS = (b"$NOD", b"$NOE")  # Gmsh itself reads both spellings
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True  # the bytes ``bytes.split()`` splits on
_DOLLAR = ord("$")
_NODES_PER_TYPE = np.zeros(max(ELEMENT_TYPES) + 1, dtype=np.int64)
_NODES_PER_TYPE[list(ELEMENT_TYPES)] = [size for size, _, _ in ELEMENT_TYPES.values()]


@dataclass(eq=False)
class Gmsh1Block:
    """The elements of one type, in file order."""

    element_type: int
    nodes: np.ndarray  # (k, nodes per element) int64 indices into Gmsh1Mesh.points
    physical: np.ndarray  # (k,) int64 reg-phys
    elementary: np.ndarray  # (k,) int64 reg-elem
    lines: np.ndarray  # (k,) int64 line of each element in the file (1-based)

    @property
    def cell_type(self) -> str:
        """meshio's name for the type (``tetra``, ``triangle``, ...)."""
        return ELEMENT_TYPES[self.element_type][1]

    @property
    def words(self) -> str:
        return ELEMENT_TYPES[self.element_type][2]


@dataclass(eq=False)
class Gmsh1Mesh:
    """Nodes in file order and one block per element type (in order of first appearance)."""

    points: np.ndarray  # (n, 3) float64
    node_numbers: np.ndarray  # (n,) int64, the file's node-number of each point
    blocks: list[Gmsh1Block]


def is_gmsh1(head: bytes) -> bool:
    """Whether the start of a file (leading whitespace and byte-order mark removed) is a Gmsh 1 file."""
    return head.startswith(_NODE_HEADERS)


def read(path) -> Gmsh1Mesh:
    """Read a Gmsh 1 file (raises :class:`MeshError` naming the file and the line of the first defect)."""
    path = Path(path)
    try:
        data = read_input_bytes(path, max_bytes=MAX_MESH_FILE_BYTES, what="mesh")
    except InputFileError as exc:
        raise MeshError(str(exc)) from None
    return parse(data, path.name)


class _Tokens:
    """The whitespace-separated fields of a file: their byte offsets, the lines they are on, text on demand."""

    def __init__(self, data: bytes):
        if data.startswith(b"\xef\xbb\xbf"):
            data = b"   " + data[3:]  # a UTF-8 byte-order mark; keep the offsets
        self.data = data
        buf = np.frombuffer(data, dtype=np.uint8)
        in_word = np.zeros(len(buf) + 2, dtype=np.int8)
        in_word[1:-1] = ~_WHITESPACE[buf]
        changes = np.flatnonzero(np.diff(in_word))
        self.starts, self.ends = changes[0::2], changes[1::2]  # field k is data[starts[k]:ends[k]]
        newline = ord("\n") if b"\n" in data else ord("\r")  # old Mac files end lines with CR only
        line_starts = np.concatenate(([0], np.flatnonzero(buf == newline) + 1))
        # line_bounds[i]: the first field on line i + 1 or after it; the last entry is the number of fields
        self.line_bounds = np.append(np.searchsorted(self.starts, line_starts), len(self.starts))

    def __len__(self) -> int:
        return len(self.starts)

    def word(self, index: int) -> bytes:
        return self.data[self.starts[index] : self.ends[index]]

    def text(self, index: int, limit: int = 40) -> str:
        word = self.word(index).decode("utf-8", errors="replace")
        return word if len(word) <= limit else word[:limit] + "..."

    def line_of(self, index):
        """The 1-based line of field ``index`` (an int or an array of them)."""
        return np.searchsorted(self.line_bounds, index, side="right")

    def markers(self) -> np.ndarray:
        """Indices of the fields that start with ``$`` (section headers and ends)."""
        return np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8)[self.starts] == _DOLLAR)

    def rows(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """The first field of each line that has fields in ``[start, end)``, and how many it has there."""
        if end <= start:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        first_line, last_line = int(self.line_of(start)) - 1, int(self.line_of(end - 1)) - 1
        bounds = np.clip(self.line_bounds[first_line : last_line + 2], start, end)
        sizes = np.diff(bounds)
        kept = sizes > 0  # blank lines hold no field
        return bounds[:-1][kept], sizes[kept]

    def numbers(self, start: int, end: int, dtype, what: str, fail) -> np.ndarray:
        """Fields ``[start, end)`` as one array of ``dtype`` (np.int64 or np.float64); the first field that is
        not a number of that kind is reported through ``fail``."""
        if end <= start:
            return np.zeros(0, dtype=dtype)
        whole = dtype is np.int64
        try:
            values = np.fromstring(self.data[self.starts[start] : self.ends[end - 1]], dtype=dtype, sep=" ")
        except ValueError:
            values = None
        if values is not None and len(values) == end - start:
            if not whole:
                return values
            # numpy saturates whole numbers beyond int64 instead of refusing them
            extreme = np.flatnonzero((values == np.iinfo(np.int64).max) | (values == np.iinfo(np.int64).min))
            suspects = start + extreme
        else:
            suspects = range(start, end)
        checked = []
        for index in suspects:
            word = self.word(index)
            try:
                if b"_" in word:
                    raise ValueError("Python's digit grouping is no number in a mesh file")
                value = int(word) if whole else float(word)
            except ValueError:
                fail(index, f"{what} {self.text(index)!r} is not {'a whole number' if whole else 'a number'}")
            if whole and not -(2**63) <= value < 2**63:
                fail(index, f"{what} {self.text(index)} is too large (at most {2**63 - 1})")
            checked.append(value)
        if values is None or len(values) != end - start:
            values = np.array(checked, dtype=dtype)  # numbers Python reads though numpy's parser does not
        return values


def parse(data: bytes, label: str = "<gmsh1>") -> Gmsh1Mesh:
    """Parse the bytes of a Gmsh 1 file; ``label`` names it in messages."""
    tokens = _Tokens(data)

    def fail(index: int, message: str):
        line = int(tokens.line_of(min(index, len(tokens) - 1))) if len(tokens) else 1
        raise MeshError(f"{label}: line {line}: {message}")

    if not len(tokens):
        raise MeshError(f"{label}: the file is empty")
    if tokens.word(0) not in _NODE_HEADERS:
        fail(0, f"expected $NOD (a Gmsh 1 file), found {tokens.text(0)!r}")
    (nod, end_nod), (elm, end_elm) = _sections(tokens, tokens.markers(), fail)
    points, numbers = _nodes(tokens, nod, end_nod, fail)
    blocks = _elements(tokens, elm, end_elm, numbers, fail)
    return Gmsh1Mesh(points=points, node_numbers=numbers, blocks=blocks)


def _sections(tokens: _Tokens, markers: np.ndarray, fail):
    """Token indices of ($NOD, $ENDNOD) and ($ELM, $ENDELM), in this order; anything else is refused."""
    expected = [
        (_NODE_HEADERS, "$NOD"),
        ((b"$ENDNOD", b"$ENDNOE"), "$ENDNOD"),
        ((b"$ELM",), "$ELM"),
        ((b"$ENDELM",), "$ENDELM"),
    ]
    found: list[int] = []
    for position, (names, shown) in enumerate(expected):
        index = int(markers[position]) if position < len(markers) else None
        if index is not None and tokens.word(index) in names:
            if shown == "$ELM" and index != found[-1] + 1:
                fail(found[-1] + 1, f"unexpected {tokens.text(found[-1] + 1)!r} between $ENDNOD and $ELM")
            found.append(index)
            continue
        if not found:
            fail(0, f"expected $NOD (a Gmsh 1 file), found {tokens.text(0)!r}")
        opened = found[-1]
        if index is None and shown.startswith("$END"):
            fail(opened, f"the {tokens.text(opened)} section has no {shown}: the file ends first (cut short?)")
        if index is None:
            fail(opened, f"no {shown} section after {tokens.text(opened)}")
        if shown.startswith("$END"):
            opening = f"the {tokens.text(opened)} section of line {int(tokens.line_of(opened))}"
            fail(index, f"expected {shown} to close {opening}, found {tokens.text(index)!r}")
        fail(index, f"expected {shown}, found {tokens.text(index)!r}")
    if len(markers) > 4:
        fail(int(markers[4]), f"unexpected {tokens.text(int(markers[4]))!r} after $ENDELM")
    if found[3] + 1 < len(tokens):
        fail(found[3] + 1, f"unexpected {tokens.text(found[3] + 1)!r} after $ENDELM")
    return (found[0], found[1]), (found[2], found[3])


def _count(tokens: _Tokens, header: int, end: int, what: str, fail) -> int:
    """The number after a section header, alone on its line."""
    index = header + 1
    if index >= end:
        fail(header, f"{tokens.text(header)} has no number of {what}")
    try:
        count = int(tokens.word(index))
    except ValueError:
        fail(index, f"the number of {what} {tokens.text(index)!r} is not a whole number")
    if count < 0:
        fail(index, f"the number of {what} is negative ({count})")
    if index + 1 < end and tokens.line_of(index + 1) == tokens.line_of(index):
        fail(index, f"the number of {what} must be alone on its line")
    return count


def _nodes(tokens: _Tokens, header: int, end: int, fail) -> tuple[np.ndarray, np.ndarray]:
    count = _count(tokens, header, end, "nodes", fail)
    start = header + 2
    first, sizes = tokens.rows(start, end)
    bad = np.flatnonzero(sizes != 4)
    if bad.size:
        fail(int(first[bad[0]]), f"a node line has {int(sizes[bad[0]])} fields, expected 4 (node-number x y z)")
    if len(first) != count:
        fail(header + 1, f"$NOD count says {count} nodes, found {len(first)}")
    table = tokens.numbers(start, end, np.float64, "node field", fail).reshape(-1, 4)
    # node numbers were read as doubles: those that are not whole numbers below 2**53 are read again exactly
    column = table[:, 0]
    exact = np.isfinite(column) & (np.abs(column) < 2.0**53) & (column == np.round(column))
    numbers = np.where(exact, column, 0.0).astype(np.int64)
    for row in np.flatnonzero(~exact):
        index = int(first[row])
        try:
            value = int(tokens.word(index))
        except ValueError:
            fail(index, f"node number {tokens.text(index)!r} is not a whole number")
        if not -(2**63) <= value < 2**63:
            fail(index, f"node number {tokens.text(index)} is too large (at most {2**63 - 1})")
        numbers[row] = value
    order = np.argsort(numbers, kind="stable")
    repeated = np.flatnonzero(numbers[order][1:] == numbers[order][:-1])
    if repeated.size:
        earlier, later = order[repeated[0]], order[repeated[0] + 1]
        fail(
            int(first[later]),
            f"node {int(numbers[later])} is defined twice (also on line {int(tokens.line_of(first[earlier]))})",
        )
    return np.ascontiguousarray(table[:, 1:]), numbers


def _elements(tokens: _Tokens, header: int, end: int, numbers: np.ndarray, fail) -> list[Gmsh1Block]:
    count = _count(tokens, header, end, "elements", fail)
    start = header + 2
    first, sizes = tokens.rows(start, end)
    short = np.flatnonzero(sizes < 5)
    if short.size:
        fail(
            int(first[short[0]]),
            f"an element line has {int(sizes[short[0]])} fields, expected at least 5 "
            "(elm-number elm-type reg-phys reg-elem number-of-nodes node-number-list)",
        )
    values = tokens.numbers(start, end, np.int64, "element field", fail)
    local = first - start
    head = values[local[:, None] + np.arange(5)]
    types, listed = head[:, 1], head[:, 4]
    unknown = np.flatnonzero(~np.isin(types, list(ELEMENT_TYPES)))
    if unknown.size:
        row = unknown[0]
        fail(
            int(first[row]),
            f"element {int(head[row, 0])} has unknown type {int(types[row])} (Gmsh 1 types are 1 to 15)",
        )
    wrong_size = np.flatnonzero(listed != sizes - 5)
    if wrong_size.size:
        row = wrong_size[0]
        fail(
            int(first[row]),
            f"element {int(head[row, 0])} says {int(listed[row])} nodes but the line lists {int(sizes[row] - 5)}",
        )
    expected = _NODES_PER_TYPE[types]
    wrong_type = np.flatnonzero(listed != expected)
    if wrong_type.size:
        row = wrong_type[0]
        element_type = int(types[row])
        fail(
            int(first[row]),
            f"element {int(head[row, 0])} is a {ELEMENT_TYPES[element_type][2]} (type {element_type}) "
            f"with {int(listed[row])} nodes; it needs {int(expected[row])}",
        )
    if len(first) != count:
        fail(header + 1, f"$ELM count says {count} elements, found {len(first)}")
    order = np.argsort(numbers, kind="stable")
    sorted_numbers = numbers[order]
    blocks = []
    for element_type in dict.fromkeys(types.tolist()):
        rows = np.flatnonzero(types == element_type)
        width = ELEMENT_TYPES[element_type][0]
        referenced = values[local[rows, None] + 5 + np.arange(width)]
        position = np.minimum(np.searchsorted(sorted_numbers, referenced), max(len(numbers) - 1, 0))
        defined = sorted_numbers[position] == referenced if len(numbers) else np.zeros(referenced.shape, bool)
        if not defined.all():
            row, column = np.argwhere(~defined)[0]
            fail(
                int(first[rows[row]]),
                f"element {int(head[rows[row], 0])} uses node {int(referenced[row, column])}, which $NOD "
                "does not define",
            )
        blocks.append(
            Gmsh1Block(
                element_type=element_type,
                nodes=order[position],
                physical=head[rows, 2],
                elementary=head[rows, 3],
                lines=tokens.line_of(first[rows]).astype(np.int64),
            )
        )
    return blocks
