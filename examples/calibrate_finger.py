"""Recover the finger's Young's modulus from a measured tip displacement: a coarse sweep, then scipy.optimize.

The "measurement" is made here with a known modulus (TRUE_YOUNG, kPa) and a 6 mm cable pull; the example then
forgets it: a coarse sweep over 200..1200 kPa on a local Dask cluster brackets the value whose tip height
matches the measurement best, and a bounded scalar minimisation (Brent) on the same simulation refines it.

Run: python examples/calibrate_finger.py [--workers 2] [--plot sweep.png]
Prints ``key = value`` lines: the true and recovered modulus, the relative error, the samples used.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar
from softsim.app.sweep import sweep
from softsim.mechanics.scene_runtime import Scene

SCENE = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
YOUNG = "body.finger.material.youngModulus"
CABLE = "body.finger.cable.cable.value"
TRUE_YOUNG = 655.0  # kPa: the "bench" finger
PULL = 6.0  # mm
FRAMES = 3


def tip_height(young: float) -> float:
    """The tip's y (mm) at equilibrium with the cable pulled PULL mm, for a Young's modulus (kPa)."""
    scene = Scene.load(SCENE)
    scene.set(YOUNG, float(young))
    scene.set(CABLE, PULL)
    for _ in range(FRAMES):
        scene.step()
    return scene.outputs()["tip.y"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plot", help="save the sweep's tip height against the modulus as a PNG")
    args = parser.parse_args()
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
