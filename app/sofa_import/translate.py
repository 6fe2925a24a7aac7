"""Translation of a recorded SOFA graph into softsim's scene data (the TOML tables of docs/scene-format.md).

A *body* is a node holding a MechanicalObject and a tetrahedral force field (TetrahedronFEMForceField) over a
mesh loader. Its placement, material, mass, fixed regions (ROIs held by rest-shape springs or fixed
constraints, in the node or in a node that has it as a parent), stacked force fields of sub-topologies, and the
actuators and effectors of its mapped child nodes (a MechanicalObject with a BarycentricMapping) become the
``[[body]]`` tables. The root gives gravity and dt, the constraint solver ``[solver.constraint]`` or
``[solver.inverse]``, the collision pipeline ``[collision]``; the ODE solver over a body gives the mode.
A free rigid body on SOFA's cube mesh (STLIB's ``Cube``) becomes a ``[[rigid]]`` box
(:mod:`app.sofa_import.free_rigid`).
Every other component goes to the :class:`~app.sofa_import.report.ImportReport`. See docs/sofa-import.md for
the table of components and fields.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from softsim.app.sofa_import.animation import animation_keyframes
from softsim.app.sofa_import.free_rigid import NotTranslated, free_rigid, is_candidate, static_box, static_surface
from softsim.app.sofa_import.graph import Component, Link, Node, components_of, nearest_component
from softsim.app.sofa_import.report import ImportReport
from softsim.app.sofa_import.rigid import (
    FRAME,
    FRAME_REST,
    HARDWARE,
    RADIANS,
    RADIANS_VEC,
    RELEASED,
    matching_rois,
    rigid_groups,
    rigid_poses,
)
from softsim.app.sofa_import.values import (
    Ref,
    ValueProblem,
    as_bool,
    as_float,
    as_floats,
    as_ints,
    as_points,
    follow,
)
from softsim.mechanics.scene.schema import BodySpec, MaterialSpec, schema_fields

__all__ = ["Placement", "Translation", "translate", "has_key", "placement_of", "in_oriented_box",
           "rotation_from_angles"]

VOLUME_LOADERS = {"MeshVTKLoader", "MeshGmshLoader", "GIDMeshLoader", "MeshXspLoader", "MeshExtendedVTKLoader"}
SURFACE_LOADERS = {"MeshOBJLoader", "MeshObjLoader", "MeshSTLLoader", "MeshOffLoader", "MeshVTKLoader",
                   "MeshGmshLoader"}
LOADERS = VOLUME_LOADERS | SURFACE_LOADERS
TOPOLOGIES = {"MeshTopology", "TetrahedronSetTopologyContainer", "TriangleSetTopologyContainer",
              "TetrahedronSetTopologyModifier", "TriangleSetTopologyModifier", "TetrahedronSetGeometryAlgorithms",
              "TriangleSetGeometryAlgorithms", "TetrahedronSetTopologyAlgorithms"}
FEM = {"TetrahedronFEMForceField", "TetrahedralCorotationalFEMForceField", "FastTetrahedralCorotationalForceField"}
MASSES = {"UniformMass", "MeshMatrixMass", "DiagonalMass"}
FIXERS = {"RestShapeSpringsForceField", "FixedConstraint", "FixedProjectiveConstraint", "PartialFixedConstraint",
          "PartialFixedProjectiveConstraint"}
ROIS = {"BoxROI", "SphereROI"}
ODE = {"EulerImplicitSolver", "StaticSolver", "NewtonRaphsonSolver", "StaticODESolver", "EulerImplicit"}
CONSTRAINT_SOLVERS = {"GenericConstraintSolver", "BlockGaussSeidelConstraintSolver", "ImprovedJacobiConstraintSolver",
                      "QPInverseProblemSolver", "UnbuiltGaussSeidelConstraintSolver", "NNCGConstraintSolver",
                      "LCPConstraintSolver"}
CABLES = {"CableConstraint", "CableActuator"}
CAVITIES = {"SurfacePressureConstraint", "SurfacePressureActuator", "SurfacePressureEquality"}
EFFECTORS = {"PositionEffector"}
COLLISION_MODELS = {"TriangleCollisionModel", "LineCollisionModel", "PointCollisionModel", "SphereCollisionModel",
                    "TTriangleModel", "TLineModel", "TPointModel", "CubeModel"}
TRIANGLE_MODELS = {"TriangleCollisionModel", "TTriangleModel"}
PIPELINE = {"CollisionPipeline", "DefaultPipeline", "BruteForceBroadPhase", "BVHNarrowPhase", "BruteForceDetection",
            "CollisionResponse", "DefaultContactManager", "RuleBasedContactManager", "LocalMinDistance",
            "MinProximityIntersection", "NewProximityIntersection", "DiscreteIntersection"}
#: done by softsim's own solvers or meaningless here: not translated, named once in the report
IMPLIED = {"RequiredPlugin", "SparseLDLSolver", "CGLinearSolver", "SparseCholeskySolver", "EigenSimplicialLDLT",
           "EigenSparseLU", "AsyncSparseLDLSolver", "ShewchukPCGLinearSolver", "PCGLinearSolver",
           "GenericConstraintCorrection", "LinearSolverConstraintCorrection", "UncoupledConstraintCorrection",
           "PrecomputedConstraintCorrection", "FreeMotionAnimationLoop", "DefaultAnimationLoop",
           "DefaultVisualManagerLoop", "VisualLoop", "AddDataRepository", "AddResourceRepository",
           "AddPluginRepository", "InfoComponent", "MeshExporter", "VTKExporter", "VolumeFromTriangles"}
VISUAL = {"OglModel", "VisualStyle", "OglSceneFrame", "BackgroundSetting", "VisualModel", "OglGrid", "OglLabel",
          "LightManager", "DirectionalLight", "PositionalLight", "SpotLight", "OglShader", "OglTexture",
          "VisualModelImpl", "InteractiveCamera", "Camera", "ClipPlane", "OglLineAxis", "OglColorMap",
          "AttachBodyButtonSetting", "ViewerSetting", "MouseButtonSetting", "VisualGrid", "LineAxis",
          "OglCylinderModel", "SofaSceneFrame", "DataDisplay", "IdentityMapping"}


#: a body larger than this (in the file's units) with no SoftRobots-like gravity is taken to be in millimetres
MM_EXTENT = 5.0


def has_key(cls: type, key: str) -> bool:
    """Whether the scene format declares the TOML ``key`` in the table class ``cls`` (keys another helper may
    be adding: the translation uses them only once they exist)."""
    return any(k == key for k, *_ in schema_fields(cls))


@dataclass
class ControllerRecord:
    """A Python controller found in the scene: its graph path, class name and the instance."""

    path: str
    class_name: str
    instance: Any


@dataclass
class Translation:
    """The scene data (nested dicts as tomllib gives), the report, the controllers, and where each translated
    data field went: ``bindings`` maps ``(component path, field)`` to a scene key path."""

    data: dict[str, Any]
    report: ImportReport
    controllers: list[ControllerRecord] = field(default_factory=list)
    bindings: dict[tuple[str, str], str] = field(default_factory=dict)


def rotation_from_angles(angles) -> Rotation:
    """The rotation of SOFA's ``rotation`` data: x-y-z fixed-axis angles (3,) in degrees."""
    return Rotation.from_euler("xyz", angles, degrees=True)


@dataclass
class Placement:
    """The transform ``x = R (s X) + t`` a loader or a MechanicalObject applies (:func:`placement_of`): scale s,
    rotation R (:func:`rotation_from_angles`), translation t (3,). Points are (k, 3)."""

    scale: float = 1.0
    rotation: Rotation = field(default_factory=Rotation.identity)
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def then(self, other: Placement) -> Placement:
        """This placement followed by ``other``."""
        return Placement(self.scale * other.scale, other.rotation * self.rotation,
                          other.scale * other.rotation.apply(self.translation) + other.translation)

    def apply(self, points: np.ndarray) -> np.ndarray:
        return self.rotation.apply(np.asarray(points, dtype=float) * self.scale) + self.translation

    def inverse_apply(self, points: np.ndarray) -> np.ndarray:
        return self.rotation.inv().apply(np.asarray(points, dtype=float) - self.translation) / self.scale

    def equals(self, other: Placement) -> bool:
        return (math.isclose(self.scale, other.scale) and np.allclose(self.translation, other.translation)
                and np.allclose(self.rotation.as_matrix(), other.rotation.as_matrix(), atol=1e-12))

    @property
    def angles(self) -> list[float]:
        return [_clean(a) for a in self.rotation.as_euler("xyz", degrees=True)]


def _clean(value: float) -> float:
    """A float without round-off noise (1e-15 -> 0, 89.99999999999999 -> 90)."""
    rounded = round(float(value), 9)
    return 0.0 if rounded == 0 else rounded


def _scalar_actuator(data: dict, what: str, kinds: tuple[str, str], keys: tuple[str, ...]) -> dict[str, Any]:
    """A SoftRobots cable's or cavity's ``valueType`` (SOFA's 0 / 1 for ``kinds``, or the name; default
    ``kinds[0]``), ``value`` (its first entry) and the numbers ``keys`` among its ``data``, as scene keys;
    ``what`` names the component in messages."""
    found: dict[str, Any] = {}
    value_type = str(data.get("valueType", kinds[0])).strip()
    found["valueType"] = {"0": kinds[0], "1": kinds[1]}.get(value_type, value_type)
    if "value" in data:
        values = as_floats(data["value"], f"{what}.value")
        found["value"] = values[0] if values else 0.0
    for key in keys:
        if key in data:
            found[key] = as_float(data[key], f"{what}.{key}")
    return found


