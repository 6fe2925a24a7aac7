"""The scene file as typed data: dataclasses whose fields are the TOML keys (the table below).

Every field that appears in the file carries its TOML key, its kind (range and type, see
:mod:`mechanics.scene.kinds`) and its default in ``dataclasses.field`` metadata; the loader, the writer and
the live editor all read the same metadata, so a key has exactly one definition. Parameter names follow
SOFA's, SoftRobots' and Caribou's data fields verbatim (``youngModulus``, ``newton_iterations``,
``maxDispVariation``).
Lists keep the file's singular table name as their key (``[[body.cable]]``) and a plural attribute name
(``BodySpec.cables``).

Keys, ranges and defaults ("req." = required; "opt." = optional, ``None`` when absent; * = added by softsim)

=========================================== ======================================= ==========================
key                                         allowed                                 default
=========================================== ======================================= ==========================
scene.name                                  string                                  file name stem
scene.units                                 "SI" | "mm-kg-s"                        "SI"
scene.mode                                  "static" | "dynamic"                    "static"
scene.dt                                    (0, inf) s                              0.01
scene.gravity                               3 numbers                               SI [0, -9.81, 0];
                                                                                    mm-kg-s [0, -9810, 0]
body.name                                   name, unique among bodies               "body<i>"
body.mesh                                   file path (relative to the scene file)  req.
body.scale / translation / rotation         (0, inf) / 3 numbers / 3 numbers (deg)  1 / [0,0,0] / [0,0,0]
body.material.model                         linear | corotational | stvk |          "corotational"
                                            neohookean | stable_neohookean
body.material.youngModulus                  [1e-30, 1e30] (beyond: float under- or  req.
                                            overflow)
body.material.poissonRatio                  (-1, 0.5)                               req.
body.material.totalMass | massDensity       (0, inf); at most one of the two        opt.
body.material.rotation_method *             polarF | svdF (softsim's, of F) |        "polarF"
                                            large | polar | svd (SOFA's formulas)
                                            (corotational)
body.material.corotationalTangent *         sofa | exact | exact_spd (corotational; "sofa"
                                            exact: polarF/svdF only; exact_spd: its
                                            negative eigenvalues clamped to 0)
body.material.region[].box                  6 numbers, min <= max                   req.
body.material.region[].youngModulus,        as in body.material                     opt. (inherit)
  poissonRatio, model
body.fixed[]: box | sphere | set |          exactly one; sphere = {center, radius   -
  indices | halfspace *                     > 0}; halfspace = {point, normal != 0}
                                            selects (x - point).normal >= 0
body.force[]: region + totalForce           region keys as body.fixed; totalForce   -
  | set + pressure                          3 numbers; pressure on a triangle set
body.cable[].name                           name, unique among actuators/effectors  "cable<i>"
body.cable[].points | indices               3-vectors (mapped) | node ids; one      req.
body.cable[].pullPoint                      3 numbers; req. when hasPullPoint       opt.
body.cable[].hasPullPoint                   bool (false needs >= 2 points)          true
body.cable[].cableInitialLength             (0, inf)                                opt. (rest length)
body.cable[].valueType / value              displacement | force / number           displacement / 0
body.cable[].minForce, maxForce             [-inf, inf], min <= max                 opt.
body.cable[].maxPositiveDisp,               [0, inf)                                opt.
  maxNegativeDisp
body.cable[].maxDispVariation               (0, inf)                                opt.
body.cavity[].name                          name                                    "cavity<i>"
body.cavity[].surface | set                 file path | triangle set name; one      req.
body.cavity[].valueType / value             pressure | volumeGrowth / number        pressure / 0
body.cavity[].minPressure, maxPressure,     [-inf, inf], min <= max                 opt.
  minVolumeGrowth, maxVolumeGrowth
body.cavity[].maxPressureVariation,         (0, inf)                                opt.
  maxVolumeGrowthVariation
body.cavity[].flipNormal                    bool                                    false
body.effector[].name                        name                                    "effector<i>"
body.effector[].position | indices          3-vector or list of them | node ids     req.
body.effector[].effectorGoal                3-vector or list, one per point         opt. (no target)
body.effector[].useDirections               3 integers in {0, 1}                    [1, 1, 1]
body.effector[].weight                      (0, inf)                                1
obstacle.name *                             name, unique among obstacles            "obstacle<i>"
obstacle.type                               plane | sphere | box | capsule          req.
obstacle (plane) point, normal              3 numbers; normal != 0, points to the   req.
                                            free side
obstacle (sphere) center, radius            3 numbers; (0, inf)                     req.
obstacle (box) center, halfExtents          3 numbers; each in (0, inf). Or min, max req.
                                            (read as center = (min+max)/2,
                                            halfExtents = (max-min)/2, saved so)
obstacle (capsule) a, b, radius             3 numbers; 3 numbers; (0, inf)          req.
obstacle.friction                           [0, inf) (Coulomb mu)                   0
obstacle.contactDistance                    [0, inf)                                0
solver.newton.newton_iterations             integer in [1, 1000]                    10
solver.newton.                              number; <= 0 disables the test          1e-8
  correction_tolerance_threshold
solver.newton.residual_tolerance_threshold  number; <= 0 disables the test          1e-8
solver.newton.                              bool (alias should_diverge_..., both    false
  shoud_diverge_when_residual_is_growing    given must agree)
solver.newton.warm_start / printLog         bool                                    true / false
solver.newton.line_search *                 bool                                    false
solver.newton.backtrack_invalid_steps *     bool (true: a step that inverts an          true
                                            element or gives a NaN residual turns
                                            the line search on; false: Caribou's
                                            plain Newton, NaN ends the solve)
solver.newton.load_steps *                  integer in [1, 1000]                    1
solver.newton.correction *                  equilibrium | linear                    "equilibrium"
                                            (equilibrium: constrained Newton until
                                            the Newton tolerances; linear: SOFA's
                                            single correction)
solver.linear.type                          direct | cg                             "direct"
solver.linear.backend * (direct)            auto | pardiso | scipy                  "auto"
solver.linear.maximum_number_of_iterations  integer in [1, 100000] (cg)             1000
solver.linear.residual_tolerance_threshold  (0, inf) (cg, relative to ||b||)        1e-8
solver.linear.preconditioning_method (cg)   None | Identity | Diagonal |            "Diagonal"
                                            IncompleteCholesky | LastFactorization
solver.constraint.type                      BlockGaussSeidel | ImprovedJacobi |     "BlockGaussSeidel"
                                            NNCG | exact
solver.constraint.maxIterations             integer in [1, 1e7]                     1000
solver.constraint.tolerance                 (0, inf)                                1e-6
solver.constraint.sor                       (0, 2)                                  1.0
solver.constraint.scaleTolerance,           bool                                    true, false
  allVerified
solver.constraint.regularizationTerm        [0, inf)                                0
solver.constraint.computeConstraintForces   bool                                    false
solver.constraint.useSpectralCorrection     bool                                    false
solver.constraint.spectralCorrectionFactor  (0, 10]                                 1.0
solver.constraint.useConjugateResidue       bool                                    false
solver.constraint.                          (0, 1000]                               10.0
  conjugateResidueSpeedFactor
solver.constraint.sofaSpectralRadius *      bool (SOFA's unit-dependent rho)        false
solver.dynamic.implicitVelocity (alpha)     (0, 1]                                  1.0
solver.dynamic.implicitPosition (beta)      (0, 1]                                  1.0
solver.dynamic.rayleighMass,                [0, inf)                                0, 0
  rayleighStiffness
drag.compliance *                           (0, inf) length/force                   1e-3
attachment.name *                           name, unique among actuators/effectors/ "attachment<i>"
                                            attachments
attachment.bodyA, bodyB *                   names of two different bodies           req.
attachment.indicesA + indicesB *            node ids of bodyA / bodyB, same length  one of the two
  | box *                                   6 numbers: the nodes of bodyA in the box
                                            glued to the nearest nodes of bodyB
attachment.compliance *                     [0, inf) length/force (0: hard)         0
=========================================== ======================================= ==========================

Why these defaults: they are chosen for an interactive simulator, not copied from SOFA. SOFA's
GenericConstraintSolver uses ``tolerance = 1e-3`` scaled by the number of constraints (``scaleTolerance``);
1e-6 keeps actuated scenes visibly exact. Caribou's ``newton_iterations = 1`` and tolerances 1e-5 are a single
linearised step; 10 iterations at 1e-8 let a nonlinear model converge (Newton stops as soon as it has).
Caribou's CG defaults (25 iterations, Identity preconditioner) stall on meshes of a few thousand nodes, hence
1000 and Diagonal. ``drag.compliance = 1e-3`` is a 1000 N/m spring in SI and the same 1000 mN/mm in mm-kg-s
(mm/mN = m/N): the grabbed point follows the mouse closely without making W singular. ``gravity`` follows
``units`` because a scene that switches to millimetres would otherwise fall 1000 times too slowly.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from softsim.mechanics.materials import YOUNG_MODULUS_RANGE
from softsim.mechanics.scene.kinds import (
    Box,
    Choice,
    FilePath,
    Flag,
    Flags,
    IndexList,
    Integer,
    Kind,
    Name,
    Real,
    Text,
    Vector,
    VectorList,
)

__all__ = [
    "SceneError",
    "Table",
    "TableList",
    "SceneSettings",
    "SphereSpec",
    "HalfspaceSpec",
    "RegionSpec",
    "ForceSpec",
    "MaterialRegionSpec",
    "MaterialSpec",
    "CableSpec",
    "CavitySpec",
    "EffectorSpec",
    "BodySpec",
    "ObstacleSpec",
    "NewtonSpec",
    "LinearSpec",
    "ConstraintSpec",
    "DynamicSpec",
    "SolverSpec",
    "DragSpec",
    "SceneSpec",
    "AttachmentSpec",
    "MODELS",
    "EXCLUSIVE_KEYS",
    "schema_fields",
]


class SceneError(ValueError):
    """An invalid scene. ``errors`` holds one message per problem (``file: key.path: what is wrong``); the
    exception's message is those lines joined by newlines."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


