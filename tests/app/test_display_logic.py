"""The window's arithmetic without a window: colour ranges, frame rates, frame problems, the video writer."""

import dataclasses
import time

import numpy as np
import pytest

from softsim.app.colour_range import NOISE_FLOOR, auto_color_range, nice_ceiling, noise_floor
from softsim.app.health import frame_problems
from softsim.app.rates import FrameRates
from softsim.app.recording import Recorder, count_video_frames
from softsim.app.resources import default_scene, resource_path
from softsim.mechanics.scene import load_scene
from softsim.mechanics.scene_runtime import Scene


@pytest.mark.parametrize(("value", "expected"), [(1.0, 1.0), (1.01, 2.0), (2.2, 2.5), (3.0, 5.0), (7.66, 10.0),
                                                 (0.073, 0.1), (1.9e-10, 2e-10), (250.0, 250.0), (251.0, 500.0)])
def test_nice_ceiling_is_the_next_1_2_2_5_5_step(value, expected):
    assert nice_ceiling(value) == pytest.approx(expected, rel=1e-12)


def test_the_automatic_range_starts_at_zero_is_steady_and_reads_round_off_as_zero():
    floor = noise_floor("length", body_size=160.0, young_modulus=600.0)
    assert floor == pytest.approx(160.0 * NOISE_FLOOR)
    # a body at rest: round-off 1e-12 mm is below the floor: 0 .. 0.2 mm (1e-3 of the size, rounded up)
    assert auto_color_range(np.array([0.0, 3e-13, 1e-12]), floor) == (0.0, 0.2)
    first = auto_color_range(np.array([0.0, 7.66]), floor)
    assert first == (0.0, 10.0)
    # the maximum moves within 40..100 % of the range: the labels stay
    assert auto_color_range(np.array([0.0, 5.2]), floor, first) == first
    assert auto_color_range(np.array([0.0, 3.9]), floor, first) == (0.0, 5.0)  # below 40 %: a new range
    assert auto_color_range(np.array([0.0, 10.5]), floor, first) == (0.0, 20.0)
    stress_floor = noise_floor("pressure", body_size=160.0, young_modulus=600.0)
    assert stress_floor == pytest.approx(600.0 * NOISE_FLOOR)


def test_frame_rates_count_draws_and_solved_frames_over_the_window():
    rates = FrameRates(window=2.0)
    for k in range(11):  # a draw every 0.1 s, each 3 solved frames further
        rates.add(3 * k, 0.1 * k)
    assert rates.drawn == pytest.approx(10.0) and rates.solved == pytest.approx(30.0)
    rates.add(0, 1.1)  # a reset: the count starts again
    assert rates.drawn == 0.0 and rates.solved == 0.0


def test_frame_problems_name_the_solver_and_the_actuator_and_by_how_much():
    scene = Scene.load(default_scene())
    scene.set("body.finger.cable.cable.maxPositiveDisp", 5.0)
    scene.set("body.finger.cable.cable.value", 8.0)
    report = scene.step()
    frame = scene.simulation.snapshot(report)
    problems = frame_problems(frame, scene.spec)
    assert [p.level for p in problems] == ["warning"]
    assert problems[0].text == ("cable 'cable' is short of its target: displacement 5 mm of 8 mm "
                                "(a limit of the actuator stops it)")
    # one Gauss-Seidel sweep on the trunk's eight coupled cable rows (with SOFA's tangent: with the exact one
    # the actuator rows are solved exactly, not by the constraint solver)
    scene = Scene.load(resource_path("scenes", "trunk.toml"))
    scene.set("body.trunk.material.corotationalTangent", "sofa")
    scene.set("solver.constraint.maxIterations", 1)
    scene.set("solver.constraint.tolerance", 1e-14)
    scene.set("body.trunk.cable.cableL0.value", 3.0)
    report = scene.step()
    texts = [p.text for p in frame_problems(scene.simulation.snapshot(report), scene.spec)]
    error = report.constraint.error
    assert f"BlockGaussSeidel did not converge: error {error:.3g} mm after 1 iteration(s)" in texts
    assert frame_problems(scene.simulation.snapshot(None), load_scene(default_scene())) == []


def test_a_converged_frame_whose_report_notes_a_doubt_shows_it():
    """A converged frame's message holds the notes that make its state doubtful (mechanics.frame_report: elements
    inverted, contact rows holding nodes away from the other body): the window shows them as a warning."""
    scene = Scene.load(default_scene())
    scene.set("body.finger.cable.cable.value", 4.0)
    report = scene.step()
    assert report.converged and report.message == ""
    assert frame_problems(scene.simulation.snapshot(report), scene.spec) == []
    note = ("collision: 2 contact row(s) push nodes up to 0.7 away from the other body's surface (alarmDistance "
            "0.4): the plane of the triangle each was found on reaches past its edges, so the contact forces "
            "there are not trustworthy")
    report.message = note
    problems = frame_problems(scene.simulation.snapshot(report), scene.spec)
    assert [(p.kind, p.level, p.text) for p in problems] == [("untrustworthy", "warning", note)]


