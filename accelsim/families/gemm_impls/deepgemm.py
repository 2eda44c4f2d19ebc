"""``impl=deepgemm``: DeepSeek's DeepGEMM fp8 GEMMs with fine-grained scaling on Hopper
(github.com/deepseek-ai/DeepGEMM, read at 327ec92f, 2025-04-09: ``deep_gemm/jit_kernels/
gemm.py`` and ``m_grouped_gemm.py`` for the config heuristic, ``include/deep_gemm/fp8_gemm.cuh``
for the kernel).

What is modelled:

- **The library's own config choice** (:func:`deepgemm_config`, its ``get_best_configs``):
  ``block_m`` from 64, 128, 256 (grouped contiguous: 128, the group alignment), ``block_n``
  from 16 to 128 in steps of 8 plus 144 and 160, whichever needs the fewest waves of output
  tiles over the SMs and then fills the last wave best; ``block_k`` 128; the most stages
  (8 down to 3) that fit 232,448 bytes of shared memory; a 2-CTA cluster multicasting A or B
  when ``M >= 512`` and the shape divides; and as many persistent CTAs as the waves need.
  DeepGEMM picks; there is nothing to autotune, so ``config=auto`` runs this config.
- **Warp specialization**: one producer warpgroup issues TMA loads (40 registers after
  ``setmaxnreg``), one consumer warpgroup per 64 rows of the tile, at most two (232
  registers); each consumer is its own instruction stream.
- **Block-scaled accumulation with promotion**: per 128-deep k-block each consumer runs its
  wgmma chain (m64nNk32, fp8), waits for it, then adds the partial sums into fp32
  accumulators on the CUDA cores, scaled by the A (1x128) and B (128x128) scales: one FFMA
  per accumulator element per k-block (``useful: false`` vector work). With two consumers one
  promotes while the other's MMAs run; with one (``block_m = 64``) the tensor cores wait.
  Each k-block also loads the tile's A scales (``block_m`` fp32).
- **Persistent work units**: the units after a CTA's first find their loads prefetched; the
  epilogue (bf16 tile to shared memory, then a TMA store) is exposed: both consumers drain.
- **Grouped GEMMs**: contiguous (groups' rows concatenated, ``block_m`` 128) and masked (every
  row valid, as DeepGEMM's benchmark times it) run as ``groups`` GEMMs of ``M / groups`` rows
  with their own B, walked one after another by the persistent CTAs.

Left out: the B scales (``ceil(K / 128)`` floats per tile, read once), the scheduler's own tile
order (output tiles go in the family's group-M order, 8 rows), which two CTAs of a cluster
share a multicast tile (only the L2's demand is traced), the FFMA interleaving of its SASS post-pass, and masked rows (every row valid).
With fewer persistent CTAs than SMs the engine still spreads the units over every SM: the
waves are the same (DeepGEMM sizes the CTAs to the waves), the per-SM port and shared memory
less loaded.
"""

from __future__ import annotations

import math

from accelsim.arch.model import Chip
from accelsim.errors import InputError
from accelsim.families import gemm
from accelsim.families.gemm_impls.base import Config, GemmImpl, Params, warp_specialized, with_execution
from accelsim.trace.kernel import Compute, Execution, KernelTrace, Step, Template, Transfer

BLOCK_K = 128
"""DeepGEMM's k-block: the 1x128 and 128x128 scaling granule."""
SHARED_MEMORY_LIMIT_BYTES = 232448
"""``sm90_capacity`` in ``get_best_configs``: the most shared memory one CTA may use on sm_90."""
STAGE_CHOICES = (8, 7, 6, 5, 4, 3)
BLOCK_NS = tuple(range(16, 129, 8)) + (144, 160)
CONTIGUOUS_ALIGNMENT = 128
"""``get_m_alignment_for_contiguous_layout``: each group's rows start at a multiple of 128."""
SCALE_BYTES = 4
TMA_REGISTERS = 40
MATH_REGISTERS = 232
"""``warpgroup_reg_dealloc<40>`` / ``warpgroup_reg_alloc<232>`` in ``fp8_gemm.cuh``."""
WARPGROUP_THREADS = 128


