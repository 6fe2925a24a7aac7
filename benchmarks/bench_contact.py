"""Contact between bodies on this machine: detection on two 10k-triangle surfaces in close contact, and the
frames of the shipped gripper_grasp scene.

1. **Detection.** Two cubes of 20 mm meshed with 29 x 29 cells per face (10 092 surface triangles each), one
   0.3 mm above the other (the 841 nodes of each touching face within the 1 mm alarm distance of the other):
   ``BodyContactConstraint.update`` (broad phase with two k-d trees, numba narrow phase, nearest triangle per
   node, the rows' frames), median / min / max of repeated calls, and the same after the last positions were
   remembered (the frame step's second detection, at the corrected positions). Target (issue 19): <= 5 ms.
2. **gripper_grasp.** The shipped scene at its defaults: 25 frames closing on the cube and lifting it, then 50
   frames while the floor drops away and the fingers hold it: median / p90 / max per frame, contact rows, the
   detection's share.
   Target (issue 19): <= 33 ms median per frame, every frame converged.

Usage: python benchmarks/bench_contact.py [--quick] [--json PATH] [--output PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, markdown_table, write_json  # noqa: E402

TARGET_DETECTION_MS = 5.0
TARGET_FRAME_MS = 33.0


def detection(repeat: int) -> dict:
    from softsim.mechanics.constraints.body_contact import BodyContactConstraint, ContactSurface
    from softsim.meshes import generate

    mesh = generate.cube(20.0, 29)
    triangles = np.asarray(mesh.surface_triangles())
    nodes = np.unique(triangles)
    n = mesh.n_points
    x = np.concatenate([mesh.points, mesh.points + [0.0, 20.3, 0.0]])
    surfaces = [ContactSurface("lower", triangles, nodes), ContactSurface("upper", triangles + n, nodes + n)]
    constraint = BodyContactConstraint(surfaces, [(0, 1, 0.5)], contactDistance=0.1, alarmDistance=1.0,
                                       n_nodes=2 * n)
    constraint.update(x)  # numba's compilation, outside the timing
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        constraint.update(x)
        times.append(time.perf_counter() - started)
    constraint.remember(x + 0.01)
    remembered = []
    for _ in range(repeat):
        started = time.perf_counter()
        constraint.update(x)
        remembered.append(time.perf_counter() - started)
    times, remembered = 1e3 * np.array(times), 1e3 * np.array(remembered)
    return {"triangles": int(triangles.shape[0]), "contacts": int(constraint.n_contacts),
            "median": float(np.median(times)), "min": float(times.min()), "max": float(times.max()),
            "remembered_median": float(np.median(remembered))}


def grasp(close_frames: int, hold_frames: int) -> dict:
    import softsim.mechanics.constraints.body_contact as body_contact
    from softsim.mechanics.scene_runtime import Scene

    detect_time = [0.0]
    original = body_contact.BodyContactConstraint.update

    def timed(self, x):
        started = time.perf_counter()
        original(self, x)
        detect_time[0] += time.perf_counter() - started

    body_contact.BodyContactConstraint.update = timed
    try:
        scene = Scene.load(ROOT / "resources" / "scenes" / "gripper_grasp.toml")
        reports, detections = [], []
        for _ in range(close_frames + hold_frames):
            detect_time[0] = 0.0
            reports.append(scene.step())
            detections.append(detect_time[0])
    finally:
        body_contact.BodyContactConstraint.update = original
    walls = 1e3 * np.array([r.wall_time for r in reports])
    return {"frames": len(reports), "converged": int(sum(r.converged for r in reports)),
            "median": float(np.median(walls)), "p90": float(np.percentile(walls, 90)), "max": float(walls.max()),
            "rows_median": float(np.median([r.n_constraint_rows for r in reports])),
            "detection_median": float(1e3 * np.median(detections)),
            "hold_median": float(np.median(walls[close_frames:]))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 detection repeats, 10 + 20 grasp frames")
    parser.add_argument("--json")
    parser.add_argument("--output", default=str(Path(__file__).with_name("RESULTS_contact.md")))
    args = parser.parse_args(argv)
    found = detection(20 if args.quick else 100)
    frames = grasp(10, 20) if args.quick else grasp(25, 50)
    text = "\n".join([
        "# Contact between bodies (`benchmarks/bench_contact.py`)",
        "",
        markdown_table(["measured", "median", "min / p90", "max", "note"], [
            [f"detection, two {found['triangles']}-triangle surfaces 0.3 mm apart", f"{found['median']:.2f} ms",
             f"{found['min']:.2f} ms", f"{found['max']:.2f} ms",
             f"{found['contacts']} contacts; {found['remembered_median']:.2f} ms with the last positions too"],
            [f"gripper_grasp frame ({frames['frames']} frames)", f"{frames['median']:.1f} ms",
             f"{frames['p90']:.1f} ms", f"{frames['max']:.1f} ms",
             f"{frames['converged']}/{frames['frames']} converged; {frames['rows_median']:.0f} rows; detection "
             f"{frames['detection_median']:.2f} ms; holding the cube {frames['hold_median']:.1f} ms"],
        ]),
        "",
        f"Targets (issue 19): detection <= {TARGET_DETECTION_MS:g} ms: "
        f"{'PASS' if found['median'] <= TARGET_DETECTION_MS else 'FAIL'}; gripper_grasp <= {TARGET_FRAME_MS:g} ms "
        f"median per frame: {'PASS' if frames['median'] <= TARGET_FRAME_MS else 'FAIL'}; every frame converged: "
        f"{'PASS' if frames['converged'] == frames['frames'] else 'FAIL'}.",
        "",
    ])
    Path(args.output).write_text(text)
    print(text)
    write_json(args.json, {"detection": found, "grasp": frames})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
