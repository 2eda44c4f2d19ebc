"""Small sweep specs that run in well under a second per point."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

HBM_SWEEP = """\
name: small
base: h100-sxm
parameters:
  hbm.bandwidth: {values: ["0.5 TB/s", "2 TB/s", "8 TB/s"]}
workloads:
  - kernel: gemm
    params: {M: 1024, N: 1024, K: 1024}
  - kernel: rmsnorm
    params: {rows: 2048, cols: 1024}
metrics: [latency_s, achieved_flops_per_s]
"""


@pytest.fixture
def spec_file(tmp_path):
    """Write a sweep spec (dedented) as tmp_path/NAME and return its path."""

    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write
