"""softsim's mechanics: tetrahedral FEM, the static Newton solver, constraints and constraint solvers,
the dynamic (Compliant) integrator and scenes. Never imports Qt, VTK or pyvista.

>>> from mechanics import Scene
>>> scene = Scene.load("resources/scenes/finger.toml")      # doctest: +SKIP
>>> scene.set("body.finger.cable.cable.value", 5.0)        # doctest: +SKIP
>>> scene.step().ok                                        # doctest: +SKIP
True
"""

from mechanics.constraint_solvers import make_constraint_solver
from mechanics.errors import ParameterError
from mechanics.fem import TetElasticity
from mechanics.frame_step import FrameReport, solve_frame
from mechanics.newton import NewtonReport, StaticNewtonSolver
from mechanics.scene import SceneError, SceneSpec, load_scene
from mechanics.scene_runtime import Scene
from mechanics.simulation import Frame, Simulation
from mechanics.static_problem import StaticProblem

__all__ = [
    "Frame",
    "FrameReport",
    "NewtonReport",
    "ParameterError",
    "Scene",
    "SceneError",
    "SceneSpec",
    "Simulation",
    "StaticNewtonSolver",
    "StaticProblem",
    "TetElasticity",
    "make_constraint_solver",
    "load_scene",
    "solve_frame",
]