class Table(Kind):
    """A sub-table parsed into the dataclass ``cls``."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.description = "a table"


class TableList(Kind):
    """An array of tables (``[[key]]``) parsed into a list of ``cls``."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.description = "an array of tables"


def _key(kind: Kind, default: Any = MISSING, *, factory: Any = MISSING, toml: str | None = None,
         alias: str | None = None, compare: bool = True) -> Any:
    """A dataclass field read from the TOML key ``toml`` (default: the attribute name)."""
    metadata = {"kind": kind, "toml": toml, "alias": alias}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata, compare=compare)
    return field(default=default, metadata=metadata, compare=compare)


def schema_fields(cls: type) -> list[tuple[str, str, Kind, str | None, bool]]:
    """``(toml_key, attribute, kind, alias, required)`` for every file key of the dataclass ``cls``."""
    result = []
    for f in fields(cls):
        kind = f.metadata.get("kind")
        if kind is None:
            continue
        required = f.default is MISSING and f.default_factory is MISSING
        result.append((f.metadata["toml"] or f.name, f.name, kind, f.metadata["alias"], required))
    return result


MODELS = ("linear", "corotational", "stvk", "neohookean", "stable_neohookean")
_POISSON = Real(-1.0, 0.5, lo_open=True, hi_open=True)
_POSITIVE = Real(0.0, lo_open=True)
_YOUNG = Real(*YOUNG_MODULUS_RANGE)
#: Upper bounds of the iteration counts: a value beyond them is a typo, not a setting (a frame would not end)
MAX_NEWTON_ITERATIONS = 1000
MAX_LOAD_STEPS = 1000
MAX_CG_ITERATIONS = 100_000
_NON_NEGATIVE = Real(0.0)
_BOUND = Real(allow_inf=True)
_VEC3 = Vector(3)


