"""The scene file as typed data: dataclasses whose fields are the TOML keys, each declared once.

Every key is declared by one ``_key(...)`` call: its kind (type and range, :mod:`mechanics.scene.kinds`), its
default, its unit (a quantity of :mod:`mechanics.units`, shown in the scene's unit system), its help text and,
when it is used only with some settings, a :class:`When` condition. The loader, the writer, the live editor,
the solvers' parameter checks (:func:`check_parameters`), the GUI's widgets and tooltips and the key table of
``docs/scene-format.md`` (:mod:`mechanics.scene.reference`) all read these declarations. Parameter names
follow SOFA's, SoftRobots' and Caribou's data fields verbatim (``youngModulus``, ``newton_iterations``,
``maxDispVariation``). Lists keep the file's singular table name as their key (``[[body.cable]]``) and a
plural attribute name (``BodySpec.cables``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.materials import MODELS, YOUNG_MODULUS_RANGE
from softsim.mechanics.scene.kinds import (
    Box,
    Choice,
    FilePath,
    Flag,
    Flags,
    IndexList,
    Integer,
    Invalid,
    Keyframes,
    Kind,
    Name,
    NameList,
    Real,
    Text,
    Vector,
    VectorList,
    suggest,
)

__all__ = [
    "SceneError",
    "Table",
    "TableList",
    "SceneSettings",
    "SphereSpec",
    "HalfspaceSpec",
    "RegionSpec",
    "FixedSpec",
    "ForceSpec",
    "MaterialRegionSpec",
    "StackedMaterialSpec",
    "MaterialSpec",
    "CableSpec",
    "CavitySpec",
    "EffectorSpec",
    "UnilateralPlaneSpec",
    "CenterEffectorSpec",
    "ControllerSpec",
    "BodySpec",
    "ObstacleSpec",
    "NewtonSpec",
    "LinearSpec",
    "ConstraintSpec",
    "DynamicSpec",
    "SolverSpec",
    "InverseSpec",
    "QP_SOLVERS",
    "DragSpec",
    "SceneSpec",
    "AttachmentSpec",
    "CollisionSpec",
    "CollisionPairSpec",
    "MODELS",
    "EXCLUSIVE_KEYS",
    "schema_fields",
    "Declaration",
    "When",
    "ByValue",
    "declarations",
    "check_parameters",
    "defaults",
    "declared_values",
    "OBSTACLE_TYPES",
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


@dataclass(frozen=True)
class When:
    """A key used only while the key ``key`` has one of ``values``: a sibling key of the same table, or a full
    path from the scene's root when it contains a dot (``scene.mode``)."""

    key: str
    values: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.key} = {' | '.join(self.values)}"


def when(key: str, *values: str) -> When:
    return When(key, values)


@dataclass(frozen=True)
class ByValue:
    """A unit that depends on another key of the same table: ``ByValue("valueType", {"force": "force", ...})``."""

    key: str
    quantities: dict[str, str]

    def quantity(self, table: Any) -> str:
        return self.quantities[getattr(table, self.key)]


@dataclass(frozen=True)
class Declaration:
    """One scene key: TOML ``key`` (and ``alias``), dataclass ``attribute``, ``kind``, ``default`` (MISSING when
    required), ``unit`` (a quantity name of :mod:`mechanics.units`, a :class:`ByValue` or None), ``help`` and
    ``when`` (None: always used)."""

    key: str
    attribute: str
    kind: Kind
    default: Any
    required: bool
    help: str
    unit: str | ByValue | None
    when: When | None
    alias: str | None

    def unit_of(self, table: Any) -> str | None:
        """The quantity of this key's value in ``table`` (resolving a :class:`ByValue`)."""
        return self.unit.quantity(table) if isinstance(self.unit, ByValue) else self.unit


def _key(kind: Kind, default: Any = MISSING, *, help: str = "", unit: str | ByValue | None = None,  # noqa: A002
         when: When | None = None, factory: Any = MISSING, toml: str | None = None, alias: str | None = None,
         compare: bool = True) -> Any:
    """The declaration of a key read from TOML key ``toml`` (default: the attribute name)."""
    metadata = {"kind": kind, "toml": toml, "alias": alias, "help": help, "unit": unit, "when": when}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata, compare=compare)
    return field(default=default, metadata=metadata, compare=compare)


@functools.cache
def declarations(cls: type) -> tuple[Declaration, ...]:
    """The declared keys of the dataclass ``cls``, in file order (computed once per class)."""
    result = []
    for f in fields(cls):
        meta = f.metadata
        if "kind" not in meta:
            continue
        required = f.default is MISSING and f.default_factory is MISSING
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        result.append(Declaration(meta["toml"] or f.name, f.name, meta["kind"], default, required, meta["help"],
                                  meta["unit"], meta["when"], meta["alias"]))
    return tuple(result)


def schema_fields(cls: type) -> list[tuple[str, str, Kind, str | None, bool]]:
    """``(toml_key, attribute, kind, alias, required)`` for every file key of the dataclass ``cls``."""
    return [(d.key, d.attribute, d.kind, d.alias, d.required) for d in declarations(cls)]


def check_parameters(cls: type, owner: str, values: dict[str, Any], *, allowed: set[str] | None = None
                     ) -> dict[str, Any]:
    """``values`` (TOML key or alias -> value) checked against the declarations of ``cls``, as the loader checks
    them: returns the converted values by attribute name, or raises ParameterError ``owner: key: message`` with
    the loader's message. ``allowed`` restricts the keys (e.g. to one solver type's); None (an optional key's
    unset value) is accepted for keys whose default is None."""
    by_key = {}
    for declaration in declarations(cls):
        if allowed is None or declaration.key in allowed:
            by_key[declaration.key] = declaration
            if declaration.alias:
                by_key[declaration.alias] = declaration
    converted = {}
    for key, value in values.items():
        declaration = by_key.get(key)
        if declaration is None:
            hint = suggest(key, list(by_key)) or "; allowed: " + ", ".join(sorted(by_key))
            raise ParameterError(f"{owner}: unknown parameter {key!r}{hint}")
        if value is None and declaration.default is None:
            converted[declaration.attribute] = None
            continue
        try:
            converted[declaration.attribute] = declaration.kind.convert(value)
        except Invalid as error:
            raise ParameterError(f"{owner}: {key}: {error}") from None
    return converted


