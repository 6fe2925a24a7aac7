"""The parameters a gradient is taken with respect to (``wrt``): scene key paths, and how each one enters the
equilibrium equations.

For a parameter p, :meth:`Parameter.partial` gives the partial derivatives at the converged state (x, lambda)
held fixed: of the force balance G = f_int + f_ext + J^T lambda (on every DOF), of each constraint row's
violation d_i(x) and of its target, and of the outputs that depend on p explicitly.

- ``body.NAME.material.youngModulus`` / ``poissonRatio`` and ``body.NAME.material.region[i].youngModulus`` /
  ``poissonRatio``: every material law is linear in the Lame parameters (mu, lambda), so the difference of two
  force evaluations of the elements the key sets, with (mu, lambda) and (mu + dmu/dp, lambda + dlambda/dp), is
  the exact partial (``TetElasticity.forces_of``).
- ``scene.gravity.x`` (``.y``, ``.z``, or ``[0]``..``[2]``): the lumped masses on that axis.
- ``body.NAME.material.totalMass`` (or ``massDensity``): the body's weight over the value (weight is linear in
  it; in static mode mass acts only through gravity).
- ``body.NAME.cable.C.value``, ``body.NAME.cavity.C.value``: the target of the actuator's row (1 when the
  value is imposed as it is, 0 when a range or rate limit clipped it).
- ``obstacle.NAME.point.x`` (planes), ``obstacle.NAME.center.x`` (spheres, boxes): the contact rows' gaps move
  by -n_x, and a frictionless contact's normal force lambda n turns by -lambda H e_x (H the signed distance's
  Hessian at the node, 0 for a plane). ``obstacle.NAME.a.x``, ``.b.x`` (a capsule's ends): the same two
  derivatives by Richardson differences of the capsule with that end moved.
- ``body.NAME.cable.C.points[k].x``: the cable's row (its Jacobian, its violation with the rest length that
  follows the points, and its outputs) rebuilt with the point moved by +-h and +-h/2, combined by Richardson
  extrapolation (error O(h^4), h = 1e-4 of the body's size; the points are mapped into their tetrahedra, which
  is affine in the point inside one tetrahedron).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from softsim import meshes
from softsim.mechanics.constraints import CableConstraint
from softsim.mechanics.scene import get_value
from softsim.mechanics.scene.edit import resolve
from softsim.mechanics.scene.schema import (
    CableSpec,
    CavitySpec,
    ForceSpec,
    MaterialRegionSpec,
    MaterialSpec,
    SceneSettings,
    StackedMaterialSpec,
)
from softsim.mechanics.sensitivity.errors import GradientError

_AXES = {"x": 0, "y": 1, "z": 2}
_COMPONENT = re.compile(r"^(?P<base>.+?)(?:\[(?P<index>\d+)\])?(?:\.(?P<axis>[xyz])|\[(?P<axis_index>[0-2])\])?$")
#: Richardson step of the rebuilt cable rows, as a fraction of the body's size
CABLE_POINT_STEP = 1e-4


@dataclass
class Partial:
    """Partial derivatives with respect to one parameter at the converged (x, lambda) held fixed.

    ``force (3N,)``: of f_int + f_ext + J^T lambda; ``violation (m,)`` and ``target (m,)``: of each row's
    violation and target; ``outputs``: of the outputs that depend on the parameter explicitly."""

    force: np.ndarray
    violation: np.ndarray
    target: np.ndarray
    outputs: dict = field(default_factory=dict)


class Parameter:
    """One ``wrt`` key: ``key`` as given, ``value`` its current value."""

    key: str
    value: float

    def partial(self, state) -> Partial:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @staticmethod
    def zero(state) -> Partial:
        m = state.n_rows
        return Partial(np.zeros(state.n_dofs), np.zeros(m), np.zeros(m))


def _split(scene, key: str) -> tuple[str, int | None, int | None]:
    """``key`` -> (base key path, list index of the last segment or None, axis or None)."""
    match = _COMPONENT.match(key.strip())
    if not match:
        raise GradientError(f"wrt {key!r}: not a key path")
    axis = match.group("axis")
    axis = _AXES[axis] if axis else (int(match.group("axis_index")) if match.group("axis_index") else None)
    index = match.group("index")
    return match.group("base"), None if index is None else int(index), axis


def parameter(scene, key: str) -> Parameter:
    """The :class:`Parameter` of the ``wrt`` key ``key`` (GradientError naming what is wrong)."""
    base, index, axis = _split(scene, key)
    spec = scene.spec
    try:
        address = resolve(spec, base if index is None else f"{base}[{index}]")
        value = get_value(spec, base if index is None else f"{base}[{index}]")
    except Exception:  # noqa: BLE001 - the points list is not addressable by index in the scene's paths
        try:
            address = resolve(spec, base)
            value = get_value(spec, base)
        except Exception as error:  # noqa: BLE001 - SceneError: the message names the key
            raise GradientError(f"wrt {key!r}: {error}") from None
    table, name = address.table, address.key
    if isinstance(table, SceneSettings) and name == "gravity":
        if axis is None:
            raise GradientError(f"wrt {key!r}: gravity is a vector; take a component: {base}.x, .y or .z")
        return GravityParameter(key, float(value[axis]), axis)
    if isinstance(table, MaterialSpec | MaterialRegionSpec) and name in ("youngModulus", "poissonRatio"):
        if value is None:
            raise GradientError(f"wrt {key!r}: this region sets no {name}")
        body = address.index("body")
        region = address.index("region")
        return MaterialParameter(key, float(value), body, region, name)
    if isinstance(table, StackedMaterialSpec) and name in ("youngModulus", "poissonRatio"):
        return StackedParameter(key, float(value), address.index("body"), address.index("stacked"), name)
    if isinstance(table, ForceSpec) and name == "totalForce":
        if value is None:
            raise GradientError(f"wrt {key!r}: this force sets no totalForce (a pressure force's value is not a "
                                "parameter yet)")
        if axis is None:
            raise GradientError(f"wrt {key!r}: totalForce is a vector; take a component: {base}.x, .y or .z")
        return TotalForceParameter(key, float(value[axis]), address.index("body"), address.index("force"), axis)
    if isinstance(table, MaterialSpec) and name in ("totalMass", "massDensity"):
        if value is None:
            raise GradientError(f"wrt {key!r}: the body has no {name}")
        if name == "massDensity" and table.totalMass is not None:
            raise GradientError(f"wrt {key!r}: totalMass is set, so the mass does not depend on massDensity")
        return MassParameter(key, float(value), address.index("body"))
    if isinstance(table, CableSpec | CavitySpec) and name == "value":
        return ActuatorValue(key, float(value), table.name)
    if isinstance(table, CableSpec) and name == "points":
        if table.points is None or index is None or axis is None:
            raise GradientError(f"wrt {key!r}: name one coordinate of one cable point: {base}[k].x (the cable "
                                "must be given by points)")
        if not 0 <= index < len(table.points):
            raise GradientError(f"wrt {key!r}: the cable has {len(table.points)} points (0..{len(table.points) - 1})")
        return CablePoint(key, float(table.points[index][axis]), address.index("body"), address.index("cable"),
                          index, axis)
    if type(table).__name__ == "ObstacleSpec" and name in ("point", "center", "a", "b"):
        if axis is None:
            raise GradientError(f"wrt {key!r}: the obstacle's {name} is a vector; take a component: {base}.x")
        return ObstaclePosition(key, float(value[axis]), address.index("obstacle"), axis,
                                name if name in ("a", "b") else None)
    raise GradientError(f"wrt {key!r}: gradients are available with respect to youngModulus, poissonRatio "
                        "(of a body, a material region or a stacked field), a force's totalForce.x/y/z, "
                        "totalMass, massDensity, scene.gravity.x/y/z, actuator values (body.B.cable.C.value, "
                        "body.B.cavity.C.value), a plane obstacle's point.x/y/z, a sphere's or box's "
                        "center.x/y/z, a capsule's a.x/y/z and b.x/y/z and cable points (body.B.cable.C.points[k].x)")


def _place(state, body: int, values: np.ndarray) -> np.ndarray:
    """A body's (n_b, 3) array on the concatenated DOFs (3N,)."""
    full = np.zeros((state.n_dofs // 3, 3))
    start = int(state.scene.node_offsets[body])
    full[start:start + values.shape[0]] = values
    return full.reshape(-1)


class GravityParameter(Parameter):
    def __init__(self, key: str, value: float, axis: int) -> None:
        self.key, self.value, self.axis = key, value, axis

    def partial(self, state) -> Partial:
        partial = self.zero(state)
        masses = np.concatenate([gravity.masses for gravity in state.scene.gravities])
        partial.force.reshape(-1, 3)[:, self.axis] = masses
        return partial


class MassParameter(Parameter):
    def __init__(self, key: str, value: float, body: int) -> None:
        self.key, self.value, self.body = key, value, body

    def partial(self, state) -> Partial:
        partial = self.zero(state)
        gravity = state.scene.gravities[self.body]
        partial.force[:] = _place(state, self.body, gravity.masses[:, None] * gravity.g[None, :] / self.value)
        return partial


def lame_derivatives(young: np.ndarray, poisson: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(dmu/dp, dlambda/dp) (k,) for p = ``"youngModulus"`` or ``"poissonRatio"``, with mu = E / (2 (1 + nu))
    and lambda = E nu / ((1 + nu)(1 - 2 nu))."""
    if name == "youngModulus":
        return 1.0 / (2.0 * (1.0 + poisson)), poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    return (-young / (2.0 * (1.0 + poisson) ** 2),
            young * (1.0 + 2.0 * poisson ** 2) / ((1.0 + poisson) ** 2 * (1.0 - 2.0 * poisson) ** 2))


class MaterialParameter(Parameter):
    def __init__(self, key: str, value: float, body: int, region: int | None, name: str) -> None:
        self.key, self.value, self.body, self.region, self.name = key, value, body, region, name

    def elements(self, scene) -> np.ndarray:
        """The element ids (k,) whose value this key sets (later regions override earlier ones)."""
        body = scene.spec.bodies[self.body]
        mesh = scene.meshes[self.body]
        source = np.full(mesh.n_tets, -1)
        for i, region in enumerate(body.material.regions):
            if getattr(region, self.name) is not None:
                source[meshes.tets_in_box(mesh.points, mesh.tets, region.box)] = i
        return np.flatnonzero(source == (-1 if self.region is None else self.region))

    def partial(self, state) -> Partial:
        partial = self.zero(state)
        scene = state.scene
        elements = self.elements(scene)
        if elements.size == 0:
            return partial
        young, poisson = _own_materials(scene, self.body)
        young, poisson = young[elements], poisson[elements]
        stacked = bool(scene.spec.bodies[self.body].material.stacked)
        if self.name == "youngModulus" and not stacked and np.all(young == young[0]):
            # the force is homogeneous of degree 1 in (mu, lambda), both proportional to E: df/dE = f / E
            force = _element_forces(state, self.body, elements) / young[0]
        else:  # the elements' (mu, lambda) move by this field's (dmu, dlambda) (a stacked field's stay)
            force = _lame_partial(state, self.body, elements, *lame_derivatives(young, poisson, self.name))
        partial.force[:] = _place(state, self.body, force)
        return partial


def _own_materials(scene, body: int) -> tuple[np.ndarray, np.ndarray]:
    """(young (m,), poisson (m,)) of a body's own field per element, its regions applied (later wins), without
    its stacked fields (the elasticity holds the sum)."""
    spec = scene.spec.bodies[body]
    mesh = scene.meshes[body]
    young = np.full(mesh.n_tets, spec.material.youngModulus, dtype=np.float64)
    poisson = np.full(mesh.n_tets, spec.material.poissonRatio, dtype=np.float64)
    for region in spec.material.regions:
        tets = meshes.tets_in_box(mesh.points, mesh.tets, region.box)
        if region.youngModulus is not None:
            young[tets] = region.youngModulus
        if region.poissonRatio is not None:
            poisson[tets] = region.poissonRatio
    return young, poisson


def _element_forces(state, body: int, elements: np.ndarray) -> np.ndarray:
    """The internal force (n_b, 3) of a body's ``elements`` at the state, with their (mu, lambda) (cached)."""
    scene = state.scene
    elasticity = scene.model.bodies[body].elasticity
    key = ("forces", body, elements.tobytes())
    if key not in state.cache:
        start, stop = scene.node_offsets[body], scene.node_offsets[body + 1]
        x = state.x[start:stop]
        state.cache[key] = (elasticity.forces(x) if elements.size == elasticity.tets.shape[0]
                            else elasticity.forces_of(x, elements, elasticity.mu[elements], elasticity.lam[elements]))
    return state.cache[key]


def _lame_partial(state, body: int, elements: np.ndarray, dmu: np.ndarray, dlam: np.ndarray) -> np.ndarray:
    """d(internal force)/dp (n_b, 3) when the ``elements``' (mu, lambda) move by (dmu, dlam) per unit of p: the
    force is linear in them, so the difference of two evaluations is exact."""
    scene = state.scene
    elasticity = scene.model.bodies[body].elasticity
    start, stop = scene.node_offsets[body], scene.node_offsets[body + 1]
    x = state.x[start:stop]
    mu, lam = elasticity.mu[elements], elasticity.lam[elements]
    return elasticity.forces_of(x, elements, mu + dmu, lam + dlam) - _element_forces(state, body, elements)


class StackedParameter(Parameter):
    """``body.B.material.stacked[i].youngModulus`` / ``poissonRatio``: the stacked field adds its (mu, lambda)
    to its elements', so they move by its (dmu/dp, dlambda/dp)."""

    def __init__(self, key: str, value: float, body: int, index: int, name: str) -> None:
        self.key, self.value, self.body, self.index, self.name = key, value, body, index, name

    def partial(self, state) -> Partial:
        from softsim.mechanics.scene_runtime import stacked_elements

        partial = self.zero(state)
        scene = state.scene
        elements = np.unique(stacked_elements(scene.spec, scene.spec.bodies[self.body], scene.meshes[self.body],
                                              self.index))
        if elements.size == 0:
            return partial
        stack = scene.spec.bodies[self.body].material.stacked[self.index]
        # an element listed twice gets the field twice (np.add.at in the scene's build)
        counts = np.bincount(stacked_elements(scene.spec, scene.spec.bodies[self.body], scene.meshes[self.body],
                                              self.index), minlength=elements.max() + 1)[elements]
        dmu, dlam = lame_derivatives(np.array([stack.youngModulus]), np.array([stack.poissonRatio]), self.name)
        force = _lame_partial(state, self.body, elements, counts * dmu[0], counts * dlam[0])
        partial.force[:] = _place(state, self.body, force)
        return partial


class TotalForceParameter(Parameter):
    """``body.B.force[i].totalForce.x``: the force shared equally by the region's k nodes, 1/k per node on that
    axis."""

    def __init__(self, key: str, value: float, body: int, index: int, axis: int) -> None:
        self.key, self.value, self.body, self.index, self.axis = key, value, body, index, axis

    def partial(self, state) -> Partial:
        partial = self.zero(state)
        scene = state.scene
        mesh = scene.meshes[self.body]
        nodes = np.asarray(meshes.select_nodes(mesh, scene.spec.bodies[self.body].forces[self.index].to_selector()))
        nodal = np.zeros((mesh.n_points, 3))
        np.add.at(nodal[:, self.axis], nodes, 1.0 / nodes.size)
        partial.force[:] = _place(state, self.body, nodal)
        return partial


class ActuatorValue(Parameter):
    def __init__(self, key: str, value: float, name: str) -> None:
        self.key, self.value, self.name = key, value, name

    def partial(self, state) -> Partial:
        partial = self.zero(state)
        rows = state.rows_of(self.name)
        if rows is not None:
            target = state.system.blocks.target[np.searchsorted(state.system.blocks.start, rows.start)]
            imposed = abs(target - self.value) <= 1e-12 * max(abs(target), abs(self.value), 1e-300)
            partial.target[rows] = 1.0 if imposed else 0.0
        return partial


class ObstaclePosition(Parameter):
    """A plane's point, a sphere's or box's center, or (``end`` "a" or "b") one end of a capsule."""

    def __init__(self, key: str, value: float, obstacle: int, axis: int, end: str | None = None) -> None:
        self.key, self.value, self.obstacle, self.axis, self.end = key, value, obstacle, axis, end

    def _moved(self, obstacle, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """d(signed distance)/dp (k,) and d(normal)/dp (k, 3) at ``points`` (k, 3) for a capsule's end: central
        differences of the capsule with that end moved by +-h and +-h/2 (h = 1e-4 of the capsule's length plus
        radius), combined by Richardson extrapolation; the distance is smooth in the end while the closest point
        stays on the segment's side or on the same end."""
        import copy

        h = CABLE_POINT_STEP * (float(np.linalg.norm(obstacle.b - obstacle.a)) + obstacle.radius)

        def at(shift):
            moved = copy.copy(obstacle)
            end = np.array(getattr(obstacle, self.end), dtype=np.float64)
            end[self.axis] += shift
            setattr(moved, self.end, end)
            return moved.distance_and_normal(points)

        def difference(step):
            (d_plus, n_plus), (d_minus, n_minus) = at(step), at(-step)
            return (d_plus - d_minus) / (2 * step), (n_plus - n_minus) / (2 * step)

        (d_coarse, n_coarse), (d_fine, n_fine) = difference(h), difference(0.5 * h)
        return (4.0 * d_fine - d_coarse) / 3.0, (4.0 * n_fine - n_coarse) / 3.0

    def partial(self, state) -> Partial:
        """Moving a plane, sphere or box by dc moves each of its contacts' gaps by ``-n . dc`` and, where the
        normal follows the node (a curved obstacle), turns the normal force ``lambda n`` by ``-lambda H dc`` (H
        the distance's Hessian): the distance depends on x - c only. A capsule's end: the gap's and the normal's
        derivatives by :meth:`_moved`."""
        partial = self.zero(state)
        obstacle = state.scene.obstacles[self.obstacle]
        if state.system is None:
            return partial
        x = state.x.reshape(-1, 3)
        for constraint, rows in zip(state.system.constraints, state.system.row_ranges):
            if obstacle not in getattr(constraint, "obstacles", ()):
                continue
            index = constraint.obstacles.index(obstacle)
            mine = np.flatnonzero(constraint.contact_obstacles == index)
            if mine.size == 0:
                continue
            local, to_global = _contact_view(constraint, x)
            points = local[constraint.contact_nodes[mine]]
            if self.end is None:
                d_gap = -constraint.normals_at(local)[mine][:, self.axis]
                d_normal = -obstacle.distance_hessian(points)[:, :, self.axis]
            else:
                d_gap, d_normal = self._moved(obstacle, points)
            mask = constraint._row_mask()
            per_contact = np.zeros(mask.shape)
            per_contact[mine, 0] = d_gap
            force = np.zeros(mask.shape)
            force[mask] = state.force[rows]
            turning = force[mine, 0][:, None] * d_normal
            follows = constraint.following()[mine]
            nodal = np.zeros_like(local)
            np.add.at(nodal, constraint.contact_nodes[mine[follows]], turning[follows])
            self._turn_tangents(constraint, mine, local, d_normal, force, per_contact, nodal)
            partial.violation[rows] = per_contact[mask]
            partial.force[:] += to_global(nodal)
        return partial

    def _turn_tangents(self, constraint, mine, local, d_normal, force, per_contact, nodal) -> None:
        """A friction contact on a curved obstacle has the tangent frame of its normal n(x - c)
        (:func:`friction_frames`), which moving the obstacle turns: with dn (k, 3) the normal's change, (dt, ds)
        follow (:func:`friction_frame_derivatives`); the tangential rows' violations ``t . (x - x_start)`` change
        by ``dt . (x - x_start)``, ``ds . (x - x_start)`` (x_start the node at the frame's start) and their
        force ``lambda_t t + lambda_s s`` by ``lambda_t dt + lambda_s ds`` (adds to ``per_contact`` (c, 3) and
        ``nodal`` (n_c, 3))."""
        from softsim.mechanics.constraints.contact import friction_frame_derivatives

        turning = constraint.following()[mine] & (np.asarray(constraint.mu)[mine] > 0.0)
        if not turning.any():
            return
        ids = mine[turning]
        start = constraint.frame_start
        if start is None or start.shape != local.shape:
            raise GradientError(f"{constraint.name}: the frame's start positions are not known (begin_frame): "
                                "no gradient through its friction contacts")
        dt, ds = friction_frame_derivatives(constraint.normals_at(local)[ids], d_normal[turning])
        nodes = constraint.contact_nodes[ids]
        motion = local[nodes] - start[nodes] - constraint.slip_origin[ids]
        per_contact[ids, 1] = np.einsum("ij,ij->i", dt, motion)
        per_contact[ids, 2] = np.einsum("ij,ij->i", ds, motion)
        np.add.at(nodal, nodes, force[ids, 1:2] * dt + force[ids, 2:3] * ds)


def _contact_view(constraint, x: np.ndarray):
    """The positions (n_c, 3) a contact model sees through its wrappers (a body's slice in a multi-body scene,
    a collision surface's vertices mapped from the nodes) and the map of nodal forces (n_c, 3) it gives back to
    the model's DOFs (3N,)."""
    inner = constraint.__dict__.get("constraint")
    if inner is None:
        return x, lambda force: np.asarray(force).reshape(-1)
    if "expand" in constraint.__dict__:  # MappedConstraint: [x; W x], forces through E^T
        local, back = _contact_view(inner, constraint.extend(x))
        return local, lambda force: constraint.expand.T @ back(force)
    start, stop = constraint.__dict__["start"], constraint.__dict__["stop"]  # OffsetConstraint

    def place(force):
        full = np.zeros_like(x)
        full[start:stop] = back(force).reshape(-1, 3)
        return full.reshape(-1)

    local, back = _contact_view(inner, x[start:stop])
    return local, place


class CablePoint(Parameter):
    def __init__(self, key: str, value: float, body: int, cable: int, point: int, axis: int) -> None:
        self.key, self.value, self.body, self.cable, self.point, self.axis = key, value, body, cable, point, axis

    def _rows(self, state, shift: float):
        """(J^T lambda (3N,), violation, outputs) of the cable rebuilt with the point moved by ``shift``."""
        from softsim.mechanics.scene_runtime import _cable_kwargs  # the scene's own construction of a cable

        scene = state.scene
        spec = scene.spec.bodies[self.body].cables[self.cable]
        kwargs = _cable_kwargs(spec)
        kwargs["points"] = kwargs["points"].copy()
        kwargs["points"][self.point, self.axis] += shift
        mesh = scene.meshes[self.body]
        cable = scene.model.place(CableConstraint(mesh.points, mesh.tets, name=spec.name, **kwargs), self.body)
        rows = state.rows_of(spec.name)
        force = state.force[rows] if rows is not None else np.zeros(1)
        J = cable.jacobian(state.x)
        cable.store(force, state.x)
        outputs = cable.outputs
        return (np.asarray(J.T @ force).reshape(-1), cable.violation(state.x, state.x, J),
                {f"{spec.name}.{k}": outputs[k] for k in ("displacement", "cableLength")})

    def partial(self, state) -> Partial:
        h = CABLE_POINT_STEP * state.size

        def difference(step):
            plus, minus = self._rows(state, step), self._rows(state, -step)
            return ((plus[0] - minus[0]) / (2 * step), (plus[1] - minus[1]) / (2 * step),
                    {k: (plus[2][k] - minus[2][k]) / (2 * step) for k in plus[2]})

        coarse, fine = difference(h), difference(0.5 * h)
        force = (4.0 * fine[0] - coarse[0]) / 3.0
        violation = (4.0 * fine[1] - coarse[1]) / 3.0
        partial = self.zero(state)
        partial.force[:] = force
        rows = state.rows_of(self.spec_name(state))
        if rows is not None:
            partial.violation[rows] = violation
        partial.outputs = {k: (4.0 * fine[2][k] - coarse[2][k]) / 3.0 for k in fine[2]}
        return partial

    def spec_name(self, state) -> str:
        return state.scene.spec.bodies[self.body].cables[self.cable].name


def default_parameters(spec) -> list[str]:
    """The ``wrt`` keys a sensitivity overview shows for a scene ``spec``: each body's youngModulus and
    poissonRatio (and those its material regions set), its totalMass (or massDensity), the gravity components
    that are not zero, every cable's and cavity's value, each plane obstacle's point along the axis its normal
    points most along, and each sphere's and box's center. In inverse mode (an active ``[solver.inverse]``):
    every goal coordinate of every effector with a goal (the inverse model's sensitivities are to its goals)."""
    if spec.solver.inverse is not None and spec.solver.inverse.active:
        return [f"body.{body.name}.effector.{e.name}.effectorGoal{'' if e.n_points == 1 else f'[{k}]'}.{axis}"
                for body in spec.bodies for e in body.effectors if e.effectorGoal is not None
                for k in range(e.n_points) for axis, used in zip("xyz", e.useDirections) if used]
    keys = []
    for body in spec.bodies:
        base = f"body.{body.name}.material"
        keys += [f"{base}.youngModulus", f"{base}.poissonRatio"]
        for i, region in enumerate(body.material.regions):
            keys += [f"{base}.region[{i}].{name}" for name in ("youngModulus", "poissonRatio")
                     if getattr(region, name) is not None]
        if body.material.totalMass is not None:
            keys.append(f"{base}.totalMass")
        elif body.material.massDensity is not None:
            keys.append(f"{base}.massDensity")
    keys += [f"scene.gravity.{axis}" for axis, value in zip("xyz", spec.scene.gravity) if value != 0.0]
    for body in spec.bodies:
        keys += [f"body.{body.name}.cable.{c.name}.value" for c in body.cables]
        keys += [f"body.{body.name}.cavity.{c.name}.value" for c in body.cavities]
    for obstacle in spec.obstacles:
        if obstacle.type == "plane":
            keys.append(f"obstacle.{obstacle.name}.point.{'xyz'[int(np.argmax(np.abs(obstacle.normal)))]}")
        elif obstacle.type in ("sphere", "box"):
            keys += [f"obstacle.{obstacle.name}.center.{axis}" for axis in "xyz"]
    return keys
