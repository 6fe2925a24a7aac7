"""What the panels know about each scene key: its kind, its section, its tooltip, whether it is in use.

Everything is derived from :mod:`mechanics.scene.schema` (the dataclass metadata and the key table of its
docstring), so a key added to the schema appears in the panels with its range without touching the GUI.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import softsim.mechanics.scene.schema as schema
from softsim.mechanics.scene.kinds import Choice, Integer, Kind, Name, Real
from softsim.mechanics.scene.schema import SceneSpec, Table, TableList, schema_fields

__all__ = [
    "ParameterInfo",
    "describe_parameters",
    "section_order",
    "tooltip_for",
    "is_relevant",
    "schema_table",
    "allowed_text",
    "format_real",
    "EXPANDED_SECTIONS",
]


@dataclass(frozen=True)
class ParameterInfo:
    """One editable value of the scene.

    path: key path as ``mechanics.scene.list_parameters`` gives it (``body.finger.material.youngModulus``);
    generic: the same with item names and indices removed (``body.material.youngModulus``), the key of the
    schema table; key: the last TOML key; kind: the value's Kind; value: the current value (None = unset);
    section: the panel group it belongs to; optional: whether the key may be unset.
    """

    path: str
    generic: str
    key: str
    kind: Kind
    value: Any
    section: str
    optional: bool


#: Short meanings of the solver keys (the schema table gives ranges and defaults, not what a key does).
MEANINGS = {
    "solver.newton.newton_iterations": "Maximum Newton-Raphson iterations per load step.",
    "solver.newton.correction_tolerance_threshold":
        "Converged when |dx| < threshold * |U| (relative correction).",
    "solver.newton.residual_tolerance_threshold": "Converged when |R| < threshold * |R0| (relative residual).",
    "solver.newton.shoud_diverge_when_residual_is_growing":
        "Stop and report divergence when the residual grows between two iterations.",
    "solver.newton.warm_start": "An iterative linear solver starts from the previous Newton increment.",
    "solver.newton.printLog": "Log every Newton iteration (residuals, times).",
    "solver.newton.line_search": "Backtracking line search on each Newton correction.",
    "solver.newton.backtrack_invalid_steps":
        "A Newton step that inverts an element or gives a NaN residual turns the line search on for the rest "
        "of the load step (off: Caribou's plain Newton, which stops as diverged).",
    "solver.newton.load_steps": "Apply the external load in this many equal increments.",
    "solver.newton.correction":
        "equilibrium: constrained Newton iterations end every static frame at the nonlinear constrained "
        "equilibrium (at most newton_iterations); linear: SOFA's single linear correction x_free + K^-1 J^T "
        "lambda.",
    "solver.linear.type": "Direct (sparse LU/Cholesky) or conjugate gradient.",
    "solver.linear.backend": "Direct solver library: MKL Pardiso or SciPy.",
    "solver.constraint.type": "Constraint solver of the Gauss-Seidel / Jacobi family or the exact LCP solve.",
    "solver.constraint.maxIterations": "Maximum constraint-solver iterations per frame.",
    "solver.constraint.tolerance": "Convergence tolerance of the constraint solver.",
    "solver.constraint.sor": "Successive over-relaxation factor.",
    "solver.constraint.scaleTolerance": "Scale the tolerance by the number of constraint rows (SOFA).",
    "solver.constraint.allVerified": "Stop only when every constraint is verified.",
    "solver.constraint.regularizationTerm": "Added to the diagonal of W.",
    "solver.constraint.useSpectralCorrection": "ImprovedJacobi: scale each step by the spectral radius factor.",
    "solver.constraint.spectralCorrectionFactor":
        "ImprovedJacobi: rho = factor * min(1, 1.8 / spr(D^-1 W)).",
    "solver.constraint.useConjugateResidue": "ImprovedJacobi: conjugate-residue momentum.",
    "solver.constraint.conjugateResidueSpeedFactor": "ImprovedJacobi: speed factor of the momentum.",
    "solver.constraint.sofaSpectralRadius": "ImprovedJacobi: SOFA's unit-dependent spectral radius estimate.",
    "scene.mode": "Static equilibrium per frame or implicit dynamics with time step dt.",
    "scene.gravity": "Gravity acceleration [length/s^2].",
    "body.material.model": "Constitutive model of the elements.",
    "body.material.youngModulus": "Young's modulus [pressure].",
    "body.material.poissonRatio": "Poisson's ratio (0.5 is incompressible).",
    "body.material.rotation_method": "How the corotational model extracts element rotations.",
}

#: Keys used only by one value of a ``type`` key: (key path prefix, type value) -> keys.
_ONLY_FOR = {
    ("solver.linear.", "direct"): {"backend"},
    ("solver.linear.", "cg"): {"maximum_number_of_iterations", "residual_tolerance_threshold",
                               "preconditioning_method"},
    ("solver.constraint.", "ImprovedJacobi"): {"useSpectralCorrection", "spectralCorrectionFactor",
                                               "useConjugateResidue", "conjugateResidueSpeedFactor",
                                               "sofaSpectralRadius"},
}

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
    """Every value of ``spec`` with its kind and section, in ``list_parameters`` order and paths."""
    out: list[ParameterInfo] = []
    _walk(spec, "", [], [], out)
    return out


def _walk(obj: Any, prefix: str, generic: list[str], names: list[str], out: list[ParameterInfo]) -> None:
    for key, attribute, kind, _alias, required in schema_fields(type(obj)):
        value = getattr(obj, attribute)
        path = f"{prefix}.{key}" if prefix else key
        parts = [*generic, key]
        if isinstance(kind, Table) and value is not None:
            _walk(value, path, parts, names, out)
        elif isinstance(kind, TableList):
            for i, item in enumerate(value):
                name = getattr(item, "name", None)
                _walk(item, f"{path}.{name}" if name else f"{path}[{i}]", parts, [*names, name or f"{key}[{i}]"],
                      out)
        else:
            optional = not required and _default_is_none(type(obj), attribute)
            out.append(ParameterInfo(path=path, generic=".".join(parts), key=key, kind=kind, value=value,
                                     section=_section(parts, names), optional=optional))


def _default_is_none(cls: type, attribute: str) -> bool:
    return cls.__dataclass_fields__[attribute].default is None


# -- the key table of the schema docstring ----------------------------------------------------------------
_TABLE: dict[str, tuple[str, str]] | None = None


def schema_table() -> dict[str, tuple[str, str]]:
    """``generic key -> (allowed, default)`` parsed from the table in ``mechanics.scene.schema``'s docstring
    (``body.cable.maxForce -> ("[-inf, inf], min <= max", "opt.")``)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _parse_table(schema.__doc__ or "")
    return _TABLE


