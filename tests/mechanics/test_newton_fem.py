"""Static Newton solver on TetElasticity: cantilever beam vs Euler-Bernoulli, hyperelastic convergence,
and a large-deformation neo-Hookean beam against an independent scikit-fem computation."""


import numpy as np
import pytest

from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.linear_solvers import DirectSolver
from softsim.mechanics.loads import Gravity, NodalForce, lumped_masses
from softsim.mechanics.newton import StaticNewtonSolver
from softsim.mechanics.static_problem import StaticProblem
from softsim.meshes.generate import hex_grid_tets


def box_mesh(cells, size):
    """Structured box of ``cells = (nx, ny, nz)`` hexahedra, each split into 6 Kuhn tets (meshes.generate)."""
    return hex_grid_tets(*(np.linspace(0.0, length, count + 1) for length, count in zip(size, cells, strict=True)))


def beam_problem(cells, length, height, model, young, poisson, tip_force):
    X, tets = box_mesh(cells, (length, height, height))
    elasticity = TetElasticity(X, tets, model=model, young=young, poisson=poisson)
    fixed = np.flatnonzero(X[:, 0] == 0.0)
    tip = np.flatnonzero(np.isclose(X[:, 0], length))
    problem = StaticProblem(elasticity, fixed_nodes=fixed, loads=[NodalForce(tip, tip_force)])
    return X, tets, tip, fixed, problem


def test_box_mesh_is_valid():
    X, tets = box_mesh((3, 2, 1), (3.0, 2.0, 1.0))
    volumes = np.linalg.det(X[tets[:, 1:]] - X[tets[:, :1]]) / 6
    assert tets.shape == (36, 4) and np.all(volumes > 0) and volumes.sum() == pytest.approx(6.0, rel=1e-14)
    # conforming: every interior triangle is shared by exactly two tets, boundary area = box area
    faces = np.sort(tets[:, [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]].reshape(-1, 3), axis=1)
    unique, counts = np.unique(faces, axis=0, return_counts=True)
    boundary = unique[counts == 1]
    area = 0.5 * np.linalg.norm(np.cross(X[boundary[:, 1]] - X[boundary[:, 0]],
                                         X[boundary[:, 2]] - X[boundary[:, 0]]), axis=1).sum()  # fmt: skip
    assert counts.max() == 2 and area == pytest.approx(2 * (6 + 3 + 2), rel=1e-14)


def test_cantilever_tip_deflection_converges_to_euler_bernoulli():
    young, length, height, force = 1000.0, 10.0, 1.0, 0.01
    reference = force * length**3 / (3 * young * height**4 / 12)
    errors = []
    for n in (1, 2, 4, 8):
        X, _, tip, _, problem = beam_problem((10 * n, n, n), length, height, "linear", young, 0.0,
                                             (0.0, 0.0, -force))  # fmt: skip
        report = StaticNewtonSolver(newton_iterations=2).solve(problem, X)
        assert report.converged and report.iterations == 1  # linear model: one Newton step is exact
        deflection = -(report.x - X)[tip, 2].mean()
        errors.append(abs(deflection - reference) / reference)
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.diff(errors) < 0)
    assert errors[-1] < 0.05
    assert rates[-1] > 1.5  # P1 tets: displacement error O(h^2) once out of the locking regime


def test_neohookean_newton_converges_quadratically():
    X, _, tip, _, problem = beam_problem((20, 2, 2), 10.0, 1.0, "neohookean", 1000.0, 0.3, (0.0, 0.0, -0.3))
    solver = StaticNewtonSolver(newton_iterations=15, residual_tolerance_threshold=1e-10,
                                correction_tolerance_threshold=0)  # fmt: skip
    report = solver.solve(problem, X)
    relative = report.relative_residuals
    above_round_off = relative[1:] > 1e-9  # the round-off floor of |R|/|R0| is ~5e-11 here
    ratios = (relative[1:] / relative[:-1] ** 2)[above_round_off]
    assert report.converged and report.reason == "residual below threshold" and report.iterations <= 6
    assert relative[-1] < 1e-10
    assert np.all(ratios < 1.0)
    assert relative[3] < 1e-5  # 0.44 -> 5e-3 -> 6e-7: the digits double per iteration
    # (Pardiso's one symbolic analysis per solve: test_linear_solvers.py, run where pypardiso is installed)


def test_corotational_and_stvk_converge_with_gravity():
    X, tets = box_mesh((12, 2, 2), (6.0, 1.0, 1.0))
    masses = lumped_masses(X, tets, 1.0)
    fixed = np.flatnonzero(X[:, 0] == 0.0)
    sags = {}
    for model in ("stvk", "corotational"):
        elasticity = TetElasticity(X, tets, model=model, young=30000.0, poisson=0.3)
        problem = StaticProblem(elasticity, fixed_nodes=fixed, loads=[Gravity(masses, (0.0, 0.0, -9.81))])
        report = StaticNewtonSolver(newton_iterations=30).solve(problem, X)
        assert report.converged and report.relative_residuals[-1] < 1e-8
        assert np.all(report.x[fixed] == X[fixed])
        sags[model] = -(report.x - X)[np.isclose(X[:, 0], 6.0), 2].mean()
    # 10 % of the length: both rotation-invariant models agree to a few percent at this strain
    assert 0.3 < sags["stvk"] < 0.7
    assert abs(sags["stvk"] - sags["corotational"]) < 0.03 * sags["stvk"]


