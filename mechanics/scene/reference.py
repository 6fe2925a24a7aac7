"""The reference table of scene keys, generated from their declarations (:mod:`mechanics.scene.schema`).

``python -m softsim.mechanics.scene.reference docs/scene-format.md`` rewrites the part of that file between
the two marker lines; a test checks that the file in the repository is up to date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from softsim.mechanics.scene.kinds import show
from softsim.mechanics.scene.schema import ByValue, Declaration, SceneSpec, Table, TableList, declarations
from softsim.mechanics.units import QUANTITIES

BEGIN = "<!-- begin: generated from the declarations; do not edit -->"
END = "<!-- end: generated -->"


def declared_keys(cls: type = SceneSpec, prefix: str = "") -> list[tuple[str, type, Declaration]]:
    """``(generic key path, table class, declaration)`` of every value key, in file order; list items are not
    indexed (``body.cable.value``)."""
    rows = []
    for declaration in declarations(cls):
        path = f"{prefix}.{declaration.key}" if prefix else declaration.key
        if isinstance(declaration.kind, Table | TableList):
            rows += declared_keys(declaration.kind.cls, path)
        else:
            rows.append((path, cls, declaration))
    return rows


def default_text(path: str, declaration: Declaration) -> str:
    if declaration.key == "name" and declaration.required:  # the loader names unnamed items
        return f"{path.split('.')[-2]}<i>"
    if declaration.required:
        return "required"
    if declaration.default is None:
        return "unset"
    return show(declaration.kind.to_toml(declaration.default))


def unit_text(declaration: Declaration) -> str:
    """``"pressure: Pa / kPa"`` (SI / mm-kg-s); a :class:`ByValue` unit lists one entry per value."""
    unit = declaration.unit
    if unit is None:
        return ""
    if isinstance(unit, ByValue):
        return "; ".join(f"{value}: {' / '.join(QUANTITIES[q])}" for value, q in unit.quantities.items())
    return f"{unit}: {' / '.join(QUANTITIES[unit])}"


def key_table() -> str:
    """The Markdown table of every key: key path, allowed values, default, unit, when used, meaning."""
    lines = ["| key | allowed | default | unit (SI / mm-kg-s) | used when | meaning |", "|---|---|---|---|---|---|"]
    for path, _cls, d in declared_keys():
        alias = f" (alias `{d.alias}`)" if d.alias else ""
        cells = [f"`{path}`{alias}", d.kind.allowed, f"`{default_text(path, d)}`", unit_text(d),
                 d.when.text if d.when else "", d.help]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def update(path: str | Path) -> bool:
    """Rewrite the generated part of ``path``; True when the file changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{key_table()}{END}{tail}"
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


if __name__ == "__main__":
    print("updated" if update(sys.argv[1]) else "up to date")
