"""``flash_decoding``: one or a few query tokens against a long KV cache, query heads of a KV
group packed as the rows of one block, the KV sequence split over programs whose partial
outputs a second kernel combines (the family's flash-decoding trace): the split-KV decode of
Dao et al.'s Flash-Decoding (2023 blog) as TileOPs' GQA decode launches it (``config=auto``
searches its splits and tiles). FlashAttention's own split-KV kernel (``flash_fwd_splitkv_kernel``,
what ``flash_attn_with_kvcache`` runs: FlashAttention-2 code, ``mma.sync``) is ``fa2`` at a decode
shape, the same trace with its MMAs chained on every GPU.
On Hopper its MMAs are warpgroup MMAs (wgmma), not FlashAttention-2's ``mma.sync`` chains: TileOPs'
kernels are TileLang programs (``tileops/kernels/attention/gqa_decode.py``: 64-row blocks of
query heads, 128 threads) whose ``T.gemm`` lowers to wgmma on Hopper where M >= 64 and the
warps are a multiple of four (tile-ai/tilelang ``src/op/gemm.cc``, ``allowWgmma``), and its batch-one kernel issues ``wgmma_gemm`` from
one consumer warpgroup fed by a TMA producer warp (``gqa_decode_bs1.py``). Each consumer still
runs QK^T, the softmax and PV in turn, so the MMAs are priced at the pipe's efficiency
(``matrix_unit.efficiency``, not the chained one) with the softmax on the same chain
(``Schedule(chained=False)``); elsewhere it is priced as a split-KV kernel of chained MMAs.
Leaves out: paged KV (page-table reads), the batch-one kernel's producer warp (its loads are
priced as the consumers' own, pipelined), each wgmma's completion waited for in the batch-one
consumer (``gqa_decode_bs1_common.py`` @52dbc086: ``T.wait_wgmma(0)`` after QK^T, line 109, before
the softmax, and after PV, line 135, before the ring slot is freed): the engine prices an MMA at
its issue rate, and the one published wgmma latency (Luo et al., arXiv:2402.13499, Table VIII) is
a back-to-back chain's issue interval, not a completion latency, so no number prices the wait (on
the H200 16-split record the consumer takes about 1430 cycles a 64-key tile against the model's
1000; docs/kernels-attention.md, "The wgmma latency the literature gives"), P's round trip through
shared memory in the batch-one kernel, the batched kernel's 16-bit partials (priced fp32), MLA (``flashmla``).
FlashInfer's decode is :mod:`.flashinfer`."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.errors import InputError
from accelsim.families.attention_impls import triton
from accelsim.families.attention_impls.base import Impl, Schedule, gpu_only


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if not p["decode"]:
        raise InputError("a decode kernel: seq_q * heads per KV head <= 64, seq_q <= 16, forward",
                         field="params.impl")
    return triton.decode_config(p, chip)


def _decode_space(p: dict[str, Any], chip: Chip) -> list[dict[str, int]]:
    default_config(p, chip)
    return triton.config_space(p, chip)


FLASH_DECODING = Impl(
    name="flash_decoding",
    summary="split-KV decode with a combine kernel (Flash-Decoding as TileOPs' GQA decode runs it; wgmma on Hopper)",
    unavailable=gpu_only,
    default_config=default_config,
    config_space=_decode_space,
    hopper_schedule=Schedule(chained=False),
)
