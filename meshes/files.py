"""Files from users and files for users: bounded reading of input files, atomic writing of output files.

Shared by ``meshes``, ``mechanics`` (scene files) and ``app`` (run outputs, settings); imports nothing but the
standard library.

Reading: :func:`check_input_file` and :func:`read_input_bytes` accept only a regular file (not a directory,
a device such as ``/dev/zero``, a named pipe or a socket) no larger than a limit, checked before anything is
read: :data:`MAX_SCENE_FILE_BYTES` for scene files, :data:`MAX_MESH_FILE_BYTES` for meshes and surfaces.

Writing: :func:`atomic_path` and :func:`write_text_atomically` write a temporary file in the destination's
directory and rename it over the destination (``os.replace``), so that a reader sees the old file or the new
one, never a part. The new file keeps the mode (and, where allowed, the owner) of the file it replaces; a new
file gets the mode ``open`` would give it (0666 minus the umask). A destination that is a symbolic link is
written through: its target is replaced, the link stays. Temporary files are named
``.NAME.XXXXXXXX.tmp`` (:func:`temporary_target`); one left behind by a killed process is recognised by that
name, and the next write of the same file removes it (its writer held a lock on it while it lived).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "MAX_MESH_FILE_BYTES",
    "MAX_SCENE_FILE_BYTES",
    "InputFileError",
    "atomic_path",
    "check_input_file",
    "format_size",
    "read_input_bytes",
    "reason",
    "temporary_target",
    "write_text_atomically",
]

#: the largest scene (TOML) file read [bytes]: 16 MiB, some thousand times the size of a hand-written scene
MAX_SCENE_FILE_BYTES = 16 * 1024**2
#: the largest mesh or surface file read [bytes]: 1 GiB, several million tetrahedra in any format meshio
#: reads (reading one takes about as much memory again)
MAX_MESH_FILE_BYTES = 1024**3

_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp$")


class InputFileError(ValueError):
    """An input file that is refused before it is read; ``reason`` says why without the path."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def reason(error: BaseException) -> str:
    """What went wrong in an OSError, without Python's ``[Errno N]`` and the path (the caller names the file):
    ``"No space left on device"``; any other error as its text."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def format_size(size: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; bytes below 1 KiB as ``"12 bytes"``."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024.0 or unit == "TiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024.0
    raise AssertionError("unreachable")


def _not_regular(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISCHR(mode):
        return "is a character device, not a regular file"
    if stat.S_ISBLK(mode):
        return "is a block device, not a regular file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _open_regular(path: str | os.PathLike, max_bytes: int, what: str) -> tuple[int, int]:
    """Open ``path`` for reading without blocking (a named pipe would wait for a writer) and check it:
    ``(descriptor, size)``; :class:`InputFileError` (the descriptor closed) otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise InputFileError(path, "file not found") from None
    except IsADirectoryError:
        raise InputFileError(path, _not_regular(stat.S_IFDIR)) from None
    except OSError as error:
        raise InputFileError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise InputFileError(path, _not_regular(status.st_mode))
        if status.st_size > max_bytes:
            raise InputFileError(path, f"is {format_size(status.st_size)}, larger than the {format_size(max_bytes)} "
                                       f"softsim reads for a {what} file")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, status.st_size


def check_input_file(path: str | os.PathLike, *, max_bytes: int, what: str = "input") -> int:
    """Refuse ``path`` unless it is a readable regular file of at most ``max_bytes``; returns its size.

    ``what`` names the kind of file in the message (``"mesh"``: "... larger than the 1.0 GiB softsim reads
    for a mesh file"). Raises :class:`InputFileError`.
    """
    descriptor, size = _open_regular(path, max_bytes, what)
    os.close(descriptor)
    return size


def read_input_bytes(path: str | os.PathLike, *, max_bytes: int, what: str = "input") -> bytes:
    """The content of ``path`` after the checks of :func:`check_input_file`; at most ``max_bytes`` are read
    even when the file grows meanwhile (:class:`InputFileError` then)."""
    descriptor, _size = _open_regular(path, max_bytes, what)
    with os.fdopen(descriptor, "rb") as stream:
        try:
            data = stream.read(max_bytes + 1)
        except OSError as error:
            raise InputFileError(path, f"cannot be read ({error.strerror or error})") from None
    if len(data) > max_bytes:
        raise InputFileError(path, f"is larger than the {format_size(max_bytes)} softsim reads for a {what} file")
    return data


