"""Triton capture runs kernels in Triton's interpreter, which must be chosen before
triton is first imported (Triton decides then whether its own library functions run in
the interpreter)."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
