"""Sensitivities (issue 33): the adjoint gradients of Scene.gradients against central finite differences of
re-solved frames (Richardson-extrapolated, the equilibria solved to tight tolerances), on the shipped finger,
pneunet and trunk and on the finger pressing a plane; frames without a gradient refuse with a typed error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from softsim.mechanics import Scene
from softsim.mechanics.materials import lame
from softsim.mechanics.sensitivity import GradientError, NotConvergedError, NotDifferentiableError
from softsim.mechanics.sensitivity.parameters import lame_derivatives

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "resources" / "scenes"
PLANE = ROOT / "tests" / "data" / "softrobots" / "finger_plane.toml"
TOLERANCE = 1e-6


def _scene(path, values, frames, constraint_solver=None):
    scene = Scene.load(path)
    scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
    scene.set("solver.newton.correction_tolerance_threshold", 1e-10)
    if constraint_solver:
        scene.set("solver.constraint.type", constraint_solver)
    for key, value in values.items():
        scene.set(key, value)
    for _ in range(frames):
        report = scene.step()
    assert report.converged, report.message
    return scene


def _read(scene, name):
    if name.startswith("node["):
        node = int(name[5:name.index("]")])
        return float(scene.positions[node]["xyz".index(name[-1])])
    return scene.outputs()[name]


def _split(key):
    """``key`` -> (the scene key, the index of a point in its list or None, the axis 0-2 or None): a scalar
    (``body.finger.material.youngModulus``), a vector's component (``scene.gravity.y``) or a listed point's
    (``body.finger.cable.cable.points[2].z``). Split here rather than by the gradients' own parser, so that the
    differences perturb the number the key names whether or not that parser reads it right."""
    base, index, axis = key, None, None
    if key[-2:] in (".x", ".y", ".z"):
        base, axis = key[:-2], "xyz".index(key[-1])
    if base.endswith("]"):
        base, index = base[:base.rindex("[")], int(base[base.rindex("[") + 1:-1])
    return base, index, axis


def _set(scene, key, value):
    base, index, axis = _split(key)
    current = scene.get(base)
    if index is not None:
        points = [list(p) for p in current]
        points[index][axis] = value
        scene.set(base, points)
    elif axis is not None:
        vector = list(current)
        vector[axis] = value
        scene.set(base, vector)
    else:
        scene.set(base, value)


def _finite_differences(scene, outputs, key, value, step):
    """Richardson-extrapolated central differences (error O(step^4)) of re-solved frames."""
    samples = []
    for shift in (step, -step, step / 2, -step / 2):
        _set(scene, key, value + shift)
        for _ in range(3):
            report = scene.step()
        assert report.converged, report.message
        samples.append({name: _read(scene, name) for name in outputs})
    _set(scene, key, value)
    for _ in range(3):
        scene.step()
    result = {}
    for name in outputs:
        coarse = (samples[0][name] - samples[1][name]) / (2 * step)
        fine = (samples[2][name] - samples[3][name]) / step
        result[name] = (4 * fine - coarse) / 3
    return result


def _check(scene, outputs, steps):
    gradients = scene.gradients(outputs, list(steps))
    worst = 0.0
    for key, step in steps.items():
        value = scene.gradients(outputs[:1], [key])  # the key is valid alone too
        assert set(value) == {outputs[0]}
        current = float(_value(scene, key))
        reference = _finite_differences(scene, outputs, key, current, step)
        for name in outputs:
            error = abs(gradients[name][key] - reference[name]) / abs(reference[name])
            worst = max(worst, error)
            assert error < TOLERANCE, (name, key, gradients[name][key], reference[name], error)
    return worst


def _value(scene, key):
    from softsim.mechanics.sensitivity.parameters import parameter

    return parameter(scene, key).value


def test_finger_against_finite_differences():
    scene = _scene(SCENES / "finger.toml", {"body.finger.cable.cable.value": 10.0}, 5)
    steps = {"body.finger.material.youngModulus": 6.0, "body.finger.material.poissonRatio": 1e-4,
             "body.finger.cable.cable.value": 1e-2, "scene.gravity.y": 100.0,
             "body.finger.material.totalMass": 1e-3, "body.finger.cable.cable.points[2].z": 0.04}
    worst = _check(scene, ["tip.y", "cable.force", "node[100].x"], steps)
    assert worst < TOLERANCE


def test_pneunet_against_finite_differences():
    scene = _scene(SCENES / "pneunet.toml", {}, 8)
    steps = {"body.pneunet.material.youngModulus": 5.0, "body.pneunet.material.region[0].youngModulus": 15.0,
             "body.pneunet.material.poissonRatio": 1e-4, "body.pneunet.cavity.cavity.value": 0.05}
    assert _check(scene, ["tip.y", "cavity.volumeGrowth"], steps) < TOLERANCE


def test_trunk_against_finite_differences():
    scene = _scene(SCENES / "trunk.toml", {"body.trunk.cable.cableL0.value": 5.0,
                                           "body.trunk.cable.cableS1.value": 3.0}, 8)
    steps = {"body.trunk.material.poissonRatio": 1e-4, "body.trunk.cable.cableL0.value": 1e-2,
             "body.trunk.cable.cableS1.value": 1e-2, "body.trunk.material.totalMass": 4e-4}
    assert _check(scene, ["tip.x", "tip.y", "cableL0.force"], steps) < TOLERANCE


def test_finger_pressing_a_plane_against_finite_differences():
    """The finger curled into the plane y = 30: two active contacts, fifteen inactive. The contact laws are
    solved exactly (the "exact" constraint solver), so that re-solved frames agree to round-off (Gauss-Seidel
    stops with gaps of 1e-5 mm, which the differences amplify)."""
    scene = _scene(PLANE, {"body.finger.cable.cable.value": 20.0}, 4, constraint_solver="exact")
    report = __import__("softsim.mechanics.sensitivity", fromlist=["gradient_report"]).gradient_report(
        scene, ["contact.normalForce"], ["obstacle.ceiling.point.y"])
    assert report.held_rows == 3 and report.forced_rows == 15  # the cable and two contacts hold
    steps = {"body.finger.material.youngModulus": 6.0, "body.finger.cable.cable.value": 1e-2,
             "obstacle.ceiling.point.y": 1e-2, "scene.gravity.y": 500.0}
    assert _check(scene, ["cable.force", "contact.normalForce", "node[50].y"], steps) < TOLERANCE


def test_a_frame_that_did_not_converge_has_no_gradient():
    scene = Scene.load(SCENES / "finger.toml")
    with pytest.raises(NotConvergedError, match="no frame has been solved"):
        scene.gradients(["tip.y"], ["body.finger.material.youngModulus"])
    scene.set("solver.newton.newton_iterations", 1)  # ten factorizations per frame: short of a 30 mm jump
    scene.set("body.finger.cable.cable.value", 30.0)
    report = scene.step()
    assert not report.converged
    with pytest.raises(NotConvergedError, match=f"frame {report.frame} did not converge"):
        scene.gradients(["tip.y"], ["body.finger.material.youngModulus"])


def test_bad_names_and_stale_frames_are_refused():
    scene = _scene(SCENES / "finger.toml", {"body.finger.cable.cable.value": 5.0}, 2)
    scene.set("body.finger.cable.cable.value", 6.0)
    with pytest.raises(GradientError, match="a value changed after the last frame"):
        scene.gradients(["tip.y"], ["body.finger.material.youngModulus"])
    scene.step()
    with pytest.raises(GradientError, match="not a differentiable output.*tip.y"):
        scene.gradients(["tip.q"], ["body.finger.material.youngModulus"])
    with pytest.raises(GradientError, match="gravity is a vector"):
        scene.gradients(["tip.y"], ["scene.gravity"])
    with pytest.raises(GradientError, match="gradients are available with respect to"):
        scene.gradients(["tip.y"], ["solver.newton.newton_iterations"])
    with pytest.raises(GradientError, match="node ids are 0..439"):
        scene.gradients(["node[99999].x"], ["scene.gravity.y"])


def _system(kinds, sizes, targets, lo, hi, mu, dfree):
    from softsim.mechanics.constraint_system import ConstraintSystem
    from softsim.mechanics.resolutions import Blocks

    class Named:
        name = "c"

    sizes = np.asarray(sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    m = int(sizes.sum())
    return ConstraintSystem([Named()], sp.csr_matrix((m, 3)), np.asarray(dfree, float),
                            Blocks(starts, sizes, kinds, targets, lo, hi, mu), np.zeros(m), [slice(0, m)])


def test_active_set_rules():
    from softsim.mechanics.resolutions import BOUNDED, FORCE, FRICTION
    from softsim.mechanics.sensitivity.active_set import classify

    inf = np.inf
    # an active contact, an inactive one 1 mm away, a cable at 5 mm pulling, a pressure actuator in range
    system = _system([BOUNDED, BOUNDED, BOUNDED, FORCE], [1, 1, 1, 1], [0, 0, 5, 30], [0, 0, 0, -inf],
                     [inf, inf, inf, inf], 0, [0.0, 1.0, 5.0, 2.0])
    active = classify(system, np.array([3.0, 0.0, 40.0, 30.0]), 100.0, 100.0)
    assert active.held.tolist() == [True, False, True, False]
    assert active.force_target.tolist() == [False, False, False, True] and not active.edges
    # a contact touching with zero force, a cable with zero force at its length: edges
    edges = classify(system, np.array([0.0, 0.0, 0.0, 30.0]), 100.0, 100.0).edges
    assert len(edges) == 2 and "separating" in edges[0]
    # friction mu = 0.5, normal force 10: tangential 3 sticks, tangential 5 slides
    friction = _system([FRICTION], [3], [0], [0], [0], [0.5], [0.0, 0.0, 0.0])
    sticking = classify(friction, np.array([10.0, 3.0, 0.0]), 100.0, 100.0)
    assert sticking.held.tolist() == [True, True, True] and not sticking.edges
    sliding = classify(friction, np.array([10.0, 3.0, 4.0]), 100.0, 100.0)
    assert "sliding" in sliding.edges[0]
    with pytest.raises(NotDifferentiableError, match="sliding"):
        raise NotDifferentiableError(sliding.edges)


def test_lame_derivatives_against_finite_differences():
    young, poisson = np.array([600.0, 1500.0]), np.array([0.45, 0.3])
    for name, index in (("youngModulus", 0), ("poissonRatio", 1)):
        h = 1e-6 * (young if index == 0 else 1.0)
        args_plus = (young + h, poisson) if index == 0 else (young, poisson + h)
        args_minus = (young - h, poisson) if index == 0 else (young, poisson - h)
        mu_p, lam_p = lame(*args_plus)
        mu_m, lam_m = lame(*args_minus)
        dmu, dlam = lame_derivatives(young, poisson, name)
        np.testing.assert_allclose(dmu, (mu_p - mu_m) / (2 * h), rtol=1e-8)
        np.testing.assert_allclose(dlam, (lam_p - lam_m) / (2 * h), rtol=1e-8)
    # nu = 0.45, E = 600: dlambda/dnu = E (1 + 2 nu^2) / ((1 + nu)^2 (1 - 2 nu)^2) = 82762.2...
    assert lame_derivatives(np.array([600.0]), np.array([0.45]), "poissonRatio")[1][0] == pytest.approx(
        600.0 * 1.405 / (1.45 ** 2 * 0.01))
