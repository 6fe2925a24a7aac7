"""Design by gradient: the height of the finger's cable that gives the most upward tip travel per newton.

The cable of resources/scenes/finger.toml runs along the finger at y = 12.5 mm, loops around the tip and comes
back (14 points); its pull point stays where the motor is (y = 12.5 at the base). Here the cable is force
controlled (FORCE mN) and the design variable is the height h of all 14 points. The objective is the tip's
upward travel per newton, J(h) = (tip.y(h) - tip.y without cable force) / FORCE [mm/N]. Its derivative is
exact: dJ/dh = sum over the points k of d tip.y / d points[k].y / FORCE, from ``Scene.gradients`` (the cable's
rows rebuilt around the converged state; docs/gradients.md), so L-BFGS-B needs one solve per iterate.

The height is bounded by the mid-plane (7.5 mm: below it the cable curls the finger downwards) and a 2 mm wall
under the top face (y = 15): h in [7.5, 13]. The answer is the upper bound, where the derivative is still
positive: the higher the cable, the longer its lever arm about the finger's neutral axis.

Run: python examples/design_cable_height.py
Prints ``key = value`` lines: the optimum height, J there and at the bounds, dJ/dh there, the solves used.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from softsim.mechanics.scene_runtime import Scene

SCENE = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
CABLE = "body.finger.cable.cable"
FORCE = 500.0  # mN
BOUNDS = (7.5, 13.0)  # mm
START = 9.0  # mm


class Design:
    """J(h) and dJ/dh, one forward solve per height asked for (the last is kept for the gradient)."""

    def __init__(self) -> None:
        scene = Scene.load(SCENE)
        for _ in range(2):
            scene.step()
        self.rest_tip = scene.outputs()["tip.y"]  # no cable force: the cable's height does not matter
        self.points = np.array(scene.get(f"{CABLE}.points"))
        self.solves = 0
        self._last: tuple | None = None

    def __call__(self, h: float) -> tuple[float, float]:
        h = float(np.asarray(h).reshape(-1)[0])
        if self._last is None or self._last[0] != h:
            self._last = (h, *self._solve(h))
        return self._last[1], self._last[2]

    def _solve(self, h: float) -> tuple[float, float]:
        scene = Scene.load(SCENE)
        scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
        scene.set("solver.newton.correction_tolerance_threshold", 1e-10)
        points = self.points.copy()
        points[:, 1] = h
        scene.set(f"{CABLE}.points", points.tolist())
        scene.set(f"{CABLE}.valueType", "force")
        scene.set(f"{CABLE}.value", FORCE)
        for _ in range(3):
            report = scene.step()
        if not report.converged:
            raise RuntimeError(f"h = {h}: {report.message}")
        self.solves += 1
        keys = [f"{CABLE}.points[{k}].y" for k in range(len(points))]
        gradient = scene.gradients(["tip.y"], keys)["tip.y"]
        travel = (scene.outputs()["tip.y"] - self.rest_tip) / FORCE * 1e3  # mm per N
        return travel, sum(gradient.values()) / FORCE * 1e3


def main() -> None:
    design = Design()
    result = minimize(lambda h: tuple(-v for v in design(h)), [START], jac=True, method="L-BFGS-B",
                      bounds=[BOUNDS], options={"maxiter": 10})
    best = float(result.x[0])
    travel, slope = design(best)
    low = design(BOUNDS[0])[0]
    print(f"optimum cable height = {best:.6f}")
    print(f"tip travel per newton at the optimum = {travel:.6f}")
    print(f"tip travel per newton at the lower bound = {low:.6f}")
    print(f"dJ/dh at the optimum = {slope:.6f}")
    print(f"forward solves = {design.solves}")


if __name__ == "__main__":
    main()
