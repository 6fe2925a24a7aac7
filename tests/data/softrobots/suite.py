"""The real-robot suite (issue 28, item 8): per SoftRobots scene, the actuator its users drive and how far.

``CASES`` lists the scenes of this folder, ``SHIPPED`` the shipped scenes of resources/scenes that the benchmark
runs the same way. Each case gives the key path to vary, the ``target`` a single jump goes to from rest in one
frame, and a ``ramp`` of values applied one per frame. ``run(case, mode)`` plays one of them through the public
API and returns one ``FrameRecord`` per frame; the test (tests/mechanics/test_softrobots_suite.py) and the
benchmark (benchmarks/bench_equilibrium.py) both use it.

Where each target comes from (the scenes' headers give the details):

- finger, finger_plane, finger_block: Finger.py's FingerController moves the cable 1 mm per key press, never below
  0, with no upper bound. 30 mm: the finger curls by about 60 degrees (its highest node 50 mm above its top face).
  finger_block_friction is finger_block with Coulomb friction 0.5 between the bodies, ramped as the controller
  does, 1 mm per frame.
- trunk: trunk.py's example animation sets cableL0's value to factor * 20 (factor 0 -> 1): 20 mm. Its cables
  have maxDispVariation = 1 (mm per frame), so a frame moves the cable at most 1 mm towards the value set:
  ``max_step``. A jump to 20 mm reaches 1 mm in its one frame, by the example's own limit; ``trunk_nolimit``
  is the same robot with cableL0's maxDispVariation raised to 20 so that the jump is a real 20 mm jump.
- diamond: DiamondRobot.py pulls the north cable by 20 mm (value=20).
- springy: Springy.py imposes a volume growth of 8 (valueType=1, the index of "volumeGrowth").
- pneunet_gripper: the tutorial's controllers clamp the pressure value to [0, 1.5] at dt = 0.01; SOFA's
  pressure value is an impulse (pressure x dt) in a dynamic scene, so 1.5 is 150 kPa in a static frame.
- tentacle: TentacleController.py adds 0.05 mm per time step up to 35 mm.
- bunny: SurfacePressureConstraintTest.cpp imposes a volume growth of 40.
- typed runs (``run(case, "typed")``): a user typing values, successive single-frame jumps to values drawn in
  [0, 1.2 x the target] (``typed_values``), one run from rest per seed; random typing found finger_block's rows
  holding nodes off the block (docs/contact.md).
- shipped finger / trunk / pneunet (resources/scenes): the same actuators; the shipped pneunet's cavity has
  maxPressure 60 and maxPressureVariation 5 (kPa per frame).
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


@dataclass(frozen=True)
class Case:
    name: str
    scene: Path
    key: str  # the key path set each frame
    output: str  # the scene.outputs() entry that reads the actuator's reached value
    target: float  # the single jump's value
    ramp: tuple[float, ...]  # one value per frame, from rest
    #: the largest change of the actuator per frame (the scene's maxDispVariation / maxPressureVariation);
    #: None: the value set is reached in the frame
    max_step: float | None = None
    #: values set once after loading, before the first frame (key path -> value)
    overrides: dict = field(default_factory=dict)


def _steps(stop: float, step: float) -> tuple[float, ...]:
    count = round(stop / step)
    return tuple(round(step * (i + 1), 10) for i in range(count))


def _case(name, scene, key, output, target, ramp, **kw) -> Case:
    return Case(name=name, scene=HERE / scene, key=key, output=output, target=target, ramp=ramp, **kw)


CASES: tuple[Case, ...] = (
    _case("finger", "finger.toml", "body.finger.cable.cable.value", "cable.displacement", 30.0, _steps(30.0, 5.0)),
    _case("trunk", "trunk.toml", "body.trunk.cable.cableL0.value", "cableL0.displacement", 20.0, _steps(20.0, 1.0),
          max_step=1.0),
    _case("trunk_nolimit", "trunk.toml", "body.trunk.cable.cableL0.value", "cableL0.displacement", 20.0,
          _steps(20.0, 5.0), max_step=20.0, overrides={"body.trunk.cable.cableL0.maxDispVariation": 20.0}),
    _case("diamond", "diamond.toml", "body.diamond.cable.north.value", "north.displacement", 20.0,
          _steps(20.0, 5.0)),
    _case("springy", "springy.toml", "body.accordion.cavity.cavity.value", "cavity.volumeGrowth", 8.0,
          _steps(8.0, 1.0)),
    _case("pneunet_gripper", "pneunet_gripper.toml", "body.finger.cavity.cavity.value", "cavity.pressure", 150.0,
          _steps(150.0, 25.0)),
    _case("tentacle", "tentacle.toml", "body.tentacle.cable.cable.value", "cable.displacement", 35.0,
          _steps(35.0, 5.0)),
    _case("bunny", "bunny.toml", "body.bunny.cavity.cavity.value", "cavity.volumeGrowth", 40.0, _steps(40.0, 10.0)),
    _case("finger_plane", "finger_plane.toml", "body.finger.cable.cable.value", "cable.displacement", 30.0,
          _steps(30.0, 5.0)),
    _case("finger_block", "finger_block.toml", "body.finger.cable.cable.value", "cable.displacement", 30.0,
          _steps(30.0, 5.0)),
    _case("finger_block_friction", "finger_block.toml", "body.finger.cable.cable.value", "cable.displacement",
          30.0, _steps(30.0, 1.0), overrides={"collision.friction": 0.5}),
)

SHIPPED: tuple[Case, ...] = (
    Case("shipped_finger", ROOT / "resources/scenes/finger.toml", "body.finger.cable.cable.value",
         "cable.displacement", 30.0, _steps(30.0, 5.0)),
    Case("shipped_trunk", ROOT / "resources/scenes/trunk.toml", "body.trunk.cable.cableL0.value",
         "cableL0.displacement", 20.0, _steps(20.0, 1.0), max_step=1.0),
    Case("shipped_pneunet", ROOT / "resources/scenes/pneunet.toml", "body.pneunet.cavity.cavity.value",
         "cavity.pressure", 60.0, _steps(60.0, 5.0), max_step=5.0),
)

#: the shipped finger as shipped: successive single-frame jumps of its cable (mm), one frame each
SHIPPED_FINGER_JUMPS: tuple[float, ...] = (10.0, 20.0, 30.0, 40.0, 5.0, 45.0, 0.0, 25.0)

BY_NAME = {case.name: case for case in CASES + SHIPPED}

#: the runs of a case (:func:`run`): the target in one frame, the ramp, and values typed at random
MODES: tuple[str, ...] = ("jump", "ramp", "typed")

#: "typed" runs: a user typing values, TYPED_FRAMES successive single-frame jumps from rest to values drawn
#: uniformly in [0, TYPED_REACH x the case's target] (rounded to 0.01), one run per seed
TYPED_SEEDS: tuple[int, ...] = (1, 2, 3)
TYPED_FRAMES = 8
TYPED_REACH = 1.2


@dataclass
class FrameRecord:
    value: float  # the value set before the frame
    expected: float  # what the actuator should read after it (the value, or max_step from the last one)
    reached: float  # what it reads (scene.outputs()[case.output])
    converged: bool
    ok: bool  # the frame ran (report.ran): False when it failed and the state was kept
    message: str
    steps: int | None  # report.equilibrium.steps (None: no equilibrium iterations this frame)
    factorizations: int | None  # report.equilibrium.iterations
    increments: int | None  # report.equilibrium.increments when the solver reports it, else None
    seconds: float  # wall time of scene.step()

    def reached_target(self, case: Case) -> bool:
        return abs(self.reached - self.expected) <= 1e-4 * max(1.0, abs(case.target))

    @property
    def trustworthy(self) -> bool:
        """False when the frame says its contact forces are not trustworthy (rows holding nodes away from the
        other body)."""
        return "not trustworthy" not in self.message


def typed_values(case: Case, seed: int) -> tuple[float, ...]:
    """The values of one "typed" run (TYPED_FRAMES of them), the same for a case and seed on every machine."""
    rng = np.random.default_rng([seed, zlib.crc32(case.name.encode())])
    return tuple(float(v) for v in np.round(rng.uniform(0.0, TYPED_REACH * case.target, TYPED_FRAMES), 2))


def values_for(case: Case, mode: str) -> tuple[float, ...]:
    if mode == "jump":
        return (case.target,)
    if mode == "ramp":
        return case.ramp
    raise ValueError(f"mode must be 'jump', 'ramp' or 'typed', not {mode!r}")


def load(case: Case):
    from softsim.mechanics import Scene

    scene = Scene.load(case.scene)
    for key, value in case.overrides.items():
        scene.set(key, value)
    return scene


def play(case: Case, values, scene=None) -> list[FrameRecord]:
    """Set ``case.key`` to each value in turn and run one frame per value (from rest unless ``scene`` is given)."""
    scene = load(case) if scene is None else scene
    records = []
    current = float(scene.outputs().get(case.output, 0.0))
    for value in values:
        expected = float(value)
        if case.max_step is not None:
            expected = min(max(expected, current - case.max_step), current + case.max_step)
        scene.set(case.key, float(value))
        started = time.perf_counter()
        report = scene.step()
        seconds = time.perf_counter() - started
        reached = float(scene.outputs()[case.output])
        equilibrium = report.equilibrium
        increments = getattr(equilibrium, "increments", None) if equilibrium is not None else None
        records.append(FrameRecord(
            value=float(value), expected=expected, reached=reached, converged=bool(report.converged),
            ok=bool(getattr(report, "ran", report.ok)),  # solvers before FrameReport.ran: ok meant "ran"
            message=report.message, seconds=seconds,
            steps=None if equilibrium is None else int(equilibrium.steps),
            factorizations=None if equilibrium is None else int(equilibrium.iterations),
            increments=None if increments is None else int(increments)))
        current = reached
    return records


def run(case: Case, mode: str) -> list[FrameRecord]:
    """The jump (one frame from rest to the target), the ramp (one frame per ramp value) or the typed runs (one
    from rest per seed of TYPED_SEEDS, their frames one after the other) of a case."""
    if mode == "typed":
        return [record for seed in TYPED_SEEDS for record in play(case, typed_values(case, seed))]
    return play(case, values_for(case, mode))


def failures(case: Case, records: list[FrameRecord]) -> list[str]:
    """What went wrong, one line per bad frame (empty: every frame converged and reached its value)."""
    lines = []
    for index, record in enumerate(records):
        if record.converged and record.reached_target(case):
            continue
        what = "not converged" if record.ok and not record.converged else ("failed" if not record.ok else "")
        lines.append(f"frame {index + 1} (value {record.value:g}): {what}{'; ' if what else ''}"
                     f"{case.output} {record.reached:.6g} of {record.expected:g}; {record.message}")
    return lines
