"""Stand-ins for the STLIB (``stlib3``, ``splib3``) and SoftRobots (``softrobots``) prefabs the SoftRobots examples use.

Each function builds, in the recorded graph, the nodes and components the real prefab builds (written from
SofaDefrost/STLIB's ``python3/src`` and SoftRobots' ``python3/softrobots``, both LGPL-3.0: the same node names,
component types, names and data values, so that a scene reaching into a prefab, e.g. ``finger.dofs`` or
``scene.Simulation.TimeIntegrationSchema``, finds what it expects). Rendering-only details (scene frames,
colours) are kept as components, which the translation reports as visual.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from softsim.app.sofa_import.graph import Component, Node

__all__ = ["Controller", "Prefab", "ANIMATIONS"]

#: ``splib3.animation.animate`` calls recorded during one import (cleared by the importer)
ANIMATIONS: list[dict[str, Any]] = []
#: the SOFA controllers running on a live scene now (app.sofa_import.live): an animation they start is refused
RUNNING: list[Any] = []


class Controller:
    """``Sofa.Core.Controller``: a Python component. Subclasses define ``onAnimateBeginEvent(event)``,
    ``onKeypressedEvent(event)`` and so on; the importer records the instance where it is added."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = kwargs.get("name")
        for arg in args:  # SofaPython3 also accepts (self, args, kwargs) passed positionally
            if isinstance(arg, dict):
                name = arg.get("name", name)
        self.name = name if name is not None else type(self).__name__
        self.listening = True

    def getName(self) -> str:  # noqa: N802
        return self.name

    def getContext(self) -> Node | None:  # noqa: N802
        return getattr(self, "_sofa_node", None)

    def getPathName(self) -> str:  # noqa: N802
        node = self.getContext()
        return f"{node.getPathName().rstrip('/') if node is not None else ''}/{self.name}"

    def getLinkPath(self) -> str:  # noqa: N802
        return "@" + self.getPathName()

    def init(self) -> None:
        pass


class Prefab(Node):
    """``Sofa.Prefab``: a node whose ``prefabParameters`` become data fields, built by ``init()`` at
    construction (as SofaPython3 does)."""

    prefabParameters: list[dict[str, Any]] = []
    prefabData: list[dict[str, Any]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = kwargs.get("name", args[0] if args and isinstance(args[0], str) else type(self).__name__)
        Node.__init__(self, name)
        for parameter in [*self.prefabParameters, *self.prefabData]:
            key = parameter["name"]
            self.data[key] = copy.deepcopy(kwargs.get(key, parameter.get("default")))
        self.init()


def _add_visual_model(node: Node, filename: str, color, rotation, translation, scale) -> Node:
    """stlib3.visuals.VisualModel: a node with a loader and an OglModel."""
    visual = node.addChild("VisualModel")
    loader = "MeshOBJLoader" if str(filename).endswith(".obj") else "MeshSTLLoader"
    visual.addObject(loader, name="loader", filename=filename)
    visual.addObject("OglModel", name="OglModel", src="@loader", rotation=list(rotation),
                     translation=list(translation), scale3d=list(scale), color=list(color), updateNormals=False)
    return visual


def VisualModel(visualMeshPath: str = "", translation=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0),  # noqa: N802, N803
                scale=(1.0, 1.0, 1.0), color=(1.0, 1.0, 1.0, 1.0), name: str = "VisualModel") -> Node:
    visual = Node(name)
    loader = "MeshOBJLoader" if str(visualMeshPath).endswith(".obj") else "MeshSTLLoader"
    visual.addObject(loader, name="loader", filename=visualMeshPath)
    visual.addObject("OglModel", name="OglModel", src="@loader", rotation=list(rotation),
                     translation=list(translation), scale3d=list(scale), color=list(color), updateNormals=False)
    return visual


