"""Reuse of blocks in a shared cache (GPU L2), from block identities in launch order.

Writes (:func:`absorbed_write_bytes`): the L2 is write-back, so a block written again
before it leaves the cache reaches HBM once, on its last write (atomic accumulation into
one output tile by many programs, as a FlashAttention backward's dQ). A write is absorbed
if the next write of the same block comes while the bytes moved in between (reads and
writes) fit in the cache.

Model: programs run in waves of ``concurrency`` (all resident programs), and within a
wave their step iterations interleave. Every read of an HBM block is placed in that
order; a read *hits* if the same block (tensor + block index) was read before and
the bytes read by everyone in between fit in the cache. Using all bytes in between
(not only distinct ones) makes this a conservative LRU stack-distance estimate that
numpy computes in one sort. Concurrent reads of one block within a wave hit after
the first, as the L2 merges misses to a line in flight.

Long loops are grouped into at most ``max_chunks`` chunks per step: a chunk's
identity is its block index at the first iteration and its bytes are the chunk's
total, so accounting stays exact while the access list stays short.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from accelsim.engine.programs import kernel_index, program_templates, program_vars
from accelsim.trace.kernel import DTYPE_BYTES, GRID_VARS, KernelTrace, index_terms

MAX_INDEX_AXES = 4
TARGET_ACCESSES = 1 << 17
"""Loops are chunked so that a trace has about this many block reads to order."""


def cache_hit_bytes(
    trace: KernelTrace,
    *,
    concurrency: int | Sequence[int],
    capacity_bytes: float,
    max_chunks: int | None = None,
) -> np.ndarray:
    """Bytes of HBM-level reads per program that the shared cache serves."""
    n = trace.num_programs
    if _every_block_distinct(trace):
        return np.zeros(n)
    if max_chunks is None:
        max_chunks = int(np.clip(TARGET_ACCESSES // max(n, 1), 1, 16))
    accesses = _accesses(trace, concurrency=concurrency, max_chunks=max_chunks)
    if accesses is None:
        return np.zeros(n)
    ids, nbytes, wave, when, pid = accesses
    sequence = stable_order(_single_key([wave, when, pid]))
    blocks, nbytes, pid = _single_key(list(ids))[sequence], nbytes[sequence], pid[sequence]
    current, _, between = _repeats(blocks, nbytes)
    hit = np.zeros(len(nbytes), dtype=bool)
    hit[current] = between <= reach_bytes(trace, capacity_bytes)
    return np.bincount(pid[hit], weights=nbytes[hit], minlength=n).astype(float)


def _repeats(blocks: np.ndarray, nbytes: np.ndarray, positions: np.ndarray | None = None):
    """Consecutive accesses to one block, among all accesses or those at ``positions``
    (indices into the sequence order of ``blocks``, each access's block as one key
    (:func:`_single_key` of its ids), and ``nbytes``): (each later access, the one before
    it, the bytes moved in between by all accesses of the sequence)."""
    cum_after = np.cumsum(nbytes)
    block_key = blocks if positions is None else blocks[positions]
    order = stable_order(block_key)  # sequence order within a block
    by_block = order if positions is None else positions[order]
    keys = block_key[order]
    same = keys[1:] == keys[:-1]
    current, previous = by_block[1:][same], by_block[:-1][same]
    return current, previous, (cum_after[current] - nbytes[current]) - cum_after[previous]


def absorbed_write_bytes(
    trace: KernelTrace,
    *,
    concurrency: int | Sequence[int],
    capacity_bytes: float,
    max_chunks: int | None = None,
) -> np.ndarray:
    """Bytes of HBM-level writes per program that never reach HBM: the same block is
    written again while it is still in the cache (see the module docstring)."""
    n = trace.num_programs
    if _every_block_distinct(trace, "write"):
        return np.zeros(n)
    if max_chunks is None:
        max_chunks = int(np.clip(TARGET_ACCESSES // max(n, 1), 1, 16))
    writes = _accesses(trace, concurrency=concurrency, max_chunks=max_chunks, direction="write")
    if writes is None or _all_distinct(writes[0]):
        # no block is written twice: no write follows another of its block, so none is
        # absorbed, whatever the reads in between (skips ordering every read)
        return np.zeros(n)
    reads = _accesses(trace, concurrency=concurrency, max_chunks=max_chunks)
    parts = [writes] + ([reads] if reads is not None else [])
    ids = np.concatenate([part[0] for part in parts], axis=1)
    nbytes, wave, when, pid = (np.concatenate([part[k] for part in parts]) for k in (1, 2, 3, 4))
    is_write = np.zeros(len(nbytes), dtype=np.int64)
    is_write[:len(writes[1])] = 1
    # a program's reads of an iteration come before its writes
    sequence = stable_order(_single_key([wave, when, pid, is_write]))
    blocks = _single_key(list(ids))[sequence]
    nbytes, pid, is_write = nbytes[sequence], pid[sequence], is_write[sequence]
    _, previous, between = _repeats(blocks, nbytes, np.nonzero(is_write)[0])
    absorbed = previous[between <= reach_bytes(trace, capacity_bytes)]
    return np.bincount(pid[absorbed], weights=nbytes[absorbed], minlength=n).astype(float)


def footprint_bytes(trace: KernelTrace) -> float:
    """Distinct bytes of the tensors the kernel moves at HBM level (their whole shapes): the
    most an LRU cache could ever have to hold of it."""
    moved = {t.tensor for template in trace.templates for step in template.steps for t in step.transfers
             if t.level == "hbm"}
    return float(sum(math.prod(trace.tensors[name].shape) * DTYPE_BYTES[trace.tensors[name].dtype]
                     for name in moved))


def reach_bytes(trace: KernelTrace, capacity_bytes: float) -> float:
    """The most bytes moved between two accesses of a block for the second to hit. What
    evicts a block from an LRU cache is the *distinct* bytes moved in between; where the
    kernel's whole footprint fits the cache nothing is ever evicted, so every re-read hits
    however much is moved in between. Elsewhere the bound counts every byte in between as
    distinct (``capacity_bytes``): exact for the streaming re-reads of GEMM k-loops and
    multi-pass kernels, where the bytes in between are mostly new, and conservative where they
    repeat. (A reach from the independent reference model, ``-F ln(1 - C/F)`` for a footprint
    ``F``, was tried: it counts a cyclic re-read of a footprint just over the cache as a hit,
    where LRU misses every block.)"""
    return math.inf if footprint_bytes(trace) <= capacity_bytes else capacity_bytes


def _every_block_distinct(trace: KernelTrace, direction: str = "read") -> bool:
    """Whether no HBM block is read (or written) twice in the whole kernel, seen from the
    trace alone (so the model could only find misses): every such transfer is outside
    loops, each template moves a tensor once, every transfer of a tensor has the same block
    index, and that index names every grid axis longer than one among the axes the model
    keys on, so two programs never move one block. Elementwise kernels are so, and most
    kernels' writes."""
    axes = {GRID_VARS[a] for a, size in enumerate(trace.kernel.grid) if size > 1}
    forms: dict[str, tuple] = {}
    for template in trace.templates:
        seen: set[str] = set()
        for step in template.steps:
            for transfer in step.transfers:
                if transfer.level != "hbm" or transfer.direction != direction:
                    continue
                if step.repeat != 1 or transfer.tensor in seen:
                    return False
                seen.add(transfer.tensor)
                block = tuple(transfer.block[:MAX_INDEX_AXES])
                if not axes <= {entry for entry in block if isinstance(entry, str)}:
                    return False
                if forms.setdefault(transfer.tensor, block) != block:
                    return False
    return True