def skfem_neohookean_solution(X, tets, fixed, tip, young, poisson, tip_force, load_steps):
    """Independent P1 neo-Hookean solve (Caribou's ln J energy) with scikit-fem forms and Newton."""
    from skfem import (
        Basis,
        BilinearForm,
        ElementTetP1,
        ElementVector,
        LinearForm,
        MeshTet,
        asm,
        condense,
        solve,
    )
    from skfem.helpers import ddot, det, grad, identity, inv, transpose

    mu = young / (2 * (1 + poisson))
    lam = young * poisson / ((1 + poisson) * (1 - 2 * poisson))

    def kinematics(displacement_gradient):
        F = identity(displacement_gradient) + displacement_gradient
        inverse_transpose = transpose(inv(F))
        return F, inverse_transpose, np.log(det(F))

    def matmul(A, B):
        return np.einsum("ij...,jk...->ik...", A, B)

    @LinearForm
    def internal_work(v, w):
        F, FinvT, log_j = kinematics(grad(w["u"]))
        return ddot(mu * (F - FinvT) + lam * log_j * FinvT, grad(v))

    @BilinearForm
    def tangent(du, v, w):
        F, FinvT, log_j = kinematics(grad(w["u"]))
        G = grad(du)
        dP = (
            mu * G
            + (mu - lam * log_j) * matmul(matmul(FinvT, transpose(G)), FinvT)
            + lam * ddot(FinvT, G) * FinvT
        )
        return ddot(dP, grad(v))

    mesh = MeshTet(np.ascontiguousarray(X.T), np.ascontiguousarray(tets.T))
    basis = Basis(mesh, ElementVector(ElementTetP1()), intorder=1)
    dofs = basis.nodal_dofs  # (3, n): dof of component k at node i
    f_ext = np.zeros(basis.N)
    for k in range(3):
        f_ext[dofs[k, tip]] = tip_force[k] / tip.size
    dirichlet = dofs[:, fixed].ravel()
    u = basis.zeros()
    for step in range(1, load_steps + 1):
        for _ in range(30):
            field = basis.interpolate(u)
            residual = step / load_steps * f_ext - asm(internal_work, basis, u=field)
            du = solve(*condense(asm(tangent, basis, u=field), residual, D=dirichlet))
            u += du
            if np.linalg.norm(du) < 1e-13 * max(np.linalg.norm(u), 1.0):
                break
    return np.stack([u[dofs[k]] for k in range(3)], axis=1)


def test_large_deformation_neohookean_beam_matches_scikit_fem():
    young, poisson, force = 1000.0, 0.3, (0.0, 0.0, -1.0)
    X, tets, tip, fixed, problem = beam_problem((10, 2, 2), 10.0, 1.0, "neohookean", young, poisson, force)
    solver = StaticNewtonSolver(newton_iterations=30, load_steps=4, residual_tolerance_threshold=1e-11,
                                correction_tolerance_threshold=0, linear_solver=DirectSolver())  # fmt: skip
    report = solver.solve(problem, X)
    ours = report.x - X
    theirs = skfem_neohookean_solution(X, tets, fixed, tip, young, poisson, force, load_steps=4)
    difference = np.abs(ours - theirs).max() / np.abs(theirs).max()
    tip_displacement = ours[tip].mean(axis=0)
    assert report.converged
    # large rotation: the tip drops by 14 % of the length and moves back towards the clamp
    assert -tip_displacement[2] > 1.0 and -tip_displacement[0] > 0.05
    assert difference < 1e-6


def test_step_safeguard_solves_a_neohookean_cantilever_at_74_percent_deflection_in_one_or_four_load_steps():
    X, _, tip, _, problem = beam_problem((10, 2, 2), 10.0, 1.0, "neohookean", 1000.0, 0.45, (0.0, 0.0, -15.0))
    reference = StaticNewtonSolver(load_steps=12, backtrack_invalid_steps=False).solve(problem, X)
    deflection = -(reference.x - X)[tip, 2].mean() / 10.0
    assert reference.converged and abs(deflection - 0.74) < 0.005
    scale = np.abs(reference.x - X).max()
    for load_steps, newton_iterations in ((1, 30), (4, 10)):
        # Caribou's plain Newton: the second full step from rest inverts elements, the energy is NaN there
        plain = StaticNewtonSolver(load_steps=load_steps, newton_iterations=newton_iterations,
                                   backtrack_invalid_steps=False).solve(problem, X)
        assert plain.diverged and plain.reason == "NaN in residual" and np.array_equal(plain.x, X)
        guarded = StaticNewtonSolver(load_steps=load_steps, newton_iterations=newton_iterations).solve(problem, X)
        difference = np.abs(guarded.x - reference.x).max() / scale
        assert guarded.converged and guarded.backtracks
        assert difference < 1e-8