def declared_values(table: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The values of the declared keys of the spec object ``table`` (only ``keys`` when given), by TOML key."""
    keys = None if keys is None else set(keys)
    return {d.key: getattr(table, d.attribute) for d in declarations(type(table)) if keys is None or d.key in keys}


def defaults(cls: type, keys: set[str] | None = None) -> dict[str, Any]:
    """The declared defaults of ``cls`` by attribute (only ``keys`` when given)."""
    return {d.attribute: d.default for d in declarations(cls) if not d.required and (keys is None or d.key in keys)}


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
    """``[scene]``: name, unit system, static or dynamic mode, time step, gravity."""

    name: str = _key(Text(), "untitled", help="Shown in the window title and in outputs; default: the file name.")
    units: str = _key(Choice("SI", "mm-kg-s"), "SI",
                      help="Unit system of every number in the file (mm-kg-s: SoftRobots' mm, mN, kPa).")
    mode: str = _key(Choice("static", "dynamic"), "static",
                     help="static: each frame is an equilibrium; dynamic: each frame is one implicit time step.")
    dt: float = _key(_POSITIVE, 0.01, unit="time", when=when("scene.mode", "dynamic"),
                     help="Time step of dynamic mode.")
    gravity: tuple[float, float, float] = _key(
        _VEC3, (0.0, -9.81, 0.0), unit="acceleration",
        help="Gravity vector; default [0, -9.81, 0] in SI and [0, -9810, 0] in mm-kg-s.")


@dataclass(kw_only=True)
class SphereSpec:
    """``sphere = {center = [x, y, z], radius = r}``."""

    center: tuple[float, float, float] = _key(_VEC3, unit="length", help="Centre of the sphere.")
    radius: float = _key(_POSITIVE, unit="length", help="Radius of the sphere.")


@dataclass(kw_only=True)
class HalfspaceSpec:
    """``halfspace = {point = [..], normal = [..]}``: the nodes with ``(x - point) . normal >= 0``."""

    point: tuple[float, float, float] = _key(_VEC3, unit="length", help="A point on the bounding plane.")
    normal: tuple[float, float, float] = _key(Vector(3, nonzero=True),
                                              help="Normal of the plane, pointing into the selected side.")


#: The region selector keys; a region sets exactly one of them.
REGION_KEYS = ("box", "sphere", "set", "indices", "halfspace")
_ONE_SELECTOR = " Exactly one of box, sphere, set, indices, halfspace."


@dataclass(kw_only=True)
class RegionSpec:
    """A node selection (``[[body.fixed]]``): exactly one of ``box``, ``sphere``, ``set``, ``indices``,
    ``halfspace``. ``box`` is inclusive (SOFA BoxROI); ``set`` names a point set of the mesh."""

    box: tuple[float, ...] | None = _key(
        Box(), None, unit="length", help="The nodes inside the box, bounds included (SOFA BoxROI)." + _ONE_SELECTOR)
    sphere: SphereSpec | None = _key(Table(SphereSpec), None, help="The nodes inside a sphere.")
    set: str | None = _key(Text(), None, help="A point set of the mesh file, by name.")
    indices: tuple[int, ...] | None = _key(IndexList(), None, help="Node ids (0-based, file order).")
    halfspace: HalfspaceSpec | None = _key(Table(HalfspaceSpec), None, help="The nodes on one side of a plane.")

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
class FixedSpec(RegionSpec):
    """``[[body.fixed]]``: a region of fixed nodes (one selector), held at their rest positions ``X`` moved
    rigidly: ``x = center + R(axis, angle) (X - center) + translation`` (SOFA's RestShapeSpringsForceField on
    moved rest positions: the gripper's arrow keys; a rigid frame driving the nodes through a RigidMapping:
    Tripod's servo arms). With the defaults the nodes stay at rest."""

    translation: tuple[float, float, float] = _key(
        _VEC3, (0.0, 0.0, 0.0), unit="length",
        help="The region's nodes are held at rest + translation, after the rotation by angle (edited live: the "
             "nodes move there).")
    angle: float = _key(Real(), 0.0, unit="angle",
                        help="Rotation of the region's nodes about axis through center, right-handed, in degrees "
                             "(a servo's angle; edited live like translation).")
    axis: tuple[float, float, float] = _key(Vector(3, nonzero=True), (1.0, 0.0, 0.0),
                                            help="Direction of the rotation axis (any length but zero).")
    center: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="length",
                                              help="A point on the rotation axis (the frame's origin; placed "
                                                   "coordinates, like the nodes).")
    actuated: bool = _key(Flag(), False,
                          help="Inverse mode: the inverse solver chooses angle to bring the effectors to their goals "
                               "(SoftRobots.Inverse JointActuator on a servo); angle is then its current value.")
    minAngle: float | None = _key(Real(), None, unit="angle", when=when("actuated", "true"),
                                  help="Smallest angle the inverse solver may choose." + " Unset: no bound.")
    maxAngle: float | None = _key(Real(), None, unit="angle", when=when("actuated", "true"),
                                  help="Largest angle the inverse solver may choose." + " Unset: no bound.")
    maxAngleVariation: float | None = _key(Real(0.0, lo_open=True), None, unit="angle",
                                           when=when("actuated", "true"),
                                           help="Largest change of angle per inverse frame." + " Unset: no bound.")


@dataclass(kw_only=True)
class RigidGroupSpec(RegionSpec):
    """``[[body.rigidGroup]]``: the region's nodes (one selector, at least 3 not on one line) move together as one
    rigid piece, carried by a frame that has no mass of its own and that nothing drives (SOFA: a free Rigid3
    frame under a RigidMapping, Tripod's centre piece); the nodes keep their masses
    (mechanics.constraints.rigid_group)."""


@dataclass(kw_only=True)
class ForceSpec(RegionSpec):
    """``[[body.force]]``: ``totalForce`` spread equally over a region's nodes, or a follower ``pressure`` on the
    triangle set ``set``."""

    totalForce: tuple[float, float, float] | None = _key(
        _VEC3, None, unit="force", help="Force shared equally by the selected nodes (with a region selector).")
    pressure: float | None = _key(Real(), None, unit="pressure",
                                  help="Follower pressure on the triangle set named by set (instead of totalForce).")


@dataclass(kw_only=True)
class MaterialRegionSpec:
    """``[[body.material.region]]``: overrides for the tets with centroid in ``box`` (``None``: inherit)."""

    box: tuple[float, ...] = _key(Box(), unit="length", help="The tetrahedra whose centroid lies in the box.")
    model: str | None = _key(Choice(*MODELS), None, help="Must equal the body's model (kept for SOFA scenes).")
    youngModulus: float | None = _key(_YOUNG, None, unit="pressure", help="Young's modulus in the region.")
    poissonRatio: float | None = _key(_POISSON, None, help="Poisson's ratio in the region.")


@dataclass(kw_only=True)
class StackedMaterialSpec:
    """``[[body.material.stacked]]``: a second force field ADDED on some elements (SOFA: another
    TetrahedronFEMForceField on a sub-topology, as PneunetGripper stiffens its bottom layer). ``box`` selects
    tetrahedra as BoxROI's tetrahedraInROI does (all four nodes inside with ``strict``, else the centre),
    ``tetrahedra`` gives element ids."""

    box: tuple[float, ...] | None = _key(
        Box(), None, unit="length", help="The tetrahedra in the box, bounds included (SOFA BoxROI's "
                                         "tetrahedraInROI, see strict); or tetrahedra.")
    strict: bool = _key(Flag(), True, help="With box: true, the tetrahedra whose four nodes lie in it (BoxROI strict, "
                                           "SOFA's default); false, those whose centre lies in it.")
    tetrahedra: tuple[int, ...] | None = _key(IndexList(), None, help="Element ids (0-based, file order); or box.")
    model: str | None = _key(Choice(*MODELS), None,
                             help="The added field's model; unset: the body's (it must equal the body's model).")
    youngModulus: float = _key(_YOUNG, unit="pressure", help="Young's modulus of the added field.")
    poissonRatio: float = _key(_POISSON, help="Poisson's ratio of the added field.")
    rotation_method: str | None = _key(
        Choice("polarF", "svdF", "large", "polar", "svd"), None,
        help="Corotational rotations of the added field; unset: the body's (it must equal the body's).")


@dataclass(kw_only=True)
class MaterialSpec:
    """``[body.material]``: constitutive model, Young's modulus, Poisson ratio, mass, and the corotational
    rotation method and tangent (:class:`mechanics.fem.TetElasticity`)."""

    model: str = _key(Choice(*MODELS), "corotational", help="Constitutive model of the elements.")
    youngModulus: float = _key(_YOUNG, unit="pressure", help="Young's modulus.")
    poissonRatio: float = _key(_POISSON, help="Poisson's ratio (0.5 would be incompressible).")
    totalMass: float | None = _key(
        _POSITIVE, None, unit="mass", help="Mass lumped at the nodes (at most one of totalMass, massDensity).")
    massDensity: float | None = _key(_POSITIVE, None, unit="density", help="Mass per volume.")
    rotation_method: str = _key(
        Choice("polarF", "svdF", "large", "polar", "svd"), "polarF", when=when("model", "corotational"),
        help="Element rotations: polarF/svdF take the rotation of F (frame-invariant); large/polar/svd are "
             "SOFA TetrahedronFEMForceField's formulas.")
    corotationalTangent: str = _key(
        Choice("sofa", "exact", "exact_spd"), "exact", when=when("model", "corotational"),
        help="exact: the consistent Jacobian of the force in static frames with the direct or async solver "
             "(quadratic Newton; unsymmetric for large/polar/svd, which async solves by GMRES); dynamic mode, "
             "the cg solver and the inverse model (except its frames with polarF/svdF that end at the "
             "equilibrium, with the direct solver) use sofa's; sofa: SOFA's "
             "R K0 R^T, which omits the rotations' derivative (linear convergence); "
             "exact_spd: the exact tangent with negative eigenvalues clamped to 0.")
    regions: list[MaterialRegionSpec] = _key(TableList(MaterialRegionSpec), factory=list, toml="region",
                                             help="Regions with other youngModulus or poissonRatio.")
    stacked: list[StackedMaterialSpec] = _key(
        TableList(StackedMaterialSpec), factory=list,
        help="Force fields added on some elements (their stiffness adds to the body's there).")


_VALUE_UNIT = ByValue("valueType", {"displacement": "length", "force": "force", "pressure": "pressure",
                                    "volumeGrowth": "volume"})
_OPTIONAL = " Unset: no bound."


@dataclass(kw_only=True)
class CableSpec:
    """``[[body.cable]]``: SoftRobots CableConstraint. ``points`` (k, 3) are mapped into the body; ``indices``
    are node ids. Optional bounds are ``None`` when unset (SoftRobots: used only when set)."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default cable<i>.")
    points: tuple[tuple[float, float, float], ...] | None = _key(
        VectorList(), None, unit="length", help="Cable path points, embedded in the tetrahedra (or indices).")
    indices: tuple[int, ...] | None = _key(IndexList(), None, help="Cable path as node ids (or points).")
    pullPoint: tuple[float, float, float] | None = _key(_VEC3, None, unit="length",
                                                        help="Fixed point the cable is pulled from.")
    hasPullPoint: bool = _key(Flag(), True, help="false: the first point is the pull point (needs >= 2 points).")
    cableInitialLength: float | None = _key(_POSITIVE, None, unit="length",
                                            help="Rest length; unset: the length at rest.")
    valueType: str = _key(Choice("displacement", "force"), "displacement",
                          help="What value imposes: the cable shortening or its tension.")
    value: float = _key(Real(), 0.0, unit=_VALUE_UNIT, help="Imposed displacement (shortening) or force.")
    minForce: float | None = _key(_BOUND, None, unit="force", help="Lower bound of the tension." + _OPTIONAL)
    maxForce: float | None = _key(_BOUND, None, unit="force", help="Upper bound of the tension." + _OPTIONAL)
    maxPositiveDisp: float | None = _key(_NON_NEGATIVE, None, unit="length",
                                         help="Largest shortening." + _OPTIONAL)
    maxNegativeDisp: float | None = _key(_NON_NEGATIVE, None, unit="length",
                                         help="Largest lengthening." + _OPTIONAL)
    maxDispVariation: float | None = _key(_POSITIVE, None, unit="length",
                                          help="Largest change of displacement per frame." + _OPTIONAL)

    @property
    def n_points(self) -> int:
        return len(self.points if self.points is not None else self.indices or ())


@dataclass(kw_only=True)
class CavitySpec:
    """``[[body.cavity]]``: SoftRobots SurfacePressureConstraint on a surface file or a triangle set.
    ``surface`` is the path as written; ``surface_path`` the resolved absolute path."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default cavity<i>.")
    surface: str | None = _key(FilePath(), None, compare=False,
                               help="Closed surface mesh of the cavity (relative to the scene file), or set.")
    set: str | None = _key(Text(), None, help="Triangle set of the body's mesh bounding the cavity, or surface.")
    valueType: str = _key(Choice("pressure", "volumeGrowth"), "pressure",
                          help="What value imposes: the pressure or the growth of the enclosed volume.")
    value: float = _key(Real(), 0.0, unit=_VALUE_UNIT, help="Imposed pressure or volume growth.")
    minPressure: float | None = _key(_BOUND, None, unit="pressure", help="Lower pressure bound." + _OPTIONAL)
    maxPressure: float | None = _key(_BOUND, None, unit="pressure", help="Upper pressure bound." + _OPTIONAL)
    minVolumeGrowth: float | None = _key(_BOUND, None, unit="volume", help="Lower volume bound." + _OPTIONAL)
    maxVolumeGrowth: float | None = _key(_BOUND, None, unit="volume", help="Upper volume bound." + _OPTIONAL)
    maxPressureVariation: float | None = _key(_POSITIVE, None, unit="pressure",
                                              help="Largest pressure change per frame." + _OPTIONAL)
    maxVolumeGrowthVariation: float | None = _key(_POSITIVE, None, unit="volume",
                                                  help="Largest volume change per frame." + _OPTIONAL)
    flipNormal: bool = _key(Flag(), False, help="Reverse the surface orientation (pressure pushes inward).")
    surface_path: Path | None = None


