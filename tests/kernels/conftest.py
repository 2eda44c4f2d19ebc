"""Kernel tests run the Triton kernels of ``kernels/triton/`` in Triton's interpreter
(on the CPU), so ``TRITON_INTERPRET`` is set before anything imports triton; the
repository root goes on ``sys.path`` so the kernels import as ``kernels.triton.*``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
