"""The captured Triton traces shipped in ``traces/triton/`` load, replay on an H100 and
hold exactly the bytes and flops their kernels move and compute; re-capturing them
gives the same trace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.families.attention import useful_flops
from accelsim.trace.kernel import load_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces" / "triton"
CHIP = load_arch("h100-sxm")


def totals(name: str) -> tuple[float, float, float]:
    costs = program_costs(load_trace(TRACES / name), CHIP)
    return costs.read_bytes.sum(), costs.write_bytes.sum(), costs.matrix_flops.sum()


def test_matmul_512():
    n, size = 512, 2
    col_tiles, row_tiles = n // 256, n // 128  # each A row of tiles is read once per column of tiles
    assert totals("matmul_512.json") == (n * n * size * (col_tiles + row_tiles), n * n * size, 2.0 * n**3)


def test_attention_causal_512():
    heads, seq, d = 4, 512, 64
    params = {"batch": 1, "heads": heads, "kv_heads": 0, "seq_q": seq, "seq_kv": 0, "head_dim": d,
              "causal": True, "dtype": "bf16", "pass": "fwd"}
    q_blocks = seq // 128
    kv_blocks_read = sum(2 * (i + 1) for i in range(q_blocks))  # 64-key blocks up to each diagonal
    read, write, flops = totals("attention_causal_512.json")
    assert read == heads * (seq * d * 2 + 2 * kv_blocks_read * 64 * d * 2)
    assert write == heads * seq * (d * 2 + 4)  # O and the fp32 log-sum-exp
    assert flops == useful_flops(params)


def test_layernorm_1k():
    rows = cols = 1024
    read, write, flops = totals("layernorm_1k.json")
    assert read == rows * cols * 2 + rows * 2 * cols * 2  # X once, weight and bias per program (one row each)
    assert write == rows * cols * 2 + 2 * rows * 4  # Y, mean and rstd
    assert flops == 0


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.json")), ids=lambda p: p.name)
def test_replays_on_an_h100(path):
    trace = load_trace(path)
    sim = simulate_kernel(trace, CHIP)
    assert sim.latency_s > 0
    assert trace.metadata["capture"] == "accelsim.capture.triton"


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(TRACES.glob("*.json")), ids=lambda p: p.name)
def test_recapturing_gives_the_shipped_trace(path, monkeypatch):
    pytest.importorskip("triton")
    from accelsim.capture.triton import capture_triton

    shipped = load_trace(path)
    file, _, function = shipped.metadata["source"].rpartition(":")
    monkeypatch.chdir(ROOT)
    assert os.environ.get("TRITON_INTERPRET") == "1"
    captured = capture_triton(file, function, shipped.metadata["params"])
    assert captured == shipped
