"""``flashinfer``: FlashInfer's decode of one request, ``single_decode_with_kv_cache(...,
use_tensor_cores=True)`` (github.com/flashinfer-ai/flashinfer, ``flashinfer/decode.py``), the
launch TileOPs' decode benchmark times as FlashInfer's at batch one
(``benchmarks/ops/attention/bench_gqa.py``, ``_flashinfer_gqa_dense_decode``).

With tensor cores that call runs the FA2-style single-prefill kernel
(``include/flashinfer/attention/prefill.cuh``, ``SinglePrefillWithKVCacheDispatched``; read at
``nightly-v0.6.11-20260517``, the version the H200 records ran, and at 0.6.18: the same rules) on one
query token, the query heads of a KV head packed as rows:

- tiles: ``CTA_TILE_Q`` 16 rows where the packed rows are at most 16 (one warp along the rows,
  four along the keys), else 64 (four along the rows, one along the keys)
  (``FA2DetermineCtaTileQ``, ``get_num_warps_q``); the KV tile is ``NUM_MMA_KV x 16 x`` the
  key warps, ``NUM_MMA_KV`` the largest of 8, 4, 2, 1 whose one K and one V buffer fit half an
  SM's shared memory beside the Q tile ("we expect each sm execute two threadblocks"), at most
  8: 128 keys at head dim 128 and 16 bits. One K and one V buffer: a tile's K loads while the
  one before runs its PV, so one tile is in flight (``pipeline_depth`` 2);
- the split: ``max_num_kv_chunks = blocks per SM x SMs / (KV heads x row tiles)``, blocks per SM
  being the kernel's occupancy (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``), and
  ``num_chunks = ceil(kv_len / max(ceil(kv_len / max_num_kv_chunks), 256))``, the kernel cutting
  the cache evenly into them (``max_chunk_size = ceil_div(kv_len, num_chunks)``): a short cache
  runs on few programs (1K keys over 4 KV heads: 16 programs of 256 keys on a 132-SM chip), a
  long one fills every slot of one wave. A chunk walks its keys a KV tile at a time, its last
  tile short;
- a split writes 16-bit partial outputs (the output dtype, ``tmp`` is ``DTypeO*``) and fp32
  log-sum-exps, merged by a second launch, ``MergeStates``
  (``include/flashinfer/attention/cascade.cuh``, ``MergeStatesLargeNumIndexSetsKernel``): one
  program of 128 threads per query head walking the chunks 8 at a time, four such loads
  prefetched (taken here as groups of 32 chunks, one group in flight); unsplit, the kernel
  writes its output at once.

The MMAs are ``mma.sync`` issued by warps that wait on them (the chained schedule, as ``fa2``).
Leaves out: the cross-warp merge of the four key warps' states at a program's end (through
shared memory, no HBM), fp8's staging buffer, the merge kernel's log-sum-exp reload every 128
chunks. Batch above one: FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper`` runs other kernels
(CUDA-core decode over pages, or the batch-prefill kernel, with their own planners), not
modelled yet: those run the family's generic split-KV trace at its default split."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip
from accelsim.engine.occupancy import programs_per_core
from accelsim.errors import InputError
from accelsim.families.attention_impls import decode
from accelsim.families.attention_impls.base import Impl, Launches, config, nvidia_only
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace, Resources

MMA_ROWS = 16
"""Rows and keys of one ``mma.sync`` m16n8k16 fragment, the unit FlashInfer's tiles count in."""
MAX_MMA_KV = 8
"""``max_num_mma_kv_reg`` with one row fragment (``8 / NUM_MMA_Q``)."""
MIN_CHUNK_KEYS = 256
"""The smallest KV chunk the split makes (``max(ceil_div(kv_len, max_num_kv_chunks), 256)``)."""
MERGE_ROWS = 8
MERGE_STAGES = 4
MERGE_WARPS = 4
"""``MergeStates`` at head dim 128: 16 threads along the head dim, 8 chunks a load, 4 loads
prefetched, 128 threads."""
MERGE_GROUP = MERGE_ROWS * MERGE_STAGES
"""Chunks a merge program has in flight, one step of its loop here."""
STAT_BYTES = 4


def tile_rows(packed_rows: int) -> int:
    """``CTA_TILE_Q`` of one query token's packed rows (``FA2DetermineCtaTileQ`` on sm_80 and later)."""
    return MMA_ROWS if packed_rows <= MMA_ROWS else 64


def kv_warps(cta_tile_q: int) -> int:
    """Warps along the keys (``get_num_warps_kv``): 4 at 16 rows, 1 at 64."""
    return 4 if cta_tile_q == MMA_ROWS else 1


