"""Running the samples of a sweep on Dask and collecting their rows into ``results.parquet``.

Without a client or a scheduler address, a local cluster of worker processes is started (one thread each) and
closed at the end. On any cluster, a sample uses ``cores // tasks running at once`` BLAS/numba threads of its
host, so the workers of one machine do not oversubscribe its cores. The scene travels to the workers as a
bundle (scattered once); samples go in tasks of a few (``MAX_CHUNK``); a worker that dies mid-task has its
samples run again elsewhere (Dask reschedules them). A task whose workers keep dying (Dask gives up after its
``allowed-failures``; :data:`LOCAL_ALLOWED_FAILURES` on a local cluster) has its samples run one by one, and a
sample that still kills its worker alone becomes a row of status ``error`` (:func:`lost_sample_row`): the sweep
goes on with the others, the nanny replaces the worker. ``results.parquet`` is rewritten atomically (a temporary
file, then a rename) as results come in, at most every ``FLUSH_SECONDS`` and at the end, so an interrupted
sweep keeps what it finished; run again with the same ``out``, only the missing samples run.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from softsim.app.sweep.plan import (
    Sample,
    SweepError,
    check_samples,
    grid,
    parse_spec,
    read_samples,
)
from softsim.meshes.files import reason, write_text_atomically

__all__ = ["sweep", "plan_sweep", "RESULTS_NAME", "PLAN_NAME", "FLUSH_SECONDS", "read_results", "lost_sample_row"]

logger = logging.getLogger(__name__)

RESULTS_NAME = "results.parquet"
PLAN_NAME = "sweep.json"
SAMPLES_DIR = "samples"
FLUSH_SECONDS = 2.0
#: samples are sent in tasks of up to MAX_CHUNK samples, about CHUNKS_PER_SLOT tasks per worker thread (fewer
#: tasks: less scheduling per sample; several per thread: the load stays balanced and a lost worker costs little)
MAX_CHUNK = 8
CHUNKS_PER_SLOT = 4


def _load_spec(scene):
    """A SceneSpec from a path, a SceneSpec or a Scene."""
    from softsim.mechanics.scene import load_scene

    if hasattr(scene, "spec") and hasattr(scene, "step"):
        return scene.spec
    if hasattr(scene, "bodies"):
        return scene
    return load_scene(scene)


def plan_sweep(scene, vary: Mapping[str, Any] | None = None, *, samples: str | Path | Iterable | None = None,
               sets: Iterable[tuple[str, Any]] = ()) -> tuple[Any, list[Sample], tuple[tuple[str, Any], ...]]:
    """(spec, samples, sets): the scene loaded, the samples (a grid of ``vary``: key -> list of values or a
    SPEC string; or ``samples``: a CSV path or a list of dicts), everything checked against the scene."""
    spec = _load_spec(scene)
    sets = tuple((key, value) for key, value in sets)
    if samples is not None and vary:
        raise SweepError("give --vary or --samples, not both")
    if samples is not None:
        if isinstance(samples, (str, Path)):
            plan = read_samples(samples)
        else:
            plan = [Sample(i, tuple(dict(row).items())) for i, row in enumerate(samples)]
            if not plan:
                raise SweepError("the grid is empty (no samples)")
    else:
        plan = grid({key: parse_spec(value) if isinstance(value, str) else list(value)
                     for key, value in (vary or {}).items()})
    check_samples(spec, list(sets), plan)
    return spec, plan, sets


def _check_gradients(spec, sets, gradients) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(outputs, keys)`` checked against the scene (with the ``--set`` values) before any work is sent."""
    import copy

    from softsim.mechanics.scene_runtime import Scene
    from softsim.mechanics.sensitivity import GradientError, check_names

    try:
        outputs, keys = (tuple(str(n) for n in names) for names in gradients)
    except (TypeError, ValueError):
        raise SweepError(f"gradients: give (outputs, keys), two lists of names; got {gradients!r}") from None
    if not outputs or not keys:
        raise SweepError("--grad-output and --grad-wrt go together: give at least one of each")
    scene = Scene(copy.deepcopy(spec))
    for key, value in sets:
        scene.set(key, value)
    try:
        check_names(scene, outputs, keys)
    except GradientError as error:
        raise SweepError(f"--grad-output/--grad-wrt: {error}") from None
    return outputs, keys


def _plan_record(digest: str, frames: int, sets, plan: list[Sample], gradients=None) -> dict:
    record = {"scene": digest, "frames": frames, "sets": [list(s) for s in sets],
              "samples": [[s.id, [[k, v] for k, v in s.values]] for s in plan]}
    if gradients is not None:  # a sweep with other gradient columns is another sweep
        record["gradients"] = [list(gradients[0]), list(gradients[1])]
    return record


