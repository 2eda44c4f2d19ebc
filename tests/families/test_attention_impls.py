"""Attention implementations (``--param impl``): each chip's default, refusals where one
does not run, what each tells the engine (tiles, consumer schedule), and the unfused
kernels' bytes."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.attention_impls import IMPLS, default_impl
from accelsim.families.base import parse_values
from tests.trace_totals import tensor_bytes

FAMILY = get_family("attention")
H100 = load_arch("h100-sxm")


def build(chip, **params):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in params.items()}, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), config


@pytest.mark.parametrize(("arch", "impl"), [("h100-sxm", "fa3"), ("h200-sxm", "fa3"), ("b200", "cudnn"),
                                            ("a100-sxm4-80gb", "fa2"), ("mi300x", "triton"), ("tpu-v5e", "pallas")])
def test_each_chip_defaults_to_the_implementation_its_users_run(arch, impl):
    assert default_impl(load_arch(arch)) == impl


def test_the_parameter_lists_every_implementation_with_its_summary():
    param = next(p for p in FAMILY.params if p.name == "impl")
    assert set(param.choices) == {"default", *IMPLS}
    assert all(impl.summary in param.help for impl in IMPLS.values())


def test_an_implementation_is_refused_where_it_does_not_run():
    with pytest.raises(InputError, match="impl=fa3 is a Hopper .* a100-sxm4-80gb runs: .*fa2"):
        build(load_arch("a100-sxm4-80gb"), heads=16, seq_q=1024, impl="fa3")
    with pytest.raises(InputError, match="decode kernel"):
        build(H100, heads=16, seq_q=1024, impl="flashinfer")


def test_fa3_runs_its_library_tiles_warp_specialized():
    trace, config = build(H100, batch=2, heads=16, seq_q=8192, head_dim=128, impl="fa3")
    assert (config["block_m"], config["block_n"], config["num_warps"]) == (128, 176, 12)
    execution = trace.kernel.execution
    assert (execution.consumers, execution.consumer_chains, execution.loads) == (2, "shared", "tma")
    loop = next(s for t in trace.templates for s in t.steps if any(c.unit == "matrix" for c in s.compute))
    assert loop.chained is False
    assert all(c.overlapped for c in loop.compute if c.unit == "vector")
    assert not any(c.overlapped for c in loop.compute if c.unit == "special")


def test_cudnn_on_blackwell_overlaps_its_consumers_chains():
    """tcgen05 MMAs accumulate in tensor memory, not in the softmax warps' registers."""
    b200_trace, _ = build(load_arch("b200"), batch=2, heads=16, seq_q=4096, head_dim=64, impl="cudnn")
    h100_trace, _ = build(H100, batch=2, heads=16, seq_q=4096, head_dim=64, impl="cudnn")
    assert b200_trace.kernel.execution.consumer_chains == "separate"
    assert h100_trace.kernel.execution.consumer_chains == "shared"


def test_causal_fa3_takes_its_square_tile():
    _, config = build(H100, batch=2, heads=16, seq_q=8192, head_dim=128, causal=True, impl="fa3")
    assert (config["block_m"], config["block_n"]) == (128, 128)


def test_warp_specialized_kernels_outrun_the_chained_ones_on_hopper():
    """FA3's paper: 1.5-2x FlashAttention-2 on an H100 at long sequences."""
    times = {impl: simulate_kernel(build(H100, batch=2, heads=16, seq_q=8192, head_dim=128, impl=impl)[0],
                                   H100).latency_s for impl in ("fa3", "cudnn", "fa2", "triton")}
    assert times["fa3"] < times["fa2"] / 1.2 and times["cudnn"] < times["triton"] / 1.2


def test_cudnn_shrinks_its_key_tile_to_fit_two_stages():
    _, config = build(H100, batch=2, heads=8, seq_q=8192, head_dim=256, impl="cudnn")
    assert config["block_n"] == 64


@pytest.mark.parametrize(("causal", "backward", "kernels"), [(False, False, 6), (True, False, 10),
                                                             (False, True, 11)])
def test_unfused_attention_is_the_eager_ops_kernels(causal, backward, kernels):
    trace, _ = build(H100, batch=2, heads=4, seq_q=1024, head_dim=64, causal=causal, impl="unfused",
                     **{"pass": "bwd" if backward else "fwd"})
    assert len(trace.kernel.kernel_starts) + 1 == kernels


def test_unfused_attention_writes_and_reads_its_scores_through_memory():
    trace, _ = build(H100, batch=2, heads=4, seq_q=1024, head_dim=64, impl="unfused")
    scores = 2 * 4 * 1024 * 1024 * 2
    totals = tensor_bytes(trace)
    assert totals["S", "write"] == totals["S", "read"] == scores
    assert totals["P", "write"] == totals["P", "read"] == scores
    assert simulate_kernel(trace, H100).hbm_bytes >= 3 * scores
