"""Parameter sweeps on Dask: many headless runs of one scene with varied values (``softsim sweep``).

- :mod:`.plan`: the samples: ``--vary KEY=SPEC`` grids or a CSV of samples, checked against the scene;
- :mod:`.bundle`: the scene and its mesh files as bytes, so a worker needs none of the user's files;
- :mod:`.task`: one sample: load, ``--set``, the sample's values, N frames, the last frame's row;
- :mod:`.engine`: the Dask client (a local cluster or a scheduler's address), ``results.parquet`` written
  atomically as results come in, resuming an interrupted sweep;
- :mod:`.command`: the ``softsim sweep`` command line.

No Qt, no VTK.
"""

from __future__ import annotations

from softsim.app.sweep.engine import sweep
from softsim.app.sweep.plan import Sample, SweepError, parse_spec

__all__ = ["sweep", "Sample", "SweepError", "parse_spec"]