def _check_out(out: Path, record: dict) -> None:
    """``out`` is new, empty, or holds this same sweep (then it resumes); SweepError otherwise."""
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise SweepError(f"--out {out}: exists and is not a directory; give a new or empty directory")
    plan_file = out / PLAN_NAME
    if plan_file.exists():
        try:
            old = json.loads(plan_file.read_text())
        except OSError as error:
            raise SweepError(f"--out {out}: cannot read {PLAN_NAME} ({reason(error)})") from None
        except ValueError as error:
            raise SweepError(f"--out {out}: {PLAN_NAME} is not a sweep plan ({error}); choose another --out") from None
        if not isinstance(old, dict):
            raise SweepError(f"--out {out}: {PLAN_NAME} is not a sweep plan; choose another --out")
        record = json.loads(json.dumps(record))  # as it reads back: tuples become lists
        if old != record:
            what = [key for key in record if old.get(key) != record[key]]
            raise SweepError(f"--out {out}: holds another sweep (its {', '.join(what)} differ): choose another --out")
        return
    try:
        foreign = out.exists() and any(out.iterdir())
    except OSError as error:
        raise SweepError(f"--out {out}: cannot list the directory ({reason(error)})") from None
    if foreign:
        raise SweepError(f"--out {out}: not empty and holds no sweep: choose a new or empty --out")


def read_results(path: str | Path):
    """The rows of a ``results.parquet`` (an empty DataFrame when the file does not exist)."""
    import pandas as pd

    path = Path(path)
    return pd.read_parquet(path) if path.exists() else pd.DataFrame()


def _write_results(out: Path, rows: list[dict]) -> None:
    import pandas as pd

    frame = pd.DataFrame(rows).sort_values("sample", kind="stable").reset_index(drop=True)
    temporary = out / f".{RESULTS_NAME}.tmp"
    frame.to_parquet(temporary, index=False)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, out / RESULTS_NAME)


def _write_files(out: Path, sample_id: int, files: dict[str, bytes]) -> None:
    folder = out / SAMPLES_DIR / str(sample_id)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


def lost_sample_row(sample: Sample, error: BaseException) -> dict:
    """The row of a sample whose task failed as a whole, run alone: its worker process died while running it
    (Dask's ``KilledWorker``: the sample crashed it, in native code, or it was killed, e.g. out of memory)."""
    from distributed.scheduler import KilledWorker

    if isinstance(error, KilledWorker):
        message = ("the worker process running this sample died each time it ran it (a crash, e.g. in a native "
                   "library, or killed, e.g. out of memory): the sample has no result; the worker was replaced and "
                   "the other samples ran")
    else:
        message = f"the task running this sample failed: {type(error).__name__}: {' '.join(str(error).split())}"
    return {"sample": sample.id, **sample.as_dict(), "status": "error", "message": message, "wall_s": math.nan}


#: how often a local cluster runs a task again after its worker died before it gives up (Dask's default is 3;
#: a sample that crashes its worker would cost four worker restarts, and then as many again alone)
LOCAL_ALLOWED_FAILURES = 1


def _local_client(workers: int):
    import dask
    from dask.distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    return Client(cluster), cluster