@dataclass(kw_only=True)
class SceneSettings:
    """``[scene]``: name, unit system, static or dynamic mode, time step [s], gravity [length/s^2] (3,)."""

    name: str = _key(Text(), "untitled")
    units: str = _key(Choice("SI", "mm-kg-s"), "SI")
    mode: str = _key(Choice("static", "dynamic"), "static")
    dt: float = _key(_POSITIVE, 0.01)
    gravity: tuple[float, float, float] = _key(_VEC3, (0.0, -9.81, 0.0))


@dataclass(kw_only=True)
class SphereSpec:
    """``sphere = {center = [x, y, z], radius = r}``."""

    center: tuple[float, float, float] = _key(_VEC3)
    radius: float = _key(_POSITIVE)


@dataclass(kw_only=True)
class HalfspaceSpec:
    """``halfspace = {point = [..], normal = [..]}``: the nodes with ``(x - point) . normal >= 0``."""

    point: tuple[float, float, float] = _key(_VEC3)
    normal: tuple[float, float, float] = _key(Vector(3, nonzero=True))


#: The region selector keys; a region sets exactly one of them.
REGION_KEYS = ("box", "sphere", "set", "indices", "halfspace")


@dataclass(kw_only=True)
class RegionSpec:
    """A node selection (``[[body.fixed]]``): exactly one of ``box``, ``sphere``, ``set``, ``indices``,
    ``halfspace``. ``box`` is inclusive (SOFA BoxROI); ``set`` names a point set of the mesh."""

    box: tuple[float, ...] | None = _key(Box(), None)
    sphere: SphereSpec | None = _key(Table(SphereSpec), None)
    set: str | None = _key(Text(), None)
    indices: tuple[int, ...] | None = _key(IndexList(), None)
    halfspace: HalfspaceSpec | None = _key(Table(HalfspaceSpec), None)

    @property
    def selector(self) -> str:
        """The selector key in use (``"box"``, ``"sphere"``, ...)."""
        return next(k for k in REGION_KEYS if getattr(self, k) is not None)

    def to_selector(self) -> dict[str, Any]:
        """The one-key dict of ``meshes.regions.select_nodes``: ``{"sphere": {"center": c, "radius": r}}``."""
        key = self.selector
        value = getattr(self, key)
        if isinstance(value, SphereSpec | HalfspaceSpec):
            value = {f.name: getattr(value, f.name) for f in fields(value)}
        return {key: value}


