"""The scene format's data layer: loading, validation messages, defaults (mechanics.scene)."""

from __future__ import annotations

from pathlib import Path

import pytest

from softsim.mechanics.scene import SceneError, load_scene, parse_scene

# The scene-format example (a finger with every table), one comment shortened to the line length.
EXAMPLE = """\
[scene]
name = "Cable-driven finger"
units = "mm-kg-s"            # "SI" (default) or "mm-kg-s" (SoftRobots' convention: E in kPa, forces in mN)
mode = "static"              # "static" (default) or "dynamic"
dt = 0.01                    # time step, used by dynamic mode and by rate bounds
gravity = [0.0, -9810.0, 0.0]

[[body]]
name = "finger"
mesh = "../meshes/finger.vtu"
scale = 1.0                  # optional; also translation = [x, y, z], rotation = [rx, ry, rz] in degrees
  [body.material]
  model = "corotational"     # linear | corotational | stvk | neohookean | stable_neohookean
  youngModulus = 600.0
  poissonRatio = 0.45
  totalMass = 0.075          # or massDensity; needed for gravity and dynamic mode
  [[body.material.region]]   # optional: different parameters for tets whose centroid is in the box
  box = [-100.0, 22.5, -8.0, -19.0, 28.0, 8.0]
  youngModulus = 1500.0
  [[body.fixed]]             # nodes removed from the system; one of: box, sphere, set, indices
  box = [-15.0, 0.0, 0.0, 5.0, 10.0, 15.0]
  [[body.force]]             # constant nodal load on a region; or pressure = p on a triangle set
  box = [-105.0, 0.0, 0.0, -100.0, 15.0, 15.0]
  totalForce = [0.0, -10.0, 0.0]
  [[body.cable]]             # SoftRobots CableConstraint
  name = "cable"
  points = [[-17.5, 12.5, 2.5], [-32.5, 12.5, 2.5]]   # positions inside the body (mapped), or indices = [...]
  pullPoint = [0.0, 12.5, 2.5]                         # omit with hasPullPoint = false
  valueType = "displacement" # or "force"
  value = 0.0
  minForce = 0.0             # optional bounds: maxForce, maxPositiveDisp, maxNegativeDisp, maxDispVariation
  [[body.cavity]]            # SoftRobots SurfacePressureConstraint
  name = "cavity"
  surface = "../meshes/cavity.stl"   # or set = "cavity" (a named triangle set of the mesh)
  valueType = "pressure"     # or "volumeGrowth"
  value = 0.0                # optional bounds: minPressure, maxPressure, minVolumeGrowth, maxVolumeGrowth
  flipNormal = false
  [[body.effector]]          # SoftRobots PositionEffector (target for the inverse problem)
  name = "tip"
  position = [-103.0, 7.5, 7.5]
  effectorGoal = [-103.0, 20.0, 7.5]
  useDirections = [0, 1, 0]

[[obstacle]]                 # static rigid shapes the bodies touch (unilateral contact)
type = "plane"               # plane | sphere | box | capsule
point = [0.0, -20.0, 0.0]
normal = [0.0, 1.0, 0.0]
friction = 0.3               # Coulomb coefficient mu
contactDistance = 0.5

[solver.newton]              # Caribou LegacyStaticODESolver
newton_iterations = 10
correction_tolerance_threshold = 1e-8
residual_tolerance_threshold = 1e-8
shoud_diverge_when_residual_is_growing = false   # "should_diverge_..." accepted as an alias
warm_start = true

[solver.linear]
type = "direct"              # direct | cg
# cg: maximum_number_of_iterations, residual_tolerance_threshold, preconditioning_method

[solver.constraint]
type = "ImprovedJacobi"      # BlockGaussSeidel | ImprovedJacobi | NNCG | exact
maxIterations = 1000
tolerance = 1e-6
sor = 1.0
scaleTolerance = true
allVerified = false
regularizationTerm = 0.0
useSpectralCorrection = true
spectralCorrectionFactor = 1.0
useConjugateResidue = true
conjugateResidueSpeedFactor = 10.0

[solver.dynamic]             # Compliant-style integration, used when scene.mode = "dynamic"
implicitVelocity = 1.0       # alpha
implicitPosition = 1.0       # beta
rayleighMass = 0.1
rayleighStiffness = 0.1
"""

