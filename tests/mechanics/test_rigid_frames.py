"""Rigid frames prescribed on a body's nodes (``[[body.fixed]]`` with ``angle``, ``axis``, ``center``): the region's
nodes are held at ``center + R(axis, angle) (X - center) + translation`` (Tripod's servo arms), in both modes
and live."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from scipy.spatial.transform import Rotation

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices
from softsim.mechanics.rigid_frames import best_rigid_motion, held_positions, rigid_motion, rotation_matrix
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "resources" / "scenes" / "beam.toml"
END = [99.9, -0.1, -0.1, 100.1, 10.1, 10.1]  # the nodes of the free end x = 100 of the 100 x 10 x 10 beam
CENTRE = [100.0, 5.0, 5.0]


def beam(end: dict | None = None, *, model: str = "linear", mode: str = "static", clamp: dict | None = None) -> Scene:
    """The 100 x 10 x 10 mm beam without its load: clamped at x = 0 (``clamp`` added to that region), and the end
    x = 100 held by the frame ``end`` (no end region when None)."""
    spec = load_scene(BEAM)
    data = to_data(spec)
    body = data["body"][0]
    body.pop("force")
    body["material"]["model"] = model
    body["fixed"][0].update(clamp or {})
    if end is not None:
        body["fixed"].append({"box": END, **end})
    data["scene"]["mode"] = mode
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def end_nodes(scene: Scene) -> np.ndarray:
    X = scene.model.rest_positions
    fixed = scene.model.fixed_nodes
    return fixed[np.abs(X[fixed, 0] - 100.0) < 1e-9]


def test_held_positions_against_scipy_rotations():
    rng = np.random.default_rng(3)
    rest = rng.normal(size=(7, 3))
    axis, angle, center, shift = np.array([1.0, -2.0, 0.5]), 37.0, np.array([0.3, 1.0, -2.0]), np.array([1, 2, 3.0])
    expected = Rotation.from_rotvec(np.deg2rad(angle) * axis / np.linalg.norm(axis)).apply(rest - center) + center
    np.testing.assert_allclose(held_positions(rest, shift, angle, 3 * axis, center), expected + shift, atol=1e-14)
    # right-handed: +90 degrees about z takes x to y
    np.testing.assert_allclose(rotation_matrix([0, 0, 1], 90.0) @ [1.0, 0, 0], [0.0, 1.0, 0.0], atol=1e-15)
    R, b = rigid_motion(shift, angle, axis, center)
    fitted_R, fitted_b = best_rigid_motion(rest, rest @ R.T + b)
    np.testing.assert_allclose(fitted_R, R, atol=1e-12)
    np.testing.assert_allclose(fitted_b, b, atol=1e-12)
    with pytest.raises(ParameterError, match="non-zero"):
        rotation_matrix([0.0, 0.0, 0.0], 10.0)


def test_cross_matrices_are_the_cross_product():
    """[v]x u = v x u (numpy's cross) for 5 random pairs, and one vector (3,) gives one (1, 3, 3) matrix."""
    rng = np.random.default_rng(5)
    v, u = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    np.testing.assert_allclose(np.einsum("kij,kj->ki", cross_matrices(v), u), np.cross(v, u), rtol=0, atol=1e-15)
    assert cross_matrices([0.0, 0.0, 1.0]).tolist() == [[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]


def test_the_axis_must_not_be_zero():
    spec = load_scene(BEAM)
    data = to_data(spec)
    data["body"][0]["fixed"][0]["axis"] = [0.0, 0.0, 0.0]
    with pytest.raises(SceneError, match=r"fixed\[0\]\.axis"):
        parse_data(data, source=spec.source, base_dir=spec.base_dir)


def test_a_rotated_end_frame_solves_the_linear_problem_with_prescribed_displacements():
    """A linear beam clamped at x = 0 whose end x = 100 turns by 2 degrees about z through the end's centre: the
    frame step's positions equal the independent solve of K_ff u_f = -K_fc u_c with the end's displacements
    u_c = c + R (X - c) - X (the linear material's forces are -K u, K its tangent at rest)."""
    scene = beam({"angle": 2.0, "axis": [0, 0, 1], "center": CENTRE})
    report = scene.step()
    assert report.converged, report.message
    X, x = scene.model.rest_positions, scene.positions
    end = end_nodes(scene)
    np.testing.assert_allclose(x[end], held_positions(X[end], angle=2.0, axis=[0, 0, 1], center=CENTRE), atol=1e-12)
    _, K = scene.model.forces_and_tangent(X)
    fixed_dofs = np.setdiff1d(np.arange(X.size), scene.model.free_dofs)
    u = np.zeros(X.size)
    u[fixed_dofs] = (x - X).reshape(-1)[fixed_dofs]
    free = scene.model.free_dofs
    K = K.tocsc()
    u[free] = spla.spsolve(K[free][:, free], -K[free][:, fixed_dofs] @ u[fixed_dofs])
    np.testing.assert_allclose((x - X).reshape(-1), u, atol=1e-8)
    assert np.abs(u[free]).max() > 0.3  # the beam bends: measured 0.52 mm at its most displaced free node


def test_the_reaction_torque_is_the_derivative_of_the_energy():
    """Envelope theorem: dE/dangle of the equilibrium's energy (central differences of re-solved frames) equals
    the torque the frame exerts about its axis, sum of (x - c) x (-f_int) over its nodes (radians). Measured on
    the linear beam: 698.5 mN mm at 1 degree, about twice Euler-Bernoulli's 4 E I theta / L = 349.1 (the coarse
    tetrahedra are stiffer in bending)."""
    angle, h = 1.0, 1e-3
    scene = beam({"angle": angle, "axis": [0, 0, 1], "center": CENTRE})
    assert scene.step().converged
    x = scene.positions.copy()
    f, _ = scene.model.forces_and_tangent(x)
    end = end_nodes(scene)
    torque = float(np.sum(np.cross(x[end] - CENTRE, -f[end])[:, 2]))
    energies = []
    for value in (angle + h, angle - h):
        scene.set("body.beam.fixed[1].angle", value)
        assert scene.step().converged
        energies.append(scene.model.potential_energy(scene.positions))
    derivative = (energies[0] - energies[1]) / (2 * np.deg2rad(h))
    assert derivative == pytest.approx(torque, rel=1e-6)
    euler_bernoulli = 4 * 600.0 * (1e4 / 12) * np.deg2rad(angle) / 100.0
    assert 1.5 < torque / euler_bernoulli < 2.5


@pytest.mark.parametrize(("model", "energy_zero"), [("corotational", True), ("neohookean", True), ("linear", False)])
def test_turning_every_fixed_region_together_is_a_rigid_motion(model, energy_zero):
    """Both ends turned by 30 degrees about one axis: a rotation-invariant material (corotational, neo-Hookean)
    is at rest in the rotated pose, with no strain energy; the linear material is not invariant (its energy is
    the check that the test can fail)."""
    frame = {"angle": 30.0, "axis": [0.2, 1.0, 0.3], "center": [50.0, 5.0, 5.0], "translation": [1.0, -2.0, 3.0]}
    scene = beam(frame, model=model, clamp=frame)
    report = scene.step()
    assert report.converged, report.message
    X = scene.model.rest_positions
    energy = scene.model.potential_energy(scene.positions)
    if energy_zero:
        np.testing.assert_allclose(scene.positions, held_positions(X, **frame), atol=1e-8)
        assert energy < 1e-12
    else:
        assert energy > 1.0


def test_a_live_angle_moves_the_frame_without_a_rebuild_in_both_modes():
    for mode in ("static", "dynamic"):
        scene = beam({"angle": 0.0, "axis": [0, 1, 0], "center": CENTRE}, model="corotational", mode=mode)
        simulation = scene.simulation
        X = scene.model.rest_positions
        end = end_nodes(scene)
        for angle in (2.0, 4.0, 6.0):
            scene.set("body.beam.fixed[1].angle", angle)
            assert scene.simulation is simulation
            report = scene.step()
            assert report.ok, report.message
            np.testing.assert_allclose(scene.positions[end], held_positions(X[end], angle=angle, axis=[0, 1, 0],
                                                                            center=CENTRE), atol=1e-12)
        if mode == "static":
            # the end's axis turns to (cos a, 0, -sin a) (right-handed about y): Euler-Bernoulli's clamped-clamped
            # beam with that end slope, w = (a / L) x^2 - (a / L^2) x^3, has w(L / 2) = a L / 8 = +1.309 mm at
            # 6 degrees (measured 1.316)
            middle = np.flatnonzero(np.abs(X[:, 0] - 50.0) < 1e-9)
            deflection = (scene.positions[middle, 2] - X[middle, 2]).mean()
            assert deflection == pytest.approx(np.deg2rad(6.0) * 100.0 / 8, rel=0.02)


def test_keyframes_drive_the_angle():
    spec = load_scene(BEAM)
    data = to_data(spec)
    body = data["body"][0]
    body.pop("force")
    body["fixed"].append({"box": END, "axis": [0, 0, 1], "center": CENTRE})
    data["controller"] = [{"name": "servo", "key": "body.beam.fixed[1].angle",
                           "keyframes": [[0.0, 0.0], [0.05, 5.0]]}]
    scene = Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))
    end = end_nodes(scene)
    X = scene.model.rest_positions
    for _ in range(5):
        assert scene.step().converged
    np.testing.assert_allclose(scene.positions[end], held_positions(X[end], angle=5.0, axis=[0, 0, 1], center=CENTRE),
                               atol=1e-12)
