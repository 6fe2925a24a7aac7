"""The simulation in its own process: frames through shared memory, the commands across, a static scene at rest
that does not spin, and a killed process restarted from the last frame."""

import copy
import os
import pickle
import signal
import threading

import numpy as np
import pytest

from softsim.app.resources import default_scene
from softsim.app.runner import SetPace, SetParameter, SimulationRunner
from softsim.app.sim_process import FrameReader, FrameWriter, exit_cause
from softsim.mechanics.scene import get_value
from tests.app import remote
from tests.app.conftest import run_frames

pytestmark = pytest.mark.gui
CABLE = "body.finger.cable.cable.value"


def test_the_newest_frame_wins_and_a_frame_larger_than_the_segment_moves_to_a_new_one():
    writer, reader = FrameWriter(f"softsim-test-{os.getpid()}"), FrameReader()
    try:
        reader.attach(writer.write(b"first") or "")
        assert reader.read() == b"first" and reader.read() is None  # read once
        assert writer.write(b"second") is None and writer.write(b"third") is None
        assert reader.read() == b"third"  # the second was never read: the newest wins
        big = bytes(range(256)) * 1024  # 256 KiB > the first segment's 64 KiB slots
        name = writer.write(big)
        assert name is not None and name != reader.name
        reader.attach(name)
        assert reader.read() == big
        # a slot caught being written (its header zeroed) is not read; the finished write is
        writer.write(b"fourth")
        slot_base = 16 + (writer.seq % 2) * (16 + writer.capacity)
        saved = bytes(writer.shm.buf[slot_base:slot_base + 16])
        writer.shm.buf[slot_base:slot_base + 16] = bytes(16)
        assert reader.read() is None
        writer.shm.buf[slot_base:slot_base + 16] = saved
        assert reader.read() == b"fourth"
    finally:
        reader.close()
        writer.close()


def test_exit_causes_are_worded():
    assert exit_cause(-signal.SIGKILL).startswith("killed by SIGKILL")
    assert "native library" in exit_cause(-signal.SIGSEGV)
    assert exit_cause(3) == "exit code 3"


class _StaticAtRest:
    """A static scene whose every frame after the first is 'unchanged' (its inputs are the last frame's)."""

    class spec:  # noqa: N801 - the runner reads spec.scene.mode
        class scene:  # noqa: N801
            mode = "static"

    def __init__(self) -> None:
        self.frame = 0
        self.value = 0.0

    def step(self):
        from softsim.mechanics.frame_step import FrameReport

        self.frame += 1
        report = FrameReport(self.frame, True, "")
        report.unchanged = self.frame > 1
        return report

    def set(self, _path, value) -> None:
        self.value = value
        self.frame = 0  # the next frame solves again


def test_a_static_scene_at_rest_does_not_spin_while_playing_and_an_edit_wakes_it():
    scene = _StaticAtRest()
    replies = threading.Event()
    runner = SimulationRunner(scene, snapshot=lambda s, r: s.frame, on_output=lambda: None)
    runner.start()
    try:
        runner.play()
        _wait(lambda: runner.at_rest)
        assert runner.frames_attempted == 2  # one solved frame, one that found nothing changed
        for _ in range(3):  # the loop goes round for each command: still no frame
            replies.clear()
            runner.submit("read", lambda s: replies.set(), changes_state=False)
            _wait(replies.is_set)
        assert runner.frames_attempted == 2 and runner.at_rest
        runner.send(SetParameter("x", 1.0))
        _wait(lambda: runner.frames_attempted == 4 and runner.at_rest)  # solved again, then at rest again
        assert scene.value == 1.0
    finally:
        runner.stop()


def _wait(condition, timeout: float = 60.0) -> None:
    import time

    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met"
        time.sleep(0.005)


def test_a_frame_report_crosses_the_process_boundary_without_the_live_constraints(main_window, qtbot):
    assert main_window.open_path(default_scene())
    frame = run_frames(qtbot, main_window, 1)
    assert frame.report.forces == [] and frame.report.x_free is None  # only what the window shows
    assert frame.report.status == "ok" and frame.report.equilibrium is not None
    assert main_window.session.scene is None  # the scene lives in the other process
    assert remote.ask(qtbot, main_window.session, remote.process_id) == main_window.session.runner.pid != os.getpid()
    assert pickle.loads(pickle.dumps(frame)).index == frame.index