def test_the_recorder_writes_a_video_that_ffmpeg_reads_back_with_every_frame(tmp_path):
    recorder = Recorder(tmp_path, fps=10)
    rng = np.random.default_rng(0)
    for k in range(7):
        size = (121, 161) if k != 3 else (130, 150)  # odd sizes; one frame of another size (a resize)
        recorder.add(rng.integers(0, 255, size=(*size, 3), dtype=np.uint8))
    video = recorder.close()
    assert video == tmp_path / "softsim.mp4" and recorder.frames == 7
    assert count_video_frames(video) == 7


def test_a_slack_cable_is_not_a_problem_but_a_ramping_one_is():
    """The trunk with cableL0 at 12 mm: its maxDispVariation ramps it 1 mm per frame (flagged as short of its
    target, with the value reached); the seven cables left at 0 go slack as the trunk bends (displacement > 0
    at zero force): a cable cannot push, so they are not flagged. Once at 12 mm nothing is flagged."""
    scene = Scene.load(resource_path("scenes", "trunk.toml"))
    scene.set("body.trunk.cable.cableL0.value", 12.0)
    report = scene.step()
    problems = frame_problems(scene.simulation.snapshot(report), scene.spec)
    assert [p.text.split(":")[0] for p in problems] == ["cable 'cableL0' is short of its target"]
    for _ in range(13):
        report = scene.step()
    frame = scene.simulation.snapshot(report)
    slack = [n for n in ("cableL1", "cableL2", "cableS1")
             if frame.outputs[f"{n}.displacement"] > 1e-6 and frame.outputs[f"{n}.force"] == 0.0]
    assert slack and all(frame.outputs[f"{n}.limited"] == 0.0 for n in slack)  # nor limited in the outputs
    assert frame.outputs["cableL0.displacement"] == pytest.approx(12.0) and frame_problems(frame, scene.spec) == []
    assert report.status == "ok"  # the Plots header's verdict agrees with the banner


def test_a_shortfall_at_the_solver_accuracy_is_not_flagged():
    """A cable at 0 mm that reads 7.7e-09 mm (the mechanics' ``limited`` flag sees 1e-12 absolute) is at its
    target within 1e-6 of its 157.8 mm length: no problem; 0.5 mm short is one."""
    scene = Scene.load(default_scene())
    frame = scene.simulation.snapshot(scene.step())
    outputs = dict(frame.outputs, **{"cable.limited": 1.0, "cable.displacement": 7.7e-9})
    assert frame_problems(dataclasses.replace(frame, outputs=outputs), scene.spec) == []
    outputs["cable.displacement"] = -0.5
    assert len(frame_problems(dataclasses.replace(frame, outputs=outputs), scene.spec)) == 1


def test_the_pacer_runs_the_newest_item_no_sooner_than_its_cost_allows(qtbot):
    """A run of 20 ms with factor 2: an item offered right after waits about 40 ms; of the items offered
    meanwhile only the newest runs; flush runs the waiting one at once."""
    from softsim.app.pacing import LatestPacer

    ran = []

    def handle(item):
        ran.append((item, time.perf_counter()))
        time.sleep(0.02)

    pacer = LatestPacer(handle, factor=2.0)
    pacer.offer("a")  # nothing ran before: at once
    ended = time.perf_counter()
    for item in ("b", "c", "d"):
        pacer.offer(item)
    assert [item for item, _ in ran] == ["a"]
    qtbot.waitUntil(lambda: len(ran) == 2, timeout=60000)
    assert ran[1][0] == "d" and ran[1][1] - ended >= 0.035
    pacer.offer("e")
    assert pacer.flush() and ran[-1][0] == "e" and not pacer.flush()


def test_the_cause_of_a_shortfall_is_the_limit_the_unconverged_frame_or_contact():
    """An actuator short of its target is blamed on its own bound only when the report says a bound holds it;
    a frame that did not converge says so with how much of the change it reached; a converged frame with
    contacts names contact."""
    scene = Scene.load(default_scene())
    scene.set("body.finger.cable.cable.value", 5.0)
    report = scene.step()
    frame = scene.simulation.snapshot(report)
    assert report.converged and frame_problems(frame, scene.spec) == []
    short = dataclasses.replace(frame, outputs=dict(frame.outputs, **{"cable.displacement": 4.0}))

    def texts(changed_report, **frame_changes):
        changed = dataclasses.replace(short, report=changed_report, **frame_changes)
        return [p.text for p in frame_problems(changed, scene.spec) if p.kind == "actuator_limited"]

    assert texts(dataclasses.replace(report, limited=["cable"])) == [
        "cable 'cable' is short of its target: displacement 4 mm of 5 mm (a limit of the actuator stops it)"]
    stalled = dataclasses.replace(report, equilibrium=dataclasses.replace(report.equilibrium, converged=False,
                                                                          reached=0.4))
    assert not stalled.converged
    assert texts(stalled) == ["cable 'cable' is short of its target: displacement 4 mm of 5 mm (the frame did not "
                              "converge: it reached 40 % of the requested change)"]
    touching = texts(report, contact_points=np.zeros((3, 3)), contact_forces=np.zeros((3, 3)))
    assert touching == ["cable 'cable' is short of its target: displacement 4 mm of 5 mm "
                        "(contact stops it: 3 contact points)"]


