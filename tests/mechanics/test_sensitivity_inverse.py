"""The inverse model's sensitivities (mechanics.sensitivity.inverse): d(actuation, effector position)/d(goal) at
a converged inverse frame, against Richardson-extrapolated central differences of inverse frames re-solved from
rest with the goal moved by +-h and +-h/2 (frames solved to tight tolerances), and the refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.scene_runtime import Scene
from softsim.mechanics.sensitivity import GradientError, NotDifferentiableError, gradient_report

SCENES = Path(__file__).resolve().parents[2] / "resources" / "scenes"
FINGER_GOAL = np.array([-96.4, 16.5, 6.9])  # near where 8 mm of cable puts the finger's tip
FINGER_KEY = "body.finger.effector.tip.effectorGoal"
TRUNK_GOAL = np.array([-20.0, 20.0, 180.0])
TRUNK_KEY = "body.trunk.effector.tip.effectorGoal"


def _finger(goal, frames: int = 3, **cable) -> Scene:
    """The shipped finger, neo-Hookean (the inverse model's exact tangent), in inverse mode with tight
    tolerances, solved ``frames`` frames toward ``goal``."""
    scene = Scene.load(SCENES / "finger.toml")
    scene.set("body.finger.material.model", "neohookean")
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.inverse", {"epsilon": 1e-3, "linearizationTolerance": 1e-10})
    for key, value in cable.items():
        scene.set(f"body.finger.cable.cable.{key}", value)
    scene.set(FINGER_KEY, [list(goal)])
    for _ in range(frames):
        report = scene.step()
    assert report.converged and report.inverse.converged and not report.inverse.stalled, report.message
    return scene


def _trunk(goal, frames: int = 3) -> Scene:
    """The shipped trunk_inverse, neo-Hookean, without the per-frame rate limit (so a frame's answer does not
    depend on the last one's), solved ``frames`` frames toward ``goal``."""
    scene = Scene.load(SCENES / "trunk_inverse.toml")
    scene.set("body.trunk.material.model", "neohookean")
    for cable in scene.spec.bodies[0].cables:
        scene.set(f"body.trunk.cable.{cable.name}.maxDispVariation", None)
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.inverse.linearizationTolerance", 1e-10)
    scene.set(TRUNK_KEY, [list(goal)])
    for _ in range(frames):
        report = scene.step()
    assert report.converged and report.inverse.converged and not report.inverse.stalled, report.message
    return scene


def _corotational_trunk(goal, frames: int = 3) -> Scene:
    """The shipped trunk_inverse (corotational, polarF) run by the inverse model with SOFA's tangent R K0 R^T
    (``corotationalTangent = "sofa"``: by default its inverse frames take polarF's exact tangent), without the
    rate limit, its QP's fixed point converged to 1e-10 (at the default Newton tolerance: with SOFA's tangent the
    equilibrium converges linearly, and a tighter one stalls the frame)."""
    scene = Scene.load(SCENES / "trunk_inverse.toml")
    scene.set("body.trunk.material.corotationalTangent", "sofa")
    for cable in scene.spec.bodies[0].cables:
        scene.set(f"body.trunk.cable.{cable.name}.maxDispVariation", None)
    scene.set("solver.inverse.linearizationTolerance", 1e-10)
    scene.set(TRUNK_KEY, [list(goal)])
    for _ in range(frames):
        report = scene.step()
    assert report.converged and report.inverse.converged and not report.inverse.stalled, report.message
    return scene


def _differences(make, goal, axis: int, h: float, outputs) -> dict:
    """Richardson-extrapolated central differences of re-solved frames: (4 D(h/2) - D(h)) / 3."""
    shift = np.zeros(3)
    shift[axis] = h
    values = [make(goal + f * shift).outputs() for f in (1.0, -1.0, 0.5, -0.5)]
    return {name: (4.0 * (values[2][name] - values[3][name]) / h - (values[0][name] - values[1][name]) / (2 * h))
            / 3.0 for name in outputs}


FINGER_OUTPUTS = ["cable.force", "cable.displacement", "tip.x", "tip.y", "tip.z", "tip.distance"]


@pytest.mark.parametrize("axis, key", [(0, f"{FINGER_KEY}.x"), (1, f"{FINGER_KEY}[0].y"), (2, f"{FINGER_KEY}[0][2]")])
def test_finger_free_cable_against_resolved_frames(axis, key):
    """One free cable (force 3054 mN, inside its bounds), a 3D goal it cannot reach exactly (0.26 mm off): every
    derivative agrees with the re-solved frames to 1e-6 relative (measured: 1e-8 or better)."""
    scene = _finger(FINGER_GOAL)
    report = gradient_report(scene, FINGER_OUTPUTS, [key])
    assert report.held_rows == 1 and report.forced_rows == 0
    assert report.outputs["cable.force"] == pytest.approx(3054.406, rel=1e-5)
    expected = _differences(_finger, FINGER_GOAL, axis, 1e-3, FINGER_OUTPUTS)
    for name in FINGER_OUTPUTS:
        assert report.values[name][key] == pytest.approx(expected[name], rel=1e-6, abs=1e-9), name
    # the goal's y moves the cable most: d force / d goal.y = 158.877 mN/mm
    if axis == 1:
        assert report.values["cable.force"][key] == pytest.approx(158.877, rel=1e-5)


def test_finger_tip_jacobian_is_symmetric():
    """Gauss-Newton structure: d tip_i / d goal_j = d tip_j / d goal_i (measured 1e-14 relative)."""
    keys = [f"{FINGER_KEY}.{a}" for a in "xyz"]
    values = gradient_report(_finger(FINGER_GOAL), ["tip.x", "tip.y", "tip.z"], keys).values
    jacobian = np.array([[values[f"tip.{a}"][k] for k in keys] for a in "xyz"])
    assert np.allclose(jacobian, jacobian.T, rtol=1e-10, atol=1e-12)
    assert jacobian[1, 1] == pytest.approx(0.910505, rel=1e-5)


def test_finger_at_its_displacement_limit_has_zero_sensitivity():
    """maxPositiveDisp = 7 mm stops the cable short of the 8.04 mm the goal asks for: its displacement is held
    at the limit, so the shape, the tip and the force do not move with the goal (re-solved frames agree: their
    differences are below 1e-7)."""
    scene = _finger(FINGER_GOAL, maxPositiveDisp=7.0)
    assert scene.outputs()["cable.displacement"] == pytest.approx(7.0, abs=1e-9)
    key = f"{FINGER_KEY}.y"
    report = gradient_report(scene, FINGER_OUTPUTS, [key])
    expected = _differences(lambda g: _finger(g, maxPositiveDisp=7.0), FINGER_GOAL, 1, 1e-3, FINGER_OUTPUTS)
    for name in ("cable.force", "cable.displacement", "tip.x", "tip.y", "tip.z"):
        assert report.values[name][key] == pytest.approx(0.0, abs=1e-9)
        assert expected[name] == pytest.approx(0.0, abs=1e-6), name
    # the distance still depends on the goal itself: d |p - g| / d g_y = -(p_y - g_y) / |p - g|
    assert report.values["tip.distance"][key] == pytest.approx(expected["tip.distance"], rel=1e-6)


def test_finger_on_its_force_bound_with_zero_multiplier_is_refused():
    """maxForce exactly at the force the free cable finds (3054.406... mN): the bound holds with a zero
    multiplier, the edge between free and bounded."""
    force = _finger(FINGER_GOAL).outputs()["cable.force"]
    scene = _finger(FINGER_GOAL, maxForce=force)
    assert scene.outputs()["cable.force"] == pytest.approx(force, rel=1e-9)
    with pytest.raises(NotDifferentiableError, match="cable: on its force bound with a zero multiplier"):
        gradient_report(scene, ["cable.force"], [f"{FINGER_KEY}.y"])


TRUNK_OUTPUTS = ["cableL0.force", "cableL0.displacement", "cableL1.force", "cableS2.force", "cableL2.force",
                 "tip.x", "tip.y", "tip.z"]


@pytest.mark.parametrize("axis", [0, 2])
def test_trunk_three_free_cables_five_at_their_lower_force_bound(axis):
    """The trunk pulled toward a goal 20 mm aside: three cables pull (L0 3382 mN, L1 1140, S2 2712), five sit on
    minForce = 0. Those five have exactly zero force sensitivity; the rest agree with re-solved frames to 1e-6
    of each column's largest entry."""
    scene = _trunk(TRUNK_GOAL)
    key = f"{TRUNK_KEY}.{'xyz'[axis]}"
    report = gradient_report(scene, TRUNK_OUTPUTS, [key])
    assert report.held_rows == 3 and report.forced_rows == 5
    assert report.values["cableL2.force"][key] == 0.0
    expected = _differences(_trunk, TRUNK_GOAL, axis, 1e-2, TRUNK_OUTPUTS)
    assert abs(expected["cableL2.force"]) < 1e-6
    forces = max(abs(expected[n]) for n in TRUNK_OUTPUTS if n.endswith("force"))
    positions = max(abs(expected[n]) for n in TRUNK_OUTPUTS if not n.endswith("force"))
    for name in TRUNK_OUTPUTS:
        scale = forces if name.endswith("force") else positions
        assert abs(report.values[name][key] - expected[name]) <= 1e-6 * scale, (name, report.values[name][key],
                                                                               expected[name])


@pytest.mark.parametrize("axis", [0, 2])
def test_corotational_trunk_with_sofas_tangent_against_resolved_frames(axis):
    """The shipped corotational trunk_inverse: its inverse frames linearise with SOFA's R K0 R^T, so the fixed
    point they reach (the goal is 0.6 mm out of reach: the QP's optimum depends on that W) is differentiated
    with that tangent's own derivative, in all its directions. Three cables pull (L0 3149 mN, L1 1050, S2 2441),
    five sit on minForce = 0 with exactly zero sensitivity; the rest agree with re-solved frames to 1e-6 of each
    column's largest entry (measured: 6e-9 of it; 1.2e-7 and 1.0e-6 of the two smallest entries themselves)."""
    scene = _corotational_trunk(TRUNK_GOAL)
    assert scene.outputs()["tip.distance"] > 0.5  # the goal is not reached: the answer depends on the QP's W
    key = f"{TRUNK_KEY}.{'xyz'[axis]}"
    report = gradient_report(scene, TRUNK_OUTPUTS, [key])
    assert report.held_rows == 3 and report.forced_rows == 5
    assert report.values["cableL2.force"][key] == 0.0
    expected = _differences(_corotational_trunk, TRUNK_GOAL, axis, 1e-2, TRUNK_OUTPUTS)
    forces = max(abs(expected[n]) for n in TRUNK_OUTPUTS if n.endswith("force"))
    positions = max(abs(expected[n]) for n in TRUNK_OUTPUTS if not n.endswith("force"))
    for name in TRUNK_OUTPUTS:
        scale = forces if name.endswith("force") else positions
        assert abs(report.values[name][key] - expected[name]) <= 1e-6 * scale, (name, report.values[name][key],
                                                                               expected[name])


def test_corotational_finger_against_resolved_frames():
    """The shipped finger as it is (corotational, SOFA's ``large`` rotations, SOFA's tangent in the inverse
    model's QP) with one free cable: every derivative with respect to the goal's y agrees with re-solved frames
    to 1e-6 relative (measured 6e-7 at worst, the tip's distance; 2e-9 to 2e-7 for the others)."""

    def finger(goal):
        scene = Scene.load(SCENES / "finger.toml")
        scene.set("solver.inverse", {"epsilon": 1e-3, "linearizationTolerance": 1e-10})
        scene.set(FINGER_KEY, [list(goal)])
        for _ in range(3):
            report = scene.step()
        assert report.converged and report.inverse.converged and not report.inverse.stalled, report.message
        return scene

    key = f"{FINGER_KEY}.y"
    report = gradient_report(finger(FINGER_GOAL), FINGER_OUTPUTS, [key])
    assert report.held_rows == 1 and report.forced_rows == 0
    expected = _differences(finger, FINGER_GOAL, 1, 1e-2, FINGER_OUTPUTS)
    for name in FINGER_OUTPUTS:
        assert report.values[name][key] == pytest.approx(expected[name], rel=1e-6), name
    assert report.values["cable.force"][key] == pytest.approx(138.808, rel=1e-5)


def test_refusals():
    """A key that is not a goal, an effector that does not exist."""
    finger = _finger(FINGER_GOAL, frames=2)
    with pytest.raises(GradientError, match=r"effectorGoal\[k\]\.x"):
        gradient_report(finger, ["cable.force"], ["body.finger.material.youngModulus"])
    with pytest.raises(GradientError, match="no effector 'nope'"):
        gradient_report(finger, ["cable.force"], ["body.finger.effector.nope.effectorGoal.x"])


def test_softsim_grad_takes_an_inverse_scene(tmp_path):
    """``softsim grad`` on the finger switched to inverse mode from the command line prints the goal
    sensitivities (the 158.877 mN/mm of the cable's force to the goal's y checked above against re-solved
    frames), and the shipped corotational finger as it is (SOFA's tangent in its QP: the 138.808 mN/mm checked
    against re-solved frames below)."""
    import io
    import json

    from softsim.app.grad_command import EXIT_OK, main

    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "g.json"
    code = main([str(SCENES / "finger.toml"), "--output", "cable.force", "--output", "tip.y",
                 "--wrt", f"{FINGER_KEY}.y", "--set", "body.finger.material.model=neohookean",
                 "--set", "solver.inverse.active=true", "--set", "solver.inverse.linearizationTolerance=1e-10",
                 "--set", "solver.newton.residual_tolerance_threshold=1e-11",
                 "--set", f"{FINGER_KEY}=[-96.4,16.5,6.9]", "--frames", "3", "--json", str(target)],
                stdout=out, stderr=err)
    assert code == EXIT_OK, err.getvalue()
    assert "inverse frame 3 (converged): 1 unknown rows free, 0 at a force bound" in out.getvalue()
    data = json.loads(target.read_text())
    assert data["gradients"]["cable.force"][f"{FINGER_KEY}.y"] == pytest.approx(158.877, rel=1e-5)
    assert data["gradients"]["tip.y"][f"{FINGER_KEY}.y"] == pytest.approx(0.910505, rel=1e-5)
    code = main([str(SCENES / "finger.toml"), "--output", "cable.force", "--wrt", f"{FINGER_KEY}.y",
                 "--set", "solver.inverse.active=true", "--set", "solver.inverse.epsilon=1e-3",
                 "--set", "solver.inverse.linearizationTolerance=1e-10",
                 "--set", f"{FINGER_KEY}=[-96.4,16.5,6.9]", "--frames", "3", "--json", str(target)],
                stdout=io.StringIO(), stderr=(err := io.StringIO()))
    assert code == EXIT_OK, err.getvalue()
    data = json.loads(target.read_text())
    assert data["gradients"]["cable.force"][f"{FINGER_KEY}.y"] == pytest.approx(138.808, rel=1e-5)


def test_default_parameters_of_an_inverse_scene_are_its_goal_coordinates():
    """The Sensitivity panel's parameters in inverse mode: the goal's three coordinates, each accepted by
    gradient_report (d tip.y / d goal.y = 0.910505, as above)."""
    from softsim.mechanics.sensitivity import default_parameters

    scene = _finger(FINGER_GOAL)
    keys = default_parameters(scene.spec)
    assert keys == [f"{FINGER_KEY}.x", f"{FINGER_KEY}.y", f"{FINGER_KEY}.z"]
    assert gradient_report(scene, ["tip.y"], keys).values["tip.y"][keys[1]] == pytest.approx(0.910505, rel=1e-5)


def test_a_stalled_inverse_frame_has_no_gradient():
    """The finger's first frame from rest with linearizationTolerance = 1e-10: its line search stalls 3e-8 mm
    short of the QP's fixed point (the next frame gets there), so it has no gradient."""
    from softsim.mechanics.sensitivity import NotConvergedError

    scene = Scene.load(SCENES / "finger.toml")
    scene.set("body.finger.material.model", "neohookean")
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.inverse", {"epsilon": 1e-3, "linearizationTolerance": 1e-10})
    scene.set(FINGER_KEY, [list(FINGER_GOAL)])
    report = scene.step()
    assert report.converged and report.inverse.stalled and report.inverse.change > 1e-8
    with pytest.raises(NotConvergedError, match="its line search stalled"):
        gradient_report(scene, ["cable.force"], [f"{FINGER_KEY}.y"])


CEILING_OUTPUTS = ["cable.force", "cable.displacement", "tip.y", "contact.normalForce"]


def _under_ceiling(tmp_path, mu: float):
    """The shipped finger below a plane y = 23.5 facing down (friction ``mu``), which its top face reaches before
    the tip gets to FINGER_GOAL: a TOML file in tmp_path."""
    text = (SCENES / "finger.toml").read_text().replace('"../meshes/', f'"{(SCENES.parent / "meshes").as_posix()}/')
    text += (f'\n[[obstacle]]\nname = "ceiling"\ntype = "plane"\npoint = [0.0, 23.5, 0.0]\nnormal = [0.0, -1.0, 0.0]\n'
             f'friction = {mu}\ncontactDistance = 0.0\n')
    path = tmp_path / f"finger_ceiling_{mu}.toml"
    path.write_text(text)

    def make(goal, frames: int = 4) -> Scene:
        scene = Scene.load(path)
        scene.set("body.finger.material.model", "neohookean")
        scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
        scene.set("solver.inverse", {"epsilon": 1e-3, "linearizationTolerance": 1e-10})
        scene.set("solver.constraint.type", "exact")
        scene.set(FINGER_KEY, [list(goal)])
        for _ in range(frames):
            report = scene.step()
        assert report.converged and report.inverse.converged and not report.inverse.stalled, report.message
        return scene

    return make


def _corrected_differences(make, goal, axis: int, h: float, outputs, key: str) -> tuple[dict, dict]:
    """Richardson central differences (as :func:`_differences`) of the re-solved frames' outputs as they are, and
    of the same outputs moved to the exact fixed point of each frame's QP (``GradientReport.corrections``: one
    Newton step of the frame's equations from its state, a change of about 2e-9 of the outputs here)."""
    shift = np.zeros(3)
    shift[axis] = h
    plain, corrected = [], []
    for f in (1.0, -1.0, 0.5, -0.5):
        scene = make(goal + f * shift)
        outputs_now = scene.outputs()
        corrections = gradient_report(scene, outputs, [key]).corrections
        plain.append({name: outputs_now[name] for name in outputs})
        corrected.append({name: outputs_now[name] + corrections[name] for name in outputs})

    def richardson(values):
        return {name: (4.0 * (values[2][name] - values[3][name]) / h - (values[0][name] - values[1][name]) / (2 * h))
                / 3.0 for name in outputs}

    return richardson(plain), richardson(corrected)


def test_finger_pressing_a_plane_against_resolved_frames(tmp_path):
    """Contacts in an inverse frame: the cable curls the finger toward the goal until its top face presses on the
    frictionless plane (normal force 26 mN). A touching contact's normal row is held at its gap with its force
    free in the QP, one apart has zero force. The derivatives of the cable's force and displacement, the tip's
    height and the contact force with respect to the goal's x and y agree to 1e-6 relative (measured 2.1e-8 and
    4.9e-8) with differences of the re-solved frames moved to their QP's exact fixed point. Without that move
    they differ by 4.6e-7 (x) and 3.7e-6 (y, a derivative 38 times smaller: the plane holds the finger), the
    same for every output and step: each frame stops 6.6e-9 mm short of the fixed point (within its
    linearizationTolerance), and the shortfall varies with the goal by 1e-7 mm per mm."""
    make = _under_ceiling(tmp_path, 0.0)
    scene = make(FINGER_GOAL)
    keys = [f"{FINGER_KEY}.x", f"{FINGER_KEY}.y"]
    report = gradient_report(scene, CEILING_OUTPUTS, keys)
    assert report.outputs["contact.normalForce"] > 10.0
    for axis, key in enumerate(keys):
        plain, expected = _corrected_differences(make, FINGER_GOAL, axis, 2e-3, CEILING_OUTPUTS, key)
        for name in CEILING_OUTPUTS:
            assert report.values[name][key] == pytest.approx(expected[name], rel=1e-6), (name, key)
            # the frames as they stopped: the systematic difference the corrections remove
            assert report.values[name][key] == pytest.approx(plain[name], rel=1e-5), (name, key)
        if axis == 1:
            assert abs(report.values["cable.force"][key] / plain["cable.force"] - 1.0) > 1e-6
