"""Display frames carry only the fields asked for; a missing field is computed later at the frame's positions."""

import numpy as np
import pytest

from softsim.app.frames import FIELDS, complete_frame, has_field, make_display_frame
from softsim.app.resources import default_scene
from softsim.mechanics.scene_runtime import Scene
from tests.call_counts import count_calls


@pytest.fixture(scope="module")
def pulled_finger():
    """The finger with its cable pulled by 5 mm, 3 frames run."""
    scene = Scene.load(default_scene())
    scene.set("body.finger.cable.cable.value", 5.0)
    scene.run(3)
    return scene


@pytest.fixture
def calls(pulled_finger, monkeypatch):
    """Counts of the per-element field passes of the finger's elasticity (counted on the instance)."""
    return count_calls(monkeypatch, pulled_finger.simulation.problem.elasticity,
                       ("von_mises", "strain_energy_density"))


def _expected_fields(scene, x):
    """von Mises (m,), its nodal average (n,) and the nodal energy density (n,) at ``x``, computed directly."""
    simulation = scene.simulation
    elasticity = simulation.problem.elasticity
    von_mises = np.nan_to_num(elasticity.von_mises(x))
    density = np.nan_to_num(elasticity.strain_energy_density(x))
    return von_mises, simulation.nodal_average(von_mises), simulation.nodal_average(density)


def test_a_displacement_frame_computes_no_stress_and_no_energy(pulled_finger, calls):
    frame = make_display_frame(pulled_finger, None, fields=("displacement",))
    assert calls == {"von_mises": 0, "strain_energy_density": 0}
    assert [has_field(frame, name) for name in FIELDS] == [True, False, False]
    assert frame.von_mises.shape == frame.von_mises_nodal.shape == frame.energy_density_nodal.shape == (0,)
    assert frame.cable_paths["cable"].shape == (15, 3)  # the other display data is all there
    np.testing.assert_array_equal(frame.x, pulled_finger.simulation.x)


def test_each_field_is_computed_only_when_asked(pulled_finger, calls):
    von_mises, nodal, energy = _expected_fields(pulled_finger, pulled_finger.simulation.x)
    calls.update(von_mises=0, strain_energy_density=0)
    stress = make_display_frame(pulled_finger, None, fields=("von_mises",))
    assert calls == {"von_mises": 1, "strain_energy_density": 0}
    np.testing.assert_array_equal(stress.von_mises, von_mises)
    np.testing.assert_array_equal(stress.von_mises_nodal, nodal)
    assert not has_field(stress, "energy_density")
    density = make_display_frame(pulled_finger, None, fields=("energy_density",))
    assert calls == {"von_mises": 1, "strain_energy_density": 1}
    np.testing.assert_array_equal(density.energy_density_nodal, energy)
    assert not has_field(density, "von_mises")
    everything = make_display_frame(pulled_finger, None)  # the default: every field
    assert calls == {"von_mises": 2, "strain_energy_density": 2}
    assert all(has_field(everything, name) for name in FIELDS)
    assert float(nodal.max()) > 0.0 and float(energy.max()) > 0.0


def test_complete_frame_computes_the_missing_fields_at_the_frame_positions(pulled_finger, calls):
    shown = make_display_frame(pulled_finger, None, fields=("displacement",))
    von_mises, nodal, energy = _expected_fields(pulled_finger, shown.x)
    calls.update(von_mises=0, strain_energy_density=0)
    simulation = pulled_finger.simulation
    simulation.x = simulation.X + 0.5 * (shown.x - simulation.X)  # the scene moved on since the frame was made
    try:
        completed = complete_frame(pulled_finger, shown)
    finally:
        simulation.x = shown.x.copy()
    assert calls == {"von_mises": 1, "strain_energy_density": 1}
    np.testing.assert_array_equal(completed.von_mises, von_mises)
    np.testing.assert_array_equal(completed.von_mises_nodal, nodal)
    np.testing.assert_array_equal(completed.energy_density_nodal, energy)
    assert completed.x is shown.x and completed.cable_paths is shown.cable_paths and completed.index == shown.index
    assert complete_frame(pulled_finger, completed) is completed  # nothing missing: nothing computed
    assert calls == {"von_mises": 1, "strain_energy_density": 1}
    only_stress = complete_frame(pulled_finger, shown, ("von_mises",))
    assert has_field(only_stress, "von_mises") and not has_field(only_stress, "energy_density")


def test_every_obstacle_type_of_the_scene_format_is_drawn():
    from softsim.app.viewport import OBSTACLE_SURFACES
    from softsim.mechanics.constraints import OBSTACLE_CLASSES
    from softsim.mechanics.scene.schema import OBSTACLE_TYPES

    assert set(OBSTACLE_SURFACES) == set(OBSTACLE_CLASSES) == set(OBSTACLE_TYPES)
