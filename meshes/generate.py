"""Procedural tetrahedral meshes of the SoftRobots tutorial bodies (units: mm).

Bodies are built from structured grids: hexahedral grids split into 6 Kuhn tetrahedra, with cells removed
to carve gaps and cavities, or a triangulated disk extruded into prisms split into 3 tetrahedra. Both splits
are conforming and *mirror-symmetric* about the body's planes of symmetry: the Kuhn split is reflected in the
upper half of each mirrored axis, and the prism split follows a vertex order that the disk's reflections
preserve. A plain Kuhn split (same diagonal everywhere) couples bending to twisting: under gravity the old
3 x 3-cell finger's tip moved sideways (z) by 0.196 times its bending deflection (y). Only numpy is needed to
build them; ``python -m softsim.meshes.generate resources/meshes`` rewrites the shipped files (it writes
where it is told, never into an installed package).

Cavity triangle sets (``cavity``) are oriented with their normals pointing *out of the cavity's enclosed
volume* (into the surrounding material), so that their divergence-theorem volume is positive: the
SoftRobots ``SurfacePressureConstraint`` convention with ``flipNormal = false``. The body's own boundary
triangles on the same surface point the other way (out of the material, into the void).
"""

from __future__ import annotations

import itertools
import logging
import sys
from pathlib import Path

import numpy as np

from softsim.meshes.errors import MeshError
from softsim.meshes.tetmesh import TetMesh, tet_signed_volumes

__all__ = [
    "FINGER_CABLE_POINTS",
    "PNEUNET_STIFF_LAYER_BOX",
    "balloon",
    "beam",
    "beam_level",
    "cube",
    "finger",
    "main",
    "pneunet",
    "trunk",
    "trunk_cable_points",
    "write_resources",
]

logger = logging.getLogger(__name__)

#: SoftRobots' Finger.py cable path (file order), mm.
FINGER_CABLE_POINTS = np.array(
    [[-17.5 - 15.0 * k, 12.5, 2.5] for k in range(5)]
    + [[-85.5, 12.5, 6.5], [-85.5, 12.5, 8.5], [-83.5, 12.5, 4.5], [-83.5, 12.5, 10.5]]
    + [[-77.5 + 15.0 * k, 12.5, 12.5] for k in range(5)]
)
#: SoftRobots' PneuNet stiff (strain-limiting) layer BoxROI, mm.
PNEUNET_STIFF_LAYER_BOX = np.array([-100.0, 22.5, -8.0, -19.0, 28.0, 8.0])

# Kuhn split: for each axis permutation, the path (0,0,0) -> +e_a -> +e_a+e_b -> (1,1,1) through the cell.
_KUHN_PATHS = np.array(
    [
        [
            [0, 0, 0],
            np.eye(3, dtype=int)[p[0]],
            np.eye(3, dtype=int)[p[0]] + np.eye(3, dtype=int)[p[1]],
            [1, 1, 1],
        ]
        for p in itertools.permutations(range(3))
    ],
    dtype=np.int64,
)  # (6 tets, 4 corners, 3 offsets)


