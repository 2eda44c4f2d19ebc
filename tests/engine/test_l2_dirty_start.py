"""A kernel that starts with dirty lines in the L2 (``shared_cache.dirty_at_start``, what a
timing tool's write flush leaves) writes back one evicted line per line it allocates until
its allocations pass the L2's capacity; its own last writes stay in the L2. A clean L2 takes
its writes without HBM traffic until then; no start state keeps writes as they are made."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.engine.chip import latency_lower_bound_s, shared_cache_hits, simulate_kernel
from accelsim.engine.write_backs import hbm_write_bytes

MB = 1e6
READS = np.full(4, 2 * MB)
WRITES = np.full(4, 2 * MB)


def test_without_a_start_state_writes_are_unchanged():
    assert hbm_write_bytes(READS, WRITES, capacity_bytes=50 * MB, dirty_at_start_bytes=None) is WRITES


@pytest.mark.parametrize(("dirty", "written"), [(50 * MB, 16 * MB), (500 * MB, 16 * MB), (0.0, 0.0), (25 * MB, 8 * MB)])
def test_a_kernel_that_fits_the_l2_writes_back_the_dirty_lines_it_evicts(dirty, written):
    """16 MB allocated into a 50 MB L2: every allocation evicts a line the kernel found, dirty
    in the share the L2 held (more than its capacity counts as full)."""
    out = hbm_write_bytes(READS, WRITES, capacity_bytes=50 * MB, dirty_at_start_bytes=dirty)
    assert out.sum() == pytest.approx(written)


def test_past_the_capacity_the_kernel_evicts_its_own_lines():
    """16 MB allocated into a 6 MB L2 found full of dirty lines: 6 MB of those, then 10 MB of
    the kernel's own, half of them its writes; the first programs evict the start's lines."""
    out = hbm_write_bytes(READS, WRITES, capacity_bytes=6 * MB, dirty_at_start_bytes=6 * MB)
    assert out.sum() == pytest.approx(6 * MB + 10 * MB / 2)
    assert out.tolist() == pytest.approx([4 * MB, 2 * MB + 1 * MB, 2 * MB, 2 * MB])
    clean = hbm_write_bytes(READS, WRITES, capacity_bytes=6 * MB, dirty_at_start_bytes=0.0)
    assert clean.sum() == pytest.approx(10 * MB / 2)


def _streaming(kernel_trace):
    """64 programs each reading 1 MB of Y and writing 1 MB of X: 128 MB allocated."""
    block = 1 << 20
    return kernel_trace([64], [{"transfers": [{"tensor": "Y", "block": ["p0"], "bytes": block},
                                              {"tensor": "X", "block": ["p0"], "bytes": block, "direction": "write"}]}])


def test_a_dirty_start_slows_a_streaming_kernel_by_its_write_backs(ideal_chip, kernel_trace):
    trace = _streaming(kernel_trace)
    steady = simulate_kernel(trace, ideal_chip("h100-sxm"))
    dirty = simulate_kernel(trace, ideal_chip("h100-sxm", "shared_cache.dirty_at_start=256 MiB"))
    clean = simulate_kernel(trace, ideal_chip("h100-sxm", "shared_cache.dirty_at_start=0 B"))
    capacity, allocated = 50e6, 2 * 64 * (1 << 20)
    # dirty: the L2's 50 MB of dirty lines go out on top of the kernel's writes, but its last
    # 50 MB of allocations (half of them writes) stay behind; clean: those stay, nothing is added
    assert dirty.hbm_bytes - steady.hbm_bytes == pytest.approx(capacity / 2)
    assert steady.hbm_bytes - clean.hbm_bytes == pytest.approx(capacity / 2)
    assert clean.latency_s < steady.latency_s < dirty.latency_s
    assert steady.hbm_bytes == pytest.approx(allocated)


@pytest.mark.parametrize("dirty", ["256 MiB", "0 B"])
def test_the_lower_bound_holds_under_either_start(ideal_chip, kernel_trace, dirty):
    trace = _streaming(kernel_trace)
    chip = ideal_chip("h100-sxm", f"shared_cache.dirty_at_start={dirty}")
    hits = shared_cache_hits(trace, chip)
    assert latency_lower_bound_s(trace, chip, hits) <= simulate_kernel(trace, chip, hits=hits).latency_s


@pytest.mark.parametrize(("chip", "refusal"), [("tpu-v4", "applies to GPUs only"), ("tpu-v5e", "no 'shared_cache' section")])
def test_a_tpu_config_refuses_it(cli, chip, refusal):
    result = cli("arch", "show", chip, "--set", "shared_cache.dirty_at_start=256 MB")
    assert result.code == 2 and refusal in result.err
