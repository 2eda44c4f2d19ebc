"""HBM read-write turnarounds (``hbm.turnaround_loss``): a kernel whose HBM bytes are a
share ``f`` reads gets ``efficiency x (1 - loss x 4 f (1 - f))`` of HBM's bandwidth, so
read-only and write-only kernels keep it and an even mix loses ``loss`` of it. Closed form
on an HBM-bound kernel: every program moves one large block, each block once."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import latency_lower_bound_s, shared_cache_hits, simulate_kernel
from accelsim.errors import InputError
from accelsim.arch.model import load_arch

BLOCK = 1 << 20


def _kernel(kernel_trace, programs: int, reads: int, writes: int):
    transfers = [{"tensor": "X", "block": ["p0", i], "bytes": BLOCK} for i in range(reads)]
    transfers += [{"tensor": "Y", "block": ["p0", i], "bytes": BLOCK, "direction": "write"} for i in range(writes)]
    return kernel_trace([programs], [{"transfers": transfers}], pipeline_depth=2, resources={"warps": 4})


@pytest.mark.parametrize("reads, writes", [(1, 0), (0, 1), (1, 1), (2, 1)])
def test_mixed_traffic_loses_bandwidth(ideal_chip, kernel_trace, reads, writes):
    loss = 0.2
    plain = ideal_chip("h100-sxm")
    lossy = ideal_chip("h100-sxm", f"hbm.turnaround_loss={loss}")
    trace = _kernel(kernel_trace, 8 * plain.num_cores, reads, writes)
    before, after = simulate_kernel(trace, plain), simulate_kernel(trace, lossy)
    assert before.bound == after.bound == "hbm"
    read_share = reads / (reads + writes)
    efficiency = 1 - loss * 4 * read_share * (1 - read_share)
    # HBM-bound with no fixed costs (ideal chip): time is bytes over bandwidth
    assert after.latency_s == pytest.approx(before.latency_s / efficiency, rel=1e-3)
    assert after.hbm_bytes == before.hbm_bytes
    bound = latency_lower_bound_s(trace, lossy, shared_cache_hits(trace, lossy))
    assert bound <= after.latency_s * (1 + 1e-9)


def test_the_loss_is_a_fraction_below_one():
    with pytest.raises(InputError, match=r"turnaround_loss.*\[0, 1\)"):
        load_arch("h100-sxm", ["hbm.turnaround_loss=1"])
    assert load_arch("h100-sxm", ["hbm.turnaround_loss=0"]).hbm.turnaround_loss == 0
    assert load_arch("h100-sxm").hbm.turnaround_loss == 0  # absent: no loss
