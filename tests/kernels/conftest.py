"""Kernel tests run the Triton kernels of ``kernels/triton/`` in Triton's interpreter
(on the CPU), so ``TRITON_INTERPRET`` is set before anything imports triton (Triton
decides at import whether its own library functions run in the interpreter)."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