def CollisionMesh(attachedTo: Node | None = None, surfaceMeshFileName: str | None = None,  # noqa: N802, N803
                  name: str = "collision", rotation=(0.0, 0.0, 0.0), translation=(0.0, 0.0, 0.0),
                  scale=(1.0, 1.0, 1.0), collisionGroup=None, mappingType: str = "BarycentricMapping") -> Node | None:
    """stlib3.physics.collision.CollisionMesh."""
    if attachedTo is None or surfaceMeshFileName is None:
        return None
    node = attachedTo.addChild(name)
    text = str(surfaceMeshFileName)
    loader = "MeshOBJLoader" if text.endswith(".obj") else "MeshSTLLoader" if text.endswith(".stl") else "MeshVTKLoader"
    node.addObject(loader, name="loader", filename=surfaceMeshFileName, rotation=list(rotation),
                   translation=list(translation), scale3d=list(scale))
    node.addObject("MeshTopology", src="@loader")
    node.addObject("MechanicalObject")
    extra = {} if collisionGroup is None else {"group": collisionGroup}
    for model in ("PointCollisionModel", "LineCollisionModel", "TriangleCollisionModel"):
        node.addObject(model, **extra)
    node.addObject(mappingType)
    return node


class ElasticMaterialObject(Prefab):
    """stlib3.physics.deformable.ElasticMaterialObject."""

    prefabParameters = [
        {"name": "volumeMeshFileName", "default": ""},
        {"name": "rotation", "default": [0.0, 0.0, 0.0]},
        {"name": "translation", "default": [0.0, 0.0, 0.0]},
        {"name": "scale", "default": [1.0, 1.0, 1.0]},
        {"name": "surfaceMeshFileName", "default": ""},
        {"name": "collisionMesh", "default": ""},
        {"name": "withConstrain", "default": True},
        {"name": "surfaceColor", "default": [1.0, 1.0, 1.0, 1.0]},
        {"name": "poissonRatio", "default": 0.3},
        {"name": "youngModulus", "default": 18000},
        {"name": "totalMass", "default": 1.0},
        {"name": "solverName", "default": ""},
    ]

    def init(self) -> None:
        data = self.data
        if data["solverName"] == "":
            self.integration = self.addObject("EulerImplicitSolver", name="integration")
            self.solver = self.addObject("SparseLDLSolver", name="solver", template="CompressedRowSparseMatrixd")
        filename = str(data["volumeMeshFileName"])
        if filename == "":
            raise ValueError(f"ElasticMaterialObject {self.name}: no volumeMeshFileName")
        loader = ("MeshGmshLoader" if filename.endswith(".msh") else "GIDMeshLoader" if filename.endswith(".gidmsh")
                  else "MeshVTKLoader")
        transform = {"rotation": list(data["rotation"]), "translation": list(data["translation"]),
                     "scale3d": list(data["scale"])}
        self.loader = self.addObject(loader, name="loader", filename=filename, **transform)
        self.container = self.addObject("TetrahedronSetTopologyContainer", name="container",
                                        position="@loader.position", tetras="@loader.tetras")
        self.dofs = self.addObject("MechanicalObject", template="Vec3", name="dofs")
        self.mass = self.addObject("UniformMass", totalMass=data["totalMass"], name="mass")
        self.forcefield = self.addObject("TetrahedronFEMForceField", template="Vec3", method="large",
                                         name="forcefield", poissonRatio=data["poissonRatio"],
                                         youngModulus=data["youngModulus"])
        if data["withConstrain"]:
            self.correction = self.addObject("LinearSolverConstraintCorrection", name="correction")
        if data["collisionMesh"]:
            CollisionMesh(attachedTo=self, surfaceMeshFileName=data["collisionMesh"], name="CollisionModel",
                          rotation=data["rotation"], translation=data["translation"], scale=data["scale"])
        if data["surfaceMeshFileName"]:
            visual = _add_visual_model(self, data["surfaceMeshFileName"], data["surfaceColor"], data["rotation"],
                                       data["translation"], data["scale"])
            visual.addObject("BarycentricMapping", name="mapping")


def FixedBox(applyTo: Node | None = None, atPositions=(-1.0, -1.0, -1.0, 1.0, 1.0, 1.0),  # noqa: N802, N803
             name: str = "FixedBox", doVisualization: bool = False, position=None,  # noqa: N803
             constraintStrength: float = 1e12, doRecomputeDuringSimulation: bool = False) -> Node:  # noqa: N803
    """stlib3.physics.constraints.FixedBox: a child node with a BoxROI and rest-shape springs."""
    node = applyTo.addChild(name)
    extra = {} if position is None else {"position": position}
    node.addObject("BoxROI", name="BoxROI", box=list(atPositions), drawBoxes=doVisualization,
                   doUpdate=doRecomputeDuringSimulation, **extra)
    node.addObject("RestShapeSpringsForceField", points="@BoxROI.indices", stiffness=constraintStrength)
    return node