def _orient(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    negative = tet_signed_volumes(points, tets) < 0.0
    tets[negative] = tets[negative][:, [0, 2, 1, 3]]
    return tets


def _compact(points: np.ndarray, tets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    used = np.zeros(len(points), dtype=bool)
    used[tets.reshape(-1)] = True
    new_index = np.cumsum(used) - 1
    return points[used], new_index[tets]


def _check_mirror_axes(axes, coordinates, label: str) -> tuple[int, ...]:
    """Validate ``mirror`` axes of a structured grid: even cell count, nodes symmetric about the mid-plane."""
    checked = []
    for axis in axes:
        if axis not in (0, 1, 2):
            raise MeshError(f"{label}: mirror axes must be in (0, 1, 2), got {axis}")
        nodes = coordinates[axis]
        cells = len(nodes) - 1
        if cells % 2:
            raise MeshError(
                f"{label}: mirroring axis {axis} needs an even number of cells along it, got {cells}"
            )
        span = float(nodes[-1] - nodes[0])
        if not np.allclose(nodes + nodes[::-1], nodes[0] + nodes[-1], rtol=0.0, atol=1e-12 * abs(span)):
            raise MeshError(f"{label}: nodes along mirrored axis {axis} are not symmetric about its mid-plane")
        checked.append(int(axis))
    return tuple(sorted(set(checked)))


def hex_grid_tets(xs, ys, zs, keep=None, mirror=()) -> tuple[np.ndarray, np.ndarray]:
    """Tetrahedra of a structured grid: 6 Kuhn tetrahedra per kept cell, reflected per half along ``mirror``.

    Along each axis in ``mirror``, cells in the upper half use the Kuhn split reflected across the cell's
    mid-plane (local offset ``o -> 1 - o`` on that axis), so the whole tetrahedralisation is the mirror
    image of itself about the grid's mid-plane. The split stays conforming: the diagonal of a face normal to
    axis ``a`` depends only on the reflection state of the two other axes, which the two cells sharing the
    face have in common.

    Parameters
    ----------
    xs, ys, zs : increasing node coordinates along each axis (lengths nx+1, ny+1, nz+1).
    keep : (nx, ny, nz) bool, cells to mesh (default all).
    mirror : axes (0, 1, 2) to mirror; each needs an even cell count and nodes symmetric about the middle.

    Returns
    -------
    points (n, 3) float64 (only the nodes used), tets (m, 4) int64 positively oriented.
    """
    xs, ys, zs = (np.asarray(v, dtype=np.float64) for v in (xs, ys, zs))
    shape = (len(xs) - 1, len(ys) - 1, len(zs) - 1)
    mirror = _check_mirror_axes(mirror, (xs, ys, zs), "hex_grid_tets")
    if keep is None:
        keep = np.ones(shape, dtype=bool)
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != shape:
        raise MeshError(f"hex_grid_tets: keep must have shape {shape}, got {keep.shape}")
    grid = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), axis=-1).reshape(-1, 3)
    cells = np.argwhere(keep)  # (c, 3) lower corner indices
    reflected = np.zeros(cells.shape, dtype=bool)
    for axis in mirror:
        reflected[:, axis] = cells[:, axis] >= shape[axis] // 2
    offsets = np.where(reflected[:, None, None, :], 1 - _KUHN_PATHS[None], _KUHN_PATHS[None])
    corners = cells[:, None, None, :] + offsets  # (c, 6, 4, 3)
    node = (corners[..., 0] * len(ys) + corners[..., 1]) * len(zs) + corners[..., 2]
    tets = _orient(grid, node.reshape(-1, 4).astype(np.int64))
    return _compact(grid, tets)


def _finish(points, tets, *, point_sets=None, cell_sets=None, triangle_sets=None, name: str) -> TetMesh:
    from softsim.meshes.validate import repair

    mesh = repair(
        points,
        tets,
        point_sets=point_sets,
        cell_sets=cell_sets,
        triangle_sets=triangle_sets,
        source=f"<generated {name}>",
    )
    if mesh.problems:
        raise MeshError(f"generated {name} mesh has problems: {mesh.problems}")
    return mesh


def _nodes_at(points: np.ndarray, axis: int, value: float) -> np.ndarray:
    span = float(np.ptp(points[:, axis])) or 1.0
    return np.flatnonzero(np.abs(points[:, axis] - value) <= 1e-9 * span)


def beam(
    length: float = 100.0, width: float = 10.0, height: float = 10.0, nx: int = 20, ny: int = 2, nz: int = 2
) -> TetMesh:
    """Box beam ``[0, length] x [0, width] x [0, height]`` with nx*ny*nz cells of 6 tetrahedra.

    The split is mirror-symmetric about ``y = width/2`` when ``ny`` is even and about ``z = height/2`` when
    ``nz`` is even. Point sets: ``fixed`` (x = 0), ``free_end`` (x = length).
    """
    for name, value in (("length", length), ("width", width), ("height", height)):
        if not np.isfinite(value) or value <= 0:
            raise MeshError(f"beam: {name} must be finite and > 0, got {value}")
    for name, value in (("nx", nx), ("ny", ny), ("nz", nz)):
        if int(value) != value or value < 1:
            raise MeshError(f"beam: {name} must be an integer >= 1, got {value}")
    points, tets = hex_grid_tets(
        np.linspace(0.0, length, int(nx) + 1),
        np.linspace(0.0, width, int(ny) + 1),
        np.linspace(0.0, height, int(nz) + 1),
        mirror=[axis for axis, cells in ((1, ny), (2, nz)) if int(cells) % 2 == 0],
    )
    return _finish(
        points,
        tets,
        point_sets={"fixed": _nodes_at(points, 0, 0.0), "free_end": _nodes_at(points, 0, length)},
        name="beam",
    )


