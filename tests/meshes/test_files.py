"""meshes.files: input files refused before reading (not regular, too large), atomic writes that keep the
mode, write through a symbolic link and leave nothing behind when they fail."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from softsim import meshes
from softsim.meshes.errors import MeshError
from softsim.meshes.files import (
    MAX_MESH_FILE_BYTES,
    InputFileError,
    atomic_path,
    check_input_file,
    read_input_bytes,
    temporary_target,
    write_text_atomically,
)

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types and modes")


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@posix_only
def test_a_device_a_directory_and_a_missing_file_are_refused_with_what_they_are(tmp_path):
    with pytest.raises(InputFileError, match=r"^/dev/zero: is a character device, not a regular file$"):
        read_input_bytes("/dev/zero", max_bytes=100)
    with pytest.raises(InputFileError, match=r": is a directory, not a file$"):
        check_input_file(tmp_path, max_bytes=100)
    with pytest.raises(InputFileError, match=r"absent.toml: file not found$"):
        check_input_file(tmp_path / "absent.toml", max_bytes=100)


@posix_only
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_input_bytes(fifo, max_bytes=100)
        except InputFileError as error:
            outcome.append(error)

    reader = threading.Thread(target=read, daemon=True)  # a blocking open would hang the thread, not the test
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert str(outcome[0]).endswith("is a named pipe (FIFO), not a regular file")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.toml"
    with open(path, "wb") as stream:
        stream.truncate(17 * 1024**2)  # sparse: no disk space used
    with pytest.raises(InputFileError, match=r"is 17.0 MiB, larger than the 16.0 MiB softsim reads for a scene file"):
        read_input_bytes(path, max_bytes=16 * 1024**2, what="scene")
    assert read_input_bytes(path, max_bytes=17 * 1024**2)[:4] == b"\0\0\0\0"


def test_a_sparse_two_gib_mesh_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.vtu"
    with open(path, "wb") as stream:
        stream.truncate(2 * 1024**3)
    assert os.path.getsize(path) > MAX_MESH_FILE_BYTES
    started = time.perf_counter()
    with pytest.raises(MeshError, match=r"huge.vtu: is 2.0 GiB, larger than the 1.0 GiB softsim reads for a mesh file"):
        meshes.load(path)
    with pytest.raises(MeshError, match=r"larger than the 1.0 GiB"):
        meshes.load_surface(path)
    assert time.perf_counter() - started < 5.0


@posix_only
def test_meshes_refuse_a_device(tmp_path):
    link = tmp_path / "zero.vtu"
    link.symlink_to("/dev/zero")
    with pytest.raises(MeshError, match=r"zero.vtu: is a character device, not a regular file"):
        meshes.load(link)


@posix_only
def test_overwriting_keeps_the_mode_and_a_new_file_follows_the_umask(tmp_path):
    path = tmp_path / "scene.toml"
    path.write_text("old\n")
    os.chmod(path, 0o664)
    write_text_atomically(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o664
    os.chmod(path, 0o600)
    write_text_atomically(path, "newer\n", durable=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    previous = os.umask(0o027)
    try:
        write_text_atomically(tmp_path / "fresh.toml", "x\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "fresh.toml").stat().st_mode) == 0o640
    assert listing(tmp_path) == ["fresh.toml", "scene.toml"]


@posix_only
def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "scene.toml"
    target.write_text("old\n")
    os.chmod(target, 0o664)
    link = tmp_path / "current.toml"
    link.symlink_to(Path("real") / "scene.toml")
    write_text_atomically(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "scene.toml")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o664
    assert listing(tmp_path) == ["current.toml", "real"] and listing(tmp_path / "real") == ["scene.toml"]
    dangling = tmp_path / "later.toml"
    dangling.symlink_to("real/created.toml")
    write_text_atomically(dangling, "created\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "created.toml").read_text() == "created\n"


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_text("a\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(path) as temporary:
            Path(temporary).write_text("partial")
            assert temporary_target(Path(temporary).name) == "frames.csv"
            raise KeyboardInterrupt
    assert path.read_text() == "a\n" and listing(tmp_path) == ["frames.csv"]


@posix_only
def test_a_device_is_never_replaced(tmp_path):
    link = tmp_path / "out.toml"
    link.symlink_to("/dev/null")
    with pytest.raises(OSError, match="cannot be replaced: it is a character device"):
        write_text_atomically(link, "x")
    assert link.is_symlink() and listing(tmp_path) == ["out.toml"]


def test_temporary_names_are_recognised():
    assert temporary_target(".frame_0003.vtu.k2_9ab0x.tmp") == "frame_0003.vtu"
    assert temporary_target(".frames.csv.abcdefgh.tmp") == "frames.csv"
    assert temporary_target("frames.csv") is None
    assert temporary_target(".frames.csv.tmp") is None