def temporary_target(name: str) -> str | None:
    """The final name a temporary file of :func:`atomic_path` was for (``".frames.csv.a1b2c3d4.tmp"`` ->
    ``"frames.csv"``), None for any other name."""
    match = _TEMPORARY.match(name)
    return None if match is None else match.group("name")


def _umask() -> int:
    """The process's umask, read without changing it where the system shows it (Linux), else set and reset."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _destination(path: str | os.PathLike) -> Path:
    """The file to replace: ``path`` itself, or the file a symbolic link ``path`` points to (the link stays)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, durable: bool = False, make_parents: bool = False) -> Iterator[str]:
    """Yield the name of a new temporary file beside ``path`` (through a symbolic link: beside its target);
    when the block ends without an exception, give it the mode of the file it replaces and rename it onto
    that file. On any exception (KeyboardInterrupt included) the temporary file is removed and the old file
    stays as it was.

    ``durable``: flush the new file and the directory entry to disk before returning (scene files, settings;
    not every frame of a run). ``make_parents``: create the destination's missing parent directories.
    """
    target = _destination(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise OSError(f"{target}: cannot be replaced: it {_not_regular(existing.st_mode)}")
    _remove_stale_temporaries(target)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    if not _lock(handle):  # held until the file is renamed or removed: a live writer's file is never stale
        os.close(handle)  # no flock here (Windows): an open file could not be renamed
        handle = None
    try:
        yield temporary
        if existing is None:
            os.chmod(temporary, 0o666 & ~_umask())
        else:
            if hasattr(os, "chown") and (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(OSError):  # only the owner's group, or root, may give it away
                    os.chown(temporary, existing.st_uid, existing.st_gid)
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        if durable:
            _fsync(temporary)
        os.replace(temporary, target)
        if durable:
            _fsync(target.parent, directory=True)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        if handle is not None:
            os.close(handle)


#: a temporary file younger than this is never removed as stale (it may be one a writer has just created and
#: not yet locked) [s]
STALE_AFTER_SECONDS = 2.0


def _lock(descriptor: int) -> bool:
    """Take an exclusive ``flock`` on ``descriptor`` without waiting; False when another process holds it (or
    the system has no ``flock``: then nothing counts as stale)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _remove_stale_temporaries(target: Path) -> None:
    """Remove the temporary files of ``target`` that a killed writer left (``.NAME.XXXXXXXX.tmp`` beside it): a
    writer holds a lock on its file while it lives, so a file no process holds, older than
    :data:`STALE_AFTER_SECONDS`, belongs to a dead writer. Files that cannot be examined are left alone."""
    try:
        candidates = [entry for entry in os.scandir(target.parent)
                      if entry.name.startswith(f".{target.name}.") and temporary_target(entry.name) == target.name]
    except OSError:
        return
    now = time.time()
    for entry in candidates:
        with contextlib.suppress(OSError):
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if not entry.is_file(follow_symlinks=False) or age < STALE_AFTER_SECONDS:
                continue
            descriptor = os.open(entry.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                if _lock(descriptor):
                    os.unlink(entry.path)
            finally:
                os.close(descriptor)


def _fsync(path: str | os.PathLike, *, directory: bool = False) -> None:
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if directory else os.O_RDONLY)
    except OSError:
        if directory:  # not every system opens directories (Windows): the rename is then as durable as it gets
            return
        raise
    try:
        os.fsync(descriptor)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(descriptor)


def write_text_atomically(path: str | os.PathLike, text: str, *, durable: bool = False,
                          make_parents: bool = False, newline: str = "") -> None:
    """Write ``text`` (UTF-8) to ``path`` with :func:`atomic_path`; ``newline`` as for ``open``."""
    with atomic_path(path, durable=durable, make_parents=make_parents) as temporary:
        with open(temporary, "w", encoding="utf-8", newline=newline) as stream:
            stream.write(text)
