"""The watchdog's rules with a clock passed in: how long a request may wait, when it is overdue, how a scene being
built is timed, and when a busy, quiet process is asked for an answer."""

import pytest

from softsim.app.watchdog import Watchdog, hang_minimum


def _timed(watchdog: Watchdog) -> Watchdog:
    """With one 0.1 s frame timed (done at time 0)."""
    watchdog.frame_done(0.1, 0.0)
    return watchdog


def test_the_limit_is_the_largest_of_the_minimum_the_frames_and_the_builds():
    watchdog = Watchdog(minimum=20.0, factor=20.0, build_factor=3.0, first_frame=120.0)
    assert watchdog.limit() == 120.0  # no frame timed yet: the first frame compiles the kernels
    watchdog.frame_done(0.5, 1.0)
    assert watchdog.limit() == 20.0  # 20 x 0.5 s = 10 s < the minimum
    watchdog.frame_done(2.0, 3.0)
    watchdog.frame_done(0.001, 3.1)  # a frame that found nothing changed: the 2 s solve still counts
    assert watchdog.frame_seconds == 2.0 and watchdog.limit() == 40.0
    for i in range(50):
        watchdog.frame_done(0.001, 4.0 + i)
    assert watchdog.frame_seconds == 0.001  # the last 50 frames only
    watchdog.frame_done(2.0, 60.0)
    watchdog.build_seconds = 15.0
    assert watchdog.limit() == 45.0  # an edit may rebuild the scene: 3 x 15 s
    watchdog.override = 2.0
    assert watchdog.limit() == 2.0


def test_a_request_is_overdue_when_neither_it_nor_any_progress_came_within_the_limit():
    watchdog = _timed(Watchdog(minimum=20.0, progress=0.0))
    watchdog.sent(1, 0.0)
    assert watchdog.overdue(19.9) is None
    assert watchdog.overdue(20.5) == pytest.approx(20.5)
    watchdog.progressed(10.0)  # a frame came: the process is working through what was asked before
    assert watchdog.overdue(25.0) is None
    assert watchdog.overdue(30.5) == pytest.approx(20.5)
    watchdog.answered(1, 31.0)
    assert not watchdog.waiting and watchdog.overdue(100.0) is None


def test_while_a_scene_is_built_only_the_build_is_timed_and_its_answer_drops_the_old_scenes_requests():
    watchdog = _timed(Watchdog(minimum=20.0, open_seconds=600.0))
    watchdog.sent(1, 0.0)  # a command to the scene open now
    watchdog.sent(2, 1.0, opening=True)  # the next scene
    watchdog.sent(3, 2.0)  # a command for the next scene, queued behind its build
    assert watchdog.overdue(300.0) is None  # 300 s of building: within the 600 s allowed
    assert watchdog.overdue(601.5) == pytest.approx(600.5)
    watchdog.answered(2, 51.0)
    assert watchdog.build_seconds == pytest.approx(50.0)
    assert watchdog.overdue(70.0) is None  # request 3 waits from the build's answer: 19 s
    assert watchdog.limit() == 150.0  # 3 x the 50 s build
    assert watchdog.overdue(201.5) == pytest.approx(150.5)  # request 3; request 1 was dropped with its scene
    watchdog.answered(3, 202.0)
    assert not watchdog.waiting


def test_a_busy_quiet_process_is_asked_for_an_answer_after_half_the_limit():
    watchdog = _timed(Watchdog(minimum=20.0, progress=0.0))
    assert not watchdog.should_ping(9.0, busy=True)
    assert watchdog.should_ping(10.5, busy=True)
    assert not watchdog.should_ping(10.5, busy=False)  # paused and nothing asked: silence is expected
    watchdog.sent(7, 10.5)
    assert not watchdog.should_ping(30.0, busy=True)  # already owed an answer
    watchdog.forget()
    assert not watchdog.waiting


def test_the_minimum_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SOFTSIM_HANG_SECONDS", "45")
    assert hang_minimum() == 45.0
    monkeypatch.setenv("SOFTSIM_HANG_SECONDS", "soon")
    assert hang_minimum() == 20.0
