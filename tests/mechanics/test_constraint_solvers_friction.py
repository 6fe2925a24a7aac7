"""Unilateral contact with Coulomb friction (SOFA UnilateralWithFriction): stick, slide, multi-contact."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.resolutions import Blocks, complementarity_residual
from tests.mechanics.test_constraint_solvers import ITERATIVE, compliance, tight_solver

ALL = ("exact",) + ITERATIVE
W_COUPLED = np.array([[1.0, 0.1, 0.0], [0.1, 2.0, 0.2], [0.0, 0.2, 1.5]])


def solve(name, W, dfree, blocks):
    solver = make_constraint_solver("exact") if name == "exact" else tight_solver(name)
    return solver.solve(W, dfree, blocks)


@pytest.mark.parametrize("name", ALL)
def test_tangential_drive_below_mu_sticks(name):
    dfree = np.array([-1.0, 0.1, 0.0])
    f_stick = np.linalg.solve(W_COUPLED, -dfree)  # all three violations zero
    assert f_stick[0] > 0 and np.hypot(f_stick[1], f_stick[2]) < 0.5 * f_stick[0]  # inside the cone
    report = solve(name, W_COUPLED, dfree, Blocks.friction(1, mu=0.5))
    np.testing.assert_allclose(report.force, f_stick, atol=1e-9)
    np.testing.assert_allclose(report.violation, 0.0, atol=1e-9)


@pytest.mark.parametrize("name", ALL)
def test_tangential_drive_above_mu_slides_on_the_cone(name):
    # Uncoupled W = diag(1, 2, 2), dfree = (-1, 2, 0), mu = 0.5: f_n = 1 closes the gap, sticking would need
    # f_t = -1 > mu f_n, so f_t = -0.5 on the cone and the contact slips by d_t = 2 - 2 * 0.5 = 1.
    W = np.diag([1.0, 2.0, 2.0])
    report = solve(name, W, np.array([-1.0, 2.0, 0.0]), Blocks.friction(1, mu=0.5))
    np.testing.assert_allclose(report.force, [1.0, -0.5, 0.0], atol=1e-10)
    np.testing.assert_allclose(report.violation, [0.0, 1.0, 0.0], atol=1e-10)
    # Coupled W: slide with |f_t| = mu f_n, d_n = 0 and the slip opposite to the friction force
    report = solve(name, W_COUPLED, np.array([-1.0, 3.0, 1.0]), Blocks.friction(1, mu=0.3))
    f, d = report.force, report.violation
    assert f[0] > 0 and abs(d[0]) < 1e-9
    assert np.hypot(f[1], f[2]) == pytest.approx(0.3 * f[0], rel=1e-9)
    slip = d[1:] / np.linalg.norm(d[1:])
    np.testing.assert_allclose(slip, -f[1:] / np.linalg.norm(f[1:]), atol=1e-8)


@pytest.mark.parametrize("name", ALL)
def test_separating_contact_has_no_force(name):
    report = solve(name, W_COUPLED, np.array([0.5, 3.0, 1.0]), Blocks.friction(1, mu=0.8))
    np.testing.assert_array_equal(report.force, 0.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_multi_contact_solvers_agree_with_reference(seed):
    W, rng = compliance(24, seed=seed)
    dfree = rng.uniform(-0.5, 0.5, 24)
    dfree[0::3] = rng.uniform(-1.0, 0.3, 8)  # normal rows: most contacts closing
    blocks = Blocks.concatenate([Blocks.friction(7, mu=rng.uniform(0.1, 0.8, 7)), Blocks.unilateral(3)])
    reference = make_constraint_solver("exact").solve(W, dfree, blocks)
    assert reference.converged and reference.error < 1e-12
    f = reference.force
    n = blocks.start[:7]
    tangential = np.hypot(f[n + 1], f[n + 2])
    assert np.all(f[n] >= 0) and np.all(tangential <= blocks.mu[:7] * f[n] * (1 + 1e-12))
    states = [
        "slide" if t > 0 and abs(t - mu * fn) < 1e-9 * fn else "stick" if fn > 0 else "open"
        for t, mu, fn in zip(tangential, blocks.mu[:7], f[n], strict=True)
    ]
    for name in ITERATIVE:
        report = tight_solver(name).solve(W, dfree, blocks)
        assert complementarity_residual(W, dfree, report.force, blocks) < 1e-8, f"{name}, contact states {states}"
        np.testing.assert_allclose(report.force, f, atol=1e-7, err_msg=name)
