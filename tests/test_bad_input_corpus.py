"""Issue 29's target: a generated corpus of more than 400 bad inputs (scene files, ``--set`` values, meshes, sweep
specs, samples files, ``--out`` states), each run through the CLI's main function in this process, gives 0
internal errors, 0 hangs, 0 memory blow-ups and 0 silent acceptances, and every message names the file or the
key. Valid inputs mixed in (a value set to itself, a quoted string, a BOM, an earlier run's directory) must be
accepted."""

from __future__ import annotations

import logging
from collections import Counter

from tests.bad_input_corpus import all_cases, run_case


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
