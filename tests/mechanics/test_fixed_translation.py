"""``body.fixed.translation``: the fixed nodes held at rest + translation (the gripper's arrow keys), set in the file
or live."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from softsim.mechanics.scene import load_scene, parse_data, to_data
from softsim.mechanics.scene_runtime import Scene

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "resources" / "scenes"


def scene_from(path: Path, edit=lambda data: None) -> Scene:
    spec = load_scene(path)
    data = to_data(spec)
    edit(data)
    return Scene(parse_data(data, source=spec.source, base_dir=spec.base_dir))


def test_a_translated_clamp_moves_the_loaded_linear_beam_rigidly():
    """Linear elasticity is invariant under a translation: the loaded beam with its clamp moved by t is the
    unmoved solution plus t, at every node."""
    plain = scene_from(SCENES / "beam.toml")
    plain.step()
    shift = np.array([1.5, -2.0, 0.5])

    def moved(data):
        data["body"][0]["fixed"][0]["translation"] = shift.tolist()

    scene = scene_from(SCENES / "beam.toml", moved)
    assert scene.step().converged
    np.testing.assert_allclose(scene.positions, plain.positions + shift, atol=1e-8)
    assert scene.outputs()["tip.y"] == pytest.approx(plain.outputs()["tip.y"] - 2.0, abs=1e-8)


def test_a_live_translation_moves_the_fixed_nodes_without_a_rebuild_and_survives_a_reset():
    scene = Scene.load(SCENES / "finger.toml")
    scene.step()
    simulation, elasticity = scene.simulation, scene.elasticities[0]
    fixed = scene.model.fixed_nodes
    rest = scene.model.rest_positions
    for lift in (1.0, 2.0, 3.0):  # 1 mm a frame, as arrow keys move it
        scene.set("body.finger.fixed[0].translation", [0.0, lift, 0.0])
        assert scene.simulation is simulation and scene.elasticities[0] is elasticity
        report = scene.step()
        assert report.converged, report.message
    np.testing.assert_allclose(scene.positions[fixed], rest[fixed] + [0.0, 3.0, 0.0], atol=1e-12)
    tip_moved = scene.outputs()["tip.y"]
    scene.reset()
    np.testing.assert_allclose(scene.positions[fixed], rest[fixed] + [0.0, 3.0, 0.0], atol=1e-12)
    scene.step()
    assert scene.outputs()["tip.y"] == pytest.approx(tip_moved, abs=1e-6)
    for lift in (2.0, 1.0, 0.0):
        scene.set("body.finger.fixed[0].translation", [0.0, lift, 0.0])
        assert scene.step().converged
    np.testing.assert_allclose(scene.positions[fixed], rest[fixed], atol=1e-12)


def test_dynamic_mode_holds_the_fixed_nodes_at_their_translated_rest():
    def dynamic(data):
        data["scene"]["mode"] = "dynamic"
        data["body"][0]["fixed"][0]["translation"] = [0.0, 0.0, 2.0]

    scene = scene_from(SCENES / "finger.toml", dynamic)
    fixed = scene.model.fixed_nodes
    for _ in range(5):
        assert scene.step().ok
    np.testing.assert_allclose(scene.positions[fixed], scene.model.rest_positions[fixed] + [0.0, 0.0, 2.0],
                               atol=1e-12)
    # the free nodes follow the clamp: the tip starts to come along (z grows from its rest 7.5)
    assert scene.outputs()["tip.z"] > 7.5
