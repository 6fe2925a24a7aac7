"""The recording stand-in for SofaPython3 (``Sofa``, ``Sofa.Core``, ``SofaRuntime``, ``Sofa.constants``) and the
prefab libraries SoftRobots' examples import (``stlib3``, ``splib3``, ``softrobots``).

:func:`stand_in` installs these modules in ``sys.modules`` for the duration of a ``with`` block and restores
whatever was there before (a real SOFA installation included); :func:`run_python_scene` runs a scene file's
``createScene(root)`` against them, with the scene's folder first on ``sys.path`` and as the working directory
(its relative mesh paths and its sibling modules, e.g. a controller, resolve as under ``runSofa``). A module of
these libraries that softsim does not provide raises an ImportError naming it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from softsim.app.sofa_import import numerics, prefabs
from softsim.app.sofa_import.graph import Component, Data, Node

__all__ = ["ImportFailure", "run_python_scene", "stand_in", "KEYS"]

#: the libraries the stand-in replaces: a module under them that it lacks is refused by name
_ROOTS = ("Sofa", "SofaRuntime", "SofaPython3", "splib3", "stlib3", "softrobots", "SofaTypes", "Sofa.Gui", "serial")


class SerialException(OSError):
    """pyserial's ``serial.SerialException``, standing in."""


class SerialPort:
    """pyserial's ``serial.Serial``, standing in (Tripod step 9's controllers open the robot's port with it):
    softsim talks to no hardware. A port opens nothing (as pyserial leaves a port given as None closed), reading
    gives no bytes, and writing or opening stops with a message naming the port."""

    def __init__(self, port=None, baudrate: int = 9600, *args: Any, timeout=None, **kwargs: Any) -> None:
        self.port, self.baudrate, self.timeout = port, baudrate, timeout
        self.is_open = False

    def open(self) -> None:
        raise SerialException(f"softsim drives no hardware: the serial port {self.port!r} is not opened")

    def readline(self, *args: Any) -> bytes:
        return b""

    def read(self, size: int = 1) -> bytes:
        return b""

    def write(self, data: Any) -> int:
        raise SerialException(f"softsim drives no hardware: nothing is sent to the serial port {self.port!r}")

    def close(self) -> None:
        self.is_open = False

#: Sofa.constants.Key (SofaPython3's key names -> the character a KeypressedEvent carries)
KEYS = {"plus": "+", "minus": "-", "space": " ", "leftarrow": chr(18), "uparrow": chr(19),
        "rightarrow": chr(20), "downarrow": chr(21), "pageup": chr(22), "pagedown": chr(23), "escape": chr(27),
        "enter": "\n", "tab": "\t", "backspace": chr(8), "delete": chr(127), "home": chr(1), "end": chr(2),
        "asterisk": "*", "slash": "/", "equal": "=", "period": ".", "comma": ",", "underscore": "_",
        **{chr(c): chr(c) for c in range(ord("A"), ord("Z") + 1)}, **{str(d): str(d) for d in range(10)}}


class ImportFailure(ValueError):
    """A SOFA scene the importer cannot read (the message names the file and why)."""


def _module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    module.__path__ = []  # a package, so that submodules import
    return module


def _messages(*args: Any, **kwargs: Any) -> None:
    """Sofa.msg_info / msg_warning / msg_error: ignored (the report says what matters)."""


