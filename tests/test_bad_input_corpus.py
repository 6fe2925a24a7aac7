"""Issue 29's target: a generated corpus of more than 400 bad inputs (scene files, ``--set`` values, meshes, sweep
specs, samples files, ``--out`` states), each run through the CLI's main function in this process, gives 0
internal errors, 0 hangs, 0 memory blow-ups and 0 silent acceptances, and every message names the file or the
key. Valid inputs mixed in (a value set to itself, a quoted string, a BOM, an earlier run's directory) must be
accepted. The table of counts is printed (``pytest -s``)."""

from __future__ import annotations

import logging
from collections import Counter

from tests.bad_input_corpus import all_cases, run_case

KINDS = ("refused", "warned", "accepted", "internal", "hang", "memory")


def counts_table(outcomes) -> str:
    """The counts per category: cases, and how many were refused, warned, accepted (valid), internal errors,
    hangs and memory blow-ups."""
    categories = list(dict.fromkeys(o.case.category for o in outcomes))
    header = "| category | cases | " + " | ".join(KINDS) + " | wrong |"
    lines = [header, "|" + "---|" * (len(KINDS) + 3)]
    for category in [*categories, "all"]:
        chosen = [o for o in outcomes if category in ("all", o.case.category)]
        counts = Counter(o.kind for o in chosen)
        wrong = sum(not o.ok for o in chosen)
        lines.append(f"| {category} | {len(chosen)} | " + " | ".join(str(counts[k]) for k in KINDS) + f" | {wrong} |")
    return "\n".join(lines)


def test_the_bad_input_corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    cases = all_cases(tmp_path)
    assert len(cases) >= 400
    outcomes = [run_case(case) for case in cases]
    wrong = [f"{o.case.category}: {o.case.name}: {o.why}: {o.stderr.strip()[:300]!r}" for o in outcomes if not o.ok]
    assert wrong == [], f"{len(wrong)} case(s) wrong:\n" + "\n".join(wrong)
    kinds = Counter(o.kind for o in outcomes)
    assert (kinds["internal"], kinds["hang"], kinds["memory"]) == (0, 0, 0)
    assert {o.case.category for o in outcomes} == {"scene", "--set", "mesh", "sweep spec", "samples", "--out"}
