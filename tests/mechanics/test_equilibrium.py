"""The constrained equilibrium (mechanics.equilibrium, mechanics.indefinite_projection): automatic increments
along the homotopy from the last state, the active-set projection for an indefinite exact tangent, and the
shipped finger, as shipped (SOFA's ``large`` rotation), reaching every slider value in one frame."""

import numpy as np
import pytest

from softsim.mechanics import Scene, equilibrium
from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.constraint_system import ConstraintSystem
from softsim.mechanics.equilibrium import QUADRATIC_MAX_BEND, Homotopy, Secant, State, quadratic_prediction
from softsim.mechanics.indefinite_projection import equality_like_rows, solve_indefinite
from softsim.mechanics.resolutions import Blocks, row_residuals

FINGER = "resources/scenes/finger.toml"
CABLE = "body.finger.cable.cable.value"


def _blocks(*rows):
    """Blocks of single bounded rows ("bounded", target, lo, hi)."""
    return Blocks.concatenate([Blocks.bounded(1, target=row[1], lo=row[2], hi=row[3]) for row in rows])


# ------------------------------------------------------------------ the active-set projection
def test_a_negative_actuator_diagonal_is_solved_exactly_with_the_contact_on_its_schur_complement():
    """Row 0: a cable with W_00 < 0 (an indefinite exact tangent), force bounds [0, inf), target 2; row 1: a
    contact (BOUNDED(0, [0, inf))) that penetrates without force. Both are active at the answer, which is the
    dense solution of W f = target - dfree: f = (2.2222, 0.5556)."""
    W = np.array([[-0.5, 0.2], [0.2, 1.0]])
    dfree = np.array([3.0, -1.0])
    blocks = _blocks(("bounded", 2.0, 0.0, np.inf), ("bounded", 0.0, 0.0, np.inf))
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-14)
    report = solve_indefinite(solver, W, dfree, blocks, np.array([0]))
    expected = np.linalg.solve(W, np.array([2.0, 0.0]) - dfree)
    np.testing.assert_allclose(expected, [20.0 / 9.0, 5.0 / 9.0], rtol=1e-12)
    np.testing.assert_allclose(report.force, expected, rtol=1e-10)
    assert report.converged


def test_contacts_the_scene_solver_cannot_solve_on_the_schur_complement_are_solved_directly():
    """A cable row (W_00 < 0, target 2) and 6 contact rows whose Schur complement the scene's Gauss-Seidel does
    not solve (here: 2 sweeps allowed; on finger_block it diverged to NaN on an indefinite complement): frictionless
    rows go to the primal-dual active set, friction blocks to semi-smooth Newton. Both answers match an
    independent solve of the same problem (BlockPivoting, resp. Gauss-Seidel with 20000 sweeps) to 1e-8, and
    the report says converged."""
    rng = np.random.default_rng(4)
    B = rng.standard_normal((7, 7))
    W = B @ B.T + 0.1 * np.eye(7)
    W[0, 0] = -0.5
    dfree = rng.standard_normal(7)
    weak = make_constraint_solver("BlockGaussSeidel", maxIterations=2, tolerance=1e-12)
    cable = Blocks.bounded(1, target=2.0, lo=-np.inf, hi=np.inf)  # no force bound: the row is an equality
    frictionless = Blocks.concatenate([cable, Blocks.bounded(6, target=0.0, lo=0.0, hi=np.inf)])
    with_friction = Blocks.concatenate([cable, Blocks.friction(2, mu=0.4)])
    references = (make_constraint_solver("BlockPivoting"),
                  make_constraint_solver("BlockGaussSeidel", maxIterations=20000, tolerance=1e-14))
    contacts = (Blocks.bounded(6, target=0.0, lo=0.0, hi=np.inf), Blocks.friction(2, mu=0.4))
    # the reference: the cable's row eliminated by hand, the contacts' complement solved independently
    W_r = W[1:, 1:] - np.outer(W[1:, 0], W[0, 1:]) / W[0, 0]
    q_r = dfree[1:] + W[1:, 0] * (2.0 - dfree[0]) / W[0, 0]
    for blocks, contact_blocks, reference in zip((frictionless, with_friction), contacts, references):
        assert not weak.solve(W_r, q_r, contact_blocks).converged  # the scene's solver alone fails here
        report = solve_indefinite(weak, W, dfree, blocks, np.array([0]))
        assert report.converged
        expected = reference.solve(W_r, q_r, contact_blocks)
        assert expected.converged
        np.testing.assert_allclose(report.force[1:], expected.force, atol=1e-8)
        assert report.force[0] == pytest.approx((2.0 - dfree[0] - W[0, 1:] @ expected.force) / W[0, 0], abs=1e-8)


