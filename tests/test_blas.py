"""The ``accelsim`` command asks numpy's BLAS for one thread before numpy loads, and
keeps a count the user set (``accelsim/blas.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

from accelsim.blas import THREAD_VARIABLES, one_blas_thread

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ("import sys, os; import accelsim.cli.main; "
         "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)")


def probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    done = subprocess.run([sys.executable, "-c", PROBE], env={**clean, "PYTHONPATH": ROOT, **env},
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_command_asks_for_one_thread_before_numpy_loads():
    assert probe() == "1 False"  # set, and numpy not loaded yet


def test_a_count_the_user_set_is_kept():
    assert probe(OPENBLAS_NUM_THREADS="3") == "3 False"


def test_too_late_once_numpy_is_loaded():
    import numpy  # noqa: F401  (pytest's process has loaded it: the count is fixed)

    assert one_blas_thread() is False