def RigidObject(name: str = "RigidObject", surfaceMeshFileName: str | None = None,  # noqa: N802, N803
                translation=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), uniformScale: float = 1.0,  # noqa: N803
                totalMass: float = 1.0, volume: float = 1.0, inertiaMatrix=(1, 0, 0, 0, 1, 0, 0, 0, 1),  # noqa: N803
                color=(1.0, 1.0, 1.0, 1.0), collisionGroup: Any = "", isAStaticObject: bool = False,  # noqa: N803
                parent: Node | None = None) -> Node:
    """stlib3.physics.rigid.RigidObject: a Rigid3 MechanicalObject with a collision and a visual child."""
    node = Node(name)
    if parent is not None:
        parent.addChild(node)
    node.addObject("MechanicalObject", name="mstate", template="Rigid3", translation2=list(translation),
                   rotation2=list(rotation), showObjectScale=uniformScale)
    node.addObject("UniformMass", name="mass", vertexMass=[totalMass, volume, list(inertiaMatrix)])
    if not isAStaticObject:
        node.addObject("EulerImplicitSolver")
        node.addObject("CGLinearSolver", iterations=25, tolerance=1e-5, threshold=1e-5)

    def add_collision_model(inputMesh=surfaceMeshFileName):  # noqa: N803
        collision = node.addChild("collision")
        collision.addObject("MeshOBJLoader", name="loader", filename=inputMesh, triangulate=True, scale=uniformScale)
        collision.addObject("MeshTopology", src="@loader")
        collision.addObject("MechanicalObject")
        flags = {"moving": False, "simulated": False} if isAStaticObject else {}
        for model in ("TriangleCollisionModel", "LineCollisionModel", "PointCollisionModel"):
            collision.addObject(model, group=collisionGroup, **flags)
        collision.addObject("RigidMapping")

    def add_visual_model(inputMesh=surfaceMeshFileName):  # noqa: N803
        visual = VisualModel(name="visual", visualMeshPath=inputMesh, color=color, scale=[uniformScale] * 3)
        node.addChild(visual)
        visual.addObject("RigidMapping")

    node.addCollisionModel = add_collision_model
    node.addVisualModel = add_visual_model
    if surfaceMeshFileName is not None:
        add_collision_model()
        add_visual_model()
    return node


def Cube(node: Node, **kwargs: Any) -> Node:  # noqa: N802
    kwargs.setdefault("name", "Cube")
    return RigidObject(parent=node, surfaceMeshFileName="mesh/cube.obj", **kwargs)


def Sphere(node: Node, **kwargs: Any) -> Node:  # noqa: N802
    kwargs.setdefault("name", "Sphere")
    return RigidObject(parent=node, surfaceMeshFileName="mesh/ball.obj", **kwargs)


def Floor(node: Node, **kwargs: Any) -> Node:  # noqa: N802
    kwargs.setdefault("name", "Floor")
    return RigidObject(parent=node, surfaceMeshFileName="mesh/floor.obj", **kwargs)


def DefaultSolver(node: Node, iterative: bool = True) -> Component:  # noqa: N802
    node.addObject("EulerImplicitSolver", name="TimeIntegrationSchema")
    if iterative:
        return node.addObject("CGLinearSolver", name="LinearSolver", iterations=25, tolerance=1e-5, threshold=1e-5)
    return node.addObject("SparseLDLSolver", name="LinearSolver", template="CompressedRowSparseMatrixd")


class AnimationManagerController(Controller):
    """splib3's animation manager (recorded; the animations it would run are listed in the report)."""


def AnimationManager(node: Node) -> AnimationManagerController:  # noqa: N802
    existing = node.getObject("AnimationManager")
    if existing is not None:
        return existing
    manager = AnimationManagerController(name="AnimationManager")
    node.addObject(manager)
    return manager


