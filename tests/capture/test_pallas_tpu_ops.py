"""JAX's own Pallas TPU kernels (jax 0.10.2: splash attention, ragged paged attention,
megablox grouped matmul), captured and simulated on v5e and v6e: the work and bytes are
what the kernels do by their own block logic, and explore ranks their block sizes."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest

pytest.importorskip("jax")

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.pallas import capture_pallas  # noqa: E402
from accelsim.engine.chip import simulate_kernel  # noqa: E402
from tests.capture.pallas_totals import totals  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "kernels" / "pallas" / "tpu_ops.py"
SPLASH = {"heads": "2", "seq": "1024", "head_dim": "128", "block_q": "256", "block_kv": "256"}
RAGGED = {"seqs": "4", "q_lens": "1,1,128,512", "kv_lens": "1024,2048,512,1536", "q_heads": "8", "kv_heads": "2",
          "page_size": "16", "pages_per_seq": "128", "num_kv_pages_per_block": "8", "num_queries_per_block": "64"}


@functools.cache
def captured(function: str, params: tuple):
    return capture_pallas(str(OPS), function, dict(params))


def capture(function: str, params: dict):
    return captured(function, tuple(sorted(params.items())))


def test_splash_attention_skips_the_masked_blocks():
    trace = capture("splash_attention", SPLASH)
    blocks = 1024 // 256
    pairs = 2 * blocks * (blocks + 1) // 2  # causal: each head's blocks on and below the diagonal
    flops, _ = totals(trace)
    assert flops[("matrix", True)] == pairs * 2 * (2 * 256 * 256 * 128)  # QK^T and PV per pair


def ragged_kv_blocks(q_lens: list[int], kv_lens: list[int], queries_per_block: int, tokens_per_kv_block: int) -> int:
    """KV blocks ragged paged attention fetches: for each block of queries, every sequence
    with queries in it, all of its KV in blocks of ``tokens_per_kv_block``."""
    starts = [sum(q_lens[:i]) for i in range(len(q_lens))]
    total = 0
    for first in range(0, sum(q_lens), queries_per_block):
        for start, q_len, kv_len in zip(starts, q_lens, kv_lens):
            if start < first + queries_per_block and start + q_len > first:
                total += math.ceil(kv_len / tokens_per_kv_block)
    return total


def test_ragged_paged_attention_fetches_each_sequence_s_pages_per_query_block():
    trace = capture("ragged_paged_attention", RAGGED)
    page_bytes = 16 * (2 * 2) * 128 * 2  # page_size x combined K/V heads x head_dim, bf16
    blocks = ragged_kv_blocks([1, 1, 128, 512], [1024, 2048, 512, 1536], 64, 16 * 8)
    _, moved = totals(trace)
    assert blocks == 144 and moved[("in1", "read")] == blocks * 8 * page_bytes
    assert "capture_bounds" not in trace.metadata  # every branch and loop followed


def test_grouped_matmul_flops_are_the_groups_products():
    trace = capture("grouped_matmul", {"m": "1024", "k": "512", "n": "512", "groups": "4"})
    flops, moved = totals(trace)
    assert flops[("matrix", True)] == 2 * 1024 * 512 * 512  # groups of 256 rows: tiles never straddle
    assert moved[("out0", "write")] == 1024 * 512 * 4


@pytest.mark.parametrize("arch", ["tpu-v5e", "tpu-v6e"])
@pytest.mark.parametrize("function", ["splash_attention", "ragged_paged_attention"])
def test_simulates_on_v5e_and_v6e(arch, function):
    trace = capture(function, SPLASH if function == "splash_attention" else RAGGED)
    chip = load_arch(arch)
    latency = simulate_kernel(trace, chip).latency_s
    flops, moved = totals(trace)
    assert latency >= sum(moved.values()) / chip.hbm.bandwidth_bytes_per_s
    assert latency >= flops[("matrix", True)] / chip.matrix_flops_per_s("bf16")


def test_explore_ranks_splash_block_sizes(cli, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("grid:\n  block_q: [128, 512]\n  block_kv: [128, 512]\n")
    params = [arg for k, v in SPLASH.items() if not k.startswith("block") for arg in ("--param", f"{k}={v}")]
    result = cli("explore", "--arch", "tpu-v6e", "--kernel", f"{OPS}:splash_attention", *params, "--space", str(space))
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line[:1].isdigit()]
    assert len(rows) == 4 and "block_q=128 block_kv=128" in rows[-1]  # smallest blocks: most grid steps
