"""A fused GPU backward's main loop as the libraries run it: barriers over all the MMA warps keep
them in step (one chain per program, its FP32 work on it), and what the warps store to shared
memory for the next MMAs (P and dS for FlashAttention-2, dS and dQ's partial for FA3 at d <= 128)
is on that chain; the forwards keep their schedules."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
H100 = load_arch("h100-sxm")


def build(**params):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in params.items()}, "test")
    config = FAMILY.resolve_config(values, {}, H100)
    return FAMILY.build(values, config, H100), config


def main_loop(trace):
    return next(s for t in trace.templates for s in t.steps if s.repeat == "n_full")


def staged(step) -> dict[str, int]:
    return {x.tensor: x.bytes for x in step.transfers if x.level == "local"}


@pytest.mark.parametrize("impl", ["fa2", "fa3", "cudnn", "triton"])
def test_a_backward_runs_its_warps_in_step_with_its_fp32_work_on_the_chain(impl):
    trace, _ = build(batch=2, heads=8, seq_q=2048, head_dim=128, impl=impl, **{"pass": "bwd"})
    assert trace.kernel.execution.consumer_chains == "shared"
    assert not any(c.overlapped for c in main_loop(trace).compute)


@pytest.mark.parametrize(("impl", "head_dim", "names"), [
    ("fa2", 64, {"sP", "sdS"}), ("fa2", 128, {"sP", "sdS"}), ("triton", 128, {"sP", "sdS"}),
    ("fa3", 64, {"sdS", "sdQ"}), ("fa3", 128, {"sdS", "sdQ"}), ("cudnn", 128, {"sdS", "sdQ"}),
    ("fa3", 256, {"sP", "sdS"}),
])
def test_what_the_warps_store_for_the_next_mmas_each_iteration(impl, head_dim, names):
    trace, config = build(batch=1, heads=4, seq_q=1024, head_dim=head_dim, impl=impl, **{"pass": "bwd-kernel"})
    bm, bn = config["block_m"], config["block_n"]
    expected = {"sP": bm * bn * 2, "sdS": bm * bn * 2, "sdQ": bm * head_dim * 4}
    assert staged(main_loop(trace)) == {name: expected[name] for name in names}


def test_the_forwards_keep_their_schedules():
    fa2, _ = build(batch=2, heads=8, seq_q=2048, head_dim=128, impl="fa2")
    fa3, _ = build(batch=2, heads=8, seq_q=2048, head_dim=128, impl="fa3")
    assert fa2.kernel.execution is None
    loop = next(s for t in fa3.templates for s in t.steps if any(c.unit == "matrix" for c in s.compute))
    assert all(c.overlapped for c in loop.compute if c.unit == "vector")
    assert not any(x.level == "local" for t in fa3.templates for s in t.steps for x in s.transfers)


def test_the_backwards_chain_is_what_makes_it_slower():
    """FA3 at d128 on the FA3 paper's 16k-token shape: the five MMAs, the exps, the FP32 work
    and the dS and dQ stores, taken in turn, against the MMAs and exps alone."""
    trace, _ = build(batch=1, heads=2, seq_q=4096, head_dim=128, impl="fa3", **{"pass": "bwd-kernel"})
    costs = program_costs(trace, H100)
    times = gpu_program_times(H100, costs, np.zeros(costs.num_programs), 2, instruction_streams(trace, H100))
    local_s = costs.staged_bytes[0] / (H100.local.bandwidth_bytes_per_cycle * H100.clock_hz)
    assert times.chain[0] == pytest.approx(costs.matrix_s[0] + costs.issued_vector_s[0] + local_s)
