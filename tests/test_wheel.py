"""The installed package: a wheel built from the repository holds one top-level package, ``softsim``, and a
non-editable install of it runs a shipped scene with nothing from the source tree.

The wheel is built as pip builds it (an isolated build environment with the setuptools pyproject.toml asks
for). The fresh venv gets the wheel without its dependencies; the dependencies come from the
test's own environment through a path entry, which adds their folder to ``sys.path`` without running the
``.pth`` files in it, so the development install of softsim stays invisible.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # build from a copy of the tracked sources: setuptools writes build/ and *.egg-info next to the sources
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in files.splitlines():
        source = ROOT / name
        if source.is_file():
            target = build / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                             "-w", str(out), str(build)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("softsim-*.whl")
    return wheel


def test_the_wheel_installs_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"softsim", next(t for t in top if t.endswith(".dist-info"))}
    assert "softsim/mechanics/frame_step.py" in names and "softsim/app/cli.py" in names
    assert "softsim/resources/scenes/finger.toml" in names and "softsim/resources/meshes/finger.vtu" in names
    assert not any(name.startswith("softsim/resources/screenshots") for name in names)
    assert not any(name.startswith(("tests/", "softsim/tests/", "benchmarks/")) for name in names)


def test_a_non_editable_install_runs_a_shipped_scene(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import softsim, softsim.mechanics as m; "
                            "print(softsim.__version__); print(m.__file__)"],
                           capture_output=True, text=True, cwd=work, env=environment, timeout=300)
    assert where.returncode == 0, where.stderr
    version, location = where.stdout.split()
    assert version == "0.1.0" and Path(location).is_relative_to(venv)
    scene = Path(purelib) / "softsim" / "resources" / "scenes" / "finger.toml"
    run = subprocess.run([str(venv / "bin" / "softsim"), "run", str(scene), "--frames", "2", "--out", "out",
                          "--no-vtu"], capture_output=True, text=True, cwd=work, env=environment, timeout=600)
    assert run.returncode == 0, run.stderr
    with open(work / "out" / "frames.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["frame"] for row in rows] == ["1", "2"]
    for name in ("app", "mechanics", "meshes", "resources"):  # nothing of the repository's top level
        probe = subprocess.run([str(python), "-c", f"import {name}"], capture_output=True, text=True, cwd=work,
                               env=environment, timeout=120)
        assert probe.returncode != 0, f"import {name} should fail outside the repository"
