"""What the panels know about each scene key: its declaration, its section, its tooltip, whether it is in use.

Everything comes from the key's one declaration in :mod:`mechanics.scene.schema` (kind, default, unit, help
text, the setting under which it applies), so a key added there appears in the panels with its range, unit and
meaning without touching the GUI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from softsim.mechanics.scene.edit import get_value
from softsim.mechanics.scene.kinds import Kind, Name
from softsim.mechanics.scene.reference import default_text
from softsim.mechanics.scene.schema import EXCLUSIVE_KEYS, Declaration, SceneSpec, Table, TableList, declarations
from softsim.mechanics.units import unit_label

__all__ = [
    "ParameterInfo",
    "describe_parameters",
    "section_order",
    "tooltip_for",
    "is_relevant",
    "hidden_when_irrelevant",
    "relevance_key",
    "format_real",
    "EXPANDED_SECTIONS",
]


@dataclass(frozen=True)
class ParameterInfo:
    """One editable value of the scene.

    path: key path as ``mechanics.scene.list_parameters`` gives it (``body.finger.material.youngModulus``);
    generic: the same with item names and indices removed (``body.material.youngModulus``); key: the last TOML
    key; kind: the value's Kind; value: the current value (None = unset); section: the panel group it belongs
    to; optional: whether the key may be unset; declaration: the key's declaration; unit: its unit label in the
    scene's units ("" when dimensionless); exclusive: whether the key is one of a group of which only one may be
    set (``schema.EXCLUSIVE_KEYS``: setting it unsets the others, possibly whole tables).
    """

    path: str
    generic: str
    key: str
    kind: Kind
    value: Any
    section: str
    optional: bool
    declaration: Declaration
    unit: str
    exclusive: bool = False

_FIXED_SECTIONS = {
    "scene": "Scene",
    "solver.newton": "Newton",
    "solver.linear": "Linear solver",
    "solver.constraint": "Constraint solver",
    "solver.dynamic": "Dynamics",
    "drag": "Mouse drag",
}
_SECTION_RANK = ["Newton", "Linear solver", "Constraint solver", "Scene", "Dynamics", "Material", "Cable",
                 "Cavity", "Effector", "Body", "Obstacle", "Mouse drag"]
#: Sections shown expanded when a scene opens (the others start collapsed).
EXPANDED_SECTIONS = ("Newton", "Linear solver", "Constraint solver", "Scene", "Material")


def section_order(section: str) -> int:
    """Sort rank of a section title (``"Material: finger"`` ranks as ``"Material"``)."""
    head = section.split(":")[0]
    return _SECTION_RANK.index(head) if head in _SECTION_RANK else len(_SECTION_RANK)


def _section(path_parts: list[str], item_names: list[str]) -> str:
    """Group title of a key from its generic parts (``body, cable, value``) and the item names met."""
    generic = ".".join(path_parts)
    for prefix, title in _FIXED_SECTIONS.items():
        if generic == prefix or generic.startswith(prefix + "."):
            return title
    if path_parts[0] == "body":
        body = item_names[0]
        if len(path_parts) > 1 and path_parts[1] == "material":
            return f"Material: {body}"
        if len(path_parts) > 2 and path_parts[1] in ("cable", "cavity", "effector"):
            return f"{path_parts[1].capitalize()}: {item_names[1]}"
        return f"Body: {body}"
    if path_parts[0] == "obstacle":
        return f"Obstacle: {item_names[0]}"
    return path_parts[0].capitalize()


def describe_parameters(spec: SceneSpec) -> list[ParameterInfo]:
    """Every value of ``spec`` with its declaration and section, in ``list_parameters`` order and paths."""
    out: list[ParameterInfo] = []
    _walk(spec, spec.scene.units, "", [], [], out)
    return out


def _walk(obj: Any, units: str, prefix: str, generic: list[str], names: list[str], out: list[ParameterInfo]) -> None:
    for declaration in declarations(type(obj)):
        kind, key = declaration.kind, declaration.key
        value = getattr(obj, declaration.attribute)
        path = f"{prefix}.{key}" if prefix else key
        parts = [*generic, key]
        if isinstance(kind, Table) and value is not None:
            _walk(value, units, path, parts, names, out)
        elif isinstance(kind, TableList):
            for i, item in enumerate(value):
                name = getattr(item, "name", None)
                _walk(item, units, f"{path}.{name}" if name else f"{path}[{i}]", parts,
                      [*names, name or f"{key}[{i}]"], out)
        else:
            out.append(ParameterInfo(
                path=path, generic=".".join(parts), key=key, kind=kind, value=value, section=_section(parts, names),
                optional=not declaration.required and declaration.default is None, declaration=declaration,
                unit=unit_label(declaration.unit_of(obj), units),
                exclusive=any(key in group for group in EXCLUSIVE_KEYS.get(type(obj), ()))))


def tooltip_for(info: ParameterInfo) -> str:
    """Multi-line tooltip: key path, meaning, allowed range with unit, default, when it applies."""
    declaration = info.declaration
    unit = f" [{info.unit}]" if info.unit else ""
    lines = [info.path, declaration.help, f"allowed: {info.kind.allowed}{unit}",
             f"default: {default_text(info.generic, declaration)}"]
    if info.optional:
        lines.append("leave empty to unset")
    if declaration.when is not None:
        lines.append(f"used when {declaration.when.text}")
    return "\n".join(line for line in lines if line)


def is_relevant(info: ParameterInfo, spec: SceneSpec) -> bool:
    """Whether the key is used with the current settings (its declaration's condition, e.g. the cg settings
    only when the linear solver is cg; the dynamics settings only in dynamic mode). Names are never edited in
    the panel (they are paths)."""
    if isinstance(info.kind, Name):
        return False
    path = relevance_key(info)
    if path is None:
        return True
    value = get_value(spec, path)
    if isinstance(value, bool):  # a flag: the declaration names it true / false, as the file writes it
        value = "true" if value else "false"
    return value in info.declaration.when.values


def hidden_when_irrelevant(info: ParameterInfo) -> bool:
    """Whether the key's row is hidden, not only greyed, while the key is unused: a key used only when a flag is
    set (a servo's minAngle, maxAngle and maxAngleVariation only on an ``actuated`` fixed region) is noise on
    every other table; a key used under one choice of a setting stays visible, greyed, to show what the other
    choice offers."""
    when = info.declaration.when
    return when is not None and set(when.values) <= {"true", "false"}


def relevance_key(info: ParameterInfo) -> str | None:
    """The key path whose value decides whether the key is used (``solver.linear.type`` for the cg settings,
    ``scene.mode`` for the dynamics), or None for a key always used."""
    when = info.declaration.when
    if when is None:
        return None
    return when.key if "." in when.key else f"{info.path.rsplit('.', 1)[0]}.{when.key}"


def format_real(value: float) -> str:
    """Short text that reads back to exactly ``value``: ``600``, ``0.45``, ``1e-08``, ``inf``."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    short = f"{value:.6g}"
    return short if float(short) == value else repr(float(value))
