"""Recover the finger's Young's modulus from a measured tip displacement: a coarse sweep, then scipy.optimize.

The "measurement" is made here with a known modulus (TRUE_YOUNG, kPa) and a 6 mm cable pull; the example then
forgets it: a coarse sweep over 200..1200 kPa on a local Dask cluster brackets the value whose tip height
matches the measurement best, and a bounded scalar minimisation (Brent) on the same simulation refines it.

With ``--method gradient`` it recovers both Young's modulus and Poisson's ratio from a recorded tip trajectory
(the tip's three coordinates at cable pulls of 2, 4, 6 and 8 mm) by scipy's least_squares with the exact
Jacobian of ``Scene.gradients`` (docs/gradients.md): each forward solve of the trajectory also gives the
derivatives of its 12 tip coordinates with respect to E and nu, and a solve serves both the residual and the
Jacobian at the same point.

Run: python examples/calibrate_finger.py [--method sweep|gradient|both] [--workers 2] [--plot sweep.png]
Prints ``key = value`` lines: the true and recovered values, the relative errors, the simulations used.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares, minimize_scalar

from softsim.app.sweep import sweep
from softsim.mechanics.scene_runtime import Scene

SCENE = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
YOUNG = "body.finger.material.youngModulus"
CABLE = "body.finger.cable.cable.value"
POISSON = "body.finger.material.poissonRatio"
TRUE_YOUNG = 655.0  # kPa: the "bench" finger
TRUE_POISSON = 0.42
PULL = 6.0  # mm
FRAMES = 3
TRAJECTORY = (2.0, 4.0, 6.0, 8.0)  # mm of cable, one frame each
TIP = ("tip.x", "tip.y", "tip.z")
START = (450.0, 0.35)  # the gradient calibration's first guess of (E, nu)


def tip_height(young: float) -> float:
    """The tip's y (mm) at equilibrium with the cable pulled PULL mm, for a Young's modulus (kPa)."""
    scene = Scene.load(SCENE)
    scene.set(YOUNG, float(young))
    scene.set(CABLE, PULL)
    for _ in range(FRAMES):
        scene.step()
    return scene.outputs()["tip.y"]


class Trajectory:
    """The tip's trajectory (12,) along TRAJECTORY and its exact Jacobian (12, 2) with respect to (E, nu), one
    forward solve per (E, nu) asked for (the last one is kept: least_squares asks for the residual and then the
    Jacobian at the same point)."""

    def __init__(self) -> None:
        self.scene = Scene.load(SCENE)
        # tight tolerances: the gradients are exact at the equilibrium the frame reaches
        self.scene.set("solver.newton.residual_tolerance_threshold", 1e-11)
        self.scene.set("solver.newton.correction_tolerance_threshold", 1e-10)
        self.solves = 0
        self._last: tuple | None = None

    def __call__(self, parameters) -> tuple[np.ndarray, np.ndarray]:
        key = tuple(float(p) for p in parameters)
        if self._last is None or self._last[0] != key:
            self._last = (key, *self._solve(*key))
        return self._last[1], self._last[2]

    def _solve(self, young: float, poisson: float) -> tuple[np.ndarray, np.ndarray]:
        scene = self.scene
        scene.set(YOUNG, young)
        scene.set(POISSON, poisson)
        scene.set(CABLE, 0.0)
        scene.reset()
        self.solves += 1
        values, jacobian = [], []
        for pull in TRAJECTORY:
            scene.set(CABLE, pull)
            report = scene.step()
            if not report.converged:
                raise RuntimeError(f"E = {young}, nu = {poisson}, pull {pull}: {report.message}")
            gradients = scene.gradients(TIP, [YOUNG, POISSON])
            outputs = scene.outputs()
            values += [outputs[name] for name in TIP]
            jacobian += [[gradients[name][YOUNG], gradients[name][POISSON]] for name in TIP]
        return np.array(values), np.array(jacobian)


def calibrate_by_gradient() -> None:
    """E and nu from the recorded tip trajectory by least squares with the exact Jacobian."""
    recorded = Trajectory()(np.array([TRUE_YOUNG, TRUE_POISSON]))[0]
    model = Trajectory()
    result = least_squares(lambda p: model(p)[0] - recorded, START, jac=lambda p: model(p)[1],
                           bounds=([50.0, 0.05], [5000.0, 0.49]), x_scale=np.array(START), method="trf",
                           xtol=1e-12, ftol=1e-14, gtol=1e-14, max_nfev=10)
    young, poisson = result.x
    print(f"gradient: true youngModulus, poissonRatio = {TRUE_YOUNG}, {TRUE_POISSON}")
    print(f"gradient: recovered youngModulus = {young:.6f}")
    print(f"gradient: recovered poissonRatio = {poisson:.8f}")
    print(f"gradient: relative error youngModulus = {abs(young - TRUE_YOUNG) / TRUE_YOUNG:.2e}")
    print(f"gradient: relative error poissonRatio = {abs(poisson - TRUE_POISSON) / TRUE_POISSON:.2e}")
    print(f"gradient: tip misfit = {np.max(np.abs(result.fun)):.3e}")
    print(f"gradient: forward solves = {model.solves}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=("sweep", "gradient", "both"), default="both")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plot", help="save the sweep's tip height against the modulus as a PNG")
    args = parser.parse_args()
    if args.method in ("gradient", "both"):
        calibrate_by_gradient()
    if args.method == "gradient":
        return
    measured = tip_height(TRUE_YOUNG)
    print(f"measured tip.y = {measured:.6f}")
    coarse = sweep(SCENE, {YOUNG: "200:1200:11"}, frames=FRAMES, sets=[(CABLE, PULL)], workers=args.workers)
    misfit = np.abs(coarse["tip.y"].to_numpy() - measured)
    best = int(np.argmin(misfit))
    values = coarse[YOUNG].to_numpy()
    low, high = values[max(best - 1, 0)], values[min(best + 1, len(values) - 1)]
    print(f"coarse best = {values[best]:.1f} in [{low:.1f}, {high:.1f}]")
    refined = minimize_scalar(lambda e: (tip_height(e) - measured) ** 2, bounds=(low, high), method="bounded",
                              options={"xatol": 1e-3})
    print(f"true youngModulus = {TRUE_YOUNG}")
    print(f"recovered youngModulus = {refined.x:.4f}")
    print(f"relative error = {abs(refined.x - TRUE_YOUNG) / TRUE_YOUNG:.2e}")
    print(f"simulations = {len(coarse)} in the sweep + {refined.nfev} in the refinement")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(figsize=(5.5, 3.4), dpi=110)
        axes.plot(values, coarse["tip.y"], "o-", label="sweep (11 samples)")
        axes.axhline(measured, color="gray", linestyle="--", label="measured tip height")
        axes.axvline(refined.x, color="tab:red", linestyle=":", label=f"recovered E = {refined.x:.1f} kPa")
        axes.set_xlabel("youngModulus [kPa]")
        axes.set_ylabel("tip.y [mm] (cable pulled 6 mm)")
        axes.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(args.plot)


if __name__ == "__main__":
    main()
