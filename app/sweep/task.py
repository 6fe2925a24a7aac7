"""One sample of a sweep, on whichever process runs it: the scene from its bundle, ``--set``, the sample's
values, N frames headless; the result is one row: the sample's id and values, ``status``, ``message``,
``wall_s`` and the last frame's ``frames.csv`` columns.

``status``: ``ok`` (every frame converged), ``not_converged`` (every frame ran, at least one did not converge),
``diverged`` (a frame failed: the row holds the last good frame), ``invalid`` (the scene refused a value),
``error`` (anything else, a defect). A failing sample is a row, never an exception.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import traceback
from pathlib import Path

__all__ = ["STATUSES", "run_sample", "run_samples", "limit_threads"]

logger = logging.getLogger(__name__)

STATUSES = ("ok", "not_converged", "diverged", "invalid", "error")


def limit_threads(threads: int) -> None:
    """At most ``threads`` BLAS/MKL/numba threads in this process (workers sharing a machine's cores); with one,
    the element assembly runs in one thread too."""
    from softsim.mechanics.fem import set_assembly_threads

    set_assembly_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except Exception:  # noqa: BLE001 - a missing or odd BLAS must not stop a sample
        logger.debug("threadpool_limits failed", exc_info=True)
    try:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    except Exception:  # noqa: BLE001
        logger.debug("numba.set_num_threads failed", exc_info=True)


def _this_host() -> str | None:
    from urllib.parse import urlparse

    try:
        from distributed import get_worker

        return urlparse(get_worker().address).hostname
    except (ImportError, ValueError):  # not in a Dask worker
        return None


def run_sample(bundle, sets: tuple[tuple[str, str], ...], sample, frames: int, *, keep_files: bool = False,
               vtu: bool = False, threads: int | dict | None = None,
               gradients: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> dict:
    """Run ``sample`` (a :class:`~app.sweep.plan.Sample`) of the scene ``bundle``; the row described above.

    The frames run through :func:`app.run_output.run_frames` (the loop of ``softsim run``) into a temporary
    directory of this process; with ``keep_files``, its ``frames.csv`` (and .vtu files with ``vtu``) are
    returned as bytes in ``row["_files"]`` (name -> bytes: a remote worker's disk is not the user's).

    ``gradients = (outputs, keys)``: the row also holds ``d(OUTPUT)/d(KEY)`` at the last frame
    (:mod:`mechanics.sensitivity`), NaN with the reason in ``gradient_message`` when that frame has none."""
    from softsim.mechanics.linear_solvers import configure_threads

    configure_threads()  # this worker process's thread settings, then its share of the cores below
    if isinstance(threads, dict):  # per host (the engine's count of cores over tasks): find this one's
        threads = threads.get(_this_host())
    if threads is not None:
        limit_threads(threads)
    started = time.perf_counter()
    row: dict = {"sample": sample.id, **sample.as_dict(), "status": "ok", "message": ""}
    folder = Path(tempfile.mkdtemp(prefix="softsim-sample-"))  # the scene's files and the frames; removed below
    try:
        _run_in(folder, bundle, sets, sample, frames, row, keep_files=keep_files, vtu=vtu, gradients=gradients)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    row["wall_s"] = time.perf_counter() - started
    return row


def _run_in(folder: Path, bundle, sets, sample, frames: int, row: dict, *, keep_files: bool, vtu: bool,
            gradients=None) -> None:
    """:func:`run_sample` in its temporary ``folder`` (the scene's files, the frames): fills ``row``."""
    from softsim.app.run_output import run_frames
    from softsim.app.sweep.bundle import unpack
    from softsim.mechanics.scene_runtime import Scene

    try:
        scene = Scene.load(unpack(bundle, folder / "scene"))
        for key, value in (*sets, *sample.values):
            scene.set(key, value)
    except ValueError as error:  # SceneError, ParameterError, MeshError: the input's fault
        row.update(status="invalid", message=" ".join(str(error).split()))
        return
    except Exception as error:  # noqa: BLE001 - a defect is a row too, never a failed sweep
        logger.debug("sample %d failed\n%s", sample.id, traceback.format_exc())
        row.update(status="error", message=f"{type(error).__name__}: {error}")
        return
    last: dict = {}
    first_not_converged: list[str] = []
    frames_folder = folder / "frames"
    try:
        result = run_frames(scene, frames, frames_folder, write_vtu=vtu and keep_files,
                            on_frame=lambda _scene, _index, frame_row: last.update(frame_row),
                            on_not_converged=lambda _index, message: first_not_converged.append(message))
        if result.diverged:
            row.update(status="diverged", message=" ".join(result.message.split()))
        elif result.not_converged:
            row.update(status="not_converged", message=f"{result.not_converged} of {frames} frame(s) did not "
                                                       f"converge: {first_not_converged[0]}")
        if keep_files:
            row["_files"] = {path.name: path.read_bytes() for path in sorted(frames_folder.iterdir())
                             if path.is_file() and not path.name.startswith(".")}
    except Exception as error:  # noqa: BLE001
        row.update(status="error", message=f"{type(error).__name__}: {error}")
        logger.debug("sample %d failed\n%s", sample.id, traceback.format_exc())
    # the last frame's columns; its own status is the frame's (the row's status is the sample's)
    row.update({("frame_status" if name == "status" else name): value for name, value in last.items()})
    if gradients is not None:
        _gradient_columns(scene, gradients, row)


def _gradient_columns(scene, gradients, row: dict) -> None:
    """``d(OUTPUT)/d(KEY)`` columns of the last frame into ``row`` (NaN and ``gradient_message`` without)."""
    from softsim.mechanics.sensitivity import GradientError, column_name, gradient_report

    outputs, keys = gradients
    row["gradient_message"] = ""
    try:
        values = gradient_report(scene, list(outputs), list(keys)).values
    except GradientError as error:
        values = {}
        row["gradient_message"] = " ".join(str(error).split())
    for output in outputs:
        for key in keys:
            row[column_name(output, key)] = values.get(output, {}).get(key, float("nan"))


def run_samples(bundle, sets, samples, frames: int, **options) -> list[dict]:
    """:func:`run_sample` for each of ``samples`` in turn (one Dask task runs a few samples: less scheduling
    per sample); the rows in order."""
    return [run_sample(bundle, sets, sample, frames, **options) for sample in samples]
