"""softsim sweep: the grid against runs done one by one, a real distributed run with a worker killed, resuming,
failed samples as rows, bad input refused before any work."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from softsim.app.resources import resource_path
from softsim.app.sweep import SweepError, parse_spec, sweep
from softsim.app.sweep.command import main as sweep_main
from softsim.mechanics.scene_runtime import Scene

FINGER = resource_path("scenes", "finger.toml")
YOUNG = "body.finger.material.youngModulus"
CABLE = "body.finger.cable.cable.value"


def serial(pairs, frames, sets=()):
    """The last frame's outputs of each (E, cable) run done here with the plain Scene API."""
    rows = []
    for young, cable in pairs:
        scene = Scene.load(FINGER)
        for key, value in sets:
            scene.set(key, value)
        scene.set(YOUNG, young)
        scene.set(CABLE, cable)
        for _ in range(frames):
            report = scene.step()
        assert report.converged
        rows.append(scene.outputs())
    return rows


def assert_same(results: pd.DataFrame, expected: list[dict], pairs) -> None:
    assert list(results["sample"]) == list(range(len(pairs)))
    assert list(zip(results[YOUNG], results[CABLE], strict=True)) == [tuple(map(float, p)) for p in pairs]
    assert set(results["status"]) == {"ok"}
    for (_, row), outputs in zip(results.iterrows(), expected, strict=True):
        for name, value in outputs.items():
            assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_specs_parse_and_bad_ones_are_named():
    assert parse_spec("1:5:3") == [1.0, 3.0, 5.0]
    assert parse_spec("0:1:1") == [0.0]
    assert parse_spec("1,2,5") == [1, 2, 5]
    assert parse_spec('true,"ImprovedJacobi"') == [True, "ImprovedJacobi"]
    for bad, message in (("1:5", "three parts"), ("a:2:3", "numbers"), ("0:1:2.5", "whole number"),
                         ("0:1:inf", "whole number"), ("0:inf:3", "finite"),
                         ("1,,2", "empty item"), ("", "empty SPEC")):
        with pytest.raises(SweepError, match=message):
            parse_spec(bad)


def test_a_2x5_grid_on_two_local_processes_equals_the_runs_done_one_by_one(tmp_path):
    """youngModulus x cable value on a local cluster of 2 worker processes: every output of every sample equals
    the same run done here with the Scene API (to 1e-12), in grid order (the first key varies slowest)."""
    pairs = [(e, c) for e in (400.0, 800.0) for c in parse_spec("0:8:5")]
    assert parse_spec("0:8:5") == pytest.approx(np.linspace(0.0, 8.0, 5), rel=0, abs=1e-15)
    results = sweep(FINGER, {YOUNG: "400,800", CABLE: "0:8:5"}, frames=3, workers=2, out=tmp_path / "out",
                    keep_frames=True)
    assert_same(results, serial(pairs, 3), pairs)
    on_disk = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(on_disk) == 10 and list(on_disk["sample"]) == list(range(10))
    assert (on_disk["wall_s"] > 0).all() and "newton_converged" in on_disk and "tip.y" in on_disk
    kept = pd.read_csv(tmp_path / "out" / "samples" / "7" / "frames.csv")
    assert len(kept) == 3 and kept["cable.displacement"].iloc[-1] == pytest.approx(results[CABLE][7], abs=1e-9)