def placement_of(component: Component | None) -> Placement:
    """The transform a loader or a MechanicalObject applies (translation, rotation, scale/scale3d, and the
    MechanicalObject's dx, dy, dz, rx, ry, rz)."""
    if component is None:
        return Placement()
    what = component.getPathName()
    data = component.data
    translation = np.asarray(as_floats(data.get("translation", [0, 0, 0]), f"{what}.translation"), dtype=float)
    angles = np.asarray(as_floats(data.get("rotation", [0, 0, 0]), f"{what}.rotation"), dtype=float)
    for axis, key in enumerate("xyz"):
        if f"d{key}" in data:
            translation[axis] += as_float(data[f"d{key}"], f"{what}.d{key}")
        if f"r{key}" in data:
            angles[axis] += as_float(data[f"r{key}"], f"{what}.r{key}")
    scales = []
    for key in ("scale", "scale3d"):
        if key in data:
            values = as_floats(data[key], f"{what}.{key}")
            scales.append(values * 3 if len(values) == 1 else values)
    scale = 1.0
    for values in scales:
        if not np.allclose(values, values[0]):
            raise ValueProblem(f"{what}: a non-uniform scale {values} (softsim's body.scale is one factor)")
        scale *= values[0]
    if len(translation) != 3 or len(angles) != 3:
        raise ValueProblem(f"{what}: translation and rotation need 3 numbers each")
    return Placement(scale, rotation_from_angles(angles), translation)


