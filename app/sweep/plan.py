"""The samples of a sweep: a full grid of ``--vary KEY=SPEC`` values, or the rows of a CSV.

SPEC is ``start:stop:num`` (``num`` evenly spaced values, both ends included) or a comma list ``1,2,5``
(numbers, or any TOML values: ``true``, ``"ImprovedJacobi"``). Every key and every value is checked against the
scene (set on a copy of its spec, with the loader's message) before any work is sent.
"""

from __future__ import annotations

import copy
import csv
import io
import itertools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Sample", "SweepError", "parse_spec", "parse_vary", "parse_varies", "grid", "read_samples", "check_samples",
           "MAX_SAMPLES", "MAX_SAMPLES_FILE_BYTES"]

#: the largest number of samples of one sweep (a typo such as 0:1:1e9 must not fill the memory)
MAX_SAMPLES = 1_000_000
#: the largest samples file read [bytes]: 256 MiB, room for MAX_SAMPLES rows of a few values each
MAX_SAMPLES_FILE_BYTES = 256 * 1024**2


class SweepError(ValueError):
    """Invalid sweep input: a key, a SPEC, an empty grid, a samples file, an output directory."""


@dataclass(frozen=True)
class Sample:
    """One run: its ``id`` (0, 1, ... in grid or file order) and its values by key path."""

    id: int
    values: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


def _value(text: str) -> Any:
    """One TOML value (``2.5``, ``true``, ``"name"``); a bare word is a string."""
    text = text.strip()
    try:
        data = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        if text and all(c.isalnum() or c in "_-." for c in text):
            return text
        raise SweepError(f"cannot read the value {_abridged(text)}: give one number, true/false or a quoted "
                         "string") from None
    except ValueError:  # an integer longer than Python converts
        raise SweepError(f"a number of {sum(c.isdigit() for c in text)} digits, far more than any scene value "
                         "needs; write it with an exponent (e.g. 1e30)") from None
    except RecursionError:
        raise SweepError("arrays nested too deeply to read") from None
    if list(data) != ["v"]:
        raise SweepError(f"{_abridged(text)} is one value followed by more text; give the value alone")
    return data["v"]


