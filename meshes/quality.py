"""Element quality measures of tetrahedra (vectorised).

- Minimum dihedral angle, degrees: 70.53 for the regular tetrahedron, 45 for the cube's Kuhn tetrahedron,
  0 for a sliver.
- Radius ratio ``3 r_in / R_circ``: 1 for the regular tetrahedron, 0.7174 for the Kuhn tetrahedron,
  0 for a degenerate one.
"""

from __future__ import annotations

import numpy as np

from softsim.meshes.surface import TET_FACES_OUTWARD

__all__ = ["min_dihedral_angles", "quality_summary", "radius_ratios"]


def _corners(points, tets) -> np.ndarray:
    return np.asarray(points, dtype=np.float64)[np.asarray(tets, dtype=np.int64).reshape(-1, 4)]


def min_dihedral_angles(points, tets) -> np.ndarray:
    """Smallest interior dihedral angle of each tetrahedron, degrees, shape (m,)."""
    p = _corners(points, tets)
    faces = p[:, TET_FACES_OUTWARD]  # (m, 4, 3, 3)
    normals = np.cross(faces[:, :, 1] - faces[:, :, 0], faces[:, :, 2] - faces[:, :, 0])
    lengths = np.linalg.norm(normals, axis=2, keepdims=True)
    unit = normals / np.where(lengths > 0.0, lengths, 1.0)
    first, second = np.triu_indices(4, k=1)
    # The interior angle along the shared edge is pi minus the angle between the outward normals.
    cosines = -np.einsum("mij,mij->mi", unit[:, first], unit[:, second])
    angles = np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0)))
    return angles.min(axis=1)


def radius_ratios(points, tets) -> np.ndarray:
    """Normalised radius ratio ``3 * inradius / circumradius`` of each tetrahedron, shape (m,)."""
    p = _corners(points, tets)
    a = p[:, 1] - p[:, 0]
    b = p[:, 2] - p[:, 0]
    c = p[:, 3] - p[:, 0]
    det = np.einsum("ij,ij->i", a, np.cross(b, c))
    volume = np.abs(det) / 6.0
    faces = p[:, TET_FACES_OUTWARD]
    areas = 0.5 * np.linalg.norm(
        np.cross(faces[:, :, 1] - faces[:, :, 0], faces[:, :, 2] - faces[:, :, 0]), axis=2
    ).sum(axis=1)
    inradius = 3.0 * volume / np.where(areas > 0.0, areas, 1.0)
    numerator = (
        np.sum(a * a, axis=1)[:, None] * np.cross(b, c)
        + np.sum(b * b, axis=1)[:, None] * np.cross(c, a)
        + np.sum(c * c, axis=1)[:, None] * np.cross(a, b)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        circumradius = np.linalg.norm(numerator, axis=1) / np.abs(2.0 * det)
        ratio = 3.0 * inradius / circumradius
    return np.where(np.isfinite(ratio), ratio, 0.0)


def quality_summary(points, tets) -> dict[str, float]:
    """Minimum and mean of the two measures: keys ``min_dihedral_deg``, ``mean_min_dihedral_deg``,
    ``min_radius_ratio``, ``mean_radius_ratio``."""
    dihedral = min_dihedral_angles(points, tets)
    ratio = radius_ratios(points, tets)
    return {
        "min_dihedral_deg": float(dihedral.min()),
        "mean_min_dihedral_deg": float(dihedral.mean()),
        "min_radius_ratio": float(ratio.min()),
        "mean_radius_ratio": float(ratio.mean()),
    }
