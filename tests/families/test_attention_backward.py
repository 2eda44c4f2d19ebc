"""The attention family's GPU backward: ``bwd-kernel`` is the backward kernel alone (our
Triton kernel, as capture checks it); ``bwd`` the whole call, with a first kernel that
computes Delta and clears the fp32 dQ and a last one that casts dQ, as three kernels of
one trace."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.attention import useful_flops
from accelsim.families.base import parse_values

CHIP = load_arch("h100-sxm")
FAMILY = get_family("attention")


def run(seq: int, pass_: str):
    given = {"batch": "4", "heads": "16", "seq_q": str(seq), "head_dim": "128", "pass": pass_, "impl": "triton"}
    params = parse_values(FAMILY.params, given, "test")
    trace = FAMILY.build(params, FAMILY.resolve_config(params, {}, CHIP), CHIP)
    return trace, simulate_kernel(trace, CHIP)


@pytest.mark.parametrize("seq", [1024, 4096])
def test_the_whole_backward_adds_its_elementwise_kernels(seq):
    kernel_trace, kernel = run(seq, "bwd-kernel")
    whole_trace, whole = run(seq, "bwd")
    rows = 4 * 16 * seq * 128
    assert kernel_trace.kernel.kernel_starts is None
    side = whole_trace.num_programs - kernel_trace.num_programs
    assert whole_trace.kernel.kernel_starts == [side // 2, side // 2 + kernel_trace.num_programs]
    # Delta reads O and dO and clears the fp32 dQ; the cast reads dQ and writes it in bf16
    extra = 2 * rows * 2 + rows * 4 + rows * 4 + rows * 2
    assert whole.hbm_bytes - kernel.hbm_bytes == pytest.approx(extra, rel=0.01)
    assert whole.flops == pytest.approx(kernel.flops + 2 * rows, rel=1e-9)
    matmuls = useful_flops({"batch": 4, "heads": 16, "kv_heads": 0, "seq_q": seq, "seq_kv": 0, "head_dim": 128,
                            "causal": False, "dtype": "bf16", "pass": "bwd"})
    assert matmuls < kernel.flops < 1.01 * matmuls  # and the softmax work
    # the extra kernels run after and before the kernel, at HBM speed: a few percent at
    # s=4096, more where the kernel's s^2 work is small
    share = whole.latency_s / kernel.latency_s - 1
    assert (0.02 < share < 0.10) if seq == 4096 else (0.10 < share < 0.30)


def test_configs_that_would_spill_registers_are_refused():
    """64x128 with 8 warps: the dK and dV accumulators, S, dP and a dQ partial need about
    296 registers a thread (the compiled kernel spills 1.1 KB there); 64x64 fits."""
    from accelsim.families.base import fits

    params = parse_values(FAMILY.params, {"heads": "16", "seq_q": "4096", "head_dim": "128", "pass": "bwd",
                                            "impl": "triton"}, "test")
    config = {"num_stages": 2, "num_warps": 8, "split_kv": 1}
    assert not fits(FAMILY.check, params, {**config, "block_m": 64, "block_n": 128}, CHIP)
    assert fits(FAMILY.check, params, {**config, "block_m": 64, "block_n": 64}, CHIP)
