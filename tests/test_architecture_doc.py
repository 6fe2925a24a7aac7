"""ARCHITECTURE.md names every module of the package (issue 32): each module of app/, mechanics/ and meshes/
appears in it in code format, by its bare name (``cable``) or its dotted path, so that a new module gets its line
there."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def unnamed_modules(text: str) -> list[str]:
    """The modules (paths relative to the repository) whose name appears in no code span of ``text``."""
    code = " ".join(re.findall(r"`([^`]*)`", text))
    missing = []
    for package in ("app", "mechanics", "meshes"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative.parent == Path(package) and path.stem == "__init__":
                continue  # the package itself
            name = path.parent.name if path.stem == "__init__" else path.stem
            if not re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", code):
                missing.append(str(relative))
    return missing


def test_architecture_names_every_module():
    assert unnamed_modules((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")) == []


def test_the_check_finds_a_module_left_out():
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    left_out = unnamed_modules(text.replace("`cable_rows`", "cable rows"))
    assert sorted(set(left_out) - set(unnamed_modules(text))) == ["mechanics/constraints/cable_rows.py"]
