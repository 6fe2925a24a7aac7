"""Make the finger's tip follow a circle with the inverse model, from Python.

A finger with one looped cable can only curl in its plane: its tip moves on a curve, not over an area. This
example gives the shipped finger two cables instead, one along each side (z = 2.5 and z = 12.5 mm, both
pulled from the base, both unable to push), so that together they move the tip up (both pull) and sideways
(one pulls more): the tip can reach an area of the y-z plane. The effector counts y and z only
(``useDirections = [0, 1, 1]``); x follows from the bending.

The script pulls both cables 5 mm (forward) to find the circle's centre, switches to inverse mode and moves the
goal around a circle of radius 3 mm in 24 steps, one frame per step, then prints, for each step, the goal, the
tip, their distance and the two cable displacements the inverse model found.

Run: python examples/finger_circle.py [--steps 24] [--radius 3] [--plot circle.png]
Prints ``key = value`` lines at the end: the largest and mean distance to the goal (mm), the frames that did
not converge, the cables' displacement ranges.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from softsim.mechanics.scene_runtime import Scene

FINGER = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
SIDES = {"left": 2.5, "right": 12.5}  # z of each cable (mm)
CABLE_X = (-17.5, -32.5, -47.5, -62.5, -77.5, -92.5)  # points along the finger (mm)


def two_cable_finger(directory: Path) -> Path:
    """The shipped finger with its looped cable replaced by one straight cable along each side."""
    text = FINGER.read_text().replace('"../meshes/', f'"{(FINGER.parent.parent / "meshes").as_posix()}/')
    start, end = text.index("  [[body.cable]]"), text.index("  [[body.effector]]")
    cables = ""
    for name, z in SIDES.items():
        points = ", ".join(f"[{x}, 12.5, {z}]" for x in CABLE_X)
        cables += (f'  [[body.cable]]\n  name = "{name}"\n  points = [{points}]\n'
                   f"  pullPoint = [0.0, 12.5, {z}]\n  minForce = 0.0\n\n")
    path = directory / "finger_two_cables.toml"
    path.write_text(text[:start] + cables + text[end:])
    return path


def tip(scene: Scene) -> np.ndarray:
    outputs = scene.outputs()
    return np.array([outputs[f"tip.{axis}"] for axis in "xyz"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="goals around the circle")
    parser.add_argument("--radius", type=float, default=3.0, help="circle radius (mm)")
    parser.add_argument("--plot", help="write a PNG of the goals and the tip (needs matplotlib)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        scene = Scene.load(two_cable_finger(Path(directory)))
    for name in SIDES:
        scene.set(f"body.finger.cable.{name}.value", 5.0)
    scene.step()
    centre = tip(scene)
    scene.set("solver.inverse", {})  # the cables' values are now unknowns; the effector's goal drives them
    scene.set("body.finger.effector.tip.useDirections", [0, 1, 1])
    goals, tips, distances, cables, unconverged = [], [], [], [], 0
    for k in range(args.steps + 1):
        angle = 2.0 * np.pi * k / args.steps
        goal = centre + args.radius * np.array([0.0, np.cos(angle), np.sin(angle)])
        scene.set("body.finger.effector.tip.effectorGoal", [goal.tolist()])
        report = scene.step()
        unconverged += not report.converged
        outputs = scene.outputs()
        goals.append(goal)
        tips.append(tip(scene))
        distances.append(outputs["tip.distance"])
        cables.append([outputs[f"{name}.displacement"] for name in SIDES])
        print(f"step {k:2d}: goal y {goal[1]:7.3f} z {goal[2]:6.3f} | tip y {tips[-1][1]:7.3f} z {tips[-1][2]:6.3f}"
              f" | distance {distances[-1]:.4f} mm | left {cables[-1][0]:.3f} mm, right {cables[-1][1]:.3f} mm")
    cables = np.array(cables)
    print(f"largest distance = {max(distances):.6g}")
    print(f"mean distance = {float(np.mean(distances)):.6g}")
    print(f"unconverged frames = {unconverged}")
    for i, name in enumerate(SIDES):
        print(f"{name} displacement range = [{cables[:, i].min():.4f}, {cables[:, i].max():.4f}]")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        goals, tips = np.array(goals), np.array(tips)
        figure, axes = plt.subplots(figsize=(5, 5))
        axes.plot(goals[:, 2], goals[:, 1], "o-", label="goal")
        axes.plot(tips[:, 2], tips[:, 1], "x--", label="tip")
        axes.set_xlabel("z [mm]")
        axes.set_ylabel("y [mm]")
        axes.set_aspect("equal")
        axes.legend()
        figure.savefig(args.plot, dpi=100)


if __name__ == "__main__":
    main()