@dataclass(kw_only=True)
class ForceSpec(RegionSpec):
    """``[[body.force]]``: ``totalForce`` [force] (3,) spread equally over a region's nodes, or a follower
    ``pressure`` [force/length^2] on the triangle set ``set``."""

    totalForce: tuple[float, float, float] | None = _key(_VEC3, None)
    pressure: float | None = _key(Real(), None)


@dataclass(kw_only=True)
class MaterialRegionSpec:
    """``[[body.material.region]]``: overrides for the tets with centroid in ``box`` (``None``: inherit)."""

    box: tuple[float, ...] = _key(Box())
    model: str | None = _key(Choice(*MODELS), None)
    youngModulus: float | None = _key(_YOUNG, None)
    poissonRatio: float | None = _key(_POISSON, None)


@dataclass(kw_only=True)
class MaterialSpec:
    """``[body.material]``: constitutive model, Young's modulus [pressure], Poisson ratio, mass, the
    corotational rotation method and tangent. ``rotation_method``: SOFA TetrahedronFEMForceField's
    ``large``, ``polar``, ``svd`` compute SOFA's rotations (a frame of the current edges composed with the
    same frame at rest); softsim's ``polarF`` (default) and ``svdF`` take the rotation of F, independent of
    node order and rest orientation, their force the gradient of the corotated energy (see
    :class:`mechanics.fem.TetElasticity`). Tangent: ``"sofa"``: R K0 R^T; ``"exact"``: the corotated
    energy's Hessian, ``polarF``/``svdF`` only, quadratic Newton but indefinite under compression;
    ``"exact_spd"``: the same with its negative eigenvalues clamped to 0, positive semi-definite)."""

    model: str = _key(Choice(*MODELS), "corotational")
    youngModulus: float = _key(_YOUNG)
    poissonRatio: float = _key(_POISSON)
    totalMass: float | None = _key(_POSITIVE, None)
    massDensity: float | None = _key(_POSITIVE, None)
    rotation_method: str = _key(Choice("polarF", "svdF", "large", "polar", "svd"), "polarF")
    corotationalTangent: str = _key(Choice("sofa", "exact", "exact_spd"), "sofa")
    regions: list[MaterialRegionSpec] = _key(TableList(MaterialRegionSpec), factory=list, toml="region")