def test_friction_rows_whose_schur_complement_has_a_non_positive_diagonal_are_solved_by_semi_smooth_newton():
    """Two friction contacts A (rows 0-2) and B (rows 3-5) on the Schur complement of an exact tangent: A's normal
    compliance is negative (-0.1), which every iterative solver refuses ("W must have a positive diagonal"; the
    equilibrium step then failed and its increment was cut). Worked by hand: A separates (f_A = 0, its gap 0.2 +
    0.5 * 0.3 = 0.35 > 0) and B presses with f_n = 0.3 (its gap -0.3 + 1.0 * 0.3 = 0) and sticks with
    f_t = -0.05 / 2 = -0.025 (inside its cone, 0.5 * 0.3); semi-smooth Newton (Alart-Curnier weights |W_ii|
    where W_ii <= 0) finds it, and every row meets its law."""
    W = np.zeros((6, 6))
    W[np.ix_([0, 3], [0, 3])] = [[-0.1, 0.5], [0.5, 1.0]]
    W[1, 1] = W[2, 2] = W[4, 4] = W[5, 5] = 2.0
    dfree = np.array([0.2, 0.0, 0.0, -0.3, 0.05, 0.0])
    blocks = Blocks.friction(2, mu=0.5)
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-10)
    with pytest.raises(ValueError, match="positive diagonal"):
        solver.solve(W, dfree, blocks)
    report = solve_indefinite(solver, W, dfree, blocks, np.zeros(0, dtype=np.int64))
    assert report.converged
    np.testing.assert_allclose(report.force, [0.0, 0.0, 0.0, 0.3, -0.025, 0.0], atol=1e-9)
    assert np.max(row_residuals(np.abs(np.diag(W)), dfree + W @ report.force, report.force, blocks)) < 1e-9


def test_an_actuator_force_out_of_its_bounds_is_held_at_the_bound():
    """One cable row with W < 0 whose equality solution needs a negative force: held at minForce = 0."""
    W = np.array([[-2.0]])
    blocks = _blocks(("bounded", 1.0, 0.0, np.inf))
    solver = make_constraint_solver("BlockGaussSeidel")
    report = solve_indefinite(solver, W, np.array([3.0]), blocks, np.array([0]))
    # as an equality: f = (1 - 3) / -2 = 1 >= 0: the cable pulls with 1
    assert report.force[0] == pytest.approx(1.0, rel=1e-14)
    report = solve_indefinite(solver, W, np.array([-1.0]), blocks, np.array([0]))
    # as an equality: f = (1 + 1) / -2 = -1 < 0: out of its bounds, the cable is slack at 0
    assert report.force[0] == 0.0


def test_a_warm_start_on_the_last_active_set_gives_the_cold_start_answer_in_fewer_passes(monkeypatch):
    """Eight cable rows (the trunk's: displacement mode, minForce 0), W positive definite but each row solved as
    an equality: the answer of a cold start (every row free first) pulls with rows 0 and 3 and holds the others
    slack at 0. Started from that answer's forces, the active set is taken from them: one pass finds the same
    forces, where the cold start needed more (counted: calls of the hold-and-release rule)."""
    import softsim.mechanics.indefinite_projection as projection
    rng = np.random.default_rng(8)
    B = rng.standard_normal((8, 8))
    W = B @ B.T + 0.5 * np.eye(8)
    targets = np.array([3.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    dfree = np.array([0.0, 4.0, 5.0, 0.0, 6.0, 3.0, 4.0, 5.0])
    blocks = Blocks.concatenate([Blocks.bounded(1, target=t, lo=0.0, hi=np.inf) for t in targets])
    solver = make_constraint_solver("BlockGaussSeidel")
    passes = []
    rule = projection.next_active_set
    monkeypatch.setattr(projection, "next_active_set", lambda *a: passes.append(1) or rule(*a))
    cold = solve_indefinite(solver, W, dfree, blocks, np.arange(8))
    cold_passes = len(passes)
    passes.clear()
    warm = solve_indefinite(solver, W, dfree, blocks, np.arange(8), cold.force)
    assert cold.converged and warm.converged
    held = cold.force == 0.0
    assert held.sum() >= 4 and not held[0] and not held[3]
    d = dfree + W @ cold.force  # an independent check of the laws: pulling rows at their targets, slack ones past
    np.testing.assert_allclose(d[~held], targets[~held], atol=1e-12)
    assert np.all(d[held] > targets[held])
    np.testing.assert_allclose(warm.force, cold.force, atol=1e-12)
    assert len(passes) == 1 < cold_passes


def test_equality_like_rows_are_the_ramped_displacement_rows():
    blocks = Blocks.concatenate([Blocks.bounded(1, target=2.0, lo=0.0, hi=np.inf), Blocks.force(1, target=3.0),
                                 Blocks.bounded(1, target=0.0, lo=0.0, hi=np.inf)])
    ramped = np.array([True, True, False])  # a cable in displacement mode, one in force mode, a contact
    np.testing.assert_array_equal(equality_like_rows(blocks, ramped), [0])


# ------------------------------------------------------------------ the homotopy
def test_the_homotopy_starts_at_the_start_state_and_ends_at_the_requested_targets():
    """At t = 0 the start state is an equilibrium of the shifted problem (no unbalanced force, every law met);
    at t = 1 nothing is shifted; in between a cable's target moves linearly from where it is to its value."""
    import scipy.sparse as sp

    class Cable:
        name, ramped = "cable", True

    class Contact:
        name, ramped = "contact", False

    cable, contact = Cable(), Contact()
    J = sp.csr_matrix(np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]))
    blocks = Blocks.concatenate([Blocks.bounded(1, target=10.0, lo=0.0, hi=np.inf),
                                 Blocks.bounded(1, target=0.0, lo=0.0, hi=np.inf)])
    check = ConstraintSystem([cable, contact], J, np.array([4.0, -0.2]), blocks, np.zeros(2),
                             [slice(0, 1), slice(1, 2)])
    force = np.array([2.0, 0.0])
    residual = np.array([1.0, -3.0, 0.5])  # R(x_0) with the new loads
    state = State(np.zeros((1, 3)), force, residual, check, 0.0, 0.0, 0.0, False)
    homotopy = Homotopy.at(state)
    r0 = residual + J.T @ force
    np.testing.assert_allclose(homotopy.r0, r0)
    assert residual + J.T @ force - homotopy.residual_shift(0.0) == pytest.approx(np.zeros(3))
    at_start = homotopy.shift(check, 0.0)
    assert at_start.dfree[0] == pytest.approx(10.0)  # the cable meets its (shifted) target at t = 0
    assert at_start.dfree[1] == -0.2  # the contact row is never shifted
    halfway = homotopy.shift(check, 0.5)
    # the law at t: d - (target + (1 - t)(d0 - target)) = 0 with d0 = 4: the target reached is 4 + t (10 - 4)
    assert check.dfree[0] - halfway.dfree[0] == pytest.approx(0.5 * (4.0 - 10.0))
    assert homotopy.shift(check, 1.0) is check
    assert homotopy.shortfall(check, 0.25) == [("cable", pytest.approx(5.5), 10.0)]


