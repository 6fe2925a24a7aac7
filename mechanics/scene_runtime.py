"""A loaded scene: the validated spec (what a save writes), the running simulation built from it, and live
parameter edits by the scene file's key paths (``softsim run --set``, the GUI panels, the Python API).

>>> from softsim.mechanics import Scene
>>> scene = Scene.load("resources/scenes/finger.toml")            # doctest: +SKIP
>>> scene.set("body.finger.cable.cable.value", 5.0)                  # doctest: +SKIP
>>> report = scene.step()                                            # doctest: +SKIP
>>> scene.outputs()["cable.displacement"]                            # doctest: +SKIP
5.0
"""

from __future__ import annotations

import copy
import functools
import logging
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from softsim import meshes
from softsim.mechanics.constraint_solvers import make_constraint_solver, solver_keys
from softsim.mechanics.constraints import (
    OBSTACLE_CLASSES,
    BilateralAttachment,
    BodyContactConstraint,
    CableConstraint,
    CenterEffector,
    ContactConstraint,
    ContactSurface,
    DragConstraint,
    MappedConstraint,
    PositionEffector,
    SurfacePressureConstraint,
    UnilateralPlaneConstraint,
    obstacle_shift,
)
from softsim.mechanics.constraints.rigid_group import RigidGroupConstraint
from softsim.mechanics.controllers import ControllerError, make_controllers, script_paths
from softsim.mechanics.dynamics import DynamicSolver
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.inverse.frame import InverseSettings
from softsim.mechanics.inverse.problem import InverseParameters
from softsim.mechanics.linear_solvers import make_linear_solver
from softsim.mechanics.loads import Gravity, NodalForce, PressureLoad, lumped_masses
from softsim.mechanics.mapping import BarycentricMapping
from softsim.mechanics.mass import TetMass
from softsim.mechanics.materials import lame
from softsim.mechanics.model import Body, Model
from softsim.mechanics.newton import NEWTON_KEYS, StaticNewtonSolver
from softsim.mechanics.rigid_body import RigidContact, make_rigid_body
from softsim.mechanics.rigid_contact import RigidShapeContact
from softsim.mechanics.rigid_frames import apply_motion, best_rigid_motion, held_positions
from softsim.mechanics.scene import (
    SceneError,
    SceneSpec,
    get_value,
    load_scene,
    parse_data,
    save_scene,
    set_value,
    undo_point,
)
from softsim.mechanics.scene.edit import resolve
from softsim.mechanics.scene.schema import (
    OBSTACLE_KEYS,
    CableSpec,
    CavitySpec,
    CenterEffectorSpec,
    ConstraintSpec,
    ControllerSpec,
    DragSpec,
    DynamicSpec,
    EffectorSpec,
    FixedSpec,
    InverseSpec,
    LinearSpec,
    MaterialRegionSpec,
    MaterialSpec,
    NewtonSpec,
    SceneSettings,
    SolverSpec,
    StackedMaterialSpec,
    declarations,
    declared_values,
)
from softsim.mechanics.scene_checks import check_scene
from softsim.mechanics.servo_inverse import Servo, ServoInverse
from softsim.mechanics.simulation import Simulation

logger = logging.getLogger(__name__)

#: key-path prefixes whose change is applied to the running solvers without a rebuild
_LIVE_SOLVER_KEYS = ("solver.newton.", "solver.constraint.", "solver.linear.")


def _error(spec: SceneSpec, path: str, message: str) -> SceneError:
    return SceneError([f"{Path(spec.source).name}: {path}: {message}"])


def _rotation_matrix(degrees) -> np.ndarray:
    """Rotation about x, then y, then z (extrinsic), angles in degrees."""
    rx, ry, rz = np.radians(degrees)
    cx, sx, cy, sy, cz, sz = np.cos(rx), np.sin(rx), np.cos(ry), np.sin(ry), np.cos(rz), np.sin(rz)
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def load_body_mesh(body) -> meshes.TetMesh:
    """The body's mesh with the scene's scale, rotation and translation applied."""
    mesh = meshes.load(body.mesh_path, scale=body.scale)
    if any(body.rotation):
        mesh.points = mesh.points @ _rotation_matrix(body.rotation).T
    mesh.points = mesh.points + np.asarray(body.translation, dtype=np.float64)
    return mesh


def element_materials(spec, body, mesh) -> tuple[str, np.ndarray, np.ndarray]:
    """(model, young (m,), poisson (m,)) with the material regions applied in file order (later wins), then the
    stacked fields added (:func:`stacked_elements`)."""
    material = body.material
    young = np.full(mesh.n_tets, material.youngModulus)
    poisson = np.full(mesh.n_tets, material.poissonRatio)
    for i, region in enumerate(material.regions):
        path = f"body.{body.name}.material.region[{i}]"
        if region.model is not None and region.model != material.model:
            raise _error(spec, f"{path}.model", f"{region.model!r} differs from the body's model "
                         f"{material.model!r}; one body has one material model (regions may change "
                         "youngModulus and poissonRatio)")
        tets = meshes.tets_in_box(mesh.points, mesh.tets, region.box)
        if tets.size == 0:
            logger.warning("%s: the box selects no tetrahedron", path)
        if region.youngModulus is not None:
            young[tets] = region.youngModulus
        if region.poissonRatio is not None:
            poisson[tets] = region.poissonRatio
    if material.stacked:
        young, poisson = _add_stacked(spec, body, mesh, young, poisson)
    return material.model, young, poisson


def stacked_elements(spec, body, mesh, index: int) -> np.ndarray:
    """The element ids of ``body.material.stacked[index]``: its ``tetrahedra``, or the elements in its ``box``
    (bounds included), as SOFA BoxROI's tetrahedraInROI: with ``strict`` those whose four nodes lie in it, else
    those whose centre does."""
    stack = body.material.stacked[index]
    path = f"body.{body.name}.material.stacked[{index}]"
    if stack.tetrahedra is not None:
        tets = np.asarray(stack.tetrahedra, dtype=np.int64)
        if tets.max() >= mesh.n_tets:
            raise _error(spec, f"{path}.tetrahedra", f"element ids must lie in 0..{mesh.n_tets - 1} (the mesh has "
                         f"{mesh.n_tets} tetrahedra), got {int(tets.max())}")
        return tets
    if stack.strict:
        inside = np.zeros(mesh.n_points, dtype=bool)
        inside[meshes.in_box(mesh.points, stack.box)] = True
        tets = np.flatnonzero(inside[mesh.tets].all(axis=1)).astype(np.int64)
    else:
        tets = meshes.tets_in_box(mesh.points, mesh.tets, stack.box)
    if tets.size == 0:
        logger.warning("%s: the box holds no whole tetrahedron", path)
    return tets


