"""Checks of a scene that the schema cannot make on its own: they need the placed meshes, the fixed nodes and
the built constraints.

Each finds an input that loads but cannot run (the first frame would fail, typically on a zero row of the
constraint system) or makes no sense, and says in the scene file's words what to change. The scene build
(:class:`mechanics.scene_runtime.Scene`) runs them, so ``softsim check``, ``softsim run``, the Python API and the
GUI refuse the same scenes.

- An obstacle that starts inside a body: a free surface node (a contact candidate) inside the obstacle's
  shape at rest. A node between the shape and ``contactDistance`` is allowed (a body resting on the floor is
  pushed out to ``contactDistance`` by the first frame).
- A ``contactDistance`` larger than the body's bounding-box diagonal (the gap kept between the surface and
  the obstacle: a small fraction of the body).
- An obstacle that lies inside a body: nodes of the body inside it, none of them a free surface node (it can
  never touch the surface, so it has no effect).
- A cable or cavity all of whose nodes are fixed (its length or volume can never change: a zero row), an
  attachment pair joining two fixed nodes; a position effector on fixed nodes only gets a warning (it is not
  enforced, it just never moves).
- In inverse mode, an effector goal farther from the body than its size gets a warning: out of reach.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constraints.contact import penetrations
from softsim.mechanics.scene import SceneError

__all__ = ["check_scene", "zero_rows"]

#: a surface node is inside an obstacle when deeper than this fraction of the body's bounding-box diagonal
#: (a body placed exactly on a plane is not inside it)
INSIDE_TOLERANCE = 1e-9


def _unit(spec) -> str:
    return "mm" if spec.scene.units == "mm-kg-s" else "m"


def _vector(values) -> str:
    return "[" + ", ".join(f"{value + 0.0:.4g}" for value in np.asarray(values, dtype=np.float64)) + "]"


def zero_rows(constraint, points: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """Which rows of ``constraint``'s Jacobian at ``points`` ``(n, 3)`` vanish on the free DOFs (``(rows,)``
    bool): no motion of the free nodes can change these rows' measure, W has a zero there."""
    J = sp.csr_matrix(constraint.jacobian(points))
    free = np.ones(J.shape[1])
    free[(3 * np.asarray(fixed, dtype=np.int64)[:, None] + np.arange(3)).reshape(-1)] = 0.0
    return np.asarray(abs(J) @ free).reshape(-1) == 0.0


def _clearing_hint(obstacle, shift: np.ndarray, need: float, unit: str) -> str:
    """What to change so that the obstacle clears the body: ``shift`` moves it away from its deepest node by
    ``need`` (that node's depth plus contactDistance)."""
    if obstacle.type == "plane":
        return (f"move point to {_vector(np.asarray(obstacle.point) + shift)} ({need:.3g} {unit} against the "
                "normal: the depth plus contactDistance) or, if the body belongs on the other side of the plane, "
                "flip normal")
    if obstacle.type == "capsule":
        moved = (f"a to {_vector(np.asarray(obstacle.a) + shift)} and b to "
                 f"{_vector(np.asarray(obstacle.b) + shift)}")
    else:
        moved = f"center to {_vector(np.asarray(obstacle.center) + shift)}"
    hint = f"move it away from the body (e.g. {moved}: the depth plus contactDistance)"
    if obstacle.type == "box":
        smaller = np.asarray(obstacle.halfExtents) - need
        return hint + (f" or make halfExtents at most {_vector(smaller)}" if np.all(smaller > 0.0) else "")
    smaller = obstacle.radius - need
    return hint + (f" or make radius at most {smaller:.3g} {unit}" if smaller > 0.0 else "")


def _obstacle_problems(spec, obstacles, bodies) -> list[str]:
    unit = _unit(spec)
    diagonals = [float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) for _, points, _ in bodies]
    size = max(diagonals)
    problems = []
    for obstacle_spec, obstacle in zip(spec.obstacles, obstacles, strict=True):
        path = f"obstacle.{obstacle_spec.name}"
        distance = obstacle_spec.contactDistance
        if distance > size:
            problems.append(
                f"{path}.contactDistance: {distance:g} {unit} is larger than the body itself (bounding-box "
                f"diagonal {size:.3g} {unit}); it is the gap kept between the body's surface and the obstacle, a "
                f"small fraction of the body's size (e.g. {float(f'{0.005 * size:.1g}'):g} {unit})")
            continue
        for (name, points, surface), diagonal in zip(bodies, diagonals, strict=True):
            ids, depths, normals = penetrations(obstacle, points[surface], INSIDE_TOLERANCE * diagonal)
            if ids.size == 0:
                inside = penetrations(obstacle, points, INSIDE_TOLERANCE * diagonal)[0]
                if inside.size:  # nodes of the body inside it, none of its free surface: it is within the body
                    problems.append(
                        f"{path}: the {obstacle_spec.type} lies inside body {name!r}: {inside.size} of the body's "
                        f"nodes are inside it (e.g. {_vector(points[inside[0]])}), none of them a free surface "
                        f"node, so it can never touch the body's surface and has no effect; move it outside the "
                        f"body (obstacles push on the surface only)")
                continue
            deepest = int(np.argmax(depths))
            need = float(depths[deepest]) + distance
            hint = _clearing_hint(obstacle_spec, -need * normals[deepest], need, unit)
            where = _vector(points[surface[ids[deepest]]])
            problems.append(
                f"{path}: the {obstacle_spec.type} starts inside body {name!r}: {ids.size} of the body's free "
                f"surface nodes are inside it, up to {depths[deepest]:.3g} {unit} deep (at {where}); {hint}")
    return problems