def _all_distinct(ids: np.ndarray) -> bool:
    """Whether no two accesses (columns of ``ids``, one row per key column) name one block."""
    keys = np.sort(_single_key(list(ids)))
    return not (keys[1:] == keys[:-1]).any()


def stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")``, faster: where the key's range times its length
    fits in an int64, each key gets its position as the last digit, so no two are equal
    and numpy's unstable sort (several times faster than its stable merge sort on int64)
    gives the stable order exactly."""
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(key.min())
    if (int(key.max()) - low + 1) * n >= 2**63:
        return np.argsort(key, kind="stable")
    return np.argsort((key - low) * n + np.arange(n, dtype=np.int64))


def _single_key(columns: list[np.ndarray]) -> np.ndarray:
    """Rank rows of integer columns (one 1-D array each) into one sortable int64 key that
    orders and equates rows as the rows do (lexicographically). Mixed radix over each
    column's value range when their product fits (no sorting), else over each column's
    dense rank, else exact lexicographic ranks."""
    if len(columns[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    low = [int(column.min()) for column in columns]
    spans = [int(column.max()) - lo + 1 for column, lo in zip(columns, low)]
    if float(np.prod(np.array(spans, dtype=float))) < 2**62:
        key = np.zeros(len(columns[0]), dtype=np.int64)
        span = 1
        for column, lo, width in zip(columns[::-1], low[::-1], spans[::-1]):
            key += (column - lo) * span
            span *= width
        return key
    return _dense_rank_key(columns)


def _dense_rank_key(columns: list[np.ndarray]) -> np.ndarray:
    """:func:`_single_key` for columns whose value ranges are too wide to multiply."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    span = 1
    for column in columns[::-1]:
        values, dense = np.unique(column, return_inverse=True)
        if span * len(values) >= 2**62:
            # too many combinations for one int64: fall back to exact lexicographic ranks
            rows = np.stack(columns, axis=1)
            order = np.lexsort(columns[::-1])
            ranks = np.empty(len(rows), dtype=np.int64)
            sorted_rows = rows[order]
            new = np.ones(len(rows), dtype=bool)
            new[1:] = np.any(sorted_rows[1:] != sorted_rows[:-1], axis=1)
            ranks[order] = np.cumsum(new) - 1
            return ranks
        key += dense.reshape(-1).astype(np.int64) * span
        span *= len(values)
    return key


