"""Running the samples of a sweep on Dask and collecting their rows into ``results.parquet``.

Without a client or a scheduler address, a local cluster of worker processes is started (one thread each) and
closed at the end. On any cluster, a sample uses ``cores // tasks running at once`` BLAS/numba threads of its
host, so the workers of one machine do not oversubscribe its cores. The scene travels to the workers as a
bundle (scattered once); samples go in tasks of a few (``MAX_CHUNK``); a worker that dies mid-task has its
samples run again elsewhere (Dask reschedules them). ``results.parquet`` is rewritten atomically (a temporary
file, then a rename) as results come in, at most every ``FLUSH_SECONDS`` and at the end, so an interrupted
sweep keeps what it finished; run again with the same ``out``, only the missing samples run.
"""

from __future__ import annotations

import json
import logging
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

__all__ = ["sweep", "plan_sweep", "RESULTS_NAME", "PLAN_NAME", "FLUSH_SECONDS", "read_results"]

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


def _plan_record(digest: str, frames: int, sets, plan: list[Sample]) -> dict:
    return {"scene": digest, "frames": frames, "sets": [list(s) for s in sets],
            "samples": [[s.id, [[k, v] for k, v in s.values]] for s in plan]}


def _check_out(out: Path, record: dict) -> None:
    """``out`` is new, empty, or holds this same sweep (then it resumes); SweepError otherwise."""
    plan_file = out / PLAN_NAME
    if plan_file.exists():
        try:
            old = json.loads(plan_file.read_text())
        except (OSError, ValueError) as error:
            raise SweepError(f"{plan_file}: cannot read it ({error})") from None
        record = json.loads(json.dumps(record))  # as it reads back: tuples become lists
        if old != record:
            what = [key for key in record if old.get(key) != record[key]]
            raise SweepError(f"{out} holds another sweep (its {', '.join(what)} differ): choose another --out")
        return
    if out.exists() and any(out.iterdir()):
        raise SweepError(f"{out} is not empty and holds no sweep: choose a new or empty --out")


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


def _local_client(workers: int):
    from dask.distributed import Client, LocalCluster

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
          on_result: Callable[[dict], None] | None = None):
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
    spec, plan, sets = plan_sweep(scene, vary, samples=samples, sets=sets)
    bundle = bundle_scene(spec)
    rows: list[dict] = []
    out_dir = None if out is None else Path(out)
    if out_dir is not None:
        record = _plan_record(bundle.digest, frames, sets, plan)
        _check_out(out_dir, record)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / PLAN_NAME).write_text(json.dumps(record))
        done = read_results(out_dir / RESULTS_NAME)
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
            futures = [client.submit(run_samples, shared, sets, chunk, frames, keep_files=keep_frames, vtu=vtu,
                                     threads=threads, pure=False,
                                     key=f"softsim-samples-{bundle.digest}-{chunk[0].id}-{chunk[-1].id}")
                       for chunk in chunks]
            last_flush = time.perf_counter()
            try:
                for future in as_completed(futures):
                    for row in future.result():
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