@dataclass(kw_only=True)
class CableSpec:
    """``[[body.cable]]``: SoftRobots CableConstraint. ``points`` (k, 3) are mapped into the body; ``indices``
    are node ids. Optional bounds are ``None`` when unset (SoftRobots: used only when set)."""

    name: str = _key(Name())
    points: tuple[tuple[float, float, float], ...] | None = _key(VectorList(), None)
    indices: tuple[int, ...] | None = _key(IndexList(), None)
    pullPoint: tuple[float, float, float] | None = _key(_VEC3, None)
    hasPullPoint: bool = _key(Flag(), True)
    cableInitialLength: float | None = _key(_POSITIVE, None)
    valueType: str = _key(Choice("displacement", "force"), "displacement")
    value: float = _key(Real(), 0.0)
    minForce: float | None = _key(_BOUND, None)
    maxForce: float | None = _key(_BOUND, None)
    maxPositiveDisp: float | None = _key(_NON_NEGATIVE, None)
    maxNegativeDisp: float | None = _key(_NON_NEGATIVE, None)
    maxDispVariation: float | None = _key(_POSITIVE, None)

    @property
    def n_points(self) -> int:
        return len(self.points if self.points is not None else self.indices or ())


@dataclass(kw_only=True)
class CavitySpec:
    """``[[body.cavity]]``: SoftRobots SurfacePressureConstraint on a surface file or a triangle set.
    ``surface`` is the path as written; ``surface_path`` the resolved absolute path."""

    name: str = _key(Name())
    surface: str | None = _key(FilePath(), None, compare=False)
    set: str | None = _key(Text(), None)
    valueType: str = _key(Choice("pressure", "volumeGrowth"), "pressure")
    value: float = _key(Real(), 0.0)
    minPressure: float | None = _key(_BOUND, None)
    maxPressure: float | None = _key(_BOUND, None)
    minVolumeGrowth: float | None = _key(_BOUND, None)
    maxVolumeGrowth: float | None = _key(_BOUND, None)
    maxPressureVariation: float | None = _key(_POSITIVE, None)
    maxVolumeGrowthVariation: float | None = _key(_POSITIVE, None)
    flipNormal: bool = _key(Flag(), False)
    surface_path: Path | None = None


@dataclass(kw_only=True)
class EffectorSpec:
    """``[[body.effector]]``: SoftRobots PositionEffector. ``position`` (k, 3) mapped points or ``indices``;
    ``effectorGoal`` one target per point (``None``: no target)."""

    name: str = _key(Name())
    position: tuple[tuple[float, float, float], ...] | None = _key(VectorList(), None)
    indices: tuple[int, ...] | None = _key(IndexList(), None)
    effectorGoal: tuple[tuple[float, float, float], ...] | None = _key(VectorList(), None)
    useDirections: tuple[int, int, int] = _key(Flags(3), (1, 1, 1))
    weight: float = _key(_POSITIVE, 1.0)

    @property
    def n_points(self) -> int:
        return len(self.position if self.position is not None else self.indices or ())


@dataclass(kw_only=True)
class BodySpec:
    """``[[body]]``: a tetrahedral mesh with its material, boundary conditions, loads and actuators.
    ``mesh`` is the path as written in the file; ``mesh_path`` the resolved absolute path. The placement is
    ``x = R(rotation) (scale X) + translation`` with ``rotation`` in degrees."""

    name: str = _key(Name())
    mesh: str = _key(FilePath(), compare=False)
    scale: float = _key(_POSITIVE, 1.0)
    translation: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0))
    rotation: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0))
    material: MaterialSpec = _key(Table(MaterialSpec))
    fixed: list[RegionSpec] = _key(TableList(RegionSpec), factory=list)
    forces: list[ForceSpec] = _key(TableList(ForceSpec), factory=list, toml="force")
    cables: list[CableSpec] = _key(TableList(CableSpec), factory=list, toml="cable")
    cavities: list[CavitySpec] = _key(TableList(CavitySpec), factory=list, toml="cavity")
    effectors: list[EffectorSpec] = _key(TableList(EffectorSpec), factory=list, toml="effector")
    mesh_path: Path | None = None


