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
    assert (m.hidden, m.heads, m.ffn, m.layers) == (8192, 64, 28672, 32)
    tokens = 7 * 2048
    attention = 12 * 64 * 32 * 128 * 2048**2 * 7 / 2
    assert mx.model_tflops_per_chip(m, 7) == pytest.approx((6 * m.params * tokens + attention) / 1e12)


SMALL = {"id": "small", "model": "1B", "hardware": "1x v5p-128", "global_parameter_scale": 1, "chips": 64,
         "per_device_batch_size": 1, "ici_tensor_parallelism": 4, "remat_policy": "minimal", "tflops_per_chip": 1}


def test_the_record_becomes_tp_over_fsdp_on_its_slice():
    step = mx.model_step(SMALL, tp_overlap=False)
    layout = step.shape.layout
    assert (layout.tp, layout.fsdp, layout.dp, layout.recompute) == (4, 16, 1, "selective")
    assert layout.devices == 64 == step.system.num_chips


def test_the_step_trace_is_valid_and_counts_the_matmuls():
    step = mx.model_step(SMALL, tp_overlap=False)
    trace = SystemTrace.model_validate(mx_trace(step).model_dump())
    assert trace.num_devices == 64
    gemms = [op for op in trace.programs[0].ops if op.family == "gemm"]
    m = mx.model(1)
    tokens = 2048  # one chip's sequence: TP shares the TP group's sequences, each chip a quarter of the work
    flops = sum(2 * op.params["M"] * op.params["N"] * op.params["K"] for op in gemms)
    lookup = m.vocab * m.hidden  # the input embedding is a gather, not a matmul
    assert flops == pytest.approx(6 * tokens * (m.params - lookup), rel=1e-3)  # forward, data and weight gradients
    attention = [op for op in trace.programs[0].ops if op.family == "attention"]
    assert sum(op.params.get("pass") == "bwd" for op in attention) == m.layers


def mx_trace(step):
    from accelsim.model.step import step_trace

    return step_trace(step)


@pytest.mark.slow
def test_a_small_step_replays_and_collective_matmul_is_never_slower():
    default, overlapped = mx.predict(SMALL, tp_overlap=False), mx.predict(SMALL, tp_overlap=True)
    assert 0 < overlapped["step_time_s"] <= default["step_time_s"]
    assert default["exposed_comm_s"] > overlapped["exposed_comm_s"]


def test_two_slices_join_over_the_dcn_as_data_parallel():
    step = mx.model_step(dict(SMALL, slices=2), tp_overlap=False)
    assert (step.shape.layout.dp, step.shape.layout.devices) == (2, 128)
    assert mx_trace(step).num_devices == 128
