"""Rigid frames prescribed on a body's nodes: a region's nodes held at ``center + R (X - center) + t``.

This is what a fixed region with ``angle``, ``axis``, ``center`` and ``translation`` means (``[[body.fixed]]``),
and what SOFA does with a rigid frame whose pose is prescribed (Tripod's servo arms: the nodes of a Rigidify
group follow the servo wheel's Rigid3 frame through a RigidMapping). Positions are ``(k, 3)`` in the scene's
length unit; angles in degrees.
"""

from __future__ import annotations

import numpy as np

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import cross_matrices

__all__ = ["rotation_matrix", "held_positions", "rigid_motion", "best_rigid_motion", "apply_motion"]


def rotation_matrix(axis, angle_deg: float) -> np.ndarray:
    """The right-handed rotation ``(3, 3)`` by ``angle_deg`` degrees about ``axis`` (3,), any non-zero length
    (Rodrigues' formula)."""
    a = np.asarray(axis, dtype=np.float64).reshape(3)
    norm = float(np.linalg.norm(a))
    if not norm > 0.0 or not np.isfinite(norm):
        raise ParameterError(f"rotation axis must be a non-zero finite vector, got {a.tolist()}")
    k = a / norm
    theta = np.deg2rad(float(angle_deg))
    cross = cross_matrices(k)[0]
    return np.eye(3) + np.sin(theta) * cross + (1.0 - np.cos(theta)) * (cross @ cross)


def rigid_motion(translation=(0.0, 0.0, 0.0), angle: float = 0.0, axis=(1.0, 0.0, 0.0),
                 center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """``(R (3, 3), b (3,))`` with ``x = R X + b`` the motion ``x = center + R (X - center) + translation``."""
    R = rotation_matrix(axis, angle)
    c = np.asarray(center, dtype=np.float64).reshape(3)
    return R, c - R @ c + np.asarray(translation, dtype=np.float64).reshape(3)


def apply_motion(motion: tuple[np.ndarray, np.ndarray], points) -> np.ndarray:
    """``R p + b`` for every row of ``points`` ``(k, 3)``."""
    R, b = motion
    return np.asarray(points, dtype=np.float64) @ R.T + b


def held_positions(rest, translation=(0.0, 0.0, 0.0), angle: float = 0.0, axis=(1.0, 0.0, 0.0),
                   center=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Where a region's nodes with rest positions ``rest`` ``(k, 3)`` are held: ``center + R(axis, angle)
    (rest - center) + translation`` ``(k, 3)``."""
    return apply_motion(rigid_motion(translation, angle, axis, center), rest)


def best_rigid_motion(source, target) -> tuple[np.ndarray, np.ndarray]:
    """The rigid motion ``(R, b)`` that takes the points ``source`` ``(k, 3)`` closest to ``target`` ``(k, 3)`` in
    the least-squares sense (Kabsch: the SVD of the centred cross-covariance, reflection excluded). Exact when
    the target is a rigid motion of the source; for fewer than three non-collinear points one of the motions
    that fits."""
    p = np.asarray(source, dtype=np.float64).reshape(-1, 3)
    q = np.asarray(target, dtype=np.float64).reshape(-1, 3)
    if p.shape != q.shape or not len(p):
        raise ParameterError(f"best_rigid_motion needs two equal non-empty (k, 3) arrays, got {p.shape}, {q.shape}")
    pc, qc = p.mean(axis=0), q.mean(axis=0)
    u, _, vt = np.linalg.svd((p - pc).T @ (q - qc))
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    R = vt.T @ np.diag([1.0, 1.0, d]) @ u.T
    return R, qc - R @ pc