def _add_stacked(spec, body, mesh, young: np.ndarray, poisson: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(young, poisson)`` per element of the body's field plus its stacked fields.

    Two force fields of the same model and rotations on one element add their forces, and the force of every
    model but stable_neohookean is linear in the Lame parameters (mu, lam) at fixed rotations: their sum is one
    field with mu = mu1 + mu2 and lam = lam1 + lam2, which is converted back to (E, nu). That is exact, forces
    and tangents alike, so the element keeps one entry (its stress and colour fields are the sum's)."""
    material = body.material
    mu, lam = lame(young, poisson)
    mu, lam = np.array(mu, dtype=np.float64), np.array(lam, dtype=np.float64)
    for i, stack in enumerate(material.stacked):
        path = f"body.{body.name}.material.stacked[{i}]"
        if stack.model is not None and stack.model != material.model:
            raise _error(spec, f"{path}.model", f"{stack.model!r} differs from the body's model {material.model!r}; "
                         "a stacked field adds to the body's own and must use its model")
        if material.model == "stable_neohookean":
            raise _error(spec, path, "stacked fields are not available with model stable_neohookean (its energy is "
                         "not linear in the Lame parameters, so two fields do not add up to one); use another model")
        rotation = stack.rotation_method
        if material.model == "corotational" and rotation is not None and rotation != material.rotation_method:
            raise _error(spec, f"{path}.rotation_method", f"{rotation!r} differs from the body's "
                         f"{material.rotation_method!r}; a stacked field must use the body's rotations")
        tets = stacked_elements(spec, body, mesh, i)
        mu_s, lam_s = lame(stack.youngModulus, stack.poissonRatio)
        np.add.at(mu, tets, mu_s)
        np.add.at(lam, tets, lam_s)
    return mu * (3.0 * lam + 2.0 * mu) / (lam + mu), lam / (2.0 * (lam + mu))


def servo_driven(spec) -> bool:
    """Whether the scene's inverse model drives actuated servos (mechanics.servo_inverse): its frames are then
    forward frames at the angles it chooses, solved like any static forward frame."""
    inverse = spec.solver.inverse
    return bool(inverse is not None and inverse.active
                and any(region.actuated for body in spec.bodies for region in body.fixed))


def _corotational_tangent_kwargs(material, spec) -> dict:
    """TetElasticity's ``corotational_tangent`` and ``spd_projection`` for ``material.corotationalTangent``
    ("exact_spd" is the exact tangent with its negative eigenvalues clamped; the projection is switched on for
    the corotational model only, the scene has no key for the hyperelastic models' projection).

    The exact tangent serves the static forward frame with the direct solver, where the constrained equilibrium
    needs it to converge quadratically (the consistent Jacobian of SOFA's rotations ``large``, ``polar`` and
    ``svd`` is not symmetric: it is factorized as a general matrix), and with the asynchronous preconditioner
    (``"async"``), which solves a matrix that is not symmetric positive definite by GMRES (Newton-Krylov). The
    conjugate gradient solver (``[solver.linear] type = "cg"``) needs a symmetric positive definite matrix (so
    does the asynchronous preconditioner in inverse frames, kept on SOFA's tangent there), the implicit time
    step of dynamic mode takes one Newton iteration per step with the mass on the diagonal, and SoftRobots'
    single QP (the inverse model with ``correction = "linear"``) is built on SOFA's tangent: with them every
    rotation keeps SOFA's positive semi-definite R K0 R^T. The inverse frames that end at the constrained
    equilibrium take the exact tangent of ``polarF`` and ``svdF``, which is symmetric: their constrained Newton
    steps then converge quadratically, and the QP's W is the effectors' true sensitivity to the actuators
    (issue 28: trunk_inverse's dragged goal took 16 linearisations per frame with SOFA's tangent, about 9 with the
    exact one). The QP and its sensitivities (mechanics.sensitivity.inverse) assume a symmetric W, so SOFA's
    rotations keep SOFA's tangent in inverse frames. "exact_spd" with SOFA's rotations is SOFA's tangent too
    (it is semi-definite already)."""
    value = material.corotationalTangent
    sofa_rotation = material.rotation_method in ("large", "polar", "svd")
    inverse = spec.solver.inverse is not None and spec.solver.inverse.active and not servo_driven(spec)
    symmetric_qp = inverse and (spec.solver.newton.correction == "linear" or sofa_rotation)
    linear = spec.solver.linear.type
    symmetric_needed = (linear not in ("direct", "async") or (linear == "async" and inverse)
                        or spec.scene.mode != "static" or symmetric_qp)
    if value == "sofa" or symmetric_needed or (sofa_rotation and value == "exact_spd"):
        return {"corotational_tangent": "sofa", "spd_projection": False}
    return {"corotational_tangent": "exact",
            "spd_projection": value == "exact_spd" and material.model == "corotational"}


def _linear_solver(linear):
    """The linear solver of ``[solver.linear]`` with the keys its type uses."""
    keys = {d.key for d in declarations(LinearSpec) if d.when is not None and linear.type in d.when.values}
    return make_linear_solver(linear.type, **declared_values(linear, keys))


def _newton_parameters(newton) -> dict:
    return declared_values(newton, NEWTON_KEYS)


def _constraint_parameters(constraint) -> dict:
    return declared_values(constraint, solver_keys(constraint.type))


def _dynamic_parameters(dynamic) -> dict:
    return declared_values(dynamic)


def inverse_settings(inverse: InverseSpec | None) -> InverseSettings | None:
    """The running inverse settings of a ``[solver.inverse]`` table (None when the scene has none)."""
    if inverse is None:
        return None
    qp = InverseParameters(epsilon=inverse.epsilon, actuatorsOnly=inverse.actuatorsOnly,
                           maxIterations=inverse.maxIterations, tolerance=inverse.tolerance,
                           allowSliding=inverse.allowSliding, responseFriction=inverse.responseFriction,
                           qpSolver=inverse.qpSolver)
    return InverseSettings(active=inverse.active, qp=qp, linearizations=inverse.linearizations,
                           linearization_tolerance=inverse.linearizationTolerance)


def make_constraint_solver_from(constraint):
    return make_constraint_solver(constraint.type, **_constraint_parameters(constraint))


def _acting_on(points, indices, key: str) -> dict:
    """What a cable or an effector acts on: ``{key: points (k, 3)}`` when the scene gives positions (mapped
    points), else ``{"indices": indices (k,)}`` (the body's nodes)."""
    if points is not None:
        return {key: np.asarray(points, dtype=np.float64)}
    return {"indices": np.asarray(indices, dtype=np.int64)}


def _cable_kwargs(cable) -> dict:
    kwargs = declared_values(cable, CableConstraint.PARAMETERS - {"pullPoint"} | {"hasPullPoint"})
    kwargs.update(_acting_on(cable.points, cable.indices, "points"))
    if cable.pullPoint is not None:
        kwargs["pullPoint"] = np.asarray(cable.pullPoint, dtype=np.float64)
    return kwargs


def _make_cavity(spec, body, cavity, mesh):
    kwargs = declared_values(cavity, SurfacePressureConstraint.PARAMETERS | {"flipNormal"})
    path = f"body.{body.name}.cavity.{cavity.name}"
    if cavity.set is not None:
        if cavity.set not in mesh.triangle_sets:
            have = ", ".join(sorted(mesh.triangle_sets)) or "none"
            raise _error(spec, f"{path}.set", f"the mesh has no triangle set {cavity.set!r} (has: {have})")
        kwargs["triangles"] = mesh.triangle_sets[cavity.set]
        defects = meshes.surface.closure_defects(mesh.points, kwargs["triangles"])
        key, where = f"{path}.set", f"triangle set {cavity.set!r} of {Path(mesh.source).name}"
    else:
        surface = meshes.load_surface(cavity.surface_path, scale=body.scale)
        defects = meshes.surface.closure_defects(surface.points, surface.triangles)
        key, where = f"{path}.surface", Path(cavity.surface_path).name
        points = surface.points
        if any(body.rotation):
            points = points @ _rotation_matrix(body.rotation).T
        kwargs["surface_points"] = points + np.asarray(body.translation)
        kwargs["surface_triangles"] = surface.triangles
    if defects:  # the enclosed volume and its gradient (the pressure forces) need a closed surface
        raise _error(spec, key, f"{where}: the cavity surface is not closed: {defects}; a cavity "
                     "must be closed (every edge shared by two triangles of opposite directions): close it in the "
                     "modelling tool and export it again")
    return SurfacePressureConstraint(mesh.points, mesh.tets, name=cavity.name, **kwargs)


def _make_effector(body, effector, mesh):
    kwargs = {"useDirections": effector.useDirections, "weight": effector.weight,
              "limitShiftToTarget": effector.limitShiftToTarget, "maxShiftToTarget": effector.maxShiftToTarget,
              **_acting_on(effector.position, effector.indices, "position")}
    if effector.effectorGoal is not None:
        kwargs["effectorGoal"] = np.asarray(effector.effectorGoal, dtype=np.float64)
    return PositionEffector(mesh.points, mesh.tets, name=effector.name, **kwargs)


#: alarm distance of the scene's contacts, as a fraction of the body's bounding-box diagonal
ALARM_FRACTION = 0.05


def _make_obstacle(obstacle):
    return OBSTACLE_CLASSES[obstacle.type](**{key: getattr(obstacle, key) for key in OBSTACLE_KEYS[obstacle.type]})


class Scene:
    """A scene file turned into a running :class:`Simulation`, with edits by key path.

    ``spec`` always holds the values in effect (a save writes them); ``simulation`` runs the frames.
    """

    def __init__(self, spec: SceneSpec, *, allow_scripts: bool = False) -> None:
        self.spec = spec
        self.warnings: list[str] = []
        self.drag: DragConstraint | None = None
        self._edit_log: list | None = None  # the edits a controller made in the call under way
        self._build()
        self.warnings[:0] = dict.fromkeys(f"{Path(m.source).name}: {p}" for m in self.meshes for p in m.problems)
        self.scripts_allowed = False
        self.controllers: list = []
        self.allow_scripts(allow_scripts)

    @classmethod
    def load(cls, path: str | Path, *, allow_scripts: bool = False) -> Scene:
        """Load and build a scene; raises SceneError, MeshError or ParameterError with a readable message.
        ``allow_scripts``: run the scene's script controllers (they are programs: only for trusted scenes)."""
        return cls(load_scene(path), allow_scripts=allow_scripts)

    # -- controllers -----------------------------------------------------------------------------------
    @property
    def scripts(self) -> list[Path]:
        """The script files of the scene's ``[[controller]]`` tables (run only when :attr:`scripts_allowed`)."""
        return script_paths(self.spec)

    def allow_scripts(self, allowed: bool = True) -> None:
        """Run the scene's script controllers from the next frame on (or not); keyframed controllers always run.
        Raises ControllerError naming the file and line when a script cannot be loaded (then no script runs)."""
        self.scripts_allowed = bool(allowed)
        self.warnings = [w for w in self.warnings if not w.startswith("controller ")]
        try:
            self.controllers = make_controllers(self.spec, allow_scripts=self.scripts_allowed)
        except ControllerError:
            self.scripts_allowed = False
            self.controllers = make_controllers(self.spec, allow_scripts=False)
            raise
        if not self.scripts_allowed:
            self.warnings += [f"controller {c.name}: the script {c.script} is not run (scripts run only when "
                              "allowed: softsim run --allow-scripts, or Yes to the window's question)"
                              for c in self.spec.controllers if c.script is not None]

    def frame_time(self) -> float:
        """The time at the end of the next frame: the simulation's time + dt in dynamic mode, (frame + 1) x dt in
        static mode (moving obstacles and controllers use it)."""
        simulation, dt = self.simulation, self.spec.scene.dt
        return simulation.time + dt if simulation.mode == "dynamic" else (simulation.frame + 1) * dt

    def _run_controllers(self, hook: str, argument) -> None:
        """Call ``hook`` of every controller; when one raises, the values the controllers set in this call are
        put back (the scene stays as it was) and the ControllerError goes on."""
        if not self.controllers:
            return
        self._edit_log = []
        try:
            for controller in self.controllers:
                getattr(controller, hook)(self, argument)
        except ControllerError:
            log, self._edit_log = self._edit_log, None
            for path, old in reversed(log):
                try:
                    self.set(path, old)
                except (ParameterError, ValueError):  # pragma: no cover - the value was accepted before
                    logger.exception("cannot restore %s", path)
            raise
        finally:
            self._edit_log = None

    def key_pressed(self, key: str) -> None:
        """Pass a key press (its text, e.g. ``"+"``, ``"Up"``) to the scripts' ``on_key``; ControllerError when a
        script raises (its changes in this call are undone)."""
        self._run_controllers("on_key", key)

    @property
    def path(self) -> Path:
        return Path(self.spec.source)

    # -- building --------------------------------------------------------------------------------------
    @property
    def elasticities(self) -> list:
        return [body.elasticity for body in self.model.bodies]

    def _build(self) -> None:
        """The model of N bodies (each body's mesh, material, fixed nodes, loads and actuators; one body is N =
        1), the attachments and contacts over the concatenated positions, the solvers and the Simulation."""
        spec = self.spec
        if not spec.bodies:
            raise _error(spec, "body", "the scene has no [[body]]; add at least one")
        self.meshes = [load_body_mesh(body) for body in spec.bodies]
        bodies, self.gravities, per_body, checked = [], [], [], []
        self._held: list = []  # (fixed region spec, its local node ids, body index)
        for index, (body, mesh) in enumerate(zip(spec.bodies, self.meshes)):
            model_name, young, poisson = element_materials(spec, body, mesh)
            elasticity = TetElasticity(mesh.points, mesh.tets, model=model_name, young=young, poisson=poisson,
                                       rotation_method=body.material.rotation_method,
                                       **_corotational_tangent_kwargs(body.material, spec))
            fixed = self._fixed_nodes(body, mesh, index)
            gravity = Gravity(self._masses(body, mesh), spec.scene.gravity)
            self.gravities.append(gravity)
            material = body.material
            mass = None if material.totalMass is None and material.massDensity is None else TetMass(
                mesh.points, mesh.tets, massDensity=material.massDensity, totalMass=material.totalMass, lumped=True)
            bodies.append(Body(body.name, elasticity, mass, fixed_nodes=fixed,
                               loads=[gravity, *self._loads(body, mesh)]))
            constraints = [CableConstraint(mesh.points, mesh.tets, name=c.name, **_cable_kwargs(c))
                           for c in body.cables]
            constraints += [_make_cavity(spec, body, c, mesh) for c in body.cavities]
            constraints += [_make_effector(body, e, mesh) for e in body.effectors]
            constraints += [self._unilateral_plane(body, plane, mesh) for plane in body.unilateralPlanes]
            constraints += [self._center_effector(body, effector, mesh) for effector in body.centerEffectors]
            constraints += [self._rigid_group(body, i, group, mesh, fixed) for i, group in enumerate(body.rigidGroups)]
            per_body.append(constraints)
            # contact candidates: the free surface nodes (a fixed node cannot move, its contact row would be zero)
            checked.append((body, mesh.points, fixed, constraints, np.setdiff1d(mesh.surface_triangles(), fixed)))
        self.model = model = Model(bodies)
        self.node_offsets = offsets = model.node_offsets
        self.mesh = self.meshes[0] if len(self.meshes) == 1 else meshes.TetMesh(
            points=model.rest_positions, tets=np.concatenate([m.tets + o for m, o in zip(self.meshes, offsets)]),
            source=spec.source)
        constraints = [model.place(c, b) for b, body_constraints in enumerate(per_body) for c in body_constraints]
        attachments = self._attachments(offsets)
        constraints += attachments
        self._check_grounded()
        self.obstacles = obstacles = [_make_obstacle(o) for o in spec.obstacles]
        self.warnings += check_scene(spec, checked, obstacles, attachments, model.rest_positions, model.fixed_nodes)
        contact_surfaces, weights = self._contact_surfaces(checked, offsets, model.n_nodes)
        n_points = model.n_nodes + weights.shape[0]  # the model's nodes, then the collision meshes' vertices

        def mapped(constraint):
            return constraint if weights.shape[0] == 0 else MappedConstraint(constraint, weights, model.n_nodes)

        if spec.obstacles:
            surface_nodes = np.concatenate([moving for _triangles, moving in contact_surfaces])
            contact_distance = np.array([o.contactDistance for o in spec.obstacles])
            diagonal = min(float(np.linalg.norm(m.bbox[3:] - m.bbox[:3])) for m in self.meshes)
            constraints.append(mapped(ContactConstraint(
                surface_nodes, obstacles, contactDistance=contact_distance,
                alarmDistance=np.maximum(2.0 * contact_distance, ALARM_FRACTION * diagonal),
                friction=[o.friction for o in spec.obstacles], n_nodes=n_points, name="contact")))
        if spec.collision is not None:
            constraints.append(mapped(self._body_contacts(contact_surfaces, n_points)))
        newton = StaticNewtonSolver(linear_solver=_linear_solver(spec.solver.linear),
                                    **_newton_parameters(spec.solver.newton))
        constraint_solver = make_constraint_solver_from(spec.solver.constraint)
        dynamic_solver = None if model.mass_matrix is None else DynamicSolver(
            model, constraint_solver=constraint_solver, dt=spec.scene.dt, **_dynamic_parameters(spec.solver.dynamic))
        constraints += self._rigid_bodies(dynamic_solver, checked, offsets, model.n_nodes)
        name = spec.bodies[0].name if len(spec.bodies) == 1 else spec.scene.name
        self.servo_inverse = self._servo_inverse()
        self.simulation = Simulation(problem=model.static_problem(), newton=newton,
                                     constraint_solver=constraint_solver, constraints=constraints,
                                     correction=spec.solver.newton.correction, name=name,
                                     dynamic_solver=dynamic_solver, mode=spec.scene.mode,
                                     inverse=self._simulation_inverse())
        turning = [(body.name, i) for body in spec.bodies for i, region in enumerate(body.fixed)
                   if region.actuated or region.angle != 0.0 or tuple(region.axis) != (1.0, 0.0, 0.0)
                   or any(region.center)]
        if turning:
            self.simulation.output_sources.append(functools.partial(self._servo_angles, turning))
        self._hold_fixed()

    def _servo_angles(self, turning: list[tuple[str, int]]) -> dict[str, float]:
        """``BODY.fixed[i].angle`` (degrees) of the turning fixed regions ``(body name, region index)``: those
        actuated (the inverse frames choose the angle) or with an angle, axis or center of their own when the
        scene was built (a servo's frame: Tripod's arms). The set is fixed per build, so the columns are."""
        bodies = {body.name: body for body in self.spec.bodies}
        return {f"{name}.fixed[{i}].angle": float(bodies[name].fixed[i].angle) for name, i in turning}

    def _servo_inverse(self) -> ServoInverse | None:
        """The inverse frames of actuated servos (``[[body.fixed]] actuated = true`` with an active
        ``[solver.inverse]``: mechanics.servo_inverse), or None. Refused beside inverse cables or cavities."""
        spec, inverse = self.spec, self.spec.solver.inverse
        if inverse is None or not inverse.active:
            return None
        servos, regions = [], []
        for body in spec.bodies:
            for i, region in enumerate(body.fixed):
                if region.actuated:
                    servos.append(Servo(f"body.{body.name}.fixed[{i}]", region.minAngle, region.maxAngle,
                                        region.maxAngleVariation))
                    regions.append(region)
        if not servos:
            return None
        if any(body.cables or body.cavities for body in spec.bodies):
            raise _error(spec, servos[0].path + ".actuated", "the inverse model solves either actuated servos or "
                         "cables and cavities, not both in one scene")
        return ServoInverse(servos, regions, self._hold_fixed, inverse.epsilon)

    def _simulation_inverse(self):
        """The Simulation's own inverse settings: none when the servos' inverse frames drive it."""
        return None if self.servo_inverse is not None else inverse_settings(self.spec.solver.inverse)

    def _rigid_bodies(self, dynamic_solver, checked, offsets, n_nodes: int) -> list:
        """The ``[[rigid]]`` bodies (given to the dynamic solver), one contact model each over every body's free
        surface nodes (mechanics.rigid_body), and their contacts with the obstacles and each other."""
        spec = self.spec
        self.rigids = [make_rigid_body(r, spec.scene.gravity) for r in spec.rigids]
        if not self.rigids:
            return []
        if spec.scene.mode != "dynamic":
            raise _error(spec, "scene.mode", "free rigid bodies ([[rigid]]) move only in dynamic mode (a static frame "
                                             "has no equilibrium for a free body): set scene.mode = \"dynamic\"")
        if dynamic_solver is None:
            raise _error(spec, "rigid", "free rigid bodies move with the soft bodies in dynamic mode, which needs "
                                        "every body's mass: give each [body.material] a totalMass or massDensity")
        dynamic_solver.rigid_bodies = self.rigids
        nodes = np.concatenate([surface + offsets[b] for b, (*_, surface) in enumerate(checked)]).astype(np.int64)
        contacts, alarms = [], []
        for rigid, rigid_spec in zip(self.rigids, spec.rigids):
            size = (min(rigid_spec.halfExtents) if rigid_spec.shape == "box" else rigid_spec.radius)
            alarm = rigid_spec.alarmDistance
            if alarm is None:
                alarm = max(2.0 * rigid_spec.contactDistance, 0.2 * size)
            contacts.append(RigidContact(nodes, rigid, n_nodes=n_nodes, contactDistance=rigid_spec.contactDistance,
                                         alarmDistance=alarm, name=f"{rigid.name}_contact"))
            alarms.append(alarm)
        return contacts + self._rigid_shape_contacts(alarms)

    def _rigid_shape_contacts(self, alarms: list[float]) -> list:
        """A free rigid body against each obstacle (its friction; the larger contactDistance of the two) and each
        pair of rigid bodies (the smaller friction, the larger contactDistance), named ``A_B`` (mechanics.
        rigid_contact); ``alarms`` are the rigid bodies' alarm distances. A body that starts inside the other
        shape is named in the warnings."""
        spec, contacts = self.spec, []
        for i, (rigid, rigid_spec) in enumerate(zip(self.rigids, spec.rigids)):
            for obstacle, obstacle_spec in zip(self.obstacles, spec.obstacles):
                distance = max(rigid_spec.contactDistance, obstacle_spec.contactDistance)
                contacts.append((obstacle_spec.name, RigidShapeContact(
                    rigid, obstacle, contactDistance=distance, alarmDistance=max(alarms[i], 2.0 * distance),
                    friction=obstacle_spec.friction, name=f"{rigid.name}_{obstacle_spec.name}")))
            for j in range(i + 1, len(self.rigids)):
                other = spec.rigids[j]
                distance = max(rigid_spec.contactDistance, other.contactDistance)
                contacts.append((other.name, RigidShapeContact(
                    rigid, self.rigids[j], contactDistance=distance,
                    alarmDistance=max(alarms[i], alarms[j], 2.0 * distance),
                    friction=min(rigid_spec.friction, other.friction), name=f"{rigid.name}_{other.name}")))
        for other, contact in contacts:  # at the poses the file gives
            contact.update(np.zeros((0, 3)))
            depth = -(contact.gaps.min() + contact.contactDistance) if contact.n_contacts else 0.0
            if depth > 0.0:
                self.warnings.append(f"rigid.{contact.body.name}: starts {depth:.3g} inside {other} (the contact "
                                     f"pushes it out in the first frames)")
        return [contact for _, contact in contacts]

    def _unilateral_plane(self, body, plane, mesh) -> UnilateralPlaneConstraint:
        path = f"body.{body.name}.unilateralPlane.{plane.name}"
        if plane.points is None and max(plane.indices) >= mesh.n_points:
            raise _error(self.spec, f"{path}.indices", f"node ids must lie in 0..{mesh.n_points - 1}, got "
                         f"{max(plane.indices)}")
        try:
            return UnilateralPlaneConstraint(mesh.points, mesh.tets, indices=np.asarray(plane.indices),
                                             points=None if plane.points is None else np.asarray(plane.points),
                                             flipNormal=plane.flipNormal, name=plane.name)
        except ParameterError as error:  # a point outside the body
            raise _error(self.spec, f"{path}.points", str(error)) from None

    def _rigid_group(self, body, index: int, group, mesh, fixed: np.ndarray) -> RigidGroupConstraint:
        """``[[body.rigidGroup]]``: its nodes move as one rigid piece (mechanics.constraints.rigid_group), named
        ``BODY_rigidGroupI``; none of them may be a fixed node (``fixed``, local ids: a fixed region already holds
        its nodes, and rows on them alone would be empty)."""
        path = f"body.{body.name}.rigidGroup[{index}]"
        try:
            nodes = meshes.select_nodes(mesh, group.to_selector())
            held = np.intersect1d(nodes, fixed)
            if held.size:
                raise ParameterError(f"{held.size} of its {np.unique(nodes).size} nodes are fixed nodes (body."
                                     f"{body.name}.fixed); a fixed region already holds its nodes: select free nodes "
                                     f"only, or fix the whole piece")
            return RigidGroupConstraint(mesh.points, nodes, name=f"{body.name}_rigidGroup{index}")
        except (meshes.MeshError, ParameterError) as error:
            raise _error(self.spec, path, str(error)) from None

    def _center_effector(self, body, effector, mesh) -> CenterEffector:
        path = f"body.{body.name}.centerEffector.{effector.name}"
        if effector.indices is not None and max(effector.indices) >= mesh.n_points:
            raise _error(self.spec, f"{path}.indices", f"node ids must lie in 0..{mesh.n_points - 1}, got "
                         f"{max(effector.indices)}")
        try:
            return CenterEffector(mesh.points, indices=effector.indices, effectorGoal=effector.effectorGoal,
                                  axis=effector.axis, weight=effector.weight, point=effector.point,
                                  limitShiftToTarget=effector.limitShiftToTarget,
                                  maxShiftToTarget=effector.maxShiftToTarget, rotationAxis=effector.rotationAxis,
                                  goalRotation=effector.goalRotation, name=effector.name)
        except ParameterError as error:  # a point off the nodes' affine hull
            raise _error(self.spec, f"{path}.point", str(error)) from None

    def _contact_surfaces(self, checked, offsets, n_nodes: int) -> tuple[list, sp.csr_matrix]:
        """Each body's contact surface as ``(triangles (t, 3), moving points (p,))`` over the extended points (the
        model's nodes, then every collision mesh's vertices), and the weights ``(k, n_nodes)`` that map the
        vertices of the ``body.collisionMesh`` surfaces into the tetrahedra (k = 0 without one). A body without
        a collision mesh touches with its mesh's surface and free surface nodes; the vertices of a collision
        mesh that only fixed nodes move are left out (their rows would be zero)."""
        surfaces, rows, cols, values = [], [], [], []
        count = 0
        for index, (body, mesh) in enumerate(zip(self.spec.bodies, self.meshes)):
            offset = int(offsets[index])
            free_surface, fixed = checked[index][4], checked[index][2]
            if body.collisionMesh is None:
                surfaces.append((mesh.surface_triangles() + offset, free_surface + offset))
                continue
            path = f"body.{body.name}.collisionMesh"
            try:
                surface = meshes.load_surface(body.collisionMesh_path, scale=body.scale)
                points = surface.points @ _rotation_matrix(body.rotation).T if any(body.rotation) else surface.points
                # a vertex off the volume keeps its coordinates in its nearest tetrahedron (SOFA's mapping):
                # the surface starts where the file puts it
                mapping = BarycentricMapping(mesh.points, mesh.tets, points + np.asarray(body.translation),
                                             extrapolate=True)
            except (meshes.MeshError, ParameterError) as error:
                raise _error(self.spec, path, f"{Path(body.collisionMesh_path).name}: {error}") from None
            k = mapping.n_points
            moved = np.ones(mesh.n_points, dtype=bool)
            moved[fixed] = False
            moving = np.flatnonzero((moved[mapping.node_ids] & (np.abs(mapping.weights) > 1e-12)).any(axis=1))
            first = n_nodes + count
            surfaces.append((surface.triangles.astype(np.int64) + first, moving.astype(np.int64) + first))
            rows.append(np.repeat(np.arange(count, count + k), 4))
            cols.append((mapping.node_ids + offset).reshape(-1))
            values.append(mapping.weights.reshape(-1))
            count += k
        weights = sp.csr_matrix((np.concatenate(values) if values else np.zeros(0),
                                 (np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64),
                                  np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64))),
                                shape=(count, n_nodes))
        return surfaces, weights

    def _body_contacts(self, contact_surfaces, n_nodes: int) -> BodyContactConstraint:
        """The ``[collision]`` contacts: each colliding body's outward surface and moving surface points
        (:meth:`_contact_surfaces`), every pair of them that shares no ``collisionGroup`` number (SOFA's
        collision groups) and each with itself with selfCollision, the pairs' friction."""
        spec, collision = self.spec, self.spec.collision
        names = [body.name for body in spec.bodies]
        chosen = [names.index(name) for name in collision.bodies] if collision.bodies else list(range(len(names)))
        surfaces = [ContactSurface(names[index], *contact_surfaces[index]) for index in chosen]
        friction = {frozenset((p.bodyA, p.bodyB)): p.friction for p in collision.pairs}
        groups = [set(body.collisionGroup or ()) for body in spec.bodies]
        pairs = [(i, j, friction.get(frozenset((names[a], names[b])), collision.friction))
                 for i, a in enumerate(chosen) for j, b in enumerate(chosen)
                 if (i < j and not groups[a] & groups[b]) or (i == j and collision.selfCollision)]
        diagonal = min(float(np.linalg.norm(m.bbox[3:] - m.bbox[:3])) for m in self.meshes)
        alarm = collision.alarmDistance
        if alarm is None:
            alarm = max(2.0 * collision.contactDistance, ALARM_FRACTION * diagonal)
        if alarm < collision.contactDistance:
            raise _error(spec, "collision.alarmDistance",
                         f"{alarm:g} is below contactDistance {collision.contactDistance:g}")
        return BodyContactConstraint(surfaces, pairs, contactDistance=collision.contactDistance,
                                     alarmDistance=alarm, n_nodes=n_nodes, name="collision")

    def _attachments(self, offsets) -> list:
        """One BilateralAttachment per ``[[attachment]]`` over the concatenated DOFs (rest offsets kept)."""
        spec = self.spec
        names = {body.name: i for i, body in enumerate(spec.bodies)}
        taken = {a.name for body in spec.bodies for a in (*body.cables, *body.cavities, *body.effectors,
                                                          *body.unilateralPlanes, *body.centerEffectors)}
        n_dofs = 3 * int(offsets[-1])
        result = []
        for attachment in spec.attachments:
            path = f"attachment.{attachment.name}"
            if attachment.name in taken:
                raise _error(spec, f"{path}.name", "names must be unique among actuators, effectors and "
                             "attachments (they prefix the output columns)")
            taken.add(attachment.name)
            for key in ("bodyA", "bodyB"):
                if getattr(attachment, key) not in names:
                    raise _error(spec, f"{path}.{key}", f"no body named {getattr(attachment, key)!r} "
                                 f"(bodies: {', '.join(names)})")
            a, b = names[attachment.bodyA], names[attachment.bodyB]
            if a == b:
                raise _error(spec, f"{path}.bodyB", "must differ from bodyA (an attachment joins two bodies)")
            mesh_a, mesh_b = self.meshes[a], self.meshes[b]
            if attachment.box is not None:
                if attachment.indicesA is not None or attachment.indicesB is not None:
                    raise _error(spec, path, "give either box or indicesA and indicesB, not both")
                nodes_a = meshes.in_box(mesh_a.points, attachment.box)
                if nodes_a.size == 0:
                    raise _error(spec, f"{path}.box", f"selects no node of body {attachment.bodyA!r}")
                nodes_b = cKDTree(mesh_b.points).query(mesh_a.points[nodes_a])[1].astype(np.int64)
            else:
                if attachment.indicesA is None or attachment.indicesB is None:
                    raise _error(spec, path, "give box, or indicesA and indicesB")
                nodes_a = np.asarray(attachment.indicesA, dtype=np.int64)
                nodes_b = np.asarray(attachment.indicesB, dtype=np.int64)
                if nodes_a.size != nodes_b.size:
                    raise _error(spec, f"{path}.indicesB", f"has {nodes_b.size} ids, indicesA {nodes_a.size}; "
                                 "they pair up")
                for key, nodes, mesh in (("indicesA", nodes_a, mesh_a), ("indicesB", nodes_b, mesh_b)):
                    if nodes.max() >= mesh.n_points:
                        raise _error(spec, f"{path}.{key}", f"node ids must lie in 0..{mesh.n_points - 1}")
            result.append(BilateralAttachment(
                nodes_a, nodes_b, rest_vector=mesh_b.points[nodes_b] - mesh_a.points[nodes_a],
                compliance=attachment.compliance, dof_offset_a=3 * int(offsets[a]),
                dof_offset_b=3 * int(offsets[b]), n_dofs=n_dofs, name=attachment.name))
        return result

    def _check_grounded(self, error_type=None) -> None:
        """In static mode every body needs fixed nodes: the frame step first solves the free configuration
        without any constraint (Step I), where a body held only by an attachment or a contact has a singular
        stiffness (rigid motions) and, under a load, no equilibrium. Dynamic mode holds free bodies by their
        mass."""
        spec = self.spec
        if spec.scene.mode != "static":
            return
        fixed_per_body = [body.fixed_nodes for body in self.model.bodies]
        free = [body.name for body, fixed in zip(spec.bodies, fixed_per_body) if fixed.size == 0]
        if free:
            message = (f"body {free[0]!r} has no fixed nodes; a static scene needs at least one [[body.fixed]] "
                       "region per body, or scene.mode = \"dynamic\" (the mass then holds free and attached "
                       "bodies): in static mode a body's free configuration, solved before the constraints "
                       "(contacts and attachments included), is undefined without fixed nodes")
            if error_type is ParameterError:
                raise ParameterError(message)
            raise _error(spec, "scene.mode", message)
        for body, mesh, fixed in zip(spec.bodies, self.meshes, fixed_per_body):  # each part of a mesh, likewise
            loose = meshes.validate.unfixed_parts(mesh, fixed)
            if loose:
                message = (f"body {body.name!r}: {loose}; a static scene needs a [[body.fixed]] region in each "
                           "part (or join the parts, or scene.mode = \"dynamic\")")
                if error_type is ParameterError:
                    raise ParameterError(message)
                raise _error(spec, f"body.{body.name}.fixed", message)

    def _fixed_nodes(self, body, mesh, index: int) -> np.ndarray:
        """The fixed node ids of ``body`` (local); each region's ids (global) go to ``_held`` with its spec."""
        selections = []
        for i, region in enumerate(body.fixed):
            try:
                selections.append(meshes.select_nodes(mesh, region.to_selector()))
            except meshes.MeshError as error:
                raise _error(self.spec, f"body.{body.name}.fixed[{i}]", str(error)) from None
            self._held.append((region, selections[-1], index))
        return np.unique(np.concatenate(selections)) if selections else np.zeros(0, dtype=np.int64)

    def _hold_fixed(self) -> None:
        """Put the fixed nodes where their region holds them, ``center + R(axis, angle) (rest - center) +
        translation`` (``mechanics.rigid_frames``; in file order: a node in two regions follows the later one), in
        the state and in the warm start of the next frame.

        In static mode, when every fixed region of a body moved by the same rigid change since it was last held
        (a translation, or a rotation of all of them about one axis), the body's free nodes move by that change
        too: the rigid motion is the equilibrium's best start (a clamp moved alone would stretch the elements
        beside it by the whole move). Dynamic mode leaves the free nodes where they are: the clamp drags the body
        through its elasticity and inertia."""
        simulation, rest = self.simulation, self.model.rest_positions
        static = simulation.mode == "static"
        for body in range(len(self.meshes)):
            held = [(region, nodes + int(self.node_offsets[body])) for region, nodes, b in self._held if b == body]
            held = [(region, nodes) for region, nodes in held if nodes.size]
            if not held:
                continue
            targets = [held_positions(rest[nodes], region.translation, region.angle, region.axis, region.center)
                       for region, nodes in held]
            if static:
                self._move_body_rigidly(body, np.concatenate([nodes for _, nodes in held]), np.concatenate(targets))
            for (_, nodes), position in zip(held, targets):
                simulation.x[nodes] = position
                if simulation.x_free is not None:
                    simulation.x_free[nodes] = position

    def _move_body_rigidly(self, body: int, nodes: np.ndarray, targets: np.ndarray) -> None:
        """Move every node of ``body`` by the rigid change that takes its fixed ``nodes`` (global ids, (k,)) from
        where they are to ``targets`` (k, 3), when one rigid change does (to 1e-9 of the body's size) and it is not
        the identity."""
        simulation = self.simulation
        start, stop = int(self.node_offsets[body]), int(self.node_offsets[body + 1])
        current = simulation.x[nodes]
        size = max(1.0, float(np.ptp(self.model.rest_positions[start:stop], axis=0).max()))
        tolerance = 1e-9 * size
        if np.abs(targets - current).max() <= tolerance:
            return
        shift = targets - current
        if np.abs(shift - shift[0]).max() <= 1e-12 * size:  # a translation (exact, whatever the regions' shape)
            motion = (np.eye(3), shift[0])
        else:
            motion = best_rigid_motion(current, targets)
            if np.abs(apply_motion(motion, current) - targets).max() > tolerance:
                return
        simulation.x[start:stop] = apply_motion(motion, simulation.x[start:stop])
        if simulation.x_free is not None:
            simulation.x_free[start:stop] = apply_motion(motion, simulation.x_free[start:stop])

    def _masses(self, body, mesh) -> np.ndarray:
        material = body.material
        if material.totalMass is None and material.massDensity is None:
            if any(self.spec.scene.gravity):
                self.warnings.append(f"body {body.name}: no totalMass or massDensity, gravity has no effect")
            return np.zeros(mesh.n_points)
        return lumped_masses(mesh.points, mesh.tets, material.massDensity, total_mass=material.totalMass)

    def _loads(self, body, mesh) -> list:
        loads = []
        for i, force in enumerate(body.forces):
            path = f"body.{body.name}.force[{i}]"
            if force.pressure is not None:
                if force.set not in mesh.triangle_sets:
                    raise _error(self.spec, f"{path}.set", f"pressure needs a triangle set; the mesh has "
                                 f"{', '.join(sorted(mesh.triangle_sets)) or 'none'}")
                loads.append(PressureLoad(mesh.triangle_sets[force.set], force.pressure))
                continue
            try:
                nodes = meshes.select_nodes(mesh, force.to_selector())
            except meshes.MeshError as error:
                raise _error(self.spec, path, str(error)) from None
            loads.append(NodalForce(nodes, force.totalForce))
        return loads

    # -- running ---------------------------------------------------------------------------------------
    def step(self):
        """One frame. First the controllers set their values for the frame's end time (:meth:`frame_time`) and the
        moving obstacles are put where they are then. A controller that fails raises ControllerError before the
        frame: the state and the values stay as they were."""
        self._run_controllers("on_frame", self.frame_time())
        self._move_obstacles(frames_ahead=1)
        if self.servo_inverse is not None:
            return self.servo_inverse.step(self.simulation)
        return self.simulation.step()

    def _move_obstacles(self, frames_ahead: int = 0) -> None:
        """Put the moving obstacles where they are ``frames_ahead`` frames from now: the simulation's time in
        dynamic mode, the frame number x dt in static mode."""
        simulation, dt = self.simulation, self.spec.scene.dt
        time = (simulation.time + frames_ahead * dt if simulation.mode == "dynamic"
                else (simulation.frame + frames_ahead) * dt)
        for obstacle, spec in zip(self.obstacles, self.spec.obstacles):
            obstacle.shift = obstacle_shift(spec.velocity, spec.startTime, spec.endTime, time)

    def run(self, frames: int):
        """``frames`` frames through :meth:`step` (controllers and moving obstacles included)."""
        return [self.step() for _ in range(frames)]

    def reset(self) -> None:
        if self.servo_inverse is not None:
            self.servo_inverse.at_equilibrium = False
        self.simulation.reset()
        self._hold_fixed()
        self._move_obstacles()

    def restore(self, x: np.ndarray, frame: int, *, v: np.ndarray | None = None, time: float | None = None,
                rigid_states: dict | None = None) -> None:
        """Continue from a state kept elsewhere (a scene rebuilt in a new process after a crash): positions ``x``
        (n, 3) at frame number ``frame``, and a dynamic scene's velocities ``v`` (n, 3), simulated time ``time``
        [s] and free rigid bodies' states (name -> mechanics.rigid_body.RigidState) when given; the fixed nodes
        and the moving obstacles are put where that state has them."""
        for body in self.rigids:
            if rigid_states and body.name in rigid_states:
                body.set_state(rigid_states[body.name])
        self.simulation.restore(x, frame, v=v, time=time)
        if self.servo_inverse is not None:
            self.servo_inverse.at_equilibrium = False
        self._hold_fixed()
        self._move_obstacles()

    def outputs(self) -> dict[str, float]:
        return self.simulation.outputs()

    @property
    def positions(self) -> np.ndarray:
        return self.simulation.x

    def gradients(self, outputs, wrt) -> dict[str, dict[str, float]]:
        """Exact derivatives ``{output: {key: d output / d key}}`` at the last frame, a converged static
        equilibrium (implicit function theorem, one adjoint solve per output; docs/gradients.md).

        ``outputs``: names of :meth:`outputs` (cable displacement, cableLength and force, cavity volumeGrowth,
        cavityVolume and pressure, effector positions and distance, the contacts' normalForce) or nodal probes
        ``node[i].x``/``.y``/``.z``/``.displacement``; ``wrt``: key paths (youngModulus and poissonRatio of a
        body or a material region, totalMass, massDensity, ``scene.gravity.x``, actuator values, a plane
        obstacle's ``point.x``, cable points ``body.B.cable.C.points[k].x``).

        Raises NotConvergedError when the last frame did not converge (or none ran), NotDifferentiableError at
        an edge of the active set or a sliding contact, GradientError for an unknown name or a mode without
        gradients (all in :mod:`mechanics.sensitivity`)."""
        from softsim.mechanics.sensitivity import gradients

        return gradients(self, outputs, wrt)

    # -- editing ---------------------------------------------------------------------------------------
    def get(self, path: str):
        return get_value(self.spec, path)

    def set(self, path: str, value) -> None:
        """Change one value by key path; it takes effect on the next frame.

        Validated exactly as the loader validates (SceneError naming the key and the range; the scene is
        unchanged on error). Solver, material, gravity and actuator values are applied live; a change of
        structure (mesh, fixed regions, obstacles, cable points...) rebuilds the simulation and keeps the
        current positions.
        """
        undo = undo_point(self.spec, path)
        if self._edit_log is not None:
            self._edit_log.append((path, copy.deepcopy(get_value(self.spec, path))))
        set_value(self.spec, path, value)
        try:
            self._apply(path)
            self.simulation.mark_edited()
        except (ParameterError, ValueError) as error:
            undo()
            self._build_keep_positions()
            if isinstance(error, SceneError):  # the rebuilt scene's own messages name the file and the key
                raise SceneError(error.errors) from None
            raise _error(self.spec, path, str(error)) from None

    def _apply(self, path: str) -> None:
        """Apply the edited value at ``path`` to the running objects, or rebuild when the structure changed."""
        spec, sim = self.spec, self.simulation
        address = resolve(spec, path)
        table, key = address.table, address.key
        if isinstance(table, NewtonSpec) and key == "correction":
            sim.set_correction(table.correction)
            self._apply_tangents()
        elif isinstance(table, NewtonSpec):
            sim.newton.set_parameters(**_newton_parameters(table))
        elif isinstance(table, LinearSpec):
            sim.newton.set_parameters(linear_solver=_linear_solver(table))
            self._apply_tangents()
        elif isinstance(table, ConstraintSpec) and key == "type":
            sim.set_constraint_solver(make_constraint_solver_from(table))
        elif isinstance(table, ConstraintSpec):
            sim.constraint_solver.set_parameters(**_constraint_parameters(table))
        elif isinstance(table, DynamicSpec) or (isinstance(table, SceneSettings) and key == "dt"):
            if sim.dynamic_solver is not None:
                sim.dynamic_solver.set_parameters(dt=spec.scene.dt, **_dynamic_parameters(spec.solver.dynamic))
        elif isinstance(table, SceneSettings) and key == "gravity":
            for gravity in self.gravities:
                gravity.g = spec.scene.gravity
            for rigid in self.rigids:
                rigid.gravity = np.asarray(spec.scene.gravity, dtype=np.float64)
        elif isinstance(table, InverseSpec) or (isinstance(table, SolverSpec) and key == "inverse"):
            self.servo_inverse = self._servo_inverse()
            sim.set_inverse(self._simulation_inverse())
            self._apply_tangents()
        elif isinstance(table, SceneSettings) and key == "mode":
            self._check_grounded(ParameterError)
            sim.set_mode(spec.scene.mode)
            self._apply_tangents()
        elif isinstance(table, SceneSettings | DragSpec):
            pass  # name, units: labels only; drag.compliance is read when a drag starts
        elif isinstance(table, ControllerSpec):
            self.allow_scripts(self.scripts_allowed)
        elif isinstance(table, FixedSpec) and key in ("translation", "angle", "axis", "center"):
            self._hold_fixed()
            if self.servo_inverse is not None:
                self.servo_inverse.at_equilibrium = False
        elif isinstance(table, MaterialSpec | MaterialRegionSpec | StackedMaterialSpec) and key not in (
                "totalMass", "massDensity"):
            index = address.index("body")
            body = spec.bodies[index]
            model, young, poisson = element_materials(spec, body, self.meshes[index])
            self.model.bodies[index].elasticity.set_material(model=model, young=young, poisson=poisson,
                                                             rotation_method=body.material.rotation_method,
                                                             **_corotational_tangent_kwargs(body.material, spec))
        elif (isinstance(table, CableSpec | CavitySpec | EffectorSpec | CenterEffectorSpec)
              and key in sim.constraint(table.name).PARAMETERS):
            value = getattr(table, key)
            sim.constraint(table.name).set_parameters(**{key: np.asarray(value) if isinstance(value, tuple) else value})
        else:
            self._build_keep_positions()

    def _apply_tangents(self) -> None:
        """Each body's corotational tangent for the current linear solver, mode and inverse setting."""
        for body, model_body in zip(self.spec.bodies, self.model.bodies):
            model_body.elasticity.set_material(**_corotational_tangent_kwargs(body.material, self.spec))

    def _build_keep_positions(self) -> None:
        """Rebuild after a change of structure, keeping the state: positions, velocities, frame and time (moving
        obstacles stay where the time put them)."""
        old = self.simulation
        x, v, frame, time = old.x.copy(), old.v.copy(), old.frame, old.time
        rigid_states = {body.name: body.state for body in old.rigid_bodies}
        drag = self.drag
        self._build()
        if x.shape == self.simulation.x.shape:
            self.restore(x, frame, v=v, time=time, rigid_states=rigid_states)  # a rigid body keeps its motion too
            self.simulation.continue_from(old)  # a static equilibrium stays the next frame's start
        else:
            for body in self.rigids:
                if body.name in rigid_states:
                    body.set_state(rigid_states[body.name])
        if drag is not None:
            self.simulation.add_constraint(drag)

    # -- mouse drag -------------------------------------------------------------------------------------
    def start_drag(self, node: int, target) -> None:
        """Attach ``node`` to ``target`` (3,) with the scene's drag compliance (a soft constraint)."""
        self.stop_drag()
        self.drag = DragConstraint(int(node), np.asarray(target, dtype=np.float64),
                                   compliance=self.spec.drag.compliance)
        self.simulation.add_constraint(self.drag)

    def move_drag(self, target) -> None:
        if self.drag is not None:
            self.drag.set_target(np.asarray(target, dtype=np.float64))

    def stop_drag(self) -> None:
        if self.drag is not None:
            self.simulation.remove_constraint(self.drag)
            self.drag = None

    # -- saving -----------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the scene with every value currently in effect (tuned live) to ``path``, atomically."""
        save_scene(self.spec, path)