def _parse_table(doc: str) -> dict[str, tuple[str, str]]:
    lines = doc.splitlines()
    rulers = [i for i, line in enumerate(lines) if line.startswith("====")]
    if len(rulers) < 3:
        return {}
    starts = [m.start() for m in re.finditer(r"=+", lines[rulers[0]])]
    if len(starts) != 3:
        return {}
    rows: list[list[str]] = []
    for line in lines[rulers[1] + 1:rulers[2]]:
        cells = [line[starts[0]:starts[1]], line[starts[1]:starts[2]], line[starts[2]:]]
        if line[:1].strip():
            rows.append([c.strip() for c in cells])
        elif rows:
            row = rows[-1]
            extra = cells[0].strip()
            if extra:
                row[0] += extra if row[0].endswith(".") else " " + extra
            row[1] = f"{row[1]} {cells[1].strip()}".strip()
            row[2] = f"{row[2]} {cells[2].strip()}".strip()
    table: dict[str, tuple[str, str]] = {}
    for key_text, allowed, default in rows:
        keys = _expand_keys(key_text)
        allowed_parts, default_parts = _split_per_key(allowed, len(keys)), _split_per_key(default, len(keys))
        for key, key_allowed, key_default in zip(keys, allowed_parts, default_parts, strict=True):
            table.setdefault(key, (key_allowed, key_default))
    return table


