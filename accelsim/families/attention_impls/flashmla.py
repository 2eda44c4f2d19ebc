"""``flashmla``: DeepSeek's FlashMLA dense decode on Hopper (github.com/deepseek-ai/FlashMLA @9241ae3:
``csrc/sm90/decode/dense``, its scheduler ``csrc/smxx/decode/get_decoding_sched_meta`` and combine
kernel ``csrc/smxx/decode/combine``), multi-head latent attention in its absorbed (MQA) form: the
query heads of a KV head read one latent cache of 576 values per token, whose first 512 are the
value (V is never loaded apart from K).

Models: ``s_q`` x the query heads of a KV head packed as rows, 64 per program (``BLOCK_SIZE_M``),
64-token KV blocks (``PAGE_BLOCK_SIZE``): per block QK^T [64, 64, 576] and PV [64, 512, 64], one
exp per score, two warpgroups (256 threads; their chains taken as shared, as FA3's); the tile
scheduler: ``num_sm_parts = SMs / kv_heads / row blocks`` programs per row block and KV head,
each taking an equal share of all the requests' blocks, every request it touches costing 5 blocks
more (``fixed_overhead_num_blocks``), so a program walks a run of requests, loading each one's
query rows, and a request may be split between programs; a split request's pieces write fp32
partial outputs that the combine kernel (one program per 8 query heads of a request, a warp each)
merges; an unsplit request writes its output at once and its combine programs return.
Leaves out: paged KV (the block table's reads; the cache is one contiguous run per request),
the causal mask of the last ``s_q - 1`` keys (multi-token prediction), variable lengths, the
metadata kernel (run once per batch, outside the timed call), programmatic dependent launch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip
from accelsim.errors import InputError
from accelsim.families.attention_impls.base import Impl, Launches, Schedule, config, hopper_only
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace

HEAD_DIM_K = 576
HEAD_DIM_V = 512
"""The latent dims FlashMLA runs (``config.h``): 512 of value plus 64 of rotary key."""
BLOCK_M = 64
PAGE_BLOCK = 64
THREADS = 256
FIXED_OVERHEAD_BLOCKS = 5
"""What the scheduler charges per request a program touches, in KV blocks (``dense_decode.h``)."""
COMBINE_HEADS = 8
"""Query heads one combine program merges, one warp each (``run_flash_mla_combine_kernel``)."""
STAT_BYTES = 4

SCHEDULE = Schedule(chained=False, overlapped_vector=True, producer_warps=0, consumer_chains="shared")


def sm_parts(p: dict[str, Any], chip: Chip) -> int:
    """Programs per row block and KV head (``get_mla_metadata``'s ``num_sm_parts``)."""
    return max(chip.num_cores // p["kv_heads"] // math.ceil(p["seq_q"] * p["group"] / BLOCK_M), 1)


def schedule(batch: int, blocks: int, parts: int) -> list[list[tuple[int, int, int]]]:
    """Each program's chunks, (request, first block, blocks), as ``get_mla_metadata_kernel``
    hands them out: an equal payload per program, every request touched costing
    :data:`FIXED_OVERHEAD_BLOCKS` more."""
    payload = math.ceil(batch * (blocks + FIXED_OVERHEAD_BLOCKS) / parts) + FIXED_OVERHEAD_BLOCKS
    request, block, out = 0, 0, []
    for _ in range(parts):
        chunks, left = [], payload
        while request < batch:
            remaining = blocks - block
            if left >= remaining + FIXED_OVERHEAD_BLOCKS:
                chunks.append((request, block, remaining))
                left -= remaining + FIXED_OVERHEAD_BLOCKS
                request, block = request + 1, 0
            else:
                if left > FIXED_OVERHEAD_BLOCKS:
                    chunks.append((request, block, left - FIXED_OVERHEAD_BLOCKS))
                    block += left - FIXED_OVERHEAD_BLOCKS
                break
        out.append(chunks)
    return out


def _check(p: dict[str, Any]) -> None:
    if p["head_dim"] != HEAD_DIM_K:
        raise InputError(f"impl=flashmla runs MLA's latent heads: head_dim={HEAD_DIM_K} ({HEAD_DIM_V} of them the "
                         f"value), got {p['head_dim']}", field="params.head_dim")
    if p["backward"]:
        raise InputError("impl=flashmla is a decode kernel: pass=fwd", field="params.pass")
    if p["dtype"] not in ("bf16", "fp16"):
        raise InputError(f"impl=flashmla runs bf16 or fp16 (its dense decode), got {p['dtype']}", 
                         field="params.dtype")


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    """No tunables: the library's tiles. The family's config fields are kept for its checks."""
    _check(p)
    return config(BLOCK_M, PAGE_BLOCK, 2, THREADS // 32)


def _compute(rows: int, cols: int, dtype: str) -> list[dict]:
    from accelsim.families.attention import _score_compute  # the family owns the per-block work
    return [c.model_dump() for c in _score_compute(rows, cols, BLOCK_M, PAGE_BLOCK, HEAD_DIM_K, dtype, False,
                                                   d_v=HEAD_DIM_V)]


def _main_kernel(ks: Launches, p: dict[str, Any], chip: Chip, split_of: np.ndarray,
                 parts: list[list[tuple[int, int, int]]]) -> None:
    """The split-KV kernel: grid (row blocks, KV heads, parts), row blocks fastest."""
    b, hk, dtype, size = p["batch"], p["kv_heads"], p["dtype"], DTYPE_BYTES[p["dtype"]]
    rows_all, skv = p["seq_q"] * p["group"], p["seq_kv"]
    blocks = math.ceil(skv / PAGE_BLOCK)
    tail = skv - (blocks - 1) * PAGE_BLOCK
    row_blocks = math.ceil(rows_all / BLOCK_M)
    keys: dict[tuple, int] = {}
    templates, choice, variables = [], [], {}
    chunk_vars = max(1, max(len(c) for c in parts))
    names = [f"{what}{c}" for c in range(chunk_vars) for what in ("req", "kv", "out")]
    values = {name: [] for name in names + ["kv_head", "row_block"]}
    for part, chunks in enumerate(parts):
        for head in range(hk):
            for m in range(row_blocks):
                rows = min(BLOCK_M, rows_all - m * BLOCK_M)
                shape = tuple((n, first + n == blocks and tail < PAGE_BLOCK, bool(split_of[r] > 1))
                              for r, first, n in chunks)
                key = (rows, shape)
                if key not in keys:
                    keys[key] = len(templates)
                    templates.append(_template(len(templates), rows, shape, tail, size, dtype))
                choice.append(keys[key])
                values["kv_head"].append(head)
                values["row_block"].append(m)
                for c in range(chunk_vars):
                    r, first, _ = chunks[c] if c < len(chunks) else (0, 0, 0)
                    values[f"req{c}"].append(r)
                    values[f"kv{c}"].append((r * hk + head) * blocks + first)
                    values[f"out{c}"].append(int(split_of[:r].sum()) + _pieces_before(parts, part, r))
    ks.tensors.update({
        "Q": {"shape": [b, hk, row_blocks, BLOCK_M * HEAD_DIM_K], "dtype": dtype},
        "KV": {"shape": [b * hk * blocks, PAGE_BLOCK * HEAD_DIM_K], "dtype": dtype},
        "O": {"shape": [b, hk, row_blocks, BLOCK_M * (HEAD_DIM_V + STAT_BYTES // 2)], "dtype": dtype},
        "O_partial": {"shape": [max(1, int(split_of.sum())), hk, row_blocks, BLOCK_M * (HEAD_DIM_V + 1)],
                      "dtype": "fp32"},
    })
    shared = (2 * PAGE_BLOCK + BLOCK_M) * HEAD_DIM_K * size + BLOCK_M * PAGE_BLOCK * size + 5 * BLOCK_M * 4
    from accelsim.families.attention import _scheduled  # the family marks how the schedule runs the steps
    ks.add_kernel(_scheduled(templates, SCHEDULE), np.asarray(choice), {k: np.asarray(v) for k, v in values.items()},
                  {"warps": THREADS // 32, "local_memory_bytes": int(shared)})
    ks.execution = {"consumers": THREADS // 128, "consumer_chains": SCHEDULE.consumer_chains}


def _pieces_before(parts: list[list[tuple[int, int, int]]], part: int, request: int) -> int:
    """Pieces of ``request`` that programs before ``part`` hold (its split index there)."""
    return sum(1 for chunks in parts[:part] for r, _, _ in chunks if r == request)


def _template(index: int, rows: int, shape: tuple, tail: int, size: float, dtype: str) -> dict:
    """One program's steps: per chunk its query rows, its KV blocks (a short last block on its
    own), then its output: fp32 partial and LSE if the request is split, else O and LSE."""
    steps: list[dict] = []
    for c, (n, short_tail, split) in enumerate(shape):
        full = n - 1 if short_tail else n
        steps.append({"transfers": [{"tensor": "Q", "block": [f"req{c}", "kv_head", "row_block"],
                                     "bytes": rows * HEAD_DIM_K * size}]})
        if full:
            steps.append({"repeat": full, "loop_var": "j",
                          "transfers": [{"tensor": "KV", "block": [f"kv{c}+j"], "bytes": PAGE_BLOCK * HEAD_DIM_K * size}],
                          "compute": _compute(rows, PAGE_BLOCK, dtype)})
        if short_tail:
            steps.append({"transfers": [{"tensor": "KV", "block": [f"kv{c}+{full}"], "bytes": tail * HEAD_DIM_K * size}],
                          "compute": _compute(rows, tail, dtype)})
        out = ({"tensor": "O_partial", "block": [f"out{c}", "kv_head", "row_block"],
                "bytes": rows * (HEAD_DIM_V + 1) * 4, "direction": "write"} if split else
               {"tensor": "O", "block": [f"req{c}", "kv_head", "row_block"],
                "bytes": rows * (HEAD_DIM_V * size + STAT_BYTES), "direction": "write"})
        steps.append({"transfers": [out], "compute": [{"unit": "vector", "flops": float(rows * HEAD_DIM_V),
                                                       "dtype": "fp32"}]})
    return {"name": f"part{index}", "steps": steps or [{"compute": []}]}


def _combine_kernel(ks: Launches, p: dict[str, Any], split_of: np.ndarray) -> None:
    """Grid (batch x s_q, 1, query heads / 8): a request's programs merge its pieces, or return
    at once where it was not split (reading only its split count)."""
    b, sq, hq, size = p["batch"], p["seq_q"], p["heads"], DTYPE_BYTES[p["dtype"]]
    groups = math.ceil(hq / COMBINE_HEADS)
    # the per-request split counts are int32; a trace knows a tensor's width, not its kind
    ks.tensors["num_splits"] = {"shape": [b + 1], "dtype": "fp32"}
    ks.tensors["O_merged"] = {"shape": [b, sq, groups, COMBINE_HEADS * HEAD_DIM_V], "dtype": p["dtype"]}
    templates, keys, choice = [], {}, []
    variables: dict[str, list[int]] = {"request": [], "s_q_index": [], "group": [], "first_piece": []}
    for group in range(groups):
        heads = min(COMBINE_HEADS, hq - group * COMBINE_HEADS)
        for request in range(b):
            for s in range(sq):
                splits = int(split_of[request])
                key = (heads, splits if splits > 1 else 1)
                if key not in keys:
                    keys[key] = len(templates)
                    templates.append(_combine_template(len(templates), heads, splits, size))
                choice.append(keys[key])
                variables["request"].append(request)
                variables["s_q_index"].append(s)
                variables["group"].append(group)
                variables["first_piece"].append(int(split_of[:request].sum()))
    ks.add_kernel(templates, np.asarray(choice), {k: np.asarray(v) for k, v in variables.items()},
                  {"warps": COMBINE_HEADS, "local_memory_bytes": COMBINE_HEADS * (int(split_of.max()) + 1) * 4})


def _combine_template(index: int, heads: int, splits: int, size: float) -> dict:
    if splits <= 1:
        return {"name": f"combine{index}", "steps": [
            {"transfers": [{"tensor": "num_splits", "block": ["request"], "bytes": 8}]}]}
    return {"name": f"combine{index}", "steps": [
        {"repeat": splits, "loop_var": "k",  # a piece's rows of these heads (the partials' share of the bytes is small)
         "transfers": [{"tensor": "O_partial", "block": ["first_piece+k"], "bytes": heads * (HEAD_DIM_V + 1) * 4}],
         "compute": [{"unit": "special", "flops": float(heads), "dtype": "fp32"},
                     {"unit": "vector", "flops": float(2 * heads * HEAD_DIM_V), "dtype": "fp32"}]},
        {"transfers": [{"tensor": "O_merged", "block": ["request", "s_q_index", "group"],
                        "bytes": heads * HEAD_DIM_V * size, "direction": "write"}]},
    ]}


def build(p: dict[str, Any], params: dict[str, Any], chip: Chip) -> KernelTrace:
    _check(p)
    parts_per_block = sm_parts(p, chip)
    blocks = math.ceil(p["seq_kv"] / PAGE_BLOCK)
    parts = schedule(p["batch"], blocks, parts_per_block)
    split_of = np.zeros(p["batch"], dtype=np.int64)
    for chunks in parts:
        for request, _, _ in chunks:
            split_of[request] += 1
    ks = Launches()
    _main_kernel(ks, p, chip, split_of, parts)
    _combine_kernel(ks, p, split_of)
    name = (f"attention_flashmla_decode_{p['dtype']}_b{p['batch']}_h{p['heads']}_kv{p['kv_heads']}_q{p['seq_q']}"
            f"_s{p['seq_kv']}")
    return ks.trace(name, {"family": "attention", "params": dict(params), "config": default_config(p, chip),
                           "generator": "accelsim.families.attention_impls.flashmla"})


IMPL = Impl(
    name="flashmla",
    summary="DeepSeek's FlashMLA dense MLA decode (Hopper; latent head_dim 576, value 512)",
    unavailable=hopper_only,
    default_config=default_config,
    build=build,
)
