"""The real-robot suite (issue 28, item 8): SoftRobots' own robots, driven as their users drive them.

For each scene of tests/data/softrobots (suite.py lists the actuator, its target and its ramp), through the public
API only (Scene.load, scene.set, scene.step, report.converged, scene.outputs):

- jump: from rest, the actuator set to its target and one frame solved;
- ramp: the actuator set to each ramp value in turn, one frame per value;
- typed: a user typing values, successive single-frame jumps to values drawn in [0, 1.2 x the target]
  (suite.typed_values, three seeds); also for the shipped scenes.

Every frame must converge, and the actuator must read the value set (or, where the example limits the change
per frame, maxDispVariation, the value that limit allows) after the frame.

The xfail marks record what the solver does on each case that still fails (measured on this project's 2-core
machine); they are strict, so a case that starts to pass fails the suite until its mark is removed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SUITE_PATH = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "suite.py"


def _load_suite():
    name = "softrobots_suite"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _SUITE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


suite = _load_suite()

#: (case, mode) -> what happens now (measured on the exact-tangent solver with automatic increments)
XFAIL = {
}


def _params():
    params = []
    for case in suite.CASES + suite.SHIPPED:
        for mode in suite.MODES if case in suite.CASES else ("typed",):
            reason = XFAIL.get((case.name, mode))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, mode, marks=marks, id=f"{case.name}-{mode}"))
    return params


@pytest.mark.parametrize(("case", "mode"), _params())
def test_softrobots_case(case, mode):
    records = suite.run(case, mode)
    expected = len(suite.TYPED_SEEDS) * suite.TYPED_FRAMES if mode == "typed" else len(suite.values_for(case, mode))
    assert len(records) == expected
    bad = suite.failures(case, records)
    assert not bad, f"{case.name} {mode}: {len(bad)} of {len(records)} frames bad:\n" + "\n".join(bad)


def test_every_scene_is_in_the_suite():
    scenes = {path.name for path in _SUITE_PATH.parent.glob("*.toml")}
    assert scenes == {case.scene.name for case in suite.CASES}


def test_every_xfail_names_a_case():
    names = {(case.name, mode) for case in suite.CASES + suite.SHIPPED for mode in suite.MODES}
    assert set(XFAIL) <= names