def _build_modules() -> dict[str, types.ModuleType]:
    key = types.SimpleNamespace(**KEYS)
    constants = _module("Sofa.constants", Key=key)
    key_module = _module("Sofa.constants.Key", **KEYS)
    core = _module("Sofa.Core", Node=Node, Controller=prefabs.Controller, Prefab=prefabs.Prefab, Object=Component,
                   Base=Component, Data=Data, BaseObject=Component, DataEngine=prefabs.Controller,
                   ForceFieldVec3d=prefabs.Controller)
    simulation = _module("Sofa.Simulation", init=lambda node: None, animate=lambda node, dt=0.0: None,
                         reset=lambda node: None, unload=lambda node: None, initRoot=lambda node: None)
    sofa = _module("Sofa", Core=core, Simulation=simulation, constants=constants, Prefab=prefabs.Prefab,
                   Node=Node, msg_info=_messages, msg_warning=_messages, msg_error=_messages,
                   msg_deprecated=_messages, msg_fatal=_messages, Helper=types.SimpleNamespace(
                       msg_info=_messages, msg_warning=_messages, msg_error=_messages))
    runtime = _module("SofaRuntime", importPlugin=lambda name: None,
                      PluginRepository=types.SimpleNamespace(addFirstPath=lambda path: None),
                      DataRepository=types.SimpleNamespace(addFirstPath=lambda path: None),
                      getCategories=lambda name: [], init=lambda: None)
    numerics_module = _module("splib3.numerics", **{n: getattr(numerics, n) for n in numerics.__all__})
    numerics_module.__dict__.update(Vec3=numerics.Vec3, Quat=numerics.Quat)
    animation = _module("splib3.animation", animate=prefabs.animate, AnimationManager=prefabs.AnimationManager,
                        AnimationManagerController=prefabs.AnimationManagerController)
    objectmodel = _module("splib3.objectmodel", setData=prefabs.setData)
    loaders = _module("splib3.loaders", getLoadingLocation=prefabs.getLoadingLocation)
    splib_constants = _module("splib3.constants", Key=key)
    # the robot's serial link: softsim talks to no hardware, so no port is found (as splib3 answers without one)
    serialport = _module("splib3.interface.serialport", getDevicePort=lambda entry, method="manufacturer": None)
    interface = _module("splib3.interface", serialport=serialport)
    scene = _module("stlib3.scene", Scene=prefabs.Scene, MainHeader=prefabs.MainHeader,
                    ContactHeader=prefabs.ContactHeader)
    deformable = _module("stlib3.physics.deformable", ElasticMaterialObject=prefabs.ElasticMaterialObject)
    constraints = _module("stlib3.physics.constraints", FixedBox=prefabs.FixedBox)
    rigid = _module("stlib3.physics.rigid", RigidObject=prefabs.RigidObject, Cube=prefabs.Cube,
                    Sphere=prefabs.Sphere, Floor=prefabs.Floor)
    collision = _module("stlib3.physics.collision", CollisionMesh=prefabs.CollisionMesh)
    mixedmaterial = _module("stlib3.physics.mixedmaterial", Rigidify=prefabs.Rigidify)
    components = _module("stlib3.components", addOrientedBoxRoi=prefabs.addOrientedBoxRoi)
    visuals = _module("stlib3.visuals", VisualModel=prefabs.VisualModel)
    solver = _module("stlib3.solver", DefaultSolver=prefabs.DefaultSolver)
    actuators = _module("softrobots.actuators", PullingCable=prefabs.PullingCable,
                        PneumaticCavity=prefabs.PneumaticCavity)
    modules = {
        "Sofa": sofa, "Sofa.Core": core, "Sofa.Simulation": simulation, "Sofa.constants": constants,
        "Sofa.constants.Key": key_module, "SofaRuntime": runtime,
        "splib3": _module("splib3", numerics=numerics_module, animation=animation, objectmodel=objectmodel,
                          loaders=loaders, constants=splib_constants, interface=interface),
        "splib3.interface": interface, "splib3.interface.serialport": serialport,
        "splib3.numerics": numerics_module, "splib3.numerics.vec3": _module("splib3.numerics.vec3", **vars(
            numerics.vec3.__class__)), "splib3.numerics.quat": _module("splib3.numerics.quat", Quat=numerics.Quat),
        "splib3.animation": animation, "splib3.objectmodel": objectmodel, "splib3.loaders": loaders,
        "splib3.constants": splib_constants, "splib3.constants.Key": _module("splib3.constants.Key", **KEYS),
        "stlib3": _module("stlib3"), "stlib3.scene": scene, "stlib3.scene.contactheader": scene,
        "stlib3.scene.mainheader": scene, "stlib3.scene.scene": scene,
        "stlib3.physics": _module("stlib3.physics", deformable=deformable, constraints=constraints, rigid=rigid,
                                  collision=collision, mixedmaterial=mixedmaterial),
        "stlib3.physics.mixedmaterial": mixedmaterial,
        "stlib3.physics.mixedmaterial.rigidification": mixedmaterial, "stlib3.components": components,
        "stlib3.physics.deformable": deformable, "stlib3.physics.constraints": constraints,
        "stlib3.physics.rigid": rigid, "stlib3.physics.collision": collision, "stlib3.visuals": visuals,
        "stlib3.solver": solver,
        "softrobots": _module("softrobots", actuators=actuators), "softrobots.actuators": actuators,
        # pyserial, which Tripod step 9's controllers import to talk to the robot: no hardware is driven
        "serial": _module("serial", Serial=SerialPort, SerialException=SerialException),
    }
    # the vec3 module's functions are plain functions (staticmethods unwrapped)
    modules["splib3.numerics.vec3"] = _module("splib3.numerics.vec3", **{
        name: getattr(numerics.vec3, name) for name in dir(numerics.vec3) if not name.startswith("_")})
    numerics_module.vec3 = modules["splib3.numerics.vec3"]
    numerics_module.quat = modules["splib3.numerics.quat"]
    return modules


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses, by name, a module of the stood-in libraries that the stand-in does not provide."""

    def __init__(self, provided: dict[str, types.ModuleType]) -> None:
        self.provided = provided

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.provided:
            return importlib.machinery.ModuleSpec(fullname, _Loader(self.provided[fullname]), is_package=True)
        if fullname.split(".")[0] in {root.split(".")[0] for root in _ROOTS}:
            raise ImportError(f"softsim's SOFA importer does not provide the module {fullname!r} (it provides: "
                              f"{', '.join(sorted(n for n in self.provided if '.' not in n))} and the submodules "
                              f"docs/sofa-import.md lists)", name=fullname)
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        pass


@contextlib.contextmanager
def stand_in(folder: Path | None = None) -> Iterator[dict[str, types.ModuleType]]:
    """Install the stand-in modules (and ``folder`` first on ``sys.path`` and as the working directory) for
    the block; everything is restored afterwards. With a ``folder`` (a scene file runs) the modules the block
    imported (the scene's own, e.g. its controller module) are removed too; without one (a controller's event,
    while other threads may import) only the stood-in libraries' modules are."""
    modules = _build_modules()
    saved_modules = dict(sys.modules)
    saved_path = list(sys.path)
    saved_cwd = os.getcwd()
    finder = _Refuse(modules)
    for name in [n for n in sys.modules if n.split(".")[0] in {r.split(".")[0] for r in _ROOTS}]:
        del sys.modules[name]
    sys.modules.update(modules)
    sys.meta_path.insert(0, finder)
    prefabs.ANIMATIONS.clear()
    try:
        if folder is not None:
            sys.path.insert(0, str(folder))
            os.chdir(folder)
        yield modules
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        roots = {r.split(".")[0] for r in _ROOTS}
        for name in list(sys.modules):
            if name not in saved_modules and (folder is not None or name.split(".")[0] in roots):
                del sys.modules[name]
        sys.modules.update({n: m for n, m in saved_modules.items()
                            if folder is not None or n.split(".")[0] in roots})


