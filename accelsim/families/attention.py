"""``attention``: FlashAttention-style fused attention, forward and backward, with GQA,
causal masking and decode (``seq_q=1``).

GPU forward (Triton / FA2 style): one program per (batch, head, q block of
``block_m`` rows); it loads its Q block once, loops over K/V blocks of ``block_n``
rows (``S = Q K^T``, online softmax with one exp per score, ``O += P V``), then
writes O and the log-sum-exp. Causal programs stop at the diagonal (bottom-right
aligned when ``seq_kv > seq_q``). Heads of one KV group are adjacent in launch
order, so GQA's shared K/V blocks are served by L2. Decode (``seq_q * heads per KV
head <= 64`` and ``seq_q <= 16``, forward, not causal unless ``seq_q == 1``: a causal
mask on several query rows takes the prefill path, which applies it) packs the query
heads of a KV group into the rows of one program and splits the KV sequence over
``split_kv`` programs (flash-decoding) at whole ``block_n`` blocks, whose partial
results (fp32) a second kernel of the trace combines (``kernel.kernel_starts``), as
FlashAttention's, FlashInfer's and TileOPs' split decode launch it: one program per query
head reads its rows of every split's partial and LSE and writes its O and LSE.

GPU backward (FA2 style): one program per (batch, head, K/V block); it keeps K and
V, loops over Q blocks (from the diagonal on, if causal) recomputing ``P``, and
runs five matmuls per iteration (QK^T, dV += P^T dO, dP = dO V^T, dK += dS^T Q,
dQ += dS K with dQ accumulated by fp32 atomics), then writes dK and dV: our Triton
kernel ``kernels/triton/attention.py`` (``attention_bwd``). Barriers over all its MMA warps
separate each iteration's phases, so the warps run in step (one chain per program, the FP32
work on it: ``Schedule.backward``), and what they store to shared memory for the next MMAs
(the implementation's ``backward_staged``: P and dS, or FA3's dS and dQ partial) is on that
chain too (``level: local`` transfers). The q blocks on a causal
diagonal count their attended pairs as useful flops (2.5x the forward's, the
FlashAttention papers' convention). ``pass=bwd-kernel`` is that kernel alone;
``pass=bwd`` a whole backward call (SDPA's, FlashAttention-2's): a first kernel computes
``Delta = rowsum(dO * O)`` and clears the fp32 dQ, the last casts dQ to the input type
(three kernels of one trace, ``kernel.kernel_starts``).

TPU forward (Pallas flash attention): grid (batch, heads, q blocks, kv blocks) with
the kv axis last and sequential; causal blocks past the diagonal keep the previous
K/V block index (no copy) and skip compute.

TPU backward (our Pallas kernels, ``kernels/pallas/attention.py``): two kernels in one
trace, grid (kernel, batch, heads, block pairs): ``dkv`` walks the q blocks of each kv
block (dV += P^T dO, dK += dS^T Q in VMEM, four matmuls), then ``dq`` the kv blocks of
each q block (P and dP recomputed, dQ += dS K, three matmuls; the two recomputed ones
are not counted as useful flops). Causal skipping clamps block indices as the forward
does. ``Delta = rowsum(dO * O)`` before them and the GQA sum of per-head dK and dV after
them are XLA work outside the trace (``bwd`` and ``bwd-kernel`` are the same on TPUs).

Vector work per score element, forward: scale, running max, subtract, row sum
(4 flops), one exp and a cast of P; per row and iteration the accumulator rescale and
add (2 x ``head_dim``); masked blocks 5 more per score (see ``_score_compute``). Backward: recomputing P (4 flops + exp) and ``dS = P * (dP - delta)``
(2 flops).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, GpuChip, TpuChip
from accelsim.errors import InputError
from accelsim.families import attention_impls
from accelsim.families.attention_impls.base import Impl, Schedule, TileSchedule, is_blackwell, is_hopper
from accelsim.families.base import Family, Param, fits, local_limit
from accelsim.families.pallas_rule import Operand, pallas_trace
from accelsim.families.rowwise import (
    MAX_REGISTERS_PER_THREAD,
    REGISTERS_OVERHEAD,
    REGISTERS_PER_DOT,
)
from accelsim.trace.kernel import DTYPE_BYTES, Compute, KernelTrace, check_programs

PARAMS = (
    Param("batch", int, 1),
    Param("heads", int, help="query heads"),
    Param("kv_heads", int, 0, help="key/value heads (GQA); default: heads", minimum=0),
    Param("seq_q", int, help="query length (1 for decode)"),
    Param("seq_kv", int, 0, help="key/value length; default: seq_q", minimum=0),
    Param("head_dim", int, 128),
    Param("causal", bool, False),
    Param("dtype", str, "bf16", ("bf16", "fp16", "fp8")),
    Param("impl", str, attention_impls.DEFAULT, (attention_impls.DEFAULT, *attention_impls.IMPLS),
          help="implementation: default (the chip's most used: fa3 on Hopper, cudnn on Blackwell, fa2 on other "
               "NVIDIA GPUs, triton on AMD, pallas on TPUs); " + "; ".join(
                   f"{name}: {impl.summary}" for name, impl in attention_impls.IMPLS.items())),
    Param("dropout", bool, False,
          help="attention dropout in the kernel (training): each score's keep decision drawn from Philox and "
               "applied to P, in the forward and again in the backward (GPU prefill and backward only)"),
    Param("pass", str, "fwd", ("fwd", "bwd", "bwd-kernel"),
          help="fwd; bwd: a whole backward (GPU: the Delta pass and dQ clear, the kernel, the dQ cast); "
               "bwd-kernel: the backward kernel alone"),
)
CONFIG = (
    Param("block_m", int, help="query rows per program (GPU) / per block (TPU)"),
    Param("block_n", int, help="key/value rows per iteration"),
    Param("num_stages", int),
    Param("num_warps", int),
    Param("split_kv", int, help="decode: programs sharing one query's KV sequence"),
    Param("pair", int, help="GPU forward: programs one MMA spans (Blackwell's 2-SM MMA), consecutive query "
                            "blocks of a head, each loading and staging its half of every K and V block "
                            "(at most the chip's matrix_unit.pair; default 1)"),
)

FWD_VECTOR_FLOPS_PER_SCORE = 4
MASK_FLOPS_PER_SCORE = {"gpu": 1, "tpu": 5}
EX2_EMULATION_FLOPS = 12
"""An exp computed by FlashAttention-4's polynomial instead of MUFU.EX2, in FP32-pipe slots (2 flops a
lane-cycle): per value an add rounding down, two subtracts and three FMAs (a degree-3 Horner), all
FMA-pipe (``flash_attn/cute/utils.py``, ``ex2_emulation_2``: packed f32x2 ops, two values an
instruction); its clamp (``fmax``), shift and integer add run on the ALU pipe, which the model does
not price apart. Charged where the implementation emulates a share of its exps
(:attr:`~accelsim.families.attention_impls.base.Impl.exp2_emulated`), and that share of MUFU work is
taken off."""
BWD_VECTOR_FLOPS_PER_SCORE = 6
FP8_RELAYOUT_FLOPS_PER_SCORE = 4
"""fp8 P re-laid out in registers for the PV MMA, in FP32-pipe slots (2 flops a lane-cycle): the
QK^T accumulator's layout is not the 8-bit A operand's, so per two 32-bit registers of P (8
values) the kernels run 4 byte permutes and 2 warp shuffles within a quad of threads (Colfax
Research, "Delivering 1 PFLOP/s of Performance with FP8 FlashAttention-2", 2024, and its
``ReorgCFp8toAFp8``; FlashAttention-3 paper section 3.3; Triton's ``convertMMAV3To8BitsDotOperand``).
A shuffle issues at 32 a cycle per SM, a 32-bit integer op at 64 (CUDA C++ Programming Guide,
arithmetic instruction throughput, cc 9.0), against 128 FP32 lanes: (2 x 4 + 4 x 2) x 2 / 8.
Charged where the implementation says its kernel moves P so (``Impl.fp8_p_relayout``: Triton);
FlashAttention-3's default path (V row-major, transposed in the kernel) only swaps registers within
a thread (``permute_Cregs_fp8``), which the compiler resolves statically; cuDNN's fp8 kernels are
closed and assumed to do as FlashAttention-3's."""
DROPOUT_FLOPS_PER_SCORE = 13
"""In-kernel attention dropout, in FP32-pipe slots (2 flops a lane-cycle), per score. As
FlashAttention-2 draws it (``csrc/flash_attn/src/philox.cuh`` and ``dropout.h``, Dao-AILab/
flash-attention): one Philox4x32 call of 7 rounds gives 16 random bytes, the keep decisions of
16 scores; a round is two ``mul.wide.u32`` and two three-input XORs (one ``LOP3`` each; the key's
increments are the same for every thread and hoisted), 28 integer instructions a call, 1.75 a
score; the keep test widens the bytes to 16 bits (``PRMT``, 0.5 a score), compares two at once
(``set.le.u32.f16x2``, 0.5) and ANDs the mask into P (0.5): 3.25 integer instructions a score.
A 32-bit integer op issues at 64 a cycle per SM against 128 FP32 lanes (CUDA C++ Programming
Guide, arithmetic instruction throughput, cc 8.0-9.0): 3.25 x 2 x 2 = 13. ``mul.wide.u32`` is
counted as one issue (an assumption; SASS may split it in two). The backward draws the same
masks again from the same seed and offset (no mask is stored) and applies them to P and dP: the
same count there. cuDNN's kernels are closed; they take a Philox seed and offset too
(cudnn-frontend's SDPA ``set_dropout``) and are assumed to draw as FlashAttention-2 does."""
STAT_BYTES = 4  # fp32 log-sum-exp / delta per row
V_TRANSPOSE_PASSES = ("read", "write")
"""An in-kernel fp8 V transpose (:attr:`Impl.fp8_v_transpose`) moves the block through shared
memory twice: read into registers (``ldmatrix``), written back transposed (``stmatrix``). A tile's
first block is transposed after its V arrives and before the first PV MMA can start, so its bytes
are on the tile's chain (``level: local`` transfers, at the shared memory's bytes a cycle);
FlashAttention-3's ``load_fp8`` (``hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp``, commit 5018ac6a to v2.7.0)
issues that V load only once the tile before has stored O (``barrier_O``: O shares ``smem_v_out``)."""


def _problem(p: dict[str, Any]) -> dict[str, Any]:
    q = dict(p)
    q["kv_heads"] = p["kv_heads"] or p["heads"]
    q["seq_kv"] = p["seq_kv"] or p["seq_q"]
    if q["heads"] % q["kv_heads"]:
        raise InputError(f"heads={p['heads']} is not a multiple of kv_heads={q['kv_heads']}", field="params.kv_heads")
    if q["causal"] and q["seq_kv"] < q["seq_q"]:
        raise InputError("causal attention needs seq_kv >= seq_q", field="params.seq_kv")
    q["group"] = q["heads"] // q["kv_heads"]
    q["backward"] = q["pass"] != "fwd"
    # a causal mask over one query row masks nothing (bottom-right aligned): decode; with
    # several rows it does, so those take the prefill path that applies it
    q["decode"] = (q["seq_q"] * q["group"] <= 64 and q["seq_q"] <= 16 and not q["backward"]
                   and (not q["causal"] or q["seq_q"] == 1))
    return q


def kv_split(seq_kv: int, split: int, block_n: int) -> tuple[int, int]:
    """Flash-decoding's split of the KV sequence: (rows per split, a whole number of
    ``block_n`` blocks, as the kernels cut it; splits that get rows)."""
    chunk = math.ceil(math.ceil(seq_kv / split) / block_n) * block_n
    return chunk, math.ceil(seq_kv / chunk)


def default_config(params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    p = _problem(params)
    return attention_impls.resolve(p["impl"], chip).default_config(p, chip)


def config_space(params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """The implementation's configs (a library's own launch where it picks one)."""
    p = _problem(params)
    impl = attention_impls.resolve(p["impl"], chip)
    out = impl.config_space(p, chip) if impl.config_space else [impl.default_config(p, chip)]
    return [c for c in out if fits(check, params, c, chip)]


def _local_bytes(p: dict[str, Any], config: dict[str, Any], kind: str, buffers: int | None = None) -> int:
    """GPU: the resident tiles plus ``buffers`` of each staged one (:meth:`Chip.staged_buffers`,
    default ``num_stages``); TPU: its double-buffered blocks and scratch."""
    d, size = p["head_dim"], DTYPE_BYTES[p["dtype"]]
    bm, bn = config["block_m"], config["block_n"]
    stages = config["num_stages"] if buffers is None else buffers
    if kind == "tpu" and p["backward"]:
        # double-buffered Q, dO, K, V and the two (rows, 1) fp32 statistics (a lane tile
        # each), the dkv kernel's dK and dV outputs (double-buffered) and fp32
        # accumulators (the larger kernel), and the fp32 S/P, dP and dS of one block
        inputs = 2 * ((2 * bm + 2 * bn) * d * size + 2 * bm * 128 * 4)
        return int(inputs + 2 * 2 * bn * d * size + 2 * bn * d * 4 + 3 * bm * bn * 4)
    if kind == "tpu":
        blocks = 2 * (bm * d + 2 * bn * d + bm * d) * size
        return int(blocks + bm * d * 4 + 2 * bm * 128 * 4 + bm * bn * 4)
    if p["backward"]:
        return int((2 * bn * d + stages * 2 * bm * d) * size)
    return int((bm * d + stages * 2 * bn * d // config.get("pair", 1)) * size)


def _live_values(p: dict[str, Any], config: dict[str, Any]) -> tuple[int, int]:
    """(fp32 values a program holds, dots per step): forward, the S block and the O
    accumulator (two dots); backward, the dK and dV accumulators, S (then P) and dP, and
    one dQ partial (five dots)."""
    bm, bn, d = config["block_m"], config["block_n"], p["head_dim"]
    if not p["backward"]:
        return bm * d + bm * bn, 2
    return 2 * bn * d + 2 * bm * bn + bm * d, 5


def _registers_needed(p: dict[str, Any], config: dict[str, Any]) -> int:
    live, dots = _live_values(p, config)
    return math.ceil(live / (config["num_warps"] * 32)) + REGISTERS_OVERHEAD + REGISTERS_PER_DOT * dots


def _registers(p: dict[str, Any], config: dict[str, Any]) -> int:
    schedule = p.get("schedule")
    if schedule is not None and schedule.producer_warps:
        return _specialized_registers(config["num_warps"], schedule.producer_warps)
    return min(MAX_REGISTERS_PER_THREAD, _registers_needed(p, config))


def _specialized_registers(warps: int, producer_warps: int) -> int:
    """A warp-specialized program's registers per thread, averaged over its warps: the
    producer gives registers up and the consumers take them (``setmaxnreg``; FlashAttention-3's
    ``hopper/flash_fwd_kernel_sm90.h``: the producer keeps 24 with two consumer warpgroups
    and 32 with three, the consumers take 240 and 160)."""
    consumer_warps = warps - producer_warps
    two_groups = consumer_warps <= 8
    producer, consumer = (24, 240) if two_groups else (32, 160)
    return math.ceil((producer * producer_warps + consumer * consumer_warps) / warps)


def check(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    p = _problem(params)
    impl = attention_impls.resolve(p["impl"], chip)
    if impl.build is not None:
        return  # the implementation builds its own kernels: no fused tile to check
    _set_schedule(p, impl, chip)
    for key in ("block_m", "block_n", "num_stages", "num_warps", "split_kv"):
        if not isinstance(config.get(key), int) or config[key] < 1:
            raise InputError("expected a positive integer", field=f"params.{key}")
    if p["dtype"] not in chip.matrix.flops_per_cycle_per_core:
        raise InputError(f"{chip.name} has no matrix-unit rate for {p['dtype']}", field="params.dtype")
    if config["split_kv"] > 1:
        if not (p["decode"] and isinstance(chip, GpuChip)):
            raise InputError("split_kv applies to GPU decode (seq_q * heads per KV head <= 64, seq_q <= 16, "
                             "forward) only", field="params.split_kv")
        chunk, used = kv_split(p["seq_kv"], config["split_kv"], config["block_n"])
        if used < config["split_kv"]:
            raise InputError(f"split_kv={config['split_kv']} leaves some splits without keys: seq_kv={p['seq_kv']} "
                             f"in blocks of {config['block_n']} gives at most {used} splits of {chunk} keys",
                             field="params.split_kv")
    _check_pair(p, config, chip)
    need = _local_bytes(p, config, chip.kind, chip.staged_buffers(config["num_stages"]))
    limit, limit_field = local_limit(chip)
    combine = _combine_local_bytes(config["split_kv"], p["seq_q"])
    if config["split_kv"] > 1 and combine > limit:
        raise InputError(f"split_kv={config['split_kv']}: the combine kernel holds every split's log-sum-exp, "
                         f"{combine} bytes of local memory per program; {chip.name} allows {int(limit)} "
                         f"({limit_field})", field="params.split_kv")
    if need > limit:
        raise InputError(f"blocks need {need} bytes of local memory per program; "
                         f"{chip.name} allows {int(limit)} ({limit_field})", field="params.block_m")
    # a config estimated above the limit would spill (our backward at 64x128 with 8 warps
    # spills 1.1 KB a thread compiled for sm_90)
    # a library's own launch compiles (its registers are what it allocates, clamped), a searched one may spill
    searched = impl.config_space is not None and not p["schedule"].producer_warps
    needed = _registers_needed(p, config) if isinstance(chip, GpuChip) and searched else 0
    if needed > MAX_REGISTERS_PER_THREAD:
        raise InputError(f"about {needed} registers a thread ({MAX_REGISTERS_PER_THREAD} at most: the rest would "
                         "spill); use more warps or smaller blocks", field="params.num_warps")


def _check_pair(p: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    pair = config.get("pair", 1)
    if not isinstance(pair, int) or pair < 1:
        raise InputError("expected a positive integer", field="params.pair")
    if pair == 1:
        return
    if not isinstance(chip, GpuChip) or pair > chip.matrix.pair:
        most = chip.matrix.pair if isinstance(chip, GpuChip) else 1
        raise InputError(f"{chip.name} cannot span one MMA over {pair} programs (matrix_unit.pair: {most})",
                         field="params.pair")
    if p["backward"] or p["decode"]:
        raise InputError("pair applies to a GPU prefill forward only", field="params.pair")


def _out_bytes(p: dict[str, Any]) -> int:
    """Bytes an element of O and of the gradients takes: fp8 attention's are bf16."""
    return DTYPE_BYTES["bf16" if p["dtype"] == "fp8" else p["dtype"]]


def _tensors(p: dict[str, Any]) -> dict[str, dict]:
    b, h, hk, sq, skv, d, dt = p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["seq_kv"], p["head_dim"], p["dtype"]
    out_dt = "bf16" if dt == "fp8" else dt
    tensors = {
        "Q": {"shape": [b, h, sq, d], "dtype": dt},
        "K": {"shape": [b, hk, skv, d], "dtype": dt},
        "V": {"shape": [b, hk, skv, d], "dtype": dt},
        "O": {"shape": [b, h, sq, d], "dtype": out_dt},
        "LSE": {"shape": [b, h, sq], "dtype": "fp32"},
    }
    if p["backward"]:
        tensors.update({
            "dO": {"shape": [b, h, sq, d], "dtype": out_dt},
            "Delta": {"shape": [b, h, sq], "dtype": "fp32"},
            "dQ": {"shape": [b, h, sq, d], "dtype": "fp32"},
            "dK": {"shape": [b, h, skv, d], "dtype": out_dt},
            "dV": {"shape": [b, h, skv, d], "dtype": out_dt},
        })
    return tensors


def useful_flops(params: dict[str, Any]) -> float:
    """Matmul flops of the attended (query, key) pairs: 4*pairs*head_dim forward,
    2.5x that backward (the convention of the FlashAttention papers)."""
    p = _problem(params)
    pairs = float(attended_pairs(p, 0, p["seq_q"], 0, p["seq_kv"]))
    flops = 4.0 * p["batch"] * p["heads"] * pairs * p["head_dim"]
    return flops * (2.5 if p["backward"] else 1.0)


def build(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    p = _problem(params)
    impl = attention_impls.resolve(p["impl"], chip)
    if p["dropout"] and (impl.build is not None or isinstance(chip, TpuChip) or p["decode"]):
        where = "decode" if p["decode"] else "TPUs" if isinstance(chip, TpuChip) else f"impl={impl.name}"
        raise InputError(f"dropout is modelled in the fused GPU prefill and backward kernels only, not for {where}",
                         field="params.dropout")
    if impl.build is not None:
        return impl.build(p, params, chip)
    _set_schedule(p, impl, chip)
    if isinstance(chip, TpuChip):
        return _build_tpu_bwd(p, params, config) if p["backward"] else _build_tpu(p, params, config)
    buffers = chip.staged_buffers(config["num_stages"])
    if p["backward"]:
        return _build_gpu_bwd(p, params, config, buffers)
    if p["decode"]:
        return _build_gpu_decode(p, params, config, buffers)
    tiles = impl.forward_tiles(p, config["block_m"], chip) if impl.forward_tiles else TileSchedule()
    if impl.exp2_emulated:
        p["exp2_emulated"] = impl.exp2_emulated(p, config["block_n"], chip)
    return _build_gpu_fwd(p, params, config, buffers, tiles)


def _set_schedule(p: dict[str, Any], impl: Impl, chip: Chip) -> None:
    """The implementation's schedule on ``chip`` into ``p``; a GPU backward's as its main loop runs
    it (:meth:`Schedule.backward`), with what its warps store to shared memory each iteration."""
    p["schedule"] = impl.schedule_for(chip)
    p["fp8_relayout"] = impl.fp8_p_relayout
    p["v_transpose"] = impl.fp8_v_transpose and p["dtype"] == "fp8" and is_hopper(chip)
    p["transposes"] = p["v_transpose"] and p["backward"]
    p["tmem_a"] = impl.tensor_memory_operands and is_blackwell(chip)
    p["exp2_emulated"] = 0.0
    if p["backward"] and isinstance(chip, GpuChip):
        p["schedule"] = p["schedule"].backward()
        p["staged"] = impl.staged_for(p["head_dim"], chip)


def _metadata(params, config) -> dict[str, Any]:
    return {"family": "attention", "params": dict(params), "config": dict(config),
            "generator": "accelsim.families.attention"}


def _kv_blocks_needed(p: dict[str, Any], q_start: np.ndarray, q_rows: np.ndarray, bn: int) -> np.ndarray:
    """K/V blocks a query block attends to: all of them, or up to its last row's diagonal."""
    total = math.ceil(p["seq_kv"] / bn)
    if not p["causal"]:
        return np.full(len(q_start), total)
    last_key = q_start + q_rows - 1 + (p["seq_kv"] - p["seq_q"])
    return np.minimum(last_key // bn + 1, total)


def _score_compute(rows: int, cols: int, bm: int, bn: int, d: int, dtype: str, diagonal: bool,
                   pairs: float | None = None, *, target: str = "gpu", d_v: int | None = None,
                   relayout: bool = False, mma_pair: int = 1, p_in_tensor_memory: bool = False,
                   emulated_exp2: float = 0.0, dropout: bool = False) -> list[Compute]:
    """One forward iteration over a [rows, cols] score block (matmuls executed as [bm, bn]).

    Counts what our kernels do: per score, scale, running max, subtract and row sum (4
    flops), one exp and a cast of P to the input dtype; per row, the two statistics
    updates and the alpha exp; per accumulator element the alpha rescale, plus on TPU
    the add of the P V product (a GPU's ``tl.dot(p, v, acc)`` adds inside the MMA).
    Masked blocks add one select per score on GPUs (the index compares are integer mask
    arithmetic) and the index arithmetic, compare and select (5) on TPUs. ``pairs`` is
    the number of attended scores (default: all); it sets the useful matmul flops.

    The vector and special-function work runs on the whole [bm, bn] block, as the matmuls
    do: rows past ``rows`` (a decode block's padding past its query heads, a sequence's
    last query block) and columns past ``cols`` (where the caller gives the block's real
    key count: decode's last block; prefill passes ``bn`` and counts a short last key
    block whole) are computed and masked or dropped; their work costs time and counts no
    flops. ``d_v``: the value head dim where it differs from the query/key one (MLA's latent
    512 against 576). ``mma_pair``: programs each MMA spans (Blackwell's 2-SM MMA: K and V, the
    B operands, split between their shared memories). ``p_in_tensor_memory``: the PV MMA reads P,
    its A operand, from tensor memory (:attr:`Impl.tensor_memory_operands`). ``emulated_exp2``: the
    share of the exps computed by a polynomial on the FP32 pipes instead of the SFUs
    (:data:`EX2_EMULATION_FLOPS` each). ``dropout``: each executed score's keep decision drawn and
    applied (:data:`DROPOUT_FLOPS_PER_SCORE`)."""
    d_v = d if d_v is None else d_v
    scores, executed = rows * cols, max(bm, rows) * max(bn, cols)
    pairs = scores if pairs is None else pairs
    accumulate = 2 if target == "tpu" else 1
    vector = FWD_VECTOR_FLOPS_PER_SCORE * scores + accumulate * rows * d_v + 4 * rows
    padding_rows = max(bm, rows) - rows
    padding = FWD_VECTOR_FLOPS_PER_SCORE * (executed - scores) + accumulate * padding_rows * d_v + 4 * padding_rows
    work = [
        Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bm, bn, d], pair=mma_pair),
        Compute(unit="special", flops=float(executed * (1.0 - emulated_exp2) + max(bm, rows)), dtype="fp32"),
        Compute(unit="vector", flops=float(vector), dtype="fp32"),
        Compute(unit="vector", flops=float(executed), dtype=dtype, useful=False),
        Compute(unit="matrix", flops=2.0 * pairs * d_v, dtype=dtype, shape=[bm, d_v, bn], pair=mma_pair,
                a_in_tensor_memory=p_in_tensor_memory),
    ]
    if padding:
        work.append(Compute(unit="vector", flops=float(padding), dtype="fp32", useful=False))
    if emulated_exp2:
        work.append(Compute(unit="vector", flops=float(EX2_EMULATION_FLOPS * emulated_exp2 * executed), dtype="fp32",
                            useful=False))
    if relayout and dtype == "fp8" and target == "gpu":
        work.append(Compute(unit="vector", flops=float(FP8_RELAYOUT_FLOPS_PER_SCORE * executed), dtype="fp32",
                            useful=False))
    if dropout:
        work.append(Compute(unit="vector", flops=float(DROPOUT_FLOPS_PER_SCORE * executed), dtype="fp32",
                            useful=False))
    if diagonal:
        masking = MASK_FLOPS_PER_SCORE[target] * executed
        work.append(Compute(unit="vector", flops=float(masking), dtype="fp32", useful=False))
    return work


def _cumulative_clip(v: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``sum(min(max(u, 0), cols) for u in 0..v)`` in closed form (0 for v < 0)."""
    v = np.asarray(v, dtype=np.int64)
    inside = np.clip(v, 0, cols)
    return np.where(v < 0, 0, inside * (inside + 1) // 2 + np.maximum(v - cols, 0) * cols)


def attended_pairs(p: dict[str, Any], q_start, rows, k_start, cols) -> np.ndarray:
    """(query, key) pairs a [rows, cols] block attends: all, or those on or below the
    causal diagonal (bottom-right aligned when seq_kv > seq_q)."""
    if not p["causal"]:
        return np.asarray(rows) * np.asarray(cols)
    first = np.asarray(q_start) + (p["seq_kv"] - p["seq_q"]) + 1 - np.asarray(k_start)
    return _cumulative_clip(first + np.asarray(rows) - 1, cols) - _cumulative_clip(first - 1, cols)


def _causal_layout(p: dict[str, Any], q_start: np.ndarray, rows: np.ndarray, bn: int):
    """Per query block: K/V blocks that every row attends in full, the partly masked
    blocks after them (diagonal, or the short last block), and the exact number of
    attended (query, key) pairs in those masked blocks."""
    skv = p["seq_kv"]
    n_kv = _kv_blocks_needed(p, q_start, rows, bn)
    if p["causal"]:
        unmasked = np.minimum((q_start + (skv - p["seq_q"]) + 1) // bn, n_kv)
    else:
        unmasked = np.full(len(q_start), skv // bn)
    pairs = attended_pairs(p, q_start, rows, 0, skv)
    masked = n_kv - unmasked
    masked_pairs = pairs - unmasked * bn * rows
    masked_keys = np.minimum(n_kv * bn, skv) - unmasked * bn
    return unmasked, masked, masked_pairs, masked_keys


def _build_gpu_fwd(p: dict[str, Any], params: dict[str, Any], config: dict[str, Any], buffers: int,
                   tiles: TileSchedule) -> KernelTrace:
    """``tiles``: how the implementation's tile scheduler runs the tiles (:attr:`Impl.forward_tiles`)."""
    order = tiles.order
    b, h, group, sq, d = p["batch"], p["heads"], p["group"], p["seq_q"], p["head_dim"]
    bm, bn = config["block_m"], config["block_n"]
    size = DTYPE_BYTES[p["dtype"]]
    out_size = 2 if p["dtype"] == "fp8" else size
    n_q = math.ceil(sq / bm)
    total = n_q * b * h
    check_programs(total)
    q_block, bh = order if order is not None else (np.arange(total) % n_q, np.arange(total) // n_q)
    head, batch = bh % h, bh // h
    q_start = q_block * bm
    q_rows = np.minimum(bm, sq - q_start)
    unmasked, masked, masked_pairs, masked_keys = _causal_layout(p, q_start, q_rows, bn)
    program_vars = {"batch": batch.tolist(), "head": head.tolist(), "kv_head": (head // group).tolist(),
                    "n_unmasked": unmasked.tolist()}
    # in the grid's order a program's q block is its first grid coordinate; a scheduler's
    # order walks the tiles as one list, each naming its q block
    q_var, grid = "p0", [n_q, h, b]
    if order is not None:
        q_var, grid = "q_block", [total]
        program_vars["q_block"] = q_block.tolist()
    for i in range(int(masked.max()) if masked.size else 0):
        program_vars[f"masked_kv{i}"] = (unmasked + i).tolist()
    # a 2-SM pair's programs each load their half of every K and V block (its own block identity)
    pair = config.get("pair", 1)
    part = ["kv_part"] if pair > 1 else []
    if pair > 1:
        program_vars["kv_part"] = (q_block % pair).tolist()
    # Fully attended blocks loop; each partly masked block is its own step, carrying
    # an equal share of the masked blocks' exact attended pairs and key bytes.
    templates, template_of, relayout = [], np.zeros(total, dtype=np.int64), p["fp8_relayout"]
    keys = np.stack([q_rows, masked, masked_pairs, masked_keys], axis=1)
    for key in np.unique(keys, axis=0):
        rows, n_masked, pairs, keys_left = (int(v) for v in key)
        chosen = np.all(keys == key, axis=1)
        template_of[chosen] = len(templates)
        steps = [
            {"transfers": [{"tensor": "Q", "block": ["batch", "head", q_var], "bytes": rows * d * size},
                           *_first_v_transpose(p, bn)]},
            {"repeat": "n_unmasked", "loop_var": "j",
             "transfers": _kv_transfers(["batch", "kv_head", "j", *part], bn * d * size // pair),
             "compute": [c.model_dump() for c in _score_compute(rows, bn, bm, bn, d, p["dtype"], False,
                                                                    relayout=relayout, mma_pair=pair,
                                                                    p_in_tensor_memory=p["tmem_a"],
                                                                    emulated_exp2=p["exp2_emulated"],
                                                                    dropout=p["dropout"])]},
        ]
        for i in range(n_masked):
            share_pairs, share_keys = pairs / n_masked, keys_left / n_masked
            steps.append({
                "transfers": _kv_transfers(["batch", "kv_head", f"masked_kv{i}", *part],
                                           round(share_keys * d * size / pair)),
                "compute": [c.model_dump() for c in _masked_compute(rows, share_pairs, bm, bn, d, p["dtype"],
                                                                    relayout=relayout, mma_pair=pair,
                                                                    p_in_tensor_memory=p["tmem_a"],
                                                                    emulated_exp2=p["exp2_emulated"],
                                                                    dropout=p["dropout"])],
            })
        steps.append({"transfers": [
            {"tensor": "O", "block": ["batch", "head", q_var], "bytes": rows * d * out_size, "direction": "write"},
            {"tensor": "LSE", "block": ["batch", "head", q_var], "bytes": rows * STAT_BYTES, "direction": "write"},
        ], "compute": [{"unit": "vector", "flops": float(rows * d), "dtype": "fp32"}]})
        templates.append({"name": f"t{len(templates)}", "steps": steps})
    transposed = {"sVt": {"shape": [bn, d], "dtype": p["dtype"]}} if p["v_transpose"] else None
    return _gpu_trace(p, params, config, "fwd", grid, templates, template_of, program_vars, buffers=buffers,
                      tiles=tiles, extra_tensors=transposed)


def _first_v_transpose(p: dict[str, Any], bn: int) -> list[dict]:
    """A tile's first V block transposed in shared memory, on its chain (:data:`V_TRANSPOSE_PASSES`)."""
    if not p["v_transpose"]:
        return []
    return [{"tensor": "sVt", "bytes": bn * p["head_dim"] * DTYPE_BYTES[p["dtype"]], "direction": direction,
             "level": "local"} for direction in V_TRANSPOSE_PASSES]


def _masked_compute(rows: int, pairs: float, bm: int, bn: int, d: int, dtype: str, *, target: str = "gpu",
                    relayout: bool = False, mma_pair: int = 1, p_in_tensor_memory: bool = False,
                    emulated_exp2: float = 0.0, dropout: bool = False) -> list[Compute]:
    """A partly masked block: the units execute the whole [rows, bn] block; useful flops
    are the attended pairs'."""
    return _score_compute(rows, bn, bm, bn, d, dtype, True, pairs, target=target, relayout=relayout,
                          mma_pair=mma_pair, p_in_tensor_memory=p_in_tensor_memory, emulated_exp2=emulated_exp2,
                          dropout=dropout)


def _kernel_name(p: dict[str, Any], direction: str) -> str:
    return (f"attention_{direction}_{p['dtype']}_b{p['batch']}_h{p['heads']}_s{p['seq_q']}_d{p['head_dim']}"
            + ("_causal" if p["causal"] else ""))


def _gpu_trace(p, params, config, direction: str, grid, templates, template_of, program_vars, *, buffers: int,
               kernel_starts: list[int] | None = None, resources_by_kernel: list[dict | None] | None = None,
               extra_tensors: dict | None = None, tiles: TileSchedule | None = None) -> KernelTrace:
    """A Triton-style attention trace: the resources come from the config (``buffers`` of
    each staged tile: :meth:`Chip.staged_buffers`), or with several kernels from
    ``resources_by_kernel``, one per kernel (None: the config's). ``tiles``: the persistent
    CTAs that walk the programs, if any (:class:`TileSchedule`)."""
    ours = {"local_memory_bytes": _local_bytes(p, config, "gpu", buffers), "warps": config["num_warps"],
            "registers_per_thread": _registers(p, config)}
    templates = _scheduled(templates, p.get("schedule"))
    each = [ours if r is None else r for r in resources_by_kernel or [None]]
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": _kernel_name(p, direction),
            "grid": grid,
            "resources": each[0],
            "pipeline_depth": config["num_stages"],
            "kernel_starts": kernel_starts,
            **({"kernel_resources": each[1:]} if resources_by_kernel else {}),
            **_execution(p, config, tiles),
        },
        "tensors": {**_tensors(p), **(extra_tensors or {})},
        "templates": templates,
        "program_template": template_of.tolist() if len(templates) > 1 else None,
        "program_vars": program_vars,
        "metadata": _metadata(params, config),
    })


def _kv_transfers(block: list, nbytes: int) -> list[dict]:
    return [{"tensor": "K", "block": block, "bytes": int(nbytes)}, {"tensor": "V", "block": block, "bytes": int(nbytes)}]


def _build_gpu_decode(p: dict[str, Any], params: dict[str, Any], config: dict[str, Any], buffers: int) -> KernelTrace:
    """Flash-decoding: query heads of a KV group packed as rows; KV split over programs."""
    b, hk, group, sq, skv, d = p["batch"], p["kv_heads"], p["group"], p["seq_q"], p["seq_kv"], p["head_dim"]
    bm, bn, split = config["block_m"], config["block_n"], config["split_kv"]
    size = DTYPE_BYTES[p["dtype"]]
    rows = group * sq
    executed_m = max(bm, math.ceil(rows / 16) * 16)
    chunk, _ = kv_split(skv, split, bn)  # whole blocks per split: no block shared by two splits
    total = split * b * hk
    check_programs(total + (b * hk * group if split > 1 else 0))  # with the combine kernel's programs
    part = np.arange(total) % split
    bh = np.arange(total) // split
    start = part * chunk
    length = np.clip(skv - start, 0, chunk)
    full = length // bn
    tail = length % bn
    templates, template_of, relayout = [], np.zeros(total, dtype=np.int64), p["fp8_relayout"]
    for t in np.unique(tail):
        chosen = tail == t
        template_of[chosen] = len(templates)
        steps = [
            {"transfers": [{"tensor": "Q", "block": ["batch", "kv_head", 0], "bytes": rows * d * size}]},
            {"repeat": "n_full", "loop_var": "j", "transfers": _kv_transfers(["batch", "kv_head", "first_kv+j"], bn * d * size),
             "compute": [c.model_dump() for c in _score_compute(rows, bn, executed_m, bn, d, p["dtype"], False,
                                                                    relayout=relayout)]},
        ]
        if t:
            steps.append({"transfers": _kv_transfers(["batch", "kv_head", "first_kv+n_full"], int(t) * d * size),
                          "compute": [c.model_dump() for c in _score_compute(rows, int(t), executed_m, bn, d, p["dtype"], False,
                                                                    relayout=relayout)]})
        # Split: the partial output and LSE in fp32 (O_partial), which the combine kernel
        # reads. Not split: the output and its LSE.
        if split > 1:
            steps.append({"transfers": [{"tensor": "O_partial", "block": ["batch", "kv_head", "part"],
                                         "bytes": rows * (d + 1) * 4, "direction": "write"}],
                          "compute": [{"unit": "vector", "flops": float(rows * d), "dtype": "fp32"}]})
        else:
            steps.append({"transfers": [
                {"tensor": "O", "block": ["batch", "kv_head"], "bytes": rows * d * _out_bytes(p), "direction": "write"},
                {"tensor": "LSE", "block": ["batch", "kv_head"], "bytes": rows * STAT_BYTES, "direction": "write"},
            ], "compute": [{"unit": "vector", "flops": float(rows * d), "dtype": "fp32"}]})
        templates.append({"name": f"t{len(templates)}", "steps": steps})
    program_vars = {"batch": (bh // hk).tolist(), "kv_head": (bh % hk).tolist(), "part": part.tolist(),
                    "n_full": full.tolist(), "first_kv": (start // bn).tolist()}
    kernel: dict[str, Any] = {"grid": [split, hk, b]}
    if split > 1:
        # The combine kernel (flash-decoding's second launch): one program per query head
        # (FlashAttention, FlashInfer and TileOPs launch at least one per head) reads its rows
        # of every split's partial output and LSE, rescales and sums them, and writes its
        # output and LSE; it starts once every split has finished.
        heads = b * hk * group
        mine = sq * (d + 1) * 4  # one head's rows of one split's partial, fp32
        template_of = np.concatenate([template_of, np.full(heads, len(templates))])
        templates.append({"name": "combine", "steps": [
            {"transfers": [{"tensor": "O_partial", "block": ["batch", "kv_head", j, "in_group"], "bytes": mine,
                            "direction": "read"} for j in range(split)],  # loaded at once
             "compute": [{"unit": "special", "flops": float(split * sq), "dtype": "fp32"},
                         {"unit": "vector", "flops": float(split * (2 * sq * d + 2 * sq)), "dtype": "fp32"}]},
            {"transfers": [
                {"tensor": "O", "block": ["batch", "head"], "bytes": sq * d * _out_bytes(p), "direction": "write"},
                {"tensor": "LSE", "block": ["batch", "head"], "bytes": sq * STAT_BYTES, "direction": "write"},
            ], "compute": [{"unit": "vector", "flops": float(sq * d), "dtype": "fp32"}]},
        ]})
        head = np.arange(heads)  # launch order: batch, then query head (KV head x its group)
        combine_vars = {"batch": head // (hk * group), "kv_head": head % (hk * group) // group,
                        "in_group": head % group, "head": head % (hk * group)}
        combine_vars = {name: values.tolist() for name, values in combine_vars.items()}
        program_vars = {name: program_vars.get(name, [0] * total) + combine_vars.get(name, [0] * heads)
                        for name in program_vars | combine_vars}
        kernel = {"grid": [total + heads], "kernel_starts": [total],
                  "kernel_resources": [{"warps": COMBINE_WARPS, "local_memory_bytes": _combine_local_bytes(split, sq)}]}
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": f"attention_decode_{p['dtype']}_b{b}_h{p['heads']}_kv{hk}_s{skv}_d{d}",
            **kernel,
            "resources": {"local_memory_bytes": int((executed_m * d + buffers * 2 * bn * d) * size),
                          "warps": config["num_warps"], "registers_per_thread": _registers(p, config)},
            "pipeline_depth": config["num_stages"],
            **_execution(p, config),
        },
        "tensors": {**_tensors(p), **({"O_partial": {"shape": [b, hk, split, group, sq * (d + 1)], "dtype": "fp32"}}
                                       if split > 1 else {})},
        "templates": _scheduled(templates, p.get("schedule")),
        "program_template": template_of.tolist() if len(templates) > 1 else None,
        "program_vars": program_vars,
        "metadata": _metadata(params, config),
    })


def _execution(p: dict[str, Any], config: dict[str, Any], tiles: TileSchedule | None = None) -> dict[str, dict]:
    """The kernel's ``execution`` where the implementation is warp-specialized (its consumer
    warpgroups, how their chains overlap, TMA loads), with its persistent CTAs where it has them."""
    schedule = p.get("schedule")
    execution = schedule.execution(config["num_warps"]) if schedule else None
    if execution and tiles and tiles.persistent_ctas:
        execution = {**execution, "persistent_ctas": tiles.persistent_ctas, "epilogue": tiles.epilogue,
                     "next_loads": tiles.next_loads}
    return {"execution": execution} if execution else {}


def _scheduled(templates: list[dict], schedule: Schedule | None) -> list[dict]:
    """The templates as ``schedule`` runs them: steps with MMAs marked unchained where the
    MMAs are issued asynchronously, vector (FP32) work marked overlapped where it runs in
    the MMAs' shadow (the exps, ``special``, stay on the chain)."""
    if schedule is None or (schedule.chained and not schedule.overlapped_vector):
        return templates

    def step(s: dict) -> dict:
        work = [c if isinstance(c, dict) else c.model_dump() for c in s.get("compute", [])]
        if not any(c["unit"] == "matrix" for c in work):
            return s
        if schedule.overlapped_vector:
            work = [{**c, "overlapped": True} if c["unit"] == "vector" else c for c in work]
        return {**s, "compute": work, **({} if schedule.chained else {"chained": False})}

    return [{**t, "steps": [step(s) for s in t["steps"]]} for t in templates]


COMBINE_WARPS = 4
"""Warps of a split decode's combine program (FlashAttention-2's ``flash_fwd_splitkv_combine_kernel``
runs 128 threads), which holds its splits' LSEs in shared memory."""


def _combine_local_bytes(split: int, seq_q: int) -> int:
    """Shared memory of a combine program: every split's log-sum-exps of its rows, fp32."""
    return split * (seq_q + 1) * 4


def _build_gpu_bwd(p: dict[str, Any], params: dict[str, Any], config: dict[str, Any], buffers: int) -> KernelTrace:
    b, h, group, sq, skv, d = p["batch"], p["heads"], p["group"], p["seq_q"], p["seq_kv"], p["head_dim"]
    bm, bn = config["block_m"], config["block_n"]
    size = DTYPE_BYTES[p["dtype"]]
    n_kv, n_q = math.ceil(skv / bn), math.ceil(sq / bm)
    total = n_kv * b * h
    check_programs(total)
    kv_block = np.arange(total) % n_kv
    bh = np.arange(total) // n_kv
    head, batch = bh % h, bh // h
    kv_rows = np.minimum(bn, skv - kv_block * bn)
    if p["causal"]:
        first_q = np.maximum(kv_block * bn - (skv - sq), 0) // bm
    else:
        first_q = np.zeros(total, dtype=np.int64)
    # Causal: the first q blocks of the walk straddle the diagonal (partly masked); the
    # rest attend every key of the block. Each masked block is its own step carrying an
    # equal share of their exact attended pairs (the useful flops; the units execute the
    # whole block either way).
    if p["causal"]:
        last_key = kv_block * bn + kv_rows - 1 - (skv - sq)
        first_full = np.clip(-(-last_key // bm), first_q, n_q)
    else:
        first_full = first_q
    n_masked = first_full - first_q
    masked_rows = np.minimum(first_full * bm, sq) - first_q * bm
    masked_pairs = attended_pairs(p, first_q * bm, masked_rows, kv_block * bn, kv_rows)

    # A last query block shorter than block_m moves only its rows (the units still
    # execute the whole tile): its own step, after the loop or as the last masked block.
    last_rows = sq - (n_q - 1) * bm
    tail = np.zeros(total, dtype=np.int64)  # 0: every q block whole; 1: last of the loop; 2: last masked
    if last_rows < bm:
        tail = np.where(first_full < n_q, 1, np.where(n_masked > 0, 2, 0))

    staged = _staged_tensors(p, bm, bn)
    transposed = _bwd_transposed_tensors(p, bm, bn)

    def iteration(q_block: str | int, pairs: float, q_rows: int = bm) -> dict:
        scores = bm * bn
        return {"transfers": [
            {"tensor": "Q", "block": ["batch", "head", q_block], "bytes": q_rows * d * size},
            {"tensor": "dO", "block": ["batch", "head", q_block], "bytes": q_rows * d * _out_bytes(p)},
            {"tensor": "LSE", "block": ["batch", "head", q_block], "bytes": q_rows * STAT_BYTES},
            {"tensor": "Delta", "block": ["batch", "head", q_block], "bytes": q_rows * STAT_BYTES},
            {"tensor": "dQ", "block": ["batch", "head", q_block], "bytes": q_rows * d * 4, "direction": "write"},
            *({"tensor": name, "bytes": _tensor_bytes(t), "direction": "write", "level": "local"}
              for name, t in staged.items()),
            *_transposes(transposed, ("sQt", "sdOt")),
        ], "compute": [
            {"unit": "matrix", "flops": 2.0 * pairs * d, "dtype": p["dtype"], "shape": [bm, bn, d]},  # S = Q K^T
            {"unit": "special", "flops": float(scores), "dtype": "fp32"},
            {"unit": "vector", "flops": float(BWD_VECTOR_FLOPS_PER_SCORE * scores), "dtype": "fp32"},
            {"unit": "vector", "flops": float(2 * scores), "dtype": p["dtype"], "useful": False},  # P, dS casts
            {"unit": "matrix", "flops": 2.0 * pairs * d, "dtype": p["dtype"], "shape": [bn, d, bm],
             "a_in_tensor_memory": p["tmem_a"]},  # dV = P^T dO
            {"unit": "matrix", "flops": 2.0 * pairs * d, "dtype": p["dtype"], "shape": [bm, bn, d]},  # dP
            {"unit": "matrix", "flops": 2.0 * pairs * d, "dtype": p["dtype"], "shape": [bn, d, bm],
             "a_in_tensor_memory": p["tmem_a"]},  # dK = dS^T Q
            {"unit": "matrix", "flops": 2.0 * pairs * d, "dtype": p["dtype"], "shape": [bm, d, bn]},  # dQ
            *([{"unit": "vector", "flops": float(DROPOUT_FLOPS_PER_SCORE * scores), "dtype": "fp32",
                "useful": False}] if p["dropout"] else []),  # the forward's keep masks drawn again
        ]}

    templates, template_of = [], np.zeros(total, dtype=np.int64)
    keys = np.stack([kv_rows, n_masked, masked_pairs, tail], axis=1)
    for key in np.unique(keys, axis=0):
        rows, masked, pairs, tail_kind = (int(v) for v in key)
        template_of[np.all(keys == key, axis=1)] = len(templates)
        steps = [{"transfers": [*_kv_transfers(["batch", "kv_head", "kv_block"], rows * d * size),
                                *_transposes(transposed, ("sKt",))]}]
        steps += [iteration(f"first_q+{m}", pairs / masked, last_rows if tail_kind == 2 and m == masked - 1 else bm)
                  for m in range(masked)]
        steps.append({"repeat": "n_full", "loop_var": "i", **iteration("first_full+i", bm * rows)})
        if tail_kind == 1:
            steps.append(iteration(n_q - 1, last_rows * rows, last_rows))
        steps.append({"transfers": [
            {"tensor": "dK", "block": ["batch", "head", "kv_block"], "bytes": rows * d * _out_bytes(p), "direction": "write"},
            {"tensor": "dV", "block": ["batch", "head", "kv_block"], "bytes": rows * d * _out_bytes(p), "direction": "write"},
        ]})
        templates.append({"name": f"t{len(templates)}", "steps": steps})
    program_vars = {"batch": batch.tolist(), "head": head.tolist(), "kv_head": (head // group).tolist(),
                    "kv_block": kv_block.tolist(), "n_full": (n_q - first_full - (tail == 1)).tolist(),
                    "first_q": first_q.tolist(),
                    "first_full": first_full.tolist()}
    local = {**staged, **transposed}
    if p["pass"] == "bwd-kernel":
        return _gpu_trace(p, params, config, "bwd", [n_kv, h, b], templates, template_of, program_vars,
                          buffers=buffers, extra_tensors=local)
    return _whole_gpu_backward(p, params, config, templates, template_of, program_vars, buffers, local)


STAGED_DTYPES = {"P": None, "dS": None, "dQ": "fp32"}
"""What a fused backward's MMA warps may store to shared memory each iteration for the next MMAs
(:attr:`~accelsim.families.attention_impls.base.Impl.backward_staged`): P and dS in the input
type ([q rows, keys]), dQ's fp32 partial ([q rows, head dim])."""


def _staged_tensors(p: dict[str, Any], bm: int, bn: int) -> dict[str, dict]:
    """The program's shared-memory buffers its warps store each iteration (``level: local``
    transfers: on the program's chain, :class:`~accelsim.engine.programs.ProgramCosts`'
    ``staged_bytes``), named ``s<name>``, one [rows, columns] block each."""
    dtype = "bf16" if p["dtype"] == "fp8" else p["dtype"]
    return {f"s{name}": {"shape": [bm, p["head_dim"] if name == "dQ" else bn], "dtype": STAGED_DTYPES[name] or dtype}
            for name in p.get("staged", ())}


def _bwd_transposed_tensors(p: dict[str, Any], bm: int, bn: int) -> dict[str, dict]:
    """An fp8 backward's operands transposed in shared memory (:attr:`Impl.fp8_v_transpose`): an
    8-bit ``wgmma`` reads both operands K-major only (PTX ISA, ``wgmma.mma_async``: the transpose
    immediates are for 16-bit types), and three of the backward's five products reduce over a
    dimension Q, dO and K are not stored along: dV = P^T dO and dK = dS^T Q over the query rows
    (dO's and Q's blocks, every iteration), dQ = dS K over the keys (the program's K block, once).
    S = Q K^T and dP = dO V^T reduce over the head dim, as stored."""
    if not p["transposes"]:
        return {}
    d, dtype = p["head_dim"], p["dtype"]
    return {"sQt": {"shape": [d, bm], "dtype": dtype}, "sdOt": {"shape": [d, bm], "dtype": dtype},
            "sKt": {"shape": [d, bn], "dtype": dtype}}


def _transposes(tensors: dict[str, dict], names: tuple[str, ...]) -> list[dict]:
    """Blocks transposed through shared memory on the program's chain, read then written back
    (:data:`V_TRANSPOSE_PASSES`)."""
    return [{"tensor": name, "bytes": _tensor_bytes(tensors[name]), "direction": direction, "level": "local"}
            for name in names if name in tensors for direction in V_TRANSPOSE_PASSES]


def _tensor_bytes(tensor: dict) -> int:
    return math.prod(tensor["shape"]) * DTYPE_BYTES[tensor["dtype"]]


ROWS_PER_ELEMENTWISE_PROGRAM = 128
"""Rows of [*, head_dim] per program of the backward's elementwise kernels (FlashAttention-2's
``flash_bwd_dot_do_o_kernel`` and ``flash_bwd_convert_dq_kernel`` take a 128-row block, as
the Triton tutorial's ``_attn_bwd_preprocess`` does with ``PRE_BLOCK = 128``)."""
ELEMENTWISE_WARPS = 4
"""Warps of a program of the backward's elementwise kernels (Triton's default ``num_warps``)."""


def _whole_gpu_backward(p, params, config, main_templates, main_of, main_vars, buffers: int,
                        staged: dict[str, dict]) -> KernelTrace:
    """A framework's backward call: a first kernel computes ``Delta = rowsum(dO * O)`` and
    clears the fp32 dQ, then the backward kernel, then a kernel casts dQ to the input type
    (what FlashAttention-2's ``_bwd_preprocess``, PyTorch's SDPA backward and our Triton
    ``attention_bwd`` run). Three kernels in one trace (``kernel_starts``)."""
    b, h, sq, d = p["batch"], p["heads"], p["seq_q"], p["head_dim"]
    size = DTYPE_BYTES[p["dtype"]]
    out_size = 2 if p["dtype"] == "fp8" else size
    rows_per = ROWS_PER_ELEMENTWISE_PROGRAM
    n_rows = math.ceil(sq / rows_per)
    side = n_rows * b * h
    block = np.arange(side) % n_rows
    bh = np.arange(side) // n_rows
    rows = np.minimum(rows_per, sq - block * rows_per)
    where = ["batch", "head", "row_block"]
    templates, pre_of, post_of = [], np.zeros(side, dtype=np.int64), np.zeros(side, dtype=np.int64)
    for r in np.unique(rows):
        r = int(r)
        pre_of[rows == r] = len(templates)
        templates.append({"name": f"delta{r}", "steps": [{"transfers": [
            {"tensor": "O", "block": where, "bytes": r * d * out_size},
            {"tensor": "dO", "block": where, "bytes": r * d * out_size},
            {"tensor": "Delta", "block": where, "bytes": r * STAT_BYTES, "direction": "write"},
            {"tensor": "dQ", "block": where, "bytes": r * d * 4, "direction": "write"},
        ], "compute": [{"unit": "vector", "flops": float(2 * r * d), "dtype": "fp32"}]}]})
        post_of[rows == r] = len(templates)
        templates.append({"name": f"cast{r}", "steps": [{"transfers": [
            {"tensor": "dQ", "block": where, "bytes": r * d * 4},
            {"tensor": "dQ_out", "block": where, "bytes": r * d * out_size, "direction": "write"},
        ], "compute": [{"unit": "vector", "flops": float(r * d), "dtype": "fp32", "useful": False}]}]})
    offset = len(templates)
    templates += [{**t, "name": f"main_{t['name']}"} for t in main_templates]
    template_of = np.concatenate([pre_of, np.asarray(main_of) + offset, post_of])
    main = len(main_of)
    names = set(main_vars) | {"row_block"}
    side_vars = {"batch": (bh // h).tolist(), "head": (bh % h).tolist(), "row_block": block.tolist()}
    program_vars = {
        name: side_vars.get(name, [0] * side) + list(main_vars.get(name, [0] * main)) + side_vars.get(name, [0] * side)
        for name in sorted(names)
    }
    elementwise = {"warps": ELEMENTWISE_WARPS}  # no shared memory: rows stream through registers
    return _gpu_trace(p, params, config, "bwd", [2 * side + main], templates, template_of, program_vars, buffers=buffers,
                      kernel_starts=[side, side + main], resources_by_kernel=[elementwise, None, elementwise],
                      extra_tensors={"dQ_out": {"shape": [b, h, sq, d], "dtype": _tensors(p)["O"]["dtype"]}, **staged})


def _build_tpu(p: dict[str, Any], params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    """Pallas flash attention; decode packs a KV group's query heads into the rows."""
    b, h, group, sq, skv, d = p["batch"], p["heads"], p["group"], p["seq_q"], p["seq_kv"], p["head_dim"]
    bm, bn = config["block_m"], config["block_n"]
    size = DTYPE_BYTES[p["dtype"]]
    packed = p["decode"]
    heads, q_len = (p["kv_heads"], sq * group) if packed else (h, sq)
    nq, nk = math.ceil(q_len / bm), math.ceil(skv / bn)
    grid = [b, heads, nq, nk]
    check_programs(math.prod(grid))
    bb, hh, i, j = np.indices(grid).reshape(4, -1)
    rows = np.minimum(bm, q_len - i * bm)
    kv_head = hh if packed else hh // group
    needed = _kv_blocks_needed(p, i * bm, rows, bn) if not packed else np.full(len(i), nk)
    active = j < needed
    j_eff = np.minimum(j, needed - 1)  # index map clamps: skipped blocks keep the last index
    cols = np.minimum(bn, skv - j_eff * bn)
    pairs = attended_pairs(p, i * bm, rows, j_eff * bn, cols) if not packed else rows * cols
    masked = active & (pairs < rows * cols)
    kv_bytes = cols * d * size
    operands = [
        Operand("Q", "read", (bb, hh, i), rows * d * size),
        Operand("K", "read", (bb, kv_head, j_eff), kv_bytes),
        Operand("V", "read", (bb, kv_head, j_eff), kv_bytes),
        Operand("O", "write", (bb, hh, i), rows * d * _out_bytes(p)),
        Operand("LSE", "write", (bb, hh, i), rows * STAT_BYTES),
    ]
    key = np.where(active, (rows * 4099 + cols) * 2 + masked + pairs.astype(float) / (rows * cols + 1), -1)

    def compute(selection: np.ndarray) -> list[Compute]:
        first = int(np.nonzero(selection)[0][0])
        if not active[first]:
            return []
        if masked[first]:
            return _masked_compute(int(rows[first]), float(pairs[first]), bm, bn, d, p["dtype"], target="tpu")
        return _score_compute(int(rows[first]), int(cols[first]), bm, bn, d, p["dtype"], False, target="tpu")

    return pallas_trace(
        name=_kernel_name(p, "fwd"),
        grid=grid,
        dimension_semantics=["parallel", "parallel", "parallel", "arbitrary"],
        operands=operands,
        compute=compute,
        compute_key=key,
        tensors=_tensors(p),
        local_memory_bytes=_local_bytes(p, config, "tpu"),
        buffer_count=config["num_stages"],
        metadata=_metadata(params, config),
    )


def _bwd_compute(kernel: str, rows: int, cols: int, pairs: float, bm: int, bn: int, d: int, dtype: str,
                 masked: bool) -> list[Compute]:
    """One [rows, cols] block pair of the TPU backward's ``dkv`` or ``dq`` kernel.

    Both recompute ``P = exp(S - lse)`` (scale, subtract: with ``dS = P * (dP - Delta) *
    scale`` 6 flops per score, as on GPUs, and one exp) and ``dP = dO V^T``; ``dkv`` adds
    dV += P^T dO and dK += dS^T Q (casting P and dS to the input type), ``dq`` adds dQ +=
    dS K (casting dS). The MXU's products are added into the fp32 accumulators on the
    VPU. In ``dq`` the recomputed S and dP are not useful flops (the FlashAttention
    convention counts five matmuls per pair)."""
    scores = rows * cols
    recomputed = kernel == "dkv"
    work = [
        Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bm, bn, d], useful=recomputed),  # S
        Compute(unit="special", flops=float(scores), dtype="fp32"),
        Compute(unit="vector", flops=float(BWD_VECTOR_FLOPS_PER_SCORE * scores), dtype="fp32"),
        Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bm, bn, d], useful=recomputed),  # dP
    ]
    if kernel == "dkv":
        work += [
            Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bn, d, bm]),  # dV
            Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bn, d, bm]),  # dK
            Compute(unit="vector", flops=float(2 * cols * d), dtype="fp32", useful=False),
            Compute(unit="vector", flops=float(2 * scores), dtype=dtype, useful=False),
        ]
    else:
        work += [
            Compute(unit="matrix", flops=2.0 * pairs * d, dtype=dtype, shape=[bm, d, bn]),  # dQ
            Compute(unit="vector", flops=float(rows * d), dtype="fp32", useful=False),
            Compute(unit="vector", flops=float(scores), dtype=dtype, useful=False),
        ]
    if masked:
        work.append(Compute(unit="vector", flops=float(MASK_FLOPS_PER_SCORE["tpu"] * scores), dtype="fp32",
                            useful=False))
    return work


def _build_tpu_bwd(p: dict[str, Any], params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    """Our Pallas backward: the ``dkv`` kernel then the ``dq`` kernel, per (batch, head)."""
    b, h, group, sq, skv, d = p["batch"], p["heads"], p["group"], p["seq_q"], p["seq_kv"], p["head_dim"]
    bm, bn = config["block_m"], config["block_n"]
    size = DTYPE_BYTES[p["dtype"]]
    out_size = 2 if p["dtype"] == "fp8" else size
    nq, nk = math.ceil(sq / bm), math.ceil(skv / bn)
    grid = [2, b, h, nq * nk]
    check_programs(math.prod(grid))
    kernel, bb, hh, t = np.indices(grid).reshape(4, -1)
    dkv = kernel == 0
    j = np.where(dkv, t // nq, t % nk)  # kv block (dkv's outer loop, dq's inner one)
    i = np.where(dkv, t % nq, t // nk)  # q block
    rows = np.minimum(bm, sq - i * bm)
    pairs = attended_pairs(p, i * bm, rows, j * bn, np.minimum(bn, skv - j * bn))
    active = pairs > 0
    if p["causal"]:
        first_q = np.maximum(j * bn - (skv - sq), 0) // bm
        last_kv = _kv_blocks_needed(p, i * bm, rows, bn) - 1
        i_eff = np.where(dkv, np.maximum(i, first_q), i)
        j_eff = np.where(dkv, j, np.minimum(j, last_kv))
    else:
        i_eff, j_eff = i, j
    rows_eff = np.minimum(bm, sq - i_eff * bm)
    cols_eff = np.minimum(bn, skv - j_eff * bn)
    cols = np.minimum(bn, skv - j * bn)
    masked = active & (pairs < rows * cols)
    kv_head = hh // group
    zero = np.zeros(len(t), dtype=np.int64)
    operands = [
        Operand("Q", "read", (bb, hh, i_eff), rows_eff * d * size),
        Operand("K", "read", (bb, kv_head, j_eff), cols_eff * d * size),
        Operand("V", "read", (bb, kv_head, j_eff), cols_eff * d * size),
        Operand("dO", "read", (bb, hh, i_eff), rows_eff * d * out_size),
        Operand("LSE", "read", (bb, hh, i_eff), rows_eff * STAT_BYTES),
        Operand("Delta", "read", (bb, hh, i_eff), rows_eff * STAT_BYTES),
        Operand("dK", "write", (bb, hh, np.where(dkv, j, zero)), np.where(dkv, cols * d * size, 0)),
        Operand("dV", "write", (bb, hh, np.where(dkv, j, zero)), np.where(dkv, cols * d * size, 0)),
        Operand("dQ", "write", (bb, hh, np.where(dkv, zero, i)), np.where(dkv, 0, rows * d * size)),
    ]
    starts = (t == 0) & (bb == 0) & (hh == 0)
    key = np.where(active, ((rows * 4099 + cols) * 2 + masked) * 2 + kernel + pairs.astype(float) / (rows * cols + 1),
                   -1 - kernel)

    def compute(selection: np.ndarray) -> list[Compute]:
        first = int(np.nonzero(selection)[0][0])
        if not active[first]:
            return []
        return _bwd_compute("dkv" if dkv[first] else "dq", int(rows[first]), int(cols[first]), float(pairs[first]),
                            bm, bn, d, p["dtype"], bool(masked[first]))

    tensors = _tensors(p)
    tensors["dQ"] = {"shape": [b, h, sq, d], "dtype": p["dtype"]}
    tensors["dK"]["dtype"] = tensors["dV"]["dtype"] = p["dtype"]
    return pallas_trace(
        name=_kernel_name(p, "bwd"),
        grid=grid,
        dimension_semantics=["arbitrary", "parallel", "parallel", "arbitrary"],
        operands=operands,
        compute=compute,
        compute_key=key,
        tensors=tensors,
        local_memory_bytes=_local_bytes(p, config, "tpu"),
        buffer_count=config["num_stages"],
        metadata=_metadata(params, config),
        kernel_starts=starts,
    )


def _round8(x: int) -> int:
    return max(8, math.ceil(x / 8) * 8)


FAMILY = Family(
    name="attention",
    description="FlashAttention-style fused attention (fwd/bwd, GQA, causal, decode)",
    params=PARAMS,
    config_params=CONFIG,
    default_config=default_config,
    config_space=config_space,
    build=build,
    check=check,
    powers_of_two_on_gpu=("block_m", "block_n", "num_warps"),
    compiled_by_triton=lambda params, chip: attention_impls.resolve(
        params.get("impl", attention_impls.DEFAULT), chip).name == "triton",
    gpu_only=("num_warps",),
)