# ------------------------------------------------------------------ the shipped finger, as shipped
def test_the_shipped_finger_reaches_every_slider_value_in_one_frame():
    """The issue's sequence of single-frame jumps on the finger as shipped (SOFA's 'large' rotation, the
    default exact tangent): every frame converges at the requested cable displacement, in at most 15 equilibrium
    steps (measured 6, 10, 12, 10, 8, 10, 8 and 9; the issue's target is 10)."""
    scene = Scene.load(FINGER)
    assert scene.step().converged
    for value in (10.0, 20.0, 30.0, 40.0, 5.0, 45.0, 0.0, 25.0):
        scene.set(CABLE, value)
        report = scene.step()
        assert report.converged, f"{value} mm: {report.message}"
        assert scene.outputs()["cable.displacement"] == pytest.approx(value, abs=1e-6)
        assert report.equilibrium.reached == 1.0
        assert report.equilibrium.steps <= 15, f"{value} mm: {report.equilibrium.steps} steps"


def test_steps_far_from_the_answer_take_the_definite_tangent(monkeypatch):
    """The finger released from 45 mm to 0 in one frame. Far from the answer the exact tangent of SOFA's
    'large' rotation is indefinite and its Newton steps wander (measured 31 steps and 2 increments); once a far
    step did not cut the merit, the steps above DEFINITE_TANGENT_ABOVE of imbalance take the definite tangent,
    and the frame converges in fewer steps, in one increment. Both end at the same equilibrium (to the Newton
    tolerance)."""
    results = {}
    for switch in (equilibrium.DEFINITE_TANGENT_ABOVE, np.inf):
        monkeypatch.setattr(equilibrium, "DEFINITE_TANGENT_ABOVE", switch)
        scene = Scene.load(FINGER)
        scene.set(CABLE, 45.0)
        assert scene.step().converged
        scene.set(CABLE, 0.0)
        report = scene.step()
        assert report.converged, report.message
        results[switch] = (report.equilibrium.steps, scene.positions.copy())
    (steps, x), (exact_steps, x_exact) = results.values()
    assert steps <= 15 < exact_steps
    np.testing.assert_allclose(x, x_exact, atol=1e-6 * np.ptp(x_exact))


def test_a_full_step_that_raises_the_merit_is_taken_on_trust_and_undone_when_it_does_not_pay_off(monkeypatch):
    """The watchdog (WATCHDOG_GROWTH). SoftRobots' trunk on its own mesh, its first frame from rest (gravity
    and 1 mm of cableL0): its full Newton steps raise the merit up to 13-fold on the way (the Maratos effect),
    and halving them zig-zagged through 17 steps; taken on trust it converges in at most 10 (measured 9).
    PneunetGripper's 150 kPa in one frame: its full steps wander, the watchdog goes back and halves them (21
    steps with and without). Each frame ends at the same equilibrium either way (to the Newton tolerance)."""
    cases = (("tests/data/softrobots/trunk.toml", "body.trunk.cable.cableL0.value", 1.0, 10, True),
             ("tests/data/softrobots/pneunet_gripper.toml", "body.finger.cavity.cavity.value", 150.0, 21, False))
    trusted = equilibrium.WATCHDOG_GROWTH
    for path, key, value, most, trust_helps in cases:
        results = {}
        for growth in (trusted, 0.0):  # 0: never trusted (the halving alone)
            monkeypatch.setattr(equilibrium, "WATCHDOG_GROWTH", growth)
            scene = Scene.load(path)
            scene.set(key, value)
            report = scene.step()
            assert report.converged, (path, growth, report.message)
            results[growth] = (report.equilibrium.steps, scene.positions.copy())
        (steps, x), (halving_steps, x_halving) = results.values()
        assert steps <= most and steps <= halving_steps, (path, steps, halving_steps)
        assert (halving_steps > most) == trust_helps, (path, steps, halving_steps)
        np.testing.assert_allclose(x, x_halving, atol=1e-6 * np.ptp(x_halving))


def test_sofas_tangent_stays_an_option_and_converges_only_linearly():
    """corotationalTangent = "sofa" is SOFA's R K0 R^T: a 10 mm jump converges, with more steps than the exact
    tangent's (measured 31 against 11)."""
    steps = {}
    for tangent in ("sofa", "exact"):
        scene = Scene.load(FINGER)
        scene.set("body.finger.material.corotationalTangent", tangent)
        scene.step()
        scene.set(CABLE, 10.0)
        report = scene.step()
        assert report.converged, report.message
        steps[tangent] = report.equilibrium.steps
    assert steps["exact"] < steps["sofa"]


