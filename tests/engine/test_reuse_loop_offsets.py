"""Loops that enter a tensor at different blocks (stream-K units joining a tile's k-loop
part-way) are chunked on one grid of block indices, so a chunk one program reads is found
again when another reads the same blocks."""

from __future__ import annotations

from accelsim.engine.reuse import cache_hit_bytes

BLOCK = 4096


def test_overlapping_loops_from_different_starts_share_their_chunks(kernel_trace):
    """Program 0 reads blocks 0..11, program 1 blocks 4..15, side by side in one wave, so
    program 1 reaches blocks 6..11 four iterations before program 0. Cut into chunks of 3 on
    one grid (0, 3, 6, ...; program 1's first chunk is 4..5), program 0's chunks at 6 and 9
    are program 1's and hit; cut each from its own start (program 1 at 4, 7, 10, 13) no chunk
    of one would match a chunk of the other."""
    steps = [{"repeat": 12, "loop_var": "k",
              "transfers": [{"tensor": "X", "block": ["start+k"], "bytes": BLOCK}]}]
    trace = kernel_trace([2], steps, program_vars={"start": [0, 4]})
    served = cache_hit_bytes(trace, concurrency=2, capacity_bytes=1e9, max_chunks=4)
    assert served.tolist() == [6 * BLOCK, 0.0]