#: Keys of which a table sets exactly one (or, for ForceSpec's region, one with totalForce). Setting one of
#: them with ``set_value`` unsets the others of its group.
EXCLUSIVE_KEYS: dict[type, tuple[tuple[str, ...], ...]] = {
    RegionSpec: (REGION_KEYS,),
    ForceSpec: (REGION_KEYS, ("totalForce", "pressure")),
    CableSpec: (("points", "indices"),),
    CavitySpec: (("surface", "set"),),
    EffectorSpec: (("position", "indices"),),
}

#: The keys each obstacle type uses besides name, type, friction and contactDistance.
OBSTACLE_KEYS = {
    "plane": ("point", "normal"),
    "sphere": ("center", "radius"),
    "box": ("center", "halfExtents"),
    "capsule": ("a", "b", "radius"),
}


@dataclass(kw_only=True)
class ObstacleSpec:
    """``[[obstacle]]``: a static rigid shape; only the keys of its ``type`` are set (``OBSTACLE_KEYS``)."""

    name: str = _key(Name())
    type: str = _key(Choice(*OBSTACLE_KEYS))
    point: tuple[float, float, float] | None = _key(_VEC3, None)
    normal: tuple[float, float, float] | None = _key(Vector(3, nonzero=True), None)
    center: tuple[float, float, float] | None = _key(_VEC3, None)
    radius: float | None = _key(_POSITIVE, None)
    halfExtents: tuple[float, float, float] | None = _key(Vector(3, positive=True), None)
    a: tuple[float, float, float] | None = _key(_VEC3, None)
    b: tuple[float, float, float] | None = _key(_VEC3, None)
    friction: float = _key(_NON_NEGATIVE, 0.0)
    contactDistance: float = _key(_NON_NEGATIVE, 0.0)


@dataclass(kw_only=True)
class NewtonSpec:
    """``[solver.newton]``: Caribou LegacyStaticODESolver parameters plus softsim's additions."""

    newton_iterations: int = _key(Integer(1, MAX_NEWTON_ITERATIONS), 10)
    correction_tolerance_threshold: float = _key(Real(), 1e-8)
    residual_tolerance_threshold: float = _key(Real(), 1e-8)
    shoud_diverge_when_residual_is_growing: bool = _key(
        Flag(), False, alias="should_diverge_when_residual_is_growing"
    )
    warm_start: bool = _key(Flag(), True)
    printLog: bool = _key(Flag(), False)
    line_search: bool = _key(Flag(), False)
    backtrack_invalid_steps: bool = _key(Flag(), True)
    load_steps: int = _key(Integer(1, MAX_LOAD_STEPS), 1)
    correction: str = _key(Choice("equilibrium", "linear"), "equilibrium")


@dataclass(kw_only=True)
class LinearSpec:
    """``[solver.linear]``: the linear solver of each Newton iteration (the cg keys are kept when
    ``type = "direct"`` and the reverse, so that switching type live keeps the settings)."""

    type: str = _key(Choice("direct", "cg"), "direct")
    backend: str = _key(Choice("auto", "pardiso", "scipy"), "auto")
    maximum_number_of_iterations: int = _key(Integer(1, MAX_CG_ITERATIONS), 1000)
    residual_tolerance_threshold: float = _key(_POSITIVE, 1e-8)
    preconditioning_method: str = _key(
        Choice("None", "Identity", "Diagonal", "IncompleteCholesky", "LastFactorization"), "Diagonal"
    )