def parse_spec(spec: str) -> list[Any]:
    """``"1:5:3"`` -> [1.0, 3.0, 5.0]; ``"1,2,5"`` -> [1, 2, 5]; SweepError naming the SPEC otherwise."""
    spec = spec.strip()
    if not spec:
        raise SweepError("empty SPEC: give start:stop:num or a comma list")
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise SweepError(f"SPEC {_abridged(spec)}: start:stop:num has three parts")
        try:
            start, stop, num = float(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            raise SweepError(f"SPEC {_abridged(spec)}: start, stop and num must be numbers") from None
        if not (math.isfinite(start) and math.isfinite(stop)):
            raise SweepError(f"SPEC {_abridged(spec)}: start and stop must be finite")
        if not math.isfinite(num) or num != int(num) or num < 1 or num > MAX_SAMPLES:
            raise SweepError(f"SPEC {_abridged(spec)}: num must be a whole number in [1, {MAX_SAMPLES}]")
        num = int(num)
        if num == 1:
            return [start]
        return [start + (stop - start) * i / (num - 1) for i in range(num)]
    items = spec.split(",")
    if any(not item.strip() for item in items):
        raise SweepError(f"SPEC {_abridged(spec)}: an empty item in the comma list")
    try:
        return [_value(item) for item in items]
    except SweepError as error:
        raise SweepError(f"SPEC {_abridged(spec)}: {error}") from None


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """``"KEY=SPEC"`` -> (KEY, values)."""
    key, sep, spec = text.partition("=")
    if not sep or not key.strip():
        raise SweepError(f"--vary expects KEY=SPEC (e.g. body.finger.material.youngModulus=400:800:3), got "
                         f"{_abridged(text)}")
    try:
        return key.strip(), parse_spec(spec)
    except SweepError as error:
        raise SweepError(f"--vary {key.strip()}: {error}") from None


def _abridged(text: str, limit: int = 60) -> str:
    """``repr(text)``, its middle left out when longer than ``limit`` characters."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit // 2]) + f" ... ({len(text)} characters) ... " + repr(text[-10:])


def parse_varies(texts: list[str]) -> dict[str, list[Any]]:
    """Every ``--vary KEY=SPEC`` -> {KEY: values}; SweepError for a key given twice (its values would be
    replaced silently by the last)."""
    vary: dict[str, list[Any]] = {}
    for text in texts:
        key, values = parse_vary(text)
        if key in vary:
            raise SweepError(f"--vary {key} is given twice; give all its values in one --vary (e.g. "
                             f"{key}=1,2,3,4), or vary two different keys")
        vary[key] = values
    return vary


def grid(vary: dict[str, list[Any]]) -> list[Sample]:
    """The full grid, the first key varying slowest; SweepError when it is empty or too large."""
    if not vary:
        raise SweepError("nothing to vary: give --vary KEY=SPEC or --samples FILE.csv")
    sizes = [len(values) for values in vary.values()]
    total = math.prod(sizes)
    if total == 0:
        raise SweepError("the grid is empty")
    if total > MAX_SAMPLES:
        raise SweepError(f"the grid has {total} samples, more than {MAX_SAMPLES}")
    keys = list(vary)
    return [Sample(i, tuple(zip(keys, combo, strict=True)))
            for i, combo in enumerate(itertools.product(*vary.values()))]


def read_samples(path: str | Path) -> list[Sample]:
    """The rows of a CSV whose header names key paths, each once (each cell one TOML value).

    Only a regular file of at most :data:`MAX_SAMPLES_FILE_BYTES` is read (not a directory, a device such as
    ``/dev/zero`` or a named pipe), as UTF-8 with or without a byte-order mark."""
    from softsim.meshes.files import InputFileError, read_input_bytes

    path = Path(path)
    try:
        text = read_input_bytes(path, max_bytes=MAX_SAMPLES_FILE_BYTES, what="samples").decode("utf-8-sig")
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except InputFileError as error:
        raise SweepError(f"--samples {path}: {error.reason}") from None
    except UnicodeDecodeError as error:
        raise SweepError(f"--samples {path}: not UTF-8 text (byte {error.start}: {error.reason}); save it as "
                         "UTF-8 CSV") from None
    except csv.Error as error:
        raise SweepError(f"--samples {path}: not a CSV file ({error})") from None
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise SweepError(f"--samples {path}: no header of key paths")
    header = [cell.strip() for cell in rows[0]]
    twice = sorted({key for key in header if header.count(key) > 1})
    if twice:
        raise SweepError(f"--samples {path}: the header names {', '.join(repr(k) for k in twice)} twice; give each "
                         "key path one column")
    if "" in header:
        raise SweepError(f"--samples {path}: column {header.index('') + 1} of the header is empty; give its key "
                         "path")
    body = [row for row in rows[1:] if any(cell.strip() for cell in row)]
    if not body:
        raise SweepError(f"--samples {path}: the grid is empty (no rows)")
    if len(body) > MAX_SAMPLES:
        raise SweepError(f"--samples {path}: {len(body)} rows, more than {MAX_SAMPLES}")
    samples = []
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise SweepError(f"--samples {path}: line {number} has {len(row)} cells, the header {len(header)}")
        values = []
        for key, cell in zip(header, row, strict=True):
            try:
                values.append((key, _value(cell)))
            except SweepError as error:
                raise SweepError(f"--samples {path}: line {number}, column {key}: {error}") from None
        values = tuple(values)
        samples.append(Sample(len(samples), values))
    return samples


def check_samples(spec, sets: list[tuple[str, str]], samples: list[Sample]) -> None:
    """Set ``--set``, then each distinct (key, value) of the samples, on copies of ``spec`` (the scene file's
    rules): SweepError naming the key, the value and the first sample that has it, for the first refused."""
    from softsim.mechanics.scene import SceneError, set_value

    base = copy.deepcopy(spec)
    for key, value in sets:
        try:
            set_value(base, key, value)
        except SceneError as error:
            raise SweepError(f"--set {key}: {error}") from None
    checked: set[tuple[str, str]] = set()
    for sample in samples:
        for key, value in sample.values:
            if (key, repr(value)) in checked:
                continue
            checked.add((key, repr(value)))
            try:
                set_value(copy.deepcopy(base), key, value)
            except SceneError as error:
                raise SweepError(f"sample {sample.id}: {key} = {value!r}: {error}") from None
