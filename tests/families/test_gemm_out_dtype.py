"""``out_dtype``: the dtype a GEMM writes C in. cuBLAS's GemmEx and CUTLASS kernels often
write fp32 from 16-bit inputs; that doubles the output's HBM traffic, which a cooperative
kernel's exposed epilogue pays in full."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params

GEMM = get_family("gemm")
COOPERATIVE = {"block_m": "128", "block_n": "256", "block_k": "64", "cluster": "2", "schedule": "cooperative"}


@pytest.fixture(scope="module")
def h100():
    # one fixed clock: with the boost on the fp16 kernel throttles to 1.71 GHz and the fp32 one,
    # idle in its longer epilogue, to 1.77 GHz, which hides part of the wider store
    return load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])


def traced(chip, config=COOPERATIVE, **given):
    params = split_params(GEMM, {k: str(v) for k, v in {"M": 2048, "N": 2048, "K": 2048, "dtype": "fp16",
                                                        "impl": "cutlass", **given}.items()})[0]
    return GEMM.build(params, GEMM.resolve_config(params, config, chip), chip)


def store_bytes(trace) -> int:
    return sum(t.bytes for template in trace.templates for step in template.steps for t in step.transfers
               if t.tensor == "C")


def test_an_fp32_output_doubles_what_each_tile_stores(h100):
    half, full = traced(h100), traced(h100, out_dtype="fp32")
    assert full.tensors["C"].dtype == "fp32" and half.tensors["C"].dtype == "fp16"
    assert store_bytes(full) == 2 * store_bytes(half) == 2 * 128 * 256 * 2


def test_a_cooperative_kernel_pays_the_wider_store(h100):
    """One wave of 128 tiles whose epilogue is not overlapped: 16 MB more to write."""
    half = simulate_kernel(traced(h100), h100).latency_s
    full = simulate_kernel(traced(h100, out_dtype="fp32"), h100).latency_s
    assert full > half + 8e6 / h100.hbm.bandwidth_bytes_per_s


def test_deepgemm_writes_bf16_only(h100):
    with pytest.raises(InputError, match="bf16"):
        traced(h100, config={}, dtype="fp8", impl="deepgemm", out_dtype="fp32")