def run_python_scene(path: Path) -> tuple[Node, dict[str, Any]]:
    """Run ``createScene(root)`` of the Python scene ``path`` against the stand-in (see :func:`stand_in`);
    returns the recorded root node and the file's module namespace.

    Raises:
        ImportFailure: the file has no createScene, or running it raised (the message names the file, the
            exception and the scene's line).
    """
    path = Path(path).resolve()
    root = Node("root")
    with stand_in(path.parent):
        try:
            namespace = runpy.run_path(str(path), run_name="__sofa_scene__")
        except ImportError as error:
            raise ImportFailure(f"{path.name}: {error}") from None
        except Exception as error:
            raise ImportFailure(f"{path.name}: running the scene file failed: {type(error).__name__}: {error}"
                                f"{_where(error, path)}") from None
        create = namespace.get("createScene")
        if not callable(create):
            raise ImportFailure(f"{path.name}: no createScene(rootNode) function; a SofaPython3 scene defines one")
        try:
            create(root)
        except ImportError as error:
            raise ImportFailure(f"{path.name}: createScene: {error}") from None
        except Exception as error:
            raise ImportFailure(f"{path.name}: createScene failed: {type(error).__name__}: {error}"
                                f"{_where(error, path)}") from None
        root.animations = list(prefabs.ANIMATIONS)
    return root, namespace


def _where(error: BaseException, path: Path) -> str:
    """`` (file.py line N)`` of the deepest frame of the traceback in the scene's folder."""
    frame = None
    traceback = error.__traceback__
    while traceback is not None:
        if Path(traceback.tb_frame.f_code.co_filename).parent == path.parent:
            frame = traceback
        traceback = traceback.tb_next
    if frame is None:
        return ""
    return f" ({Path(frame.tb_frame.f_code.co_filename).name} line {frame.tb_lineno})"
