"""cuDNN's Blackwell backward as FlashAttention-4's sm100 one runs: 128x128 tiles, P^T and dS^T
left in tensor memory as the dV and dK MMAs' A operands, dS and the fp32 dQ partial staged in
shared memory, and the MMAs issued a step ahead so the compute warps overlap them (two streams);
on Hopper the backward's warps stay in step (one stream)."""

from __future__ import annotations

from accelsim.arch.model import load_arch
from accelsim.engine.program_times import instruction_streams
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
BACKWARD = {"heads": "8", "seq_q": "2048", "head_dim": "128", "impl": "cudnn", "pass": "bwd-kernel"}


def built(arch: str):
    chip = load_arch(arch)
    values = parse_values(FAMILY.params, BACKWARD, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), config, chip


def loop_step(trace):
    return next(s for s in trace.templates[0].steps if s.repeat == "n_full")


def test_blackwell_backward_tiles_operands_and_streams():
    trace, config, chip = built("b200")
    assert (config["block_m"], config["block_n"]) == (128, 128)
    step = loop_step(trace)
    assert {t.tensor for t in step.transfers if t.level == "local"} == {"sdS", "sdQ"}
    assert [c.a_in_tensor_memory for c in step.compute if c.unit == "matrix"] == [False, True, False, True, False]
    assert instruction_streams(trace, chip) == 2


def test_hopper_backward_stays_in_step():
    trace, config, chip = built("h100-sxm")
    assert (config["block_m"], config["block_n"]) == (64, 128)
    assert not any(c.a_in_tensor_memory for c in loop_step(trace).compute)
    assert instruction_streams(trace, chip) == 1
