"""softsim's Python API: load the cable-driven finger, pull its cable, step until it settles, read the
actuator outputs and the tip position, and tune solver parameters by the names of the scene file.

Run it from anywhere with the project's Python:  python examples/api_example.py
"""

from pathlib import Path

import numpy as np

from softsim.mechanics import Scene

SCENE = Path(__file__).resolve().parents[1] / "resources" / "scenes" / "finger.toml"
PULL = 8.0  # cable displacement to reach [mm] (the scene is in mm-kg-s: forces in mN)

scene = Scene.load(SCENE)  # validates every key; raises SceneError/MeshError/ParameterError with the file and key

# Any value of the scene is read and set by its key path, with the scene file's names; bodies and actuators
# are addressed by name. Changes are validated like the file and take effect on the next frame.
print("constraint solver:", scene.get("solver.constraint.type"))
scene.set("body.finger.cable.cable.value", PULL)

previous = scene.positions.copy()  # (n, 3) node positions [mm]
for frame in range(1, 51):
    report = scene.step()
    if not report.ran:
        raise SystemExit(f"frame {frame} failed: {report.message}")
    motion = float(np.max(np.linalg.norm(scene.positions - previous, axis=1)))
    previous = scene.positions.copy()
    if motion < 1e-6:
        break
print(f"settled after {frame} frames (last motion {motion:.1e} mm, "
      f"{report.iterations} Newton iterations, converged: {report.converged})")

outputs = scene.outputs()  # every actuator and effector output, "NAME.QUANTITY" -> float
for key in ("cable.displacement", "cable.cableLength", "cable.force"):
    print(f"{key} = {outputs[key]:.6f}")
tip = np.array([outputs["tip.x"], outputs["tip.y"], outputs["tip.z"]])
print("tip position =", np.array2string(tip, precision=4, separator=", "))
von_mises = scene.simulation.von_mises()  # (m,) per tetrahedron [kPa]
print(f"max von Mises stress = {von_mises.max():.3f}")

# Solver parameters by name, live: another constraint solver gives the same equilibrium.
scene.set("solver.constraint.type", "NNCG")
scene.set("solver.constraint.tolerance", 1e-10)
scene.step()
print(f"with {scene.get('solver.constraint.type')}: cable.displacement = "
      f"{scene.outputs()['cable.displacement']:.6f}")