def _threads_by_host(client) -> dict[str, int]:
    """BLAS/numba threads per task on each host: its cores over the tasks that run there at once (the worker
    processes' threads), at least 1, so the workers of one machine do not oversubscribe its cores."""
    from urllib.parse import urlparse

    cores = client.run(os.cpu_count)
    slots: dict[str, int] = {}
    host_cores: dict[str, int] = {}
    for address, info in client.scheduler_info()["workers"].items():
        host = urlparse(address).hostname or address
        slots[host] = slots.get(host, 0) + int(info.get("nthreads", 1))
        host_cores[host] = int(cores.get(address) or 1)
    return {host: max(1, host_cores[host] // slots[host]) for host in slots}


def sweep(scene, vary: Mapping[str, Any] | None = None, frames: int = 1, client=None, *,
          samples=None, sets: Iterable[tuple[str, Any]] = (), out: str | Path | None = None,
          keep_frames: bool = False, vtu: bool = False, workers: int | None = None,
          scheduler: str | None = None, on_start: Callable[[Any], None] | None = None,
          on_result: Callable[[dict], None] | None = None, gradients=None):
    """Run a sweep and return its rows as a pandas DataFrame (one per sample, sorted by ``sample``).

    scene : a scene file path, a SceneSpec or a Scene (its spec: the values in effect).
    vary : key path -> values (a list, or a SPEC string ``"start:stop:num"`` / ``"1,2,5"``): the full grid.
    frames : frames per sample; the row holds the last frame's columns.
    client : an existing ``dask.distributed.Client``; else ``scheduler`` (an address) or a local cluster of
        ``workers`` processes (default: the number of cores).
    samples : instead of ``vary``, a CSV path whose columns are key paths, or a list of dicts.
    sets : (key, value) pairs set on every sample before its own values (``--set``).
    out : a directory for ``results.parquet`` (resumed when it holds this sweep) and, with ``keep_frames``,
        ``samples/<id>/frames.csv`` (and .vtu files with ``vtu``).
    on_start(client) : called once the client is ready (the CLI prints the dashboard link);
    on_result(row) : called for each new row, on this process, as it arrives.
    gradients : ``(outputs, keys)``: each row also holds the exact ``d(OUTPUT)/d(KEY)`` at its last frame
        (docs/gradients.md), NaN with ``gradient_message`` when that frame has no gradient.

    Raises SweepError for invalid input (before any work is sent); a failing sample is a row with its status.
    """
    from dask.distributed import as_completed

    from softsim.app.sweep.bundle import bundle_scene
    from softsim.app.sweep.task import run_samples

    frames = int(frames)
    if frames < 1:
        raise SweepError(f"--frames: {frames} is not a positive number of frames")
    if workers is not None and int(workers) < 1:
        raise SweepError(f"--workers: {workers} is not a positive number of workers")
    if vtu and not keep_frames:
        raise SweepError("--vtu writes each sample's .vtu files into OUT/samples/ID, which only --keep-frames "
                         "keeps: add --keep-frames, or leave --vtu out")
    spec, plan, sets = plan_sweep(scene, vary, samples=samples, sets=sets)
    if gradients is not None:
        gradients = _check_gradients(spec, sets, gradients)
    bundle = bundle_scene(spec)
    rows: list[dict] = []
    out_dir = None if out is None else Path(out)
    if out_dir is not None:
        record = _plan_record(bundle.digest, frames, sets, plan, gradients)
        _check_out(out_dir, record)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomically(out_dir / PLAN_NAME, json.dumps(record))
        except OSError as error:
            raise SweepError(f"--out {out_dir}: cannot write into it ({reason(error)}); choose a directory you "
                             "can write") from None
        try:
            done = read_results(out_dir / RESULTS_NAME)
        except (OSError, ValueError) as error:
            raise SweepError(f"--out {out_dir}: cannot read the earlier {RESULTS_NAME} ({reason(error)}); remove "
                             "it to run every sample again, or choose another --out") from None
        rows = done.to_dict("records") if len(done) else []
    finished = {int(row["sample"]) for row in rows}
    todo = [sample for sample in plan if sample.id not in finished]
    own_cluster = None
    if client is None:
        if scheduler is not None:
            from dask.distributed import Client

            try:
                client = Client(scheduler, timeout="20s")
            except OSError as error:
                raise SweepError(f"--scheduler {scheduler}: cannot connect ({error})") from None
        else:
            client, own_cluster = _local_client(int(workers or os.cpu_count() or 1))
    try:
        if on_start is not None:
            on_start(client)
        if todo:
            threads = _threads_by_host(client)
            shared = client.scatter(bundle, broadcast=True)
            slots = sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()) or 1
            size = max(1, min(MAX_CHUNK, len(todo) // (CHUNKS_PER_SLOT * slots)))
            chunks = [todo[i:i + size] for i in range(0, len(todo), size)]

            def submit(chunk: list[Sample], alone: bool = False):
                name = "softsim-sample-alone" if alone else "softsim-samples"
                return client.submit(run_samples, shared, sets, chunk, frames, keep_files=keep_frames, vtu=vtu,
                                     threads=threads, gradients=gradients, pure=False,
                                     key=f"{name}-{bundle.digest}-{chunk[0].id}-{chunk[-1].id}")

            chunk_of = {submit(chunk): chunk for chunk in chunks}
            futures = list(chunk_of)
            last_flush = time.perf_counter()
            try:
                running = as_completed(futures)
                for future in running:
                    chunk = chunk_of.pop(future)
                    try:
                        chunk_rows = future.result()
                    except Exception as error:  # noqa: BLE001 - the task itself failed: its worker died
                        if len(chunk) > 1:  # run each sample of the task alone, to find the one that kills
                            logger.info("a task of samples %d-%d failed (%s); running them one by one",
                                        chunk[0].id, chunk[-1].id, type(error).__name__)
                            for sample in chunk:
                                single = submit([sample], alone=True)
                                chunk_of[single] = [sample]
                                futures.append(single)
                                running.add(single)
                            continue
                        chunk_rows = [lost_sample_row(chunk[0], error)]
                    for row in chunk_rows:
                        files = row.pop("_files", None)
                        if files and out_dir is not None:
                            _write_files(out_dir, int(row["sample"]), files)
                        rows.append(row)
                        if on_result is not None:
                            on_result(row)
                    if out_dir is not None and time.perf_counter() - last_flush >= FLUSH_SECONDS:
                        _write_results(out_dir, rows)
                        last_flush = time.perf_counter()
            finally:
                if len(rows) < len(plan):
                    client.cancel(futures)
                if out_dir is not None and rows:
                    _write_results(out_dir, rows)
        elif out_dir is not None and rows:
            _write_results(out_dir, rows)
    finally:
        if own_cluster is not None:
            client.close()
            own_cluster.close()
    import pandas as pd

    return pd.DataFrame(rows).sort_values("sample", kind="stable").reset_index(drop=True)