def beam_level(
    level: int, *, length: float = 100.0, width: float = 10.0, height: float = 10.0, base=(10, 1, 1)
) -> TetMesh:
    """Refinement level ``level`` (>= 0) of a beam: the base cell counts multiplied by ``2**level``."""
    if int(level) != level or level < 0:
        raise MeshError(f"beam_level: level must be an integer >= 0, got {level}")
    factor = 2 ** int(level)
    return beam(length, width, height, base[0] * factor, base[1] * factor, base[2] * factor)


def cube(size: float = 20.0, n: int = 6) -> TetMesh:
    """Cube ``[0, size]^3`` with n cells per side (6 n^3 tetrahedra). Point sets ``bottom`` (y=0), ``top``.

    For even ``n`` the split is mirror-symmetric about the three mid-planes.
    """
    if not np.isfinite(size) or size <= 0:
        raise MeshError(f"cube: size must be finite and > 0, got {size}")
    if int(n) != n or n < 1:
        raise MeshError(f"cube: n must be an integer >= 1, got {n}")
    axis = np.linspace(0.0, size, int(n) + 1)
    points, tets = hex_grid_tets(axis, axis, axis, mirror=(0, 1, 2) if int(n) % 2 == 0 else ())
    return _finish(
        points,
        tets,
        point_sets={"bottom": _nodes_at(points, 1, 0.0), "top": _nodes_at(points, 1, size)},
        name="cube",
    )


def finger(length: float = 103.0, nx: int = 21, nz: int = 4) -> TetMesh:
    """The SoftRobots cable-driven finger: bar ``x in [-length, 0], y in [0, 15], z in [0, 15]``.

    ``nx`` cells along x, 3 cells along y (5 mm) and ``nz`` (even) cells along z (default 1512 tetrahedra).
    The tetrahedralisation is the mirror image of itself about ``z = 7.5``, the cable's plane of symmetry,
    so a symmetric cable pull bends the finger in the x-y plane without twisting it. The cable path
    :data:`FINGER_CABLE_POINTS` lies inside. Point sets: ``base`` (x = 0), ``tip`` (x = -length).
    """
    if not np.isfinite(length) or length <= 0:
        raise MeshError(f"finger: length must be finite and > 0, got {length}")
    if int(nx) != nx or nx < 1:
        raise MeshError(f"finger: nx must be an integer >= 1, got {nx}")
    if int(nz) != nz or nz < 2 or nz % 2:
        raise MeshError(f"finger: nz must be an even integer >= 2 (mirror symmetry about z = 7.5), got {nz}")
    points, tets = hex_grid_tets(
        np.linspace(-length, 0.0, int(nx) + 1),
        np.linspace(0.0, 15.0, 4),
        np.linspace(0.0, 15.0, int(nz) + 1),
        mirror=(2,),
    )
    return _finish(
        points,
        tets,
        point_sets={"base": _nodes_at(points, 0, 0.0), "tip": _nodes_at(points, 0, -length)},
        name="finger",
    )


