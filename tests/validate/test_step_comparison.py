"""A measured step beside its replay (``accelsim.validate.step``): the split of a step into
compute, exposed communication and gaps, kernels paired with their replayed counterparts,
and what dominates the difference."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.trace import SystemTrace
from accelsim.validate.step import Breakdown, Span, breakdown, compare_step


def test_a_step_splits_into_compute_exposed_communication_and_gaps():
    spans = [Span("a", "s7", 0.0, 4.0, False), Span("nccl", "s20", 3.0, 4.0, True), Span("b", "s7", 9.0, 1.0, False)]
    got = breakdown(spans)
    # compute [0,4] and [9,10]; communication [3,7], of it [4,7] exposed; nothing runs in [7,9]
    assert got == Breakdown(step_s=10.0, compute_s=5.0, exposed_comm_s=3.0, gaps_s=2.0)
    assert got.compute_s + got.exposed_comm_s + got.gaps_s == got.step_s


def _kernel(i, name, stream, start, duration, **kw):
    return {"name": name, "stream": stream, "start_s": start, "duration_s": duration, "class": kw.get("cls"),
            "impl": kw.get("impl"), "record": kw.get("record"), "params": kw.get("params"), "op": None}


GEMM = {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1, "impl": "cublas"}


def _step():
    """A GEMM (a record), then a 50 us all-reduce on another stream the next kernel waits for,
    a 20 us launch gap, then an unmapped kernel; the GEMM launched twice."""
    kernels = [_kernel(0, "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "stream 7", 0.0, 300e-6, cls="gemm",
                       impl="cublas", record="gemm-bf16-4096x4096x4096--cublas", params=GEMM),
               _kernel(1, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "stream 20", 300e-6, 50e-6, cls="collective"),
               _kernel(2, "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "stream 7", 350e-6, 300e-6, cls="gemm",
                       impl="cublas", record="gemm-bf16-4096x4096x4096--cublas", params=GEMM),
               _kernel(3, "mystery_kernel", "stream 7", 670e-6, 10e-6)]
    return {"name": "toy step", "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "h100-sxm"}, "kernels": kernels}


@pytest.fixture(scope="module")
def toy():
    chip = load_arch("h100-sxm")
    return chip, compare_step(_step(), "toy.json", chip)


def test_kernels_without_a_record_replay_at_their_measured_time(toy):
    _, c = toy
    by_index = {p.index: p for p in c.pairs}
    assert by_index[1].replayed_as == by_index[3].replayed_as == "measured"
    assert by_index[1].simulated_s == pytest.approx(50e-6) and by_index[3].simulated_s == pytest.approx(10e-6)
    assert by_index[0].replayed_as == "family" and by_index[0].simulated_s == pytest.approx(by_index[2].simulated_s)


def test_the_replay_keeps_the_measured_order_across_streams(toy):
    chip, c = toy
    spans = c.simulated_spans
    assert spans[1].start_s >= spans[0].start_s + spans[0].duration_s - 1e-12  # the all-reduce after the GEMM
    assert spans[2].start_s >= spans[1].start_s + spans[1].duration_s - 1e-12  # the next GEMM after the all-reduce
    assert c.simulated.exposed_comm_s == pytest.approx(50e-6) == c.measured.exposed_comm_s
    # no gap but the float rounding of the spans' ends (5e-20 s with the GEMM at its boosted clock)
    assert c.simulated.gaps_s == pytest.approx(0, abs=1e-15) and c.measured.gaps_s == pytest.approx(20e-6)
    assert c.simulated.launch_s == pytest.approx(2 * chip.launch_overhead_s)


def test_rows_add_launches_up_by_share_and_name_what_dominates(toy):
    _, c = toy
    first = c.rows[0]
    assert first.launches == 2 and first.share == pytest.approx(600 / 660) and first.replayed_as == "family"
    assert first.error == pytest.approx(first.simulated_s / 600e-6 - 1)
    assert c.dominant == max(("compute", "exposed communication", "gaps"),
                             key=lambda p: abs(c.simulated.part(p) - c.measured.part(p)))
    assert c.error == pytest.approx(c.simulated.step_s / c.measured.step_s - 1)


def test_another_trace_pairs_its_ops_with_the_kernels_by_name():
    chip = load_arch("h100-sxm")
    ops = [{"name": "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "kind": "compute", "duration_s": 250e-6},
           {"name": "mystery_kernel", "kind": "compute", "duration_s": 5e-6}]
    trace = SystemTrace.model_validate({"schema_version": 1, "kind": "system_trace", "name": "other", "num_devices": 1,
                                        "programs": [{"name": "p", "devices": [0], "ops": ops}]})
    c = compare_step(_step(), "toy.json", chip, trace=trace)
    paired = [(p.index, p.replayed_as, p.simulated_s) for p in c.pairs]
    assert paired[0] == (0, "other trace", pytest.approx(250e-6))
    assert paired[2][1] == paired[1][1] == "unpaired"  # the trace runs the GEMM once and has no all-reduce
    assert paired[3] == (3, "other trace", pytest.approx(5e-6)) and c.replayed == "other"


def test_a_step_whose_kernels_make_no_trace_is_one_line_naming_the_file():
    step = _step()
    step["kernels"][0]["stream"] = "bad\x00stream"
    with pytest.raises(Exception) as caught:
        compare_step(step, "toy.json", load_arch("h100-sxm"))
    assert caught.typename == "InputError" and str(caught.value).startswith("toy.json: ")
