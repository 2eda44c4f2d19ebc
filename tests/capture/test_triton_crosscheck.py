"""Triton capture against the built-in families: our Triton kernels, captured, and the
family's GPU trace for the same parameters and config agree on the number of programs,
steps per program, bytes read and written, matrix flops, resources, and the simulated
latency on an H100 (within 1%); the row-wise families' registers are the compiler's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.engine.chip import simulate_kernel  # noqa: E402
from accelsim.engine.programs import program_costs  # noqa: E402
from accelsim.families import get_family  # noqa: E402
from accelsim.families.attention import useful_flops  # noqa: E402
from accelsim.families.search import split_params  # noqa: E402
from accelsim.trace.kernel import KernelTrace  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "triton"
CHIP = load_arch("h100-sxm")


def captured_and_built(kernel: str, family: str, params: dict, config: dict, family_config: dict,
                       function: str = "run", family_params: dict | None = None):
    strings = {k: str(v) for k, v in {**params, **config}.items()}
    captured = capture_triton(str(KERNELS / f"{kernel}.py"), function, strings)
    fam = get_family(family)
    ours = {"impl": "triton"} if family in ("attention", "gemm") else {}  # our Triton kernels, not the chip's default impl
    values, _, _ = split_params(fam, {k: str(v) for k, v in {**params, **ours, **(family_params or {})}.items()})
    built_config = fam.resolve_config(values, {k: str(v) for k, v in {**config, **family_config}.items()}, CHIP)
    return captured, fam.build(values, built_config, CHIP)


def assert_agree(captured: KernelTrace, built: KernelTrace, *, flops: bool = True) -> tuple[float, float]:
    a, b = program_costs(captured, CHIP), program_costs(built, CHIP)
    assert captured.num_programs == built.num_programs
    np.testing.assert_array_equal(a.iterations, b.iterations)
    np.testing.assert_array_equal(a.read_bytes, b.read_bytes)
    np.testing.assert_array_equal(a.write_bytes, b.write_bytes)
    if flops:
        np.testing.assert_array_equal(a.matrix_flops, b.matrix_flops)
    np.testing.assert_array_equal(a.fill_bytes, b.fill_bytes)
    np.testing.assert_array_equal(a.drain_bytes, b.drain_bytes)
    assert captured.kernel.resources == built.kernel.resources
    assert captured.kernel.pipeline_depth == built.kernel.pipeline_depth
    latency = simulate_kernel(captured, CHIP).latency_s, simulate_kernel(built, CHIP).latency_s
    assert latency[0] == pytest.approx(latency[1], rel=0.01)
    return latency


def without_main_loop_sync(trace: KernelTrace) -> KernelTrace:
    """``trace`` without its backward's warps in step and its shared-memory stores."""
    data = trace.model_dump(exclude_none=True)
    data["kernel"].pop("execution", None)
    for template in data["templates"]:
        for step in template["steps"]:
            step["transfers"] = [x for x in step["transfers"] if x["level"] != "local"]
    return KernelTrace.model_validate(data)


GEMM_CASES = {
    "512_default": ({"M": 512, "N": 512, "K": 512},
                    {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 8, "num_stages": 4, "num_warps": 8}),
    "ragged_m_n_k": ({"M": 1000, "N": 700, "K": 300},
                     {"block_m": 128, "block_n": 128, "block_k": 64, "group_m": 8, "num_stages": 3, "num_warps": 8}),
}


@pytest.mark.parametrize("case", GEMM_CASES, ids=list(GEMM_CASES))
def test_matmul_agrees_with_the_gemm_family(case):
    params, config = GEMM_CASES[case]
    captured, built = captured_and_built("matmul", "gemm", params, config, {"split_k": 1})
    assert_agree(captured, built)
    costs = program_costs(captured, CHIP)
    assert costs.matrix_flops.sum() == 2 * params["M"] * params["N"] * params["K"]
    assert len(captured.templates) == len(built.templates)


ATTENTION_CASES = {
    "d128": ({"batch": 1, "heads": 2, "seq_q": 512, "head_dim": 128, "causal": False},
             {"block_m": 128, "block_n": 64, "num_stages": 2, "num_warps": 8}),
    "d64_causal": ({"batch": 1, "heads": 2, "seq_q": 512, "head_dim": 64, "causal": True},
                   {"block_m": 128, "block_n": 64, "num_stages": 3, "num_warps": 4}),
}


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=list(ATTENTION_CASES))
def test_attention_agrees_with_the_attention_family(case):
    params, config = ATTENTION_CASES[case]
    captured, built = captured_and_built("attention", "attention", params, config, {"split_kv": 1})
    assert_agree(captured, built)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_agrees_with_the_attention_family(causal):
    """Our Triton backward kernel (``run_bwd``) and the family's ``pass=bwd-kernel`` trace. On a
    causal diagonal the family counts the attended pairs of all five matmuls as useful
    flops (2.5x the forward's); the capture counts S = Q K^T and dP = dO V^T whole (the
    kernel computes them before masking), so its count is higher there."""
    params = {"batch": 1, "heads": 2, "seq_q": 512, "head_dim": 64, "causal": causal}
    config = {"block_m": 64, "block_n": 128, "num_stages": 2, "num_warps": 8}
    captured, built = captured_and_built("attention", "attention", params, config, {"split_kv": 1},
                                         function="run_bwd", family_params={"pass": "bwd-kernel"})
    # The family's backward also runs its warps in step and stores P and dS to shared memory for the
    # transposed dots (Schedule.backward, level-local transfers), which Triton's loads, stores and
    # dots do not show the capture: without them the two agree, with them the family is slower.
    assert_agree(captured, without_main_loop_sync(built), flops=False)
    assert simulate_kernel(built, CHIP).latency_s > 1.1 * simulate_kernel(captured, CHIP).latency_s
    a, b = program_costs(captured, CHIP).matrix_flops.sum(), program_costs(built, CHIP).matrix_flops.sum()
    assert b == useful_flops({**params, "pass": "bwd-kernel", "kv_heads": 0, "seq_kv": 0, "dtype": "bf16"})
    assert a == b if not causal else a > b


