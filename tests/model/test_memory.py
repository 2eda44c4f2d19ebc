"""Per-device memory: what sharding and recompute remove, the KV cache, and the refusal."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accelsim.errors import InputError
from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.memory import check_fits, device_memory, stage_layers
from accelsim.model.presets import PRESETS

MEGATRON = FRAMEWORKS["megatron"]
TRAIN = Workload(mode="train", seq_len=4096, batch=64)


def memory(layout, workload=TRAIN, model="llama3-70b", capacity=80e9):
    return device_memory(PRESETS.get(model), workload, layout, MEGATRON, workload.batch // layout.data_parallel
                         // layout.micro_batch, capacity)


def test_zero_and_fsdp_shard_what_they_say():
    plain = memory(Layout(tp=8, dp=8, zero=0))
    zero1 = memory(Layout(tp=8, dp=8, zero=1))
    zero2 = memory(Layout(tp=8, dp=8, zero=2))
    fsdp = memory(Layout(tp=8, fsdp=8))
    assert zero1.optimizer_bytes == pytest.approx(plain.optimizer_bytes / 8)
    assert zero1.gradients_bytes == plain.gradients_bytes and zero2.gradients_bytes == pytest.approx(
        plain.gradients_bytes / 8)
    assert fsdp.weights_bytes == pytest.approx(plain.weights_bytes / 8)


def test_mixed_precision_bytes_per_parameter():
    """bf16 weights (2), fp32 main grads (4), Adam's two moments and fp32 master weights (12)."""
    m = memory(Layout(tp=8, dp=8, zero=0))
    assert (m.weights_bytes, m.gradients_bytes, m.optimizer_bytes) == pytest.approx(
        (2 * m.weights_bytes / 2, 4 * m.weights_bytes / 2, 12 * m.weights_bytes / 2))


def test_recompute_shrinks_activations():
    none, full = memory(Layout(tp=8, dp=8)), memory(Layout(tp=8, dp=8, recompute="full"))
    assert full.activations_bytes < none.activations_bytes / 5


def test_first_pipeline_stage_holds_most_activations():
    assert memory(Layout(tp=8, pp=4, dp=2)).stage == 0


def test_kv_cache_of_a_decode_batch():
    decode = Workload(mode="decode", seq_len=4096, batch=16)
    m = memory(Layout(tp=8, micro_batch=16), decode)
    assert m.kv_cache_bytes == 16 * 4096 * 80 * 2 * 1 * 128 * 2 and m.optimizer_bytes == 0


def test_does_not_fit_is_one_line_with_the_breakdown():
    m = memory(Layout(tp=1, dp=64))
    with pytest.raises(InputError) as err:
        check_fits(m, "h100-sxm")
    line = err.value.one_line()
    assert "does not fit" in line and "optimizer" in line and "h100-sxm" in line and len(line) < 300


def test_layers_split_over_chunks_middle_first():
    """126 layers over 16 stages: 14 stages of 8, the first and last of 7 (as Llama 3 did)."""
    chunks = stage_layers(PRESETS.get("llama3-405b"), Layout(pp=16))
    sizes = [len(c) for c in chunks]
    assert sum(sizes) == 126 and sizes[0] == sizes[-1] == 7 and set(sizes[1:-1]) == {8}


def test_llama3_405b_fits_on_16k_gpus_with_its_gradients_sharded():
    """The paper's run (TP 8, PP 16, two chunks, DP 128, 8k tokens, no recompute) shards
    optimizer state and gradients over DP: 75 GB on stage 1; ZeRO-1's whole fp32 gradient
    buffer (12.8 GB more) does not fit 80 GB."""
    framework = replace(MEGATRON, hidden_dropout=False)
    workload = Workload(mode="train", seq_len=8192, batch=2048)

    def total(zero):
        layout = Layout(tp=8, pp=16, dp=128, zero=zero, virtual_stages=2)
        return device_memory(PRESETS.get("llama3-405b"), workload, layout, framework, 16, 80e9).total_bytes

    assert total(2) < 80e9 < total(1)
