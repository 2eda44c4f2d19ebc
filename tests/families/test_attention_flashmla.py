"""FlashMLA's dense MLA decode (``impl=flashmla``): its tile scheduler hands every KV block of
every request to exactly one program, balanced; the latent cache is read once (the value is
part of the key); a request split between programs is merged by the combine kernel; at many
query heads per KV head the tensor cores bound it, at few the HBM."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families.attention_impls.flashmla import FIXED_OVERHEAD_BLOCKS, HEAD_DIM_K, schedule
from tests.families.test_attention_impls import build
from tests.trace_totals import tensor_bytes

H100 = load_arch("h100-sxm")
MLA = {"batch": 128, "heads": 16, "kv_heads": 1, "seq_q": 1, "seq_kv": 4096, "head_dim": HEAD_DIM_K, "impl": "flashmla"}


@pytest.mark.parametrize(("batch", "blocks", "parts"), [(128, 64, 132), (1, 1024, 132), (7, 3, 132), (300, 17, 66)])
def test_the_scheduler_covers_every_block_once_with_balanced_payloads(batch, blocks, parts):
    programs = schedule(batch, blocks, parts)
    covered = sorted((r, b) for chunks in programs for r, first, n in chunks for b in range(first, first + n))
    assert covered == [(r, b) for r in range(batch) for b in range(blocks)]
    loads = [sum(n + FIXED_OVERHEAD_BLOCKS for _, _, n in chunks) for chunks in programs]
    assert max(loads) <= -(-batch * (blocks + FIXED_OVERHEAD_BLOCKS) // parts) + FIXED_OVERHEAD_BLOCKS


def test_the_latent_cache_is_read_once_per_row_block():
    trace, _ = build(H100, **MLA)
    assert tensor_bytes(trace)["KV", "read"] == 128 * 4096 * HEAD_DIM_K * 2
    two_blocks, _ = build(H100, **{**MLA, "heads": 128})  # 128 query rows: two 64-row programs per KV head
    assert tensor_bytes(two_blocks)["KV", "read"] == 2 * 128 * 4096 * HEAD_DIM_K * 2


def test_a_split_request_is_merged_and_an_unsplit_one_is_not():
    trace, _ = build(H100, **{**MLA, "batch": 2})  # two long requests over 132 programs: every one split
    totals = tensor_bytes(trace)
    assert totals["O_partial", "write"] > 0 and totals["O_partial", "read"] == totals["O_partial", "write"]
    one_each, _ = build(H100, **{**MLA, "batch": 132, "seq_kv": 64})  # one block a request, a program each
    assert ("O_partial", "write") not in tensor_bytes(one_each)


def test_few_heads_are_hbm_bound_and_many_tensor_bound():
    assert simulate_kernel(build(H100, **MLA)[0], H100).bound == "hbm"
    # at one fixed clock: with the boost on it throttles to 1.59 GHz, where the pipe's per-cycle 0.96
    # passes the shared-memory operand reads and the bound is local_memory (docs/power.md)
    folded = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])
    assert simulate_kernel(build(folded, **{**MLA, "heads": 128, "seq_q": 2})[0], folded).bound == "matrix_unit"


def test_other_head_dims_are_refused_in_one_line():
    with pytest.raises(InputError, match="head_dim=576"):
        build(H100, **{**MLA, "head_dim": 128})
    with pytest.raises(InputError, match="Hopper"):
        build(load_arch("b200"), **MLA)
