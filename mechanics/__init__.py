"""softsim's mechanics: tetrahedral FEM, the static Newton solver, constraints and constraint solvers,
the dynamic (Compliant) integrator and scenes. Never imports Qt, VTK or pyvista.

>>> from softsim.mechanics import Scene
>>> scene = Scene.load("resources/scenes/finger.toml")      # doctest: +SKIP
>>> scene.set("body.finger.cable.cable.value", 5.0)        # doctest: +SKIP
>>> scene.step().ok                                        # doctest: +SKIP
True
"""

from softsim.mechanics.constraint_solvers import make_constraint_solver
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.fem import TetElasticity
from softsim.mechanics.frame_report import FrameReport
from softsim.mechanics.frame_step import solve_frame
from softsim.mechanics.newton import NewtonReport, StaticNewtonSolver
from softsim.mechanics.scene import SceneError, SceneSpec, load_scene
from softsim.mechanics.scene_runtime import Scene
from softsim.mechanics.simulation import Frame, Simulation
from softsim.mechanics.static_problem import StaticProblem

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
