"""A long session: 2000 frames with random parameter edits raise nothing and keep memory bounded (the window's
process and the simulation process)."""

import os

import numpy as np
import pytest

from softsim.app.resources import default_scene

pytestmark = pytest.mark.gui
FRAMES = 2000
#: RSS growth allowed between frame 200 (warm caches: numba, VTK, Pardiso) and frame 2000;
#: measured -12 to +29 MB over three runs (allocator noise)
RSS_GROWTH_BOUND_MB = 64.0
EDIT_EVERY = 8


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size of a process (default: this one) in MB, from /proc/PID/statm (pages)."""
    with open(f"/proc/{pid}/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_2000_frames_with_random_parameter_changes(main_window, qtbot):
    assert main_window.open_path(default_scene())
    session = main_window.session
    errors = []
    session.message.connect(lambda level, text: errors.append(text) if level == "error" else None)
    # cheap frames (the soak is about robustness and memory, not accuracy): few Newton iterations, no
    # re-equilibration iterations
    assert session.set_parameter("solver.newton.newton_iterations", 2) is None
    assert session.set_parameter("solver.newton.correction", "linear") is None
    random = np.random.default_rng(7)
    edits = [
        ("body.finger.cable.cable.value", lambda: float(random.uniform(0.0, 8.0))),
        ("body.finger.material.youngModulus", lambda: float(random.uniform(300.0, 1200.0))),
        ("body.finger.material.poissonRatio", lambda: float(random.uniform(0.3, 0.48))),
        ("solver.constraint.tolerance", lambda: float(10 ** random.uniform(-10, -4))),
        ("solver.constraint.maxIterations", lambda: int(random.integers(5, 200))),
        ("scene.gravity", lambda: [0.0, float(random.uniform(-9810.0, 0.0)), 0.0]),
    ]
    refused = []
    rss = {}

    def edit() -> None:
        key, value = edits[int(random.integers(len(edits)))]
        problem = session.set_parameter(key, value())
        if problem is not None:
            refused.append(problem)

    def total_rss() -> float:
        pid = getattr(session.runner, "pid", None)  # the simulation process, when the scene runs in one
        return rss_mb() + (rss_mb(pid) if pid is not None else 0.0)

    done = session.runner.frames_attempted
    while done < FRAMES:
        # an edit every few frames (each one costs a new factorization); the frames are stepped, since a static
        # scene that plays stops solving once nothing changes
        edit()
        target = done + EDIT_EVERY
        session.step_once(EDIT_EVERY)
        qtbot.waitUntil(lambda target=target: session.runner.frames_attempted >= target, timeout=300000)
        done = session.runner.frames_attempted
        if 200 <= done and "warm" not in rss:
            rss["warm"] = total_rss()
    session.poll()
    rss["end"] = total_rss()
    growth = rss["end"] - rss["warm"]
    assert errors == []
    assert refused == []
    assert np.all(np.isfinite(session.latest_frame.x))
    assert session.runner.frames_run >= FRAMES * 0.9  # a few frames may fail to converge and be reported
    assert growth < RSS_GROWTH_BOUND_MB, f"RSS {rss['warm']:.1f} -> {rss['end']:.1f} MB over {done} frames"
