"""HBM writes of a kernel that starts with dirty lines in the GPU's L2.

The L2 is write-back and allocates on reads and writes alike: a store leaves its line
dirty in the L2, and the line reaches HBM only when something evicts it (PTX ISA,
"Cache Operators": ``st.wb``, the default store, "writes back cache lines of coherent
cache levels with normal eviction policy"; GPGPU-Sim models the L2 so, "configure L2
write_allocate lazy_fetch 'L' with write_back 'B' policy as in Volta", its README and
``configs/tested-cfgs/SM7_QV100/gpgpusim.config``: ``-gpgpu_cache:dl2 S:32:128:24,L:B:m:L:P``,
LRU, write-back, allocate on miss, write-allocate). So the HBM writes a kernel causes are
the dirty lines its own allocations evict, not its own stores, and they depend on what the
L2 held at its start.

What a timing tool leaves matters. Triton's ``do_bench`` zeroes a 256 MB buffer before
every timed call (``cache.zero_()``, python/triton/testing.py; the NVIDIA driver's
``get_empty_cache_for_benchmark``), so the kernel starts with an L2 full of the buffer's
dirty lines. Model, in launch order, LRU: a kernel's first ``capacity`` bytes of
allocations (its HBM reads past the L2 and its writes) each evict a line it found at
its start, dirty in the share ``dirty / capacity``; later ones evict its own lines, dirty
in the share of its allocations that are writes. Its own last writes stay in the L2.

For a kernel that reads R and writes W bytes (A = R + W allocated) from a full dirty
L2 of capacity C, HBM takes min(A, C) + max(A - C, 0) W / A bytes of writes: W + R where
the kernel fits the L2 (every allocation evicts a dirty line, and none of its own is
evicted), W + C R / A where it does not. From a clean L2 the kernel's writes reach HBM
only past its first C bytes: max(A - C, 0) W / A. Without a start state (None) every
write reaches HBM as it is made, the steady state of back-to-back calls that the
engine assumed before.
"""

from __future__ import annotations

import numpy as np

from accelsim.arch.model import GpuChip
from accelsim.engine.programs import ProgramCosts


def hbm_write_bytes(read_bytes: np.ndarray, write_bytes: np.ndarray, *, capacity_bytes: float,
                    dirty_at_start_bytes: float | None) -> np.ndarray:
    """Per program in launch order, the bytes written to HBM while it runs: its share of
    the dirty lines evicted by its allocations (``read_bytes`` it reads from HBM past the
    L2 and ``write_bytes`` it writes past the L2's absorbed rewrites), given the L2's dirty
    bytes at the kernel's start (at most ``capacity_bytes`` count). ``None``: the writes
    themselves, unchanged."""
    if dirty_at_start_bytes is None:
        return write_bytes
    allocated = read_bytes + write_bytes
    total = float(allocated.sum())
    if total <= 0 or capacity_bytes <= 0:
        return write_bytes
    before = np.cumsum(allocated) - allocated
    # the part of each program's allocations among the kernel's first `capacity` bytes
    evicts_start_lines = np.clip(capacity_bytes - before, 0.0, allocated)
    dirty_share_at_start = min(dirty_at_start_bytes, capacity_bytes) / capacity_bytes
    own_dirty_share = float(write_bytes.sum()) / total
    return dirty_share_at_start * evicts_start_lines + own_dirty_share * (allocated - evicts_start_lines)


def hbm_traffic(chip: GpuChip, costs: ProgramCosts, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per program, bytes read from and written to HBM: reads past the L2's hits, and the
    dirty lines its allocations evict (:func:`hbm_write_bytes`: its writes past the L2's
    absorbed rewrites, unless the chip says what the L2 held at the kernel's start)."""
    hits, absorbed = hits
    reads, writes = costs.read_bytes - hits, costs.write_bytes - absorbed
    cache = chip.shared_cache
    if cache is None:
        return reads, writes
    return reads, hbm_write_bytes(reads, writes, capacity_bytes=cache.capacity_bytes,
                                  dirty_at_start_bytes=cache.dirty_at_start_bytes)