def consumers(block_m: int) -> int:
    """Math warpgroups: one for a 64-row tile, else two (``get_num_math_warpgroups``)."""
    return 1 if block_m == 64 else 2


def shared_memory_bytes(stages: int, k: int, block_m: int, block_n: int) -> int:
    """``get_smem_size``: the output tile (bf16, rows padded against bank conflicts), the
    staged A, A-scale and B blocks, the B scales, and the barriers."""
    padding = _output_padding(block_n)
    scales_b = math.ceil(k / BLOCK_K) * SCALE_BYTES
    scales_b = math.ceil(scales_b * (1 if BLOCK_K % block_n == 0 else 2) / 8) * 8
    per_stage = block_m * BLOCK_K + block_m * SCALE_BYTES + block_n * BLOCK_K
    return block_m * (block_n + padding) * 2 + stages * per_stage + scales_b + stages * 16


def _output_padding(block_n: int) -> int:
    """``get_block_n_padding_for_smem_d``: bf16 elements that keep the output tile's rows off
    each other's shared-memory banks."""
    bank_stride = block_n * 2 // 4
    padding = (4 - bank_stride) % 8
    return padding * 4 // 2


def deepgemm_config(params: Params, chip: Chip) -> Config:
    """The config DeepGEMM's ``get_best_configs`` picks (module docstring)."""
    m, n, k, groups, _ = gemm._problem(params)
    contiguous = params["groups"] > 1 and m % CONTIGUOUS_ALIGNMENT == 0 and params.get("layout", "contiguous") != "masked"
    sms = chip.num_cores
    block_ms = (CONTIGUOUS_ALIGNMENT,) if contiguous else (64, 128, 256)
    # A contiguous layout is one GEMM of all rows (num_groups 1); a masked one is groups GEMMs.
    rows, count = (m * groups, 1) if contiguous else (m, groups)

    def waves(bm: int, bn: int) -> int:
        return math.ceil(math.ceil(rows / bm) * math.ceil(n / bn) * count / sms)

    def last_wave(bm: int, bn: int) -> int:
        return (math.ceil(rows / bm) * math.ceil(n / bn) * count) % sms or sms

    best = None
    for bm in block_ms:
        for bn in (bn for bn in BLOCK_NS if bm <= 128 or bn <= 128):
            if best is None or waves(bm, bn) < waves(*best):
                best = (bm, bn)
            elif waves(bm, bn) == waves(*best):
                util, best_util = last_wave(bm, bn), last_wave(*best)
                better = util > best_util or (util == best_util and (
                    (bm == best[0] and bn < best[1]) or (bn == best[1] and bm < best[0])
                    or (bm != best[0] and bn > best[1])))
                if better:
                    best = (bm, bn)
    bm, bn = best
    stage_choices = (4, 3) if 128 % bn and 128 // math.gcd(128, bn) <= 4 else STAGE_CHOICES
    stages = next((s for s in stage_choices if shared_memory_bytes(s, k, bm, bn) <= SHARED_MEMORY_LIMIT_BYTES), None)
    if stages is None:
        raise InputError(f"no DeepGEMM stage count fits {bm}x{bn} tiles", field="params.K")
    cluster, operand = 1, "B"
    multicast_b_legal = rows % (bm * 2) == 0 and sms % 2 == 0 and params["groups"] == 1
    multicast_a_legal = n % (bn * 2) == 0 and sms % 2 == 0
    for candidate in (("A", "B") if bm > bn else ("B", "A")):
        operand = candidate
        if rows >= 512 and (multicast_a_legal if candidate == "A" else multicast_b_legal):
            cluster = 2
            break
    tiles = math.ceil(rows / bm) * math.ceil(n / bn) * count
    ctas = math.ceil(tiles / waves(bm, bn))
    ctas = math.ceil(ctas / 2) * 2 if cluster == 2 else ctas
    return {"block_m": bm, "block_n": bn, "block_k": BLOCK_K, "group_m": 8, "split_k": 1, "num_stages": stages,
            "num_warps": 4 * (consumers(bm) + 1), "cluster": cluster, "persistent_ctas": ctas} | (
        {"multicast": operand} if cluster > 1 else {})