def _disk_triangles(ring_sizes=(8, 16), ring_radii=(0.5, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """Unit-disk triangulation: a centre node and rings whose node counts double outward.

    Returns (p, 2) float64 coordinates and (t, 3) int64 counter-clockwise triangles.
    """
    coords = [np.zeros((1, 2))]
    starts = [0]
    count = 1
    for size, radius in zip(ring_sizes, ring_radii):
        angle = 2.0 * np.pi * np.arange(size) / size
        coords.append(radius * np.column_stack([np.cos(angle), np.sin(angle)]))
        starts.append(count)
        count += size
    first = np.arange(ring_sizes[0])
    triangles = [
        np.column_stack([np.zeros_like(first), starts[1] + first, starts[1] + (first + 1) % ring_sizes[0]])
    ]
    for ring in range(1, len(ring_sizes)):
        inner_n, outer_n = ring_sizes[ring - 1], ring_sizes[ring]
        if outer_n != 2 * inner_n:
            raise MeshError("disk rings must double their node count outward")
        i = np.arange(inner_n)
        inner, inner_next = starts[ring] + i, starts[ring] + (i + 1) % inner_n
        outer = starts[ring + 1] + 2 * i
        outer_mid, outer_next = starts[ring + 1] + 2 * i + 1, starts[ring + 1] + (2 * i + 2) % outer_n
        triangles += [
            np.column_stack([inner, outer, outer_mid]),
            np.column_stack([inner, outer_mid, inner_next]),
            np.column_stack([inner_next, outer_mid, outer_next]),
        ]
    return np.concatenate(coords), np.concatenate(triangles).astype(np.int64)


def _mirror_invariant_rank(coords2d: np.ndarray) -> np.ndarray:
    """Vertex rank of a disk triangulation, unchanged by the reflections x -> -x and y -> -y: ring radius
    first, then the angle folded into the first quadrant. Shape (p,) float64."""
    radius = np.round(np.hypot(coords2d[:, 0], coords2d[:, 1]), 12)
    folded_angle = np.round(np.arctan2(np.abs(coords2d[:, 1]), np.abs(coords2d[:, 0])), 12)
    return 4.0 * radius + folded_angle  # folded angle <= pi/2 < 4 * (smallest ring spacing = 0.5)


def _extrude(coords2d: np.ndarray, triangles: np.ndarray, zs: np.ndarray, radii: np.ndarray, rank=None):
    """Prisms over each triangle between consecutive layers, 3 tetrahedra each.

    The prism split follows a vertex order: ``rank`` (p,) (default: the vertex id). Any order that is strict
    on every triangle gives a conforming split; an order invariant under a symmetry of the 2D triangulation
    gives a split with the same symmetry.
    """
    n2d = len(coords2d)
    points = np.concatenate(
        [np.column_stack([radius * coords2d, np.full(n2d, z)]) for z, radius in zip(zs, radii)]
    )
    rank = np.arange(n2d, dtype=np.float64) if rank is None else np.asarray(rank, dtype=np.float64)
    triangle_ranks = rank[triangles]
    ordered = np.sort(triangle_ranks, axis=1)
    if np.any(ordered[:, 1:] == ordered[:, :-1]):
        raise MeshError("_extrude: the vertex rank must differ between the vertices of every triangle")
    a, b, c = np.take_along_axis(triangles, np.argsort(triangle_ranks, axis=1), axis=1).T
    layers = np.arange(len(zs) - 1)[:, None] * n2d
    a0, b0, c0 = (v[None, :] + layers for v in (a, b, c))
    a1, b1, c1 = a0 + n2d, b0 + n2d, c0 + n2d
    # Each quad side is cut from the bottom of its higher-ranked vertex to the top of the lower one.
    tets = np.stack(
        [np.stack(v, axis=-1) for v in ((a0, b0, c0, a1), (b0, c0, a1, b1), (c0, a1, b1, c1))], axis=2
    ).reshape(-1, 4)
    return points, _orient(points, tets.astype(np.int64))


def trunk(
    length: float = 195.0, base_radius: float = 13.0, tip_radius: float = 6.0, layer_ratio: float = 0.55
) -> TetMesh:
    """The SoftRobots trunk: a tapered cylinder along +z, ``z in [0, length]``.

    The cross-section is a 16-gon (inscribed in the radius) triangulated with rings of 1, 8 and 16 nodes;
    layer thickness grows with the local radius (``layer_ratio * r``), so elements keep their shape. The
    tetrahedralisation is mirror-symmetric about the planes x = 0 and y = 0 (those of the cables).
    Point sets: ``base`` (z = 0), ``tip`` (z = length).
    """
    if not 0 < tip_radius <= base_radius:
        raise MeshError(f"trunk: need 0 < tip_radius <= base_radius, got {tip_radius}, {base_radius}")
    coords2d, triangles = _disk_triangles()
    if tip_radius == base_radius:
        n_layers = max(1, round(length / (layer_ratio * base_radius)))
        radii = np.full(n_layers + 1, base_radius)
        zs = np.linspace(0.0, length, n_layers + 1)
    else:
        stretch = length / (base_radius - tip_radius) * np.log(base_radius / tip_radius) / layer_ratio
        n_layers = max(1, round(stretch))
        radii = base_radius * (tip_radius / base_radius) ** (np.arange(n_layers + 1) / n_layers)
        zs = (base_radius - radii) * length / (base_radius - tip_radius)
    points, tets = _extrude(coords2d, triangles, zs, radii, _mirror_invariant_rank(coords2d))
    return _finish(
        points,
        tets,
        point_sets={"base": _nodes_at(points, 2, 0.0), "tip": _nodes_at(points, 2, length)},
        name="trunk",
    )


def trunk_cable_points(cable: int) -> np.ndarray:
    """Points of SoftRobots' long trunk cable ``cableL<cable>`` (cable in 0..3): pull point, then 20 points.

    ``theta = 1.57 * cable`` about z; pair k sits at ``(dir.x, dir.y*17.5k + 10, dir.z*17.5k + 21)`` and 6 mm
    higher, with ``dir = normalize(0, 2 - 10, 195)``; the pull point is ``(0, 10, 0)`` rotated.
    """
    direction = np.array([0.0, 2.0 - 10.0, 195.0])
    direction /= np.linalg.norm(direction)
    local = [[0.0, 10.0, 0.0]]
    for k in range(10):
        y = direction[1] * 17.5 * k + 10.0
        z = direction[2] * 17.5 * k + 21.0
        local += [[direction[0], y, z], [direction[0], y, z + 6.0]]
    local = np.array(local)
    theta = 1.57 * cable
    rotation = np.array(
        [[np.cos(theta), -np.sin(theta), 0.0], [np.sin(theta), np.cos(theta), 0.0], [0, 0, 1.0]]
    )
    return local @ rotation.T


def _cavity_triangles(points: np.ndarray, tets: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Boundary faces lying on the closed union of ``boxes`` (the carved cavity), reversed so that their
    normals point out of the cavity volume."""
    from softsim.meshes.surface import boundary_triangles

    faces = boundary_triangles(tets, len(points))
    centroids = points[faces].mean(axis=1)
    tolerance = 1e-9 * float(np.ptp(points, axis=0).max())
    on_cavity = np.zeros(len(faces), dtype=bool)
    for box in boxes:
        on_cavity |= np.all((centroids >= box[:3] - tolerance) & (centroids <= box[3:] + tolerance), axis=1)
    return faces[on_cavity][:, ::-1].copy()


def _segments(start: float, pieces) -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    """Node coordinates from (length, cells, label) pieces, and (label, first cell, end cell) ranges."""
    nodes, ranges, cell = [start], [], 0
    for piece_length, cells, label in pieces:
        nodes += list(nodes[-1] + piece_length * np.arange(1, cells + 1) / cells)
        ranges.append((label, cell, cell + cells))
        cell += cells
    return np.array(nodes), ranges


def pneunet(n_chambers: int = 5) -> TetMesh:
    """PneuNets-style finger, ``x in [-115, 0], y in [0, 30], z in [-10, 10]``, mirror-symmetric about z = 0.

    Layout along y: bellows of ``n_chambers`` chambers (y in [0, 15], separated by external gaps y in [0, 9]),
    a connecting channel (y in [15, 18], z in [-3, 3]) joining every chamber into ONE closed cavity, and a
    solid strain-limiting plate (y in [18, 30]) that :data:`PNEUNET_STIFF_LAYER_BOX` selects by centroid.
    Chambers are 10 x 12 x 12 mm between 4 mm walls; with 5 chambers the channel is 98 mm long and the cavity
    volume is 5 * 1440 + 98 * 3 * 6 = 8964 mm^3 (SoftRobots' pneunetCavityCut: 8887.5). The z cells
    (4, 3, 3, 3, 3, 4 mm) are an even number so that the split can be mirrored about z = 0.

    Sets: triangle set ``cavity`` (normals out of the cavity volume), point set ``base`` (x = 0), cell set
    ``stiff_layer``.
    """
    if int(n_chambers) != n_chambers or not 1 <= n_chambers <= 5:
        raise MeshError(f"pneunet: n_chambers must be an integer in [1, 5], got {n_chambers}")
    pieces = [(4.0, 1, "cap")]
    for chamber in range(n_chambers):
        pieces += [(4.0, 1, "wall"), (10.0, 2, "chamber"), (4.0, 1, "wall")]
        if chamber < n_chambers - 1:
            pieces.append((4.0, 1, "gap"))
    bellows_end = -115.0 + sum(p[0] for p in pieces)
    pieces.append((-bellows_end, max(1, round(-bellows_end / 5.0)), "connector"))
    xs, x_ranges = _segments(-115.0, pieces)
    ys = np.array([0.0, 3.0, 9.0, 15.0, 18.0, 24.0, 30.0])
    zs = np.array([-10.0, -6.0, -3.0, 0.0, 3.0, 6.0, 10.0])
    keep = np.ones((len(xs) - 1, len(ys) - 1, len(zs) - 1), dtype=bool)
    chamber_ranges = [(lo, hi) for label, lo, hi in x_ranges if label == "chamber"]
    cavity_boxes = []
    for label, lo, hi in x_ranges:
        if label == "gap":
            keep[lo:hi, 0:2, :] = False
    for lo, hi in chamber_ranges:
        keep[lo:hi, 1:3, 1:5] = False
        cavity_boxes.append([xs[lo], ys[1], zs[1], xs[hi], ys[3], zs[5]])
    channel_lo, channel_hi = chamber_ranges[0][0], chamber_ranges[-1][1]
    keep[channel_lo:channel_hi, 3, 2:4] = False
    cavity_boxes.append([xs[channel_lo], ys[3], zs[2], xs[channel_hi], ys[4], zs[4]])
    points, tets = hex_grid_tets(xs, ys, zs, keep, mirror=(2,))
    from softsim.meshes.regions import tets_in_box

    return _finish(
        points,
        tets,
        point_sets={"base": _nodes_at(points, 0, 0.0)},
        cell_sets={"stiff_layer": tets_in_box(points, tets, PNEUNET_STIFF_LAYER_BOX)},
        triangle_sets={"cavity": _cavity_triangles(points, tets, np.array(cavity_boxes))},
        name="pneunet",
    )


def balloon(size: float = 30.0, n: int = 8, wall_cells: int = 2) -> TetMesh:
    """Hollow cube ``[-size/2, size/2]^3`` (n cells per side) with a closed cubic cavity ``wall_cells``
    cells in from each face. Default: 2688 tetrahedra, cavity 15^3 = 3375 mm^3. For even ``n`` the split is
    mirror-symmetric about the three mid-planes.

    Sets: triangle set ``cavity`` (normals out of the cavity volume), point set ``base`` (y = -size/2).
    """
    if int(n) != n or int(wall_cells) != wall_cells or not 1 <= wall_cells < n / 2:
        raise MeshError(f"balloon: need integers 1 <= wall_cells < n/2, got n={n}, wall_cells={wall_cells}")
    axis = np.linspace(-size / 2.0, size / 2.0, int(n) + 1)
    keep = np.ones((n, n, n), dtype=bool)
    inner = slice(wall_cells, n - wall_cells)
    keep[inner, inner, inner] = False
    mirror = (0, 1, 2) if int(n) % 2 == 0 else ()
    points, tets = hex_grid_tets(axis, axis, axis, keep, mirror=mirror)
    lo, hi = axis[wall_cells], axis[n - wall_cells]
    return _finish(
        points,
        tets,
        point_sets={"base": _nodes_at(points, 1, -size / 2.0)},
        triangle_sets={"cavity": _cavity_triangles(points, tets, np.array([[lo, lo, lo, hi, hi, hi]]))},
        name="balloon",
    )


def _write_surface_stl(path: Path, points: np.ndarray, triangles: np.ndarray) -> None:
    import meshio

    from softsim.meshes.files import atomic_path

    used, inverse = np.unique(triangles, return_inverse=True)
    surface = meshio.Mesh(points[used], [("triangle", inverse.reshape(-1, 3))])
    with atomic_path(path, make_parents=True) as temp_name:
        meshio.stl.write(temp_name, surface, binary=True)


def write_resources(out_dir) -> dict[str, TetMesh]:
    """Generate every shipped mesh into the folder ``out_dir`` (created if missing), keyed by file name. The
    repository's copies live in ``resources/meshes``; an installed package is never written to."""
    from softsim.meshes.io import write_mesh

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meshes = {
        "finger.vtu": finger(),
        "trunk.vtu": trunk(),
        "pneunet.vtu": pneunet(),
        "balloon.vtu": balloon(),
        "beam.vtu": beam(),
        "cube.vtu": cube(),
    }
    for file_name, mesh in meshes.items():
        write_mesh(out / file_name, mesh)
        logger.info("wrote %s: %d nodes, %d tets", out / file_name, mesh.n_points, mesh.n_tets)
    for name in ("pneunet", "balloon"):
        mesh = meshes[f"{name}.vtu"]
        _write_surface_stl(out / f"{name}_cavity.stl", mesh.points, mesh.triangle_sets["cavity"])
    return meshes


def main(argv: list[str] | None = None) -> int:
    """``python -m softsim.meshes.generate OUT_DIR``: write the shipped meshes into OUT_DIR (in the repository:
    ``resources/meshes``); prints one line per file."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: python -m softsim.meshes.generate OUT_DIR (e.g. resources/meshes)\n")
        return 2
    meshes = write_resources(argv[0])
    for file_name, mesh in meshes.items():
        sys.stdout.write(
            f"{file_name}: {mesh.n_points} nodes, {mesh.n_tets} tets, volume {mesh.volume:.2f}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