def kv_tile(p: dict[str, Any], chip: Chip, cta_tile_q: int) -> int:
    """Keys of one KV tile: ``NUM_MMA_KV x 16 x`` the key warps, ``NUM_MMA_KV`` the largest power
    of two up to 8 whose K and V buffers fit half an SM's shared memory (or all of it where two
    programs of the smallest tile would not) beside the Q tile."""
    d, size, warps = p["head_dim"], DTYPE_BYTES[p["dtype"]], kv_warps(cta_tile_q)
    fixed = cta_tile_q * d * size
    per_mma_kv = 2 * d * MMA_ROWS * warps * size
    capacity = chip.local.capacity_bytes
    per_sm = 2 if capacity >= 2 * (fixed + per_mma_kv) else 1
    budget = min(capacity / per_sm, chip.local.max_per_program_bytes)
    fits = min(int((budget - fixed) // per_mma_kv), MAX_MMA_KV)
    mma_kv = max((n for n in (8, 4, 2, 1) if n <= fits), default=1)
    return mma_kv * MMA_ROWS * warps


def local_bytes(p: dict[str, Any], cta_tile_q: int, block_n: int) -> int:
    """Shared memory of a program: the Q tile, one K and one V tile."""
    return (cta_tile_q + 2 * block_n) * p["head_dim"] * DTYPE_BYTES[p["dtype"]]


def chunk_keys(p: dict[str, Any], chip: Chip, cta_tile_q: int, block_n: int) -> int:
    """Keys per chunk of the split: every program slot of one wave, at least 256 keys."""
    from accelsim.families.attention import _registers  # the family estimates a tile's registers
    cfg = config(cta_tile_q, block_n, 2, 4)
    resources = Resources(local_memory_bytes=local_bytes(p, cta_tile_q, block_n), warps=4,
                          registers_per_thread=_registers(p, cfg))
    slots = programs_per_core(resources, chip) * chip.num_cores
    row_tiles = math.ceil(p["seq_q"] * p["group"] / cta_tile_q)
    max_chunks = slots // (p["kv_heads"] * row_tiles)
    if max_chunks < 1:
        return p["seq_kv"]
    return max(math.ceil(p["seq_kv"] / max_chunks), MIN_CHUNK_KEYS)


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    """One request: FlashInfer's tiles and its chunk count (``split_kv``); more: the family's
    generic split decode (:func:`decode.default_config`)."""
    generic = decode.default_config(p, chip)  # a decode problem, or one line saying so
    if p["batch"] > 1:
        return generic
    if p["dtype"] not in chip.matrix.flops_per_cycle_per_core:
        raise InputError(f"{chip.name} has no matrix-unit rate for {p['dtype']}", field="params.dtype")
    rows = tile_rows(p["seq_q"] * p["group"])
    block_n = kv_tile(p, chip, rows)
    chunk = chunk_keys(p, chip, rows, block_n)
    return config(rows, block_n, 2, 4, math.ceil(p["seq_kv"] / chunk))


def _compute(rows: int, cols: int, bm: int, bn: int, p: dict[str, Any]) -> list[dict]:
    from accelsim.families.attention import _score_compute  # the family owns the per-tile work
    return [c.model_dump() for c in _score_compute(rows, cols, bm, bn, p["head_dim"], p["dtype"], False)]


def _main_kernel(ks: Launches, p: dict[str, Any], cfg: dict[str, int], chip: Chip) -> int:
    """The prefill kernel over the chunks: grid (row tiles, chunks, KV heads), row tiles fastest.
    Returns the chunk count."""
    hk, d, size = p["kv_heads"], p["head_dim"], DTYPE_BYTES[p["dtype"]]
    bm, bn, rows_all, skv = cfg["block_m"], cfg["block_n"], p["seq_q"] * p["group"], p["seq_kv"]
    chunks = cfg["split_kv"]
    chunk = math.ceil(skv / chunks)  # the kernel's max_chunk_size: the plan's chunk count, cut evenly
    row_tiles = math.ceil(rows_all / bm)
    total = row_tiles * chunks * hk
    row_tile = np.arange(total) % row_tiles
    part = np.arange(total) // row_tiles % chunks
    kv_head = np.arange(total) // (row_tiles * chunks)
    rows = np.minimum(bm, rows_all - row_tile * bm)
    length = np.clip(skv - part * chunk, 0, chunk)
    full, tail = length // bn, length % bn
    templates, choice, keys = [], np.zeros(total, dtype=np.int64), {}
    for key in sorted(set(zip(rows.tolist(), tail.tolist()))):
        r, t = key
        keys[key] = len(templates)
        steps = [{"transfers": [{"tensor": "Q", "block": ["kv_head", "row_tile"], "bytes": r * d * size}]},
                 {"repeat": "n_full", "loop_var": "j",
                  "transfers": [{"tensor": name, "block": ["kv_head", "part", "j"], "bytes": bn * d * size}
                                for name in ("K", "V")],
                  "compute": _compute(r, bn, bm, bn, p)}]
        if t:
            steps.append({"transfers": [{"tensor": name, "block": ["kv_head", "part", "n_full"], "bytes": t * d * size}
                                        for name in ("K", "V")],
                          "compute": _compute(r, t, bm, bn, p)})
        mine = ["part_group", "part_in_group", "first_row"]
        out = ([{"tensor": "O_partial", "block": mine, "bytes": r * d * size, "direction": "write"},
                {"tensor": "LSE_partial", "block": mine, "bytes": r * STAT_BYTES, "direction": "write"}]
               if chunks > 1 else
               [{"tensor": "O", "block": ["kv_head", "row_tile"], "bytes": r * d * size, "direction": "write"}])
        steps.append({"transfers": out, "compute": [{"unit": "vector", "flops": float(r * d), "dtype": "fp32"}]})
        templates.append({"name": f"chunk{len(templates)}", "steps": steps})
    for i, key in enumerate(zip(rows.tolist(), tail.tolist())):
        choice[i] = keys[key]
    tiles = math.ceil(chunk / bn)  # a chunk's tiles start where it starts
    ks.tensors.update({
        "Q": {"shape": [hk, row_tiles, bm * d], "dtype": p["dtype"]},
        "K": {"shape": [hk, chunks, tiles, bn * d], "dtype": p["dtype"]},
        "V": {"shape": [hk, chunks, tiles, bn * d], "dtype": p["dtype"]},
        "O": {"shape": [hk, row_tiles, bm * d], "dtype": p["dtype"]},
    })
    if chunks > 1:  # ``tmp``: [chunks, query rows, head dim], the chunks in the merge's groups
        groups, rows_total = math.ceil(chunks / MERGE_GROUP), hk * row_tiles * bm
        ks.tensors.update({"O_partial": {"shape": [groups, MERGE_GROUP, rows_total, d], "dtype": p["dtype"]},
                           "LSE_partial": {"shape": [groups, MERGE_GROUP, rows_total], "dtype": "fp32"}})
    from accelsim.families.attention import _registers
    ks.add_kernel(templates, choice,
                  {"kv_head": kv_head, "row_tile": row_tile, "part": part, "n_full": full,
                   "part_group": part // MERGE_GROUP, "part_in_group": part % MERGE_GROUP,
                   "first_row": (kv_head * row_tiles + row_tile) * bm},
                  {"warps": 4, "local_memory_bytes": local_bytes(p, bm, bn),
                   "registers_per_thread": _registers(p, cfg)})
    return chunks


def _merge_kernel(ks: Launches, p: dict[str, Any], chunks: int, bm: int) -> None:
    """``MergeStates``: grid (query tokens, query heads), one program per query head and token
    walking its row of the chunks' partials a group at a time, then writing its output."""
    d, size, heads = p["head_dim"], DTYPE_BYTES[p["dtype"]], p["heads"] * p["seq_q"]
    full, tail = divmod(chunks, MERGE_GROUP)
    token, query_head = np.arange(heads) // p["heads"], np.arange(heads) % p["heads"]
    packed = token * p["group"] + query_head % p["group"]  # FlashInfer's packed row of a head's token
    row = (query_head // p["group"] * math.ceil(p["seq_q"] * p["group"] / bm) + packed // bm) * bm + packed % bm
    steps = [{"transfers": [{"tensor": "LSE_partial", "block": [0, 0, "row"], "bytes": chunks * STAT_BYTES}]}]
    for repeat, n, first in ((full, MERGE_GROUP, "j"), (1 if tail else 0, tail, full)):
        if repeat:
            steps.append({"repeat": repeat, "loop_var": "j",
                          "transfers": [{"tensor": "O_partial", "block": [first, 0, "row"], "bytes": n * d * size}],
                          "compute": [{"unit": "special", "flops": float(n), "dtype": "fp32"},
                                      {"unit": "vector", "flops": float(n * (3 * d + 4)), "dtype": "fp32"}]})
    steps.append({"transfers": [{"tensor": "O_merged", "block": ["head"], "bytes": d * size, "direction": "write"}],
                  "compute": [{"unit": "vector", "flops": float(d), "dtype": "fp32"}]})
    ks.tensors["O_merged"] = {"shape": [heads, d], "dtype": p["dtype"]}
    ks.add({"name": "merge", "steps": steps}, heads, {"head": np.arange(heads), "row": row},
           {"warps": MERGE_WARPS, "local_memory_bytes": MERGE_STAGES * MERGE_ROWS * d * size + 128 * STAT_BYTES})


def build(p: dict[str, Any], params: dict[str, Any], chip: Chip) -> KernelTrace:
    from accelsim.families import attention  # the family builds the generic decode it falls back to
    cfg = default_config(p, chip)
    if p["batch"] > 1:
        p = dict(p)
        attention._set_schedule(p, IMPL, chip)  # what the family's builders read of the implementation
        return attention._build_gpu_decode(p, params, cfg, chip.staged_buffers(cfg["num_stages"]))
    ks = Launches()
    chunks = _main_kernel(ks, p, cfg, chip)
    if chunks > 1:
        _merge_kernel(ks, p, chunks, cfg["block_m"])
    name = f"attention_flashinfer_decode_{p['dtype']}_h{p['heads']}_kv{p['kv_heads']}_q{p['seq_q']}_s{p['seq_kv']}"
    return ks.trace(name, {"family": "attention", "params": dict(params), "config": cfg,
                           "generator": "accelsim.families.attention_impls.flashinfer"})


IMPL = Impl(
    name="flashinfer",
    summary="FlashInfer's single-request decode on tensor cores (its split by occupancy and MergeStates)",
    unavailable=nvidia_only,
    default_config=default_config,
    build=build,
)
