"""Frame times of every shipped scene (resources/scenes/*.toml) and of a 10k-tet cavity + floor-contact body.

Protocol (static mode, solver converged): load the scene, settle (frames until Newton stops at once), then
time ``--frames`` frames with nothing changing ("still") and ``--frames`` frames where every actuator value
(cables, cavities) ramps by a small amount per frame, as a user dragging a slider ("ramp"). The frame time
is the wall time of ``Scene.step()``; the phases are FrameReport.times (median over the ramp frames).
``scene.set`` is the cost of one live edit through the scene's key path (validation + apply), outside the
frame. The 10k case is built in code: meshes.generate.balloon(n=12, wall_cells=4) (9 984 tets), hanging
from its top face, its cavity inflated by a pressure, resting on a slightly tilted floor plane placed so
that about 100 surface nodes are in contact, with friction (3 rows per contact) and without (1 row).

Usage: python benchmarks/bench_scenes.py [--frames 40] [--quick] [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, markdown_table, stats_ms, write_json  # noqa: E402

from softsim import meshes  # noqa: E402
from softsim.mechanics.constraint_solvers import make_constraint_solver  # noqa: E402
from softsim.mechanics.constraints import ContactConstraint, PlaneObstacle, SurfacePressureConstraint  # noqa: E402
from softsim.mechanics.fem import TetElasticity  # noqa: E402
from softsim.mechanics.linear_solvers import DirectSolver  # noqa: E402
from softsim.mechanics.loads import Gravity, lumped_masses  # noqa: E402
from softsim.mechanics.newton import StaticNewtonSolver  # noqa: E402
from softsim.mechanics.scene import actuators as scene_actuators  # noqa: E402
from softsim.mechanics.scene_runtime import Scene  # noqa: E402
from softsim.mechanics.simulation import Simulation  # noqa: E402
from softsim.mechanics.static_problem import StaticProblem  # noqa: E402

logger = logging.getLogger("bench_scenes")

PHASES = ("assembly", "factorization", "newton_solve", "build", "W", "constraint_solve", "correction",
          "reequilibration")


def _actuators(simulation):
    """(constraint, ramp step per frame) for every enforced constraint with a ``value`` parameter."""
    diagonal = float(np.linalg.norm(np.ptp(simulation.X, axis=0)))
    found = []
    for constraint in simulation.constraints:
        if not constraint.enforced or "value" not in getattr(constraint, "PARAMETERS", {}):
            continue
        value = float(constraint.value)
        if getattr(constraint, "valueType", "") == "displacement":
            step = 1e-3 * diagonal
        else:
            step = 0.005 * abs(value) if value else 1e-3
        found.append((constraint, step))
    return found


def settle(step, max_frames: int = 80) -> int:
    """Step until Newton stops at once on two successive frames (or ``max_frames``); returns the count."""
    quiet = 0
    for frame in range(1, max_frames + 1):
        report = step()
        quiet = quiet + 1 if (report.ran and report.iterations == 0) else 0
        if quiet >= 2:
            return frame
    return max_frames


def time_frames(step, simulation, frames: int) -> dict:
    """Still and ramp frame statistics of an already settled simulation."""
    still = []
    for _ in range(frames):
        started = time.perf_counter()
        step()
        still.append(time.perf_counter() - started)
    ramp, phases, rows, iterations, warnings = [], {p: [] for p in PHASES}, 0, [], set()
    factorizations, steps, converged = [], [], []
    actuators = _actuators(simulation)
    for _ in range(frames):
        for constraint, increment in actuators:
            constraint.set_parameters(value=float(constraint.value) + increment)
        started = time.perf_counter()
        report = step()
        ramp.append(time.perf_counter() - started)
        for phase in PHASES:
            phases[phase].append(report.times.get(phase, 0.0))
        rows = report.n_constraint_rows
        iterations.append(report.iterations)
        equilibrium = report.equilibrium
        factorizations.append(0 if equilibrium is None or report.unchanged else equilibrium.iterations)
        steps.append(0 if equilibrium is None or report.unchanged else equilibrium.steps)
        converged.append(report.converged)
        if report.message:
            warnings.add(report.message.split("(")[0].strip())
    return {"still": stats_ms(still), "ramp": stats_ms(ramp),
            "phases": {p: 1e3 * float(np.median(v)) for p, v in phases.items()}, "rows": rows,
            "newton_iterations": float(np.median(iterations)), "warnings": sorted(warnings),
            "equilibrium_factorizations": float(np.median(factorizations)),
            "equilibrium_steps": float(np.median(steps)), "converged_share": float(np.mean(converged))}


def scene_case(path: Path, frames: int) -> dict:
    scene = Scene.load(path)
    sim = scene.simulation
    settled = settle(scene.step)
    result = time_frames(scene.step, sim, frames)
    set_times = []
    for constraint, increment in _actuators(sim)[:1]:
        # the scene key of the actuator, found by name (multi-body scenes wrap it in an OffsetConstraint)
        key = next(a.value_path for a in scene_actuators(scene.spec) if a.item.name == constraint.name)
        for _ in range(5):
            started = time.perf_counter()
            scene.set(key, float(constraint.value) + increment)
            set_times.append(time.perf_counter() - started)
    result.update(name=path.stem, nodes=sim.X.shape[0], tets=sim.tets.shape[0], settle_frames=settled,
                  set_ms=stats_ms(set_times)["median"],
                  correction=sim.correction, mode=scene.spec.scene.mode)
    return result


def cavity_contact_simulation(friction: float, target_contacts: int = 100):
    """The 10k-tet body: hollow cube hanging from its top face, inflated onto a tilted floor."""
    mesh = meshes.generate.balloon(size=30.0, n=12, wall_cells=4)
    X, tets = mesh.points, mesh.tets
    elasticity = TetElasticity(X, tets, model="corotational", young=100.0, poisson=0.45)
    top = np.flatnonzero(np.isclose(X[:, 1], X[:, 1].max()))
    masses = lumped_masses(X, tets, None, total_mass=0.025)
    problem = StaticProblem(elasticity, fixed_nodes=top, loads=[Gravity(masses, (0.0, -9810.0, 0.0))])
    newton = StaticNewtonSolver(linear_solver=DirectSolver(), newton_iterations=10,
                                correction_tolerance_threshold=1e-8, residual_tolerance_threshold=1e-8)
    cavity = SurfacePressureConstraint(X, tets, triangles=mesh.triangle_sets["cavity"], name="cavity",
                                       valueType="pressure", value=2.0, maxPressureVariation=0.5)
    surface = np.unique(mesh.surface_triangles())
    # floor under the body, tilted about z so that the contact band covers about target_contacts nodes
    probe = Simulation(problem=problem, newton=newton, constraint_solver=make_constraint_solver("BlockGaussSeidel"))
    probe.step()
    x_free = probe.x
    tilt = np.radians(2.0)
    normal = np.array([np.sin(tilt), np.cos(tilt), 0.0])
    heights = x_free[surface] @ normal
    floor_offset = np.sort(heights)[target_contacts - 1]
    alarm = 0.05
    obstacle = PlaneObstacle(normal * (floor_offset - alarm + 1e-9), normal)
    contact = ContactConstraint(surface, [obstacle], contactDistance=0.0, alarmDistance=alarm, friction=friction,
                                n_nodes=X.shape[0], name="floor")
    solver = make_constraint_solver("BlockGaussSeidel", maxIterations=1000, tolerance=1e-8)
    newton = StaticNewtonSolver(linear_solver=DirectSolver(), newton_iterations=10,
                                correction_tolerance_threshold=1e-8, residual_tolerance_threshold=1e-8)
    return Simulation(problem=problem, newton=newton, constraint_solver=solver, constraints=[cavity, contact]), contact


def cavity_contact_case(frames: int, friction: float) -> dict:
    sim, contact = cavity_contact_simulation(friction)
    settled = settle(sim.step)
    result = time_frames(sim.step, sim, frames)
    name = "cavity_contacts_10k" if friction > 0 else "cavity_contacts_10k_frictionless"
    result.update(name=name, nodes=sim.X.shape[0], tets=sim.tets.shape[0], settle_frames=settled,
                  set_ms=float("nan"), correction=sim.correction, contacts=contact.n_contacts)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="fewer frames")
    parser.add_argument("--scenes", nargs="*", help="scene files (default: resources/scenes/*.toml)")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--json", help="write the measurements as JSON here")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_scenes.md")))
    args = parser.parse_args(argv)
    frames = 15 if args.quick else args.frames
    paths = [Path(p) for p in args.scenes] if args.scenes else sorted((ROOT / "resources/scenes").glob("*.toml"))
    results = []
    for path in paths:
        try:
            results.append(scene_case(path, frames))
        except Exception as error:  # noqa: BLE001 - a broken scene is reported in the table, not fatal
            logger.warning("%s: %s", path.name, error)
            results.append({"name": path.stem, "error": str(error)})
        print(path.stem, "done", flush=True)
    if not args.skip_synthetic:
        for friction in (0.3, 0.0):
            results.append(cavity_contact_case(frames, friction))
            print(results[-1]["name"], "done", flush=True)
    header = ["scene", "nodes", "tets", "rows", "still median", "still p90", "ramp median", "ramp p90",
              *PHASES, "Newton it.", "eq. factorizations", "eq. steps", "converged", "scene.set", "notes"]
    rows = []
    for r in results:
        if "error" in r:
            rows.append([r["name"]] + ["-"] * (len(header) - 2) + [f"failed: {r['error'][:80]}"])
            continue
        notes = [f"{r['mode']} mode"] if r.get("mode", "static") != "static" else []
        if r.get("correction", "equilibrium") != "equilibrium":
            notes.append(f"correction = {r['correction']}")
        if "contacts" in r:
            notes.append(f"{r['contacts']} contacts")
        notes += r["warnings"]
        rows.append([r["name"], r["nodes"], r["tets"], r["rows"], f"{r['still']['median']:.2f}",
                     f"{r['still']['p90']:.2f}", f"{r['ramp']['median']:.2f}", f"{r['ramp']['p90']:.2f}",
                     *[f"{r['phases'][p]:.2f}" for p in PHASES], f"{r['newton_iterations']:.0f}",
                     f"{r['equilibrium_factorizations']:.0f}", f"{r['equilibrium_steps']:.0f}",
                     f"{100 * r['converged_share']:.0f} %",
                     "-" if not np.isfinite(r["set_ms"]) else f"{r['set_ms']:.2f}", "; ".join(notes)])
    table = markdown_table(header, rows)
    print(table)
    text = ("## Scene frame times (`benchmarks/bench_scenes.py`)\n\n"
            "Static mode unless the notes say otherwise, solver converged (settled first), "
            f"{frames} frames each; times in ms. 'still': "
            "nothing changes; 'ramp': every cable/cavity value moves a little each frame (a slider drag). "
            "Phases: median FrameReport.times of the ramp frames. 'scene.set': one live edit by key path "
            "(outside the frame).\n\n" + table + "\n")
    Path(args.output).write_text(text)
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    raise SystemExit(main())