def _fixed_ids(ids) -> str:
    """``index 3 is a fixed node`` or ``indices [3, 4] are all fixed nodes``."""
    ids = [int(i) for i in ids]
    if len(ids) == 1:
        return f"index {ids[0]} is a fixed node"
    return "indices [" + ", ".join(str(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "") + \
        "] are all fixed nodes"


def _actuator_problems(spec, body, points, fixed, constraints) -> tuple[list[str], list[str]]:
    """Zero rows of the body's cables, cavities and effectors (the first of ``constraints``, in that order, as
    built; the unilateral planes and center effectors built after them are not checked)."""
    errors, warnings = [], []
    items = [("cable", c) for c in body.cables] + [("cavity", c) for c in body.cavities] + [
        ("effector", e) for e in body.effectors]
    fixed_regions = f"body.{body.name}.fixed"
    for (kind, item), constraint in zip(items, constraints[:len(items)], strict=True):
        zero = zero_rows(constraint, points, fixed)
        if not zero.any():
            continue
        path = f"body.{body.name}.{kind}.{item.name}"
        if kind == "cable":
            where = (f"its {_fixed_ids(item.indices)}" if item.indices is not None else
                     "its points all lie in elements whose nodes are all fixed")
            errors.append(
                f"{path}: the cable cannot pull: {where} ({fixed_regions}), so its length never changes and its "
                "row of the constraint system is zero (no displacement or force can be solved); put its points "
                "or indices on nodes outside the fixed regions")
        elif kind == "cavity":
            errors.append(
                f"{path}: every node of the cavity's wall is fixed ({fixed_regions}), so its volume can never "
                "change and its row of the constraint system is zero (no pressure or volume growth can be "
                "solved); fix fewer nodes or choose another surface")
        else:
            stuck = zero.reshape(item.n_points, -1).all(axis=1)
            where = (f"its {_fixed_ids(np.asarray(item.indices)[stuck])}" if item.indices is not None
                     else f"{int(stuck.sum())} of its {stuck.size} positions lie in elements whose nodes are all "
                     "fixed")
            warnings.append(f"{path}: {where} ({fixed_regions}): the effector never moves there, its outputs "
                            "stay constant; put it on nodes outside the fixed regions")
    return errors, warnings


def _attachment_problems(spec, attachments, points, fixed) -> list[str]:
    errors = []
    for attachment_spec, constraint in zip(spec.attachments, attachments, strict=True):
        if attachment_spec.compliance > 0.0:
            continue  # a soft glue: its compliance keeps W's diagonal positive
        stuck = zero_rows(constraint, points, fixed).reshape(-1, 3).all(axis=1)
        if not stuck.any():
            continue
        first = int(np.flatnonzero(stuck)[0])
        errors.append(
            f"attachment.{attachment_spec.name}: {int(stuck.sum())} of its {stuck.size} node pairs join two fixed "
            f"nodes (e.g. node {int(constraint.nodes_a[first])} of {attachment_spec.bodyA!r} and node "
            f"{int(constraint.nodes_b[first])} of {attachment_spec.bodyB!r}): such a pair can never move, its "
            "rows of the constraint system are zero; leave these nodes out of the attachment or unfix one side")
    return errors


#: an inverse-mode goal farther from the body than this many times its bounding-box diagonal is out of reach
GOAL_REACH_FACTOR = 1.0


def _goal_warnings(spec, bodies) -> list[str]:
    """Inverse mode: effector goals that no actuation can reach, farther from the body's bounding box than
    :data:`GOAL_REACH_FACTOR` times its diagonal (a body anchored by its fixed region cannot travel that far)."""
    inverse = spec.solver.inverse
    if inverse is None or not inverse.active:
        return []
    unit = _unit(spec)
    warnings = []
    for body, points, *_ in bodies:
        low, high = points.min(axis=0), points.max(axis=0)
        diagonal = float(np.linalg.norm(high - low))
        for effector in body.effectors:
            for goal in effector.effectorGoal or ():
                away = float(np.linalg.norm(np.maximum(np.maximum(low - goal, np.asarray(goal) - high), 0.0)))
                if away > GOAL_REACH_FACTOR * diagonal:
                    warnings.append(
                        f"body.{body.name}.effector.{effector.name}.effectorGoal: {_vector(goal)} is {away:.3g} "
                        f"{unit} outside the body's bounding box, more than its size ({diagonal:.3g} {unit}): out "
                        "of reach, the inverse model will only move the effector as far towards it as the "
                        "actuators' limits allow; give a goal near the body")
                    break
    return warnings


def check_scene(spec, bodies, obstacles, attachments=(), points=None, fixed=None) -> list[str]:
    """Raise :class:`SceneError` listing every problem found; return the warnings.

    ``bodies``: per body ``(body spec, rest positions (n_b, 3), fixed node ids, the body's cable, cavity and
    effector constraints in file order, free surface node ids)``, body-local. ``obstacles``: the obstacle
    objects of ``spec.obstacles``. ``attachments``: the attachment constraints of ``spec.attachments`` over
    the concatenated positions ``points`` with concatenated fixed node ids ``fixed``.
    """
    errors, warnings = [], []
    for body, body_points, body_fixed, constraints, _ in bodies:
        body_errors, body_warnings = _actuator_problems(spec, body, body_points, body_fixed, constraints)
        errors += body_errors
        warnings += body_warnings
    if attachments:
        errors += _attachment_problems(spec, attachments, points, fixed)
    if obstacles:
        errors += _obstacle_problems(spec, obstacles, [(b.name, p, s) for b, p, _, _, s in bodies])
    warnings += _goal_warnings(spec, bodies)
    if errors:
        name = Path(spec.source).name
        raise SceneError([f"{name}: {error}" for error in errors])
    return warnings