def _split_per_key(text: str, count: int) -> list[str]:
    """A cell describing several keys at once (``"true / false"`` for ``warm_start / printLog``) split into
    one part per key when it has exactly that many parts; else the whole cell for each key."""
    if count > 1:
        for separator in (" / ", ", "):
            parts = _split_top_level(text, separator)
            if len(parts) == count:
                return [p.strip() for p in parts]
    return [text] * count


def _split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets: ``"[0, inf), 1"`` -> ``["[0, inf)", "1"]``."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _expand_keys(text: str) -> list[str]:
    """``"body.cable[].minForce, maxForce"`` -> ``["body.cable.minForce", "body.cable.maxForce"]``."""
    cleaned = re.sub(r"\([^)]*\)", " ", text).replace("*", " ").replace("[]", "")
    if ":" in cleaned:
        prefix, rest = cleaned.split(":", 1)
        names = [n.strip() for n in re.split(r"[,|/+]", rest) if n.strip()]
        return [f"{prefix.strip()}.{n.split()[0]}" for n in names]
    parts = [p.strip() for p in re.split(r"[,|/]", cleaned) if p.strip()]
    if not parts:
        return []
    first = parts[0]
    if " " in first:
        prefix, name = first.split(None, 1)
    elif "." in first:
        prefix, name = first.rsplit(".", 1)
    else:
        return [first]
    return [f"{prefix}.{n.split()[0]}" for n in [name, *parts[1:]]]


def allowed_text(kind: Kind) -> str:
    """The allowed values of a kind, as the scene errors write them: ``(-1, 0.5)``, ``[1, inf)``."""
    if isinstance(kind, Real):
        return kind.interval
    if isinstance(kind, Integer):
        lo = "(-inf" if kind.lo is None else f"[{kind.lo}"
        hi = "inf)" if kind.hi is None else f"{kind.hi}]"
        return f"an integer in {lo}, {hi}"
    if isinstance(kind, Choice):
        return " | ".join(kind.options)
    return kind.description


def tooltip_for(info: ParameterInfo) -> str:
    """Multi-line tooltip: key path, meaning, allowed range, default, unset meaning."""
    lines = [info.path]
    meaning = MEANINGS.get(info.generic)
    if meaning:
        lines.append(meaning)
    lines.append(f"allowed: {allowed_text(info.kind)}")
    row = schema_table().get(info.generic)
    if row is not None:
        documented, default = row
        if documented and documented != allowed_text(info.kind):
            lines.append(f"schema: {documented}")
        if default:
            lines.append(f"default: {default}")
    if info.optional:
        lines.append("leave empty to unset")
    for (prefix, type_value), keys in _ONLY_FOR.items():
        if info.path.startswith(prefix) and info.key in keys:
            lines.append(f"used when type = {type_value}")
    return "\n".join(lines)


def is_relevant(info: ParameterInfo, spec: SceneSpec) -> bool:
    """Whether the key is used with the current settings (a cg setting is not when the type is direct;
    the dynamics settings only in dynamic mode). Names are never edited in the panel (they are paths)."""
    if isinstance(info.kind, Name):
        return False
    if info.path.startswith("solver.dynamic."):
        return spec.scene.mode == "dynamic"
    for (prefix, type_value), keys in _ONLY_FOR.items():
        if info.path.startswith(prefix) and info.key in keys:
            table = spec.solver.linear if prefix == "solver.linear." else spec.solver.constraint
            return table.type == type_value
    return True


def format_real(value: float) -> str:
    """Short text that reads back to exactly ``value``: ``600``, ``0.45``, ``1e-08``, ``inf``."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    short = f"{value:.6g}"
    return short if float(short) == value else repr(float(value))
