"""The inverse model (SoftRobots.Inverse QPInverseProblemSolver): round trips against forward runs, an unreachable
goal against a brute-force optimisation of the forward model, limits, contact, the QP against hand solutions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.optimize

from softsim.mechanics.constraints.base import InverseLimits, inverse_range
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.inverse.problem import InverseParameters, RowRoles, solve_inverse_qp
from softsim.mechanics.inverse.qp import QPProblem, available_backends, solve_qp
from softsim.mechanics.scene import SceneError
from softsim.mechanics.scene_runtime import Scene

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"
FINGER_CABLE_LENGTH = 157.806  # L0 of the shipped finger's cable (mm)
LONG_CABLES = ("cableL0", "cableL1", "cableL2", "cableL3")
OTHER_CABLES = ("cableL2", "cableL3", "cableS0", "cableS1", "cableS2", "cableS3")


def _tip(scene: Scene) -> list[float]:
    outputs = scene.outputs()
    return [outputs[f"tip.{axis}"] for axis in "xyz"]


def _inverse(name: str, goal, **settings) -> Scene:
    scene = Scene.load(SCENES / name)
    scene.set("solver.inverse", settings)
    scene.set(f"body.{scene.spec.bodies[0].name}.effector.tip.effectorGoal", [goal])
    return scene


def _run_until_settled(scene: Scene, frames: int):
    reports = []
    for _ in range(frames):
        reports.append(scene.step())
        assert reports[-1].ok, reports[-1].message
        if reports[-1].inverse.linearizations == 1 and len(reports) > 1:  # one QP: the state stood
            break
    return reports


# ------------------------------------------------------------------------------------------ the QP itself
def test_one_actuator_one_row_matches_the_hand_solution():
    """W = [[Wee, Wea], [Wea, Waa]] = [[2, 0.5], [0.5, 4]], dfree = [3, 0]: SoftRobots' weight is
    |Wea^2| / |Waa| = 0.0625, so P = 0.25 + eps 0.0625 * 4 = 0.25 (1 + eps) and q = 0.5 * 3: lambda = -6 / (1 + eps)
    (eps = 1e-3: -5.994006...). With minForce = -5 (a bound) the answer is -5 and the bound is reported."""
    W = np.array([[2.0, 0.5], [0.5, 4.0]])
    dfree = np.array([3.0, 0.0])

    class Actuator:
        name = "a"

    actuator = Actuator()
    roles = RowRoles(actuators=[(actuator, 1)], effectors=np.array([0]))
    free = InverseLimits(-np.inf, np.inf, -np.inf, np.inf, ("", "", "", ""))
    solution = solve_inverse_qp(W, dfree, roles, {actuator: free}, InverseParameters(epsilon=1e-3))
    assert solution.force[1] == pytest.approx(-6.0 / 1.001, rel=1e-8)
    assert solution.delta[0] == pytest.approx(3.0 - 0.5 * 6.0 / 1.001, abs=1e-8)
    bounded = InverseLimits(-5.0, np.inf, -np.inf, np.inf, ("minForce", "", "", ""))
    solution = solve_inverse_qp(W, dfree, roles, {actuator: bounded}, InverseParameters(epsilon=1e-3))
    assert solution.force[1] == pytest.approx(-5.0, rel=1e-9)
    assert solution.active == [(actuator, "minForce")]


def test_displacement_limit_and_variation_range():
    """maxPositiveDisp 20, maxNegativeDisp 5, maxDispVariation 1 from 19.5: [18.5, 20]; from 30 (a slack cable past
    its range): the motor sits at 20, so [19, 20]; without a variation: [-5, 20]."""
    assert inverse_range(-5.0, 20.0, "n", "p", 19.5, 1.0, "v") == (18.5, 20.0, "v", "p")
    assert inverse_range(-5.0, 20.0, "n", "p", 30.0, 1.0, "v") == (19.0, 20.0, "v", "p")
    assert inverse_range(-5.0, 20.0, "n", "p", 3.0, None, "v") == (-5.0, 20.0, "n", "p")
    assert inverse_range(None, None, "n", "p", 3.0, None, "v") == (-np.inf, np.inf, "", "")


@pytest.mark.parametrize("backend", ["daqp", "quadprog", "proxqp", "clarabel", "osqp", "piqp"])
def test_backends_agree_on_a_bounded_least_squares_problem(backend):
    """min |A x - y|^2 / 2 + 1e-3 |x|^2 / 2 over 0 <= x <= 0.5 with a coupling row x0 + x1 <= 0.6: every backend
    agrees with scipy's bounded least squares (lsq_linear, a separate algorithm) on the problem without the coupling
    row, and the coupling row holds (to the backend's tolerance, 1e-6)."""
    if backend not in available_backends():
        pytest.skip(f"{backend} is not installed")
    rng = np.random.default_rng(7)
    A, y = rng.standard_normal((6, 4)), rng.standard_normal(6) * 3.0
    P, q = A.T @ A + 1e-3 * np.eye(4), -A.T @ y
    box = QPProblem(P, q, np.zeros((0, 4)), np.zeros(0), np.zeros((0, 4)), np.zeros(0), np.zeros(4), np.full(4, 0.5))
    reference = scipy.optimize.lsq_linear(np.vstack([A, np.sqrt(1e-3) * np.eye(4)]),
                                          np.concatenate([y, np.zeros(4)]), bounds=(0.0, 0.5), tol=1e-12).x
    solution = solve_qp(box, backend, tolerance=1e-10)
    assert solution.ok and solution.backend == backend
    np.testing.assert_allclose(solution.x, reference, atol=1e-5)
    coupled = QPProblem(P, q, np.array([[1.0, 1.0, 0.0, 0.0]]), np.array([0.6]), box.A, box.b, box.lb, box.ub)
    solution = solve_qp(coupled, backend, tolerance=1e-10)
    assert solution.ok and solution.x[0] + solution.x[1] <= 0.6 + 1e-6


def test_an_infeasible_qp_says_so():
    """x >= 1 and x <= 0: no backend finds a solution; the answer is not ok and names each backend's failure."""
    problem = QPProblem(np.eye(1), np.zeros(1), np.array([[1.0], [-1.0]]), np.array([0.0, -1.0]),
                        np.zeros((0, 1)), np.zeros(0), np.full(1, -np.inf), np.full(1, np.inf))
    solution = solve_qp(problem, "daqp")
    assert not solution.ok and "daqp" in solution.message


# ------------------------------------------------------------------------------------------ round trips
def test_finger_round_trip():
    """The finger pulled 8 mm forward puts its tip at p; with p as the goal, the inverse model from rest finds a
    cable displacement of 8 mm within 0.5 % and the tip within 1e-3 of the cable length (0.158 mm) of p, in one
    frame (measured: 7.991 mm, 0.019 mm)."""
    forward = Scene.load(SCENES / "finger.toml")
    forward.set("body.finger.cable.cable.value", 8.0)
    assert forward.step().converged
    goal = _tip(forward)
    inverse = _inverse("finger.toml", goal)
    report = inverse.step()
    assert report.converged, report.message
    outputs = inverse.outputs()
    assert outputs["cable.displacement"] == pytest.approx(8.0, rel=5e-3)
    assert outputs["tip.distance"] <= 1e-3 * FINGER_CABLE_LENGTH
    assert np.linalg.norm(np.array(_tip(inverse)) - goal) == pytest.approx(outputs["tip.distance"], rel=1e-12)
    assert report.inverse.reached and report.inverse.linearizations >= 2
    # the next frame keeps the answer after one QP
    again = inverse.step()
    assert again.converged and again.inverse.linearizations == 1
    assert inverse.outputs()["cable.displacement"] == pytest.approx(outputs["cable.displacement"], abs=1e-6)


def test_a_factorizing_linearisation_takes_its_forces_from_the_tangent_pass(monkeypatch):
    """trunk_inverse's goal dragged along a circle: each SQP linearisation that factorizes the tangent takes the
    forces at its state from the same pass over the elements. Over four frames (after 20 frames at the circle's
    centre) no pass assembles the tangent alone, and the forces alone are assembled far fewer times than with two
    passes (measured: 9 force passes against 28, with 20 tangent passes either way; over the 16 frames of
    bench_inverse_drag's circle 42 against 136, with 95); the frames end at the same positions to the bit."""
    from collections import Counter

    from softsim.mechanics.fem import TetElasticity
    from softsim.mechanics.static_problem import StaticProblem

    run = TetElasticity._run
    passes: Counter = Counter()

    def counted(self, x, want_f, want_K, *args, **kwargs):
        passes[(bool(want_f), bool(want_K))] += 1
        return run(self, x, want_f, want_K, *args, **kwargs)

    monkeypatch.setattr(TetElasticity, "_run", counted)
    centre = np.array([0.0, 30.0, 185.0])
    goals = [centre + 10.0 * np.array([np.sin(a), 1.0 - np.cos(a), 0.0]) for a in 2.0 * np.pi * np.arange(1, 5) / 48]

    def drag() -> tuple[Counter, np.ndarray]:
        scene = Scene.load(SCENES / "trunk_inverse.toml")
        scene.set("body.trunk.effector.tip.effectorGoal", [centre.tolist()])
        for _ in range(20):
            assert scene.step().ok
        passes.clear()
        for goal in goals:
            scene.set("body.trunk.effector.tip.effectorGoal", [goal.tolist()])
            assert scene.step().converged
        return Counter(passes), np.array(scene.positions, copy=True)

    fused, x_fused = drag()
    monkeypatch.delattr(StaticProblem, "system")
    separate, x_separate = drag()
    assert np.array_equal(x_fused, x_separate)
    assert fused[(False, True)] == 0 and fused[(True, True)] == separate[(False, True)] > 0
    assert fused[(True, False)] < 0.5 * separate[(True, False)], (fused, separate)


def test_trunk_round_trip_with_two_cables_and_the_rate_limit():
    """The trunk with cableL0 at 8 mm and cableL1 at 4 mm (forward, maxDispVariation 1 mm per frame, 10 frames) puts
    its tip at p (3D). In inverse mode, with the other six cables unable to pull (maxPositiveDisp = 0), the tip
    follows at most 1 mm of cable per frame and settles with cableL0 at 8 mm and cableL1 at 4 mm within 0.5 % and the
    tip within 1e-3 of the long cable's length (0.195 mm) of p (measured: 7.987 mm, 3.991 mm, 0.071 mm)."""
    forward = Scene.load(SCENES / "trunk.toml")
    forward.set("body.trunk.cable.cableL0.value", 8.0)
    forward.set("body.trunk.cable.cableL1.value", 4.0)
    for _ in range(10):
        assert forward.step().converged
    goal = _tip(forward)
    inverse = _inverse("trunk.toml", goal)
    for cable in OTHER_CABLES:
        inverse.set(f"body.trunk.cable.{cable}.maxPositiveDisp", 0.0)
    reports = _run_until_settled(inverse, 14)
    assert reports[-1].converged and reports[-1].inverse.reached
    outputs = inverse.outputs()
    assert outputs["cableL0.displacement"] == pytest.approx(8.0, rel=5e-3)
    assert outputs["cableL1.displacement"] == pytest.approx(4.0, rel=5e-3)
    assert outputs["tip.distance"] <= 1e-3 * 195.0
    assert len(reports) >= 8  # 8 mm at 1 mm per frame


def test_pneunet_round_trip_in_volume_growth():
    """The pneunet at 5 kPa (its scene's value, limited to maxPressure) grows its cavity by V; with its tip as the
    goal, the inverse model finds a volume growth V within 0.5 % and the tip within 1e-3 of the finger's length
    (0.115 mm) of it (measured: 250.27 of 250.54 mm^3, 0.0013 mm)."""
    forward = Scene.load(SCENES / "pneunet.toml")
    assert forward.step().converged
    growth, goal = forward.outputs()["cavity.volumeGrowth"], _tip(forward)
    inverse = _inverse("pneunet.toml", goal)
    report = inverse.step()
    assert report.converged, report.message
    outputs = inverse.outputs()
    assert outputs["cavity.volumeGrowth"] == pytest.approx(growth, rel=5e-3)
    assert outputs["tip.distance"] <= 1e-3 * 115.0


# ------------------------------------------------------------------------------------------ unreachable goals
def _forward_tip_distance(displacement: float, goal: np.ndarray) -> float:
    scene = Scene.load(SCENES / "finger.toml")
    scene.set("body.finger.cable.cable.value", float(displacement))
    report = scene.step()
    assert report.converged, report.message
    return float(np.linalg.norm(np.array(_tip(scene)) - goal))


@pytest.mark.parametrize("max_disp", [None, 5.0])
def test_unreachable_goal_is_the_brute_force_minimum(max_disp):
    """A goal 10 mm out of the finger's bending plane (the 8 mm tip plus [0, 0, 10]) cannot be reached. With
    epsilon = 1e-6 the inverse model's distance is the minimum of |tip(d) - goal| over the admissible d found by
    scipy's bounded scalar minimisation of the forward model (each evaluation a forward frame from rest), within
    1e-4 relative; the cable displacement agrees within 2 % (a flat minimum). With maxPositiveDisp = 5 the minimum
    sits on that bound, and the answer reports it as the limit that stops the actuator."""
    forward = Scene.load(SCENES / "finger.toml")
    forward.set("body.finger.cable.cable.value", 8.0)
    forward.step()
    goal = np.array(_tip(forward)) + [0.0, 0.0, 10.0]
    inverse = _inverse("finger.toml", goal.tolist(), epsilon=1e-6)
    if max_disp is not None:
        inverse.set("body.finger.cable.cable.maxPositiveDisp", max_disp)
    report = inverse.step()
    assert report.converged, report.message
    found = inverse.outputs()
    upper = 12.0 if max_disp is None else max_disp
    brute = scipy.optimize.minimize_scalar(_forward_tip_distance, bounds=(0.0, upper), args=(goal,),
                                           method="bounded", options={"xatol": 1e-3})
    assert found["tip.distance"] == pytest.approx(brute.fun, rel=1e-4)
    assert found["cable.displacement"] == pytest.approx(brute.x, rel=2e-2)
    assert not report.inverse.reached
    if max_disp is not None:
        assert found["cable.displacement"] == pytest.approx(max_disp, abs=1e-6)
        assert ("cable", "maxPositiveDisp") in report.inverse.limiting
        assert found["cable.limited"] == 1.0
    else:
        assert report.inverse.limiting == [] and found["cable.limited"] == 0.0


# ------------------------------------------------------------------------------------------ limits
def test_limits_hold_in_every_frame_of_a_far_goal():
    """The trunk sent to a goal it cannot reach (200 mm sideways): in each of 12 frames every cable pulls with a
    force >= minForce = 0 (-1e-6 of the largest force), stays within maxPositiveDisp, and a cable that pulls in two
    successive frames changes its displacement by at most maxDispVariation = 1 mm (+1e-6). (A slack cable's path
    may shorten faster: the limit is its motor's, as in the forward law.)"""
    scene = _inverse("trunk.toml", [200.0, 0.0, 150.0])
    cables = LONG_CABLES + ("cableS0", "cableS1", "cableS2", "cableS3")
    previous = {c: (0.0, False) for c in cables}
    pulled = 0
    for _ in range(12):
        report = scene.step()
        assert report.ok, report.message
        outputs = scene.outputs()
        largest = max(abs(outputs[f"{c}.force"]) for c in cables)
        for cable in cables:
            displacement, force = outputs[f"{cable}.displacement"], outputs[f"{cable}.force"]
            taut = force > 1e-6 * largest
            if taut and previous[cable][1]:
                assert abs(displacement - previous[cable][0]) <= 1.0 + 1e-6, cable
                pulled += 1
            assert displacement <= (70.0 if cable.startswith("cableL") else 40.0) + 1e-6
            assert force >= -1e-6 * max(largest, 1.0)
            previous[cable] = (displacement, taut)
    assert pulled >= 10
    assert not report.inverse.reached and report.inverse.limiting


def test_limit_shift_to_target_bounds_each_frames_goal():
    """limitShiftToTarget with maxShiftToTarget = 1 mm: the goal the rows measure lies within 1 mm per component of
    the tip at the frame's start, so the tip, which reaches a goal 9.7 mm away in one frame without the limit, moves
    at most 2.5 mm per frame (one cable cannot follow a 3D goal exactly) and gets closer every frame."""
    forward = Scene.load(SCENES / "finger.toml")
    forward.set("body.finger.cable.cable.value", 8.0)
    forward.step()
    scene = _inverse("finger.toml", _tip(forward))
    scene.set("body.finger.effector.tip.limitShiftToTarget", True)
    scene.set("body.finger.effector.tip.maxShiftToTarget", 1.0)
    tip, distance = np.array(_tip(scene)), scene.outputs()["tip.distance"]
    effector = scene.simulation.constraint("tip")
    for _ in range(4):
        assert scene.step().ok
        assert np.all(np.abs(effector.goal() - tip) <= 1.0 + 1e-12)
        new_tip = np.array(_tip(scene))
        assert np.linalg.norm(new_tip - tip) <= 2.5
        assert scene.outputs()["tip.distance"] < distance
        tip, distance = new_tip, scene.outputs()["tip.distance"]


# ------------------------------------------------------------------------------------------ contact
def test_goal_below_the_floor_is_approached_without_penetration():
    """The shipped gripper finger above its floor (y = -30, contactDistance 0.5, friction 0.3) with a tip goal 15 mm
    below the floor: over 15 frames the tip gets closer to the goal than at rest, and no surface node lies below
    the floor's contact plane y = -29.5 by more than 1e-3 mm (checked on the positions, independently of the
    contact rows)."""
    scene = Scene.load(SCENES / "gripper.toml")
    scene.set("solver.inverse", {})
    start = np.array(_tip(scene))
    goal = [start[0], -45.0, start[2]]
    scene.set("body.finger.effector.tip.effectorGoal", [goal])
    start_distance = float(np.linalg.norm(start - goal))
    surface = np.unique(scene.mesh.surface_triangles())
    touched = False
    for _ in range(15):
        report = scene.step()
        assert report.ok, report.message
        lowest = float(scene.positions[surface, 1].min())
        assert lowest >= -29.5 - 1e-3
        touched |= lowest <= -29.5 + 1e-3
    assert touched
    assert scene.outputs()["tip.distance"] < start_distance - 5.0


# ------------------------------------------------------------------------------------------ modes and messages
def test_switching_inverse_off_gives_the_forward_answer_again():
    """Inverse on, then solver.inverse.active = false: the cable's own value (0 mm) applies again (displacement back
    to 0 within 1e-6 mm); on again: back to the goal."""
    forward = Scene.load(SCENES / "finger.toml")
    forward.set("body.finger.cable.cable.value", 5.0)
    forward.step()
    scene = _inverse("finger.toml", _tip(forward))
    scene.step()
    assert scene.outputs()["cable.displacement"] == pytest.approx(5.0, rel=5e-3)
    scene.set("solver.inverse.active", False)
    report = scene.step()
    assert report.inverse is None and abs(scene.outputs()["cable.displacement"]) <= 1e-6
    scene.set("solver.inverse.active", True)
    scene.step()
    assert scene.outputs()["cable.displacement"] == pytest.approx(5.0, rel=5e-3)


def test_linear_correction_is_softrobots_single_qp():
    """correction = "linear": one QP about the free configuration and its linear correction, no forward frame and
    no constrained Newton step."""
    forward = Scene.load(SCENES / "finger.toml")
    forward.set("body.finger.cable.cable.value", 4.0)
    forward.step()
    scene = _inverse("finger.toml", _tip(forward))
    scene.set("solver.newton.correction", "linear")
    report = scene.step()
    assert report.ok and report.inverse.linearizations == 1 and report.inverse.forward_frames == 0
    assert 0.0 < scene.outputs()["cable.displacement"]


def test_inverse_in_dynamic_mode_is_refused_with_its_reason(tmp_path):
    text = (SCENES / "finger.toml").read_text().replace('mode = "static"', 'mode = "dynamic"')
    text = text.replace('"../meshes/', f'"{(SCENES.parent / "meshes").as_posix()}/') + "\n[solver.inverse]\n"
    path = tmp_path / "finger_dynamic_inverse.toml"
    path.write_text(text)
    with pytest.raises(SceneError, match="inverse model runs in static mode"):
        Scene.load(path)
    scene = _inverse("finger.toml", [-90.0, 20.0, 7.5])
    with pytest.raises(SceneError, match="static mode"):
        scene.set("scene.mode", "dynamic")


def test_unknown_qp_backend_is_refused():
    scene = Scene.load(SCENES / "finger.toml")
    with pytest.raises(SceneError, match="qpSolver"):
        scene.set("solver.inverse", {"qpSolver": "qpOASES"})
    with pytest.raises((SceneError, ParameterError)):
        scene.set("solver.inverse", {"epsilon": -1.0})


# ------------------------------------------------------------------------------------------ dragged goals
def test_a_dragged_goal_predicted_start_ends_where_the_unpredicted_frames_do():
    """The shipped trunk_inverse, its goal 2 mm beside the drooped tip, then dragged 0.5 mm per frame along a line:
    from the fourth frame on (two moves after the first equilibrium) a frame starts from the last move
    extrapolated (``predicted``). The same frames with the prediction switched off (the last move forgotten before
    each frame) end at the same state: every cable's displacement within 1e-4 mm and the tip within 1e-4 mm (both
    converge to linearizationTolerance 1e-9 of the body's size; measured 2.3e-8 mm and 1.9e-7 mm, the cables at
    0.56-1.90 mm). (What the prediction saves is measured in benchmarks/bench_inverse_drag.py.)"""

    def drag(predict: bool):
        scene = Scene.load(SCENES / "trunk_inverse.toml")
        scene.set("solver.inverse.linearizationTolerance", 1e-9)
        start = np.array(_tip(scene)) + [0.0, 2.0, 0.0]
        reports = []
        for k in range(6):
            scene.set("body.trunk.effector.tip.effectorGoal", [(start + [0.3 * k, 0.4 * k, 0.0]).tolist()])
            if not predict:
                scene.simulation.inverse.last_move = None
            reports.append(scene.step())
            assert reports[-1].converged, reports[-1].message
        return scene, reports

    predicted, with_reports = drag(True)
    plain, without_reports = drag(False)
    assert [r.inverse.predicted for r in with_reports] == [False, False, False, True, True, True]
    assert not any(r.inverse.predicted for r in without_reports)
    for cable in LONG_CABLES + ("cableS0", "cableS1", "cableS2", "cableS3"):
        assert predicted.outputs()[f"{cable}.displacement"] == pytest.approx(
            plain.outputs()[f"{cable}.displacement"], abs=1e-4), cable
    assert np.linalg.norm(np.array(_tip(predicted)) - _tip(plain)) <= 1e-4


def test_a_goal_at_rest_is_not_solved_again_and_a_moved_goal_is():
    """The shipped trunk_inverse with its goal standing still reaches a fixed point: a frame starting where the last
    one ended, with its multipliers, goals and limits, ends there with the same multipliers to the bit. Such a frame
    is not solved again (report.unchanged, no QP run): its answer is what solving it gives (checked against the
    frame solved in full), so a playing window comes to rest. Moving the goal solves again."""
    from softsim.app.resources import resource_path

    scene = Scene.load(resource_path("scenes", "trunk_inverse.toml"))
    reports = [scene.step() for _ in range(40)]
    assert all(r.converged for r in reports)
    assert reports[-1].unchanged and reports[-2].unchanged
    x_rest = scene.simulation.x.copy()
    forces = [force.copy() for _, force in reports[-1].forces]
    solved = []
    for forced in (False, True):  # forced: the same frame solved in full (the fixed point forgotten)
        if forced:
            scene.simulation.inverse.still = None
        report = scene.step()
        solved.append(report)
        assert report.converged and report.unchanged == (not forced)
        assert np.array_equal(scene.simulation.x, x_rest)
        assert all(np.array_equal(force, kept) for (_, force), kept in zip(report.forces, forces))
    assert solved[1].inverse.linearizations == 1  # the solved frame ran its one QP and found nothing to change
    goal = np.array(scene.spec.bodies[0].effectors[0].effectorGoal[0])
    scene.set("body.trunk.effector.tip.effectorGoal", [(goal + [2.0, 0.0, 0.0]).tolist()])
    report = scene.step()
    assert report.converged and not report.unchanged and report.inverse.linearizations >= 1
    assert np.abs(scene.simulation.x - x_rest).max() > 0.1