def test_a_killed_simulation_process_is_restarted_from_the_last_frame_with_the_edits(main_window, qtbot):
    session = main_window.session
    assert main_window.open_path(default_scene())
    assert session.set_parameter(CABLE, 5.0) is None
    frame = run_frames(qtbot, main_window, 2)
    assert frame.outputs["cable.displacement"] == pytest.approx(5.0, abs=1e-6)
    dead = session.runner.pid
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    os.kill(dead, signal.SIGKILL)
    qtbot.waitUntil(lambda: any(level == "info" and "restored" in text for level, text in messages),
                    timeout=180000)
    assert main_window.isVisible() and session.restarts == 1 and session.runner.pid != dead
    errors = [text for level, text in messages if level == "error"]
    assert len(errors) == 1 and "SIGKILL" in errors[0] and f"frame {frame.index}" in errors[0]
    assert "SIGKILL" in main_window.banner.text() and main_window.banner.isVisible()
    # the new process holds the last frame's positions and the edited value
    np.testing.assert_array_equal(remote.ask(qtbot, session, remote.positions), frame.x)
    spec = remote.ask(qtbot, session, remote.attribute, "spec")
    assert get_value(spec, CABLE) == 5.0
    assert session.latest_frame.index == frame.index
    np.testing.assert_array_equal(session.latest_frame.x, frame.x)
    # and the session goes on: the next frame starts from there, at the edited value
    after = run_frames(qtbot, main_window, 1)
    assert after.index == frame.index + 1 and after.report.converged
    assert after.outputs["cable.displacement"] == pytest.approx(5.0, abs=1e-6)
    np.testing.assert_allclose(after.x, frame.x, atol=1e-6)  # already at equilibrium there


def test_a_simulation_process_that_stops_answering_is_ended_and_restarted_from_the_last_frame(main_window, qtbot):
    session = main_window.session
    assert main_window.open_path(default_scene())
    assert session.set_parameter(CABLE, 5.0) is None
    frame = run_frames(qtbot, main_window, 2)
    hung = session.runner
    hung.watchdog.override = 2.0  # seconds without an answer (the default allows 20 x the last frame, >= 20 s)
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    os.kill(hung.pid, signal.SIGSTOP)  # alive, but it answers nothing
    try:
        session.step_once(1)  # a frame is owed: the watchdog asks, gets no answer, and ends the process
        qtbot.waitUntil(lambda: any(level == "info" and "restored" in text for level, text in messages),
                        timeout=180000)
        assert not hung.process.is_alive() and hung.process.exitcode == -signal.SIGKILL
    finally:
        if hung.process.is_alive():
            os.kill(hung.pid, signal.SIGCONT)
            hung.process.kill()
    errors = [text for level, text in messages if level == "error"]
    assert len(errors) == 1 and "stopped answering" in errors[0] and f"frame {frame.index}" in errors[0]
    assert "stopped answering" in main_window.banner.text() and main_window.banner.isVisible()
    assert session.restarts == 1 and session.runner is not hung and session.runner.alive
    np.testing.assert_array_equal(remote.ask(qtbot, session, remote.positions), frame.x)
    after = run_frames(qtbot, main_window, 1)
    assert after.index == frame.index + 1 and after.report.converged
    assert after.outputs["cable.displacement"] == pytest.approx(5.0, abs=1e-6)


def test_a_killed_dynamic_scene_continues_with_the_last_frames_velocities_and_time(main_window, qtbot):
    from softsim.app.session import scene_from_spec

    session = main_window.session
    assert main_window.open_path(default_scene())
    assert session.set_parameter("scene.mode", "dynamic") is None
    assert session.set_parameter(CABLE, 5.0) is None
    dt = session.spec.scene.dt
    frame = run_frames(qtbot, main_window, 3)
    assert frame.velocities.shape == frame.x.shape and frame.time == pytest.approx(frame.index * dt)
    # the finger is moving: a restart from rest velocities would put the next frame elsewhere by about v dt
    assert np.abs(frame.velocities).max() * dt > 1e-3  # mm
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    os.kill(session.runner.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: any(level == "info" and "restored" in text for level, text in messages),
                    timeout=180000)
    np.testing.assert_array_equal(remote.ask(qtbot, session, remote.attribute, "simulation.v"), frame.velocities)
    assert remote.ask(qtbot, session, remote.attribute, "simulation.time") == frame.time
    assert remote.ask(qtbot, session, remote.attribute, "simulation.frame") == frame.index
    restored = session.latest_frame
    np.testing.assert_array_equal(restored.velocities, frame.velocities)
    assert restored.time == frame.time and restored.index == frame.index
    after = run_frames(qtbot, main_window, 1)
    # the same four frames run without a crash, in this process, from the same spec
    alone = scene_from_spec(copy.deepcopy(session.spec))
    alone.run(frame.index + 1)
    assert after.index == alone.simulation.frame and after.time == pytest.approx(alone.simulation.time, abs=1e-12)
    np.testing.assert_allclose(after.x, alone.simulation.x, atol=1e-8)
    np.testing.assert_allclose(after.velocities, alone.simulation.v, atol=1e-6)