class _Translator:
    def __init__(self, root: Node, source: Path, base_dir: Path, artifacts: Path | None) -> None:
        self.root, self.source, self.base_dir, self.artifacts = root, source, base_dir, artifacts
        self.report = ImportReport(source.name)
        self.used: set[int] = set()
        self.names: set[str] = set()
        self.bindings: dict[tuple[str, str], str] = {}
        self.dynamic: list[tuple[str, Component]] = []
        self.static: list[Component] = []

    # -- helpers ---------------------------------------------------------------------------------------
    def use(self, *components: Component | None) -> None:
        for component in components:
            if component is not None:
                self.used.add(id(component))

    def components(self, node: Node, types: set[str]) -> list[Component]:
        return components_of(node, types)

    def first(self, node: Node, types: set[str]) -> Component | None:
        found = self.components(node, types)
        return found[0] if found else None

    def file_path(self, component: Component) -> Path:
        filename = component.data.get("filename")
        if filename is None:
            raise ValueProblem(f"{component.getPathName()}: no filename")
        path = Path(str(filename)).expanduser()
        if not path.is_absolute():
            path = self.source.parent / path
        if not path.is_file():
            raise ValueProblem(f"{component.getPathName()}: filename {filename!r}: no such file ({path})")
        return path.resolve()

    def relative(self, path: Path) -> str:
        """``path`` relative to the scene's folder, or absolute when that would climb more than two folders."""
        relative = Path(os.path.relpath(path, self.base_dir))
        return path.as_posix() if relative.parts.count("..") > 2 else relative.as_posix()

    def actuator_name(self, node: Node, component: Component) -> str:
        """The component's own name when the script gave one that no other actuator or effector shares, else
        its node's name (trunk.py names all eight cables 'cable', in nodes cableL0 ... cableS3)."""
        actuators = [(n, c) for n in self.root.walk() for c in self.components(n, CABLES | CAVITIES | EFFECTORS)]
        shared = sum(1 for _, c in actuators if c.explicit_name and c.name == component.name)
        wanted = component.name if component.explicit_name and shared == 1 else node.name
        if wanted == node.name and sum(1 for n, _ in actuators if n.name == node.name) > 1 and node.parents:
            wanted = f"{self.current_body.name}_{node.name}"  # three fingers' 'Cavity' nodes: Finger1_Cavity, ...
        return self.unique_name(wanted, node.name)

    def unique_name(self, wanted: str, fallback: str) -> str:
        name = wanted if wanted and wanted not in self.names else fallback
        base, index = name, 1
        while name in self.names:
            name = f"{base}{index}"
            index += 1
        self.names.add(name)
        return name

    def placement(self, component: Component | None) -> Placement:
        """The transform a loader or a MechanicalObject applies (:func:`placement_of`)."""
        return placement_of(component)

    # -- bodies ----------------------------------------------------------------------------------------
    def body_nodes(self) -> list[Node]:
        bodies = []
        for node in self.root.walk():
            state = node.getMechanicalState()
            if state is None or str(state.data.get("template", "Vec3")).startswith("Rigid"):
                continue
            if self.components(node, FEM):
                bodies.append(node)
        return bodies

    def mesh_loader(self, node: Node) -> Component:
        """The loader of the body's volume mesh: followed from the MechanicalObject's or topology's links."""
        candidates: list[Component] = []
        for component in [node.getMechanicalState(), *self.components(node, TOPOLOGIES)]:
            for key in ("src", "position", "tetrahedra", "tetras"):
                if component is None or key not in component.data:
                    continue
                value = follow(component, key)
                if isinstance(value, Ref) and value.component.type in LOADERS:
                    candidates.append(value.component)
        candidates += self.components(node, VOLUME_LOADERS)
        if not candidates:
            raise ValueProblem(f"{node.getPathName()}: a force field on a mechanical object with no mesh loader "
                               f"(MeshVTKLoader, MeshGmshLoader, GIDMeshLoader) to read its tetrahedra from")
        return candidates[0]

    def mode_solver(self, node: Node) -> Component | None:
        """The ODE solver that integrates ``node``: in it or in its nearest ancestor that has one."""
        return nearest_component(node, ODE)

    def context_nodes(self, body: Node, bodies: list[Node]) -> list[Node]:
        """Nodes whose components act on ``body``'s mechanical object: the body node and the nodes below or
        beside it that have no mechanical object of their own (a FixedBox prefab's 'Constraint' child)."""
        result = [body]
        for node in self.root.walk():
            if node is body or node.getMechanicalState() is not None or node in bodies:
                continue
            frontier = list(node.parents)
            seen = set()
            while frontier:
                parent = frontier.pop(0)
                if id(parent) in seen:
                    continue
                seen.add(id(parent))
                if parent is body:
                    result.append(node)
                    break
                if parent.getMechanicalState() is None:
                    frontier += parent.parents
        return result

    def translate_body(self, node: Node, bodies: list[Node]) -> dict[str, Any]:
        self.current_body = node
        name = self.unique_name(node.name, "body")
        loader = self.mesh_loader(node)
        mesh_file = self.file_path(loader)
        state = node.getMechanicalState()
        self.use(loader, state, *self.components(node, TOPOLOGIES))
        placement = self.placement(loader).then(self.placement(state))
        body: dict[str, Any] = {"name": name, "mesh": self.relative(mesh_file)}
        if not math.isclose(placement.scale, 1.0):
            body["scale"] = placement.scale
        if np.any(placement.translation):
            body["translation"] = [_clean(v) for v in placement.translation]
        if any(placement.angles):
            body["rotation"] = placement.angles
        body["material"] = self.material(node)
        fixed, stacked = [], []
        self.fixed_bindings: dict[str, int] = {}
        for context in self.context_nodes(node, bodies):
            fixed += self.fixed(context, body, name)
        for what, index in self.fixed_bindings.items():
            self.bindings[(what, "translation")] = f"body.{name}.fixed[{index}].translation"
        fixed += self.rigid_frames(node, name, len(fixed), body)
        if fixed:  # moving the rest positions moves the fixed regions' targets (a translation of every node)
            regions = ",".join(str(i) for i in range(len(fixed)))
            self.bindings[(state.getPathName(), "rest_position")] = f"rest_position:{name}:{regions}"
        for child in node.children:
            if child.getMechanicalState() is None and self.components(child, FEM):
                stacked += self.stacked(child)
        if stacked:
            if has_key(MaterialSpec, "stacked"):
                body["material"]["stacked"] = stacked
            else:
                for child in node.children:
                    for component in self.components(child, FEM):
                        self.used.discard(id(component))
        if fixed:
            body["fixed"] = fixed
        self.body_mode(node)
        self.actuators(node, body, name, placement, mesh_file)
        self.collision_surface(node, body, name, placement)
        return body

    def rigid_frames(self, node: Node, name: str, first: int, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The body's nodes carried by prescribed rigid frames (Rigidify + RigidMapping, a held frame or a servo's
        joint), as fixed regions from index ``first`` on; those of a free frame (nothing holds or drives it) as a
        ``[[body.rigidGroup]]`` of ``body``; a frame that cannot be followed is reported
        (:mod:`app.sofa_import.rigid`)."""
        groups = rigid_groups(self.root, node)
        regions: list[dict[str, Any]] = []
        for group in groups:
            self.use(*group.used)
            frame = f"{group.frame.getPathName()}[{group.index}]"
            if group.free and len(group.nodes) >= 3:
                body.setdefault("rigidGroup", []).append({"indices": sorted(group.nodes)})
                index = len(body["rigidGroup"]) - 1
                self.report.notes.append(f"{group.frame.getPathName()}: a free rigid frame (nothing holds or drives "
                                         f"it) carrying {len(group.nodes)} nodes of {name}: body.{name}.rigidGroup["
                                         f"{index}] (they move as one rigid piece; the frame has no mass of its own)")
                self.frame_effectors(group, body, name)
                continue
            if group.pose is None:
                self.report.skip(group.frame.getPathName(), group.frame.type, f"{group.why}: the {len(group.nodes)} "
                                 f"nodes of {name} it carries rigidly stay deformable", mechanics=True)
                continue
            pose = group.pose
            self.use(*pose.used)
            region: dict[str, Any] = {"indices": sorted(group.nodes)}
            index = first + len(regions)
            if pose.angle is None:
                self.report.notes.append(f"{frame}: a held rigid frame carrying {len(group.nodes)} nodes of {name}: "
                                         f"body.{name}.fixed[{index}] ({pose.source})")
            else:
                region.update(angle=_clean(pose.angle), axis=[_clean(v) for v in pose.axis],
                              center=[_clean(v) for v in pose.center])
                key = f"{RADIANS}body.{name}.fixed[{index}].angle"
                for path, data in [*pose.angle_fields, *pose.angle_readers]:
                    self.bindings[(path, data)] = key
                if pose.angles is not None:  # the joint-angle object's own fields: [[radians]] (controllers read
                    for data in ("position", "rest_position"):  # Articulation.dofs.position[0][0])
                        self.bindings[(pose.angles.getPathName(), data)] = \
                            f"{RADIANS_VEC}body.{name}.fixed[{index}].angle"
                if pose.base is not None and len(rigid_poses(pose.base)) == 1:  # a script may slide the servo
                    position, orientation = rigid_poses(pose.base)[0]
                    origin = ",".join(repr(float(v)) for v in [*position, *orientation.as_quat()])
                    translation = f"body.{name}.fixed[{index}].translation"
                    self.bindings[(pose.base.getPathName(), "position")] = f"{FRAME}{origin}:{translation}"
                    self.bindings[(pose.base.getPathName(), "rest_position")] = f"{FRAME_REST}{origin}:{translation}"
                self.report.notes.append(f"{frame}: a servo's rigid frame carrying {len(group.nodes)} nodes of {name}, "
                                         f"turning about {region['axis']} through {region['center']}: "
                                         f"body.{name}.fixed[{index}].angle in degrees (the joint "
                                         f"{pose.source}, in radians there)")
                if pose.actuator is not None:
                    region.update(self.joint_actuator(pose.actuator, f"body.{name}.fixed[{index}]"))
                    for holder in [pose.actuator.node, *pose.actuator.node.parents]:  # the joint's spring (I key)
                        for spring in self.components(holder, {"RestShapeSpringsForceField"}):
                            self.bindings[(spring.getPathName(), "stiffness")] = \
                                f"{RELEASED}body.{name}.fixed[{index}].actuated"
            regions.append(region)
        if groups:
            self.use(*matching_rois(self.root, groups, self.source.parent))
        return regions

    def joint_actuator(self, actuator: Component, path: str) -> dict[str, Any]:
        """A servo's JointActuator (SoftRobots.Inverse): the region becomes ``actuated``, its angle chosen by the
        inverse frames within ``minAngle`` / ``maxAngle`` and ``maxAngleVariation`` per frame (radians there,
        degrees here)."""
        what = actuator.getPathName()
        data = actuator.data
        self.use(actuator)
        entry: dict[str, Any] = {"actuated": True}
        for key in ("minAngle", "maxAngle", "maxAngleVariation"):
            if key in data:
                entry[key] = _clean(math.degrees(as_float(data[key], f"{what}.{key}")))
        for key in ("minEffort", "maxEffort", "maxEffortVariation", "initEffort"):
            if key in data:
                self.report.skip(what, actuator.type, f"{key} is not translated (softsim's servos bound the angle "
                                 f"only)", mechanics=True)
        if "initAngle" in data and as_float(data["initAngle"], f"{what}.initAngle") != 0.0:
            self.report.skip(what, actuator.type, "initAngle is not translated (the angle starts at the servo's "
                             "own)", mechanics=True)
        inactive = str(actuator.node.data.get("activated", True)).lower() in ("0", "false")
        self.report.notes.append(
            f"{what}: the servo's angle is chosen by the inverse frames: {path}.actuated"
            + (f", within [{entry.get('minAngle', '-inf')}, {entry.get('maxAngle', 'inf')}] degrees" if
               "minAngle" in entry or "maxAngle" in entry else "")
            + (f", at most {entry['maxAngleVariation']} degrees per frame" if "maxAngleVariation" in entry else "")
            + (" (SOFA starts it deactivated until a controller activates it; softsim uses it from the first "
               "frame)" if inactive else ""))
        return entry

    def material(self, node: Node) -> dict[str, Any]:
        fem = self.components(node, FEM)
        for extra in fem[1:]:
            self.report.skip(extra.getPathName(), extra.type, "a second force field on the same elements "
                             "(softsim has one material per element)", mechanics=True)
        force = fem[0]
        self.use(force)
        what = force.getPathName()
        young = as_floats(force.data.get("youngModulus", 5000), f"{what}.youngModulus")
        poisson = as_floats(force.data.get("poissonRatio", 0.45), f"{what}.poissonRatio")
        if len(set(young)) > 1 or len(set(poisson)) > 1:
            self.report.notes.append(f"{what}: per-element youngModulus/poissonRatio lists; the first value is used")
        material: dict[str, Any] = {"model": "corotational", "youngModulus": young[0], "poissonRatio": poisson[0]}
        method = str(force.data.get("method", "large")).strip()
        if force.type != "TetrahedronFEMForceField":
            material["rotation_method"] = "polar" if force.type == "TetrahedralCorotationalFEMForceField" else "large"
        elif method == "small":
            material = {"model": "linear", "youngModulus": young[0], "poissonRatio": poisson[0]}
        elif method in ("large", "polar", "svd"):
            material["rotation_method"] = method
        else:
            raise ValueProblem(f"{what}.method: {method!r} is not one of small, large, polar, svd")
        mass = self.first(node, MASSES)
        if mass is not None:
            self.use(mass)
            material.update(self.mass(mass))
        for extra in self.components(node, MASSES)[1:]:
            self.report.skip(extra.getPathName(), extra.type, "a second mass component", mechanics=True)
        return material

    def mass(self, mass: Component) -> dict[str, Any]:
        what = mass.getPathName()
        data = mass.data
        if "totalMass" in data:
            return {"totalMass": as_float(data["totalMass"], f"{what}.totalMass")}
        if "massDensity" in data:
            return {"massDensity": as_floats(data["massDensity"], f"{what}.massDensity")[0]}
        if "vertexMass" in data:
            self.report.notes.append(f"{what}: vertexMass is per node; totalMass is vertexMass times the node count")
            return {"_vertexMass": as_floats(data["vertexMass"], f"{what}.vertexMass")[0]}
        if mass.type == "UniformMass":  # SOFA's default: vertexMass 1 on every node
            self.report.notes.append(f"{what}: no mass given: SOFA's default of 1 per node")
            return {"_vertexMass": 1.0}
        return {"massDensity": 1.0}

    def roi_regions(self, roi: Component) -> list[dict[str, Any]]:
        """A BoxROI's boxes (or oriented boxes, as node indices) / a SphereROI's spheres, as region tables."""
        what = roi.getPathName()
        self.use(roi)
        if roi.type == "SphereROI":
            centers = as_points(roi.data.get("centers", []), f"{what}.centers")
            radii = as_floats(roi.data.get("radii", []), f"{what}.radii")
            if len(radii) == 1:
                radii = radii * len(centers)
            return [{"sphere": {"center": c, "radius": r}} for c, r in zip(centers, radii)]
        regions = []
        if "box" in roi.data:
            numbers = as_floats(roi.data["box"], f"{what}.box")
            if len(numbers) % 6:
                raise ValueProblem(f"{what}.box: {len(numbers)} numbers; each box is xmin ymin zmin xmax ymax zmax")
            for i in range(0, len(numbers), 6):
                low = np.minimum(numbers[i:i + 3], numbers[i + 3:i + 6])
                high = np.maximum(numbers[i:i + 3], numbers[i + 3:i + 6])
                regions.append({"box": [float(v) for v in (*low, *high)]})
        if "orientedBox" in roi.data:
            regions.append({"_orientedBox": as_floats(roi.data["orientedBox"], f"{what}.orientedBox")})
        return regions

    def index_source(self, component: Component, key: str) -> list[dict[str, Any]] | None:
        """The regions that ``component.key`` (points / indices) names: a link to an ROI's indices, or a list."""
        if key not in component.data:
            return None
        value = follow(component, key)
        if isinstance(value, Ref):
            if value.component.type in ROIS and value.field in ("indices", "pointsInROI"):
                regions = self.roi_regions(value.component)
                owner = self.roi_body(value.component)
                if owner is not None and owner is not self.current_body:
                    # SOFA applies the indices another body's ROI selected (step7-withSTLIB's fingers 2 and 3 use
                    # Finger1's boxROI): the same node ids, evaluated on that body's placed mesh
                    indices = self.indices_on(owner, regions)
                    self.report.notes.append(f"{component.getPathName()}.{key}: the indices of "
                                             f"{value.component.getPathName()} (another body's region): node ids "
                                             f"{len(indices)} selected on {owner.getPathName()}")
                    return [{"indices": indices}]
                return regions
            raise ValueProblem(f"{component.getPathName()}.{key}: links to {value.component.getPathName()}."
                               f"{value.field}, which the importer cannot evaluate (a BoxROI or SphereROI's indices "
                               f"can be)")
        indices = as_ints(value, f"{component.getPathName()}.{key}")
        return [{"indices": indices}] if indices else []

    def roi_body(self, roi: Component) -> Node | None:
        """The body node whose positions ``roi`` selects from (its node or the nearest ancestor that is a body)."""
        frontier, seen = [roi.node], set()
        while frontier:
            node = frontier.pop(0)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node in self.bodies:
                return node
            frontier += node.parents
        return None

    def indices_on(self, body: Node, regions: list[dict[str, Any]]) -> list[int]:
        """The node ids the regions select on ``body``'s placed mesh."""
        from softsim import meshes

        loader = self.mesh_loader(body)
        placement = self.placement(loader).then(self.placement(body.getMechanicalState()))
        points = placement.apply(meshes.load(self.file_path(loader)).points)
        selected: set[int] = set()
        for region in regions:
            if "_orientedBox" in region:
                selected |= set(in_oriented_box(points, region["_orientedBox"]).tolist())
            elif "box" in region:
                selected |= set(meshes.in_box(points, region["box"]).tolist())
            elif "sphere" in region:
                selected |= set(meshes.in_sphere(points, region["sphere"]["center"],
                                                 region["sphere"]["radius"]).tolist())
        return sorted(int(i) for i in selected)

    def fixed(self, node: Node, body: dict[str, Any], body_name: str) -> list[dict[str, Any]]:
        regions = []
        for component in self.components(node, FIXERS):
            what = component.getPathName()
            if component.type.startswith("Partial"):
                directions = as_ints(component.data.get("fixedDirections", [1, 1, 1]), f"{what}.fixedDirections")
                if directions != [1, 1, 1]:
                    self.report.skip(what, component.type, f"fixes only the directions {directions} (softsim fixes "
                                     "whole nodes)", mechanics=True)
                    continue
            key = "points" if component.type == "RestShapeSpringsForceField" else "indices"
            if component.type == "RestShapeSpringsForceField":
                stiffness = as_floats(component.data.get("stiffness", 1.0), f"{what}.stiffness")[0]
                if stiffness < 1e8:
                    self.report.skip(what, component.type, f"springs of stiffness {stiffness:g} (softsim has fixed "
                                     "nodes, not soft springs to the rest shape)", mechanics=True)
                    continue
                if "external_rest_shape" in component.data:
                    self.report.skip(what, component.type, "springs to another object's shape", mechanics=True)
                    continue
            if as_bool(component.data.get("fixAll")):
                found = [{"box": [-1e30, -1e30, -1e30, 1e30, 1e30, 1e30]}]
            else:
                found = self.index_source(component, key)
                if found is None:
                    if component.type == "RestShapeSpringsForceField":
                        found = [{"box": [-1e30, -1e30, -1e30, 1e30, 1e30, 1e30]}]
                        self.report.notes.append(f"{what}: no points: every node is held, as SOFA does")
                    else:
                        self.report.skip(what, component.type, "no indices: fixes nothing", mechanics=False)
                        continue
            self.use(component)
            if found:  # a controller moving this component's rest shape moves the first region it names
                self.fixed_bindings[what] = len(body.get("fixed", [])) + len(regions)
            regions += found
        return regions

    def stacked(self, child: Node) -> list[dict[str, Any]]:
        """A child without a mechanical object whose topology takes a BoxROI's tetrahedraInROI (or explicit
        tetrahedra) and adds a force field on them: SOFA's stacked force fields."""
        result = []
        topology = self.first(child, TOPOLOGIES)
        for force in self.components(child, FEM):
            what = force.getPathName()
            entry: dict[str, Any] = {}
            if topology is not None and ("tetrahedra" in topology.data or "tetras" in topology.data):
                key = "tetrahedra" if "tetrahedra" in topology.data else "tetras"
                value = follow(topology, key)
                if isinstance(value, Ref) and value.component.type == "BoxROI" and value.field == "tetrahedraInROI":
                    boxes = [r["box"] for r in self.roi_regions(value.component) if "box" in r]
                    if len(boxes) != 1:
                        raise ValueProblem(f"{what}: a sub-topology of {len(boxes)} boxes (one is translated)")
                    entry["box"] = boxes[0]
                elif not isinstance(value, Ref):
                    entry["tetrahedra"] = as_ints(value, f"{topology.getPathName()}.{key}")
            if not entry:
                self.report.skip(what, force.type, "a force field on a sub-topology the importer cannot read",
                                 mechanics=True)
                continue
            method = str(force.data.get("method", "large")).strip()
            entry["model"] = "linear" if method == "small" else "corotational"
            if method in ("large", "polar", "svd"):
                entry["rotation_method"] = method
            entry["youngModulus"] = as_floats(force.data.get("youngModulus", 5000), f"{what}.youngModulus")[0]
            entry["poissonRatio"] = as_floats(force.data.get("poissonRatio", 0.45), f"{what}.poissonRatio")[0]
            self.use(force, topology)
            result.append(entry)
        return result

    def body_mode(self, node: Node) -> None:
        solver = self.mode_solver(node)
        if solver is None:
            return
        self.use(solver)
        if solver.type in ("EulerImplicitSolver", "EulerImplicit"):
            self.dynamic.append((node.getPathName(), solver))
        else:
            self.static.append(solver)

    # -- actuators and effectors -----------------------------------------------------------------------
    def mapped_points(self, node: Node, component: Component) -> list[list[float]]:
        """The positions of ``node``'s MechanicalObject (its own transform applied) that ``component``'s
        indices select."""
        state = node.getMechanicalState()
        what = component.getPathName()
        if state is None or "position" not in state.data:
            raise ValueProblem(f"{what}: the points it acts on (the MechanicalObject of {node.getPathName()}) have "
                               f"no position")
        self.use(state, *self.components(node, {"BarycentricMapping"}))
        value = follow(state, "position")
        if isinstance(value, Ref):
            raise ValueProblem(f"{state.getPathName()}.position links to {value.component.getPathName()}; the "
                               f"importer reads explicit positions")
        points = self.placement(state).apply(np.asarray(as_points(value, f"{state.getPathName()}.position")))
        indices = component.data.get("indices")
        selected = as_ints(indices, f"{what}.indices") if indices is not None else list(range(len(points)))
        if any(i >= len(points) or i < 0 for i in selected):
            raise ValueProblem(f"{what}.indices: {selected} goes beyond the {len(points)} points of "
                               f"{state.getPathName()}")
        return [[_clean(v) for v in points[i]] for i in selected]

    def actuators(self, node: Node, body: dict[str, Any], body_name: str, placement: Placement,
                  mesh_file: Path) -> None:
        for child in [node, *node.children]:
            mapped = child is not node
            if mapped and child.getMechanicalState() is None:
                continue
            if mapped and not self.components(child, {"BarycentricMapping"}):
                continue
            for component in self.components(child, CABLES):
                body.setdefault("cable", []).append(self.cable(child, component, body_name, mapped))
            for component in self.components(child, CAVITIES):
                body.setdefault("cavity", []).append(self.cavity(child, component, body_name, placement))
            for component in self.components(child, EFFECTORS):
                body.setdefault("effector", []).append(self.effector(child, component, body_name, mapped))
            for component in self.components(child, {"BarycentricCenterEffector"}):
                self.center_effector(component, body, body_name)
            planes = self.components(child, {"UnilateralPlaneConstraint"})
            if planes:
                self.planes(child, planes, body, body_name, placement, mesh_file, mapped)

    # -- collision surface --------------------------------------------------------------------------------
    def collision_nodes(self, node: Node) -> list[Node]:
        """The body's collision children: nodes below it (through nodes without a mechanical object, as the
        Trunk's CollisionModel/Part1, Part2) with a MechanicalObject, collision models and a BarycentricMapping."""
        found, frontier = [], list(node.children)
        while frontier:
            child = frontier.pop(0)
            if child.getMechanicalState() is None:
                frontier += child.children
            elif self.components(child, COLLISION_MODELS) and self.components(child, {"BarycentricMapping"}):
                found.append(child)
        return found

    def collision_surface(self, node: Node, body: dict[str, Any], name: str, placement: Placement) -> None:
        """The body's collision children as ``body.collisionMesh`` and ``body.collisionGroup``: each child's
        surface loader (through its topology's ``src``) placed by the loader and the child's MechanicalObject.
        One child placed as the body gives its file; otherwise the parts are written together, in the body's
        frame, beside the scene (:meth:`moved_surfaces`). A child without triangles (points or lines only) or a
        surface loader leaves the body touching with its own mesh's surface, noted."""
        children = self.collision_nodes(node)
        if not children:
            return
        self.collision_bodies.append(name)
        parts: list[tuple[Path, Placement]] = []
        groups: list[set[int]] = []
        for child in children:
            models = self.components(child, COLLISION_MODELS)
            state = child.getMechanicalState()
            self.use(*models, state, *self.components(child, LOADERS | TOPOLOGIES | {"BarycentricMapping"}))
            for model in models:
                value = model.data.get("group")
                groups.append(set(as_ints(value, f"{model.getPathName()}.group")) if value not in (None, "")
                              else set())
            loader = self.surface_loader(child)
            if loader is None or not any(m.type in TRIANGLE_MODELS for m in models):
                self.report.notes.append(f"{child.getPathName()}: a collision model without a triangle surface "
                                         f"loader (MeshSTLLoader, MeshOBJLoader): {name} touches with its mesh's "
                                         f"own surface")
                continue
            parts.append((self.file_path(loader), self.placement(loader).then(self.placement(state))))
        if parts:
            if len(parts) == 1 and parts[0][1].equals(placement):
                body["collisionMesh"] = self.relative(parts[0][0])
            else:
                body["collisionMesh"] = self.relative(self.moved_surfaces(parts, placement, f"{name}.collision"))
                self.report.notes.append(
                    f"{name}'s collision surface ({', '.join(p.name for p, _ in parts)}) is "
                    + ("placed differently from the body" if len(parts) == 1 else f"{len(parts)} parts")
                    + f": written together, in the body's frame, to {Path(body['collisionMesh']).name}")
            self.report.notes.append(f"{', '.join(c.getPathName() for c in children)}: the collision surface of "
                                     f"{name} (body.{name}.collisionMesh), its vertices carried by the tetrahedra "
                                     f"as SOFA's BarycentricMapping carries them")
        shared = set.intersection(*groups) if groups else set()
        if shared:
            body["collisionGroup"] = sorted(shared)
        if any(g != shared for g in groups):
            self.report.notes.append(f"{name}: its collision models have the groups "
                                     f"{sorted({tuple(sorted(g)) for g in groups})}; softsim's body has one "
                                     f"surface and takes the groups they all share ({sorted(shared) or 'none'})")

    def surface_loader(self, node: Node) -> Component | None:
        """The surface loader of a mapped child: its topology's ``src`` (or ``position``) link, or a loader in it."""
        for topology in self.components(node, TOPOLOGIES):
            for key in ("src", "position", "triangles"):
                if key in topology.data:
                    found = follow(topology, key)
                    if isinstance(found, Ref) and found.component.type in SURFACE_LOADERS:
                        return found.component
        return self.first(node, SURFACE_LOADERS)

    def moved_surfaces(self, parts: list[tuple[Path, Placement]], body: Placement, name: str) -> Path:
        """Surfaces placed by their own loaders, written as one triangle surface in the body's frame (the
        runtime applies the body's placement to it) to ``artifacts``."""
        import meshio

        from softsim import meshes

        if self.artifacts is None:
            raise ValueProblem(f"{name}: a surface placed differently from its body; import with --out to write it "
                               f"in the body's frame")
        points, triangles = [], []
        count = 0
        for path, placement in parts:
            loaded = meshes.load_surface(path)
            points.append(body.inverse_apply(placement.apply(loaded.points)))
            triangles.append(np.asarray(loaded.triangles, dtype=np.int64) + count)
            count += len(loaded.points)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        target = self.artifacts / f"{self.source.stem}.{name}.vtu"
        meshio.write(str(target), meshio.Mesh(np.concatenate(points), [("triangle", np.concatenate(triangles))]))
        return target

    def acting_on(self, node: Node, component: Component, mapped: bool, points_key: str) -> dict[str, Any]:
        """A cable's or effector's entry with its name and what it acts on: the positions its indices select in
        a mapped child ``node`` (under ``points_key``), or the body's node ``indices``."""
        entry: dict[str, Any] = {"name": self.actuator_name(node, component)}
        if mapped:
            entry[points_key] = self.mapped_points(node, component)
        else:
            entry["indices"] = as_ints(component.data.get("indices", []), f"{component.getPathName()}.indices")
        return entry

    def cable(self, node: Node, component: Component, body_name: str, mapped: bool) -> dict[str, Any]:
        what = component.getPathName()
        data = component.data
        cable = self.acting_on(node, component, mapped, "points")
        has_pull = as_bool(data.get("hasPullPoint"), True)
        if has_pull and "pullPoint" in data:
            cable["pullPoint"] = as_floats(data["pullPoint"], f"{what}.pullPoint")
        elif has_pull:  # SOFA's default pull point is the origin
            cable["pullPoint"] = [0.0, 0.0, 0.0]
        else:
            cable["hasPullPoint"] = False
        cable.update(_scalar_actuator(data, what, ("displacement", "force"), (
            "minForce", "maxForce", "maxPositiveDisp", "maxNegativeDisp", "maxDispVariation", "cableInitialLength")))
        self.use(component)
        self.bindings[(what, "value")] = f"body.{body_name}.cable.{cable['name']}.value"
        return cable

    def cavity(self, node: Node, component: Component, body_name: str, placement: Placement) -> dict[str, Any]:
        what = component.getPathName()
        data = component.data
        name = self.actuator_name(node, component)
        loader = None
        triangles = follow(component, "triangles") if "triangles" in data else None
        sources = []
        if isinstance(triangles, Ref):
            sources.append(triangles.component)
        sources += self.components(node, TOPOLOGIES)
        for source in sources:
            if source.type in LOADERS:
                loader = source
                break
            if "src" in source.data:
                found = follow(source, "src")
                if isinstance(found, Ref) and found.component.type in LOADERS:
                    loader = found.component
                    self.use(source)
                    break
        if loader is None:
            loader = self.first(node, SURFACE_LOADERS)
        if loader is None:
            raise ValueProblem(f"{what}: no surface loader for its triangles (MeshSTLLoader, MeshOBJLoader)")
        surface = self.file_path(loader)
        self.use(loader, node.getMechanicalState(), *self.components(node, TOPOLOGIES | {"BarycentricMapping"}))
        cavity_placement = self.placement(loader).then(self.placement(node.getMechanicalState()))
        cavity: dict[str, Any] = {"name": name}
        if cavity_placement.equals(placement):
            cavity["surface"] = self.relative(surface)
        else:
            cavity["surface"] = self.relative(self.moved_surface(surface, cavity_placement, placement, name))
            self.report.notes.append(f"{what}: the cavity surface is placed differently from the body; written, "
                                     f"in the body's frame, to {Path(cavity['surface']).name}")
        cavity.update(_scalar_actuator(data, what, ("pressure", "volumeGrowth"), (
            "minPressure", "maxPressure", "minVolumeGrowth", "maxVolumeGrowth", "maxPressureVariation",
            "maxVolumeGrowthVariation")))
        if "flipNormal" in data:
            cavity["flipNormal"] = as_bool(data["flipNormal"])
        if cavity["valueType"] == "pressure" and self.mode_solver(node) is not None and \
                self.mode_solver(node).type.startswith("EulerImplicit"):
            self.report.notes.append(f"{what}: a pressure value in a dynamic SOFA scene acts as pressure x dt "
                                     f"(SoftRobots issues #86, #290); kept as written ({cavity.get('value', 0.0)}), "
                                     f"which softsim reads as a pressure")
        self.use(component)
        self.bindings[(what, "value")] = f"body.{body_name}.cavity.{name}.value"
        return cavity

    def moved_surface(self, surface: Path, cavity: Placement, body: Placement, name: str) -> Path:
        """The cavity surface written in the body's frame (the runtime applies the body's placement to it)."""
        import meshio

        from softsim import meshes

        if self.artifacts is None:
            raise ValueProblem(f"{surface.name}: the cavity is placed differently from its body; import with --out "
                               f"to write it in the body's frame")
        loaded = meshes.load_surface(surface)
        points = body.inverse_apply(cavity.apply(loaded.points))
        self.artifacts.mkdir(parents=True, exist_ok=True)
        target = self.artifacts / f"{self.source.stem}.{name}.vtu"
        meshio.write(str(target), meshio.Mesh(points, [("triangle", loaded.triangles)]))
        return target

    def effector(self, node: Node, component: Component, body_name: str, mapped: bool) -> dict[str, Any]:
        what = component.getPathName()
        data = component.data
        effector = self.acting_on(node, component, mapped, "position")
        goal = self.goal(component)
        if goal is not None:
            effector["effectorGoal"] = goal
        if "useDirections" in data:
            effector["useDirections"] = as_ints(data["useDirections"], f"{what}.useDirections")
        for key in ("weight", "maxShiftToTarget"):
            if key in data:
                effector[key] = as_float(data[key], f"{what}.{key}")
        if "limitShiftToTarget" in data:
            effector["limitShiftToTarget"] = as_bool(data["limitShiftToTarget"])
        self.use(component)
        return effector

    def goal_value(self, component: Component):
        """The raw value of an effector's ``effectorGoal`` (followed through links to the goal's ``position``; the
        goal's node is remembered in ``goal_nodes``), or None when it has none."""
        if "effectorGoal" not in component.data:
            return None
        raw = component.data["effectorGoal"]
        if isinstance(raw, Link) and isinstance(raw.target, Component | Node):
            target = raw.target if isinstance(raw.target, Node) else raw.target.node
            if target is not None:
                self.goal_nodes.add(id(target))
        value = follow(component, "effectorGoal")
        if isinstance(value, Ref):
            target = value.component
            self.goal_nodes.add(id(target.node))
            value = follow(target, "position") if "position" in target.data else None
            if value is None or isinstance(value, Ref):
                raise ValueProblem(f"{component.getPathName()}.effectorGoal: links to {target.getPathName()}, whose "
                                   f"position is not given")
        return value

    def goal(self, component: Component) -> list[list[float]] | None:
        value = self.goal_value(component)
        return None if value is None else as_points(value, f"{component.getPathName()}.effectorGoal")

    def center_effector(self, component: Component, body: dict[str, Any], body_name: str) -> None:
        what = component.getPathName()
        if not has_key(BodySpec, "centerEffector"):
            self.report.skip(what, component.type, "softsim's scene format has no [[body.centerEffector]] yet",
                             mechanics=True)
            return
        data = component.data
        entry: dict[str, Any] = {"name": self.unique_name(component.name if component.explicit_name else
                                                          "centerEffector", "centerEffector")}
        if "indices" in data:
            entry["indices"] = as_ints(data["indices"], f"{what}.indices")
        goal = self.goal(component)
        if goal is not None:
            entry["effectorGoal"] = goal[0]
        if "axis" in data:
            entry["axis"] = as_ints(data["axis"], f"{what}.axis")
        if "weight" in data:
            entry["weight"] = as_float(data["weight"], f"{what}.weight")
        if "limitShiftToTarget" in data:
            entry["limitShiftToTarget"] = as_bool(data["limitShiftToTarget"])
        if "maxShiftToTarget" in data:
            entry["maxShiftToTarget"] = as_float(data["maxShiftToTarget"], f"{what}.maxShiftToTarget")
        self.use(component)
        body.setdefault("centerEffector", []).append(entry)

    def frame_effectors(self, group, body: dict[str, Any], body_name: str) -> None:
        """The Rigid3 PositionEffectors on a free frame that carries a rigid group (Tripod's FreeCenter effector,
        steps 8 and 9): each becomes a ``[[body.centerEffector]]`` on the group's nodes tracking the frame's origin
        (``point``: the affine combination of the nodes that a rigid motion carries exactly). Its rotation rows
        (``useDirections[3:]``) are reported: softsim's effectors track positions only."""
        frame = group.frame
        position = rigid_poses(frame)[group.frame_index][0]
        for node in frame.node.walk():
            for component in self.components(node, EFFECTORS):
                what = component.getPathName()
                data = component.data
                if not str(data.get("template", "")).startswith("Rigid"):
                    continue
                indices = as_ints(data.get("indices", [0]), f"{what}.indices")
                if indices != [group.frame_index]:
                    continue
                directions = as_ints(data.get("useDirections", [1] * 6), f"{what}.useDirections")
                if len(directions) != 6:
                    raise ValueProblem(f"{what}.useDirections: a Rigid3 effector has 6 flags, got {len(directions)}")
                name = self.actuator_name(node, component)
                entry: dict[str, Any] = {"name": name, "indices": sorted(group.nodes),
                                         "point": [_clean(v) for v in position], "axis": directions[:3]}
                goal = self.rigid_goal(component)
                if goal is not None:
                    entry["effectorGoal"] = goal[:3]
                weights = as_floats(data["weight"], f"{what}.weight") if "weight" in data else [1.0]
                if len(set(weights[:3])) > 1:
                    self.report.notes.append(f"{what}.weight: one weight per direction; the first, {weights[0]:g}, "
                                             f"is used")
                if weights[0] != 1.0:
                    entry["weight"] = weights[0]
                if "limitShiftToTarget" in data:
                    entry["limitShiftToTarget"] = as_bool(data["limitShiftToTarget"])
                if "maxShiftToTarget" in data:
                    entry["maxShiftToTarget"] = as_float(data["maxShiftToTarget"], f"{what}.maxShiftToTarget")
                self.use(component)
                body.setdefault("centerEffector", []).append(entry)
                used = "".join("xyz"[i] for i in range(3) if directions[i])
                turned = "".join("xyz"[i] for i in range(3) if directions[3 + i])
                if turned:  # the frame's orientation against the goal's, from the frame's own at rest
                    entry["rotationAxis"] = directions[3:]
                    if goal is not None:
                        rest = rigid_poses(frame)[group.frame_index][1]
                        turn = Rotation.from_quat(goal[3:7]) * rest.inv()
                        entry["goalRotation"] = [_clean(v) for v in turn.as_euler("xyz", degrees=True)]
                self.report.notes.append(
                    f"{what}: the free frame {frame.getPathName()}[{group.frame_index}] (its origin "
                    f"{entry['point']}, carried by the rigid group's nodes), position on axes {used or 'none'}"
                    + (f" and rotation about {turned}" if turned else "")
                    + f": body.{body_name}.centerEffector.{name}")

    def rigid_goal(self, component: Component) -> list[float] | None:
        """A Rigid3 effector's goal: the first frame ``[x, y, z, qx, qy, qz, qw]`` (a goal of 3 numbers: the
        identity orientation)."""
        value = self.goal_value(component)
        if value is None:
            return None
        numbers = as_floats(value, f"{component.getPathName()}.effectorGoal")
        if len(numbers) == 3:
            numbers = [*numbers, 0.0, 0.0, 0.0, 1.0]
        if len(numbers) < 7:
            raise ValueProblem(f"{component.getPathName()}.effectorGoal: a Rigid3 goal needs 7 numbers, got "
                               f"{len(numbers)}")
        return [float(v) for v in numbers[:7]]

    def planes(self, node: Node, planes: list[Component], body: dict[str, Any], body_name: str,
               placement: Placement, mesh_file: Path, mapped: bool) -> None:
        if not has_key(BodySpec, "unilateralPlane"):
            for plane in planes:
                self.report.skip(plane.getPathName(), plane.type, "softsim's scene format has no "
                                 "[[body.unilateralPlane]] yet", mechanics=True)
            return
        from softsim.mechanics.scene import schema

        spec_class = getattr(schema, "UnilateralPlaneSpec", None)
        with_points = spec_class is not None and has_key(spec_class, "points")
        if mapped and not with_points:
            from softsim import meshes

            mesh_points = placement.apply(meshes.load(mesh_file).points)
        for plane in planes:
            what = plane.getPathName()
            if mapped and with_points:
                entry = {"name": self.unique_name(plane.name if plane.explicit_name else "plane", "plane"),
                         "indices": [0, 1, 2, 3], "points": self.mapped_points(node, plane)}
                if len(entry["points"]) != 4:
                    raise ValueProblem(f"{what}.indices: a unilateral plane takes 4 points, got "
                                       f"{len(entry['points'])}")
                if "flipNormal" in plane.data:
                    entry["flipNormal"] = as_bool(plane.data["flipNormal"])
                self.use(plane)
                body.setdefault("unilateralPlane", []).append(entry)
                continue
            if mapped:
                points = np.asarray(self.mapped_points(node, plane))
                distance = np.linalg.norm(mesh_points[None, :, :] - points[:, None, :], axis=2)
                nodes = distance.argmin(axis=1)
                gap = distance[np.arange(len(points)), nodes].max()
                size = np.ptp(mesh_points, axis=0).max()
                if gap > 1e-6 * size:
                    self.report.skip(what, plane.type, f"its points are not mesh nodes (one is {gap:.3g} from the "
                                     f"nearest node); softsim's unilateral plane takes node indices", mechanics=True)
                    continue
                indices = [int(i) for i in nodes]
            else:
                indices = as_ints(plane.data.get("indices", []), f"{what}.indices")
            entry: dict[str, Any] = {"name": self.unique_name(plane.name if plane.explicit_name else "plane", "plane"),
                                     "indices": indices}
            if "flipNormal" in plane.data:
                entry["flipNormal"] = as_bool(plane.data["flipNormal"])
            self.use(plane)
            body.setdefault("unilateralPlane", []).append(entry)

    # -- root settings ---------------------------------------------------------------------------------
    def scene_settings(self, data: dict[str, Any]) -> None:
        gravity = as_floats(self.root.data.get("gravity", [0.0, -9.81, 0.0]), "/.gravity")
        dt = as_float(self.root.data.get("dt", 0.01), "/.dt")
        magnitude = float(np.linalg.norm(gravity))
        if 900 <= magnitude <= 11000:
            units = "mm-kg-s"
            if abs(magnitude - 9810) > 0.05 * 9810:
                self.report.notes.append(f"gravity {gravity} has magnitude {magnitude:g}, not 9810: kept as written "
                                         f"(units taken as mm-kg-s from its order of magnitude)")
            else:
                self.report.notes.append(f"units: mm-kg-s, inferred from the gravity magnitude {magnitude:g} "
                                         "(SoftRobots' convention: mm, kg, s; E in kPa)")
        else:
            note = "no gravity" if magnitude == 0 else f"gravity magnitude {magnitude:g}"
            if "gravity" not in self.root.data:
                note = "no gravity in the file: SOFA's default [0, -9.81, 0]"
            extent = self.largest_extent(data)
            if extent > MM_EXTENT:
                units = "mm-kg-s"
                self.report.notes.append(
                    f"units: mm-kg-s assumed ({note}, but a body {extent:.3g} units across: millimetres, as in "
                    f"SoftRobots' scenes); the numbers are the file's, unchanged (gravity {magnitude:g} mm/s^2 is "
                    f"as written: set scene.gravity if the scene meant 9.81 m/s^2)")
            else:
                units = "SI"
                self.report.notes.append(f"units: SI assumed ({note}); the numbers are the file's, unchanged (SOFA "
                                         f"has no units: the label only changes how softsim shows them)")
        mode = "static"
        inverse = any(c.type == "QPInverseProblemSolver" for n in self.root.walk() for c in n.objects
                      if isinstance(c, Component))
        loose = [body["name"] for body in data["body"] if not body.get("fixed")]
        self.inverse_off = bool(self.dynamic and inverse and loose)
        if self.inverse_off:  # a static frame of a body nothing holds is singular: keep SOFA's dynamics instead
            self.report.notes.append(
                f"inverse problem (QPInverseProblemSolver) in a dynamic scene where nothing holds {', '.join(loose)} "
                f"(only contacts do): kept dynamic, with the inverse model off (solver.inverse.active = false), see "
                f"the QPInverseProblemSolver's line below")
        elif self.dynamic and inverse:
            self.report.notes.append("inverse problem (QPInverseProblemSolver): static mode, softsim's inverse model "
                                     "solves equilibria (the EulerImplicitSolver's dynamics are not kept)")
            self.dynamic = []
        if self.dynamic:
            mode = "dynamic"
            if self.static:
                self.report.notes.append("both static and dynamic solvers: the scene runs in dynamic mode")
        data["scene"] = {"name": self.source.stem, "units": units, "mode": mode, "dt": dt,
                         "gravity": [float(g) for g in gravity]}
        if self.dynamic:
            dynamic = {}
            values = {}
            for _path, solver in self.dynamic:
                what = solver.getPathName()
                for key in ("rayleighMass", "rayleighStiffness"):
                    values.setdefault(key, set()).add(as_float(solver.data.get(key, 0.0), f"{what}.{key}"))
                if as_bool(solver.data.get("firstOrder")):
                    self.report.notes.append(f"{what}: firstOrder (quasi-static) integration; softsim integrates "
                                             f"second order")
            for key, found in values.items():
                if len(found) > 1:
                    self.report.notes.append(f"bodies have different {key} {sorted(found)}: the largest is used")
                if max(found):
                    dynamic[key] = max(found)
            if dynamic:
                data.setdefault("solver", {})["dynamic"] = dynamic
        for solver in self.static:
            what = solver.getPathName()
            for key, ours in (("newton_iterations", "newton_iterations"), ("maxNbIterationsNewton",
                                                                            "newton_iterations")):
                if key in solver.data:
                    data.setdefault("solver", {}).setdefault("newton", {})[ours] = int(
                        as_float(solver.data[key], f"{what}.{key}"))

    def largest_extent(self, data: dict[str, Any]) -> float:
        """The largest bounding-box side of the bodies' meshes (with their scale), in the file's units."""
        from softsim import meshes

        extent = 0.0
        for body in data.get("body", []):
            mesh = meshes.load(self.base_dir / body["mesh"], scale=body.get("scale", 1.0))
            bbox = mesh.bbox
            extent = max(extent, float(np.max(bbox[3:] - bbox[:3])))
        return extent

    def constraint_solver(self, data: dict[str, Any]) -> None:
        solvers = [c for n in self.root.walk() for c in self.components(n, CONSTRAINT_SOLVERS)]
        for extra in solvers[1:]:
            self.report.skip(extra.getPathName(), extra.type, "a second constraint solver", mechanics=True)
        if not solvers:
            return
        solver = solvers[0]
        self.use(solver)
        what = solver.getPathName()
        values = solver.data
        if solver.type == "QPInverseProblemSolver":
            inverse: dict[str, Any] = {}
            for key in ("epsilon", "tolerance", "responseFriction"):
                if key in values:
                    inverse[key] = as_float(values[key], f"{what}.{key}")
            if "maxIterations" in values:
                inverse["maxIterations"] = int(as_float(values["maxIterations"], f"{what}.maxIterations"))
            for key in ("actuatorsOnly", "allowSliding"):
                if key in values:
                    inverse[key] = as_bool(values[key])
            if self.inverse_off:
                inverse["active"] = False
                self.report.skip(what, solver.type, "not run: SOFA solves the inverse problem inside each dynamic "
                                 "step, softsim's inverse model solves static equilibria only, and a static frame of "
                                 "a body that only contacts hold (no fixed nodes) has no unique equilibrium (its "
                                 "stiffness is singular). Imported with its settings and active = false: the "
                                 "actuators are driven by their values (cables at their displacement), the "
                                 "effectors' goals are shown but not sought", mechanics=True)
            data.setdefault("solver", {})["inverse"] = inverse
            return
        kinds = {"GenericConstraintSolver": "BlockGaussSeidel", "BlockGaussSeidelConstraintSolver": "BlockGaussSeidel",
                 "UnbuiltGaussSeidelConstraintSolver": "BlockGaussSeidel", "LCPConstraintSolver": "BlockGaussSeidel",
                 "ImprovedJacobiConstraintSolver": "ImprovedJacobi", "NNCGConstraintSolver": "NNCG"}
        constraint: dict[str, Any] = {"type": kinds[solver.type]}
        resolution = str(values.get("resolutionMethod", "")).strip()
        if resolution in ("ImprovedJacobi", "NonsmoothNonlinearConjugateGradient"):
            constraint["type"] = "ImprovedJacobi" if resolution == "ImprovedJacobi" else "NNCG"
        for key in ("maxIterations", "maxIt"):
            if key in values:
                constraint["maxIterations"] = int(as_float(values[key], f"{what}.{key}"))
        for key in ("tolerance", "sor", "regularizationTerm"):
            if key in values:
                constraint[key] = as_float(values[key], f"{what}.{key}")
        for key in ("scaleTolerance", "allVerified", "computeConstraintForces"):
            if key in values:
                constraint[key] = as_bool(values[key])
        data.setdefault("solver", {})["constraint"] = constraint

    def collision(self, data: dict[str, Any]) -> None:
        pipeline = [c for n in self.root.walk() for c in self.components(n, PIPELINE)]
        if not pipeline:
            if self.rigid_tables:
                self.report.notes.append("no collision pipeline in SOFA, but a [[rigid]] body always touches the "
                                         "soft bodies' surface nodes")
            return
        bodies = sorted(set(self.collision_bodies))
        rigids = [table for table, collides in self.rigid_tables if collides]
        if not bodies and not rigids and not self.obstacle_tables:
            for component in pipeline:
                self.report.skip(component.getPathName(), component.type, "collision pipeline without a collision "
                                 "model on a deformable body: acts on nothing here", mechanics=False)
                self.use(component)
            return
        self.use(*pipeline)
        collision: dict[str, Any] = {}
        for component in pipeline:
            what = component.getPathName()
            if component.type in ("LocalMinDistance", "MinProximityIntersection", "NewProximityIntersection"):
                for key in ("alarmDistance", "contactDistance"):
                    if key in component.data:
                        collision[key] = as_float(component.data[key], f"{what}.{key}")
            params = str(component.data.get("responseParams", ""))
            for part in params.replace("&", " ").replace(",", " ").split():
                key, _, value = part.partition("=")
                if key.strip() == "mu":
                    collision["friction"] = float(value)
        for table in rigids:  # SOFA's pipeline settings apply to the rigid body's contacts too
            table.update({k: collision[k] for k in ("friction", "contactDistance", "alarmDistance") if k in collision})
        for table in self.obstacle_tables:  # and to the static objects' (an obstacle has no alarm distance)
            table.update({k: collision[k] for k in ("friction", "contactDistance") if k in collision})
        if not bodies:
            return
        if len(bodies) == 1:
            collision["selfCollision"] = False
            if not rigids and not self.obstacle_tables:
                self.report.notes.append(f"collision models on one deformable body ({bodies[0]}) only: contacts "
                                         f"with rigid objects are not translated")
        data["collision"] = collision

    def free_rigids(self, data: dict[str, Any]) -> None:
        """Free rigid bodies (STLIB's Cube) as ``[[rigid]]`` boxes, static ones on SOFA's floor or cube mesh
        (STLIB's Floor) as ``[[obstacle]]`` boxes; why a candidate is neither, for the report."""
        for node in self.root.walk():
            if not is_candidate(node) or id(node.getMechanicalState()) in self.used:
                continue
            if self.static_obstacle(node, data):
                continue
            try:
                rigid = free_rigid(node, self.source.parent, placement_of)
                if data["scene"]["mode"] != "dynamic":
                    raise NotTranslated('a [[rigid]] body needs scene.mode = "dynamic" and the scene is static')
            except NotTranslated as why:
                self.rigid_why[id(node)] = str(why)
                continue
            table = {"name": self.unique_name(node.name, "rigid"), **rigid.table}
            self.use(*rigid.used)
            self.report.notes += rigid.notes
            if not rigid.collides:
                self.report.notes.append(f"{node.getPathName()}: no collision model in SOFA, but a [[rigid]] body "
                                         f"always touches the soft bodies' surface nodes")
            ours = float(data.get("solver", {}).get("dynamic", {}).get("rayleighMass", 0.0))
            theirs = as_float(rigid.solver.data.get("rayleighMass", 0.0), f"{rigid.solver.getPathName()}.rayleighMass")
            if ours != theirs:
                self.report.notes.append(f"{node.getPathName()}: its solver's rayleighMass is {theirs:g} in SOFA; the "
                                         f"scene's solver.dynamic.rayleighMass {ours:g} damps the [[rigid]] body too")
            self.rigid_tables.append((table, rigid.collides))
        if self.rigid_tables:
            data["rigid"] = [table for table, _ in self.rigid_tables]

    def static_surfaces(self, data: dict[str, Any]) -> None:
        """Unmapped Vec3 collision objects that nothing integrates (CircularRobot's Floor on SOFA's square1.obj) as
        ``[[obstacle]]`` boxes (:func:`static_surface`); why another is not, for the report."""
        for node in self.root.walk():
            state = node.getMechanicalState()
            if (state is None or id(state) in self.used or node in self.bodies
                    or not self.components(node, COLLISION_MODELS)
                    or self.components(node, {"BarycentricMapping", "RigidMapping", "IdentityMapping",
                                              "SubsetMapping", "SubsetMultiMapping"})):
                continue
            try:
                box = static_surface(node, self.source.parent, placement_of)
            except NotTranslated as why:
                self.surface_why[id(node)] = str(why)
                continue
            self.use(*box.used)
            self.report.notes += box.notes
            table = {"name": self.unique_name(node.name, "obstacle"), **box.table}
            self.obstacle_tables.append(table)
            data.setdefault("obstacle", []).append(table)

    def static_obstacle(self, node: Node, data: dict[str, Any]) -> bool:
        """A candidate that does not move in SOFA as an ``[[obstacle]]`` box (:func:`static_box`); False when
        it moves (an ODE solver integrates it) or is not a box of SOFA's meshes (then the reason is kept)."""
        try:
            box = static_box(node, self.source.parent, placement_of)
        except NotTranslated as why:
            if "an ODE solver integrates it" not in str(why):
                self.rigid_why[id(node)] = f"no ODE solver integrates it (it does not move in SOFA) and {why}"
                return True
            return False
        self.use(*box.used)
        self.report.notes += box.notes
        table = {"name": self.unique_name(node.name, "obstacle"), **box.table}
        self.obstacle_tables.append(table)
        data.setdefault("obstacle", []).append(table)
        return True

    # -- leftovers -------------------------------------------------------------------------------------
    def leftovers(self) -> None:
        for node in self.root.walk():
            for obj in node.objects:
                if not isinstance(obj, Component):
                    continue
                if id(obj) in self.used:
                    continue
                what = obj.getPathName()
                if obj.type in IMPLIED:
                    self.report.implied.add(obj.type)
                elif obj.type in VISUAL or obj.type.startswith("Ogl"):
                    self.report.skip(what, obj.type, "rendering", mechanics=False)
                elif id(node) in self.rigid_why:
                    self.report.skip(what, obj.type, f"a free rigid body not translated: {self.rigid_why[id(node)]}",
                                     mechanics=True)
                elif self.components(node, COLLISION_MODELS):
                    why = f": {self.surface_why[id(node)]}" if id(node) in self.surface_why else ""
                    self.report.skip(what, obj.type, "part of a collision object softsim does not simulate (its "
                                     f"obstacles are planes, spheres, boxes and capsules){why}", mechanics=True)
                elif self.is_visual_node(node):
                    self.report.skip(what, obj.type, "part of a visual model", mechanics=False)
                elif id(node) in self.goal_nodes:
                    self.report.skip(what, obj.type, "the effector goal's own node (its position is the goal)",
                                     mechanics=False)
                elif obj.type in ROIS:
                    self.report.skip(what, obj.type, "a region nothing uses", mechanics=False)
                elif obj.type == "SerialPortBridgeGeneric":
                    self.report.skip(what, obj.type, "the serial link to the real robot's servos (hardware; softsim "
                                     "drives no device: what the controllers send to packetOut is kept, not sent)",
                                     mechanics=True)
                    self.bindings[(what, "packetOut")] = f"{HARDWARE}{what}.packetOut"
                elif self.follows_translated_frame(node):
                    self.report.skip(what, obj.type, "a rigid frame mapped from a translated one, carrying nothing "
                                     "simulated (drawn only)", mechanics=False)
                elif str(obj.data.get("template", "")).startswith("Rigid") or obj.type in (
                        "RigidMapping", "ArticulatedSystemMapping", "SubsetMultiMapping"):
                    self.report.skip(what, obj.type, "rigid objects are not simulated by softsim", mechanics=True)
                else:
                    self.report.skip(what, obj.type, "no softsim equivalent", mechanics=True)

    def follows_translated_frame(self, node: Node) -> bool:
        """A node with a Rigid3 object that a RigidMapping takes from a frame the translation used, and nothing
        else but visual children (Tripod's ServoArm)."""
        state = node.getMechanicalState()
        if state is None or not str(state.data.get("template", "")).startswith("Rigid"):
            return False
        kinds = {o.type for o in node.objects if isinstance(o, Component)}
        if not kinds <= {"MechanicalObject", "RigidMapping"} or not all(self.is_visual_node(c) for c in node.children):
            return False
        for mapping in self.components(node, {"RigidMapping"}):
            source = follow(mapping, "input") if "input" in mapping.data else None
            frame = source.component if isinstance(source, Ref) else None
            if frame is None and node.parents:
                frame = node.parents[0].getMechanicalState()
            if frame is not None and id(frame) in self.used:
                return True
        return False

    def is_visual_node(self, node: Node) -> bool:
        kinds = {o.type for o in node.objects if isinstance(o, Component)}
        return bool(kinds & {"OglModel", "VisualModel", "VisualModelImpl"}) and not (kinds & (FEM | CABLES | CAVITIES))

    def run(self) -> Translation:
        self.collision_bodies: list[str] = []
        self.goal_nodes: set[int] = set()
        data: dict[str, Any] = {}
        bodies = self.body_nodes()
        if not bodies:
            raise ValueProblem("no deformable body (a node with a MechanicalObject and a "
                               "TetrahedronFEMForceField over a volume mesh loader)")
        self.bodies = bodies
        data["body"] = [self.translate_body(node, bodies) for node in bodies]
        self.finish_bodies(data["body"])
        self.scene_settings(data)
        self.constraint_solver(data)
        self.rigid_tables: list[tuple[dict[str, Any], bool]] = []
        self.obstacle_tables: list[dict[str, Any]] = []
        self.rigid_why: dict[int, str] = {}
        self.surface_why: dict[int, str] = {}
        self.free_rigids(data)
        self.static_surfaces(data)
        self.collision(data)
        self.keyframes: list[dict[str, Any]] = []
        controllers = self.controllers()
        if self.keyframes:
            data["controller"] = self.keyframes
        self.leftovers()
        return Translation(data, self.report, controllers, self.bindings)

    def finish_bodies(self, bodies: list[dict[str, Any]]) -> None:
        """Values that need the mesh: oriented boxes as node indices, vertexMass as totalMass."""
        from softsim import meshes

        for body in bodies:
            needs_mesh = any("_orientedBox" in r for r in body.get("fixed", [])) or "_vertexMass" in body["material"]
            if not needs_mesh:
                continue
            mesh = meshes.load(self.base_dir / body["mesh"], scale=body.get("scale", 1.0))
            points = Placement(1.0, rotation_from_angles(body.get("rotation", [0, 0, 0])),
                                np.asarray(body.get("translation", [0, 0, 0]), dtype=float)).apply(mesh.points)
            if "_vertexMass" in body["material"]:
                body["material"]["totalMass"] = body["material"].pop("_vertexMass") * len(points)
            fixed = []
            for region in body.get("fixed", []):
                if "_orientedBox" in region:
                    fixed.append({"indices": [int(i) for i in in_oriented_box(points, region["_orientedBox"])]})
                else:
                    fixed.append(region)
            if fixed:
                body["fixed"] = fixed

    def controllers(self) -> list[ControllerRecord]:
        records = []
        for node in self.root.walk():
            for obj in node.objects:
                if isinstance(obj, Component) or type(obj).__name__ == "AnimationManagerController":
                    continue
                path = f"{node.getPathName().rstrip('/')}/{getattr(obj, 'name', type(obj).__name__)}"
                records.append(ControllerRecord(path, type(obj).__name__, obj))
        for animation in getattr(self.root, "attributes", {}).get("animations", []):
            keyframes, why = animation_keyframes(self.root, animation, self.bindings)
            if keyframes:
                self.keyframes += keyframes
                self.report.notes.append(f"the animation {animation['function']!r} ({animation['duration']} s) "
                                         f"became keyframes of {', '.join(c['key'] for c in keyframes)}")
                continue
            self.report.skip("/AnimationManager", "splib3.animation.animate", f"the animation "
                             f"{animation['function']!r} ({animation['duration']} s) is not run: {why}",
                             mechanics=True)
        return records


