"""Cable force against cable displacement for three materials, from one sweep (the README's plot).

Run: python examples/sweep_force_curves.py [--workers 2] [--out DIR] [--plot curves.png]
With --out the results stay in DIR/results.parquet (run it again: it resumes, nothing is recomputed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from softsim.app.sweep import sweep

SCENE = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
YOUNG = "body.finger.material.youngModulus"
CABLE = "body.finger.cable.cable.value"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("--plot", help="save the curves as a PNG")
    args = parser.parse_args()
    results = sweep(SCENE, {YOUNG: "300,600,1200", CABLE: "0:12:7"}, frames=3, workers=args.workers, out=args.out)
    print(f"samples = {len(results)}, statuses = {sorted(set(results['status']))}")
    for young, group in results.groupby(YOUNG):
        print(f"E = {young:g} kPa: force at 12 mm = {group['cable.force'].iloc[-1]:.1f} mN")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(figsize=(5.5, 3.4), dpi=110)
        for young, group in results.groupby(YOUNG):
            axes.plot(group["cable.displacement"], group["cable.force"], "o-", label=f"E = {young:g} kPa")
        axes.set_xlabel("cable displacement [mm]")
        axes.set_ylabel("cable force [mN]")
        axes.set_title("finger: one sweep of 21 samples", fontsize=9)
        axes.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(args.plot)


if __name__ == "__main__":
    main()
