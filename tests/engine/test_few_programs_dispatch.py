"""A few programs dispatched at once (not a kernel's first) are started in Python scalars
(:meth:`GpuDispatch._start_few`): the same cohorts, paces and results as the batch's numpy
path, which it falls back to where the programs form several cohorts."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine import gpu
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params

CHIP = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])


def causal_attention(**params):
    family = get_family("attention")
    values, given, _ = split_params(family, {k: str(v) for k, v in params.items()})
    return family.build(values, family.resolve_config(values, given, CHIP), CHIP)


CASES = {
    # one program per SM; programs finish a few at a time
    "one per SM": dict(heads=16, seq_q=4096, head_dim=128, causal=True),
    # several per SM: cohorts re-rated as their SMs' residents change
    "five per SM": dict(heads=8, seq_q=8192, head_dim=64, causal=True, block_m=64, block_n=64, num_warps=4,
                        num_stages=2),
}


@pytest.mark.parametrize("case", CASES)
def test_few_programs_start_as_the_batch_path_starts_them(case, monkeypatch):
    trace = causal_attention(**CASES[case])
    taken, declined = [], []
    start_few = gpu.GpuDispatch._start_few

    def counted(self, program, take, core_of):
        started = start_few(self, program, take, core_of)
        (taken if started else declined).append(take)
        return started

    monkeypatch.setattr(gpu.GpuDispatch, "_start_few", counted)
    fast = simulate_kernel(trace, CHIP, timeline=True)
    assert taken and max(taken) > 1  # the path ran, for batches of several programs
    monkeypatch.setattr(gpu.GpuDispatch, "_start_few", lambda self, program, take, core_of: False)
    plain = simulate_kernel(trace, CHIP, timeline=True)
    assert fast.latency_s == plain.latency_s
    assert fast.used == plain.used
    assert fast.events == plain.events
    assert fast.segments == plain.segments


def test_several_cohorts_fall_back_to_the_batch_path(monkeypatch):
    """Programs of different lengths finishing together form one cohort each."""
    trace = causal_attention(**CASES["five per SM"])
    declined = []
    start_few = gpu.GpuDispatch._start_few

    def counted(self, program, take, core_of):
        started = start_few(self, program, take, core_of)
        if not started:
            declined.append(take)
        return started

    monkeypatch.setattr(gpu.GpuDispatch, "_start_few", counted)
    simulate_kernel(trace, CHIP)
    assert declined
