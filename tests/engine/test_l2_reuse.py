"""Reuse of HBM blocks in the L2: a read hits if the same block was read before and the
bytes read in between fit in the cache; launch order decides how far apart reuses are."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.reuse import cache_hit_bytes
from accelsim.families import gemm
from accelsim.families.base import parse_values

BLOCK = 4096


def read_block(index) -> dict:
    return {"transfers": [{"tensor": "X", "block": [index], "bytes": BLOCK}]}


def test_second_reader_in_a_wave_hits(kernel_trace):
    trace = kernel_trace([2], [read_block(0)])
    assert cache_hit_bytes(trace, concurrency=2, capacity_bytes=1e9).tolist() == [0.0, BLOCK]


def test_distinct_blocks_never_hit(kernel_trace):
    trace = kernel_trace([8], [read_block("p0")])
    assert not cache_hit_bytes(trace, concurrency=8, capacity_bytes=1e9).any()


def test_hit_bytes_are_floats_even_when_nothing_hits(kernel_trace):
    trace = kernel_trace([8], [read_block("p0")])
    assert cache_hit_bytes(trace, concurrency=8, capacity_bytes=1e9).dtype == np.float64


def test_shared_block_halves_hbm_traffic_in_a_simulation(ideal_chip, kernel_trace):
    sim = simulate_kernel(kernel_trace([2], [read_block(0)]), ideal_chip("h100-sxm"))
    assert sim.shared_cache_hit_rate == 0.5
    assert sim.hbm_bytes == BLOCK


@pytest.mark.parametrize(("others", "hits"), [(5, True), (6, False)])
def test_reread_hits_only_if_the_traffic_in_between_fits(kernel_trace, others, hits):
    """One program per wave: block 0, then ``others`` distinct blocks, then block 0 again."""
    order = [0, *range(1, others + 1), 0]
    trace = kernel_trace([len(order)], [read_block("blk")], program_vars={"blk": order})
    capacity = 5 * BLOCK  # the in-between traffic fits exactly when others == 5
    served = cache_hit_bytes(trace, concurrency=1, capacity_bytes=capacity)
    assert served[-1] == (BLOCK if hits else 0.0)
    assert served[:-1].sum() == 0.0


@pytest.mark.parametrize(("between_mb", "hits"), [(40, True), (60, False)])
def test_reread_within_one_program_against_the_h100_l2(kernel_trace, between_mb, hits):
    chip = load_arch("h100-sxm")  # 50 MB of L2
    chunk = 1_000_000
    steps = [
        read_block(0),
        {"repeat": between_mb, "loop_var": "i", "transfers": [{"tensor": "Y", "block": ["i"], "bytes": chunk}]},
        read_block(0),
    ]
    sim = simulate_kernel(kernel_trace([1], steps), chip)
    reads = 2 * BLOCK + between_mb * chunk
    assert sim.hbm_bytes == reads - (BLOCK if hits else 0)


def hit_rate(group_m: int) -> float:
    chip = load_arch("h100-sxm")
    params = parse_values(gemm.PARAMS, {"M": 8192, "N": 8192, "K": 8192, "impl": "triton"}, "test")
    config = gemm.FAMILY.resolve_config(params, {"block_m": 128, "block_n": 128, "group_m": group_m}, chip)
    return simulate_kernel(gemm.FAMILY.build(params, config, chip), chip).shared_cache_hit_rate


def test_group_m_swizzle_reuses_more_than_row_major_order():
    row_major, swizzled = hit_rate(1), hit_rate(8)
    assert swizzled > row_major + 0.1