@dataclass(kw_only=True)
class ConstraintSpec:
    """``[solver.constraint]``: GenericConstraintSolver / ImprovedJacobi data fields (SOFA names)."""

    type: str = _key(Choice("BlockGaussSeidel", "ImprovedJacobi", "NNCG", "exact"), "BlockGaussSeidel")
    maxIterations: int = _key(Integer(1, 10_000_000), 1000)
    tolerance: float = _key(_POSITIVE, 1e-6)
    sor: float = _key(Real(0.0, 2.0, lo_open=True, hi_open=True), 1.0)
    scaleTolerance: bool = _key(Flag(), True)
    allVerified: bool = _key(Flag(), False)
    regularizationTerm: float = _key(_NON_NEGATIVE, 0.0)
    computeConstraintForces: bool = _key(Flag(), False)
    useSpectralCorrection: bool = _key(Flag(), False)
    spectralCorrectionFactor: float = _key(Real(0.0, 10.0, lo_open=True), 1.0)
    useConjugateResidue: bool = _key(Flag(), False)
    conjugateResidueSpeedFactor: float = _key(Real(0.0, 1000.0, lo_open=True), 10.0)
    sofaSpectralRadius: bool = _key(Flag(), False)


@dataclass(kw_only=True)
class DynamicSpec:
    """``[solver.dynamic]``: Compliant-style implicit integration (alpha, beta), Rayleigh damping and the
    compliance factor of the constraint correction."""

    implicitVelocity: float = _key(Real(0.0, 1.0, lo_open=True), 1.0)
    implicitPosition: float = _key(Real(0.0, 1.0, lo_open=True), 1.0)
    rayleighMass: float = _key(_NON_NEGATIVE, 0.0)
    rayleighStiffness: float = _key(_NON_NEGATIVE, 0.0)


@dataclass(kw_only=True)
class SolverSpec:
    """``[solver]``: the four solver tables."""

    newton: NewtonSpec = _key(Table(NewtonSpec), factory=NewtonSpec)
    linear: LinearSpec = _key(Table(LinearSpec), factory=LinearSpec)
    constraint: ConstraintSpec = _key(Table(ConstraintSpec), factory=ConstraintSpec)
    dynamic: DynamicSpec = _key(Table(DynamicSpec), factory=DynamicSpec)


@dataclass(kw_only=True)
class DragSpec:
    """``[drag]``: the mouse drag constraint; ``compliance`` [length/force] is added to W's diagonal."""

    compliance: float = _key(_POSITIVE, 1e-3)


@dataclass(kw_only=True)
class AttachmentSpec:
    """``[[attachment]]``: glue nodes of ``bodyA`` to nodes of ``bodyB`` (SOFA BilateralLagrangianConstraint
    between two bodies). Either ``indicesA`` and ``indicesB`` (paired node ids) or ``box`` (the nodes of
    ``bodyA`` in the box, each paired with the nearest node of ``bodyB``). The rest offset between the two
    nodes of a pair is kept; ``compliance`` > 0 makes the glue a spring of stiffness 1/compliance."""

    name: str = _key(Name())
    bodyA: str = _key(Name())
    bodyB: str = _key(Name())
    indicesA: tuple[int, ...] | None = _key(IndexList(), None)
    indicesB: tuple[int, ...] | None = _key(IndexList(), None)
    box: tuple[float, float, float, float, float, float] | None = _key(Box(), None)
    compliance: float = _key(_NON_NEGATIVE, 0.0)


@dataclass(kw_only=True)
class SceneSpec:
    """A validated scene. ``source`` is the file it was read from (``"<string>"`` otherwise), ``base_dir``
    the directory relative paths were resolved against, ``warnings`` what is allowed but probably unintended,
    ``files_checked`` whether referenced files were checked to exist (``set_value`` does the same)."""

    scene: SceneSettings = _key(Table(SceneSettings), factory=SceneSettings)
    bodies: list[BodySpec] = _key(TableList(BodySpec), factory=list, toml="body")
    obstacles: list[ObstacleSpec] = _key(TableList(ObstacleSpec), factory=list, toml="obstacle")
    attachments: list[AttachmentSpec] = _key(TableList(AttachmentSpec), factory=list, toml="attachment")
    solver: SolverSpec = _key(Table(SolverSpec), factory=SolverSpec)
    drag: DragSpec = _key(Table(DragSpec), factory=DragSpec)
    source: str = field(default="<string>", compare=False)
    base_dir: Path = field(default_factory=Path.cwd, compare=False)
    warnings: list[str] = field(default_factory=list, compare=False)
    files_checked: bool = field(default=True, compare=False)