def in_oriented_box(points: np.ndarray, box: list[float]) -> np.ndarray:
    """Nodes in SOFA BoxROI's oriented box ``[p0, p1, p2, depth]`` (10 numbers): the rectangle p0-p1-p2
    extruded by depth/2 on both sides of its plane."""
    if len(box) != 10:
        raise ValueProblem(f"orientedBox: {len(box)} numbers, expected 10 (three corners and a depth)")
    p0, p1, p2 = (np.asarray(box[i:i + 3]) for i in (0, 3, 6))
    depth = box[9]
    u, v = p1 - p0, p2 - p1
    normal = np.cross(u, v)
    normal /= np.linalg.norm(normal)
    d = points - p0
    a, b, c = d @ u / (u @ u), (d - 0) @ v / (v @ v), d @ normal
    return np.flatnonzero((a >= 0) & (a <= 1) & (b >= 0) & (b <= 1) & (np.abs(c) <= depth / 2))


def translate(root: Node, source: Path, base_dir: Path, artifacts: Path | None = None) -> Translation:
    """Translate the recorded graph of ``source``; paths are written relative to ``base_dir`` (the folder of
    the TOML file to be written), and files the import must write (a cavity surface moved into its body's
    frame) go to ``artifacts``."""
    return _Translator(root, Path(source).resolve(), Path(base_dir).resolve(), artifacts).run()