def check(params: Params, config: Config, chip: Chip) -> None:
    if not warp_specialized(chip):
        raise InputError(f"DeepGEMM runs on Hopper (wgmma fed by TMA); {chip.name} has no asynchronous MMA with "
                         f"TMA loads (matrix_unit.asynchronous, local_memory.bulk_copy_latency)",
                         field="params.impl")
    if params["dtype"] != "fp8":
        raise InputError(f"DeepGEMM's GEMMs take fp8 inputs, got dtype={params['dtype']}", 
                         field="params.dtype")
    if gemm.output_dtype(params) != "bf16":
        raise InputError("DeepGEMM's fp8 GEMMs write bf16 (gemm_fp8_fp8_bf16_nt)", 
                         field="params.out_dtype")
    if params["K"] % BLOCK_K or params["N"] % 64:
        raise InputError("DeepGEMM needs K a multiple of 128 and N a multiple of 64", field="params.K")
    if config.get("block_k") != BLOCK_K:
        raise InputError(f"DeepGEMM's k-block is {BLOCK_K}", field="params.block_k")
    gemm.check(params, config, chip)


def build(params: Params, config: Config, chip: Chip) -> KernelTrace:
    m, n, k, groups, _ = gemm._problem(params)
    base = gemm._build_gpu(params, config, buffers=chip.staged_buffers(config["num_stages"]))
    bm, bn = config["block_m"], config["block_n"]
    workers = consumers(bm)
    threads = (workers + 1) * WARPGROUP_THREADS
    registers = math.ceil((workers * MATH_REGISTERS + TMA_REGISTERS) * WARPGROUP_THREADS / threads)
    data = base.model_dump()
    data["templates"] = [_promoted(template, bm).model_dump() for template in base.templates]
    data["tensors"]["SA"] = {"shape": [groups, m, math.ceil(k / BLOCK_K)], "dtype": "fp32"}
    data["kernel"]["resources"].update(local_memory_bytes=shared_memory_bytes(config["num_stages"], k, bm, bn),
                                       warps=threads // 32, registers_per_thread=registers)
    data["metadata"]["generator"] = __name__
    trace = KernelTrace.model_validate(data)
    ctas = config.get("persistent_ctas") or chip.num_cores
    return with_execution(trace, Execution(loads="tma", consumers=workers, persistent_ctas=ctas,
                                           epilogue="exposed"))


def _promoted(template: Template, block_m: int) -> Template:
    """Each k-block step with the consumers' promotion (one FFMA per accumulator element on
    the CUDA cores) and the tile's A scales."""
    steps = []
    for step in template.steps:
        mma = next((c for c in step.compute if c.unit == "matrix"), None)
        if mma is None:
            steps.append(step)
            continue
        rows, cols = mma.shape[0], mma.shape[1]
        a_read = next((t for t in step.transfers if t.tensor == "A"), None)
        scales = [] if a_read is None else [
            Transfer(tensor="SA", block=a_read.block, bytes=block_m * SCALE_BYTES)]
        promotion = Compute(unit="vector", flops=2.0 * rows * cols, dtype="fp32", useful=False)
        steps.append(step.model_copy(update={"transfers": [*step.transfers, *scales],
                                             "compute": [*step.compute, promotion]}))
    return template.model_copy(update={"steps": steps})


IMPL = GemmImpl(
    name="deepgemm",
    description="DeepGEMM fp8 with 1x128 / 128x128 block scaling (Hopper; normal, grouped contiguous and masked)",
    default_config=deepgemm_config,
    config_space=lambda params, chip: [deepgemm_config(params, chip)],
    build=build,
    check=check,
)
