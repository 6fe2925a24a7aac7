"""Process-wide thread settings for the native solvers, made by the program's entry points.

The command line, the window's simulation process and the sweep's workers call :func:`configure_threads` once,
before the first solve; a library never changes them on import. A script that uses ``softsim.mechanics``
directly may call it too (it is what the entry points measure with).
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)


def configure_threads() -> None:
    """Set the thread settings the solvers were measured with, for this process.

    - ``KMP_BLOCKTIME=3`` (unless set): with the OpenMP runtime's default (200 ms), MKL's threads keep spinning
      long after each Pardiso call and take the core that the element assembly's second thread of the next Newton
      step needs; 0 would make every solve pay a thread wake-up, while this short spin keeps them awake through
      the back-to-back solves of one step (benchmarks/RESULTS_equilibrium.md, ninth session; RESULTS.md, the
      KMP_BLOCKTIME row, for the first value, 20). The OpenMP runtime reads it when MKL loads, so this must run
      before the first factorization.
    - numpy's OpenBLAS limited to one thread: after any numpy BLAS call (a vector norm), OpenBLAS's idle threads
      keep spinning and take the cores MKL's threads need, which slows the numeric factorization that follows.
      numpy's BLAS work here is small (norms, dense products of constraint-space matrices).
    """
    os.environ.setdefault("KMP_BLOCKTIME", "3")
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        logger.info("threadpoolctl is missing: OpenBLAS threads may slow the Pardiso factorization down")
        return
    ThreadpoolController().select(internal_api="openblas").limit(limits=1)