def animate(onUpdate, params, duration, mode: str = "once", onDone=None, terminationDelay=None) -> None:  # noqa: N803
    """splib3.animation.animate: called by ``createScene``, recorded, not run here (the translation samples
    ``onUpdate(factor=f, **params)`` into keyframes, :mod:`app.sofa_import.animation`, or the report names it);
    called by a controller while the scene runs (Tripod's A key), run by the live controllers from the next
    frame on (:meth:`app.sofa_import.live.SofaControllers.start_animation`)."""
    if RUNNING:
        RUNNING[-1].start_animation(onUpdate, params, duration, mode, onDone)
        return
    ANIMATIONS.append({"function": getattr(onUpdate, "__name__", "animation"), "duration": duration, "mode": mode,
                       "onUpdate": onUpdate, "params": params})


def setData(d, **kwargs: Any) -> None:  # noqa: N802
    for key, value in kwargs.items():
        d.findData(key).value = value


def getLoadingLocation(filename: str, source: str | None = None) -> str:  # noqa: N802
    if source is None:
        return filename
    if os.path.isfile(source):
        source = os.path.dirname(os.path.abspath(source))
    return os.path.join(source, filename)


def _settings(plugins, repository_paths) -> Node:
    node = Node("Settings")
    plugins = list(plugins)
    if "SofaPython3" not in plugins:
        plugins.append("SofaPython3")
    plugin_node = node.addChild("Plugins")
    for name in plugins:
        plugin_node.addObject("RequiredPlugin", name=name, printLog=False)
    for index, repository in enumerate(repository_paths):
        node.addObject("AddResourceRepository", name=f"AddResourceRepository{index}", path=repository)
    node.addObject("OglSceneFrame", style="Arrows", alignment="TopRight")
    node.addObject("AttachBodyButtonSetting", name="mouseButton")
    return node


def Scene(root: Node, gravity=(0.0, -9.81, 0.0), dt: float = 0.01, plugins=(), repositoryPaths=(),  # noqa: N802, N803
          iterative: bool = True) -> Node:
    """stlib3.scene.Scene: gravity, dt and a VisualStyle on ``root``, and its addMainHeader, addSettings,
    addSolver, addContact, addModelling and addSimulation functions."""
    plugins = list(plugins)

    def add_default_solver(node: Node) -> Node:
        node.addObject("EulerImplicitSolver", name="TimeIntegrationSchema")
        if iterative:
            node.addObject("CGLinearSolver", name="LinearSolver", iterations=25, tolerance=1e-5, threshold=1e-5)
        else:
            node.addObject("SparseLDLSolver", name="LinearSolver", template="CompressedRowSparseMatrixd")
        return node

    def add_settings(plugins=plugins, repositoryPaths=repositoryPaths) -> Node:  # noqa: N803
        root.addChild(_settings(plugins, repositoryPaths))
        return root

    def add_modelling() -> Node:
        root.addChild("Modelling")
        return root

    def add_simulation() -> Node:
        add_default_solver(root.addChild("Simulation"))
        return root

    def add_main_header(plugins=plugins, repositoryPaths=repositoryPaths, doDebug=False) -> None:  # noqa: N803
        AnimationManager(root)
        add_settings(plugins=plugins, repositoryPaths=repositoryPaths)
        add_modelling()
        add_simulation()

    def add_contact(alarmDistance=1.0, contactDistance=0.1, frictionCoef=1.0) -> Node:  # noqa: N803
        ContactHeader(root, alarmDistance=alarmDistance, contactDistance=contactDistance, frictionCoef=frictionCoef)
        return root

    root.gravity.value = list(gravity)
    root.dt.value = dt
    root.addObject("VisualStyle")
    root.addMainHeader = add_main_header
    root.addSettings = add_settings
    root.addSolver = add_default_solver
    root.addContact = add_contact
    root.addModelling = add_modelling
    root.addSimulation = add_simulation
    return root


def MainHeader(node: Node, gravity=(0.0, -9.8, 0.0), dt: float = 0.01, plugins=(), repositoryPaths=(),  # noqa: N802, N803
               doDebug: bool = False) -> Node:  # noqa: N803
    """stlib3.scene.MainHeader: gravity, dt, a Config node of plugins, the animation manager."""
    node.addObject("VisualStyle")
    node.findData("gravity").value = list(gravity)
    node.findData("dt").value = dt
    node.addObject("DefaultVisualManagerLoop")
    config = node.addChild("Config")
    plugins = list(plugins)
    if "SofaPython3" not in plugins:
        plugins.append("SofaPython3")
    for name in plugins:
        config.addObject("RequiredPlugin", name=name, printLog=False)
    for index, repository in enumerate(repositoryPaths):
        config.addObject("AddDataRepository", name=f"AddDataRepository{index}", path=repository)
    config.addObject("OglSceneFrame", style="Arrows", alignment="TopRight")
    AnimationManager(node)
    return node


