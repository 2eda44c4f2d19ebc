"""Values a program's own threads store to its local memory between MMAs (``level: local``
transfers: a fused backward's dS for the next MMA to read) are on its dependency chain at the
local memory's bandwidth, and load the local memory like any of its bytes."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams
from accelsim.engine.programs import program_costs
from accelsim.trace.kernel import KernelTrace

H100 = load_arch("h100-sxm")
MATRIX = {"unit": "matrix", "flops": 2.0 * 128 * 128 * 128, "dtype": "bf16", "shape": [128, 128, 128]}
STAGED = 32768


def trace(*, staged: int = 0, execution: dict | None = None) -> KernelTrace:
    transfers = [{"tensor": "K", "block": [], "bytes": 4096}]
    if staged:
        transfers.append({"tensor": "sdS", "block": [], "bytes": staged, "direction": "write", "level": "local"})
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": {"name": "k", "grid": [1], "resources": {"warps": 8},
                                        **({"execution": execution} if execution else {})},
        "tensors": {"K": {"shape": [4096], "dtype": "int8"}, "sdS": {"shape": [STAGED], "dtype": "int8"}},
        "templates": [{"name": "t", "steps": [{"repeat": 16, "transfers": transfers, "compute": [MATRIX]}]}]})


def times(t: KernelTrace):
    return gpu_program_times(H100, program_costs(t, H100), np.zeros(1), 2, instruction_streams(t, H100))


def test_local_stores_lengthen_the_chain_by_their_time_at_local_bandwidth():
    local_s = 16 * STAGED / (H100.local.bandwidth_bytes_per_cycle * H100.clock_hz)
    one_chain = {"consumers": 2, "consumer_chains": "shared"}
    assert times(trace(staged=STAGED, execution=one_chain)).chain[0] == pytest.approx(
        times(trace(execution=one_chain)).chain[0] + local_s)
    # two streams: each stores its half while the other's MMAs run
    assert times(trace(staged=STAGED)).chain[0] == pytest.approx(times(trace()).chain[0] + local_s / 2)


def test_local_stores_move_no_global_bytes_and_load_the_local_memory():
    plain, staged = program_costs(trace(), H100), program_costs(trace(staged=STAGED), H100)
    assert staged.staged_bytes[0] == 16 * STAGED and plain.staged_bytes[0] == 0
    assert staged.local_bytes[0] == plain.local_bytes[0] + 16 * STAGED
    for field in ("read_bytes", "write_bytes", "cache_bytes", "drain_bytes", "fill_bytes", "read_iterations"):
        assert getattr(staged, field)[0] == getattr(plain, field)[0], field
