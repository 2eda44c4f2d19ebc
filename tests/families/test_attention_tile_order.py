"""FlashAttention-3's forward runs its tiles as its schedulers do (``hopper/tile_scheduler.hpp``):
one persistent CTA per SM; causal, longest first within sections of heads whose K and V fit its
L2 share, otherwise in the grid's order."""

from __future__ import annotations

import numpy as np

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.attention_impls import fa3
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
H100 = load_arch("h100-sxm")


def build(**params):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in params.items()}, "test")
    config = FAMILY.resolve_config(values, {}, H100)
    return FAMILY.build(values, config, H100)


def problem(**params):
    p = {"batch": 1, "heads": 8, "group": 1, "seq_q": 1024, "seq_kv": 1024, "head_dim": 128, "dtype": "bf16",
         "causal": True, "backward": False, "decode": False}
    return {**p, **params}


def test_every_tile_runs_once_longest_first_within_each_section():
    p = problem(batch=3, heads=5, seq_kv=1024 * 64)  # 32 MiB of K and V per head: one head a section
    q_block, pair = fa3.tile_order(p, 128)
    n_q = 8
    assert sorted(zip(pair.tolist(), q_block.tolist())) == [(h, q) for h in range(15) for q in range(n_q)]
    assert q_block[:n_q].tolist() == list(range(n_q - 1, -1, -1))
    assert set(pair[:n_q].tolist()) == {0}


def test_a_section_holds_the_heads_whose_kv_fits_the_schedulers_l2_share():
    # 1024 keys x 128 x 2 bytes x (K, V) = 512 KiB a head: 64 heads a section, here a remainder of 12
    p = problem(batch=3, heads=4, seq_kv=1024)
    assert fa3.heads_per_section(p) == 64
    q_block, pair = fa3.tile_order(p, 128)
    assert pair[:12].tolist() == list(range(12)) and set(q_block[:12].tolist()) == {7}
    # GQA: a section grows by the query heads per KV head; 3 MiB a head rounds up to 16 heads
    assert fa3.heads_per_section(problem(heads=32, group=4, seq_kv=6 * 1024)) == 4 * 16


def test_non_causal_tiles_keep_the_grids_order_on_persistent_ctas():
    assert fa3.tile_order(problem(causal=False), 128) is None
    trace = build(batch=2, heads=4, seq_q=2048, head_dim=128, impl="fa3")
    assert trace.kernel.grid == [16, 4, 2] and "q_block" not in trace.program_vars
    execution = trace.kernel.execution
    assert (execution.persistent_ctas, execution.epilogue) == (H100.num_cores, "overlapped")


def test_fp8_tiles_wait_for_their_store_before_the_next_tiles_loads():
    """FA3's fp8 kernel frees Q after its last PV and transposes the next V into the store's
    shared memory: the epilogue is on the consumers' way."""
    trace = build(batch=2, heads=4, seq_q=2048, head_dim=128, impl="fa3", dtype="fp8")
    assert trace.kernel.execution.epilogue == "exposed"


def test_the_causal_trace_reads_each_programs_own_q_block():
    trace = build(batch=2, heads=4, seq_q=2048, head_dim=128, causal=True, impl="fa3")
    assert trace.kernel.grid == [128] and trace.kernel.execution.persistent_ctas == H100.num_cores
    q_block = np.asarray(trace.program_vars["q_block"])
    assert q_block[:8].tolist() == [15] * 8  # eight (batch, head) pairs fit one section
    # the last q block attends every key: 16 blocks of 128, 15 whole and the diagonal
    assert set(np.asarray(trace.program_vars["n_unmasked"])[q_block == 15].tolist()) == {15}


def test_longest_first_shortens_a_causal_kernels_tail():
    """Two waves of tiles of very unequal length: the grid's order leaves the longest for last."""
    longest_first = simulate_kernel(build(batch=1, heads=16, seq_q=4096, head_dim=128, causal=True, impl="fa3"), H100)
    values = parse_values(FAMILY.params, {"batch": "1", "heads": "16", "seq_q": "4096", "head_dim": "128",
                                          "causal": "true", "impl": "fa3"}, "test")
    config = FAMILY.resolve_config(values, {}, H100)
    grid_order = simulate_kernel(FAMILY.build({**values, "impl": "cudnn"}, config, H100), H100)
    assert longest_first.latency_s < 0.97 * grid_order.latency_s
