"""Gradient columns in sweeps (issue 33): ``--grad-output``/``--grad-wrt`` (``sweep(gradients=...)``) add the
exact d(OUTPUT)/d(KEY) of each sample's last frame, equal to Scene.gradients of the same frame run alone."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from softsim.app.sweep import SweepError, sweep
from softsim.app.sweep.command import main as sweep_main
from softsim.mechanics import Scene

ROOT = Path(__file__).resolve().parents[1]
FINGER = ROOT / "resources" / "scenes" / "finger.toml"
E, CABLE = "body.finger.material.youngModulus", "body.finger.cable.cable.value"


def test_gradient_columns_match_the_scene_run_alone(tmp_path):
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        results = sweep(FINGER, {CABLE: [0.0, 6.0]}, frames=2, client=client, out=tmp_path / "out",
                        gradients=(["tip.y"], [E, "scene.gravity.y"]))
    column = "d(tip.y)/d(body.finger.material.youngModulus)"
    scene = Scene.load(FINGER)
    scene.set(CABLE, 6.0)
    for _ in range(2):
        scene.step()
    alone = scene.gradients(["tip.y"], [E])["tip.y"][E]
    pulled = results[results[CABLE] == 6.0].iloc[0]
    assert pulled[column] == pytest.approx(alone, rel=1e-9)
    assert pulled["gradient_message"] == ""
    # at 0 mm the finger hangs under gravity with the cable taut at its rest length: a gradient too, and the
    # tip (7.5 mm at rest) droops less for a stiffer finger
    rest = results[results[CABLE] == 0.0].iloc[0]
    assert rest[column] > 0.0 and not math.isnan(rest["d(tip.y)/d(scene.gravity.y)"])
    on_disk = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert column in on_disk.columns


def test_bad_gradient_names_are_refused_before_any_work(tmp_path, capsys):
    code = sweep_main([str(FINGER), "--vary", f"{CABLE}=0,5", "--frames", "1", "--out", str(tmp_path / "o"),
                       "--grad-output", "tip.q", "--grad-wrt", E])
    assert code == 2 and "tip.q" in capsys.readouterr().err
    with pytest.raises(SweepError, match="go together"):
        sweep(FINGER, {CABLE: [0.0]}, frames=1, gradients=(["tip.y"], []))