@dataclass(kw_only=True)
class EffectorSpec:
    """``[[body.effector]]``: SoftRobots PositionEffector. ``position`` (k, 3) mapped points or ``indices``;
    ``effectorGoal`` one target per point (``None``: no target)."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default effector<i>.")
    position: tuple[tuple[float, float, float], ...] | None = _key(
        VectorList(), None, unit="length", help="Tracked points, embedded in the tetrahedra (or indices).")
    indices: tuple[int, ...] | None = _key(IndexList(), None, help="Tracked node ids (or position).")
    effectorGoal: tuple[tuple[float, float, float], ...] | None = _key(
        VectorList(), None, unit="length", help="One goal per tracked point; unset: no goal.")
    useDirections: tuple[int, int, int] = _key(Flags(3), (1, 1, 1), help="Which axes count (1) or not (0).")
    weight: float = _key(_POSITIVE, 1.0, help="Weight of this effector's rows.")
    limitShiftToTarget: bool = _key(Flag(), False, help="Inverse mode: bring each goal component at most "
                                                        "maxShiftToTarget from the frame's start position.")
    maxShiftToTarget: float = _key(_POSITIVE, 1.0, unit="length",
                                   help="Largest goal shift per frame when limitShiftToTarget is set.")

    @property
    def n_points(self) -> int:
        return len(self.position if self.position is not None else self.indices or ())


@dataclass(kw_only=True)
class UnilateralPlaneSpec:
    """``[[body.unilateralPlane]]``: SoftRobots UnilateralPlaneConstraint. Of the four points ``indices``, the
    first stays on the positive side of the plane through the other three (normal (p2 - p1) x (p3 - p1),
    reversed by ``flipNormal``). The points are body nodes, or rows of ``points`` (positions embedded in the
    tetrahedra, as SoftRobots maps a MechanicalObject into the body)."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default unilateralPlane<i>.")
    indices: tuple[int, ...] = _key(IndexList(), help="Four ids: the constrained point, then three points of the "
                                                      "plane (node ids, or rows of points).")
    points: tuple[tuple[float, float, float], ...] | None = _key(
        VectorList(), None, unit="length",
        help="Positions embedded in the tetrahedra that indices refer to; unset: indices are node ids.")
    flipNormal: bool = _key(Flag(), False, help="Reverse the plane's normal (the point stays on the other side).")


