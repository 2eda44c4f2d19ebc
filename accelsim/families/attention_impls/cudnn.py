"""``cudnn``: cuDNN's fused flash attention (``cudnn_frontend`` SDPA graphs; PyTorch's
``SDPBackend.CUDNN_ATTENTION``, TransformerEngine's ``FusedAttention``).

cuDNN's kernels are closed. What NVIDIA says in public (the cuDNN 9 release notes and
developer blog "Accelerating Transformers with NVIDIA cuDNN 9", 2024; the cudnn-frontend
SDPA docs) is that its Hopper SDPA is a FlashAttention-style fused kernel built on Hopper's
TMA and warpgroup MMAs, in bf16/fp16 and fp8. So this model assumes: FA3's schedule
(producer warpgroup, two consumer warpgroups of 64 rows, asynchronous MMAs, FP32 softmax
work overlapped, exps on the chain; :mod:`.fa3`); 128-row q tiles with 128-key tiles, or
the largest of 96 and 64 keys whose two K/V stages fit in shared memory (head dim 256: 64);
the backward as FA3's (its main loop's stores, :func:`.fa3.backward_staged`, and its consumers in
step). Assumed, not known: the tiles, the stages, the persistent scheduling
cuDNN may use. In fp8 on Hopper V must be transposed before the PV MMA (an 8-bit wgmma reads its
B operand from shared memory K-major only: PTX ISA ``wgmma.mma_async``, whose transpose immediates
are for 16-bit types; FA3 paper, section 3.3), and cuDNN takes V as PyTorch lays it out (head dim
fastest); assumed done in shared memory as FA3's ``load_fp8`` does, so a tile's first block's
transpose is on its chain (``Impl.fp8_v_transpose``; cuDNN's CTAs are not persistent here, so its
tiles pay their first loads anyway). The fp8 backward's MMAs need the same (assumed in shared
memory, on the chain): three of its five products reduce over a dimension their B operand is not
stored along, so Q's and dO's blocks are transposed each iteration and the program's K block once
(``attention._bwd_transposed_tensors``). Whether cuDNN's Hopper fp8 backward does exactly this, or
transposes in a separate kernel, is not public.

On Blackwell (no FA3) its tcgen05 kernels are assumed to be laid out as the public Blackwell
attention kernels are (FlashAttention-4's ``flash_attn/cute/flash_fwd_sm100.py``, CUTLASS's
Blackwell FMHA examples): a CTA runs two 128-row query tiles against one stream of K and V, each
tile's softmax on a warpgroup of its own (:data:`BLACKWELL_Q_TILES`), so a CTA covers 256 query
rows. The assumption is taken from the open kernels, not from the check records; those are
consistent with it (the B200 cudnn-frontend prefills, never fitted: a 256- and a 512-token chunk
against the same 32k cache take 0.388 and 0.393 ms at 32 query heads, one wave of 256-row CTAs
either way). FlashAttention-4 gives such a CTA 16 warps; the model's 12 (:func:`_forward_warps`)
are its streams. Tensor memory (512 columns of 128 lanes x 32 bit an SM: PTX ISA, "Tensor Memory")
holds each tile's fp32 S (128 keys) and O (head dim) accumulators, which at head dim 256 leaves
room for one tile only (:func:`_q_tiles`): there a CTA runs one 128-row tile with two S stages of
its own (:func:`_score_stages`), 128-key blocks, and shares each MMA with its neighbour as a 2-SM
pair, each CTA staging half of every K and V block (:func:`_pair`): FlashAttention-4's dedicated
``sm100_hd256_2cta_fmha_forward.py`` (``mma_tiler = (128, 128, 256)``, ``cluster_shape_mn = (2,
1)``, ``qk_acc_stage = 2``, S at columns 0-255, O at 256-511) and the cudnn-frontend docs' "SDPA
Forward (SM100, D=256)", whose default ``mma_tiler_mn`` is (128, 128). P is left in tensor memory
as the PV MMA's A operand (``tcgen05.mma`` reads A from tensor or shared memory, B from shared
memory only), so it moves no shared memory (``Compute.a_in_tensor_memory``).
The Blackwell backward is assumed to be laid out as FlashAttention-4's ``flash_bwd_sm100.py``:
128x128 tiles (``tile_m``, ``tile_n``), S^T and dP^T computed into tensor memory so that P^T and
dS^T are the dV and dK MMAs' A operands there, dS stored to shared memory for the dQ MMA, dQ's
fp32 partial moved from tensor memory through shared memory by reduce warps to a TMA reduce-add
(:func:`_blackwell_backward_staged`), and its MMAs issued by one thread a step ahead ("S.T (next),
dK (cur), dP.T (next), dQ (cur), dV (next)") so the compute warps' P and dS run beside the MMAs
(:attr:`Schedule.pipelined_backward`: two streams, the FP32 work on them). Leaves out: the 2-SM
pair's extra masked work on a causal diagonal (each CTA of a pair is given its own key range),
the tensor-memory loads and stores of S, dP, P and dS, the L2's rate for dQ's reduce-adds."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import fa3, triton
from accelsim.families.attention_impls.base import (WARPGROUP_WARPS, Impl, Schedule, config, is_blackwell,
                                                    is_hopper)
from accelsim.trace.kernel import DTYPE_BYTES

STAGES = 2
ROWS = 128


BLACKWELL_Q_TILES = 2
"""Query tiles of 128 rows one Blackwell CTA runs side by side against one stream of K and V, each
owned by a softmax warpgroup of its own (FlashAttention-4, ``flash_attn/cute/flash_fwd_sm100.py``:
``q_stage = 2``, "2 Q tile per CTA", ``cta_tiler = (2 * m_block_size, ...)``, warps ``softmax0`` and
``softmax1``; CUTLASS's Blackwell FMHA examples the same). cuDNN's kernels are closed: assumed."""


TENSOR_MEMORY_LANES = 128
"""Lanes (rows) of Blackwell's tensor memory, 32-bit cells each: its columns are its bytes over
128 x 4 (PTX ISA, "Tensor Memory": 128 lanes x 512 columns on sm_100)."""


def _q_tiles(p: dict[str, Any], chip: Chip) -> int:
    """128-row query tiles a Blackwell CTA runs side by side: :data:`BLACKWELL_Q_TILES` where each
    tile's fp32 S ([128, keys]) and O ([128, head dim]) accumulators fit tensor memory together,
    else one (FlashAttention-4's ``tmem_total = 2 * n_block_size + q_stage * head_dim_v`` must stay
    within the 512 columns: two tiles at head dim 128, one at 256, where its ``hd256`` kernel and
    cuDNN's SM100 D=256 forward, ``mma_tiler_mn=(128, 128)``, run one 128-row tile a CTA)."""
    columns = chip.local.tensor_memory_bytes // (TENSOR_MEMORY_LANES * 4)
    if BLACKWELL_Q_TILES * (ROWS + p["head_dim"]) <= columns:
        return BLACKWELL_Q_TILES
    return 1


def _rows(p: dict[str, Any], chip: Chip) -> int:
    return ROWS * _q_tiles(p, chip) if is_blackwell(chip) else ROWS


def _pair(p: dict[str, Any], chip: Chip) -> int:
    """Programs one MMA spans: on Blackwell where a CTA runs one query tile (head dim 256), the 2-SM
    pair of ``tcgen05.mma.cta_group::2`` (M = 256 over two CTAs, each staging half of every K and V
    block): FlashAttention-4's ``sm100_hd256_2cta_fmha_forward.py`` (``cluster_shape_mn = (2, 1)``,
    ``qk_mma_tiler = (2 * 128, 128, ...)``); cuDNN's own kernels are closed: assumed."""
    return chip.matrix.pair if is_blackwell(chip) and _q_tiles(p, chip) == 1 else 1


def _keys_that_fit(p: dict[str, Any], chip: Chip) -> int:
    size, d, rows, pair = DTYPE_BYTES[p["dtype"]], p["head_dim"], _rows(p, chip), _pair(p, chip)
    for keys in (128, 96, 64):
        if (rows * d + STAGES * 2 * keys * d // pair) * size <= chip.local.max_per_program_bytes:
            return keys
    return 32


def _score_stages(p: dict[str, Any], chip: Chip) -> int:
    """fp32 S accumulators of 128 keys tensor memory holds beside the O ones, at most
    :data:`BLACKWELL_Q_TILES`: while the softmax works on one, the MMAs fill another. Two query
    tiles (head dim 128) have one each (FlashAttention-4's ``tmem_s_offset = [0, n_block_size]``),
    one tile (256) two stages of its own (the ``hd256`` kernel's ``qk_acc_stage = 2``, S at columns
    0-255 and O at 256-511); either way two streams of MMAs and exps that overlap."""
    columns = chip.local.tensor_memory_bytes // (TENSOR_MEMORY_LANES * 4)
    return max(1, min(BLACKWELL_Q_TILES, (columns - _q_tiles(p, chip) * p["head_dim"]) // ROWS))


def _forward_warps(p: dict[str, Any], chip: Chip) -> int:
    """A producer warpgroup and the consumer warpgroups: on Hopper one per 64 rows (a wgmma's M),
    on Blackwell one per S accumulator in tensor memory (:func:`_score_stages`), each a stream."""
    if is_blackwell(chip):
        return WARPGROUP_WARPS * (_score_stages(p, chip) + 1)
    return fa3.warps(ROWS)


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if p["decode"]:
        return triton.decode_config(p, chip)
    if p["backward"] and is_blackwell(chip):
        return config(BLACKWELL_BWD_TILE, BLACKWELL_BWD_TILE, STAGES, BLACKWELL_BWD_WARPS)
    if p["backward"]:
        bm, bn = fa3.backward_tile(p["head_dim"])
        return config(bm, bn, STAGES, 12)
    launch = config(_rows(p, chip), _keys_that_fit(p, chip), STAGES, _forward_warps(p, chip))
    pair = _pair(p, chip)
    return {**launch, "pair": pair} if pair > 1 else launch


BLACKWELL_BWD_TILE = 128
"""Query rows an iteration and keys a program of the Blackwell backward (FlashAttention-4's
``FlashAttentionBackwardSm100``: ``tile_m = tile_n = 128``)."""
BLACKWELL_BWD_WARPS = 12
"""A producer warpgroup and two streams: the MMAs (one thread issues them) and the compute warps'
P and dS, which overlap (FlashAttention-4 gives the CTA 16 warps: 8 compute, 4 dQ-reduce, a load,
an MMA and two others; the model counts streams, not warps)."""


def _blackwell_backward_staged(head_dim: int) -> tuple[str, ...]:
    """What the Blackwell backward stores to shared memory each iteration: dS, the dQ MMA's A
    operand (``sdS``), and dQ's fp32 partial on its way from tensor memory to the TMA reduce-add
    (``sdQaccum``); P^T and dS^T stay in tensor memory for the dV and dK MMAs."""
    return ("dS", "dQ")


EX2_FRAGMENT = 32
"""Scores of a softmax thread's row that FlashAttention-4's ``apply_exp2_convert`` takes as one
fragment (``frg_tile``) when it chooses which exps to emulate (``flash_attn/cute/softmax.py``)."""

EX2_EMULATION_D128 = {(False, False): (10, 4, 1), (False, True): (16, 4, 1),
                      (True, False): (10, 4, 1), (True, True): (8, 4, 1)}
"""FlashAttention-4's sm100 forward at head dim 128, ``(ex2_emu_freq, ex2_emu_res, ex2_emu_start_frg)``
by (8-bit inputs, causal): ``flash_attn/cute/flash_fwd_sm100.py`` @0251105a, ``_TUNING_CONFIG`` (bf16)
and ``_FP8_TUNING_CONFIG`` (fp8; its comment: "FP8 fwd is MUFU/ex2-bound")."""
EX2_EMULATION_D256 = (14, 6, 0)
"""Its head-dim-256 kernel's, in both types and with or without the mask (``_TUNING_CONFIG``'s
``(True, *, 256, False)``)."""
EX2_EMULATION_DEFAULT = (16, 4, 1)
"""Its default below head dim 128 (``enable_ex2_emu`` for head dims up to 128; freq 16, start 1)."""


def _ex2_knobs(p: dict[str, Any]) -> tuple[int, int, int] | None:
    d = p["head_dim"]
    if d == 128:
        return EX2_EMULATION_D128[(p["dtype"] == "fp8", p["causal"])]
    if d == 256:
        return EX2_EMULATION_D256
    return EX2_EMULATION_DEFAULT if d < 128 else None


def exp2_emulated(p: dict[str, Any], keys: int, chip: Chip) -> float:
    """The share of a Blackwell forward's exps computed by a degree-3 polynomial on the FMA pipes
    (FlashAttention-4's ``utils.ex2_emulation_2``) instead of the SFUs (MUFU.EX2, 16 a cycle an SM
    against 128 FMA lanes: the Blackwell forward's bottleneck, FlashAttention-4 paper, arXiv:2603.05451,
    section 3.1.3: "emulation to only a subset of the entries in each softmax row (10-25%)"). As
    ``softmax.apply_exp2_convert`` chooses them: in each 32-score fragment of a row the pairs
    ``(k, k + 1)`` with ``k % freq >= freq - res``, in the fragments from ``start`` on but the last
    (a row of ``keys`` scores: the tile's key block).
    cuDNN's kernels are closed: assumed as FlashAttention-4's, as their layout is (module docstring).
    None on Hopper, and where the SFUs run more than sm_100's 16 a cycle (FlashAttention-4 turns it
    off on sm_103, whose MUFU is twice as fast)."""
    knobs = _ex2_knobs(p)
    if not is_blackwell(chip) or chip.vector.special_function_ops_per_cycle_per_core > 16 or knobs is None:
        return 0.0
    freq, res, start = knobs
    fragments = keys // EX2_FRAGMENT
    pairs = sum(1 for k in range(0, EX2_FRAGMENT, 2) if k % freq >= freq - res)
    return max(0, fragments - 1 - start) * 2 * pairs / (keys or 1)


def _unavailable(chip: Chip) -> str | None:
    return None if is_hopper(chip) or is_blackwell(chip) else "cuDNN's fused flash attention needs Hopper or Blackwell"


TENSOR_MEMORY_SCHEDULE = Schedule(chained=False, overlapped_vector=True, producer_warps=4,
                                  consumer_chains="separate", pipelined_backward=True)
"""On Blackwell: the MMAs (``tcgen05.mma``) are issued by one thread and accumulate in tensor
memory, not in the softmax warps' registers, so the softmax warpgroups' work (their exps on the
SFUs) and the MMAs of other tiles overlap: each consumer is a chain of its own; the backward's
MMAs are issued a step ahead of its compute warps (``pipelined_backward``)."""

IMPL = Impl(
    name="cudnn",
    summary="cuDNN's fused attention (assumed FA3-like; the default on Blackwell)",
    unavailable=_unavailable,
    default_config=default_config,
    schedule=fa3.WARP_SPECIALIZED,
    blackwell_schedule=TENSOR_MEMORY_SCHEDULE,
    backward_staged=fa3.backward_staged,
    blackwell_backward_staged=_blackwell_backward_staged,
    tensor_memory_operands=True,
    fp8_v_transpose=True,
    exp2_emulated=exp2_emulated,
)
