"""The scalar-actuator base shared by cables and cavities: clipping, range checks, inverse limits and the
``limited`` output, each worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.constraints import CableConstraint, SurfacePressureConstraint
from softsim.mechanics.constraints.cable import cable_is_slack
from softsim.mechanics.constraints.scalar_actuator import clip_target
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import BOUNDED, FORCE
from tests.mechanics.test_constraint_models import inner_cube_cavity
from tests.mechanics.test_mapping import box_mesh


def _cable(**parameters):
    X, tets = box_mesh((2, 2, 2), size=(4.0, 4.0, 4.0))
    return X, CableConstraint(X, tets, indices=[13, 4], pullPoint=[2.0, 2.0, 10.0], **parameters)


@pytest.mark.parametrize(("args", "expected"), [
    ((10.0, 2.0, 3.0, None, None), 5.0),   # the rate limit: 2 + 3
    ((10.0, 2.0, 3.0, None, 4.0), 4.0),    # then the upper bound
    ((-10.0, 0.0, None, -2.0, 5.0), -2.0),  # no rate limit, the lower bound
    ((-1.0, 0.0, 0.25, -2.0, 5.0), -0.25),  # the rate limit downwards
    ((1.5, 0.0, None, None, None), 1.5),   # no limit at all
])
def test_clip_target(args, expected):
    assert clip_target(*args) == expected


def test_cable_negative_displacement_bound_is_a_magnitude():
    X, cable = _cable(value=-10.0, maxNegativeDisp=3.0, maxPositiveDisp=4.0)
    assert cable.bounds(cable.MOTION) == (-3.0, 4.0, None)
    assert cable.blocks(X).target[0] == -3.0
    cable.set_parameters(valueType="force", value=1.0)
    blocks = cable.blocks(X)
    assert (blocks.lo[0], blocks.hi[0]) == (-3.0, 4.0)


def test_range_errors_name_both_keys():
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles)
    with pytest.raises(ParameterError, match="minVolumeGrowth=2.0 must not exceed maxVolumeGrowth=1.0"):
        cavity.set_parameters(minVolumeGrowth=2.0, maxVolumeGrowth=1.0)
    assert (cavity.minVolumeGrowth, cavity.maxVolumeGrowth) == (None, None)


def test_cable_inverse_limits_from_a_start_state():
    _X, cable = _cable(minForce=0.0, maxForce=10.0, maxNegativeDisp=2.0, maxPositiveDisp=5.0, maxDispVariation=1.0)
    limits = cable.inverse_limits(0.5, 3.0)
    # tension [0, 10] (no rate limit); displacement [-2, 5] intersected with 0.5 +- 1
    assert (limits.force_lo, limits.force_hi, limits.delta_lo, limits.delta_hi) == (0.0, 10.0, -0.5, 1.5)
    assert limits.names == ("minForce", "maxForce", "maxDispVariation", "maxDispVariation")
    # a start beyond the range is brought into it first: 6 -> 5, then 5 - 1 = 4 and the bound 5
    limits = cable.inverse_limits(6.0, 3.0)
    assert (limits.delta_lo, limits.delta_hi) == (4.0, 5.0)
    assert limits.names[2:] == ("maxDispVariation", "maxPositiveDisp")
    _X, free = _cable()
    limits = free.inverse_limits(0.5, 3.0)
    assert (limits.force_lo, limits.force_hi, limits.delta_lo, limits.delta_hi) == (-np.inf, np.inf, -np.inf, np.inf)
    assert limits.names == ("", "", "", "")


def test_cavity_inverse_limits_use_both_rate_limits():
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles, minPressure=0.0, maxPressure=4.0,
                                       maxPressureVariation=0.5, maxVolumeGrowth=2.0, maxVolumeGrowthVariation=0.1)
    limits = cavity.inverse_limits(1.0, 3.8)
    # pressure [0, 4] within 3.8 +- 0.5: [3.3, 4]; growth (-inf, 2] within 1 +- 0.1: [0.9, 1.1]
    assert limits.force_lo == pytest.approx(3.3) and limits.force_hi == 4.0
    assert (limits.delta_lo, limits.delta_hi) == pytest.approx((0.9, 1.1))
    assert limits.names == ("maxPressureVariation", "maxPressure", "maxVolumeGrowthVariation",
                            "maxVolumeGrowthVariation")


def test_cavity_pressure_mode_rate_limit_starts_from_the_stored_pressure():
    X, tets, triangles = inner_cube_cavity()
    cavity = SurfacePressureConstraint(X, tets, triangles=triangles, value=2.0, maxPressureVariation=0.5,
                                       minVolumeGrowth=-1.0, maxVolumeGrowth=3.0)
    blocks = cavity.blocks(X)
    assert blocks.kind.tolist() == [FORCE]
    assert (blocks.target[0], blocks.lo[0], blocks.hi[0]) == (0.5, -1.0, 3.0)
    assert cavity.imposed == 0.5
    cavity.store(np.array([0.5]), X)
    assert cavity.blocks(X).target[0] == 1.0
    assert cavity.inverse_state == (0.0, 0.5)


def test_limited_follows_the_clipping_and_the_bounds():
    X, cable = _cable(value=3.0, maxDispVariation=1.0)
    assert cable.blocks(X).kind.tolist() == [BOUNDED]
    assert cable.imposed == pytest.approx(1.0)
    assert cable.limited == 1.0  # the rate limit moved the target from 3 to 1
    cable.set_parameters(maxDispVariation=None)
    cable.blocks(X)
    x_new = X.copy()
    x_new[13, 2] += 1.0  # segments 8 -> 7 and 2 -> sqrt(5): short of 3
    cable.store(np.array([7.0]), x_new)
    assert cable.displacement == pytest.approx(3.0 - np.sqrt(5.0))
    assert cable.limited == 0.0  # short, but the tension 7 is on no bound
    cable.set_parameters(maxForce=7.0)
    assert cable.limited == 1.0  # the tension sits on maxForce
    cable.inverse_target, cable.inverse_bound = 1.0, ""
    assert cable.limited == 0.0  # inverse mode: only the bound the inverse solver found counts
    cable.inverse_bound = "maxForce"
    assert cable.limited == 1.0


def test_a_cable_is_slack_past_its_value_with_its_force_on_its_lower_bound():
    """cable_is_slack (the cable's own slack and the window's health check ask it): the body shortened the cable
    0.764 mm where 0.2 was asked, its force on its lower bound (0, or minForce 5 mN): slack. Not slack: pulling
    (force 0.5 above the bound), short of its value (0.764 of 1 mm), or past its value by round-off only (1e-9
    of it: the solver's accuracy, not a slack cable)."""
    shortened = 3.0 - np.sqrt(5.0)
    assert cable_is_slack(shortened, 0.2, 0.0, None)
    assert cable_is_slack(shortened, 0.2, 5.0, 5.0)
    assert not cable_is_slack(shortened, 0.2, 0.5, None)
    assert not cable_is_slack(shortened, 1.0, 0.0, None)
    assert not cable_is_slack(0.2 * (1.0 + 1e-9), 0.2, 0.0, None)


def test_a_slack_cable_is_not_limited():
    """Told to shorten 0.2 mm while the body shortens its path by 3 - sqrt(5) = 0.764 mm, the cable is slack at
    force 0 (its lower bound): not limited, although its rate limit moved its target (0.764 - 0.5 = 0.264, not
    0.2). Told 1 mm in the same state it is short of its value with the force on that bound, which holds it:
    limited. A cable that pulls (force above its bound) is not slack."""
    X, cable = _cable(value=0.2, maxDispVariation=0.5, minForce=0.0)
    cable.blocks(X)
    x_new = X.copy()
    x_new[13, 2] += 1.0  # segments 8 -> 7 and 2 -> sqrt(5): shortened by 3 - sqrt(5) = 0.764
    cable.store(np.array([0.0]), x_new)
    cable.blocks(x_new)  # the rate-limited target from 0.764: clip(0.2, 0.264, 1.264) = 0.264, not the value
    assert cable.imposed == pytest.approx(3.0 - np.sqrt(5.0) - 0.5)
    assert cable.slack and cable.limited == 0.0 and cable.outputs["limited"] == 0.0
    cable.set_parameters(value=1.0)  # now the cable is short of its value: not slack
    assert not cable.slack
    cable.store(np.array([0.0]), x_new)
    assert cable.limited == 1.0  # short of 1 mm with the force on its lower bound 0: that bound holds it
    cable.set_parameters(value=0.2)
    cable.store(np.array([0.5]), x_new)  # a pulling cable (force above its bound) is not slack
    assert not cable.slack
