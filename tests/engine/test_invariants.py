"""Invariants of every simulated GEMM: no faster than the roofline, flops and bytes
conserved, and the same answer every time."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import pytest

from accelsim.arch.model import Chip, load_arch
from accelsim.engine.chip import KernelSimulation, simulate_kernel
from accelsim.engine.programs import program_templates, program_vars
from accelsim.families import gemm
from accelsim.families.base import parse_values
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace


@dataclass(frozen=True)
class Case:
    arch: str
    M: int
    N: int
    K: int
    dtype: str = "bf16"
    batch: int = 1
    groups: int = 1
    config: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        extra = "".join(f"-{k}{v}" for k, v in (("b", self.batch), ("g", self.groups)) if v > 1)
        extra += "".join(f"-{k}={v}" for k, v in self.config)
        return f"{self.arch}-{self.M}x{self.N}x{self.K}-{self.dtype}{extra}"


CASES = [
    Case("h100-sxm", 4096, 4096, 4096),
    Case("h100-sxm", 1000, 3000, 500),  # ragged edges; K is not a multiple of block_k
    Case("h100-sxm", 64, 8192, 1024, batch=2),
    Case("h100-sxm", 4096, 512, 1024, groups=4),
    Case("h100-sxm", 1024, 1024, 1024, dtype="fp32"),  # fp32 runs on the CUDA cores
    Case("h100-sxm", 512, 512, 2048, dtype="fp8"),
    Case("h100-sxm", 128, 128, 8192, config=(("split_k", 4),)),
    Case("tpu-v5e", 4096, 4096, 4096),
    Case("tpu-v5e", 1000, 3000, 500),
    Case("tpu-v5e", 256, 512, 1024, batch=2),
    Case("tpu-v5e", 2048, 512, 1024, groups=4),
    Case("tpu-v5e", 2048, 1024, 4096, dtype="fp32"),
    Case("tpu-v5e", 512, 512, 512, dtype="int8"),
]


def build(case: Case) -> tuple[Chip, KernelTrace]:
    chip = load_arch(case.arch)
    params = parse_values(gemm.PARAMS, {
        "M": case.M, "N": case.N, "K": case.K, "dtype": case.dtype, "batch": case.batch, "groups": case.groups,
    }, "test")
    config = gemm.FAMILY.resolve_config(params, dict(case.config), chip)
    return chip, gemm.FAMILY.build(params, config, chip)


@lru_cache(maxsize=None)
def simulated(case: Case) -> tuple[Chip, KernelTrace, KernelSimulation]:
    chip, trace = build(case)
    return chip, trace, simulate_kernel(trace, chip)


def useful_flops(case: Case) -> float:
    return 2.0 * case.batch * case.M * case.N * case.K


def compulsory_bytes(case: Case) -> float:
    """A and every group's B read once, C written once."""
    in_bytes = DTYPE_BYTES[case.dtype]
    out_bytes = gemm.OUT_BYTES[gemm.OUT_DTYPE[case.dtype]]
    a = case.M * case.K * in_bytes
    b = case.groups * case.K * case.N * in_bytes
    c = case.M * case.N * out_bytes
    return case.batch * (a + b + c)


def datasheet_peak_flops_per_s(chip: Chip, dtype: str) -> float:
    if chip.kind == "gpu" and dtype == "fp32":
        return chip.vector_flops_per_s("fp32")
    return chip.matrix_flops_per_s(dtype)


def trace_hbm_bytes(trace: KernelTrace) -> float:
    """Every byte the trace's programs read from or write to HBM-level blocks (a step's
    repeat may be a program variable: a stream-K unit's share of a tile's k-loop)."""
    variables, template_of = program_vars(trace), program_templates(trace)
    total = 0.0
    for pid in range(trace.num_programs):
        for step in trace.templates[template_of[pid]].steps:
            repeat = step.repeat if isinstance(step.repeat, int) else int(variables[step.repeat][pid])
            total += repeat * sum(x.bytes for x in step.transfers if x.level == "hbm")
    return total


@pytest.fixture(params=CASES, ids=str)
def case(request) -> Case:
    return request.param


def test_latency_is_at_least_the_roofline(case):
    chip, _, sim = simulated(case)
    bound = max(
        useful_flops(case) / datasheet_peak_flops_per_s(chip, case.dtype),
        compulsory_bytes(case) / chip.hbm.bandwidth_bytes_per_s,
    )
    assert sim.latency_s >= bound


def test_flops_are_exactly_2mnk(case):
    _, _, sim = simulated(case)
    assert sim.flops == useful_flops(case)


def test_hbm_bytes_never_exceed_what_the_trace_moves(case):
    _, trace, sim = simulated(case)
    assert 0 < sim.hbm_bytes <= trace_hbm_bytes(trace)


@pytest.mark.parametrize("tpu_case", [c for c in CASES if c.arch.startswith("tpu")], ids=str)
def test_without_a_shared_cache_every_trace_byte_reaches_hbm(tpu_case):
    chip, trace, sim = simulated(tpu_case)
    assert chip.shared_cache is None
    assert sim.hbm_bytes == trace_hbm_bytes(trace)


def test_hbm_bytes_cover_every_operand_once(case):
    _, _, sim = simulated(case)
    assert sim.hbm_bytes >= compulsory_bytes(case)


def test_repeated_runs_are_bit_identical(case):
    def summary() -> dict:
        chip, trace = build(case)
        out = simulate_kernel(trace, chip).summary()
        out.pop("sim_wall_s")
        return out

    assert summary() == summary()
