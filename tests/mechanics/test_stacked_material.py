"""``[[body.material.stacked]]``: a second force field added on some elements (SOFA's second
TetrahedronFEMForceField on a sub-topology), checked against two separate force fields summed, against the
tip of a bar whose stiffness doubles, and against finite differences of its forces."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.scene import SceneError, load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene, element_materials, stacked_elements

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "resources" / "scenes"
EVERYWHERE = [-1e3, -1e3, -1e3, 1e3, 1e3, 1e3]
#: the finger's tip half (x < -50 mm)
TIP_HALF = [-200.0, -100.0, -100.0, -50.0, 100.0, 100.0]


def scene_with(path: Path, edit) -> Scene:
    spec = load_scene(path)
    data = to_data(spec)
    edit(data)
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def stack(data, **table) -> None:
    data["body"][0]["material"].setdefault("stacked", []).append(table)


def test_a_stacked_field_equal_to_the_body_halves_the_tip_deflection_of_a_linear_bar():
    plain = Scene.load(SCENES / "beam.toml")
    plain.step()
    doubled = scene_with(SCENES / "beam.toml", lambda d: stack(d, box=EVERYWHERE, youngModulus=600.0,
                                                                     poissonRatio=0.3))
    doubled.step()
    deflection = plain.outputs()["tip.y"] - 5.0
    assert deflection == pytest.approx(-3.30, abs=0.01)  # the coarse tetrahedra are stiffer than E-B (6.67 mm)
    assert (doubled.outputs()["tip.y"] - 5.0) / deflection == pytest.approx(0.5, rel=1e-9)


@pytest.mark.parametrize("model, rotation", [("corotational", "large"), ("corotational", "polarF"),
                                             ("linear", "polarF"), ("neohookean", "polarF"), ("stvk", "polarF")])
def test_stacked_forces_equal_two_force_fields_summed(model, rotation):
    def edit(data):
        material = data["body"][0]["material"]
        material["model"], material["rotation_method"] = model, rotation
        stack(data, box=TIP_HALF, youngModulus=1500.0, poissonRatio=0.2)

    scene = scene_with(SCENES / "finger.toml", edit)
    body, mesh = scene.spec.bodies[0], scene.meshes[0]
    chosen = stacked_elements(scene.spec, body, mesh, 0)
    assert 0 < chosen.size < mesh.n_tets
    # two separate fields: the body's own and one on the stacked elements only
    tangent = scene.elasticities[0].corotational_tangent
    own = TetElasticity(mesh.points, mesh.tets, model=model, young=600.0, poisson=0.45, rotation_method=rotation,
                        corotational_tangent=tangent)
    added = TetElasticity(mesh.points, mesh.tets[chosen], model=model, young=1500.0, poisson=0.2,
                          rotation_method=rotation, corotational_tangent=tangent)
    rng = np.random.default_rng(3)
    x = mesh.points + rng.normal(scale=0.3, size=mesh.points.shape)
    x[:, 1] += 0.02 * (mesh.points[:, 0] ** 2) / 100.0  # a bend on top of the noise
    expected = own.forces(x) + added.forces(x)
    got = scene.elasticities[0].forces(x)
    assert np.max(np.abs(got - expected)) <= 1e-10 * np.max(np.abs(expected))
    # and the tangents (the corotational model's exact one: the scene's default)
    expected_K = (own.tangent(x) + added.tangent(x)).toarray()
    got_K = scene.elasticities[0].tangent(x).toarray()
    assert np.max(np.abs(got_K - expected_K)) <= 1e-10 * np.max(np.abs(expected_K))


def test_the_box_takes_the_elements_whose_four_nodes_are_inside_or_with_strict_false_the_centre():
    scene = scene_with(SCENES / "finger.toml", lambda d: stack(d, box=TIP_HALF, youngModulus=1.0, poissonRatio=0.3))
    mesh = scene.meshes[0]
    lo, hi = np.array(TIP_HALF[:3]), np.array(TIP_HALF[3:])
    by_loop = [e for e, tet in enumerate(mesh.tets)
               if all(np.all(mesh.points[n] >= lo) and np.all(mesh.points[n] <= hi) for n in tet)]
    np.testing.assert_array_equal(stacked_elements(scene.spec, scene.spec.bodies[0], mesh, 0), by_loop)
    # strict = false: the elements whose centre is in the box (SOFA's BoxROI default is strict)
    loose = scene_with(SCENES / "finger.toml", lambda d: stack(d, box=TIP_HALF, strict=False, youngModulus=1.0,
                                                               poissonRatio=0.3))
    by_centre = [e for e, tet in enumerate(mesh.tets)
                 if np.all(mesh.points[tet].mean(axis=0) >= lo) and np.all(mesh.points[tet].mean(axis=0) <= hi)]
    np.testing.assert_array_equal(stacked_elements(loose.spec, loose.spec.bodies[0], mesh, 0), by_centre)
    assert len(by_centre) > len(by_loop)
    # a stack given by element ids is the same field
    by_ids = scene_with(SCENES / "finger.toml", lambda d: stack(d, tetrahedra=by_loop, youngModulus=1.0,
                                                                poissonRatio=0.3))
    _, young_box, nu_box = element_materials(scene.spec, scene.spec.bodies[0], mesh)
    _, young_ids, nu_ids = element_materials(by_ids.spec, by_ids.spec.bodies[0], mesh)
    np.testing.assert_allclose(young_box, young_ids, rtol=1e-15)
    np.testing.assert_allclose(nu_box, nu_ids, rtol=1e-15)


@pytest.mark.parametrize("rotation", ["polarF", "large"])
def test_the_exact_tangent_with_a_partial_stack_matches_finite_differences(rotation):
    def edit(data):
        data["body"][0]["material"]["rotation_method"] = rotation
        stack(data, box=TIP_HALF, youngModulus=1500.0, poissonRatio=0.3)

    scene = scene_with(SCENES / "finger.toml", edit)
    elasticity = scene.elasticities[0]
    assert elasticity.corotational_tangent == "exact"
    mesh = scene.meshes[0]
    rng = np.random.default_rng(7)
    x = mesh.points + rng.normal(scale=0.5, size=mesh.points.shape)
    K = elasticity.tangent(x).toarray()
    h = 1e-5
    columns = rng.choice(3 * mesh.n_points, size=12, replace=False)
    for column in columns:
        step = np.zeros(3 * mesh.n_points)
        step[column] = h
        plus = elasticity.forces((x.reshape(-1) + step).reshape(-1, 3)).reshape(-1)
        minus = elasticity.forces((x.reshape(-1) - step).reshape(-1, 3)).reshape(-1)
        fd = -(plus - minus) / (2 * h)
        assert np.max(np.abs(K[:, column] - fd)) <= 1e-6 * max(1.0, np.max(np.abs(fd)))


def test_the_equilibrium_converges_quadratically_with_a_stack():
    """The constrained equilibrium (exact corotational tangent) takes as few steps with a stacked field as
    without: the tangent it factorizes is the stacked forces' Jacobian."""
    reports = {}
    for label, edit in (("plain", lambda d: None),
                        ("stacked", lambda d: stack(d, box=TIP_HALF, youngModulus=1500.0, poissonRatio=0.3))):
        scene = scene_with(SCENES / "finger.toml", edit)
        scene.step()
        scene.set("body.finger.cable.cable.value", 8.0)
        report = scene.step()
        assert report.converged, (label, report.message)
        assert scene.outputs()["cable.displacement"] == pytest.approx(8.0, abs=1e-6)
        reports[label] = report
    steps = {label: report.equilibrium.steps for label, report in reports.items()}
    assert steps["stacked"] <= steps["plain"] + 2, steps


