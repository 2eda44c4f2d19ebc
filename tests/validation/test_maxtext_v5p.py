"""validation/maxtext/maxtext_v5p.py: MaxText's model sizes and FLOP count, the step trace
it builds (TP and FSDP groups, what each layer runs), and a small step replayed."""

from __future__ import annotations

import sys

import pytest

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation" / "maxtext"))

import maxtext_v5p as mx  # noqa: E402

from accelsim.system.trace import SystemTrace  # noqa: E402


@pytest.mark.parametrize(("scale", "billions"), [(32, 32), (64, 64), (128, 128), (256, 256), (512, 512)])
def test_global_parameter_scale_gives_the_named_model_size(scale, billions):
    assert mx.model(scale).params == pytest.approx(billions * 1e9, rel=0.1)


def test_32b_shapes_and_maxtext_flop_count():
    m = mx.model(32)
    assert (m.emb, m.heads, m.mlp, m.layers) == (8192, 64, 28672, 32)
    tokens = 7 * 2048
    per_layer = 4 * 8192 * 64 * 128 + 3 * 8192 * 28672
    params = 32 * per_layer + 2 * 32000 * 8192
    attention = 12 * 64 * 32 * 128 * 2048**2 * 7 / 2
    assert mx.model_tflops_per_chip(m, 7) == pytest.approx((6 * params * tokens + attention) / 1e12)


def test_tp_and_fsdp_groups_partition_the_chips():
    tp, fsdp = mx.tp_groups(64, 4), mx.fsdp_groups(64, 4)
    assert sorted(r for g in tp for r in g) == list(range(64)) == sorted(r for g in fsdp for r in g)
    assert tp[1] == [4, 5, 6, 7]  # the innermost axis of the 4x4x4 torus
    assert all(len(set(g) & set(h)) == 1 for g in tp for h in fsdp)


SMALL = {"id": "small", "model": "1B", "hardware": "1x v5p-128", "global_parameter_scale": 1, "chips": 64,
         "per_device_batch_size": 1, "ici_tensor_parallelism": 4, "remat_policy": "minimal", "tflops_per_chip": 1}


def test_the_step_trace_is_valid_and_counts_the_matmuls():
    trace = SystemTrace.model_validate(mx.step_trace(SMALL, tp_overlap=False))
    ops = trace.programs[0].ops
    gemms = [op for op in ops if op.family == "gemm"]
    m = mx.model(1)
    # per layer: 4 forward GEMMs, 8 backward (data and weight gradients); logits: 1 + 2
    assert len(gemms) == 12 * m.layers + 3
    tokens = 4 * 2048  # a TP group shares its sequences
    flops = sum(2 * op.params["M"] * op.params["N"] * op.params["K"] for op in gemms)
    assert flops == pytest.approx(6 * tokens * (m.layers * m.layer_params + m.vocab * m.emb) / 4)
    attention = [op for op in ops if op.family == "attention"]
    # forward, the remat recompute and the backward (the family's TPU backward kernels)
    assert sum(op.params.get("pass", "fwd") == "fwd" for op in attention) == 2 * m.layers
    assert sum(op.params.get("pass") == "bwd" for op in attention) == m.layers


@pytest.mark.slow
def test_a_small_step_replays_and_collective_matmul_is_never_slower():
    default, overlapped = mx.predict(SMALL, tp_overlap=False), mx.predict(SMALL, tp_overlap=True)
    assert 0 < overlapped["step_time_s"] <= default["step_time_s"]
    assert default["exposed_comm_s"] > overlapped["exposed_comm_s"]


def test_two_slices_add_one_dcn_all_reduce_per_layer_on_its_own_stream():
    record = dict(SMALL, slices=2)
    trace = SystemTrace.model_validate(mx.step_trace(record, tp_overlap=False))
    assert trace.num_devices == 128
    dcn = [op for op in trace.programs[0].ops if op.name.startswith("dcn.")]
    assert len(dcn) == mx.model(1).layers
    assert all(op.kind == "all-reduce" and op.stream == "dcn" for op in dcn)
    groups = mx.dcn_groups(64, 2)
    assert groups[5] == [5, 69] and sorted(r for g in groups for r in g) == list(range(128))
    assert sorted(r for g in mx.fsdp_groups(64, 4, 2) for r in g) == list(range(128))
