"""The outputs a gradient is taken of: the names of ``Scene.outputs()`` and nodal probes.

- ``CABLE.displacement`` (L0 - L), ``CABLE.cableLength`` (L), ``CABLE.force`` (its multiplier);
- ``CAVITY.volumeGrowth``, ``CAVITY.cavityVolume``, ``CAVITY.pressure`` (its multiplier);
- ``EFFECTOR.x`` / ``.y`` / ``.z`` (``.x0``, ``.y1``... with several points) and ``EFFECTOR.distance``;
- ``CONTACT.normalForce`` (the sum of the contact rows' normal multipliers), against obstacles and between
  bodies (``collision.normalForce``);
- probes: ``node[i].x`` / ``.y`` / ``.z`` (node i's position, the scene's node ids, bodies concatenated in file
  order) and ``node[i].displacement`` (|x_i - X_i|).

Each output o(x, lambda) is given by its gradients ``dx (3N,)`` and ``dlambda (m,)`` (rows of the frame's
constraint system) at the equilibrium.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from softsim.mechanics.sensitivity.errors import GradientError

_NODE = re.compile(r"^node\[(?P<node>\d+)\]\.(?P<quantity>x|y|z|displacement)$")
_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass
class OutputGradient:
    """``name``, its ``value`` at the equilibrium, and its gradients ``dx (3N,)``, ``dlambda (m,)``."""

    name: str
    value: float
    dx: np.ndarray
    dlambda: np.ndarray


def _inner(constraint):
    """(the constraint model itself, its first DOF on the concatenated vector) of a placed constraint."""
    inner = constraint.__dict__.get("constraint", constraint)
    return inner, 3 * int(constraint.__dict__.get("start", 0))


def _widen(state, local: np.ndarray, offset: int) -> np.ndarray:
    full = np.zeros(state.n_dofs)
    full[offset:offset + local.size] = local
    return full


def output_names(scene) -> list[str]:
    """The differentiable output names of the scene (probes aside)."""
    names = []
    for constraint in scene.simulation.constraints:
        inner, _ = _inner(constraint)
        for key in constraint.outputs:
            if _supported(inner, key):
                names.append(f"{constraint.name}.{key}")
    return names


def _supported(inner, key: str) -> bool:
    kind = type(inner).__name__
    if kind == "CableConstraint":
        return key in ("displacement", "cableLength", "force")
    if kind == "SurfacePressureConstraint":
        return key in ("volumeGrowth", "cavityVolume", "pressure")
    if kind == "PositionEffector":
        return True
    if kind in ("ContactConstraint", "BodyContactConstraint"):
        return key == "normalForce"
    return False


def output_gradient(state, name: str) -> OutputGradient:
    """The :class:`OutputGradient` of ``name`` at the equilibrium ``state`` (GradientError naming the allowed
    names)."""
    match = _NODE.match(name.strip())
    if match:
        return _node(state, int(match.group("node")), match.group("quantity"), name)
    constraint_name, _, quantity = name.strip().rpartition(".")
    constraint = next((c for c in state.scene.simulation.constraints if c.name == constraint_name), None)
    if constraint is None or quantity not in constraint.outputs or not _supported(_inner(constraint)[0], quantity):
        allowed = ", ".join(output_names(state.scene)) or "none"
        raise GradientError(f"output {name!r}: not a differentiable output of this scene; allowed: {allowed}, and "
                            f"node[i].x/y/z/displacement (i in 0..{state.n_dofs // 3 - 1})")
    inner, offset = _inner(constraint)
    value = float(constraint.outputs[quantity])
    dx, dlambda = np.zeros(state.n_dofs), np.zeros(state.n_rows)
    rows = state.rows_of(constraint_name)
    kind = type(inner).__name__
    if quantity in ("force", "pressure"):
        if rows is not None:
            dlambda[rows] = 1.0
    elif kind == "CableConstraint":
        J = np.asarray(constraint.jacobian(state.x).todense()).reshape(-1)  # -dL/dx
        dx = J if quantity == "displacement" else -J
    elif kind == "SurfacePressureConstraint":
        J = np.asarray(constraint.jacobian(state.x).todense()).reshape(-1)  # orientation dV/dx
        if quantity == "cavityVolume":
            sign = np.sign(inner.signed_volume(state.x[offset // 3:offset // 3 + inner.n_nodes]))
            J = J * sign * inner.orientation
        dx = J
    elif kind == "PositionEffector":
        dx = _widen(state, _effector(inner, state.x[offset // 3:offset // 3 + inner.n_nodes], quantity), offset)
    elif kind in ("ContactConstraint", "BodyContactConstraint") and rows is not None:
        mask = inner._row_mask()
        per_contact = np.zeros(mask.shape)
        per_contact[:, 0] = 1.0
        dlambda[rows] = per_contact[mask]
    return OutputGradient(name, value, dx, dlambda)


def _effector(effector, x: np.ndarray, quantity: str) -> np.ndarray:
    """d(quantity)/dx on the effector's body DOFs for a position component or the distance to the goal."""
    points = effector.point_set.positions(x)
    p = points.shape[0]
    rows = np.zeros((1, p, 3))
    if quantity == "distance":
        axes = effector.directions
        offset = np.zeros((p, 3))
        offset[:, axes] = (points - effector.effectorGoal)[:, axes]
        norm = float(np.linalg.norm(offset))
        if norm == 0.0:
            raise GradientError(f"output {effector.name}.distance: the effector is at its goal, where the distance "
                                "is not differentiable")
        rows[0] = offset / norm
    else:
        axis = _AXES[quantity[0]]
        point = int(quantity[1:]) if len(quantity) > 1 else 0
        rows[0, point, axis] = 1.0
    return np.asarray(effector.point_set.rows_to_dofs(rows).todense()).reshape(-1)


def _node(state, node: int, quantity: str, name: str) -> OutputGradient:
    n = state.n_dofs // 3
    if node >= n:
        raise GradientError(f"output {name!r}: node ids are 0..{n - 1}")
    dx = np.zeros(state.n_dofs)
    if quantity == "displacement":
        u = state.x[node] - state.scene.simulation.X[node]
        value = float(np.linalg.norm(u))
        if value == 0.0:
            raise GradientError(f"output {name!r}: the node has not moved, where |u| is not differentiable; "
                                f"take node[{node}].x, .y or .z")
        dx[3 * node:3 * node + 3] = u / value
    else:
        axis = _AXES[quantity]
        value = float(state.x[node, axis])
        dx[3 * node + axis] = 1.0
    return OutputGradient(name, value, dx, np.zeros(state.n_rows))