def default_scene_for_mesh(path: str | Path) -> SceneSpec:
    """A scene for a bare mesh file: corotational silicone, gravity along -y, the bottom 5 % (in y) fixed.

    Units are guessed from the size: a body larger than 10 units across is taken to be in millimetres
    (SoftRobots' mm-kg-s: E in kPa), otherwise in metres (SI). Every value can be edited afterwards.
    """
    path = Path(path).resolve()
    mesh = meshes.load(path)
    lo, hi = mesh.bbox[:3], mesh.bbox[3:]
    millimetres = float(np.linalg.norm(hi - lo)) > 10.0
    slab = lo[1] + 0.05 * (hi[1] - lo[1])
    margin = 1e-6 * float(np.linalg.norm(hi - lo))
    box = [lo[0] - margin, lo[1] - margin, lo[2] - margin, hi[0] + margin, slab, hi[2] + margin]
    data = {
        "scene": {"name": path.stem, "units": "mm-kg-s" if millimetres else "SI",
                  "gravity": [0.0, -9810.0 if millimetres else -9.81, 0.0]},
        "body": [{"name": "body", "mesh": str(path),
                  "material": {"model": "corotational", "youngModulus": 100.0 if millimetres else 1e5,
                               "poissonRatio": 0.45, "massDensity": 1.07e-6 if millimetres else 1070.0},
                  "fixed": [{"box": box}]}],
    }
    return parse_data(data, source=str(path.with_suffix(".toml")), base_dir=path.parent)


__all__ = ["ALARM_FRACTION", "Scene", "default_scene_for_mesh", "element_materials",
           "load_body_mesh"]
