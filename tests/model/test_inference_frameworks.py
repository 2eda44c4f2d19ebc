"""Inference engines choose each GEMM's kernel for its shape: a prefill or decode step
under TensorRT-LLM or vLLM searches every GEMM's config (cuBLAS), the GPU CLI takes
TensorRT-LLM for inference when no framework is named, and the search makes a decode
GEMM of one row faster than the default tile."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import chip_of, load_arch
from accelsim.families import get_family
from accelsim.families.search import run_given, split_params
from accelsim.model.layout import FRAMEWORKS, INFERENCE_DEFAULT, Layout, Workload
from accelsim.model.step import plan_step, step_trace

DECODE = Workload(mode="decode", seq_len=1024, batch=1)


@pytest.mark.parametrize("name", ["tensorrt-llm", "vllm"])
def test_every_gemm_of_a_decode_step_is_searched(tiny, node, name):
    trace = step_trace(plan_step(tiny, DECODE, Layout(tp=2), FRAMEWORKS[name], node))
    gemms = [op.params for p in trace.programs for op in p.ops if op.family == "gemm"]
    assert gemms and all(g["config"] == "auto" and g["impl"] == "cublas" for g in gemms)


def test_the_cli_takes_tensorrt_llm_for_gpu_inference_and_megatron_for_training(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
                                  "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                                  "vocab_size": 1024}))
    base = ("model", str(config), "--system", "dgx-h100", "--seq", "256", "--batch", "2", "--tp", "2", "--dp", "1",
            "--json")
    decode = cli(*base, "--mode", "decode")
    train = cli(*base)
    assert decode.code == 0 and train.code == 0, decode.err + train.err
    assert json.loads(decode.out)["framework"] == INFERENCE_DEFAULT == "tensorrt-llm"
    assert json.loads(train.out)["framework"] == "megatron"


def test_a_searched_one_row_gemm_beats_the_default_tile():
    """The default cuBLAS tile (fewest waves of 128 x 256 tiles) leaves a 1 x 8192 x 28672
    GEMM 32 tiles for 132 SMs; the search fills them and approaches HBM's bound."""
    chip = chip_of(load_arch("h100-sxm"))
    gemm = get_family("gemm")
    shape = {"M": "1", "N": "8192", "K": "28672", "dtype": "fp8", "impl": "cublas"}
    default_s = run_given(gemm, *split_params(gemm, shape), chip)[0].sim.latency_s
    searched_s = run_given(gemm, *split_params(gemm, {**shape, "config": "auto"}), chip)[0].sim.latency_s
    weights_s = 8192 * 28672 / chip.hbm.bandwidth_bytes_per_s
    assert weights_s < searched_s < 0.6 * default_s