def test_a_killed_dynamic_scene_keeps_its_free_rigid_bodies_motion(main_window, qtbot, tmp_path):
    from softsim.app.session import scene_from_spec
    from softsim.mechanics.scene import dump_scene, parse_data
    from tests.mechanics.test_rigid_body import scene_data

    data, spec = scene_data({"position": [50.0, 40.0, 5.0], "velocity": [0.0, 0.0, 50.0],
                             "angularVelocity": [0.0, 0.0, 2.0]}, damping=0.0)
    path = tmp_path / "cube.toml"
    path.write_text(dump_scene(parse_data(data, source=str(path), base_dir=spec.base_dir), base_dir=tmp_path))
    session = main_window.session
    assert main_window.open_path(path), session.last_error
    frame = run_frames(qtbot, main_window, 3)
    cube = frame.rigid_states["cube"]
    assert cube.v[1] < 0.0 and cube.v[2] == pytest.approx(50.0)  # falling, and moving along z as thrown
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    os.kill(session.runner.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: any(level == "info" and "restored" in text for level, text in messages),
                    timeout=180000)
    restored = session.latest_frame.rigid_states["cube"]
    for name in ("c", "R", "v", "w"):
        np.testing.assert_array_equal(getattr(restored, name), getattr(cube, name))
    after = run_frames(qtbot, main_window, 1)
    alone = scene_from_spec(copy.deepcopy(session.spec))
    alone.run(frame.index + 1)
    outputs = alone.outputs()
    for key in ("cube.x", "cube.y", "cube.z", "cube.vx", "cube.vy", "cube.vz"):
        assert after.outputs[key] == pytest.approx(outputs[key], abs=1e-8), key


def test_a_frame_rate_cap_travels_as_a_command_and_a_bad_one_is_refused():
    scene = _StaticAtRest()
    runner = SimulationRunner(scene, snapshot=lambda s, r: s.frame, on_output=lambda: None)
    runner.start()
    try:
        runner.send(SetPace(4.0, token=1))
        _wait(lambda: runner.min_frame_interval == 0.25)
        runner.send(SetPace(0.0, token=2))
        _wait(lambda: any(reply.token == 2 for reply in runner.take_output().replies))
        assert runner.min_frame_interval == 0.25  # refused: kept
        runner.send(SetPace(None))
        _wait(lambda: runner.min_frame_interval == 0.0)
    finally:
        runner.stop()


def test_the_window_caps_the_frame_rate_in_real_time_for_a_dynamic_scene(main_window, qtbot):
    from softsim.app.resources import resource_path

    session = main_window.session
    assert main_window.open_path(resource_path("scenes", "gripper_grasp.toml"))
    main_window.pace_actions["realtime"].trigger()
    assert session.pace == pytest.approx(1.0 / session.spec.scene.dt)
    main_window.pace_actions["10"].trigger()
    assert session.pace == 10.0 and main_window.pace_actions["10"].isChecked()
    assert main_window.open_path(default_scene())  # kept for the next scene
    assert session.pace == 10.0
    with pytest.raises(ValueError, match="positive number of frames per second"):
        session.set_pace(-1.0)


def test_an_error_that_does_not_pickle_back_keeps_its_message_and_base():
    from softsim.app.sim_process import portable_error
    from softsim.mechanics.scene import SceneError

    error = SceneError(["finger.toml: body.finger.fixed[0].set: no set 'x'; known sets: ['base']"])
    portable = portable_error(error)
    assert isinstance(portable, ValueError) and str(portable) == str(error)
    assert str(pickle.loads(pickle.dumps(portable))) == str(error)
    plain = ValueError("plain")
    assert portable_error(plain) is plain


def _thread_niceness(pid: int) -> dict[int, int]:
    """The nice value of each thread of process ``pid`` (Linux, /proc/PID/task/TID/stat's 19th field)."""
    from pathlib import Path

    values = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        values[int(task.name)] = int(stat[stat.rindex(")") + 2:].split()[16])
    return values


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads thread priorities from Linux's /proc")
def test_the_simulation_process_solves_at_its_own_priority_not_a_nicer_thread(main_window, qtbot, monkeypatch):
    """The worker thread of the simulation process runs at the process's priority: the +10 that kept a worker
    sharing the GUI's interpreter behind the GUI thread only lost a separate process's core to other programs."""
    assert main_window.open_path(default_scene())
    run_frames(qtbot, main_window, 1)  # the worker thread has started its loop (and set its priority there)
    pid = main_window.session.runner.pid
    niceness = _thread_niceness(pid)
    assert len(niceness) > 1 and set(niceness.values()) == {niceness[pid]}
    # a runner in the GUI's own process keeps its worker behind the GUI thread
    monkeypatch.delenv("SOFTSIM_WORKER_NICENESS", raising=False)
    assert SimulationRunner(_StaticAtRest()).niceness == 10


@pytest.mark.skipif(not hasattr(os, "getsid"), reason="POSIX sessions")
def test_the_simulation_process_leads_its_own_session_and_still_ends_with_the_window():
    """In its own session the solver gets a program's share of the CPU from Linux's scheduler (autogroups), not
    a share of the window's session shared with its OpenGL threads; it still ends when the window's end of the
    command pipe closes, without being told to quit (the window's process died)."""
    import time

    from softsim.app.sim_process import ProcessRunner

    runner = ProcessRunner()
    try:
        deadline = time.monotonic() + 120.0
        while os.getsid(runner.pid) != runner.pid:  # set first thing in the child, before it says "ready"
            assert time.monotonic() < deadline, "the simulation process did not start its own session"
            time.sleep(0.05)
        assert os.getsid(0) != runner.pid
        runner._commands.close()  # as when the window's process ends
        runner.process.join(60.0)
        assert runner.process.exitcode == 0
    finally:
        runner.forget()
        if runner.process.is_alive():
            runner.process.kill()
