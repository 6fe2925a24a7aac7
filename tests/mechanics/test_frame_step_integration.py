"""Integrated frame-step tests (issues 5 and 10): the static frame step with real FEM models, the Newton solver,
the constraint models and the constraint solvers, on small scenes built from the shipped beam and cube meshes.
Units mm-kg-s (E in kPa, forces in mN)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.constraints import BilateralAttachment
from softsim.mechanics.scene import parse_data
from softsim.mechanics.scene_runtime import Scene

MESHES = Path(__file__).resolve().parents[2] / "resources" / "meshes"
SOLVER = {"newton": {"newton_iterations": 10, "correction_tolerance_threshold": 1e-10,
                     "residual_tolerance_threshold": 1e-10},
          "constraint": {"type": "BlockGaussSeidel", "maxIterations": 5000, "tolerance": 1e-10}}
CLAMP = {"box": [-0.1, -0.1, -0.1, 0.1, 10.1, 10.1]}  # the x = 0 face of the 100 x 10 x 10 beam


def make_scene(body: dict, *, obstacles=(), gravity=(0.0, 0.0, 0.0), solver=None) -> Scene:
    data = {"scene": {"units": "mm-kg-s", "gravity": list(gravity)},
            "body": [{"name": "body", **body}], "solver": solver or SOLVER}
    if obstacles:
        data["obstacle"] = list(obstacles)
    return Scene(parse_data(data, source="test.toml", base_dir=MESHES))


def beam_with_cable(model: str = "linear", **cable) -> Scene:
    """The beam clamped at x = 0 with a cable along its upper side (y = 8.75), pulled from (0, 8.75, 5)."""
    points = [[x, 8.75, 5.0] for x in (10.0, 30.0, 50.0, 70.0, 90.0, 97.5)]
    return make_scene({"mesh": "beam.vtu",
                       "material": {"model": model, "youngModulus": 600.0, "poissonRatio": 0.3},
                       "fixed": [CLAMP],
                       "cable": [{"name": "cable", "points": points, "pullPoint": [0.0, 8.75, 5.0],
                                  "minForce": 0.0, **cable}]})


def tip_y(scene: Scene) -> float:
    end = scene.mesh.point_sets["free_end"]
    return float((scene.positions[end, 1] - scene.simulation.X[end, 1]).mean())


def step(scene: Scene, frames: int = 1):
    for _ in range(frames):
        report = scene.step()
        assert report.ok, report.message
    assert np.all(np.isfinite(scene.positions))
    return report


# -- cable ----------------------------------------------------------------------------------------------------
def test_cable_displacement_mode_shortens_by_the_value_and_bends_toward_the_cable():
    scene = beam_with_cable("corotational", value=2.0)
    scene.set("solver.newton.correction", "linear")
    step(scene, 2)
    linear = scene.outputs()["cable.displacement"]
    scene.set("solver.newton.correction", "equilibrium")
    step(scene)
    exact = scene.outputs()["cable.displacement"]
    assert exact == pytest.approx(2.0, abs=1e-6)
    assert 0.0 < linear < 2.0  # SOFA's single linear correction under-shoots (measured 1.07)
    assert tip_y(scene) > 5.0  # the cable runs above the neutral axis: the beam bends up, toward it (12 mm)
    assert scene.outputs()["cable.force"] > 0.0


def test_cable_force_mode_reports_the_imposed_force():
    scene = beam_with_cable(valueType="force", value=40.0)
    step(scene)
    outputs = scene.outputs()
    assert outputs["cable.force"] == pytest.approx(40.0, abs=1e-9)
    assert outputs["cable.displacement"] > 0.0 and tip_y(scene) > 0.0
    scene.set("body.body.cable.cable.value", 80.0)
    step(scene)
    assert scene.outputs()["cable.force"] == pytest.approx(80.0, abs=1e-9)
    assert tip_y(scene) > 0.0


def test_cable_with_min_force_zero_never_pushes():
    scene = beam_with_cable(value=-1.0)  # ask the cable to lengthen by 1 mm: it would have to push
    step(scene, 2)
    outputs = scene.outputs()
    assert outputs["cable.force"] == 0.0
    assert outputs["cable.displacement"] == pytest.approx(0.0, abs=1e-12)  # slack: the beam stays at rest
    assert np.abs(scene.positions - scene.simulation.X).max() < 1e-12


def test_cable_max_positive_disp_caps_the_displacement():
    scene = beam_with_cable("corotational", value=2.0, maxPositiveDisp=0.75)
    step(scene, 2)
    assert scene.outputs()["cable.displacement"] == pytest.approx(0.75, abs=1e-8)


def test_reequilibration_changes_a_large_cable_pull():
    """Issue 10: how much re-equilibration changes a large cable pull (6 mm on the 100 mm corotational beam:
    the tip rises by a third of the length). Beyond about 8 mm the re-equilibration itself stops converging
    (the corotational tangent omits the derivative of the rotations, so its Newton iterations are inexact)."""
    results = {}
    for iterations, correction in ((0, "linear"), (10, "equilibrium")):
        scene = beam_with_cable("corotational", value=6.0)
        scene.set("solver.newton.correction", correction)
        step(scene, 2)
        results[iterations] = (scene.outputs()["cable.displacement"], tip_y(scene))
    assert results[10][0] == pytest.approx(6.0, abs=1e-5)
    assert results[10][1] > 30.0
    assert abs(results[0][0] - 6.0) > 1.0  # the linearised correction misses a large pull by millimetres


# -- cavity ---------------------------------------------------------------------------------------------------
def balloon(**cavity) -> Scene:
    return make_scene({"mesh": "balloon.vtu",
                       "material": {"model": "corotational", "youngModulus": 100.0, "poissonRatio": 0.45},
                       "fixed": [{"set": "base"}],
                       "cavity": [{"name": "cavity", "set": "cavity", **cavity}]})


def test_cavity_volume_growth_mode_reaches_v0_plus_value():
    scene = balloon(valueType="volumeGrowth", value=200.0)
    step(scene, 2)
    outputs = scene.outputs()
    target = outputs["cavity.initialCavityVolume"] + 200.0
    assert abs(outputs["cavity.cavityVolume"] - target) <= 0.01 * target
    assert outputs["cavity.volumeGrowth"] == pytest.approx(200.0, abs=1e-6)
    assert outputs["cavity.pressure"] > 0.0


def test_cavity_pressure_mode_volume_grows_monotonically():
    scene = balloon(valueType="pressure", value=0.0)
    volumes = []
    for pressure in (0.0, 1.0, 2.0, 4.0, 6.0):
        scene.set("body.body.cavity.cavity.value", pressure)
        step(scene)
        outputs = scene.outputs()
        assert outputs["cavity.pressure"] == pytest.approx(pressure, abs=1e-10)
        volumes.append(outputs["cavity.cavityVolume"])
    assert volumes[0] == pytest.approx(15.0**3, rel=1e-12)
    assert np.all(np.diff(volumes) > 0.0)


# -- contact and friction -------------------------------------------------------------------------------------
def cube_on_floor(*, floor_y: float, friction: float, gravity=(0.0, -9810.0, 0.0), contact_distance=0.1):
    """The 20 mm cube held by its top face (y = 20); a floor plane at ``floor_y`` under its bottom (y = 0)."""
    return make_scene(
        {"mesh": "cube.vtu",
         "material": {"model": "linear", "youngModulus": 50.0, "poissonRatio": 0.3, "totalMass": 0.05},
         "fixed": [{"set": "top"}]},
        obstacles=[{"name": "floor", "type": "plane", "point": [0.0, floor_y, 0.0], "normal": [0.0, 1.0, 0.0],
                    "friction": friction, "contactDistance": contact_distance}],
        gravity=gravity)


def test_body_pushed_onto_a_plane_penetrates_at_most_contact_distance():
    scene = cube_on_floor(floor_y=-0.1, friction=0.0)  # gravity alone sags the bottom by about 0.2 mm
    step(scene, 3)
    bottom = scene.mesh.point_sets["bottom"]
    gap = scene.positions[bottom, 1] - (-0.1)
    assert gap.min() >= 0.1 - 1e-6
    assert scene.outputs()["contact.normalForce"] > 0.0
    scene_free = cube_on_floor(floor_y=-50.0, friction=0.0)
    step(scene_free)
    assert scene_free.positions[bottom, 1].min() < -0.1  # without the floor the cube would sink through


def _tangential_slip(friction: float) -> tuple[float, float]:
    """The cube pressed into the floor (the floor at its bottom, contactDistance 1.1 mm: the contacts lift the
    bottom 1.1 mm against the held top), then pushed sideways by a horizontal gravity: returns (x motion of the
    bottom nodes in the push frames, the bottom's free x motion)."""
    scene = cube_on_floor(floor_y=0.0, friction=friction, gravity=(0.0, -9810.0, 0.0), contact_distance=1.1)
    step(scene, 2)
    bottom = scene.mesh.point_sets["bottom"]
    before = scene.positions[bottom, 0].copy()
    scene.set("scene.gravity", [20000.0, -9810.0, 0.0])
    step(scene, 3)
    motion = float(np.abs(scene.positions[bottom, 0] - before).max())
    free = scene.simulation.x_free[bottom, 0] - before
    return motion, float(np.abs(free).max())


def test_friction_sticks_below_mu_and_slides_above():
    """A block whose top is held, pressed into a floor, loaded sideways: the ratio tangential / normal force
    the bonded contact needs is measured with mu = 100; a mu above the largest ratio holds every bottom node
    in place, a mu below the smallest lets every one of them slide."""
    scene = cube_on_floor(floor_y=0.0, friction=100.0, contact_distance=1.1)
    step(scene, 2)
    scene.set("scene.gravity", [20000.0, -9810.0, 0.0])
    step(scene, 2)
    contact = scene.simulation.constraint("contact")
    forces = contact.contact_forces
    normal = forces[:, 1]
    loaded = normal > 1e-3 * normal.max()
    ratio = np.abs(forces[loaded, 0]) / normal[loaded]
    stick, free = _tangential_slip(1.5 * ratio.max())
    slide, _ = _tangential_slip(0.5 * ratio.min())
    assert stick < 1e-6 * free
    assert slide > 0.05 * free


# -- drag -----------------------------------------------------------------------------------------------------
def test_drag_follows_its_target_and_release_returns_to_equilibrium():
    scene = make_scene({"mesh": "beam.vtu",
                        "material": {"model": "linear", "youngModulus": 600.0, "poissonRatio": 0.3},
                        "fixed": [CLAMP]})
    X = scene.simulation.X
    node = int(scene.mesh.point_sets["free_end"][0])
    target = X[node] + np.array([0.0, 5.0, 0.0])
    scene.start_drag(node, target)
    step(scene, 2)
    distance = float(np.linalg.norm(scene.positions[node] - target))
    force = scene.drag.outputs["force"]
    compliance = scene.spec.drag.compliance
    assert distance == pytest.approx(compliance * force, rel=1e-6)  # a spring of stiffness 1 / compliance
    assert distance < 0.05 * 5.0
    target2 = X[node] + np.array([0.0, -3.0, 2.0])
    scene.move_drag(target2)
    step(scene)
    assert np.linalg.norm(scene.positions[node] - target2) < 0.05 * np.linalg.norm(target2 - X[node])
    scene.stop_drag()
    step(scene)
    assert np.abs(scene.positions - X).max() < 1e-9  # linear, no load: back to the rest shape


# -- bilateral attachment -------------------------------------------------------------------------------------
def test_bilateral_attachment_holds_after_a_large_load():
    """Issue 10: a free-end node of a corotational beam glued to a node 50 mm nearer the clamp (their rest
    offset kept), under a 2 N load on the free end."""
    scene = make_scene({"mesh": "beam.vtu",
                        "material": {"model": "corotational", "youngModulus": 600.0, "poissonRatio": 0.3},
                        "fixed": [CLAMP],
                        "force": [{"set": "free_end", "totalForce": [0.0, -2000.0, 0.0]}]})
    X = scene.simulation.X
    end = scene.mesh.point_sets["free_end"]
    node_a = int(end[0])
    node_b = int(np.argmin(np.linalg.norm(X - (X[node_a] - [50.0, 0.0, 0.0]), axis=1)))
    attachment = BilateralAttachment([node_a], [node_b], rest_vector=X[node_b] - X[node_a])
    scene.simulation.constraints.append(attachment)
    step(scene, 2)
    deflection = -(scene.positions[end, 1] - X[end, 1]).mean()
    violation = attachment.outputs["maxViolation"]
    assert deflection > 5.0
    assert violation < 1e-8
    assert attachment.outputs["force"] > 100.0


def test_projection_starts_from_the_last_frame_multipliers_and_reaches_the_same_state():
    """Still frames of the gripper (a finger pressed on a floor with friction, 64 rows), solved again
    (``mark_edited``: not taken as unchanged): warm-started complementarity solves converge in one or two
    sweeps instead of ~2000, to the cold-started state within the solver's tolerance. Left alone, the still
    frames are recognised as unchanged and call no complementarity solve at all."""
    def settled_with_iteration_log():
        scene = Scene.load(Path(__file__).resolve().parents[2] / "resources" / "scenes" / "gripper.toml")
        step(scene, 40)
        solver, log = scene.simulation.constraint_solver, []

        def logged(W, dfree, blocks, initial_force=None, solve=solver.solve):
            report = solve(W, dfree, blocks, initial_force=initial_force)
            log.append(report.iterations)
            return report

        solver.solve = logged
        return scene, log

    (warm, warm_log), (cold, cold_log) = settled_with_iteration_log(), settled_with_iteration_log()
    assert np.array_equal(warm.simulation.x, cold.simulation.x)
    for _ in range(3):
        assert warm.step().unchanged
    assert warm_log == []
    for _ in range(3):
        warm.simulation.mark_edited()
        warm.step()
        cold.simulation.forget_warm_start()  # its solves start from zero forces
        cold.step()
    assert max(warm_log) <= 2 and max(cold_log) >= 100, (warm_log, cold_log)  # measured 1..2 and 1985..2380
    assert np.abs(warm.simulation.x - cold.simulation.x).max() < 1e-4  # measured 3.7e-5 mm (deflection 22 mm)
    assert warm.simulation.outputs()["cable.displacement"] == pytest.approx(10.0, abs=1e-6)
    assert warm.simulation.outputs()["contact.contacts"] == cold.simulation.outputs()["contact.contacts"]