def ContactHeader(applyTo: Node, alarmDistance: float, contactDistance: float,  # noqa: N802, N803
                  frictionCoef: float = 0.0) -> Node:  # noqa: N803
    """stlib3.scene.ContactHeader: the collision pipeline, frictional contact response, LocalMinDistance."""
    if not applyTo.hasObject("CollisionPipeline"):
        applyTo.addObject("CollisionPipeline")
    applyTo.addObject("BruteForceBroadPhase")
    applyTo.addObject("BVHNarrowPhase")
    applyTo.addObject("RuleBasedContactManager", responseParams=f"mu={frictionCoef}", name="Response",
                      response="FrictionContactConstraint")
    applyTo.addObject("LocalMinDistance", alarmDistance=alarmDistance, contactDistance=contactDistance,
                      angleCone=0.01)
    if not applyTo.hasObject("FreeMotionAnimationLoop"):
        applyTo.addObject("FreeMotionAnimationLoop")
    if not applyTo.hasObject("BlockGaussSeidelConstraintSolver"):
        applyTo.addObject("BlockGaussSeidelConstraintSolver", tolerance=1e-6, maxIterations=1000)
    return applyTo


def PullingCable(attachedTo: Node | None = None, name: str = "Cable",  # noqa: N802, N803
                 cableGeometry=((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)), rotation=(0.0, 0.0, 0.0),  # noqa: N803
                 translation=(0.0, 0.0, 0.0), uniformScale: float = 1.0, pullPointLocation=None,  # noqa: N803
                 initialValue: float = 0.0, valueType: str = "displacement") -> Node:  # noqa: N803
    """softrobots.actuators.PullingCable: a child node with the cable points, a CableConstraint and a mapping."""
    cable = attachedTo.addChild(name)
    geometry = [list(p) for p in cableGeometry]
    cable.addObject("MechanicalObject", position=geometry, rotation=list(rotation), translation=list(translation),
                    scale=uniformScale)
    pull = {"pullPoint": list(pullPointLocation), "hasPullPoint": True} if pullPointLocation is not None else \
        {"hasPullPoint": False}
    cable.addObject("CableConstraint", indices=list(range(len(geometry))), value=initialValue, valueType=valueType,
                    **pull)
    cable.addObject("BarycentricMapping", name="Mapping", mapForces=False, mapMasses=False)
    return cable


def PneumaticCavity(surfaceMeshFileName: str | None = None, attachedAsAChildOf: Node | None = None,  # noqa: N802, N803
                    attachedTo: Node | None = None, name: str = "PneumaticCavity",  # noqa: N803
                    rotation=(0.0, 0.0, 0.0), translation=(0.0, 0.0, 0.0), uniformScale: float = 1,  # noqa: N803
                    initialValue: float = 0, valueType: str = "volumeGrowth") -> Node:  # noqa: N803
    """softrobots.actuators.PneumaticCavity: a surface loader, its topology, points, a SurfacePressureConstraint
    and a mapping, in a new child (``attachedAsAChildOf``) or in ``attachedTo``."""
    if attachedTo is not None:
        node = attachedTo
    elif attachedAsAChildOf is not None:
        node = attachedAsAChildOf.addChild(name)
    else:
        raise ValueError("PneumaticCavity: set attachedTo or attachedAsAChildOf")
    if surfaceMeshFileName is None:
        raise ValueError("PneumaticCavity: no surfaceMeshFileName")
    loader = "MeshOBJLoader" if str(surfaceMeshFileName).endswith(".obj") else "MeshSTLLoader"
    node.addObject(loader, name="MeshLoader", filename=surfaceMeshFileName, rotation=list(rotation),
                   translation=list(translation), scale=uniformScale)
    node.addObject("MeshTopology", name="topology", src="@MeshLoader")
    node.addObject("MechanicalObject", src="@topology")
    node.addObject("SurfacePressureConstraint", value=initialValue, valueType=valueType)
    node.addObject("BarycentricMapping", name="Mapping", mapForces=False, mapMasses=False)
    return node


