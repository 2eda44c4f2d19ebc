"""``kernel.execution.next_loads``: a persistent unit whose first loads the producer issues only
after the unit before has stored its tile (``after_store``, FlashAttention-3's fp8 forward) pays
their latency and the fill, the fill's HBM part at the SM's share of HBM (the units run in step),
but still no CTA launch; ``prefetched`` (the default) pays none of them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams, simulate_kernel
from accelsim.engine.program_times import hbm_share_per_core
from accelsim.engine.programs import program_costs
from accelsim.trace.kernel import Execution, KernelTrace

PROGRAMS = 264
"""Two waves of one program per SM on an H100 (132 SMs)."""
Q_BYTES = 16384


def trace(execution: dict) -> KernelTrace:
    """A tile: a Q load of its own (the fill), a loop over K blocks, an O store (the drain)."""
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "tiles", "grid": [PROGRAMS], "pipeline_depth": 2,
                   "resources": {"warps": 12, "local_memory_bytes": 200 * 1024}, "execution": execution},
        "tensors": {"Q": {"shape": [PROGRAMS], "dtype": "fp8"}, "K": {"shape": [PROGRAMS, 4], "dtype": "fp8"},
                    "O": {"shape": [PROGRAMS], "dtype": "bf16"}},
        "templates": [{"name": "t", "steps": [
            {"transfers": [{"tensor": "Q", "block": ["p0"], "bytes": Q_BYTES}]},
            {"repeat": 4, "loop_var": "k", "transfers": [{"tensor": "K", "block": ["p0", "k"], "bytes": 32768}],
             "compute": [{"unit": "matrix", "flops": 2 * 128 * 256 * 2048, "dtype": "fp8", "shape": [128, 256, 2048]}]},
            {"transfers": [{"tensor": "O", "block": ["p0"], "bytes": 32768, "direction": "write"}]}]}],
    })


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm")


def times(chip, t: KernelTrace):
    costs = program_costs(t, chip)
    no_hits = np.zeros(PROGRAMS)
    return gpu_program_times(chip, costs, no_hits, t.kernel.pipeline_depth, instruction_streams(t, chip)), costs


PERSISTENT = {"persistent_ctas": 132, "epilogue": "exposed"}


def test_loads_after_the_store_pay_latency_and_the_fill_at_the_hbm_share(h100):
    prefetched, costs = times(h100, trace(PERSISTENT))
    after, late = times(h100, trace({**PERSISTENT, "next_loads": "after_store"}))
    assert costs.prefetched[132:].all() and not late.prefetched.any()
    assert late.follows[132:].all()  # the CTA is launched already either way
    assert np.array_equal(after.exposed[:132], prefetched.exposed[:132])
    latency = h100.hbm.latency_s  # no hits: every read from HBM
    added = after.exposed[132:] - prefetched.exposed[132:]
    assert np.allclose(added, latency + Q_BYTES / hbm_share_per_core(h100), rtol=1e-9)


def test_a_following_unit_pays_its_loads_and_its_store_but_no_launch(h100):
    after, _ = times(h100, trace({**PERSISTENT, "next_loads": "after_store"}))
    share = hbm_share_per_core(h100)
    assert h100.program_overhead_s > 0
    assert np.allclose(after.exposed[132:], h100.hbm.latency_s + Q_BYTES / share + 32768 / share, rtol=1e-9)


def test_loads_after_the_store_make_the_kernel_slower_and_move_the_same_bytes(h100):
    prefetched = simulate_kernel(trace(PERSISTENT), h100)
    after = simulate_kernel(trace({**PERSISTENT, "next_loads": "after_store"}), h100)
    assert after.latency_s > prefetched.latency_s
    assert after.hbm_bytes == prefetched.hbm_bytes and after.flops == prefetched.flops


def test_next_loads_is_checked():
    with pytest.raises(ValueError):
        Execution(next_loads="eventually")


def test_after_store_without_persistent_ctas_is_refused(cli, tmp_path):
    """Without persistent CTAs no unit follows another, so the field would be read and ignored."""
    data = trace(PERSISTENT).model_dump(mode="json", exclude_none=True)
    data["kernel"]["execution"] = {"next_loads": "after_store"}
    path = tmp_path / "k.json"
    path.write_text(json.dumps(data))
    result = cli("simulate", "--arch", "h100-sxm", str(path))
    assert result.code == 2 and len(result.err.splitlines()) == 1
    assert "kernel.execution" in result.err and "persistent_ctas" in result.err
