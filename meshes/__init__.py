"""Tetrahedral meshes: loading (meshio), validation and repair, surfaces, regions, quality, generators.

Never imports Qt, VTK, pyvista or ``app``. See ARCHITECTURE.md for the contract.
"""

from softsim.meshes import generate, info, quality, regions, surface, validate  # noqa: E402  (submodules as attributes)
from softsim.meshes.errors import MeshError
from softsim.meshes.io import SURFACE_EXTENSIONS, TET_EXTENSIONS, load, load_surface, write_mesh, write_pvd, write_vtu
from softsim.meshes.regions import in_box, in_halfspace, in_sphere, select_nodes, tets_in_box
from softsim.meshes.surface import boundary_triangles, enclosed_volume, is_closed
from softsim.meshes.tetmesh import TetMesh, TriangleSurface

__all__ = [
    "SURFACE_EXTENSIONS",
    "TET_EXTENSIONS",
    "MeshError",
    "TetMesh",
    "TriangleSurface",
    "boundary_triangles",
    "enclosed_volume",
    "in_box",
    "in_halfspace",
    "in_sphere",
    "is_closed",
    "load",
    "load_surface",
    "select_nodes",
    "tets_in_box",
    "write_mesh",
    "write_pvd",
    "write_vtu",
    "generate",
    "info",
    "quality",
    "regions",
    "surface",
    "validate",
]
