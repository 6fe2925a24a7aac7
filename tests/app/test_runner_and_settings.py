"""The simulation worker (latest wins, commands between frames, failures reported) and the settings file."""

import json
import os
import stat
import threading
import time
from dataclasses import dataclass

import pytest

from softsim.app.runner import SimulationRunner
from softsim.app.settings import MAX_RECENT_FILES, Settings, config_dir


@dataclass
class _Report:
    frame: int
    ran: bool = True
    message: str = ""


class _CountingSimulation:
    """A stand-in simulation: ``value`` grows by ``increment`` per frame; frames can fail on demand."""

    def __init__(self) -> None:
        self.value = 0
        self.increment = 1
        self.frame = 0
        self.fail_with: str | None = None
        self.raise_error = False

    def step(self):
        if self.raise_error:
            raise RuntimeError("boom")
        if self.fail_with is not None:
            return _Report(self.frame + 1, False, self.fail_with)
        self.frame += 1
        self.value += self.increment
        return _Report(self.frame, True, "Newton did not converge" if self.increment > 10 else "")

    def snapshot(self, report):
        return (self.frame, self.value, report)


def _wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.002)


@pytest.fixture
def runner():
    simulation = _CountingSimulation()
    worker = SimulationRunner(simulation, snapshot=lambda sim, report: sim.snapshot(report))
    worker.simulation = simulation
    worker.start()
    yield worker
    worker.stop()
    assert not worker.alive


def test_steps_run_in_order_and_only_the_newest_frame_is_kept(runner):
    runner.step_once(5)
    _wait(lambda: runner.frames_attempted == 5)
    output = runner.take_output()
    assert output.frame[:2] == (5, 5)  # frames 1..4 were replaced by frame 5 (latest wins)
    assert runner.take_output().frame is None
    assert runner.frames_run == 5 and runner.pending_steps == 0


def test_commands_apply_between_frames_and_refusals_become_messages(runner):
    runner.submit("set increment", lambda sim: setattr(sim, "increment", 3))
    runner.submit("bad value", lambda sim: (_ for _ in ()).throw(ValueError("increment must be > 0")))
    runner.step_once(2)
    _wait(lambda: runner.frames_attempted == 2)
    output = runner.take_output()
    assert output.frame[:2] == (2, 6)
    assert [(m.level, m.text) for m in output.messages] == [("error", "bad value: increment must be > 0")]


def test_a_command_while_paused_posts_a_frame_showing_its_effect(runner):
    runner.submit("jump", lambda sim: setattr(sim, "value", 42))
    _wait(lambda: runner.take_output().frame is not None and runner.simulation.value == 42)
    assert runner.frames_attempted == 0


def test_a_read_only_command_while_paused_posts_no_frame(runner):
    seen = []
    runner.submit("read", lambda sim: seen.append(sim.value), changes_state=False)
    _wait(lambda: seen == [0])
    runner.submit("marker", lambda sim: seen.append("done"), changes_state=False)
    _wait(lambda: seen == [0, "done"])  # the worker went round its loop again after the first command
    assert runner.take_output().frame is None
    runner.submit("change", lambda sim: setattr(sim, "value", 7))
    _wait(lambda: runner.simulation.value == 7)
    _wait(lambda: (frame := runner.take_output().frame) is not None and frame[1] == 7)
    assert runner.frames_attempted == 0


def test_failed_and_badly_converged_frames_are_reported_and_the_state_is_kept(runner):
    runner.step_once()
    _wait(lambda: runner.frames_attempted == 1)
    runner.take_output()
    runner.submit("diverge", lambda sim: setattr(sim, "fail_with", "Newton solve diverged: residual grows"))
    runner.step_once()
    _wait(lambda: runner.frames_attempted == 2)
    output = runner.take_output()
    assert output.frame[:2] == (1, 1)  # the last good state
    assert output.messages[0].level == "warning" and "residual grows" in output.messages[0].text
    runner.submit("heal", lambda sim: (setattr(sim, "fail_with", None), setattr(sim, "increment", 20)))
    runner.step_once()
    _wait(lambda: runner.frames_attempted == 3)
    output = runner.take_output()
    assert output.frame[:2] == (2, 21)
    assert "did not converge" in output.messages[0].text
    assert runner.frames_run == 2


def test_an_exception_in_a_frame_pauses_and_is_reported(runner):
    runner.submit("break", lambda sim: setattr(sim, "raise_error", True))
    runner.play()
    _wait(lambda: runner.frames_attempted >= 1 and not runner.playing)
    output = runner.take_output()
    assert any(m.level == "error" and "boom" in m.text for m in output.messages)
    assert runner.alive


def test_play_and_pause(runner):
    runner.play()
    _wait(lambda: runner.frames_attempted >= 3)
    runner.pause()
    time.sleep(0.05)
    settled = runner.frames_attempted
    time.sleep(0.05)
    assert runner.frames_attempted <= settled + 1  # at most the frame that was running when paused


