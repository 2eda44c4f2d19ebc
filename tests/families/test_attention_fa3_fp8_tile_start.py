"""FlashAttention-3's fp8 forward starts each tile late (flash-attention ``load_fp8``, 5018ac6a to v2.7.0): the
producer loads the next tile's Q only once the consumers have finished the tile before, and
transposes its first V block only once that tile's O has left shared memory, which O shares with the
transposed V. So its persistent units' first loads come after the store (``next_loads:
after_store``) and the first V block's transpose (read and written back through shared memory) is on
the tile's chain. cuDNN's fp8 forward (assumed as FA3's; one CTA a tile) transposes too; FA3's bf16
forward and Triton's fp8 one do neither, and no Blackwell kernel transposes (only Hopper's 8-bit
wgmma needs a K-major B)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
SHORT = {"batch": "32", "heads": "16", "seq_q": "512", "head_dim": "128"}


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm")


def build(chip, **params):
    values = parse_values(FAMILY.params, {**SHORT, **params}, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), config


def first_step_local(trace) -> list:
    return [x for x in trace.templates[0].steps[0].transfers if x.level == "local"]


def test_fa3_fp8_tiles_load_after_the_store_and_transpose_their_first_v_block(h100):
    trace, config = build(h100, dtype="fp8", impl="fa3")
    assert trace.kernel.execution.next_loads == "after_store"
    local = first_step_local(trace)
    assert sorted(x.direction for x in local) == ["read", "write"]
    assert all(x.bytes == config["block_n"] * 128 for x in local)  # one fp8 V block, each way
    loop = trace.templates[0].steps[1]
    assert not any(x.level == "local" for x in loop.transfers)  # the steady state's are the producer's


@pytest.mark.parametrize("params", [{"dtype": "bf16", "impl": "fa3"}, {"dtype": "fp8", "impl": "triton"}])
def test_others_prefetch_and_transpose_nothing(h100, params):
    trace, _ = build(h100, **params)
    execution = trace.kernel.execution
    assert execution is None or execution.next_loads == "prefetched"
    assert not first_step_local(trace)


def test_cudnn_fp8_transposes_its_first_v_block_on_hopper_only(h100):
    trace, config = build(h100, dtype="fp8", impl="cudnn")
    assert [x.bytes for x in first_step_local(trace)] == [config["block_n"] * 128] * 2
    assert trace.kernel.execution.persistent_ctas is None  # one CTA a tile: its loads are its own
    blackwell, _ = build(load_arch("b200"), dtype="fp8", impl="cudnn")
    assert not first_step_local(blackwell)


def test_a_short_fp8_tile_costs_more_than_without_its_late_start(h100):
    """The same trace with the tile start prefetched and no transpose is faster: what was added."""
    trace, _ = build(h100, dtype="fp8", impl="fa3")
    steps = trace.templates[0].steps
    plain = trace.model_copy(update={
        "kernel": trace.kernel.model_copy(update={
            "execution": trace.kernel.execution.model_copy(update={"next_loads": "prefetched"})}),
        "templates": [trace.templates[0].model_copy(update={"steps": [
            steps[0].model_copy(update={"transfers": [x for x in steps[0].transfers if x.level != "local"]}),
            *steps[1:]]})]})
    late, early = simulate_kernel(trace, h100), simulate_kernel(plain, h100)
    assert late.latency_s > early.latency_s * 1.03
    assert late.hbm_bytes == early.hbm_bytes
