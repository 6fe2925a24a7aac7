"""Rigid frames of a SOFA scene that hold a body's nodes, as ``[[body.fixed]]`` regions that move rigidly.

SOFA rigidifies part of a deformable body (STLIB's ``Rigidify``) by splitting its MechanicalObject with a
``SubsetMultiMapping``: some nodes come from a plain Vec3 object (they stay deformable), the others from points
that a ``RigidMapping`` carries with a Rigid3 frame (``rigidIndexPerPoint`` or ``index`` says which frame). A
frame is translated when its pose is prescribed:

- held: a FixedConstraint / FixedProjectiveConstraint / RestShapeSpringsForceField on it: the nodes are fixed;
- mapped from another Rigid3 object by a ``SubsetMultiMapping`` (``indexPairs``): followed to that frame;
- the child of an ``ArticulatedSystemMapping`` (ArticulatedSystemPlugin; Tripod's servo): the base frame
  (``input2``) must be held, and the joint (``ArticulationCenter`` with ``childIndex``, and its
  ``Articulation`` with ``rotation`` true and ``rotationAxis``) turns about the base's axis through
  ``posOnParent`` by the angle of the Vec1 object ``input1``: its ``rest_position`` (the servo holds it with a
  1e9 stiff spring), in radians. The region gets ``angle`` (degrees), ``axis`` and ``center``; the data fields
  the angle is read from (the prefab's ``angleIn`` chain) are bound for controllers, and the ones that read it
  back (``angleOut``) too.

A frame that nothing prescribes (Tripod's ``FreeCenter``: a free rigid frame, ``RigidGroup.free``) carries its
nodes as one rigid piece: the translator makes them a ``[[body.rigidGroup]]`` (a frame without mass of its own,
as Tripod's has none). A frame that cannot be followed for another reason is reported and its nodes stay
deformable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from softsim.app.sofa_import.computed import computed_value
from softsim.app.sofa_import.graph import Component, Link, Node, components_of, resolve_link
from softsim.app.sofa_import.values import Ref, ValueProblem, as_float, as_floats, as_ints, follow

__all__ = ["FRAME", "FRAME_REST", "HARDWARE", "RADIANS", "RADIANS_VEC", "RELEASED", "FramePose", "RigidGroup",
           "converts", "from_scene", "matching_rois", "rigid_groups", "rigid_poses", "scene_key", "to_scene"]

_HOLDERS = {"FixedConstraint", "FixedProjectiveConstraint", "RestShapeSpringsForceField"}
#: key-path prefix of a binding whose scene value is in degrees and whose SOFA field is in radians
RADIANS = "radians:"
#: prefixes of the bindings of a servo's base frame (``frame:x,y,z,qx,qy,qz,qw:key``): its ``position`` moved by
#: the region's ``translation``; its ``rest_position``, read only (the frame where the import found it)
FRAME, FRAME_REST = "frame:", "frame_rest:"
#: prefix of the binding of a servo's joint spring (the RestShapeSpringsForceField on its joint angle) when the
#: servo is actuated (``released:key``, key its region's ``actuated``): releasing it (stiffness 0, Tripod's I key)
#: hands the angle to the inverse model, which softsim's actuated region does from the first frame
RELEASED = "released:"
#: prefix of the binding of a joint-angle MechanicalObject's own fields (Vec1 ``position`` / ``rest_position``:
#: ``[[radians]]`` in SOFA, the region's angle in degrees here)
RADIANS_VEC = "radians_vec:"
#: prefix of a hardware output nothing simulates (the serial bridge's ``packetOut``): written values are kept
#: on the record, nothing else happens
HARDWARE = "hardware:"


def scene_key(binding: str) -> str:
    """The scene key path a binding names (its conversion prefix removed)."""
    if binding.startswith(RADIANS):
        return binding.removeprefix(RADIANS)
    if binding.startswith(RADIANS_VEC):
        return binding.removeprefix(RADIANS_VEC)
    if binding.startswith(HARDWARE):
        return "(the robot's serial port: not driven)"
    if binding.startswith((FRAME, FRAME_REST)):
        return binding.rsplit(":", 1)[1]
    return binding.removeprefix(RELEASED)


def converts(binding: str) -> bool:
    """Whether the binding converts between SOFA's value and the scene's (the functions below)."""
    return binding.startswith((RADIANS, RADIANS_VEC, FRAME, FRAME_REST))


def _origin(binding: str) -> np.ndarray:
    return np.asarray([float(v) for v in binding.split(":")[1].split(",")])


def to_scene(binding: str, value: Any) -> Any:
    """The scene value of a SOFA value written to a converting binding (radians -> degrees; a base frame's
    position -> the region's translation). ValueError when the SOFA value cannot be expressed."""
    numbers = np.asarray(as_floats(value, binding), dtype=np.float64)
    if binding.startswith((RADIANS, RADIANS_VEC)):
        if numbers.size != 1:
            raise ValueError(f"expected one angle, got {value!r}")
        return math.degrees(float(numbers[0]))
    if binding.startswith(FRAME_REST):
        raise ValueError("the rest frame of a servo's base is read only")
    origin = _origin(binding)
    if numbers.size != 7:
        raise ValueError(f"expected one Rigid3 frame (7 numbers), got {numbers.size}")
    same = np.allclose(numbers[3:], origin[3:], atol=1e-9) or np.allclose(numbers[3:], -origin[3:], atol=1e-9)
    if not same:
        raise ValueError("only a translation of a servo's base is bound (its orientation changed)")
    return [float(v) for v in numbers[:3] - origin[:3]]


def from_scene(binding: str, value: Any) -> Any:
    """The SOFA value of a converting binding from the scene's value (degrees -> radians; the region's
    translation -> the base frame ``[[x, y, z, qx, qy, qz, qw]]``)."""
    if binding.startswith(RADIANS):
        return math.radians(float(value))
    if binding.startswith(RADIANS_VEC):
        return [[math.radians(float(value))]]
    origin = _origin(binding)
    if binding.startswith(FRAME_REST):
        return [origin.tolist()]
    return [[*(origin[:3] + np.asarray(value, dtype=np.float64)).tolist(), *origin[3:].tolist()]]


@dataclass
class FramePose:
    """How a rigid frame moves: held (``angle`` None), or turned by ``angle`` degrees about ``axis`` through
    ``center``; ``angle_fields`` are the ``(path, field)`` the angle is written to (SOFA radians),
    ``angle_readers`` the ones that read it back; ``used`` the components the translation accounts for."""

    angle: float | None = None
    axis: list[float] = field(default_factory=lambda: [1.0, 0.0, 0.0])
    center: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    angle_fields: list[tuple[str, str]] = field(default_factory=list)
    angle_readers: list[tuple[str, str]] = field(default_factory=list)
    base: Component | None = None
    used: list[Component] = field(default_factory=list)
    source: str = ""
    #: the joint's JointActuator (SoftRobots.Inverse) on the angle, when the scene solves for it
    actuator: Component | None = None
    #: the Vec1 MechanicalObject of the joint angles, when the frame's angle is its only one
    angles: Component | None = None


@dataclass
class RigidGroup:
    """The body's node ids ``nodes`` that the frame ``index`` of the Rigid3 object ``frame`` carries, and
    ``pose`` (None: nothing prescribes the frame, with ``why``)."""

    frame: Component
    index: int
    nodes: list[int]
    pose: FramePose | None
    why: str = ""
    used: list[Component] = field(default_factory=list)
    #: nothing holds or drives the frame: a free frame (its nodes move as one rigid piece, ``[[body.rigidGroup]]``)
    free: bool = False
    #: a free group: which frame of ``frame`` (the free Rigid3 object) carries it
    frame_index: int = 0


def _state_of(target: Any) -> Component | None:
    """The MechanicalObject a link names (a node: its own)."""
    if isinstance(target, Link):
        target = target.target
    if isinstance(target, Node):
        return target.getMechanicalState()
    if isinstance(target, Component) and target.type == "MechanicalObject":
        return target
    return None


def _linked_state(component: Component, key: str) -> Component | None:
    value = component.data.get(key)
    if isinstance(value, str) and value.strip().startswith("@"):
        target, _ = resolve_link(component.node, value.strip())
        return _state_of(target)
    return _state_of(value)


def _inputs(mapping: Component) -> list[Component | None]:
    value = mapping.data.get("input", [])
    values = value if isinstance(value, list) else str(value).split() if isinstance(value, str) else [value]
    states = []
    for item in values:
        if isinstance(item, str) and item.strip().startswith("@"):
            target, _ = resolve_link(mapping.node, item.strip())
            states.append(_state_of(target))
        else:
            states.append(_state_of(item))
    return states


def _outputs_to(mapping: Component, state: Component) -> bool:
    """Whether ``mapping`` writes ``state`` (its ``output`` names it, or it has none and sits beside it)."""
    if "output" not in mapping.data:
        return mapping.node is state.node
    return _linked_state(mapping, "output") is state


def rigid_poses(state: Component) -> list[tuple[np.ndarray, Rotation]]:
    """The frames of a Rigid3 MechanicalObject: positions ``x y z qx qy qz qw`` moved by its own placement."""
    from softsim.app.sofa_import.translate import placement_of

    numbers = as_floats(state.data.get("position", []), f"{state.getPathName()}.position")
    if len(numbers) % 7:
        raise ValueProblem(f"{state.getPathName()}.position: {len(numbers)} numbers are not Rigid3 frames (7 each)")
    placement = placement_of(state)
    poses = []
    for i in range(0, len(numbers), 7):
        position = placement.apply(np.asarray([numbers[i:i + 3]]))[0]
        orientation = placement.rotation * Rotation.from_quat(numbers[i + 3:i + 7])
        poses.append((position, orientation))
    return poses


def _holds(node: Node, index: int) -> Component | None:
    """The component in ``node`` that holds frame ``index`` in place."""
    for component in components_of(node, _HOLDERS):
        key = "points" if component.type == "RestShapeSpringsForceField" else "indices"
        value = follow(component, key) if key in component.data else None
        if value is None or isinstance(value, Ref):
            if value is None:
                return component
            continue
        if index in as_ints(value, f"{component.getPathName()}.{key}"):
            return component
    return None


def _value_chain(owner: Component | Node, name: str) -> tuple[Any, list[tuple[str, str]]]:
    """The value of ``owner.name`` with parent links followed, and every ``(path, field)`` on the way."""
    chain = []
    for _ in range(20):
        chain.append((owner.getPathName(), name))
        value = owner.data.get(name)
        if isinstance(value, str) and value.strip().startswith("@"):
            target, target_field = resolve_link(owner.node if isinstance(owner, Component) else owner,
                                                value.strip())
            value = Link(target, target_field, value) if target is not None else value
        if isinstance(value, Link) and value.field is not None and isinstance(value.target, Component | Node):
            owner, name = value.target, value.field
            continue
        return value, chain
    raise ValueProblem(f"{owner.getPathName()}.{name}: a cycle of linked data fields")


def _readers(root: Node, targets: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The data fields of the graph whose parent link ends at one of ``targets`` (the angle read back)."""
    found = []
    for node in root.walk():
        owners: list[Component | Node] = [node, *[o for o in node.objects if isinstance(o, Component)]]
        for owner in owners:
            for name, value in owner.data.items():
                if isinstance(value, Link) and value.field is not None and isinstance(value.target, Component | Node):
                    _, chain = _value_chain(owner, name)
                    if chain[-1] in targets:
                        found.append((owner.getPathName(), name))
    return found


class _Frames:
    def __init__(self, root: Node) -> None:
        self.root = root
        self.free: list[Component] = []  # the free frames met
        self.free_index: list[int] = []  # and which frame of each

    def pose(self, state: Component, index: int, depth: int = 0) -> tuple[FramePose | None, str]:
        """What prescribes frame ``index`` of the Rigid3 object ``state``: a pose, or None and why not."""
        what = f"{state.getPathName()}[{index}]"
        if depth > 10:
            return None, f"{what}: rigid mappings nested too deep"
        node = state.node
        holder = _holds(node, index)
        if holder is not None:  # a held frame's mass does nothing
            return FramePose(used=[state, holder, *components_of(node, {"UniformMass"})],
                             source=f"{holder.getPathName()} holds it"), ""
        for mapping in components_of(node, {"SubsetMultiMapping"}):
            if not _outputs_to(mapping, state):
                continue
            pairs = as_ints(mapping.data.get("indexPairs", []), f"{mapping.getPathName()}.indexPairs")
            if 2 * index + 1 >= len(pairs):
                return None, f"{mapping.getPathName()}.indexPairs has no pair for frame {index}"
            inputs = _inputs(mapping)
            source = inputs[pairs[2 * index]] if pairs[2 * index] < len(inputs) else None
            if source is None:
                return None, f"{mapping.getPathName()}: input {pairs[2 * index]} is not a mechanical object"
            pose, why = self.pose(source, pairs[2 * index + 1], depth + 1)
            if pose is not None:
                pose.used += [state, mapping]
            return pose, why
        for mapping in components_of(node, {"ArticulatedSystemMapping"}):
            if _outputs_to(mapping, state):
                pose, why = self.articulated(mapping, state, index, depth)
                if pose is not None:
                    pose.used.append(state)
                return pose, why
        self.free.append(state)
        self.free_index.append(index)
        return None, f"{what}: a free rigid frame (nothing holds or drives it)"

    def articulated(self, mapping: Component, state: Component, index: int, depth: int
                    ) -> tuple[FramePose | None, str]:
        what = mapping.getPathName()
        angles = _linked_state(mapping, "input1")
        base = _linked_state(mapping, "input2")
        if angles is None or base is None:
            return None, f"{what}: input1 (the joint angles) or input2 (the base frame) names no mechanical object"
        base_pose, why = self.pose(base, 0, depth + 1)
        if base_pose is None or base_pose.angle is not None:
            return None, why or f"{what}: the base frame {base.getPathName()} moves (only a held base is translated)"
        if index == 0:
            base_pose.used.append(mapping)
            return base_pose, ""
        centres = [(node, c) for node in angles.node.walk() for c in components_of(node, {"ArticulationCenter"})
                   if int(as_float(c.data.get("childIndex", 0), f"{c.getPathName()}.childIndex")) == index]
        if len(centres) != 1:
            return None, (f"{what}: {len(centres)} ArticulationCenter with childIndex {index} under "
                          f"{angles.node.getPathName()}")
        centre_node, centre = centres[0]
        if int(as_float(centre.data.get("parentIndex", 0), f"{centre.getPathName()}.parentIndex")) != 0:
            return None, f"{centre.getPathName()}: a joint on a joint (parentIndex != 0) is not translated"
        joints = [c for node in centre_node.walk() for c in components_of(node, {"Articulation"})]
        turning = [j for j in joints if str(j.data.get("rotation", False)).lower() in ("1", "true")]
        sliding = [j for j in joints if str(j.data.get("translation", False)).lower() in ("1", "true")]
        if len(turning) != 1 or sliding:
            return None, f"{centre.getPathName()}: only one rotation joint is translated ({len(turning)} rotations, " \
                         f"{len(sliding)} translations)"
        joint = turning[0]
        axis_local = as_floats(joint.data.get("rotationAxis", [1, 0, 0]), f"{joint.getPathName()}.rotationAxis")
        dof = int(as_float(joint.data.get("articulationIndex", 0), f"{joint.getPathName()}.articulationIndex"))
        on_parent = as_floats(centre.data.get("posOnParent", [0, 0, 0]), f"{centre.getPathName()}.posOnParent")
        position, orientation = rigid_poses(base)[0]
        key = "rest_position" if "rest_position" in angles.data else "position"
        value, chain = _value_chain(angles, key)
        radians = as_floats(value if value is not None else 0.0, f"{angles.getPathName()}.{key}")
        if dof >= len(radians):
            return None, f"{angles.getPathName()}.{key} has no angle {dof}"
        used = [mapping, angles, centre, joint, *base_pose.used,
                *components_of(angles.node, {"RestShapeSpringsForceField", "UniformMass",
                                           "ArticulatedHierarchyContainer"})]
        chain_ends = {chain[-1]} | {(angles.getPathName(), "position")}
        actuators = [c for node in angles.node.walk() for c in components_of(node, {"JointActuator"})
                     if int(as_float(c.data.get("index", 0), f"{c.getPathName()}.index")) == dof]
        pose = FramePose(angle=math.degrees(radians[dof]),
                         axis=[float(v) for v in orientation.apply(axis_local)],
                         center=[float(v) for v in position + orientation.apply(on_parent)],
                         angle_fields=chain if len(radians) == 1 else [],
                         angle_readers=_readers(self.root, chain_ends) if len(radians) == 1 else [],
                         base=base, used=used, actuator=actuators[0] if actuators else None,
                         angles=angles if len(radians) == 1 else None,
                         source=f"{joint.getPathName()} (angle from {chain[-1][0]}.{chain[-1][1]})")
        return pose, ""


def rigid_groups(root: Node, body: Node) -> list[RigidGroup]:
    """The groups of ``body``'s nodes carried by rigid frames (a SubsetMultiMapping into the body's
    MechanicalObject from RigidMapping-ed points), each with its frame's pose."""
    state = body.getMechanicalState()
    frames = _Frames(root)
    groups: dict[tuple[int, int], RigidGroup] = {}
    for mapping in components_of(body, {"SubsetMultiMapping"}):
        if state is None or not _outputs_to(mapping, state):
            continue
        inputs = _inputs(mapping)
        pairs = as_ints(mapping.data.get("indexPairs", []), f"{mapping.getPathName()}.indexPairs")
        carried: dict[int, tuple[Component, list[int], Component]] = {}
        for k, source in enumerate(inputs):
            if source is None:
                continue
            rigid = next(iter(components_of(source.node, {"RigidMapping"})), None)
            if rigid is None:
                continue
            frame = _linked_state(rigid, "input") if "input" in rigid.data else next(
                (p.getMechanicalState() for p in source.node.parents if p.getMechanicalState() is not None), None)
            if frame is None or not str(frame.data.get("template", "")).startswith("Rigid"):
                continue
            count = len(as_floats(source.data.get("position", []), f"{source.getPathName()}.position")) // 3
            if "rigidIndexPerPoint" in rigid.data:
                per_point = as_ints(rigid.data["rigidIndexPerPoint"], f"{rigid.getPathName()}.rigidIndexPerPoint")
            else:
                per_point = [int(as_float(rigid.data.get("index", 0), f"{rigid.getPathName()}.index"))] * count
            carried[k] = (frame, per_point, rigid)
        if not carried:
            continue
        for node_id in range(len(pairs) // 2):
            k, j = pairs[2 * node_id], pairs[2 * node_id + 1]
            if k not in carried:
                continue
            frame, per_point, rigid = carried[k]
            key = (id(frame), per_point[j])
            if key not in groups:
                met = len(frames.free)
                pose, why = frames.pose(frame, per_point[j])
                groups[key] = RigidGroup(frame, per_point[j], [], pose, why,
                                         used=[mapping, rigid, *[s for s in inputs if s is not None]])
                if pose is None and len(frames.free) > met:
                    groups[key].frame = frames.free[-1]
                    groups[key].frame_index = frames.free_index[-1]
                    groups[key].used.append(frames.free[-1])
                    groups[key].free = True
            groups[key].nodes.append(node_id)
    return sorted(groups.values(), key=lambda g: (g.frame.getPathName(), g.index))


def matching_rois(root: Node, groups: list[RigidGroup], base) -> list[Component]:
    """The BoxROI / SphereROI components whose indices are exactly one group's nodes (they chose them; mesh
    files relative to ``base``, the scene's folder)."""
    wanted = [set(g.nodes) for g in groups]
    found = []
    for node in root.walk():
        for roi in components_of(node, {"BoxROI", "SphereROI"}):
            indices = computed_value(roi, "indices", base)
            if indices is not None and set(indices) in wanted:
                found.append(roi)
    return found
