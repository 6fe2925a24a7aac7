"""One sample of a sweep, on whichever process runs it: the scene from its bundle, ``--set``, the sample's
values, N frames headless; the result is one row: the sample's id and values, ``status``, ``message``,
``wall_s`` and the last frame's ``frames.csv`` columns.

``status``: ``ok`` (every frame converged), ``not_converged`` (every frame ran, at least one did not converge),
``diverged`` (a frame failed: the row holds the last good frame), ``invalid`` (the scene refused a value),
``error`` (anything else, a defect). A failing sample is a row, never an exception.
"""

from __future__ import annotations

import logging
import time
import traceback
from pathlib import Path

__all__ = ["STATUSES", "run_sample", "run_samples", "limit_threads"]

logger = logging.getLogger(__name__)

STATUSES = ("ok", "not_converged", "diverged", "invalid", "error")


def limit_threads(threads: int) -> None:
    """At most ``threads`` BLAS/MKL/numba threads in this process (workers sharing a machine's cores)."""
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


def run_sample(bundle, sets: tuple[tuple[str, str], ...], sample, frames: int, *,
               keep_dir: str | None = None, keep_files: bool = False, vtu: bool = False,
               threads: int | dict | None = None) -> dict:
    """Run ``sample`` (a :class:`~app.sweep.plan.Sample`) of the scene ``bundle``; the row described above.
    With ``keep_dir``, the sample's ``frames.csv`` (and .vtu files with ``vtu``) are written there; with
    ``keep_files``, they are written to a temporary directory of this process and returned as bytes in
    ``row["_files"]`` (name -> bytes: a remote worker's disk is not the user's)."""
    if keep_files and keep_dir is None:
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="softsim-sample-")
        try:
            row = run_sample(bundle, sets, sample, frames, keep_dir=folder, vtu=vtu, threads=threads)
            row["_files"] = {path.name: path.read_bytes() for path in sorted(Path(folder).iterdir())
                             if path.is_file() and not path.name.startswith(".")}
            return row
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    from softsim.app.headless import frame_row, run_frames
    from softsim.app.sweep.bundle import unpacked
    from softsim.mechanics.scene_runtime import Scene

    if isinstance(threads, dict):  # per host (the engine's count of cores over tasks): find this one's
        threads = threads.get(_this_host())
    if threads is not None:
        limit_threads(threads)
    started = time.perf_counter()
    row: dict = {"sample": sample.id, **sample.as_dict(), "status": "ok", "message": ""}
    try:
        scene = Scene.load(unpacked(bundle))
        for key, value in (*sets, *sample.values):
            scene.set(key, value)
    except ValueError as error:  # SceneError, ParameterError, MeshError: the input's fault
        row.update(status="invalid", message=" ".join(str(error).split()))
        row["wall_s"] = time.perf_counter() - started
        return row
    except Exception as error:  # noqa: BLE001 - a defect is a row too, never a failed sweep
        row.update(status="error", message=f"{type(error).__name__}: {error}")
        logger.debug("sample %d failed\n%s", sample.id, traceback.format_exc())
        row["wall_s"] = time.perf_counter() - started
        return row
    last: dict = {}
    try:
        if keep_dir is not None:
            result = run_frames(scene, frames, Path(keep_dir), write_vtu=vtu,
                                on_frame=lambda _scene, _index, frame: last.update(frame))
            failed, not_converged, message = result.diverged, result.not_converged, result.message
        else:
            failed, not_converged, message = False, 0, ""
            for _ in range(frames):
                frame_started = time.perf_counter()
                report = scene.step()
                if not report.ok:
                    failed, message = True, report.message
                    break
                if not report.converged:
                    not_converged += 1
                    message = message or report.message
                last = frame_row(int(scene.simulation.frame), time.perf_counter() - frame_started, report,
                                 scene.simulation, scene.outputs())
        if failed:
            row.update(status="diverged", message=" ".join(message.split()))
        elif not_converged:
            row.update(status="not_converged",
                       message=f"{not_converged} of {frames} frame(s) did not converge: " + " ".join(message.split()))
    except Exception as error:  # noqa: BLE001
        row.update(status="error", message=f"{type(error).__name__}: {error}")
        logger.debug("sample %d failed\n%s", sample.id, traceback.format_exc())
    row.update(last)
    row["wall_s"] = time.perf_counter() - started
    return row


def run_samples(bundle, sets, samples, frames: int, **options) -> list[dict]:
    """:func:`run_sample` for each of ``samples`` in turn (one Dask task runs a few samples: less scheduling
    per sample); the rows in order."""
    return [run_sample(bundle, sets, sample, frames, **options) for sample in samples]