def addOrientedBoxRoi(parentNode, position, name: str = "BoxROI", translation=(0.0, 0.0, 0.0),  # noqa: N802, N803
                      eulerRotation=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0), drawBoxes: bool = True) -> Component:  # noqa: N803
    """stlib3.components.addOrientedBoxRoi: a BoxROI over ``position`` with the oriented box of a transform."""
    from softsim.app.sofa_import.numerics import getOrientedBoxFromTransform

    box = getOrientedBoxFromTransform(translation=list(translation), eulerRotation=list(eulerRotation),
                                      scale=list(scale))
    return parentNode.addObject("BoxROI", name=name, position=position, orientedBox=box, drawBoxes=drawBoxes)


def Rigidify(targetObject: Node, sourceObject: Node, groupIndices, frames=None, name: str | None = None  # noqa: N802, N803
             ) -> Node:
    """stlib3.physics.mixedmaterial.Rigidify: the body's nodes split into DeformableParts and, per group, the
    RigidifiedParticules of one Rigid3 frame of RigidParts (a RigidMapping with rigidIndexPerPoint), joined
    back into the body's MechanicalObject by a SubsetMultiMapping (indexPairs: input 0 or 1, index in it).
    Frames: 3 Euler angles in degrees or a quaternion (at the group's barycentre), or a position followed by
    either."""
    from softsim.app.sofa_import.numerics import Quat

    if frames is None:
        frames = [[0.0, 0.0, 0.0]] * len(groupIndices)
    if len(groupIndices) != len(frames):
        raise ValueError(f"Rigidify: {len(groupIndices)} groups but {len(frames)} frames")
    name = sourceObject.name if name is None else name
    structure = targetObject.addChild(name)
    positions = [list(p) for p in sourceObject.container.position.value]
    rigids, indices_map, selected = [], [], []
    for group, frame in zip(groupIndices, frames):
        group = [int(i) for i in group]
        frame = [float(v) for v in frame]
        points = [positions[i] for i in sorted(set(group))]
        barycentre = [sum(p[k] for p in points) / len(points) for k in range(3)] if points else [0.0, 0.0, 0.0]
        if len(frame) in (3, 6):
            orientation = list(Quat.createFromEuler(frame[-3:], inDegree=True))
        elif len(frame) in (4, 7):
            orientation = frame[-4:]
        else:
            raise ValueError(f"Rigidify: a frame of {len(frame)} numbers (3, 4, 6 or 7 expected)")
        centre = frame[:3] if len(frame) in (6, 7) else barycentre
        rigids.append(list(centre) + [float(v) for v in orientation])
        selected += group
        indices_map += [len(rigids) - 1] * len(group)
    chosen = set(selected)
    others = [i for i in range(len(positions)) if i not in chosen]
    pairs: dict[int, list[int]] = {i: [0, k] for k, i in enumerate(others)}
    pairs.update({i: [1, k] for k, i in enumerate(selected)})
    index_pairs = [v for i in range(len(positions)) for v in pairs[i]]
    free = structure.addChild("DeformableParts")
    free.addObject("MechanicalObject", template="Vec3", name="dofs", position=[positions[i] for i in others])
    rigid_parts = structure.addChild("RigidParts")
    rigid_parts.addObject("MechanicalObject", template="Rigid3", name="dofs", reserve=len(rigids), position=rigids)
    particles = rigid_parts.addChild("RigidifiedParticules")
    particles.addObject("MechanicalObject", template="Vec3", name="dofs", position=[positions[i] for i in selected])
    particles.addObject("RigidMapping", name="mapping", globalToLocalCoords=True, rigidIndexPerPoint=indices_map)
    for solver in ("solver", "integration", "correction"):
        found = sourceObject.getObject(solver)
        if found is not None:
            sourceObject.removeObject(found)
    sourceObject.addObject("SubsetMultiMapping", name="mapping", template="Vec3,Vec3",
                           input=[free.dofs.getLinkPath(), particles.dofs.getLinkPath()],
                           output=sourceObject.dofs.getLinkPath(), indexPairs=index_pairs)
    particles.addChild(sourceObject)
    free.addChild(sourceObject)
    return structure