def test_an_unreachable_pull_ends_at_the_last_converged_sub_state_and_says_how_far_it_got():
    """60 mm is beyond what the finger takes (it stops near 54 mm): the frame ends at the last increment that
    converged, not converged, with the cable's reached and requested values in the message; the state is an
    equilibrium of that sub-step, solved to the increments' intermediate tolerance (the cable displacement
    matches what the message says)."""
    scene = Scene.load(FINGER)
    scene.step()
    scene.set(CABLE, 60.0)
    report = scene.step()
    assert report.ran and not report.ok and report.status == "not_converged"
    equilibrium = report.equilibrium
    assert 0.5 < equilibrium.reached < 1.0
    (name, reached, requested), = equilibrium.shortfall
    assert name == "cable" and requested == 60.0
    # a sub-state is solved to the intermediate tolerance: laws within 1e-4 of the body's size (0.01 mm here)
    assert scene.outputs()["cable.displacement"] == pytest.approx(reached, abs=1e-2)
    assert f"reached {100 * equilibrium.reached:.3g} % of the requested change" in report.message
    assert f"cable reached {reached:.4g} of 60" in report.message


def test_a_change_no_increment_can_take_fails_the_frame_and_keeps_the_state():
    """1e6 mm: even 1/256 of it (3.9 m) is far beyond the cable's 158 mm length. (1e4 mm is no longer such a
    change: its 1/256, 39 mm, converges, and the frame ends there, not converged, saying how far it got.)"""
    scene = Scene.load(FINGER)
    scene.step()
    before = scene.positions.copy()
    scene.set(CABLE, 1e6)
    report = scene.step()
    assert not report.ran and report.status == "diverged"
    assert "reached 0 % of the requested change" in report.message
    np.testing.assert_array_equal(scene.positions, before)


def test_an_actuator_short_of_its_value_in_an_unconverged_frame_is_not_limited():
    """``NAME.limited`` is 1 only when a bound or rate limit holds the actuator: a frame cut short by its budget
    (newton_iterations = 1: ten factorizations per frame, which the first increments of a 30 mm jump spend) leaves
    the cable short with limited 0 and status not_converged; maxForce 500 mN holds the same pull with limited 1
    and status limited."""
    scene = Scene.load(FINGER)
    scene.set("solver.newton.newton_iterations", 1)
    scene.set(CABLE, 30.0)
    report = scene.step()
    outputs = scene.outputs()
    assert report.ran and report.status == "not_converged"
    assert outputs["cable.displacement"] < 29.0 and outputs["cable.limited"] == 0.0 and report.limited == []
    held = Scene.load(FINGER)
    held.set("body.finger.cable.cable.maxForce", 500.0)
    held.set(CABLE, 30.0)
    report = held.step()
    assert report.converged and report.status == "limited" and report.limited == ["cable"]
    assert held.outputs()["cable.limited"] == 1.0 and held.outputs()["cable.force"] == pytest.approx(500.0)


@pytest.mark.parametrize("values", [(30.0,), (10.0, 15.0, 20.0, 25.0, 30.0)], ids=["jump", "ramp"])
def test_a_frame_ends_with_the_contact_set_of_its_positions(values):
    """The finger curling into the plane y = 30 (tests/data/softrobots/finger_plane.toml), in one jump and in a
    ramp: each frame converges, no node is above the plane by more than contactDistance plus the contact laws'
    residual the frame reports (Gauss-Seidel's accuracy on the contact rows, which its SOFA-style tolerance of
    1e-6 per row lets reach about 1e-5 mm here: measured 3.5e-6 to 2.2e-5 mm, 2e-7 of the finger's size),
    and no surface node near the plane lacks a contact row at the frame's final positions (the equilibrium
    steps detect the contacts their positions reach)."""
    scene = Scene.load("tests/data/softrobots/finger_plane.toml")
    contact = next(c for c in scene.simulation.constraints if hasattr(c, "missed_contacts"))
    distance = float(np.max(contact.contactDistance))
    for value in values:
        scene.set(CABLE, value)
        report = scene.step()
        assert report.converged, report.message
        assert report.equilibrium.constraint_residual <= 5e-5
        assert scene.positions[:, 1].max() <= 30.0 + distance + report.equilibrium.constraint_residual + 1e-9
        assert contact.missed_contacts(scene.positions, tolerance=1e-6) == 0


def test_a_contact_made_within_a_frame_resists_slip_from_its_touch_on():
    """finger_block with friction 0.5 between the bodies, its cable pulled 30 mm in one frame: the finger curls
    up into the block. A contact the equilibrium steps make on the way counts its slip from its touch; counted
    from the frame's start (the finger's whole travel along the block's face before it landed), its increments
    stalled at 7e-3 of the force scale with the new contacts sliding back, and the frame took 129 steps.
    Measured 22."""
    scene = Scene.load("tests/data/softrobots/finger_block.toml")
    scene.set("collision.friction", 0.5)
    scene.set(CABLE, 30.0)
    report = scene.step()
    assert report.converged, report.message
    assert report.equilibrium.steps <= 30