def _start(command, log):
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def test_a_real_cluster_loses_a_worker_and_the_sweep_is_still_complete_and_right(tmp_path):
    """`dask scheduler` and two `dask worker` processes from the venv; one worker (with its nanny) is killed
    once samples are running: its samples run again on the other, every sample is there once, with the values
    of the runs done one by one."""
    dask = str(Path(sys.executable).with_name("dask"))
    scheduler_file = tmp_path / "scheduler.json"
    log = (tmp_path / "cluster.log").open("w")
    env_note = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    os.environ.update(env_note)
    processes = [_start([dask, "scheduler", "--scheduler-file", str(scheduler_file), "--port", "0",
                         "--dashboard-address", ":0"], log)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [_start([dask, "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1",
                           "--nthreads", "1"], log) for _ in range(2)]
        processes += workers
        from dask.distributed import Client

        client = Client(scheduler_file=str(scheduler_file), timeout="60s")
        client.wait_for_workers(2, timeout=60)
        killed = []

        def kill_one(_row):
            if not killed:
                os.killpg(workers[0].pid, signal.SIGKILL)
                killed.append(True)

        pairs = [(e, c) for e in (500.0, 700.0) for c in parse_spec("1:9:6")]
        results = sweep(FINGER, {YOUNG: "500,700", CABLE: "1:9:6"}, frames=6, client=client,
                        out=tmp_path / "out", on_result=kill_one)
        assert killed and workers[0].wait(timeout=10) is not None
        assert_same(results, serial(pairs, 6), pairs)
        assert sorted(pd.read_parquet(tmp_path / "out" / "results.parquet")["sample"]) == list(range(12))
        client.close()
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        log.close()
        for key in env_note:
            os.environ.pop(key, None)


def test_an_interrupted_sweep_resumes_and_every_sample_is_there_once(tmp_path):
    from dask.distributed import Client, LocalCluster

    out = tmp_path / "out"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        seen = []

        def interrupt(row):
            seen.append(row["sample"])
            if len(seen) == 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            sweep(FINGER, {CABLE: "0:6:8"}, frames=2, client=client, out=out, on_result=interrupt)
        first = pd.read_parquet(out / "results.parquet")
        assert sorted(first["sample"]) == sorted(seen) and len(first) == 3
        again = []
        results = sweep(FINGER, {CABLE: "0:6:8"}, frames=2, client=client, out=out,
                        on_result=lambda row: again.append(row["sample"]))
    assert sorted(again) == sorted(set(range(8)) - set(seen))  # only the missing ones ran
    assert list(results["sample"]) == list(range(8))
    on_disk = pd.read_parquet(out / "results.parquet")
    assert sorted(on_disk["sample"]) == list(range(8)) and on_disk["sample"].is_unique
    with pytest.raises(SweepError, match="holds another sweep"):
        sweep(FINGER, {CABLE: "0:6:9"}, frames=2, out=out)


def test_a_failing_sample_is_a_row_with_its_status(tmp_path):
    """A cable pulled 1 km diverges, a value the scene refuses while building is invalid: both are rows, the
    sweep completes, and the command's exit status says some samples are not ok (4)."""
    samples = tmp_path / "samples.csv"
    samples.write_text(f"{CABLE},body.finger.cable.cable.valueType\n4.0,displacement\n1e6,displacement\n")
    code = sweep_main([str(FINGER), "--samples", str(samples), "--frames", "2", "--out", str(tmp_path / "out"),
                       "--workers", "1"])
    assert code == 4
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert list(results["status"]) == ["ok", "diverged"]
    assert results["cable.displacement"][0] == pytest.approx(4.0)
    assert "diverg" in results["message"][1] or "moved" in results["message"][1] or results["message"][1]


@pytest.mark.parametrize(("arguments", "message"), [
    (["--vary", "body.finger.cable.cable.valu=0:8:3"], "unknown key 'valu'"),
    (["--vary", f"{CABLE}=0:8"], "start:stop:num has three parts"),
    (["--vary", f"{CABLE}=0:8:x"], "must be numbers"),
    (["--vary", f"{YOUNG}=-1,400"], "youngModulus"),
    ([], "nothing to vary"),
    (["--samples", "EMPTY"], "the grid is empty"),
    (["--samples", "RAGGED"], "line 2 has 2 cells, the header 1"),
    (["--samples", "MISSING"], "--samples"),
    (["--samples", "EMPTY", "--vary", f"{CABLE}=1,2"], "give --vary or --samples, not both"),
    (["--vary", f"{CABLE}=1,2", "--workers", "0"], "--workers: 0 is not a positive number of workers"),
])
def test_bad_input_exits_2_naming_it_before_any_work(tmp_path, capsys, arguments, message):
    files = {"EMPTY": f"{CABLE}\n", "RAGGED": f"{CABLE}\n1.0,2.0\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.csv").write_text(text)
    arguments = [str(tmp_path / f"{a}.csv") if a in (*files, "MISSING") else a for a in arguments]
    out = tmp_path / "out"
    started = time.perf_counter()
    code = sweep_main([str(FINGER), *arguments, "--frames", "2", "--out", str(out)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (out / "results.parquet").exists()
    assert time.perf_counter() - started < 20  # refused before a cluster was started


def test_the_command_runs_and_python_gets_softsim_sweep(tmp_path):
    import softsim

    assert softsim.sweep is sweep
    result = subprocess.run([str(Path(sys.executable).with_name("softsim")), "sweep", str(FINGER), "--vary",
                             f"{CABLE}=2,4", "--frames", "2", "--out", str(tmp_path / "out"), "--workers", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Dask dashboard http" in result.stdout and "2 samples (2 ok)" in result.stdout
    assert result.stderr.count("\n") <= 2  # Dask's start/stop logging is silenced
