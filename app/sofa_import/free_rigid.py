"""Free rigid bodies of a SOFA scene as ``[[rigid]]`` boxes: STLIB's ``Cube`` prefab and its like.

A candidate is a node whose own (unmapped) MechanicalObject has a ``Rigid3`` template and that holds a
``UniformMass``: STLIB's ``RigidObject`` (Cube, Sphere, Floor) and hand-built equivalents. It becomes a
``[[rigid]] shape = "box"`` when

- its MechanicalObject has one frame (``position``, default the origin with no rotation, then its
  ``scale``/``rotation``/``translation`` and ``rotation2``/``translation2``, applied in SOFA's order: the first
  three at ``reinit``, the second two after the rest position is stored; a Rigid3 rotation turns the frame's
  centre and its orientation alike);
- an ODE solver (EulerImplicitSolver) integrates it (a node with none, such as STLIB's ``isAStaticObject``
  floor, does not move in SOFA);
- its collision child (a child node with a ``RigidMapping``) loads SOFA's own ``mesh/cube.obj``, unmoved (no
  translation or rotation on the loader or the child's MechanicalObject), with a uniform scale.

``mesh/cube.obj`` is not in the scene's folder: SOFA finds it in its installed ``share/mesh``. That file (SOFA's
repository, ``share/mesh/cube.obj``, a Blender export) has 8 vertices at (+-1, +-1, +-1) (one is written
0.999999 / 1.000001), so its extent is 2 along each axis: :data:`SOFA_CUBE_HALF_EXTENT` = 1, and the box's
half sizes are 1 x the loader's scale (STLIB passes ``uniformScale`` as the loader's ``scale``).

Mass: SOFA's ``UniformMass`` on a Rigid3 object holds a ``RigidMass`` (``vertexMass = [mass, volume,
inertiaMatrix (9 numbers)]``, or the mass alone with an identity matrix); ``totalMass`` (one frame) replaces the
mass and keeps the matrix. SOFA's moments of inertia are ``mass x inertiaMatrix`` (RigidMass::recalc), so
STLIB's default identity gives ``mass`` in every axis, not a solid cube's: the import keeps SOFA's numbers as
``inertia`` (a diagonal matrix only).

:func:`free_rigid` gives the table, the components it accounts for and notes, or why the candidate is not
translated (the translator puts that in the report).

A candidate that no ODE solver integrates does not move in SOFA (STLIB's ``Floor``, any ``isAStaticObject``
object): on SOFA's ``mesh/floor.obj`` (a slab, :data:`SOFA_FLOOR_BOX`) or ``mesh/cube.obj`` it becomes an
``[[obstacle]]`` box (:func:`static_box`), which the soft bodies and the ``[[rigid]]`` bodies touch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from softsim.app.sofa_import.graph import Component, Link, Node, components_of, nearest_component
from softsim.app.sofa_import.values import ValueProblem, as_floats

__all__ = ["SOFA_BOXES", "SOFA_CUBE", "SOFA_CUBE_HALF_EXTENT", "SOFA_FLOOR", "SOFA_FLOOR_BOX", "FreeRigid",
           "NotTranslated", "SOFA_SQUARE", "SQUARE_DEPTH", "StaticBox", "free_rigid", "is_candidate", "static_box",
           "static_surface"]

#: the file name STLIB's Cube gives its loaders: SOFA's installed ``share/mesh/cube.obj``
SOFA_CUBE = "mesh/cube.obj"
#: half the side of SOFA's ``share/mesh/cube.obj`` (its vertices are at +-1 on each axis)
SOFA_CUBE_HALF_EXTENT = 1.0
#: the file name STLIB's Floor gives its loaders: SOFA's installed ``share/mesh/floor.obj``
SOFA_FLOOR = "mesh/floor.obj"
#: the box SOFA's ``share/mesh/floor.obj`` fills, ``(centre, half sizes)`` in the file's units: a slab whose 50
#: vertices lie on y = -1.32967 (top) and y = -5.32967 (bottom), x and z within +-74.6722946167
SOFA_FLOOR_BOX = ((0.0, -3.32967, 0.0), (74.6722946167, 2.0, 74.6722946167))
#: the file name CircularRobot's Floor loads: SOFA's installed ``share/mesh/square1.obj``, the unit square
#: 0 <= x, y <= 1 in z = 0 (20 vertices, 26 triangles), its triangles' normal +z
SOFA_SQUARE = "mesh/square1.obj"
#: the depth of the box a static square becomes, as a share of its side (the square itself has none)
SQUARE_DEPTH = 0.04
#: the boxes of SOFA's own meshes an obstacle may load, ``(centre, half sizes)`` before the loader's scale
SOFA_BOXES = {SOFA_CUBE: ((0.0, 0.0, 0.0), (SOFA_CUBE_HALF_EXTENT,) * 3), SOFA_FLOOR: SOFA_FLOOR_BOX}

_ODE = {"EulerImplicitSolver", "EulerImplicit", "EulerExplicitSolver", "RungeKutta4Solver"}
_SURFACE_LOADERS = {"MeshOBJLoader", "MeshObjLoader", "MeshSTLLoader", "MeshOffLoader", "MeshVTKLoader",
                    "MeshGmshLoader"}
_COLLISION_MODELS = {"TriangleCollisionModel", "LineCollisionModel", "PointCollisionModel", "SphereCollisionModel",
                     "TTriangleModel", "TLineModel", "TPointModel"}
_MAPPINGS = {"RigidMapping", "SubsetMultiMapping", "ArticulatedSystemMapping", "BarycentricMapping",
             "IdentityMapping", "SubsetMapping"}
_TOPOLOGIES = {"MeshTopology", "TriangleSetTopologyContainer", "TriangleSetTopologyModifier",
               "TriangleSetGeometryAlgorithms"}


@dataclass
class FreeRigid:
    """A translated free rigid body: ``table`` (the ``[[rigid]]`` keys, without name and contact keys),
    ``used`` (the components it accounts for), ``collides`` (SOFA gives it collision models), ``notes``,
    ``solver`` (the ODE solver that integrates it in SOFA)."""

    table: dict[str, Any]
    solver: Component | None = None
    used: list[Component] = field(default_factory=list)
    collides: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class StaticBox:
    """A rigid object no ODE solver moves, on one of SOFA's box meshes: ``table`` (the ``[[obstacle]]`` keys of
    a box, without name and contact keys), ``used`` (the components it accounts for), ``notes``."""

    table: dict[str, Any]
    used: list[Component] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class NotTranslated(Exception):
    """A candidate free rigid body that cannot be translated; the message says why."""


def _rigid_state(node: Node) -> Component | None:
    state = node.getMechanicalState()
    if state is None or not str(state.data.get("template", "")).startswith("Rigid3"):
        return None
    return state


def is_candidate(node: Node) -> bool:
    """A node with its own Rigid3 MechanicalObject, a UniformMass and no mapping (an independent rigid body)."""
    return (_rigid_state(node) is not None and bool(components_of(node, {"UniformMass"}))
            and not components_of(node, _MAPPINGS))


def _numbers(component: Component, key: str, default: list[float]) -> np.ndarray:
    value = component.data.get(key, default)
    if isinstance(value, Link):
        raise NotTranslated(f"{component.getPathName()}.{key} is a link ({value.text}), not numbers")
    return np.asarray(as_floats(value, f"{component.getPathName()}.{key}"), dtype=np.float64)


def _frame(state: Component, placement_of) -> tuple[np.ndarray, Rotation]:
    """The frame's centre and orientation after SOFA's init of the MechanicalObject."""
    what = state.getPathName()
    position = _numbers(state, "position", [0, 0, 0, 0, 0, 0, 1])
    if position.size != 7:
        raise NotTranslated(f"{what}: {position.size // 7 if position.size % 7 == 0 else position.size} "
                            f"{'frames' if position.size % 7 == 0 else 'numbers'}, a free body is one frame "
                            f"(7 numbers)")
    center, orientation = position[:3], Rotation.from_quat(position[3:])  # SOFA's quaternion: x, y, z, w
    first = placement_of(state)  # scale, rotation, translation (reinit)
    second_angles = _numbers(state, "rotation2", [0, 0, 0])
    second_shift = _numbers(state, "translation2", [0, 0, 0])
    if second_angles.size != 3 or second_shift.size != 3:
        raise NotTranslated(f"{what}: rotation2 and translation2 need 3 numbers each")
    second = Rotation.from_euler("xyz", second_angles, degrees=True)  # the convention of placement_of
    center = second.apply(first.apply(center[None, :])[0]) + second_shift
    return center, second * first.rotation * orientation


def _mass(mass: Component) -> tuple[float, np.ndarray]:
    """``(m, principal moments)`` of a Rigid3 UniformMass (SOFA: moments = m x inertiaMatrix)."""
    what = mass.getPathName()
    vertex = _numbers(mass, "vertexMass", [1.0])
    if vertex.size == 1:
        m, matrix = float(vertex[0]), np.eye(3)
    elif vertex.size == 11:
        m, matrix = float(vertex[0]), vertex[2:].reshape(3, 3)
    else:
        raise NotTranslated(f"{what}.vertexMass: {vertex.size} numbers; a Rigid3 mass is 1 (the mass) or 11 "
                            f"(mass, volume, 3x3 inertia matrix)")
    if "totalMass" in mass.data:
        total = _numbers(mass, "totalMass", [0.0])
        if total.size != 1:
            raise NotTranslated(f"{what}.totalMass: expected one number, got {total.size}")
        if total[0] > 0:
            m = float(total[0])  # one frame: the whole mass; RigidMass keeps its inertia matrix
    if not np.allclose(matrix, np.diag(np.diag(matrix)), atol=1e-12 * max(1.0, float(np.abs(matrix).max()))):
        raise NotTranslated(f"{what}.vertexMass: a non-diagonal inertia matrix {matrix.ravel().tolist()} "
                            f"([[rigid]] inertia takes principal moments about the body's axes)")
    moments = m * np.diag(matrix)
    if m <= 0 or np.any(moments <= 0):
        raise NotTranslated(f"{what}: mass {m:g} and moments {moments.tolist()} must be positive")
    return m, moments


def _collision_child(node: Node) -> Node | None:
    for child in node.children:
        if components_of(child, {"RigidMapping"}) and components_of(child, _SURFACE_LOADERS | _COLLISION_MODELS):
            return child
    return None


def _cube_half_extent(child: Node, scene_dir: Path, placement_of) -> tuple[float, list[Component]]:
    """Half the side of the box the collision child loads (SOFA's ``mesh/cube.obj`` x its scale)."""
    _center, half, used = _sofa_box(child, scene_dir, placement_of, (SOFA_CUBE,))
    return float(half[0]), used


def _sofa_box(child: Node, scene_dir: Path, placement_of, meshes) -> tuple[np.ndarray, np.ndarray, list]:
    """The box (centre (3,), half sizes (3,) in the body's frame) of the collision child's mesh, one of SOFA's
    own ``meshes`` (keys of :data:`SOFA_BOXES`) x its scale, and the components that make it."""
    loaders = components_of(child, _SURFACE_LOADERS)
    if len(loaders) != 1:
        raise NotTranslated(f"{child.getPathName()}: {len(loaders)} mesh loaders in the collision node, expected "
                            f"one loading SOFA's {' or '.join(meshes)}")
    loader = loaders[0]
    filename = str(loader.data.get("filename", "")).replace("\\", "/").removeprefix("./")
    if filename not in meshes:
        raise NotTranslated(f"{loader.getPathName()}: collision mesh {filename!r}; only SOFA's own "
                            f"{' and '.join(meshes)} ({'a box) is' if len(meshes) == 1 else 'boxes) are'} translated")
    if (scene_dir / filename).is_file():
        raise NotTranslated(f"{loader.getPathName()}: {filename!r} is a file beside the scene, not SOFA's "
                            f"installed {filename}: its size is unknown")
    try:
        placement = placement_of(loader).then(placement_of(child.getMechanicalState()))
    except ValueProblem as error:
        raise NotTranslated(str(error)) from None
    if np.any(np.abs(placement.translation) > 0) or not np.allclose(placement.rotation.as_matrix(), np.eye(3)):
        raise NotTranslated(f"{loader.getPathName()}: the {filename} mesh is moved or turned in the body's frame "
                            f"(a [[rigid]] box is centred on its centre of mass, along its axes)")
    used = [loader, *components_of(child, _TOPOLOGIES), *components_of(child, _COLLISION_MODELS | {"RigidMapping"})]
    if child.getMechanicalState() is not None:
        used.append(child.getMechanicalState())
    center, half = SOFA_BOXES[filename]
    return placement.scale * np.asarray(center, dtype=float), placement.scale * np.asarray(half, dtype=float), used


def free_rigid(node: Node, scene_dir: Path, placement_of) -> FreeRigid:
    """The ``[[rigid]]`` box of the candidate ``node`` (:func:`is_candidate`); ``placement_of`` is the
    translator's reading of a component's translation/rotation/scale. NotTranslated says why not."""
    state = _rigid_state(node)
    masses = components_of(node, {"UniformMass"})
    if len(masses) != 1:
        raise NotTranslated(f"{node.getPathName()}: {len(masses)} masses, expected one UniformMass")
    solver = nearest_component(node, _ODE)
    if solver is None:
        raise NotTranslated("no ODE solver integrates it (it does not move in SOFA: a static object; add it as an "
                            "[[obstacle]] by hand)")
    child = _collision_child(node)
    if child is None:
        raise NotTranslated(f"no collision child (a node with a RigidMapping and the {SOFA_CUBE} loader): its "
                            f"shape is unknown")
    half, used = _cube_half_extent(child, scene_dir, placement_of)
    try:
        center, orientation = _frame(state, placement_of)
    except ValueProblem as error:
        raise NotTranslated(str(error)) from None
    m, moments = _mass(masses[0])
    angles = [_clean(a) for a in orientation.as_euler("xyz", degrees=True)]
    table: dict[str, Any] = {"shape": "box", "halfExtents": [half] * 3, "mass": m,
                             "inertia": [float(v) for v in moments], "position": [_clean(v) for v in center]}
    if any(angles):
        table["rotation"] = angles
    solid = m * (2 * half) ** 2 / 6  # a uniform solid cube of side 2 half: m (b^2 + c^2) / 3 with b = c = half
    notes = [f"{node.getPathName()}: a free rigid body, a [[rigid]] box of half size {half:g} ({SOFA_CUBE}, "
             f"+-{SOFA_CUBE_HALF_EXTENT:g}, x scale {half / SOFA_CUBE_HALF_EXTENT:g}), mass {m:g}, moments of "
             f"inertia {', '.join(f'{v:g}' for v in moments)} as SOFA's UniformMass gives them (mass x "
             f"inertiaMatrix; a uniform solid cube of that size: {solid:g})"]
    return FreeRigid(table, solver=solver, used=[state, masses[0], solver, *used],
                     collides=bool(components_of(child, _COLLISION_MODELS)), notes=notes)


def static_box(node: Node, scene_dir: Path, placement_of) -> StaticBox:
    """The ``[[obstacle]]`` box of a candidate ``node`` (:func:`is_candidate`) that no ODE solver integrates
    (STLIB's ``Floor`` and ``isAStaticObject`` objects) on SOFA's ``mesh/floor.obj`` or ``mesh/cube.obj``: the
    mesh's box x its scale, moved by the frame; the frame may turn it only by quarter turns (an obstacle box is
    axis-aligned). NotTranslated says why not."""
    if nearest_component(node, _ODE) is not None:
        raise NotTranslated("an ODE solver integrates it: a moving body, not an obstacle")
    child = _collision_child(node)
    if child is None:
        raise NotTranslated(f"no collision child (a node with a RigidMapping and a loader of SOFA's {SOFA_FLOOR} or "
                            f"{SOFA_CUBE}): its shape is unknown")
    local_center, half, used = _sofa_box(child, scene_dir, placement_of, tuple(SOFA_BOXES))
    try:
        center, orientation = _frame(_rigid_state(node), placement_of)
    except ValueProblem as error:
        raise NotTranslated(str(error)) from None
    turn = orientation.as_matrix()
    if not np.allclose(np.abs(turn), np.round(np.abs(turn)), atol=1e-9):
        angles = [_clean(a) for a in orientation.as_euler("xyz", degrees=True)]
        raise NotTranslated(f"its frame turns the box by {angles} degrees; an [[obstacle]] box is axis-aligned "
                            f"(quarter turns only)")
    table = {"type": "box", "center": [_clean(v) for v in center + turn @ local_center],
             "halfExtents": [_clean(v) for v in np.abs(turn) @ half]}
    loader = next(c for c in used if c.type in _SURFACE_LOADERS)
    notes = [f"{node.getPathName()}: a static rigid object (no ODE solver) on SOFA's "
             f"{loader.data.get('filename')}, an [[obstacle]] box (centre {table['center']}, half sizes "
             f"{table['halfExtents']})"]
    masses = components_of(node, {"UniformMass"})
    return StaticBox(table, used=[_rigid_state(node), *masses, *used], notes=notes)


def static_surface(node: Node, scene_dir: Path, placement_of) -> StaticBox:
    """The ``[[obstacle]]`` box of a static collision surface: a node with a Vec3 MechanicalObject, collision models
    and a loader of SOFA's ``mesh/square1.obj`` (:data:`SOFA_SQUARE`), with no mapping, no force field and no ODE
    solver (CircularRobot's Floor). The square, placed by the loader and the MechanicalObject, is the box's face on
    the side of its normal; the box extends :data:`SQUARE_DEPTH` x its side behind it (SOFA's square is a surface
    without thickness, touched from its normal's side). The placement may turn the square by quarter turns only
    (an obstacle box is axis-aligned). NotTranslated says why not."""
    state = node.getMechanicalState()
    if state is None or str(state.data.get("template", "Vec3")).startswith("Rigid"):
        raise NotTranslated("not a Vec3 collision object")
    if nearest_component(node, _ODE) is not None:
        raise NotTranslated("an ODE solver integrates it: it moves in SOFA")
    loaders = components_of(node, _SURFACE_LOADERS)
    if len(loaders) != 1:
        raise NotTranslated(f"{len(loaders)} mesh loaders, expected one loading SOFA's {SOFA_SQUARE}")
    loader = loaders[0]
    filename = str(loader.data.get("filename", "")).replace("\\", "/").removeprefix("./")
    if filename != SOFA_SQUARE:
        raise NotTranslated(f"{loader.getPathName()}: collision mesh {filename!r}; of the static surfaces only "
                            f"SOFA's own {SOFA_SQUARE} (a square) is translated")
    if (scene_dir / filename).is_file():
        raise NotTranslated(f"{loader.getPathName()}: {filename!r} is a file beside the scene, not SOFA's installed "
                            f"{filename}: its shape is unknown")
    try:
        placement = placement_of(loader).then(placement_of(state))
    except ValueProblem as error:
        raise NotTranslated(str(error)) from None
    turn = placement.rotation.as_matrix()
    if not np.allclose(np.abs(turn), np.round(np.abs(turn)), atol=1e-9):
        angles = [_clean(a) for a in placement.rotation.as_euler("xyz", degrees=True)]
        raise NotTranslated(f"{loader.getPathName()}: the square is turned by {angles} degrees; an [[obstacle]] box "
                            f"is axis-aligned (quarter turns only)")
    side = placement.scale
    depth = SQUARE_DEPTH * side
    local_center = np.array([0.5 * side, 0.5 * side, -0.5 * depth])  # the square's frame: its normal is +z
    half = np.array([0.5 * side, 0.5 * side, 0.5 * depth])
    table = {"type": "box", "center": [_clean(v) for v in turn @ local_center + placement.translation],
             "halfExtents": [_clean(v) for v in np.abs(turn) @ half]}
    normal = [_clean(v) for v in turn[:, 2]]
    notes = [f"{node.getPathName()}: a static collision surface on SOFA's {SOFA_SQUARE} (the unit square in z = 0, "
             f"normal +z) x {side:g}, placed by {loader.getPathName()}: an [[obstacle]] box whose face with normal "
             f"{normal} is the square, {depth:g} deep behind it (centre {table['center']}, half sizes "
             f"{table['halfExtents']})"]
    used = [loader, state, *components_of(node, _TOPOLOGIES | _COLLISION_MODELS)]
    return StaticBox(table, used=used, notes=notes)


def _clean(value: float) -> float:
    rounded = round(float(value), 9)
    return 0.0 if rounded == 0 else rounded
