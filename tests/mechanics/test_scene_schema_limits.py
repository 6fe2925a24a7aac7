"""Limits of the scene format: files refused before reading, nesting, iteration counts, Young's moduli
beyond float64, and --set values with text after them."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.materials import lame
from softsim.mechanics.scene import SceneError, load_scene, parse_scene, set_value

from .test_scene_schema import MINIMAL_BODY, errors_of

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX devices and named pipes")


@posix_only
def test_a_scene_that_is_a_device_a_pipe_or_a_directory_is_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(SceneError, match=r"^zero: cannot read the scene file /dev/zero: it is a character device, "
                                         r"not a regular file$"):
        load_scene("/dev/zero")
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(SceneError, match=r"pipe.toml: .* it is a named pipe \(FIFO\), not a regular file"):
        load_scene(fifo)
    with pytest.raises(SceneError, match=r"it is a directory, not a file"):
        load_scene(tmp_path)


def test_a_scene_file_over_16_mib_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    with open(path, "wb") as stream:
        stream.truncate(16 * 1024**2 + 1)
    with pytest.raises(SceneError, match=r"big.toml: .* it is 16.0 MiB, larger than the 16.0 MiB softsim reads "
                                         r"for a scene file"):
        load_scene(path)


@posix_only
def test_a_mesh_key_naming_a_device_says_so(tmp_path: Path) -> None:
    errors = errors_of(MINIMAL_BODY.replace('"finger.vtu"', '"/dev/zero"'), tmp_path, mesh=False)
    assert errors == ["finger.toml: body[0].mesh: not a regular file: /dev/zero (a character device)"]


@pytest.mark.parametrize("text", ["a = " + "{b = " * 5000 + "1" + "}" * 5000, "a = " + "[" * 5000 + "]" * 5000])
def test_tables_nested_5000_deep_are_a_scene_error_naming_the_file(tmp_path: Path, text: str) -> None:
    assert errors_of(text, tmp_path) == [
        "finger.toml: tables or arrays nested too deeply to read (a scene nests a few levels)"]


@pytest.mark.parametrize(("table", "key", "value", "expected"), [
    ("solver.newton", "load_steps", 1000000000, "1000000000 is outside [1, 1000]"),
    ("solver.newton", "newton_iterations", 1001, "1001 is outside [1, 1000]"),
    ("solver.linear", "maximum_number_of_iterations", 1000000000000, "1000000000000 is outside [1, 100000]"),
    ("solver.constraint", "maxIterations", 10000001, "10000001 is outside [1, 10000000]"),
])
def test_every_iteration_count_has_an_upper_bound(tmp_path: Path, table, key, value, expected) -> None:
    assert errors_of(MINIMAL_BODY + f"[{table}]\n{key} = {value}\n", tmp_path) == [
        f"finger.toml: {table}.{key}: {expected}"]
    spec = parse_scene(MINIMAL_BODY, check_files=False)
    with pytest.raises(SceneError, match=rf"{table}.{key}: {expected.replace('[', '.').replace(']', '.')}"):
        set_value(spec, f"{table}.{key}", str(value))


@pytest.mark.parametrize("young", ["1e-300", "1e-31", "1e31", "1e300"])
def test_a_young_modulus_beyond_float_range_is_refused(tmp_path: Path, young: str) -> None:
    text = MINIMAL_BODY.replace("youngModulus = 600.0", f"youngModulus = {young}")
    assert errors_of(text, tmp_path) == [
        f"finger.toml: body[0].material.youngModulus: {float(young)!r} is outside [1e-30, 1e+30]"]
    region = MINIMAL_BODY + f"[[body.material.region]]\nbox = [0, 0, 0, 1, 1, 1]\nyoungModulus = {young}\n"
    assert errors_of(region, tmp_path)[0].startswith("finger.toml: body[0].material.region[0].youngModulus: ")
    with pytest.raises(ParameterError, match=r"youngModulus .* is outside \[1e-30, 1e\+30\]: the stiffness and the "
                                             r"forces would under- or overflow"):
        lame(float(young), 0.3)
    assert lame(1e-30, 0.3)[0] > 0.0 and lame(1e30, 0.3)[0] < 1e30


@pytest.mark.parametrize(("text", "expected"), [
    ("5\n[x]\ny=1", r"'5\\n\[x\]\\ny=1' is one value followed by more text; give the value alone"),
    ("5\nother = 2", r"'5\\nother = 2' is one value followed by more text"),
    ("[" * 5000 + "]" * 5000, "arrays nested too deeply to read"),
])
def test_a_set_value_with_text_after_it_is_refused(text: str, expected: str) -> None:
    spec = parse_scene(MINIMAL_BODY, check_files=False)
    before = copy.deepcopy(spec)
    with pytest.raises(SceneError, match=rf"^<string>: solver.newton.newton_iterations: {expected}"):
        set_value(spec, "solver.newton.newton_iterations", text)
    assert spec == before
    set_value(spec, "solver.newton.newton_iterations", "5  ")
    assert spec.solver.newton.newton_iterations == 5
