"""Mesh containers: :class:`TetMesh` (the simulated body) and :class:`TriangleSurface` (cavities)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from softsim.meshes.surface import boundary_triangles, enclosed_volume, is_closed, triangle_areas

__all__ = ["TetMesh", "TriangleSurface", "tet_signed_volumes"]


def tet_signed_volumes(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Signed volumes ``det[x1-x0, x2-x0, x3-x0] / 6`` of shape (m,); positive for positive orientation.

    Written per coordinate: contiguous columns and no (m, 4, 3) gather, whose copy dominates on big meshes
    (benchmarks/RESULTS.md, "Measurements moved out of docstrings")."""
    points = np.asarray(points, dtype=np.float64)
    tets = np.asarray(tets, dtype=np.int64)
    x, y, z = (np.ascontiguousarray(points[:, k]) for k in range(3))
    t0, t1, t2, t3 = (tets[:, k] for k in range(4))
    ax, ay, az = x[t1] - x[t0], y[t1] - y[t0], z[t1] - z[t0]
    bx, by, bz = x[t2] - x[t0], y[t2] - y[t0], z[t2] - z[t0]
    cx, cy, cz = x[t3] - x[t0], y[t3] - y[t0], z[t3] - z[t0]
    return (ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)) / 6.0


@dataclass(eq=False)
class TetMesh:
    """A tetrahedral body: geometry and topology only.

    Attributes
    ----------
    points : (n, 3) float64 rest positions, in the file's units times ``scale``.
    tets : (m, 4) int64 node ids, positively oriented (``det[x1-x0, x2-x0, x3-x0] > 0``).
    point_sets : name -> (k,) int64 node ids.
    cell_sets : name -> (k,) int64 tetrahedron ids.
    triangle_sets : name -> (k, 3) int64 node ids (e.g. a cavity or a loaded surface).
    source : where the mesh came from (file name, or ``<arrays>``).
    problems : repairs and warnings found while loading (human-readable, one per line).
    original_node_ids : (n,) int64 index in the file of each kept node.

    The constructor only normalises dtypes; use :meth:`from_arrays` or :func:`meshes.load` to validate
    and repair.
    """

    points: np.ndarray
    tets: np.ndarray
    point_sets: dict[str, np.ndarray] = field(default_factory=dict)
    cell_sets: dict[str, np.ndarray] = field(default_factory=dict)
    triangle_sets: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "<arrays>"
    problems: list[str] = field(default_factory=list)
    original_node_ids: np.ndarray | None = None
    _surface: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.points = np.ascontiguousarray(self.points, dtype=np.float64).reshape(-1, 3)
        self.tets = np.ascontiguousarray(self.tets, dtype=np.int64).reshape(-1, 4)
        self.point_sets = {
            str(k): np.asarray(v, dtype=np.int64).reshape(-1) for k, v in self.point_sets.items()
        }
        self.cell_sets = {
            str(k): np.asarray(v, dtype=np.int64).reshape(-1) for k, v in self.cell_sets.items()
        }
        self.triangle_sets = {
            str(k): np.asarray(v, dtype=np.int64).reshape(-1, 3) for k, v in self.triangle_sets.items()
        }
        if self.original_node_ids is None:
            self.original_node_ids = np.arange(self.points.shape[0], dtype=np.int64)
        else:
            self.original_node_ids = np.asarray(self.original_node_ids, dtype=np.int64).reshape(-1)
        self.problems = list(self.problems)

    @classmethod
    def from_arrays(
        cls,
        points,
        tets,
        *,
        point_sets: dict | None = None,
        cell_sets: dict | None = None,
        triangle_sets: dict | None = None,
        source: str = "<arrays>",
    ) -> TetMesh:
        """Validate and repair arrays exactly as :func:`meshes.load` does (raises :class:`MeshError`)."""
        from softsim.meshes.validate import repair

        return repair(
            points,
            tets,
            point_sets=point_sets,
            cell_sets=cell_sets,
            triangle_sets=triangle_sets,
            source=source,
        )

    @property
    def n_points(self) -> int:
        return int(self.points.shape[0])

    @property
    def n_tets(self) -> int:
        return int(self.tets.shape[0])

    def volumes(self) -> np.ndarray:
        """Signed tetrahedron volumes, shape (m,) (positive for a valid mesh)."""
        return tet_signed_volumes(self.points, self.tets)

    @property
    def volume(self) -> float:
        """Total volume (sum of the tetrahedron volumes)."""
        return float(self.volumes().sum())

    @property
    def bbox(self) -> np.ndarray:
        """(6,) float64 ``[xmin, ymin, zmin, xmax, ymax, zmax]``."""
        if self.n_points == 0:
            return np.zeros(6)
        return np.concatenate([self.points.min(axis=0), self.points.max(axis=0)])

    def surface_triangles(self) -> np.ndarray:
        """Boundary triangles, (k, 3) int64 node ids, outward oriented; computed once and cached.

        The returned array is read-only; copy it to modify.
        """
        if self._surface is None:
            surface = boundary_triangles(self.tets, self.n_points)
            surface.flags.writeable = False
            self._surface = surface
        return self._surface

    def __repr__(self) -> str:
        sets = len(self.point_sets) + len(self.cell_sets) + len(self.triangle_sets)
        return (
            f"TetMesh(source={self.source!r}, n_points={self.n_points}, n_tets={self.n_tets}, "
            f"sets={sets}, problems={len(self.problems)})"
        )


@dataclass(eq=False)
class TriangleSurface:
    """A triangle surface, e.g. a cavity loaded from STL/OBJ/PLY.

    Attributes
    ----------
    points : (p, 3) float64 vertex positions (coincident vertices merged).
    triangles : (k, 3) int64 vertex ids.
    source : the file it came from.
    """

    points: np.ndarray
    triangles: np.ndarray
    source: str = "<arrays>"

    def __post_init__(self) -> None:
        self.points = np.ascontiguousarray(self.points, dtype=np.float64).reshape(-1, 3)
        self.triangles = np.ascontiguousarray(self.triangles, dtype=np.int64).reshape(-1, 3)

    @property
    def n_points(self) -> int:
        return int(self.points.shape[0])

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    def volume(self) -> float:
        """Signed enclosed volume (divergence theorem); positive when the normals point outward."""
        return enclosed_volume(self.points, self.triangles)

    def area(self) -> float:
        return float(triangle_areas(self.points, self.triangles).sum())

    def is_closed(self) -> bool:
        """Watertight, edge-manifold and consistently oriented."""
        return is_closed(self.triangles)

    def __repr__(self) -> str:
        return (
            f"TriangleSurface(source={self.source!r}, n_points={self.n_points}, "
            f"n_triangles={self.n_triangles})"
        )
