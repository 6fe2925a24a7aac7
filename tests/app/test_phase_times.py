"""The status bar's phase times (main_window.phase_times) read from a frame's report."""

from __future__ import annotations

from types import SimpleNamespace

from softsim.app.main_window import phase_times


def test_static_frame_phases_come_from_its_times():
    report = SimpleNamespace(times={"assembly": 0.004, "factorization": 0.002, "newton_solve": 0.001, "build": 0.5,
                                    "W": 0.003, "constraint_solve": 0.0005},
                             newton=SimpleNamespace(assembly_time=9.0, factorization_time=9.0),
                             constraint=SimpleNamespace(time=9.0))
    assert phase_times(report, 0.010) == {"assembly": 0.004, "factorization": 0.002, "newton": 0.001, "W": 0.003,
                                          "constraint": 0.0005, "render": 0.010}


def test_missing_phases_fall_back_on_the_solver_reports_or_none():
    # a dynamic frame: no factorization, no Newton remainder, no W in its times
    report = SimpleNamespace(times={"assembly": 0.004, "linear_solve": 0.002, "constraint_solve": 0.001},
                             newton=SimpleNamespace(assembly_time=1.0, factorization_time=0.25), constraint=None)
    assert phase_times(report, None) == {"assembly": 0.004, "factorization": 0.25, "newton": None, "W": None,
                                         "constraint": 0.001, "render": None}
    bare = SimpleNamespace(times={}, newton=None, constraint=SimpleNamespace(time=0.125))
    assert phase_times(bare, 0.5) == {"assembly": None, "factorization": None, "newton": None, "W": None,
                                      "constraint": 0.125, "render": 0.5}