def test_the_plots_header_starts_with_the_frames_own_verdict_and_stays_one_short_line():
    """The header says what the banner says (the frame's status), not the free Newton solve's verdict; a
    failed frame's long message goes to the tooltip, the header stays within SUMMARY_CHARACTERS."""
    from softsim.app.panels.plots import SUMMARY_CHARACTERS, frame_summary

    scene = Scene.load(default_scene())
    scene.set("body.finger.cable.cable.value", 5.0)
    report = scene.step()
    frame = scene.simulation.snapshot(report)
    assert frame_summary(frame, short=True).startswith(f"frame {frame.index}: converged | free Newton ")
    stalled = dataclasses.replace(report, equilibrium=dataclasses.replace(report.equilibrium, converged=False,
                                                                          reached=0.4))
    text = frame_summary(dataclasses.replace(frame, report=stalled), short=True)
    assert text.startswith(f"frame {frame.index}: NOT CONVERGED") and "reached 40 %, not converged" in text
    assert any(p.kind == "not_converged" for p in frame_problems(dataclasses.replace(frame, report=stalled),
                                                                  scene.spec))
    failed = dataclasses.replace(report, ran=False, message="Newton solve diverged: " + "residual grows " * 40)
    short = frame_summary(dataclasses.replace(frame, report=failed), short=True)
    assert short.startswith(f"frame {frame.index}: FAILED") and len(short) <= SUMMARY_CHARACTERS
    assert "residual grows" in frame_summary(dataclasses.replace(frame, report=failed))  # the tooltip has it all


def test_a_recording_plays_on_the_clock_asked_for(tmp_path):
    """Wall or simulated time: each image stays in the 10 frames/s video until the next one's time (frames
    at 0, 0.5 and 1.0 s: 5 + 5 + 1 video frames, counted by ffmpeg); "frames": one video frame each."""
    images = [np.full((40, 60, 3), 60 * k, dtype=np.uint8) for k in range(3)]
    for timing, expected in (("wall", 11), ("simulated", 11), ("frames", 3)):
        recorder = Recorder(tmp_path / timing, fps=10, timing=timing)
        start = 1000.0  # a clock that does not start at 0 (perf_counter)
        for k, image in enumerate(images):
            recorder.add(image, start + 0.5 * k)
        video = recorder.close()
        assert recorder.frames == 3 and recorder.video_frames == expected
        assert count_video_frames(video) == expected
    with pytest.raises(ValueError, match="allowed: wall, simulated, frames"):
        Recorder(tmp_path / "x", timing="sideways")


def test_a_dynamic_scenes_clock_and_real_time_factor():
    from softsim.app.rates import simulated_time_text

    assert simulated_time_text(125, 0.01) == "t = 1.25 s"
    # 40 frames of 10 ms solved per second: 0.4 simulated seconds per second
    assert simulated_time_text(125, 0.01, 40.0) == "t = 1.25 s (0.4x real time)"


def test_a_ramping_actuator_says_it_ramps_not_that_a_bound_stops_it():
    """The pneunet's cavity asks 30 kPa with maxPressureVariation = 5 kPa in [0, 60] kPa: after the first
    frame it is at 5 kPa, and the banner says it ramps (at most 5 kPa per frame), not that a bound stops it."""
    scene = Scene.load(resource_path("scenes", "pneunet.toml"))
    report = scene.step()
    frame = scene.simulation.snapshot(report)
    assert frame.outputs["cavity.pressure"] == pytest.approx(5.0) and "cavity" in report.limited
    texts = [p.text for p in frame_problems(frame, scene.spec)]
    assert texts == ["cavity 'cavity' is short of its target: pressure 5 kPa of 30 kPa (it ramps at most 5 kPa "
                     "per frame (maxPressureVariation))"]
    scene.set("body.pneunet.cavity.cavity.value", 80.0)  # beyond maxPressure: the bound stops it
    for _ in range(14):
        report = scene.step()
    frame = scene.simulation.snapshot(report)
    assert frame.outputs["cavity.pressure"] == pytest.approx(60.0)
    assert [p.text for p in frame_problems(frame, scene.spec)] == [
        "cavity 'cavity' is short of its target: pressure 60 kPa of 80 kPa (a limit of the actuator stops it)"]
