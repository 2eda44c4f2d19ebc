"""Split-K on the warp-specialized kernels (``split_k > 1`` with ``schedule=cooperative``):
CUTLASS's stream-K scheduler in its ``SplitK`` mode. Each tile's k-loop is cut into equal
units, every k-iteration runs once and the last unit of a tile reads its peers' fp32 partials
back; the search offers it only where the output tiles leave SMs idle, and cuBLAS's default
takes it there, so a skinny GEMM streams its weights from every SM."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.gemm_impls import cutlass
from accelsim.families.search import run_config, split_params

GEMM = get_family("gemm")
SKINNY = {"M": "32", "N": "8192", "K": "8192", "dtype": "bf16", "impl": "cublas"}
"""32 rows: 32 output tiles of 128 x 256 for 132 SMs."""
COOPERATIVE = {"block_m": "128", "block_n": "256", "schedule": "cooperative"}


@pytest.fixture(scope="module")
def h100():
    # one fixed clock, as the 0.6 below was sized: with the boost on the unsplit kernel runs at
    # 1.98 GHz, 73 us instead of 94 us, and the split (48 us, HBM-bound either way) saves less
    return load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"]).for_family("gemm")


def run(chip, shape: dict, config: dict):
    params = split_params(GEMM, shape)[0]
    return run_config(GEMM, params, GEMM.resolve_config(params, config, chip), chip)


def test_each_tile_is_cut_into_equal_units_whose_last_reads_the_others_partials(h100):
    split = run(h100, SKINNY, {**COOPERATIVE, "split_k": "4"})
    whole = run(h100, SKINNY, {**COOPERATIVE, "split_k": "1"})
    assert split.trace.metadata["stream_k"] == {"dp_tiles": 0, "sk_tiles": 32, "sk_units": 128}
    costs, plain = program_costs(split.trace, h100), program_costs(whole.trace, h100)
    assert costs.matrix_flops.sum() == pytest.approx(plain.matrix_flops.sum())
    assert costs.read_bytes.sum() == pytest.approx(plain.read_bytes.sum())  # A and B once, over the units
    partial = 32 * 256 * 4  # a 32-row tile's fp32 accumulator
    assert costs.pinned_bytes.sum() == pytest.approx(32 * 3 * partial * 2)  # 3 partials a tile, written and read
    assert costs.write_bytes.sum() == pytest.approx(plain.write_bytes.sum())  # C stored once


def test_the_split_streams_the_weights_from_every_sm(h100):
    split_s = run(h100, SKINNY, {**COOPERATIVE, "split_k": "4"}).sim.latency_s
    whole_s = run(h100, SKINNY, {**COOPERATIVE, "split_k": "1"}).sim.latency_s
    weights_s = 8192 * 8192 * 2 / h100.hbm.bandwidth_bytes_per_s
    assert weights_s < split_s < 0.6 * whole_s


def test_the_search_offers_splits_only_to_grids_that_leave_sms_idle(h100):
    skinny = split_params(GEMM, SKINNY)[0]
    square = split_params(GEMM, {**SKINNY, "M": "4096"})[0]
    assert {c["split_k"] for c in GEMM.config_space(skinny, h100) if c.get("schedule") == "cooperative"} == {1, 2, 4, 8}
    assert {c["split_k"] for c in GEMM.config_space(square, h100)} == {1}
    assert all(c["schedule"] == "cooperative" for c in GEMM.config_space(skinny, h100) if c["split_k"] > 1)


def test_cublas_default_splits_a_sub_wave_grid_to_fill_the_sms(h100):
    skinny = split_params(GEMM, SKINNY)[0]
    config = GEMM.default_config(skinny, h100)
    assert (config["block_m"], config["block_n"], config["split_k"]) == (128, 256, 4)  # 32 x 4 >= 3/4 of 132
    assert GEMM.default_config(split_params(GEMM, {**SKINNY, "M": "4096"})[0], h100)["split_k"] == 1


def test_a_split_the_scheduler_cannot_run_exactly_keeps_the_family_split(h100):
    shape = {**SKINNY, "K": "8256"}  # 129 k-blocks of 64: not a multiple of 2
    params = split_params(GEMM, shape)[0]
    config = GEMM.resolve_config(params, {**COOPERATIVE, "split_k": "2"}, h100)
    assert cutlass.split_k_decomposition(params, config) is None
    trace = GEMM.build(params, config, h100)
    assert "stream_k" not in trace.metadata and trace.kernel.grid[1] == 2  # the family's split: tiles x splits
    assert GEMM.default_config(params, h100)["split_k"] == 4  # the default splits all the same
    assert run(h100, shape, {**COOPERATIVE, "split_k": "4"}).sim.latency_s < 0.6 * run(
        h100, shape, {**COOPERATIVE, "split_k": "1"}).sim.latency_s