def test_stop_waits_for_the_running_frame():
    started, release = threading.Event(), threading.Event()
    simulation = _CountingSimulation()
    original = simulation.step

    def slow_step():
        started.set()
        release.wait(5.0)
        return original()

    simulation.step = slow_step
    worker = SimulationRunner(simulation, snapshot=lambda sim, report: sim.snapshot(report))
    worker.start()
    worker.step_once()
    assert started.wait(5.0)
    threading.Timer(0.05, release.set).start()
    worker.stop()
    assert not worker.alive and simulation.frame == 1


def test_the_config_dir_comes_from_the_environment(private_config_dir, monkeypatch, tmp_path):
    assert config_dir() == private_config_dir
    monkeypatch.delenv("SOFTSIM_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_dir() == tmp_path / "xdg" / "softsim"


def test_recent_files_persist_most_recent_first_without_duplicates(private_config_dir, tmp_path):
    files = [tmp_path / f"scene{i}.toml" for i in range(MAX_RECENT_FILES + 2)]
    for path in files:
        path.write_text("")
    settings = Settings()
    for path in files:
        settings.add_recent_file(path)
    settings.add_recent_file(files[3])
    again = Settings()
    assert again.recent_files[0] == str(files[3].resolve())
    assert len(again.recent_files) == MAX_RECENT_FILES
    assert len(set(again.recent_files)) == MAX_RECENT_FILES
    files[-1].unlink()  # a file that disappeared is not offered
    assert str(files[-1].resolve()) not in Settings().recent_files
    assert json.loads((private_config_dir / "settings.json").read_text())["recent_files"][0] == again.recent_files[0]


def test_an_unreadable_settings_file_gives_the_defaults(private_config_dir, tmp_path):
    (private_config_dir / "settings.json").write_text("{not json")
    settings = Settings()
    assert settings.recent_files == []
    settings.add_recent_file(tmp_path)  # the next write replaces the unreadable file
    assert json.loads((private_config_dir / "settings.json").read_text()) == {"recent_files": [str(tmp_path.resolve())]}


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes, symbolic links and named pipes")
def test_the_settings_file_keeps_its_mode_and_link_and_a_pipe_or_huge_file_gives_the_defaults(private_config_dir,
                                                                                               tmp_path):
    real = tmp_path / "dotfiles" / "softsim.json"
    real.parent.mkdir()
    real.write_text('{"recent_files": []}')
    os.chmod(real, 0o640)
    (private_config_dir / "settings.json").symlink_to(real)
    Settings().add_recent_file(real)
    assert (private_config_dir / "settings.json").is_symlink()
    assert json.loads(real.read_text()) == {"recent_files": [str(real.resolve())]}
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in private_config_dir.iterdir()) == ["settings.json"]
    (private_config_dir / "settings.json").unlink()
    os.mkfifo(private_config_dir / "settings.json")  # would block a plain open
    assert Settings().recent_files == []
    (private_config_dir / "settings.json").unlink()
    with open(private_config_dir / "settings.json", "wb") as stream:
        stream.truncate(2 * 1024**2)
    assert Settings().recent_files == []


class _SettableSimulation(_CountingSimulation):
    """Records every ``set(path, value)``; a negative value is refused."""

    def __init__(self) -> None:
        super().__init__()
        self.sets: list[tuple[str, float]] = []

    def set(self, path, value):
        if value < 0:
            raise ValueError(f"{path} must be >= 0, got {value}")
        self.sets.append((path, value))


def _held_worker(simulation):
    """A started runner held inside a command until the returned event is set (commands sent meanwhile queue)."""
    from softsim.app.runner import Call

    worker = SimulationRunner(simulation, snapshot=lambda sim, report: sim.snapshot(report))
    inside, release = threading.Event(), threading.Event()
    worker.start()
    worker.send(Call("hold", lambda _sim: (inside.set(), release.wait(10.0)), False))
    assert inside.wait(10.0)
    return worker, release


def test_a_run_of_edits_of_one_key_queued_during_a_frame_applies_only_the_last():
    from softsim.app.runner import Call, SetParameter

    simulation = _SettableSimulation()
    worker, release = _held_worker(simulation)
    for token, value in enumerate([1.0, 2.0, 3.0, 4.0], start=1):  # a slider dragged while a frame runs
        worker.send(SetParameter("a", value, token=token))
    worker.send(SetParameter("b", 9.0, token=5))
    worker.send(SetParameter("a", 5.0, token=6))
    worker.send(Call("read", lambda sim: list(sim.sets), False, token=7))  # a reader between two edits of a
    worker.send(SetParameter("a", 6.0, token=8))
    worker.send(SetParameter("a", -1.0, token=9))  # the last of a run is refused
    release.set()
    replies = {}

    def answered() -> bool:
        replies.update((reply.token, reply) for reply in worker.take_output().replies)
        return len(replies) == 9

    _wait(answered, timeout=10.0)
    worker.stop()
    # 1-3 were superseded by 4 before any frame, and 8 by 9: answered as done, never set
    assert simulation.sets == [("a", 4.0), ("b", 9.0), ("a", 5.0)]
    assert all(replies[token].error is None for token in range(1, 9))
    assert replies[7].result == [("a", 4.0), ("b", 9.0), ("a", 5.0)]  # the reader saw the edits sent before it
    # the refused last value leaves the one from before its run (5.0), and its reply says why
    assert isinstance(replies[9].error, ValueError) and "must be >= 0" in str(replies[9].error)