def test_a_slider_prediction_that_runs_into_a_surface_is_not_taken(monkeypatch):
    """The predictor extrapolates the last frames' path, which knows nothing of a contact ahead: on finger_block's
    5 mm ramp (a finger curling into a soft block) its start for 15 mm put finger nodes up to 3 mm inside the
    block, whose rows then held faces the nodes were not on. Such a prediction is not taken (the frame starts
    from the last equilibrium): no frame starts inside the block (it was the only prediction of this ramp), and
    the 15 mm frame takes 11 steps instead of 15 (the whole ramp 145 with the refusal, 127 without: the later
    frames start from other states and take other paths through the contacts)."""
    predicted, inside = [], []
    original = equilibrium._predict

    def recording(ctx, start):
        state = original(ctx, start)
        if state is not None:
            predicted.append(state)
            inside.append(any(c.missed_contacts(state.x) for c in ctx.detectors))
        return state

    monkeypatch.setattr(equilibrium, "_predict", recording)
    scene = Scene.load("tests/data/softrobots/finger_block.toml")
    steps = []
    for value in (5.0, 10.0, 15.0, 20.0, 25.0, 30.0):
        scene.set(CABLE, value)
        report = scene.step()
        assert report.converged, (value, report.message)
        steps.append(report.equilibrium.steps)
    assert not any(inside), f"{sum(inside)} of {len(predicted)} predicted starts inside the block"
    assert steps[2] <= 12, steps


def test_a_failed_increment_takes_the_rows_it_added_with_it():
    """Rows added where a failed increment's steps touched the block were found at states that were not
    equilibria; the next increment starts from the last converged sub-state with the rows that sub-state had.
    finger_block typed 34.42, 7.48 then 29.82 mm (random typing, seed 10): the third frame's failed increments
    left 77 rows at a sub-state that had 43, where no complementarity solve converged ("the constraint solver
    diverged (error nan after 1000 iterations)"), and the frame ended at 50 % of its change. Now every frame
    converges and reaches its value."""
    scene = Scene.load("tests/data/softrobots/finger_block.toml")
    for value in (34.42, 7.48, 29.82):
        scene.set(CABLE, value)
        report = scene.step()
        assert report.converged, (value, report.message)
        assert scene.outputs()["cable.displacement"] == pytest.approx(value, abs=1e-6)


def test_a_step_whose_contact_solve_diverges_takes_the_definite_tangent():
    """finger_block typed 28.12, 21.81, 25.55, 3.21, 22.71, 35.31 then 15.24 mm (random typing, seed 21): released
    from 35 mm, the finger pressed hard into the block makes the contacts' Schur complement of the exact tangent
    indefinite, and the complementarity solves of every increment diverged ("misses the constraint laws by
    44.7"), down to 1/256 of the change: the frame reached 0.39 % of it. A step whose projection fails so is now
    taken again with the definite tangent (whose W is positive definite): every frame converges and reaches its
    value."""
    scene = Scene.load("tests/data/softrobots/finger_block.toml")
    for value in (28.12, 21.81, 25.55, 3.21, 22.71, 35.31, 15.24):
        scene.set(CABLE, value)
        report = scene.step()
        assert report.converged, (value, report.message)
        assert scene.outputs()["cable.displacement"] == pytest.approx(value, abs=1e-6)


def test_a_failing_solve_with_the_contacts_detected_again_keeps_the_paths_equilibrium_within_its_budget(
        monkeypatch):
    """After steps that touched surfaces, a frame solves again with the contact set detected at its end; when
    that solve fails the frame keeps the equilibrium found along its path, so the solve may take only
    CANONICAL_BUDGET x newton_iterations factorizations (finger_block's 25 mm ramp frame once spent 342 on one
    that failed). That solve no longer fails on the suite's runs, so here it is made to fail: no state passes
    in it. finger_block 15 mm from rest (its steps touch the block): the second solve stops at its budget
    (30 factorizations, 33 with the steps under way when it ran out), and the frame ends converged where its
    path's equilibrium was."""
    from softsim.mechanics import frame_step

    solves = []
    original, passes = frame_step.equilibrate, equilibrium._passes

    def second_solve_fails(*args, **kwargs):
        second = kwargs.get("max_factorizations") is not None
        monkeypatch.setattr(equilibrium, "_passes", (lambda ctx, state, accuracy: False) if second else passes)
        result = original(*args, **kwargs)
        monkeypatch.setattr(equilibrium, "_passes", passes)
        solves.append((second, result.iterations, result.converged, result.x.copy()))
        return result

    monkeypatch.setattr(frame_step, "equilibrate", second_solve_fails)
    scene = Scene.load("tests/data/softrobots/finger_block.toml")
    scene.set(CABLE, 15.0)
    report = scene.step()
    assert report.converged, report.message
    path = [solve for solve in solves if not solve[0]][-1]
    second = [solve for solve in solves if solve[0]]
    assert second and not any(converged for _, _, converged, _ in second)
    budget = frame_step.CANONICAL_BUDGET * 10  # the scene's newton_iterations: 10
    assert all(budget <= iterations <= budget + 5 for _, iterations, _, _ in second), [s[:3] for s in second]
    np.testing.assert_array_equal(scene.positions, path[3])


def test_load_steps_is_the_least_number_of_increments():
    """``solver.newton.load_steps = 4``: a 20 mm jump of the finger's cable is solved in at least four increments
    (none larger than a quarter of the change) and ends at the same equilibrium as the jump solved in as few
    increments as the solver needs (nodes within 1e-6 mm; the finger is 80 mm long)."""
    free = Scene.load(FINGER)
    free.set(CABLE, 20.0)
    free_report = free.step()
    stepped = Scene.load(FINGER)
    stepped.set("solver.newton.load_steps", 4)
    stepped.set(CABLE, 20.0)
    report = stepped.step()
    assert free_report.converged and report.converged, report.message
    assert report.equilibrium.increments >= 4 > free_report.equilibrium.increments
    np.testing.assert_allclose(stepped.positions, free.positions, atol=1e-6)


