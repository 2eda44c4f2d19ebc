"""The L2 is write-back: a block written again while it is still cached reaches HBM once,
on its last write (atomic accumulation of one tile by many programs, as the dQ of a
FlashAttention backward); distinct writes and writes too far apart all reach HBM."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.reuse import absorbed_write_bytes

BLOCK = 4096


def write_block(index) -> dict:
    return {"transfers": [{"tensor": "X", "block": [index], "bytes": BLOCK, "direction": "write"}]}


def test_every_write_of_one_block_but_the_last_is_absorbed(kernel_trace):
    trace = kernel_trace([4], [write_block(0)])
    assert absorbed_write_bytes(trace, concurrency=4, capacity_bytes=1e9).tolist() == [BLOCK] * 3 + [0.0]


def test_distinct_blocks_all_reach_hbm(kernel_trace):
    trace = kernel_trace([8], [write_block("p0")])
    assert not absorbed_write_bytes(trace, concurrency=8, capacity_bytes=1e9).any()


@pytest.mark.parametrize(("others", "absorbed"), [(5, True), (6, False)])
def test_a_rewrite_is_absorbed_only_if_the_traffic_in_between_fits(kernel_trace, others, absorbed):
    """One program per wave, each reading a block of Y then writing a block of X: X0, then
    ``others`` distinct blocks, then X0 again. In between: the others' reads and writes and
    the last program's read, (2 x others + 1) blocks; the cache holds 11."""
    order = [0, *range(1, others + 1), 0]
    trace = kernel_trace([len(order)], [
        {"transfers": [{"tensor": "Y", "block": ["p0"], "bytes": BLOCK}]},
        {"transfers": [{"tensor": "X", "block": ["blk"], "bytes": BLOCK, "direction": "write"}]},
    ], program_vars={"blk": order})
    served = absorbed_write_bytes(trace, concurrency=1, capacity_bytes=11 * BLOCK)
    assert served[0] == (BLOCK if absorbed else 0.0)
    assert served[1:].sum() == 0.0


def test_accumulating_one_tile_costs_hbm_once_in_a_simulation(kernel_trace):
    sim = simulate_kernel(kernel_trace([4], [write_block(0)]), load_arch("h100-sxm"))
    assert sim.hbm_bytes == BLOCK


def test_the_attention_backward_writes_dq_to_hbm_about_once():
    """Each K/V block's program adds into every dQ tile of its head: 64 adds a tile here,
    absorbed in the L2, so HBM carries dQ (fp32) about once, not 64 times."""
    from accelsim.families import get_family
    from accelsim.families.base import parse_values

    chip = load_arch("h100-sxm")
    family = get_family("attention")
    params = parse_values(family.params, {"batch": "1", "heads": "4", "seq_q": "4096", "head_dim": "128",
                                          "pass": "bwd-kernel"}, "test")
    trace = family.build(params, family.resolve_config(params, {}, chip), chip)
    sim = simulate_kernel(trace, chip)
    dq = 4 * 4096 * 128 * 4
    inputs = 4 * 4096 * 128 * 2 * 4  # Q, K, V, dO once each
    assert sim.hbm_bytes < 2 * (dq + inputs)