MINIMAL_BODY = """
[[body]]
mesh = "finger.vtu"
[body.material]
youngModulus = 600.0
poissonRatio = 0.45
"""


@pytest.fixture
def example_path(tmp_path: Path) -> Path:
    """The scene-format example in tmp/scenes/finger.toml with dummy meshes in tmp/meshes/."""
    (tmp_path / "scenes").mkdir()
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "finger.vtu").write_text("dummy")
    (tmp_path / "meshes" / "cavity.stl").write_text("dummy")
    path = tmp_path / "scenes" / "finger.toml"
    path.write_text(EXAMPLE)
    return path


def errors_of(text: str, tmp_path: Path, *, mesh: bool = True) -> list[str]:
    """The error lines of scene ``text`` read as tmp/finger.toml (with tmp/finger.vtu present)."""
    if mesh:
        (tmp_path / "finger.vtu").write_text("dummy")
    path = tmp_path / "finger.toml"
    path.write_text(text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    assert str(info.value) == "\n".join(info.value.errors)
    return info.value.errors


def test_example_of_the_format_loads_with_its_values(example_path: Path) -> None:
    spec = load_scene(example_path)
    meshes = example_path.parent.parent.resolve() / "meshes"
    assert spec.scene.name == "Cable-driven finger"
    assert spec.scene.units == "mm-kg-s"
    assert spec.scene.gravity == (0.0, -9810.0, 0.0)
    assert spec.scene.dt == 0.01
    (body,) = spec.bodies
    assert body.name == "finger"
    assert body.mesh == "../meshes/finger.vtu"
    assert body.mesh_path == meshes / "finger.vtu"
    assert body.material.model == "corotational"
    assert body.material.youngModulus == 600.0
    assert body.material.poissonRatio == 0.45
    assert body.material.totalMass == 0.075 and body.material.massDensity is None
    region = body.material.regions[0]
    assert region.box == (-100.0, 22.5, -8.0, -19.0, 28.0, 8.0)
    assert region.youngModulus == 1500.0 and region.poissonRatio is None and region.model is None
    assert body.fixed[0].box == (-15.0, 0.0, 0.0, 5.0, 10.0, 15.0)
    assert body.fixed[0].selector == "box"
    assert body.forces[0].totalForce == (0.0, -10.0, 0.0)
    cable = body.cables[0]
    assert cable.points == ((-17.5, 12.5, 2.5), (-32.5, 12.5, 2.5))
    assert cable.pullPoint == (0.0, 12.5, 2.5) and cable.hasPullPoint is True
    assert cable.minForce == 0.0 and cable.maxForce is None and cable.valueType == "displacement"
    assert body.cavities[0].surface_path == meshes / "cavity.stl"
    effector = body.effectors[0]
    assert effector.position == ((-103.0, 7.5, 7.5),)
    assert effector.effectorGoal == ((-103.0, 20.0, 7.5),)
    assert effector.useDirections == (0, 1, 0) and effector.weight == 1.0
    (plane,) = spec.obstacles
    assert (plane.type, plane.normal, plane.friction, plane.contactDistance) == ("plane", (0, 1, 0), 0.3, 0.5)
    assert spec.solver.newton.newton_iterations == 10
    assert spec.solver.constraint.type == "ImprovedJacobi"
    assert spec.solver.constraint.useSpectralCorrection is True
    assert spec.solver.dynamic.rayleighMass == 0.1
    assert spec.drag.compliance == 1e-3
    # the example's effector goal without [solver.inverse] only gives the output tip.distance: one warning says so
    assert len(spec.warnings) == 1 and "body[0].effector[0].effectorGoal: the inverse model is off" in spec.warnings[0]


def test_defaults_of_a_minimal_scene(tmp_path: Path) -> None:
    (tmp_path / "finger.vtu").write_text("dummy")
    text = MINIMAL_BODY + "[[body.cable]]\nindices = [1, 2]\nhasPullPoint = false\n"
    spec = parse_scene(text, source=str(tmp_path / "gripper.toml"), base_dir=tmp_path)
    settings = spec.scene
    assert (settings.name, settings.units, settings.mode, settings.dt) == ("gripper", "SI", "static", 0.01)
    assert settings.gravity == (0.0, -9.81, 0.0)
    body = spec.bodies[0]
    assert body.name == "body0" and body.cables[0].name == "cable0"
    assert (body.scale, body.translation, body.rotation) == (1.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert body.material.model == "corotational" and body.material.rotation_method == "polarF"
    newton = spec.solver.newton
    assert (newton.newton_iterations, newton.correction_tolerance_threshold) == (10, 1e-8)
    assert newton.residual_tolerance_threshold == 1e-8
    assert newton.shoud_diverge_when_residual_is_growing is False and newton.warm_start is True
    assert (newton.line_search, newton.load_steps, newton.correction) == (False, 1, "equilibrium")
    constraint = spec.solver.constraint
    assert (constraint.type, constraint.maxIterations, constraint.tolerance) == (
        "BlockGaussSeidel",
        1000,
        1e-6,
    )
    assert (constraint.sor, constraint.scaleTolerance, constraint.allVerified) == (1.0, True, False)
    assert (constraint.regularizationTerm, constraint.spectralCorrectionFactor) == (0.0, 1.0)
    assert constraint.useSpectralCorrection is False and constraint.useConjugateResidue is False
    assert constraint.conjugateResidueSpeedFactor == 10.0 and constraint.sofaSpectralRadius is False
    dynamic = spec.solver.dynamic
    assert (dynamic.implicitVelocity, dynamic.implicitPosition) == (1.0, 1.0)
    assert (dynamic.rayleighMass, dynamic.rayleighStiffness) == (0.0, 0.0)
    linear = spec.solver.linear
    assert (linear.type, linear.backend, linear.preconditioning_method) == ("direct", "auto", "Diagonal")
    assert spec.drag.compliance == 1e-3
    cable = body.cables[0]
    assert (cable.valueType, cable.value, cable.maxDispVariation) == ("displacement", 0.0, None)
    # A body without mass under gravity is allowed, with a warning.
    assert spec.warnings == [
        "gripper.toml: body[0].material: no totalMass or massDensity: gravity has no effect on this body"
    ]


def test_gravity_default_follows_the_units() -> None:
    assert parse_scene('[scene]\nunits = "mm-kg-s"').scene.gravity == (0.0, -9810.0, 0.0)
    assert parse_scene('[scene]\nunits = "SI"').scene.gravity == (0.0, -9.81, 0.0)
    assert parse_scene('[scene]\nunits = "mm-kg-s"\ngravity = [0, 0, -1]').scene.gravity == (0.0, 0.0, -1.0)


def test_a_scene_without_body_is_valid() -> None:
    spec = parse_scene("")
    assert spec.bodies == [] and spec.obstacles == [] and spec.scene.name == "untitled"
    spec = parse_scene(
        '[scene]\nname = "empty"\n[[obstacle]]\ntype = "sphere"\ncenter = [0, 0, 0]\nradius = 2'
    )
    assert (
        spec.scene.name == "empty"
        and spec.obstacles[0].radius == 2.0
        and spec.obstacles[0].name == "obstacle0"
    )


def test_unknown_keys_name_the_file_the_path_and_the_closest_key(tmp_path: Path) -> None:
    text = MINIMAL_BODY + "[solver.constraint]\nspectralCorectionFactor = 0.5\n"
    assert errors_of(text, tmp_path) == [
        "finger.toml: solver.constraint.spectralCorectionFactor: unknown key; "
        "did you mean spectralCorrectionFactor?"
    ]
    errors = errors_of(MINIMAL_BODY.replace("youngModulus", "youngModulous"), tmp_path)
    assert errors == [
        "finger.toml: body[0].material.youngModulous: unknown key; did you mean youngModulus?",
        "finger.toml: body[0].material.youngModulus: missing required key",
    ]


def test_unknown_top_level_table(tmp_path: Path) -> None:
    assert errors_of("[solvr.newton]\nnewton_iterations = 3\n", tmp_path) == [
        "finger.toml: solvr: unknown key; did you mean solver?"
    ]
    assert errors_of("[camera]\nzoom = 2\n", tmp_path) == [
        "finger.toml: camera: unknown key; allowed keys: scene, body, obstacle, rigid, attachment, collision, "
        "controller, solver, drag"
    ]


def test_range_errors_name_the_allowed_interval(tmp_path: Path) -> None:
    text = MINIMAL_BODY.replace("0.45", "0.7") + (
        "[solver.newton]\nnewton_iterations = 0\n"
        "[solver.constraint]\nsor = 2.0\ntolerance = -1e-6\n"
        "[solver.dynamic]\nimplicitVelocity = 0.0\n"
        "[drag]\ncompliance = 0\n"
    )
    assert errors_of(text, tmp_path) == [
        "finger.toml: body[0].material.poissonRatio: 0.7 is outside (-1, 0.5)",
        "finger.toml: solver.newton.newton_iterations: 0 is outside [1, 1000]",
        "finger.toml: solver.constraint.tolerance: -1e-06 is outside (0, inf)",
        "finger.toml: solver.constraint.sor: 2.0 is outside (0, 2)",
        "finger.toml: solver.dynamic.implicitVelocity: 0.0 is outside (0, 1]",
        "finger.toml: drag.compliance: 0 is outside (0, inf)",
    ]


def test_choice_errors_suggest_the_closest_option(tmp_path: Path) -> None:
    text = MINIMAL_BODY + (
        "[[body.cable]]\nindices = [0]\npullPoint = [0, 0, 0]\n"
        '[[body.cable]]\nindices = [1]\npullPoint = [0, 0, 0]\nvalueType = "displacment"\n'
        '[solver.linear]\ntype = "CG"\npreconditioning_method = "none"\n'
    )
    assert errors_of(text, tmp_path) == [
        'finger.toml: body[0].cable[1].valueType: "displacment" is not one of displacement, force; '
        "did you mean displacement?",
        'finger.toml: solver.linear.type: "CG" is not one of direct, cg, async; did you mean cg?',
        'finger.toml: solver.linear.preconditioning_method: "none" is not one of None, Identity, Diagonal, '
        "IncompleteCholesky, LastFactorization; did you mean None?",
    ]


def test_toml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    (errors,) = [errors_of('[scene]\nname = "x"\ndt 0.01\n', tmp_path)]
    assert len(errors) == 1
    assert errors[0].startswith("finger.toml: TOML syntax error: ")
    assert "(at line 3, column 4)" in errors[0]


def test_type_and_length_errors(tmp_path: Path) -> None:
    text = MINIMAL_BODY.replace("600.0", '"abc"') + (
        "[scene]\ngravity = [0.0, -9.81]\ndt = true\n"
        "[solver.newton]\nnewton_iterations = 2.5\nwarm_start = 1\n"
    )
    assert errors_of(text, tmp_path) == [
        "finger.toml: scene.dt: expected a number, got true",
        "finger.toml: scene.gravity: expected a list of 3 numbers, got 2 values",
        'finger.toml: body[0].material.youngModulus: expected a number, got "abc"',
        "finger.toml: solver.newton.newton_iterations: expected an integer, got 2.5",
        "finger.toml: solver.newton.warm_start: expected true or false, got 1",
    ]
    assert errors_of('[body]\nmesh = "finger.vtu"\n', tmp_path) == [
        "finger.toml: body: expected an array of tables ([[body]]), got a table"
    ]
    assert errors_of('[scene]\ngravity = [0, "down", 0]\n', tmp_path) == [
        'finger.toml: scene.gravity: item 1: expected a number, got "down"'
    ]


def test_missing_required_keys_and_files(tmp_path: Path) -> None:
    text = '[[body]]\nname = "a"\n[[body]]\nname = "b"\nmesh = "nowhere/b.vtu"\n'
    text += "[body.material]\npoissonRatio = 0.3\n"
    missing = (tmp_path / "nowhere" / "b.vtu").resolve()
    assert errors_of(text, tmp_path, mesh=False) == [
        "finger.toml: body[0].mesh: missing required key",
        "finger.toml: body[0].material: missing required table",
        "finger.toml: body[1].material.youngModulus: missing required key",
    ]
    text = '[[body]]\nmesh = "nowhere/b.vtu"\n[body.material]\nyoungModulus = 1.0\npoissonRatio = 0.3\n'
    assert errors_of(text, tmp_path, mesh=False) == [f"finger.toml: body[0].mesh: file not found: {missing}"]
    cavity = MINIMAL_BODY + '[[body.cavity]]\nsurface = "cavity.stl"\n'
    assert errors_of(cavity, tmp_path) == [
        f"finger.toml: body[0].cavity[0].surface: file not found: {(tmp_path / 'cavity.stl').resolve()}"
    ]
    # check_files=False skips the existence checks (used when meshes are generated later).
    spec = load_scene(tmp_path / "finger.toml", check_files=False)
    assert spec.bodies[0].cavities[0].surface_path == (tmp_path / "cavity.stl").resolve()


def test_duplicate_names(tmp_path: Path) -> None:
    cable = '[[body.cable]]\nname = "c"\nindices = [0]\npullPoint = [0, 0, 0]\n'
    text = MINIMAL_BODY + cable + MINIMAL_BODY + '[[body.effector]]\nname = "c"\nindices = [3]\n'
    text = text.replace("[[body]]\n", '[[body]]\nname = "finger"\n')
    assert errors_of(text, tmp_path) == [
        'finger.toml: body[1].name: duplicate body name "finger" (also used by body[0])',
        'finger.toml: body[1].effector[0].name: duplicate actuator/effector name "c" '
        "(also used by body[0].cable[0])",
    ]
    assert errors_of(MINIMAL_BODY.replace("[[body]]\n", '[[body]]\nname = "my finger"\n'), tmp_path) == [
        "finger.toml: body[0].name: \"my finger\" contains ' '; "
        "a name may not contain dots, brackets, quotes, '=' or spaces"
    ]


def test_all_errors_are_collected(tmp_path: Path) -> None:
    text = MINIMAL_BODY.replace("0.45", "0.5") + (
        '[scene]\nmode = "dynamic"\ndt = -1\n[solver.constraint]\nmaxIterations = 0\nsorr = 1.0\n'
    )
    errors = errors_of(text, tmp_path)
    assert errors == [
        "finger.toml: scene.dt: -1 is outside (0, inf)",
        "finger.toml: body[0].material.poissonRatio: 0.5 is outside (-1, 0.5)",
        "finger.toml: solver.constraint.sorr: unknown key; did you mean sor?",
        "finger.toml: solver.constraint.maxIterations: 0 is outside [1, 10000000]",
    ]


def test_cross_key_rules(tmp_path: Path) -> None:
    def body_with(table: str) -> str:
        return MINIMAL_BODY + table

    assert errors_of(body_with('[[body.fixed]]\nbox = [0, 0, 0, 1, 1, 1]\nset = "base"\n'), tmp_path) == [
        "finger.toml: body[0].fixed[0]: exactly one of box, sphere, set, indices, halfspace is allowed, "
        "got box and set"
    ]
    assert errors_of(body_with("[[body.fixed]]\n"), tmp_path) == [
        "finger.toml: body[0].fixed[0]: one of box, sphere, set, indices, halfspace is required"
    ]
    assert errors_of(body_with("[[body.fixed]]\nbox = [0, 2, 0, 1, 1, 1]\n"), tmp_path) == [
        "finger.toml: body[0].fixed[0].box: ymin > ymax (2 > 1); "
        "a box is [xmin, ymin, zmin, xmax, ymax, zmax]"
    ]
    assert errors_of(
        body_with("[[body.fixed]]\nsphere = { center = [0, 0, 0], radius = -1 }\n"), tmp_path
    ) == ["finger.toml: body[0].fixed[0].sphere.radius: -1 is outside (0, inf)"]
    assert errors_of(body_with("totalMass = 1.0\nmassDensity = 1000.0\n"), tmp_path) == [
        "finger.toml: body[0].material: totalMass and massDensity are both given; give at most one"
    ]
    assert errors_of(
        body_with("[[body.cable]]\nindices = [0, 1]\nminForce = 5.0\nmaxForce = 1.0\n"), tmp_path
    ) == [
        "finger.toml: body[0].cable[0].pullPoint: missing; required when hasPullPoint = true (the default)",
        "finger.toml: body[0].cable[0].minForce: 5 is greater than maxForce = 1",
    ]
    assert errors_of(body_with("[[body.cable]]\npoints = [1, 2, 3]\nhasPullPoint = false\n"), tmp_path) == [
        "finger.toml: body[0].cable[0].hasPullPoint: false needs at least 2 cable points, got 1"
    ]
    assert errors_of(body_with('[[body.cavity]]\nset = "cavity"\nsurface = "finger.vtu"\n'), tmp_path) == [
        "finger.toml: body[0].cavity[0]: exactly one of surface, set is allowed, got surface and set"
    ]
    effector = "[[body.effector]]\nindices = [4, 5]\neffectorGoal = [1, 2, 3]\nuseDirections = [0, 2, 0]\n"
    assert errors_of(body_with(effector), tmp_path) == [
        "finger.toml: body[0].effector[0].useDirections: item 1: 2 is not 0 or 1"
    ]
    effector = "[[body.effector]]\nindices = [4, 5]\neffectorGoal = [1, 2, 3]\n"
    assert errors_of(body_with(effector), tmp_path) == [
        "finger.toml: body[0].effector[0].effectorGoal: expected one goal per effector point (2), got 1"
    ]
    assert errors_of(body_with("[[body.force]]\npressure = 2.0\nbox = [0, 0, 0, 1, 1, 1]\n"), tmp_path) == [
        'finger.toml: body[0].force[0].set: missing; pressure acts on a triangle set: set = "NAME"',
        "finger.toml: body[0].force[0].box: cannot be used with pressure (it acts on the triangle set)",
    ]
    assert errors_of('[scene]\nmode = "dynamic"\n' + MINIMAL_BODY, tmp_path) == [
        'finger.toml: body[0].material: scene.mode = "dynamic" needs totalMass or massDensity'
    ]


def test_pressure_force_and_region_selectors(tmp_path: Path) -> None:
    (tmp_path / "finger.vtu").write_text("dummy")
    text = MINIMAL_BODY + (
        '[[body.force]]\nset = "inner"\npressure = 3.5\n'
        "[[body.fixed]]\nhalfspace = { point = [0, 0, 0], normal = [0, -1, 0] }\n"
        "[[body.fixed]]\nsphere = { center = [1, 2, 3], radius = 0.5 }\n"
        "[[body.fixed]]\nindices = [0, 7]\n"
    )
    body = parse_scene(text, base_dir=tmp_path).bodies[0]
    assert (body.forces[0].set, body.forces[0].pressure, body.forces[0].totalForce) == ("inner", 3.5, None)
    assert body.fixed[0].to_selector() == {
        "halfspace": {"point": (0.0, 0.0, 0.0), "normal": (0.0, -1.0, 0.0)}
    }
    assert body.fixed[1].to_selector() == {"sphere": {"center": (1.0, 2.0, 3.0), "radius": 0.5}}
    assert body.fixed[2].to_selector() == {"indices": (0, 7)}


def test_obstacles(tmp_path: Path) -> None:
    text = (
        '[[obstacle]]\nname = "table"\ntype = "box"\nmin = [-1, -2, -3]\nmax = [1, 0, 3]\nfriction = 0.5\n'
        '[[obstacle]]\ntype = "capsule"\na = [0, 0, 0]\nb = [0, 1, 0]\nradius = 0.25\n'
    )
    table, capsule = parse_scene(text).obstacles
    assert table.center == (0.0, -1.0, 0.0) and table.halfExtents == (1.0, 1.0, 3.0) and table.friction == 0.5
    assert (capsule.name, capsule.a, capsule.b, capsule.radius) == ("obstacle1", (0, 0, 0), (0, 1, 0), 0.25)
    bad = (
        '[[obstacle]]\ntype = "sphere"\ncenter = [0, 0, 0]\nnormal = [0, 1, 0]\n'
        '[[obstacle]]\ntype = "plane"\npoint = [0, 0, 0]\nnormal = [0, 0, 0]\n'
        '[[obstacle]]\ntype = "cylinder"\n'
        '[[obstacle]]\ntype = "box"\nmin = [0, 0, 0]\nmax = [1, 0, 1]\n'
        '[[obstacle]]\ntype = "plane"\npoint = [0, 0, 0]\nnormal = [0, 1, 0]\nfriction = -0.1\n'
    )
    assert errors_of(bad, tmp_path) == [
        "finger.toml: obstacle[0].radius: missing; type sphere needs center, radius",
        "finger.toml: obstacle[0].normal: not used by type sphere (it uses center, radius)",
        "finger.toml: obstacle[1].normal: [0, 0, 0] is a zero vector; a direction must be non-zero",
        'finger.toml: obstacle[2].type: "cylinder" is not one of plane, sphere, box, capsule',
        "finger.toml: obstacle[3].max: y: 0 must be > min 0",
        "finger.toml: obstacle[4].friction: -0.1 is outside [0, inf)",
    ]


def test_alias_of_the_caribou_typo(tmp_path: Path) -> None:
    spec = parse_scene("[solver.newton]\nshould_diverge_when_residual_is_growing = true\n")
    assert spec.solver.newton.shoud_diverge_when_residual_is_growing is True
    both = "[solver.newton]\nshoud_diverge_when_residual_is_growing = true\n"
    both += "should_diverge_when_residual_is_growing = true\n"
    assert parse_scene(both).solver.newton.shoud_diverge_when_residual_is_growing is True
    assert errors_of(
        both.replace(
            "should_diverge_when_residual_is_growing = true",
            "should_diverge_when_residual_is_growing = false",
        ),
        tmp_path,
    ) == [
        "finger.toml: solver.newton.shoud_diverge_when_residual_is_growing: true disagrees with its alias "
        "should_diverge_when_residual_is_growing = false; give only one"
    ]


def test_unreadable_file_is_a_scene_error(tmp_path: Path) -> None:
    with pytest.raises(SceneError) as info:
        load_scene(tmp_path / "absent.toml")
    assert info.value.errors[0].startswith(
        f"absent.toml: cannot read the scene file {tmp_path / 'absent.toml'}"
    )