def test_a_model_that_defines_forces_on_inverted_elements_reaches_an_equilibrium_with_some():
    """SoftRobots' Springy asked for a volume growth of 8 in one frame: with SOFA's ``large`` rotation (forces
    defined on an inverted element, as in SOFA) the frame converges at 8 with 13 small elements inverted and its
    message counts them; with the ``polar`` rotation (a reflection for det F < 0) the same request ends short
    (3.75 of 8) because every further step inverts an element."""
    from softsim.mechanics.inversion import count_new_inversions

    key, output = "body.accordion.cavity.cavity.value", "cavity.volumeGrowth"
    results = {}
    for rotation in ("large", "polar"):
        scene = Scene.load("tests/data/softrobots/springy.toml")
        scene.set("body.accordion.material.rotation_method", rotation)
        scene.set(key, 8.0)
        report = scene.step()
        body = scene.elasticities[0]
        results[rotation] = (report, scene.outputs()[output],
                             count_new_inversions(body.rest_positions, scene.positions, body.tets))
    report, reached, inverted = results["large"]
    assert report.converged and report.equilibrium.residual <= 1e-8
    assert reached == pytest.approx(8.0, abs=1e-6) and inverted > 0
    assert f"{inverted} element(s) inverted at the equilibrium" in report.message
    report, reached, inverted = results["polar"]
    assert report.ran and not report.converged and reached < 4.0 and inverted == 0
    assert "element(s) inverted" in report.message


def test_a_scene_with_nothing_to_do_converges_at_once():
    """The finger with gravity 0 and its cable at 0: the state at rest is the equilibrium. Its internal force
    there is round-off only (1.8e-10 mN: SOFA's large rotation of an undeformed element is the identity to a few
    ulps), below the force floor (64 eps E h^2 sqrt(m) = 2e-9 mN, h^3 the mean element volume, m elements); the
    frame converges in 0 steps and nothing moves (it stalled at 'reached 0 %' when that round-off was measured
    against itself)."""
    from softsim.mechanics.equilibrium import force_floor

    scene = Scene.load(FINGER)
    scene.set("scene.gravity", [0.0, 0.0, 0.0])
    scene.set(CABLE, 0.0)
    problem = scene.simulation.problem
    at_rest = float(np.linalg.norm(problem.residual(scene.simulation.x)))
    assert 0.0 < at_rest < force_floor(problem.elasticity) < 1e-8
    rest = scene.positions.copy()
    report = scene.step()
    assert report.converged and report.equilibrium.steps == 0
    np.testing.assert_array_equal(scene.positions, rest)


