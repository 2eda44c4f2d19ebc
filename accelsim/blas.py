"""One BLAS thread for numpy's matrix products, asked for before numpy is loaded.

The fluid pool multiplies a vector by a flows x links matrix at every event of a replay:
products of at most a few thousand rows, for which OpenBLAS's threads cost far more than
they give (on the shared 2-core development machine a 512 x 1056 product took 16 ms of
wall time and 2.8 ms of CPU on two threads, 1.4 ms and 0.19 ms on one). Threads also split
long reductions (a 20,000 x 300 product, say) differently with their number, so such
sums depended on how many cores the machine has; one thread gives the same sums
everywhere. BLAS reads its thread
count once, when numpy loads it, so the ``accelsim`` command asks before anything imports
numpy (``accelsim/cli/__init__.py``); a count the user set is kept.
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
"""OpenBLAS (numpy's wheels), MKL and Apple's Accelerate."""


def one_blas_thread() -> bool:
    """Ask numpy's BLAS for one thread where the user has not set a count; whether it was
    asked in time (numpy not yet loaded: afterwards the count is fixed)."""
    if "numpy" in sys.modules:
        return False
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    return True
