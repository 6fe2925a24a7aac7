"""The scene file format as a validated data layer: TOML -> typed dataclasses -> TOML (every key is declared
once in mechanics/scene/schema.py; docs/scene-format.md lists them).

``load_scene``/``parse_scene`` read and validate (every problem in one :class:`SceneError`);
``get_value``/``set_value``/``set_values``/``list_parameters`` address values by key path for live editing;
``dump_scene``/``save_scene`` write the scene back (into the file's own document, comments kept).
Turning a ``SceneSpec`` into bodies, constraints and solvers is not done here.
"""

from softsim.mechanics.scene.edit import (
    actuators,
    get_value,
    list_parameters,
    set_value,
    set_values,
    undo_point,
    validate_spec,
)
from softsim.mechanics.scene.load import load_scene, parse_data, parse_scene
from softsim.mechanics.scene.save import dump_scene, save_scene, to_data
from softsim.mechanics.scene.schema import (
    BodySpec,
    CableSpec,
    CavitySpec,
    ConstraintSpec,
    DragSpec,
    DynamicSpec,
    EffectorSpec,
    ForceSpec,
    HalfspaceSpec,
    LinearSpec,
    MaterialRegionSpec,
    MaterialSpec,
    NewtonSpec,
    ObstacleSpec,
    RegionSpec,
    SceneError,
    SceneSettings,
    SceneSpec,
    SolverSpec,
    SphereSpec,
)

__all__ = [
    "BodySpec",
    "CableSpec",
    "CavitySpec",
    "ConstraintSpec",
    "DragSpec",
    "DynamicSpec",
    "EffectorSpec",
    "ForceSpec",
    "HalfspaceSpec",
    "LinearSpec",
    "MaterialRegionSpec",
    "MaterialSpec",
    "NewtonSpec",
    "ObstacleSpec",
    "RegionSpec",
    "SceneError",
    "SceneSettings",
    "SceneSpec",
    "SolverSpec",
    "SphereSpec",
    "actuators",
    "dump_scene",
    "get_value",
    "list_parameters",
    "load_scene",
    "parse_data",
    "parse_scene",
    "save_scene",
    "set_value",
    "set_values",
    "to_data",
    "undo_point",
    "validate_spec",
]