def test_box_rows_with_a_negative_diagonal_are_solved_by_an_active_set():
    """Single bounded rows (contacts, unilateral planes) whose W is not positive on its diagonal: the active-set
    solve meets every law. First on an SPD W (6 contacts and a bounded row), where it must agree with
    BlockPivoting (an independent exact solver) to 1e-10. Then W_00 = -0.5 with rows 0 and 1 coupled (0.4),
    dfree = (0.5, -1, 1): starting from no force, only row 1 is violated; holding it (f_1 = 1) leaves row 0 open
    by 0.9 and row 2 by 1, so f = (0, 1, 0) meets every law (by hand). A violated row whose own W_ii is negative
    cannot be met at all (pushing closes it further): the solve says it did not converge."""
    from softsim.mechanics.indefinite_projection import solve_box_active_set

    rng = np.random.default_rng(11)
    B = rng.standard_normal((7, 7))
    W = B @ B.T + 0.5 * np.eye(7)
    dfree = rng.standard_normal(7)
    lo = np.array([0.0] * 6 + [-1.0])
    hi = np.array([np.inf] * 6 + [0.3])
    blocks = Blocks(np.arange(7), np.ones(7, dtype=np.int64), np.full(7, 1), np.zeros(7), lo, hi, np.zeros(7))
    ours = solve_box_active_set(W, dfree, blocks)
    reference = make_constraint_solver("BlockPivoting").solve(W, dfree, blocks)
    assert ours.converged and reference.converged
    np.testing.assert_allclose(ours.force, reference.force, atol=1e-10)

    W = np.array([[-0.5, 0.4, 0.0], [0.4, 1.0, 0.0], [0.0, 0.0, 2.0]])
    contacts = Blocks(np.arange(3), np.ones(3, dtype=np.int64), np.full(3, 1), np.zeros(3), np.zeros(3),
                      np.full(3, np.inf), np.zeros(3))
    report = solve_box_active_set(W, np.array([0.5, -1.0, 1.0]), contacts)
    assert report.converged
    np.testing.assert_allclose(report.force, [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(report.violation, [0.9, 0.0, 1.0], atol=1e-12)
    assert not solve_box_active_set(W, np.array([-0.5, 1.0, 1.0]), contacts).converged


# ------------------------------------------------------------------ the slider predictor
def _parabola_secants(h1: float, h2: float, curvature: float, n: int = 5, rows: int = 2):
    """Three states on x(s) = a + b s + c s^2 (n, 3) and multipliers on f(s) = p + q s + r s^2 (rows,), at
    s = -h1 - h2, -h1 and 0, as the two last frames' Secants (their changes along the unit vector e_0); c is
    ``curvature`` times a random array of the size of a and b."""
    rng = np.random.default_rng(7)
    a, b, c = (rng.normal(size=(n, 3)) for _ in range(3))
    c = curvature * c
    p, q, r = (rng.normal(size=rows) for _ in range(3))

    def x(s):
        return a + b * s + c * s * s

    def f(s):
        return p + q * s + r * s * s

    def change(h):
        vector = np.zeros(4)
        vector[0] = h
        return vector

    key = (1, 2)
    before = Secant(x(-h1 - h2), f(-h1 - h2), x(-h1), f(-h1), change(h2), key)
    last = Secant(x(-h1), f(-h1), x(0.0), f(0.0), change(h1), key, before)
    return last, x, f


def test_the_quadratic_predictor_is_the_parabola_through_the_last_three_equilibria():
    """Unequal frame changes (h1 = 0.5, h2 = 0.8, this frame 0.7): the prediction is the parabola at s = 0.7
    to round-off, the multipliers too; a frame more than twice the last one gets no parabola."""
    last, x, f = _parabola_secants(0.5, 0.8, 0.05)
    start = State(x(0.0), f(0.0), None, None, 0.0, 0.0, 0.0, False)
    change = np.array([0.7, 0.0, 0.0, 0.0])
    linear = x(0.0) + 0.7 / 0.5 * (x(0.0) - x(-0.5))
    predicted = quadratic_prediction(last, change, start, linear)
    assert predicted is not None
    assert np.max(np.abs(predicted[0] - x(0.7))) < 1e-12 * np.max(np.abs(x(0.7)))
    assert np.max(np.abs(predicted[1] - f(0.7))) < 1e-12 * np.max(np.abs(f(0.7)))
    assert quadratic_prediction(last, np.array([1.2, 0.0, 0.0, 0.0]), start, linear) is None


def test_the_quadratic_predictor_leaves_a_sharply_bending_path_to_the_line():
    """A parabola that bends away from the line by more than QUADRATIC_MAX_BEND of the line's move is not
    used (three states too far apart to resolve the path's curve)."""
    last, x, f = _parabola_secants(0.5, 0.5, 1.0)
    start = State(x(0.0), f(0.0), None, None, 0.0, 0.0, 0.0, False)
    change = np.array([0.5, 0.0, 0.0, 0.0])
    linear = x(0.0) + (x(0.0) - x(-0.5))
    bend = np.max(np.abs(x(0.5) - linear)) / np.max(np.abs(linear - x(0.0)))
    assert bend > QUADRATIC_MAX_BEND  # this parabola bends sharply
    assert quadratic_prediction(last, change, start, linear) is None
    gentle, x, f = _parabola_secants(0.5, 0.5, 0.05)
    linear = x(0.0) + (x(0.0) - x(-0.5))
    start = State(x(0.0), f(0.0), None, None, 0.0, 0.0, 0.0, False)
    assert np.max(np.abs(x(0.5) - linear)) / np.max(np.abs(linear - x(0.0))) < QUADRATIC_MAX_BEND
    assert quadratic_prediction(gentle, change, start, linear) is not None


def test_a_steady_slider_drag_takes_one_factorization_per_frame():
    """The shipped finger's cable dragged 0.5 mm per frame: once three equilibria give the parabola, every frame
    converges to the value set with one factorization and at most two Newton steps (measured: one step,
    where the line's prediction took three steps and two factorizations)."""
    scene = Scene.load(FINGER)
    for index in range(1, 13):
        scene.set(CABLE, 0.5 * index)
        report = scene.step()
        assert report.converged, report.message
        assert scene.outputs()["cable.displacement"] == pytest.approx(0.5 * index, abs=1e-6)
        if index >= 4:
            assert report.equilibrium.iterations <= 1, (index, report.equilibrium.iterations)
            assert report.equilibrium.steps <= 2, (index, report.equilibrium.steps)


def _ramp_passes(monkeypatch, frames: int) -> tuple[list, np.ndarray]:
    """The shipped finger's cable dragged 0.5 mm per frame: per frame the passes over the elements as
    ``(forces wanted, tangent wanted)``, and the last positions (n, 3)."""
    from softsim.mechanics.fem import TetElasticity

    passes: list = []
    run = getattr(TetElasticity._run, "__wrapped__", TetElasticity._run)  # not an earlier call's counter

    def counted(self, x, want_f, want_K, *args, **kwargs):
        passes[-1].append((bool(want_f), bool(want_K)))
        return run(self, x, want_f, want_K, *args, **kwargs)

    counted.__wrapped__ = run
    monkeypatch.setattr(TetElasticity, "_run", counted)
    scene = Scene.load(FINGER)
    for index in range(1, frames + 1):
        passes.append([])
        scene.set(CABLE, 0.5 * index)
        assert scene.step().converged
    return passes, np.array(scene.positions, copy=True)


def test_a_predicted_state_gets_its_tangent_from_the_pass_that_gives_its_forces(monkeypatch):
    """A steady drag frame starts from the prediction, which the first Newton step always refactorizes at: its
    forces and tangent come from one pass over the elements, not two. The frames end at the same positions to the
    bit as with two passes (the same kernel), one pass fewer each (3 against 4 once the drag is steady)."""
    fused, x_fused = _ramp_passes(monkeypatch, 8)
    at = equilibrium._Context._at
    monkeypatch.setattr(equilibrium._Context, "_at", lambda self, x, with_tangent=False: at(self, x))
    separate, x_separate = _ramp_passes(monkeypatch, 8)
    assert np.array_equal(x_fused, x_separate)
    for frame_fused, frame_separate in zip(fused[4:], separate[4:]):
        assert frame_fused == [(True, True), (True, False), (True, False)]
        assert frame_separate == [(True, False), (False, True), (True, False), (True, False)]


def test_the_predictor_scales_by_the_change_of_inputs_not_by_slack_cables(monkeypatch):
    """The trunk's cableL0 pulled by irregular amounts (0.2-0.9 mm a frame, as a window solving between slider
    edits applies them), after three steady frames. Its seven other cables are slack (told 0, shortened past it by
    the bend): their rows' offsets are their slack, not a change of the frame's inputs, and they are left out of
    the change that scales the predictor (7 held rows of 8 in every frame). Measured: the ten frames take 25 Newton
    steps and 17 factorizations; with the slack in the change, the prediction was scaled by about 1 whatever the
    pull, and they took 50 and 42."""
    held_counts, pulled_held = [], []
    at = equilibrium.Homotopy.at.__func__

    def counted(cls, state):
        homotopy = at(cls, state)
        held_counts.append(sum(int(mask.sum()) for mask in homotopy.held.values()))
        pulled_held.extend(bool(mask.any()) for c, mask in homotopy.held.items() if c.name == "cableL0")
        return homotopy

    monkeypatch.setattr(equilibrium.Homotopy, "at", classmethod(counted))
    scene = Scene.load("resources/scenes/trunk.toml")
    assert scene.step().converged
    value, steps, factorizations = 0.0, 0, 0
    for frame, pull in enumerate([0.5, 0.5, 0.5, 0.3, 0.9, 0.5, 0.2, 0.8, 0.4, 0.7, 0.3, 0.9, 0.6]):
        value += pull
        scene.set("body.trunk.cable.cableL0.value", value)
        held_counts.clear()
        report = scene.step()
        assert report.converged, report.message
        assert scene.outputs()["cableL0.displacement"] == pytest.approx(value, abs=1e-6)
        if frame >= 3:
            assert len(held_counts) == 1 and held_counts[0] in (6, 7), held_counts
            steps += report.equilibrium.steps
            factorizations += report.equilibrium.iterations
    assert not any(pulled_held)
    assert steps <= 30 and factorizations <= 20, (steps, factorizations)


def test_a_chord_step_is_taken_only_when_it_is_expected_to_finish_the_frame():
    """The shipped trunk's cable dragged 0.5 mm per frame (eight coupled cable rows): each frame converges in at
    most four Newton steps, at most one of them with a reused factorization (measured: two to four steps; a chord
    step from 2e-6 of the force scale with a factorization made at 4e-2 only reached 3e-7, so it is no longer
    taken)."""
    scene = Scene.load("resources/scenes/trunk.toml")
    key = "body.trunk.cable.cableL0.value"
    for index in range(1, 11):
        scene.set(key, 0.5 * index)
        report = scene.step()
        assert report.converged, report.message
        if index >= 4:
            equilibrium = report.equilibrium
            assert equilibrium.steps <= 4, (index, equilibrium.steps)
            assert equilibrium.steps - equilibrium.iterations <= 1, (index, equilibrium.steps, equilibrium.iterations)


def _jump(path, key, value, overrides=()):
    scene = Scene.load(path)
    for override, setting in overrides:
        scene.set(override, setting)
    scene.set(key, value)
    report = scene.step()
    assert report.converged, (path, report.message)
    return report.equilibrium.steps, scene.positions.copy()


def test_a_far_step_with_the_definite_tangent_that_only_shaves_the_merit_switches_back(monkeypatch):
    """DEFINITE_WANDER_FACTOR. The trunk with its rate limit raised, 20 mm of cableL0 in one frame: its definite
    tangent's far steps cut the merit by only 0.85 a step (linear convergence), and kept with WANDER_FACTOR they
    took 101 steps (83 before EXTRAPOLATION_FAILED_CUT); switching back to the exact tangent unless a definite step
    halves the merit takes 49. Both end at the same equilibrium (to the Newton tolerance)."""
    trunk = ("tests/data/softrobots/trunk.toml", "body.trunk.cable.cableL0.value", 20.0,
             (("body.trunk.cable.cableL0.maxDispVariation", 20.0),))
    steps, x = _jump(*trunk)
    monkeypatch.setattr(equilibrium, "DEFINITE_WANDER_FACTOR", equilibrium.WANDER_FACTOR)
    kept_steps, x_kept = _jump(*trunk)
    assert steps <= 55 < 80 <= kept_steps, (steps, kept_steps)
    np.testing.assert_allclose(x, x_kept, atol=1e-6 * np.ptp(x_kept))


def test_after_a_failed_extrapolated_start_the_increments_are_halved_and_start_from_their_sub_states(monkeypatch):
    """EXTRAPOLATION_FAILED_CUT. ArticulatedTentacle's 35 mm in one frame: its path bends where the cable points
    by the last hinge meet (26.2 mm) and where the planes close (from 30.5 mm), and there the increments started
    from the path's extrapolation fail. It took 154 steps when such an increment was tried again at the same size
    from the last sub-state and every later increment was extrapolated; now the retry is half the size and the
    later increments start from their sub-states: 102 (110 with the retry at the same size). Both end at the same
    equilibrium (to the Newton tolerance)."""
    tentacle = ("tests/data/softrobots/tentacle.toml", "body.tentacle.cable.cable.value", 35.0)
    steps, x = _jump(*tentacle)
    monkeypatch.setattr(equilibrium, "EXTRAPOLATION_FAILED_CUT", 1.0)
    same_size_steps, x_same_size = _jump(*tentacle)
    assert steps <= 105 < same_size_steps, (steps, same_size_steps)
    np.testing.assert_allclose(x, x_same_size, atol=1e-6 * np.ptp(x_same_size))
