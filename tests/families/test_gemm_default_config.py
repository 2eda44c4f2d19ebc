"""The Triton-style GEMM's default config on GPUs (``impl=triton``): the large tutorial tiles
where they fill the SMs, smaller tiles and then split-K for skinny problems (decode GEMVs), and
stages that fit the chip's shared memory."""

from __future__ import annotations

import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import best_config, run_config, split_params

GEMM = get_family("gemm")


def params(m: int, n: int, k: int, dtype: str = "bf16") -> dict:
    return split_params(GEMM, {"M": str(m), "N": str(n), "K": str(k), "dtype": dtype, "impl": "triton"})[0]


def default(m, n, k, arch="h100-sxm", dtype="bf16") -> dict:
    return GEMM.default_config(params(m, n, k, dtype), load_arch(arch))


def tiles(config, m, n) -> int:
    return math.ceil(m / config["block_m"]) * math.ceil(n / config["block_n"]) * config["split_k"]


def test_large_problems_keep_the_tutorial_tiles():
    assert default(4096, 4096, 4096) == {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 8, "split_k": 1,
                                         "num_stages": 4, "num_warps": 8}
    assert default(4096, 4096, 4096, dtype="fp32")["block_n"] == 128
    assert default(2048, 2048, 2048)["block_n"] == 256  # 128 tiles on 132 SMs: one wave, 97% full


@pytest.mark.parametrize("m, n, k", [(1, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (16, 1024, 8192),
                                     (512, 512, 8192)])
def test_skinny_problems_fill_the_sms(m, n, k):
    chip = load_arch("h100-sxm")
    config = default(m, n, k)
    assert config["block_n"] < 256
    assert tiles(config, m, n) >= 0.75 * chip.num_cores or config["split_k"] == 8
    assert k // config["split_k"] >= 256


def test_a_gemv_default_is_as_fast_as_the_searched_config():
    chip = load_arch("h100-sxm")
    p = params(1, 8192, 8192)
    searched = best_config(GEMM, p, chip).best.sim.latency_s
    assert run_config(GEMM, p, GEMM.resolve_config(p, {}, chip), chip).sim.latency_s <= 1.02 * searched
    # the tutorial tiles would leave 100 of 132 SMs idle
    tutorial = GEMM.resolve_config(p, {"block_m": "128", "block_n": "256", "block_k": "64", "num_stages": "4",
                                          "num_warps": "8", "split_k": "1"}, chip)
    assert run_config(GEMM, p, tutorial, chip).sim.latency_s > 1.5 * searched


def test_stages_drop_until_the_chip_holds_them():
    # 4 stages of 128x64 + 64x256 bf16 tiles (48 KiB a buffer) keep 4 buffers on an H100
    # (192 KiB, within its 227 KiB) but, on a GPU whose MMA is synchronous, 3 (Triton's
    # mma.sync pipeline, Chip.staged_buffers): 144 KiB, within an A100 block's 163 KiB
    assert (default(2048, 2048, 2048, arch="a100-sxm4-80gb")["num_stages"]) == 4
    # with 130 KiB a block, 4 stages (144 KiB) do not fit and 3 (96 KiB) do
    small = load_arch("a100-sxm4-80gb", ["local_memory.max_per_program=130 KiB"])
    p = params(2048, 2048, 2048)
    config = GEMM.default_config(p, small)
    assert (config["block_n"], config["num_stages"]) == (256, 3)
    assert run_config(GEMM, p, GEMM.resolve_config(p, {}, small), small).sim.latency_s > 0


def test_a_synchronous_mma_keeps_one_buffer_fewer():
    """Triton's pipeliner keeps num_stages buffers of each staged tile where the MMA reads
    shared memory asynchronously (Hopper wgmma: one stays with the MMA in flight) and
    num_stages - 1 where it takes registers (Ampere mma.sync)."""
    p = params(2048, 2048, 2048)
    config = {"block_m": "128", "block_n": "128", "block_k": "32", "num_stages": "3", "num_warps": "4",
              "group_m": "8", "split_k": "1"}
    stage = (128 * 32 + 32 * 128) * 2
    for arch, buffers in (("h100-sxm", 3), ("a100-sxm4-80gb", 2), ("b200", 3), ("mi300x", 3)):
        chip = load_arch(arch)
        trace = GEMM.build(p, GEMM.resolve_config(p, config, chip), chip)
        assert trace.kernel.resources.local_memory_bytes == buffers * stage, arch


def test_a_split_k_not_given_follows_the_tile_that_was():
    """The default's split was chosen for its own tile: on 1024x1024x8192 the 64x128
    default fills the SMs unsplit; a 128x128 tile given alone makes half the tiles and
    splits K in two; a 32x32 tile needs no split; a split given is kept."""
    family, chip = get_family("gemm"), load_arch("h100-sxm")
    params = {"M": 1024, "N": 1024, "K": 8192, "dtype": "bf16", "batch": 1, "groups": 1, "impl": "triton"}
    assert family.default_config(params, chip)["split_k"] == 1
    assert family.resolve_config(params, {"block_m": 128, "block_n": 128}, chip)["split_k"] == 2
    assert family.resolve_config(params, {"block_m": 32, "block_n": 32}, chip)["split_k"] == 1
    assert family.resolve_config(params, {"block_m": 128, "block_n": 128, "split_k": 1}, chip)["split_k"] == 1
