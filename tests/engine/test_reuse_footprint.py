"""Where a kernel's whole footprint fits the shared cache, nothing is ever evicted from an
LRU cache, so a block read again hits however many bytes were moved in between; where it
does not fit, every byte in between counts as distinct."""

from __future__ import annotations

import pytest

from accelsim.engine.reuse import cache_hit_bytes

BLOCK = 4096
CAPACITY = 5 * BLOCK


def reread_after_repeats(kernel_trace, tensor_elements: int):
    """X's block 0, then Y's block 0 ten times (40 KB moved, two distinct blocks), then X's
    block 0 again; both tensors ``tensor_elements`` bf16 elements."""
    steps = [
        {"transfers": [{"tensor": "X", "block": [0], "bytes": BLOCK}]},
        {"repeat": 10, "loop_var": "i", "transfers": [{"tensor": "Y", "block": [0], "bytes": BLOCK}]},
        {"transfers": [{"tensor": "X", "block": [0], "bytes": BLOCK}]},
    ]
    tensors = {name: {"shape": [tensor_elements], "dtype": "bf16"} for name in ("X", "Y")}
    return kernel_trace([1], steps, tensors=tensors)


@pytest.mark.parametrize(("elements", "x_hits"), [(BLOCK // 2, True), (1 << 20, False)])
def test_a_reread_hits_when_the_footprint_fits(kernel_trace, elements, x_hits):
    """8 KB of tensors fit a 20 KB cache: X's re-read hits after 40 KB of Y's re-reads. With 2
    MB tensors the 40 KB in between are counted distinct, past the cache."""
    trace = reread_after_repeats(kernel_trace, elements)
    served = cache_hit_bytes(trace, concurrency=1, capacity_bytes=CAPACITY, max_chunks=10)
    y_hits = 9 * BLOCK  # each of Y's re-reads follows the one before it
    assert served[0] == y_hits + (BLOCK if x_hits else 0)
