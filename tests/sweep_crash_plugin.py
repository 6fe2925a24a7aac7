"""A Dask worker plugin for the sweep tests: the worker process aborts (SIGABRT, as a crash in a native library
would) when it starts the sample of a given id. Registered with ``client.register_plugin``, it is installed on
every worker, also on the ones the nanny starts to replace a dead worker."""

from __future__ import annotations

import os

from distributed.diagnostics.plugin import WorkerPlugin


class AbortOnSample(WorkerPlugin):
    """Makes ``softsim.app.sweep.task.run_sample`` call ``os.abort()`` for the sample ``sample_id``."""

    name = "softsim-abort-on-sample"

    def __init__(self, sample_id: int) -> None:
        self.sample_id = sample_id

    def setup(self, worker) -> None:
        from softsim.app.sweep import task

        original = getattr(task.run_sample, "__wrapped__", task.run_sample)
        sample_id = self.sample_id

        def run_sample(bundle, sets, sample, frames, **options):
            if sample.id == sample_id:
                os.abort()
            return original(bundle, sets, sample, frames, **options)

        run_sample.__wrapped__ = original
        task.run_sample = run_sample
