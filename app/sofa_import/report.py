"""The import report: what was inferred, and every component softsim could not translate, in one message.

Each skipped component is named by its path in the scene graph (``/finger/visu/OglModel``) with why it is
skipped and whether it matters for the mechanics or is visual only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ImportReport", "Skipped"]


@dataclass(frozen=True)
class Skipped:
    """A component left out: ``path`` in the graph, SOFA ``type``, ``reason``, ``mechanics`` (False: visual
    only)."""

    path: str
    type: str
    reason: str
    mechanics: bool


@dataclass
class ImportReport:
    """``source`` (the SOFA file), ``notes`` (inferences and departures), ``skipped``, ``implied`` (component
    types whose job softsim's own solvers do: linear solvers, constraint corrections, animation loops)."""

    source: str
    notes: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    implied: set[str] = field(default_factory=set)

    def skip(self, path: str, type_name: str, reason: str, *, mechanics: bool) -> None:
        self.skipped.append(Skipped(path, type_name, reason, mechanics))

    def text(self) -> str:
        """The whole report as one message."""
        lines = [f"Imported {self.source} (SOFA scene)."]
        lines += [f"- {note}" for note in self.notes]
        if self.implied:
            lines.append(f"- Done by softsim's own solvers, not translated: {', '.join(sorted(self.implied))}.")
        mechanics = [s for s in self.skipped if s.mechanics]
        visual = [s for s in self.skipped if not s.mechanics]
        if mechanics:
            lines.append(f"Not translated, matters for the mechanics ({len(mechanics)}):")
            lines += [f"  {s.path} ({s.type}): {s.reason}" for s in mechanics]
        if visual:
            lines.append(f"Not translated, visual only ({len(visual)}):")
            lines += [f"  {s.path} ({s.type}): {s.reason}" for s in visual]
        if not self.skipped:
            lines.append("Every component was translated.")
        return "\n".join(lines)
