"""``accumulate``: C = A B + C (cuBLAS's beta = 1). The storing program reads its C tile
before the store, so an fp32 C (Megatron-LM's main gradient) costs its bytes twice."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from tests.families.test_gemm_out_dtype import COOPERATIVE, h100  # noqa: F401 (a fixture)
from tests.families.test_gemm_out_dtype import traced as traced_fp16


def traced(chip, config=COOPERATIVE, **given):
    """A bf16 GEMM writing an fp32 C, as a weight gradient into the main gradient."""
    return traced_fp16(chip, config, **{"dtype": "bf16", "out_dtype": "fp32", **given})


def c_bytes(trace, direction: str) -> int:
    return sum(t.bytes for template in trace.templates for step in template.steps for t in step.transfers
               if t.tensor == "C" and t.direction == direction)


def test_each_tile_reads_what_it_stores(h100):
    plain, summed = traced(h100), traced(h100, accumulate="true")
    assert c_bytes(plain, "read") == 0
    assert c_bytes(summed, "read") == c_bytes(summed, "write") == c_bytes(plain, "write") == 128 * 256 * 4


def test_stream_k_units_read_the_tiles_they_finish(h100):
    config = {**COOPERATIVE, "tile_scheduler": "stream_k"}
    shape = {"M": 1280, "N": 4096, "K": 12032}  # 160 tiles on 132 SMs: a quantised last wave streams
    plain, summed = traced(h100, config, **shape), traced(h100, config, accumulate="true", **shape)
    assert "stream_k" in summed.metadata and c_bytes(plain, "read") == 0
    assert c_bytes(summed, "read") == c_bytes(summed, "write") > 0


def test_a_store_bound_gemm_pays_the_read(h100):
    """K = 128: the tiles' C traffic sets the time; 256 MB more to read costs at least half
    of it at HBM speed."""
    shape = {"M": 8192, "N": 8192, "K": 128}
    plain = simulate_kernel(traced(h100, **shape), h100).latency_s
    summed = simulate_kernel(traced(h100, accumulate="true", **shape), h100).latency_s
    assert summed > plain + 0.5 * 8192 * 8192 * 4 / h100.hbm.bandwidth_bytes_per_s


def test_a_long_main_loop_hides_the_read(h100):
    """K = 16384 (a weight gradient over 16k tokens): the read of C is issued with the
    main loop's loads and HBM has room for it; the time grows under 1%."""
    shape = {"M": 2048, "N": 6144, "K": 16384}
    plain = simulate_kernel(traced(h100, **shape), h100).latency_s
    summed = simulate_kernel(traced(h100, accumulate="true", **shape), h100).latency_s
    assert plain <= summed < 1.01 * plain


def test_the_tpu_matmul_refuses_it():
    v5e = load_arch("tpu-v5e")
    with pytest.raises(InputError, match="accumulate"):
        traced(v5e, config={}, impl="default", accumulate="true")
