"""The measurement scripts run on a GPU machine that has torch, triton, jax, numpy and pyyaml
but not accelsim's own dependencies: importing them, and the kernels they run, must not
need accelsim, pydantic or simpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[2]
MODULES = ["measure_gpu", "measure_triton", "measure_pallas", "measure_collectives", "measure_micro", "jax_timing",
           "provenance", "measurement_format", "kernels.pallas.matmul", "kernels.pallas.attention", "kernels.pallas.rowwise",
           "kernels.triton.matmul", "kernels.triton.attention", "kernels.triton.softmax", "kernels.triton.layernorm",
           "kernels.triton.rmsnorm", "kernels.triton.row_layout", "kernels.triton.decode_attention"]


def test_measurement_code_imports_without_accelsim_pydantic_or_simpy():
    program = "\n".join([
        "import importlib, sys",
        "for name in ('accelsim', 'pydantic', 'simpy'):",
        "    sys.modules[name] = None  # any import of these now fails",
        f"sys.path[:0] = [{str(REPO / 'validation')!r}, {str(REPO)!r}]",
        f"for module in {MODULES!r}:",
        "    importlib.import_module(module)",
        "print('ok')",
    ])
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=180, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