@dataclass(kw_only=True)
class CenterEffectorSpec:
    """``[[body.centerEffector]]``: SoftRobots.Inverse BarycentricCenterEffector: the mean position of some nodes
    as an effector (an objective of the inverse model, and the outputs NAME.x, NAME.y, NAME.z)."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default centerEffector<i>.")
    indices: tuple[int, ...] | None = _key(IndexList(), None, help="Node ids averaged; unset: every node.")
    effectorGoal: tuple[float, float, float] | None = _key(_VEC3, None, unit="length",
                                                          help="Goal of the mean position; unset: no goal.")
    axis: tuple[int, int, int] = _key(Flags(3), (1, 1, 1), help="Which axes count (1) or not (0).")
    weight: float = _key(_POSITIVE, 1.0, help="Weight of this effector's rows.")
    point: tuple[float, float, float] | None = _key(
        _VEC3, None, unit="length",
        help="Track this point (placed coordinates) carried with the nodes as by a rigid piece instead of their mean: "
             "a fixed affine combination of them, exact while they move rigidly (a rigidGroup's frame origin, SOFA's "
             "PositionEffector on a Rigid3 frame). Unset: the mean.")
    limitShiftToTarget: bool = _key(Flag(), False, help="Inverse mode: bring each goal component at most "
                                                        "maxShiftToTarget from the frame's start position.")
    maxShiftToTarget: float = _key(_POSITIVE, 1.0, unit="length",
                                   help="Largest goal shift per frame when limitShiftToTarget is set.")
    rotationAxis: tuple[int, int, int] = _key(
        Flags(3), (0, 0, 0),
        help="Also track the nodes' orientation (the rotation that best takes their rest positions onto their "
             "positions) about these axes (1) toward goalRotation, in radians weighted by weight (SOFA's "
             "PositionEffector on a Rigid3 frame, useDirections[3:]). Needs effectorGoal.")
    goalRotation: tuple[float, float, float] = _key(
        _VEC3, (0.0, 0.0, 0.0), unit="angle",
        help="The goal orientation with rotationAxis: rotation about x, then y, then z (fixed axes), from rest.")


@dataclass(kw_only=True)
class BodySpec:
    """``[[body]]``: a tetrahedral mesh with its material, boundary conditions, loads and actuators.
    ``mesh`` is the path as written in the file; ``mesh_path`` the resolved absolute path. The placement is
    ``x = R(rotation) (scale X) + translation`` with ``rotation`` in degrees."""

    name: str = _key(Name(), help="Unique among bodies; default body<i>.")
    mesh: str = _key(FilePath(), compare=False,
                     help="Tetrahedral mesh file, relative to the scene file (any format meshio reads, or Gmsh v1).")
    scale: float = _key(_POSITIVE, 1.0, help="Factor applied to the mesh coordinates.")
    translation: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="length",
                                                   help="Applied after scale and rotation.")
    rotation: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="angle",
                                                help="Rotation about x, then y, then z (fixed axes).")
    material: MaterialSpec = _key(Table(MaterialSpec), help="The body's material.")
    fixed: list[FixedSpec] = _key(TableList(FixedSpec), factory=list, help="Regions of fixed nodes.")
    forces: list[ForceSpec] = _key(TableList(ForceSpec), factory=list, toml="force", help="Applied loads.")
    cables: list[CableSpec] = _key(TableList(CableSpec), factory=list, toml="cable", help="Cable actuators.")
    cavities: list[CavitySpec] = _key(TableList(CavitySpec), factory=list, toml="cavity",
                                      help="Pressure cavities.")
    effectors: list[EffectorSpec] = _key(TableList(EffectorSpec), factory=list, toml="effector",
                                         help="Tracked points.")
    unilateralPlanes: list[UnilateralPlaneSpec] = _key(
        TableList(UnilateralPlaneSpec), factory=list, toml="unilateralPlane",
        help="Points kept on one side of a plane through three others.")
    centerEffectors: list[CenterEffectorSpec] = _key(TableList(CenterEffectorSpec), factory=list,
                                                     toml="centerEffector", help="Tracked mean positions.")
    rigidGroups: list[RigidGroupSpec] = _key(TableList(RigidGroupSpec), factory=list, toml="rigidGroup",
                                             help="Regions whose nodes move as one rigid piece.")
    collisionMesh: str | None = _key(
        FilePath(), None, compare=False,
        help="Triangle surface (relative to the scene file) that touches obstacles and other bodies instead of the "
             "mesh's own surface; its vertices are mapped into the tetrahedra (SOFA's collision model under a "
             "BarycentricMapping). Placed like the mesh (scale, rotation, translation).")
    collisionGroup: tuple[int, ...] | None = _key(
        IndexList(), None,
        help="Collision group numbers (SOFA's group of a collision model): two bodies that share a number do not "
             "touch each other ([collision]); obstacles and rigid bodies touch them all the same. Unset: no group.")
    mesh_path: Path | None = None
    collisionMesh_path: Path | None = None


@dataclass(kw_only=True)
class ControllerSpec:
    """``[[controller]]``: what changes the scene between frames (docs/controllers.md). Either ``key`` with
    ``keyframes`` (a value interpolated linearly in time and set before every frame) or ``script``, a Python file
    with ``on_frame(scene, time)`` and/or ``on_key(scene, key)``, run only when scripts are allowed
    (``softsim run --allow-scripts``, or the window's question). ``script`` is the path as written;
    ``script_path`` the resolved absolute path."""

    name: str = _key(Name(), help="Identifier in messages; default controller<i>.")
    key: str | None = _key(Text(), None, help="The key path the keyframes drive (any key Scene.set accepts with "
                                             "a number or a vector); or script.")
    keyframes: tuple | None = _key(Keyframes(), None,
                                   help="[[t0, v0], [t1, v1], ...]: times increasing, the value linear between "
                                        "them (v0 before t0, the last after the last time).")
    script: str | None = _key(FilePath(), None, compare=False,
                              help="Python file (relative to the scene file) defining on_frame(scene, time) "
                                   "and/or on_key(scene, key); or key.")
    script_path: Path | None = None


#: Keys of which a table sets exactly one (or, for ForceSpec's region, one with totalForce). Setting one of
#: them with ``set_value`` unsets the others of its group.
EXCLUSIVE_KEYS: dict[type, tuple[tuple[str, ...], ...]] = {
    RegionSpec: (REGION_KEYS,),
    FixedSpec: (REGION_KEYS,),
    RigidGroupSpec: (REGION_KEYS,),
    StackedMaterialSpec: (("box", "tetrahedra"),),
    ForceSpec: (REGION_KEYS, ("totalForce", "pressure")),
    CableSpec: (("points", "indices"),),
    CavitySpec: (("surface", "set"),),
    EffectorSpec: (("position", "indices"),),
    ControllerSpec: (("key", "script"),),
}

OBSTACLE_TYPES = ("plane", "sphere", "box", "capsule")


@dataclass(kw_only=True)
class ObstacleSpec:
    """``[[obstacle]]``: a static rigid shape; only the keys of its ``type`` are set (``OBSTACLE_KEYS``)."""

    name: str = _key(Name(), help="Unique among obstacles; default obstacle<i>.")
    type: str = _key(Choice(*OBSTACLE_TYPES), help="Shape of the obstacle.")
    point: tuple[float, float, float] | None = _key(_VEC3, None, unit="length", when=when("type", "plane"),
                                                    help="A point of the plane.")
    normal: tuple[float, float, float] | None = _key(Vector(3, nonzero=True), None, when=when("type", "plane"),
                                                     help="Plane normal, pointing to the free side.")
    center: tuple[float, float, float] | None = _key(_VEC3, None, unit="length", when=when("type", "sphere", "box"),
                                                     help="Centre (a box may give min and max corners instead).")
    radius: float | None = _key(_POSITIVE, None, unit="length", when=when("type", "sphere", "capsule"),
                                help="Radius.")
    halfExtents: tuple[float, float, float] | None = _key(Vector(3, positive=True), None, unit="length",
                                                          when=when("type", "box"), help="Half sizes along x, y, z.")
    a: tuple[float, float, float] | None = _key(_VEC3, None, unit="length", when=when("type", "capsule"),
                                                help="One end of the capsule's axis.")
    b: tuple[float, float, float] | None = _key(_VEC3, None, unit="length", when=when("type", "capsule"),
                                                help="The other end of the capsule's axis.")
    friction: float = _key(_NON_NEGATIVE, 0.0,
                           help="Coulomb friction coefficient mu of every contact with it (soft nodes and free "
                                "rigid bodies).")
    contactDistance: float = _key(_NON_NEGATIVE, 0.0, unit="length", help="Gap the contact keeps.")
    velocity: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="velocity",
                                                help="The obstacle moves at this velocity between startTime and "
                                                     "endTime (a floor that drops, a wall that closes in).")
    startTime: float = _key(_NON_NEGATIVE, 0.0, unit="time", help="When the obstacle starts to move.")
    endTime: float | None = _key(_NON_NEGATIVE, None, unit="time", help="When it stops; unset: never.")


#: The contact shapes of a free rigid body.
RIGID_SHAPES = ("box", "sphere")


@dataclass(kw_only=True)
class RigidSpec:
    """``[[rigid]]``: a free rigid body (6 degrees of freedom) in dynamic mode: a box or a sphere of ``mass``
    whose surface the soft bodies' surface nodes touch (mechanics.rigid_body), and which touches the obstacles
    and the other rigid bodies (mechanics.rigid_contact). Placed at ``position`` (its
    centre of mass) turned by ``rotation``; gravity acts on it; ``velocity`` and ``angularVelocity`` are its
    initial motion."""

    name: str = _key(Name(), help="Unique among rigid bodies and actuators (output columns NAME.x, NAME.vx...); "
                                  "default rigid<i>.")
    shape: str = _key(Choice(*RIGID_SHAPES), "box", help="Contact shape, centred on the centre of mass.")
    halfExtents: tuple[float, float, float] | None = _key(Vector(3, positive=True), None, unit="length",
                                                          when=when("shape", "box"),
                                                          help="Half sizes of the box along its own x, y, z.")
    radius: float | None = _key(_POSITIVE, None, unit="length", when=when("shape", "sphere"),
                                help="Radius of the sphere.")
    mass: float = _key(_POSITIVE, unit="mass", help="Mass of the body.")
    inertia: tuple[float, float, float] | None = _key(
        Vector(3, positive=True), None, unit="moment of inertia",
        help="Principal moments of inertia about the body's own axes; unset: a solid of uniform density "
             "(box m (b^2 + c^2) / 3, ...; sphere 2 m r^2 / 5).")
    position: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="length",
                                                help="Initial centre of mass.")
    rotation: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="angle",
                                                help="Initial orientation: about x, then y, then z (fixed axes).")
    velocity: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="velocity",
                                                help="Initial velocity of the centre.")
    angularVelocity: tuple[float, float, float] = _key(_VEC3, (0.0, 0.0, 0.0), unit="angular velocity",
                                                       help="Initial angular velocity (world axes, rad/s).")
    friction: float = _key(_NON_NEGATIVE, 0.0,
                           help="Coulomb friction coefficient mu of its contacts with the soft bodies; against "
                                "another rigid body the smaller of the two (against an obstacle, the "
                                "obstacle's).")
    contactDistance: float = _key(_NON_NEGATIVE, 0.0, unit="length",
                                  help="Gap its contacts keep (against an obstacle or another rigid body, the "
                                       "larger of the two).")
    alarmDistance: float | None = _key(_NON_NEGATIVE, None, unit="length",
                                       help="A node, corner or shape closer than this (at the step start or its "
                                            "prediction) gets a contact row; unset: a fifth of the shape's "
                                            "smallest half size (at least 2 contactDistance).")


#: The keys each obstacle type uses besides name, type, friction and contactDistance.
OBSTACLE_KEYS = {kind: tuple(d.key for d in declarations(ObstacleSpec) if d.when and kind in d.when.values)
                 for kind in OBSTACLE_TYPES}
_DISABLE = " <= 0 disables the test."


@dataclass(kw_only=True)
class NewtonSpec:
    """``[solver.newton]``: Caribou LegacyStaticODESolver parameters plus softsim's additions."""

    newton_iterations: int = _key(Integer(1, MAX_NEWTON_ITERATIONS), 10,
                                  help="Most Newton iterations per load step (and factorizations per frame).")
    correction_tolerance_threshold: float = _key(Real(), 1e-8,
                                                 help="Converged when |dx| < threshold |u|." + _DISABLE)
    residual_tolerance_threshold: float = _key(Real(), 1e-8,
                                               help="Converged when |R| < threshold |R0|." + _DISABLE)
    absolute_residual_tolerance_threshold: float = _key(Real(), 1e-15, unit="force",
                                                        help="Converged when |R| <= threshold." + _DISABLE)
    shoud_diverge_when_residual_is_growing: bool = _key(
        Flag(), False, alias="should_diverge_when_residual_is_growing",
        help="Stop as diverged when the residual grows between two iterations (Caribou's spelling; the "
             "corrected spelling is an alias).")
    warm_start: bool = _key(Flag(), True, help="An iterative linear solver starts from the previous increment.")
    printLog: bool = _key(Flag(), False, help="Log every Newton iteration at INFO level.")
    line_search: bool = _key(Flag(), False, help="Backtracking line search on every Newton step.")
    maximum_line_search_iterations: int = _key(Integer(1, 100), 10, help="Most halvings of one step.")
    line_search_coefficient: float = _key(Real(0.0, 1.0, lo_open=True, hi_open=True), 0.5,
                                          help="Factor of each halving.")
    backtrack_invalid_steps: bool = _key(
        Flag(), True, help="A step that inverts an element or gives a NaN residual turns the line search on "
                           "(false: Caribou's plain Newton).")
    load_steps: int = _key(Integer(1, MAX_LOAD_STEPS), 1, help="Equal increments of the external load per frame.")
    correction: str = _key(
        Choice("equilibrium", "linear"), "equilibrium",
        help="equilibrium: every static frame ends at the constrained equilibrium within the Newton tolerances; "
             "linear: SOFA's single linear correction.")


@dataclass(kw_only=True)
class LinearSpec:
    """``[solver.linear]``: the linear solver of each Newton iteration (the cg keys are kept when
    ``type = "direct"`` and the reverse, so that switching type live keeps the settings)."""

    type: str = _key(Choice("direct", "cg", "async"), "direct",
                     help="Sparse direct factorization, conjugate gradient, or CG (GMRES for the exact tangent when "
                          "it is not symmetric positive definite) preconditioned by a factorization refreshed in a "
                          "background thread (the asynchronous preconditioner).")
    backend: str = _key(Choice("auto", "pardiso", "scipy"), "auto", when=when("type", "direct"),
                        help="auto: MKL Pardiso when installed, else SciPy.")
    maximum_number_of_iterations: int = _key(Integer(1, MAX_CG_ITERATIONS), 1000, when=when("type", "cg"),
                                              help="Most CG iterations per solve.")
    residual_tolerance_threshold: float = _key(_POSITIVE, 1e-8, when=when("type", "cg", "async"),
                                               help="CG (or GMRES) stops when |r| < threshold |b|.")
    preconditioner_iterations: int = _key(Integer(1, 1000), 20, when=when("type", "async"),
                                          help="Most CG (or GMRES) iterations per solve before the current matrix "
                                               "is factorized in the foreground.")
    preconditioning_method: str = _key(
        Choice("None", "Identity", "Diagonal", "IncompleteCholesky", "LastFactorization"), "Diagonal",
        when=when("type", "cg"), help="Preconditioner of CG.")


_JACOBI = when("type", "ImprovedJacobi")


@dataclass(kw_only=True)
class ConstraintSpec:
    """``[solver.constraint]``: GenericConstraintSolver / ImprovedJacobi data fields (SOFA names)."""

    type: str = _key(Choice("BlockGaussSeidel", "ImprovedJacobi", "NNCG", "BlockPivoting", "exact"),
                     "BlockGaussSeidel",
                     help="Complementarity solver in constraint space (BlockPivoting: an exact active-set solve of "
                          "frictionless problems, friction by Block Gauss-Seidel; exact: Lemke's pivoting, the "
                          "tests' reference).")
    maxIterations: int = _key(Integer(1, 10_000_000), 1000, alias="maxIt", help="Most iterations per solve.")
    tolerance: float = _key(_POSITIVE, 1e-6, unit="length", help="Convergence tolerance on the solver's error.")
    sor: float = _key(Real(0.0, 2.0, lo_open=True, hi_open=True), 1.0, help="Over-relaxation factor.")
    scaleTolerance: bool = _key(Flag(), True, help="Multiply the tolerance by the number of rows (SOFA).")
    allVerified: bool = _key(Flag(), False, help="Converged only when every block is within the tolerance.")
    regularizationTerm: float = _key(_NON_NEGATIVE, 0.0, unit="compliance", help="Added to W's diagonal.")
    computeConstraintForces: bool = _key(Flag(), False, help="Keep a copy of the multipliers in the report.")
    eliminateEqualities: bool = _key(
        Flag(), False, when=when("type", "BlockGaussSeidel", "ImprovedJacobi", "NNCG"),
        help="Solve the equality rows exactly (Cholesky of their block of W) and iterate on the Schur complement "
             "of the others: far fewer iterations with stiff attachments.")
    useSpectralCorrection: bool = _key(Flag(), False, when=_JACOBI,
                                       help="Scale each step by rho = factor min(1, 1.8 / spr(D^-1 W)).")
    spectralCorrectionFactor: float = _key(Real(0.0, 10.0, lo_open=True), 1.0, when=_JACOBI,
                                           help="The factor of the spectral correction.")
    useConjugateResidue: bool = _key(Flag(), False, when=_JACOBI,
                                     help="Add the momentum beta deltaF of the previous iteration.")
    conjugateResidueSpeedFactor: float = _key(Real(0.0, 1000.0, lo_open=True), 10.0, when=_JACOBI,
                                              help="beta = min(1, (i / maxIterations)^factor).")
    sofaSpectralRadius: bool = _key(Flag(), False, when=_JACOBI,
                                    help="SOFA's spectral radius of W itself (depends on the units).")


_DYNAMIC = when("scene.mode", "dynamic")


@dataclass(kw_only=True)
class DynamicSpec:
    """``[solver.dynamic]``: Compliant-style implicit integration (alpha, beta), Rayleigh damping and the
    nonlinear iterations of one time step."""

    implicitVelocity: float = _key(Real(0.0, 1.0, lo_open=True), 1.0, when=_DYNAMIC, help="alpha: 1 is backward Euler.")
    implicitPosition: float = _key(Real(0.0, 1.0, lo_open=True), 1.0, when=_DYNAMIC, help="beta: 1 is backward Euler.")
    rayleighMass: float = _key(_NON_NEGATIVE, 0.0, unit="frequency", when=_DYNAMIC,
                               help="Damping proportional to the mass.")
    rayleighStiffness: float = _key(_NON_NEGATIVE, 0.0, unit="time", when=_DYNAMIC,
                                    help="Damping proportional to the stiffness.")
    newton_iterations: int = _key(Integer(1, MAX_NEWTON_ITERATIONS), 1, when=_DYNAMIC,
                                  help="Newton iterations per time step.")
    newton_tolerance: float = _key(_NON_NEGATIVE, 1e-10, when=_DYNAMIC,
                                   help="Relative velocity correction that ends them.")
    kkt: str = _key(Choice("auto", "schur", "direct"), "auto", when=_DYNAMIC,
                    help="auto: a direct KKT solve when every constraint is an equality, else the Schur "
                         "complement with the constraint solver.")


QP_SOLVERS = ("daqp", "proxqp", "quadprog", "piqp", "osqp", "clarabel")


@dataclass(kw_only=True)
class InverseSpec:
    """``[solver.inverse]``: SoftRobots.Inverse QPInverseProblemSolver. Its presence turns the inverse mode on:
    cables and cavities become the unknowns of a quadratic program whose objective is the effectors' distance
    to their goals."""

    type: str = _key(Choice("QPInverseProblemSolver"), "QPInverseProblemSolver", help="The inverse solver.")
    active: bool = _key(Flag(), True, help="false: solve forward (the actuators' values apply) and keep these "
                                           "settings for later.")
    epsilon: float = _key(_NON_NEGATIVE, 1e-3, alias="energyWeight",
                          help="Weight of the actuation-energy term (relative to the effector term).")
    actuatorsOnly: bool = _key(Flag(), False, help="The energy term covers the actuators only (false: contacts "
                                                   "and equalities too).")
    maxIterations: int = _key(Integer(1, 100_000), 250, help="Most contact pivots per QP solve.")
    tolerance: float = _key(_POSITIVE, 1e-10, help="Tolerance of the QP solver and of the contact pivots.")
    allowSliding: bool = _key(Flag(), False, help="The QP's frictional contacts may slide (their tangential "
                                                  "forces are bounded by the friction pyramid).")
    responseFriction: float | None = _key(_NON_NEGATIVE, None,
                                          help="Friction coefficient of the QP's contact model; unset: each "
                                               "obstacle's own friction.")
    qpSolver: str = _key(Choice(*QP_SOLVERS), "daqp", help="QP backend (through qpsolvers); daqp is exact and "
                                                           "fastest on these small dense problems.")
    linearizations: int = _key(Integer(1, 1000), 20,
                               help="Most QP solves per frame, each about the last constrained equilibrium "
                                    "(1: SoftRobots' single QP per step).")
    linearizationTolerance: float = _key(_POSITIVE, 1e-6,
                                         help="The frame ends when a new QP would move no node farther than this "
                                              "fraction of the body's size.")


@dataclass(kw_only=True)
class SolverSpec:
    """``[solver]``: the solver tables; ``inverse`` is set only in inverse mode."""

    newton: NewtonSpec = _key(Table(NewtonSpec), factory=NewtonSpec, help="Static Newton solver.")
    linear: LinearSpec = _key(Table(LinearSpec), factory=LinearSpec, help="Linear solver.")
    constraint: ConstraintSpec = _key(Table(ConstraintSpec), factory=ConstraintSpec, help="Constraint solver.")
    dynamic: DynamicSpec = _key(Table(DynamicSpec), factory=DynamicSpec, help="Dynamic mode.")
    inverse: InverseSpec | None = _key(Table(InverseSpec), None, help="Inverse mode (SoftRobots.Inverse).")


@dataclass(kw_only=True)
class DragSpec:
    """``[drag]``: the mouse drag constraint."""

    compliance: float = _key(_POSITIVE, 1e-3, unit="compliance",
                             help="Softness of the mouse spring (1e-3 = 1000 N/m in SI, 1000 mN/mm in mm-kg-s).")


@dataclass(kw_only=True)
class AttachmentSpec:
    """``[[attachment]]``: glue nodes of ``bodyA`` to nodes of ``bodyB`` (SOFA BilateralLagrangianConstraint
    between two bodies). Either ``indicesA`` and ``indicesB`` (paired node ids) or ``box`` (the nodes of
    ``bodyA`` in the box, each paired with the nearest node of ``bodyB``). The rest offset between the two
    nodes of a pair is kept; ``compliance`` > 0 makes the glue a spring of stiffness 1/compliance."""

    name: str = _key(Name(), help="Unique among actuators, effectors and attachments; default attachment<i>.")
    bodyA: str = _key(Name(), help="Name of the first body.")
    bodyB: str = _key(Name(), help="Name of the second body.")
    indicesA: tuple[int, ...] | None = _key(IndexList(), None, help="Node ids of bodyA, paired with indicesB.")
    indicesB: tuple[int, ...] | None = _key(IndexList(), None, help="Node ids of bodyB.")
    box: tuple[float, float, float, float, float, float] | None = _key(
        Box(), None, unit="length", help="The nodes of bodyA in the box, each glued to the nearest node of bodyB.")
    compliance: float = _key(_NON_NEGATIVE, 0.0, unit="compliance", help="0: rigid glue; > 0: a spring.")


@dataclass(kw_only=True)
class CollisionPairSpec:
    """``[[collision.pair]]``: the friction of one pair of bodies (overrides ``collision.friction``)."""

    bodyA: str = _key(Name(), help="Name of the first body.")
    bodyB: str = _key(Name(), help="Name of the second body.")
    friction: float = _key(_NON_NEGATIVE, help="Coulomb friction coefficient mu of this pair.")


@dataclass(kw_only=True)
class CollisionSpec:
    """``[collision]``: contact between bodies (SOFA's collision pipeline: a broad phase over the surface
    triangles, point-triangle proximity within ``alarmDistance``, frictional contact rows keeping
    ``contactDistance``). Obstacles are not part of it: they always touch every body."""

    alarmDistance: float | None = _key(_POSITIVE, None, unit="length",
                                       help="Pairs closer than this are contact candidates; unset: 5 % of the "
                                            "smallest body's size, at least 2 contactDistance.")
    contactDistance: float = _key(_NON_NEGATIVE, 0.0, unit="length", help="Gap the contact keeps.")
    friction: float = _key(_NON_NEGATIVE, 0.0, help="Coulomb friction coefficient mu of every pair.")
    selfCollision: bool = _key(Flag(), False, help="A body's surface also touches itself.")
    bodies: tuple[str, ...] | None = _key(NameList(), None, help="The bodies that collide; unset: all of them.")
    pairs: list[CollisionPairSpec] = _key(TableList(CollisionPairSpec), factory=list, toml="pair",
                                          help="Per-pair friction.")


@dataclass(kw_only=True)
class SceneSpec:
    """A validated scene. ``source`` is the file it was read from (``"<string>"`` otherwise), ``base_dir``
    the directory relative paths were resolved against, ``warnings`` what is allowed but probably unintended,
    ``files_checked`` whether referenced files were checked to exist (``set_value`` does the same)."""

    scene: SceneSettings = _key(Table(SceneSettings), factory=SceneSettings, help="Scene settings.")
    bodies: list[BodySpec] = _key(TableList(BodySpec), factory=list, toml="body", help="Deformable bodies.")
    obstacles: list[ObstacleSpec] = _key(TableList(ObstacleSpec), factory=list, toml="obstacle",
                                         help="Static rigid obstacles.")
    rigids: list[RigidSpec] = _key(TableList(RigidSpec), factory=list, toml="rigid",
                                   help="Free rigid bodies (dynamic mode).")
    attachments: list[AttachmentSpec] = _key(TableList(AttachmentSpec), factory=list, toml="attachment",
                                             help="Glue between bodies.")
    collision: CollisionSpec | None = _key(Table(CollisionSpec), None, help="Contact between bodies.")
    controllers: list[ControllerSpec] = _key(TableList(ControllerSpec), factory=list, toml="controller",
                                             help="Keyframed values and scripts run between frames.")
    solver: SolverSpec = _key(Table(SolverSpec), factory=SolverSpec, help="Solver settings.")
    drag: DragSpec = _key(Table(DragSpec), factory=DragSpec, help="Mouse drag.")
    source: str = field(default="<string>", compare=False)
    base_dir: Path = field(default_factory=Path.cwd, compare=False)
    warnings: list[str] = field(default_factory=list, compare=False)
    files_checked: bool = field(default=True, compare=False)
