"""ImprovedJacobi: spectral correction (unit-independent default vs SOFA's formula) and conjugate residue."""

import numpy as np
import pytest

from softsim.mechanics.constraint_solvers import ImprovedJacobi, scaled_spectral_radius, sofa_spectral_radius
from softsim.mechanics.resolutions import Blocks, complementarity_residual
from tests.mechanics.test_constraint_solvers import D22, W22, compliance, planted_lcp


def diverging_problem():
    """40 x 40 SPD W = J K^-1 J^T whose plain Jacobi iteration diverges: spr(D^-1 W) = 3.07 > 2."""
    W, rng = compliance(40, seed=1)
    return W, rng.standard_normal(40)


def test_spectral_radius_estimates():
    W, _ = diverging_problem()
    scaled = np.diag(1 / np.sqrt(np.diag(W))) @ W @ np.diag(1 / np.sqrt(np.diag(W)))
    assert scaled_spectral_radius(W) == pytest.approx(np.linalg.eigvalsh(scaled)[-1], rel=1e-12)
    assert scaled_spectral_radius(W) == pytest.approx(3.0718, abs=1e-4)
    assert sofa_spectral_radius(W) == pytest.approx(np.linalg.eigvalsh(W)[-1] ** 2, rel=1e-10)
    # Lanczos path (m > 200) agrees with the dense one
    big, _ = compliance(240, ndof=300, seed=2)
    dense = np.linalg.eigvalsh(big / np.sqrt(np.outer(np.diag(big), np.diag(big))))[-1]
    assert scaled_spectral_radius(big) == pytest.approx(dense, rel=1e-8)


@pytest.mark.parametrize(
    "blocks", [Blocks.equality(40), Blocks.unilateral(40)], ids=["bilateral", "unilateral"]
)
def test_spectral_correction_converges_where_plain_jacobi_diverges(blocks):
    W, dfree = diverging_problem()
    params = {"maxIterations": 5000, "tolerance": 1e-6}
    plain = ImprovedJacobi(**params).solve(W, dfree, blocks)
    assert not plain.converged and plain.error > 1e6 * plain.error_history[0]
    corrected = ImprovedJacobi(useSpectralCorrection=True, **params).solve(W, dfree, blocks)
    assert corrected.converged
    assert complementarity_residual(W, dfree, corrected.force, blocks) < 1e-5


def test_default_spectral_correction_is_unit_independent_sofa_formula_is_not():
    W, dfree = diverging_problem()
    blocks = Blocks.unilateral(40)
    params = {"maxIterations": 3000, "tolerance": 1e-6, "useSpectralCorrection": True}
    # W in other force units: W -> s W, forces -> f / s, violations unchanged.
    default = {s: ImprovedJacobi(**params).solve(s * W, dfree, blocks) for s in (1e-3, 1.0, 1e3)}
    counts = {s: r.iterations for s, r in default.items()}
    assert all(r.converged for r in default.values())
    assert len(set(counts.values())) == 1
    for s, r in default.items():
        np.testing.assert_allclose(s * r.force, default[1.0].force, rtol=1e-8, atol=1e-12)
    sofa = {
        s: ImprovedJacobi(sofaSpectralRadius=True, **params).solve(s * W, dfree, blocks) for s in (1e-3, 1e3)
    }
    # 1e-3: spr(W)^2 ~ 4e-6 so rho = min(1, 1.8/spr) = 1: plain Jacobi, diverges
    assert ImprovedJacobi(sofaSpectralRadius=True, **params).spectral_rho(1e-3 * W) == 1.0
    assert not sofa[1e-3].converged
    # 1e3: rho = 1.8 / 3.7e6 ~ 5e-7: the steps vanish, the error test passes on a wrong answer (stall)
    assert ImprovedJacobi(sofaSpectralRadius=True, **params).spectral_rho(1e3 * W) < 1e-6
    assert complementarity_residual(1e3 * W, dfree, sofa[1e3].force, blocks) > 0.1
    assert complementarity_residual(1e3 * W, dfree, default[1e3].force, blocks) < 1e-5


def test_conjugate_residue_cuts_iterations_on_ill_conditioned_problem():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    W = Q @ np.diag(np.logspace(0, -3, 30)) @ Q.T  # condition number 1e3
    dfree = rng.standard_normal(30)
    base = {"maxIterations": 20000, "tolerance": 1e-6, "useSpectralCorrection": True}
    counts = {"off": ImprovedJacobi(**base).solve(W, dfree, Blocks.equality(30)).iterations}
    for factor in (10.0, 1.0, 0.5, 0.25):
        report = ImprovedJacobi(useConjugateResidue=True, conjugateResidueSpeedFactor=factor, **base).solve(
            W, dfree, Blocks.equality(30)
        )
        assert report.converged
        np.testing.assert_allclose(W @ report.force, -dfree, atol=1e-4)
        counts[factor] = report.iterations
    assert counts[10.0] <= counts["off"]  # beta ~ (i/maxIt)^10 stays ~0: almost no effect
    assert counts[0.25] < 0.7 * counts["off"]


def test_jacobi_never_stops_at_first_iteration_and_parameters_apply_next_solve():
    # W22 from f = 0: Jacobi step 1 gives (0.5, 0.5); the error test is skipped at i = 0 even with a huge tol
    solver = ImprovedJacobi(tolerance=1e3)
    report = solver.solve(W22, D22, Blocks.equality(2))
    assert report.iterations == 2
    # i = 0: f = 0.5, 0.5 ; i = 1: d = (0.5, 0.5), f = 0.5 - 0.25 = 0.25 each
    np.testing.assert_allclose(report.force, [0.25, 0.25])
    solver.set_parameters(
        tolerance=1e-10, scaleTolerance=False, useSpectralCorrection=True, maxIterations=500
    )
    # spr(D^-1 W22) = 1.5: rho = 1; D^-1 W22 has eigenvalues 1.5 and 0.5 -> converges to W^-1 (1, 1) = 1/3
    report = solver.solve(W22, D22, Blocks.equality(2))
    assert report.converged and report.iterations > 2
    np.testing.assert_allclose(report.force, [1 / 3, 1 / 3], atol=1e-10)
    solver.set_parameters(spectralCorrectionFactor=0.5)
    assert solver.spectral_rho(W22) == 0.5
    # dfree = -(1, 1) excites only the eigenvector (1, 1) of D^-1 W22 (eigenvalue 1.5): the error contracts by
    # |1 - 1.5 rho| per iteration, 0.5 with rho = 1 and 0.25 with rho = 0.5: half the iterations.
    faster = solver.solve(W22, D22, Blocks.equality(2))
    assert faster.converged
    assert faster.iterations == pytest.approx(report.iterations / 2, abs=1)
    ratios = faster.error_history[2:6] / faster.error_history[1:5]
    np.testing.assert_allclose(ratios, 0.25, rtol=1e-9)


def test_jacobi_warm_start_and_allverified():
    W, dfree, f_star, _ = planted_lcp(20, 11)
    solver = ImprovedJacobi(useSpectralCorrection=True, tolerance=1e-9, allVerified=True, maxIterations=20000)
    report = solver.solve(W, dfree, Blocks.unilateral(20))
    assert report.converged
    np.testing.assert_allclose(report.force, f_star, atol=1e-7)
    warm = solver.solve(W, dfree, Blocks.unilateral(20), initial_force=f_star)
    assert warm.converged and warm.iterations == 1  # already verified after the first step