def _evaluate(index, loop_var, loop_value, variables, group) -> np.ndarray | int:
    """A block index entry for the programs in ``group``, at a loop position."""
    if isinstance(index, int):
        return index
    total: np.ndarray | int = 0
    for term in index_terms(index):
        if isinstance(term, int):
            total = total + term
        elif term == loop_var:
            total = total + loop_value
        else:
            total = total + variables[term][group]
    return total


def program_waves(trace: KernelTrace, concurrency: int | Sequence[int]) -> np.ndarray:
    """Each program's wave: launch position // concurrency, counted anew from each kernel
    of the trace (``kernel.kernel_starts``: a kernel's first programs wait for the last
    ones of the kernel before); ``concurrency``: one for every kernel, or one per kernel
    (kernels whose programs hold different resources)."""
    n = trace.num_programs
    starts = np.array([0, *(trace.kernel.kernel_starts or [])], dtype=np.int64)
    pid = np.arange(n, dtype=np.int64)
    kernel = kernel_index(trace)
    sizes = np.diff(np.append(starts, n))
    per_kernel = np.maximum(np.broadcast_to(np.asarray(concurrency, dtype=np.int64), sizes.shape), 1)
    first_wave = np.concatenate([[0], np.cumsum(-(-sizes // per_kernel))[:-1]])
    return first_wave[kernel] + (pid - starts[kernel]) // per_kernel[kernel]


def _loop_base(step, transfers, variables, programs: np.ndarray) -> np.ndarray | None:
    """Where each program's loop starts in block-index space (the first block entry that
    holds the loop variable, at loop position 0), or None where every program starts at the
    same block (or the step has no loop)."""
    for transfer in transfers:
        for index in transfer.block[:MAX_INDEX_AXES]:
            if isinstance(index, str) and step.loop_var in index_terms(index):
                base = np.broadcast_to(_evaluate(index, step.loop_var, 0, variables, programs), programs.shape)
                return base if base.size and base.min() != base.max() else None
    return None


def _chunks(counts: np.ndarray, base: np.ndarray | None, max_chunks: int):
    """(program row, first iteration, iterations) of each chunk of a step's loops. Loops that
    all start at one block are cut into at most ``max_chunks`` equal chunks each. Loops that
    start at different blocks (stream-K units entering a tile at different k) are cut on one
    grid of block indices shared by all (chunks of ``ceil(longest / max_chunks)``): a chunk's
    identity is its first block, so two programs reading the same blocks must cut them alike
    for the second read to be found."""
    if base is None:
        chunk = -(-counts // np.minimum(counts, max_chunks))  # iterations per chunk
        chunks = -(-counts // chunk)
        row = np.repeat(np.arange(len(counts)), chunks)  # one row per (program, chunk)
        start = (np.arange(row.size) - np.repeat(np.cumsum(chunks) - chunks, chunks)) * chunk[row]
        return row, start, np.minimum(chunk[row], counts[row] - start)
    size = max(1, -(-int(counts.max(initial=1)) // max_chunks))
    first = np.minimum(counts, size - base % size)
    chunks = 1 + -(-(counts - first) // size)
    row = np.repeat(np.arange(len(counts)), chunks)
    position = np.arange(row.size) - np.repeat(np.cumsum(chunks) - chunks, chunks)
    start = np.where(position == 0, 0, first[row] + (position - 1) * size)
    end = np.minimum(first[row] + position * size, counts[row])
    return row, start, end - start


def _accesses(trace: KernelTrace, *, concurrency: int | Sequence[int], max_chunks: int, direction: str = "read"):
    variables = program_vars(trace)
    template_of = program_templates(trace)
    waves = program_waves(trace, concurrency)
    tensor_ids = {name: i for i, name in enumerate(trace.tensors)}
    columns: list[list[np.ndarray]] = [[] for _ in range(5)]  # ids, bytes, wave, when, pid

    for t_index, template in enumerate(trace.templates):
        members = np.nonzero(template_of == t_index)[0]
        if members.size == 0:
            continue
        offset = np.zeros(len(members), dtype=np.int64)
        for step in template.steps:
            reads = [x for x in step.transfers if x.level == "hbm" and x.direction == direction]
            reps = (
                np.full(len(members), step.repeat, dtype=np.int64)
                if isinstance(step.repeat, int)
                else variables[step.repeat][members]
            )
            active = reps > 0
            programs, counts, starts_at = members[active], reps[active], offset[active]
            row, start, length = _chunks(counts, _loop_base(step, reads, variables, programs), max_chunks)
            group = programs[row]
            for transfer in reads:
                ids = np.full((1 + MAX_INDEX_AXES, len(group)), -1, dtype=np.int64)  # one row per column
                ids[0] = tensor_ids[transfer.tensor]
                for axis, index in enumerate(transfer.block[:MAX_INDEX_AXES]):
                    ids[1 + axis] = _evaluate(index, step.loop_var, start, variables, group)
                columns[0].append(ids)
                columns[1].append((transfer.bytes * length).astype(float))
                columns[2].append(waves[group])
                columns[3].append(starts_at[row] + start)
                columns[4].append(group)
            offset += reps
    if not columns[0]:
        return None
    return (
        np.concatenate(columns[0], axis=1),
        np.concatenate(columns[1]),
        np.concatenate(columns[2]),
        np.concatenate(columns[3]),
        np.concatenate(columns[4]),
    )