def test_a_stack_edited_live_changes_the_field_without_a_rebuild():
    scene = scene_with(SCENES / "beam.toml", lambda d: stack(d, box=EVERYWHERE, youngModulus=600.0,
                                                               poissonRatio=0.3))
    elasticity = scene.elasticities[0]
    scene.step()
    half = scene.outputs()["tip.y"]
    scene.set("body.beam.material.stacked[0].youngModulus", 1200.0)  # 1 + 2 = 3 times the body
    assert scene.elasticities[0] is elasticity
    scene.step()
    assert (scene.outputs()["tip.y"] - 5.0) / (half - 5.0) == pytest.approx(2.0 / 3.0, rel=1e-9)


def test_stacks_that_cannot_add_are_refused_naming_the_key():
    def with_model(body_model, **extra):
        def edit(data):
            stack(data, box=TIP_HALF, youngModulus=1.0, poissonRatio=0.3, **extra)
            data["body"][0]["material"]["model"] = body_model
        return edit

    for edit, key in ((with_model("corotational", model="linear"), "stacked[0].model"),
                      (with_model("corotational", rotation_method="polarF"), "stacked[0].rotation_method"),
                      (with_model("stable_neohookean"), "stacked[0]:"),
                      (lambda d: stack(d, tetrahedra=[10**6], youngModulus=1.0, poissonRatio=0.3),
                       "stacked[0].tetrahedra")):
        with pytest.raises(SceneError) as caught:
            scene_with(SCENES / "finger.toml", edit)
        assert str(caught.value).startswith(f"finger.toml: body.finger.material.{key}"), str(caught.value)
    spec = load_scene(SCENES / "finger.toml")
    data = copy.deepcopy(to_data(spec))
    stack(data, youngModulus=1.0, poissonRatio=0.3)
    with pytest.raises(SceneError, match=r"body\[0\]\.material\.stacked\[0\]: one of box, tetrahedra is required"):
        parse_data(data, source=spec.source, base_dir=spec.base_dir)