ROWWISE_CASES = {
    "layernorm": ("layernorm", {"rows": 256, "cols": 1024}, {"block_rows": 1, "num_warps": 4}),
    "rmsnorm": ("rmsnorm", {"rows": 256, "cols": 2048}, {"block_rows": 1, "num_warps": 8}),
    "softmax": ("softmax", {"rows": 256, "cols": 256}, {"block_rows": 4, "num_warps": 4}),
}


@pytest.mark.parametrize("case", ROWWISE_CASES, ids=list(ROWWISE_CASES))
def test_rowwise_kernels_agree_with_their_families(case):
    """Registers aside: the families hold the compiler's counts (next test), an uncompiled
    capture the generic estimate of what a thread holds."""
    name, params, config = ROWWISE_CASES[case]
    captured, built = captured_and_built(name, name, params, config, {})
    registers = built.kernel.resources.registers_per_thread
    resources = captured.kernel.resources.model_copy(update={"registers_per_thread": registers})
    assert_agree(captured.model_copy(update={"kernel": captured.kernel.model_copy(update={"resources": resources})}),
                 built)


@pytest.mark.parametrize("name, cols, warps, dtype", [
    ("layernorm", 16384, 16, "fp32"),  # 32 values per thread: 128 registers, one program per SM
    ("rmsnorm", 4096, 8, "bf16"),
    ("softmax", 8192, 16, "fp32"),
    ("layernorm", 8192, 4, "fp32"),  # 64 values per thread: 236, one pass
])
def test_rowwise_registers_are_what_triton_allocates(name, cols, warps, dtype):
    """The families' one-pass register counts against Triton compiling our kernel for sm_90
    (the counts they were taken from: this catches a kernel or compiler that has moved, and a
    family that left one pass where the compiler fits the row)."""
    params, config = {"rows": 64, "cols": cols, "dtype": dtype}, {"block_rows": 1, "num_warps": warps}
    compiled = capture_triton(str(KERNELS / f"{name}.py"), "run", {k: str(v) for k, v in {**params, **config}.items()},
                              compile_for="sm_90")
    fam = get_family(name)
    values, _, _ = split_params(fam, {k: str(v) for k, v in params.items()})
    built = fam.build(values, fam.resolve_config(values, {k: str(v) for k, v in config.items()}, CHIP), CHIP)
    assert compiled.metadata["compiled"]["spilled_bytes_per_thread"] == 0
    assert built.kernel.pipeline_depth == 1  # one pass (the column loop pipelines, depth 2)
    assert built.kernel.resources.registers_per_thread == pytest.approx(
        compiled.kernel.resources.registers_per_thread, abs=4)


def test_decode_split_kernel_agrees_with_the_attention_familys_first_kernel():
    """Our split-KV decode's split kernel (``decode_attention.py:run_split``) and the first
    kernel of the family's decode trace: the same programs, bytes, matrix time and
    resources; vector work within 10% (both count the softmax on the padded 16-row block,
    which the kernel computes); the same simulated time for that kernel within 1%."""
    params = {"batch": 2, "heads": 16, "kv_heads": 2, "seq_kv": 1000, "head_dim": 64, "dtype": "fp16"}
    config = {"block_m": 16, "block_n": 64, "split_kv": 4, "num_stages": 2, "num_warps": 4}
    captured, built = captured_and_built("decode_attention", "attention", params, config, {}, function="run_split",
                                         family_params={"seq_q": 1})
    n = captured.num_programs
    assert built.kernel.kernel_starts == [n]  # then the combine kernel
    a, b = program_costs(captured, CHIP), program_costs(built, CHIP).take(np.arange(n))
    for field in ("iterations", "read_bytes", "write_bytes", "fill_bytes", "drain_bytes", "matrix_s"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    np.testing.assert_allclose(a.vector_s, b.vector_s, rtol=0.1)
    assert captured.kernel.resources == built.kernel.resources
    alone = simulate_kernel(captured, CHIP)
    assert alone.latency_s - alone.launch_overhead_s == pytest.approx(simulate_kernel(built, CHIP).per_kernel_s[0],
                                                                       rel=0.01)
