"""Records group by implementation (``params.impl`` where present, else the free text
normalised) and by source (a repository, a pull request, a paper), across files and commits."""

from __future__ import annotations

import pytest

from accelsim.validate.compare import Measurement
from accelsim.validate.grouping import implementation_key, source_key


def _record(implementation: str = "", source: str = "", **params) -> Measurement:
    return Measurement(id="r", arch="h100-sxm", family="attention", implementation=implementation, params=params,
                       latency_s=1e-5, source=source, file="f.json")


@pytest.mark.parametrize("text, key", [
    ("attention forward (FlashAttention-2)", "fa2"),
    ("FlashAttention-3 3.0.0b1 decode (one query token, contiguous KV cache)", "fa3"),
    ("FlashInfer 0.6.11.post2 decode (one query token)", "flashinfer"),
    ("torch.matmul (cuBLAS)", "cublas"),
    ("torch.nn.functional.linear bf16 (cuBLAS) in vLLM's benchmark_fp8_gemm.py", "cublas"),
    ("repo's CUTLASS wgmma kernel FP16", "cutlass"),
    ("torch.mm bf16 best shape from brute-force shape search (mamf-finder.py)", "torch-matmul"),
    ("layer_norm forward (huggingface/torch)", "torch"),
    ("rms_norm forward (huggingface (unfused, fp32 upcast))", "hf-unfused"),
    ("layer_norm forward (liger)", "liger"),
    ("gpu-benches gpu-stream 'init' kernel (CUDA, fp64 A[i] = 0.23)", "gpu-stream"),
    ("attention forward (Triton)", "triton"),
    ("jnp.matmul (XLA) of the JAX Pallas TPU guide, bf16", "xla"),
    ("Pallas TPU blocked matmul of the JAX guide (grid (M/bm, N/bn, K/bk))", "pallas"),
    ("torch.nn.functional.scaled_dot_product_attention (default backend choice)", "sdpa"),
    ("My Own Kernel (v2), tuned", "my own kernel"),
    ("", "unnamed"),
])
def test_free_text_names_its_implementation(text, key):
    assert implementation_key(_record(text)) == key


def test_params_impl_wins_over_the_text():
    assert implementation_key(_record("attention forward (FlashAttention-2)", impl="cudnn")) == "cudnn"


@pytest.mark.parametrize("source, key", [
    ("github.com/te42kyfo/gpu-benches @1c36d509 (2024-06-21) : gpu-stream/h200.txt", "te42kyfo/gpu-benches"),
    ("github.com/te42kyfo/gpu-benches @fd7091fbb51772fb gpu-stream/h200.txt", "te42kyfo/gpu-benches"),
    ("github.com/vllm-project/vllm pull request #49363 (HDCharles, 2026-07-21)", "vllm-project/vllm #49363"),
    ("FlashAttention-3 paper (Shah et al. 2024, arXiv:2407.08608) H100 80GB SXM5 bar charts",
     "FlashAttention-3 paper (arXiv:2407.08608)"),
    ("validation/measure_gpu.py on NVIDIA H200, 2026-12-01T10:00:00+00:00", "validation/measure_gpu.py on NVIDIA H200"),
])
def test_citations_name_their_source(source, key):
    assert source_key(_record(source=source)) == key
