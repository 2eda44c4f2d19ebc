"""``fa2``: FlashAttention-2's CUDA kernels (Dao 2023, arXiv:2307.08691; flash-attention
``csrc/flash_attn/src/flash_fwd_launch_template.h`` and ``flash_bwd_launch_template.h``):
CUTLASS/CuTe kernels written for sm_80 that run unchanged on Hopper, with ``mma.sync`` and
``cp.async`` (no warpgroup MMAs, no TMA).

Models: the launch the library picks on an sm_80/sm_90 card for each head dim (forward
128x128 with 4 warps at d <= 64, 128x64 with 4 warps at d <= 128, 128x64 with 8 warps
above; backward 128x128 at d <= 64, 64x128 at d <= 128, 64x64 above, 8 warps), K and V
double-buffered, one program per (q block, batch, head); each warp's QK^T, softmax and PV
wait on each other (``matrix_unit.chained_efficiency``, whose published H100 value is the
FlashAttention-3 paper's "FlashAttention-2 achieving only 35% utilization on the H100").
That value is a throughput over the peak quoted at the config's ``clock``: with
``power.dvfs.boost`` on it is taken per cycle at the clock FA2's kernels ran at
(``chained_reference_clock``, the 1.98 GHz boost they keep below the TDP), so an unthrottled
FA2 kernel keeps its flops per second (docs/power.md, "The boost clock").
Backward (``csrc/flash_attn/src/flash_bwd_kernel.h``, ``compute_dq_dk_dv_1colblock``): per q block
the S and dP MMAs, P and dS on the CUDA cores, P and dS stored to shared memory (``sP``, ``sdS``)
and ``__syncthreads()`` before the dV, dK and dQ MMAs read them, dQ added to its fp32 buffer by
``atomicAdd`` from registers: all eight warps in step, one chain per program with those stores on
it (``Schedule.backward``; the attention family's default ``backward_staged``).
Decode: FA2's split-KV kernel and its combine (the family's flash-decoding trace).
Leaves out: the lower peak of ``mma.sync`` on Hopper as a quantity of its own (reported at
63-65% of the dense peak, github.com/waynehacking8/blackwell-tensorcore-kernels
``results/mma_ablation.md``, after Luo et al., arXiv:2501.12084; Luo et al.'s code,
github.com/HPMLL/NVIDIA-Hopper-Benchmark ``TensorCores/mma``, publishes no logs): it is
inside the chained efficiency, whose 0.37 per cycle is about 0.6 of that ceiling), dropout,
ALiBi, paged KV. On the FA3 paper's H100 records what is left is flat in the
sequence length and set by the head dim (d128 within 6%, d64 and d256 10-22% too fast):
one chained efficiency does not carry the per-score rate across head dims."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import triton
from accelsim.families.attention_impls.base import Impl, config, nvidia_only


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    d = p["head_dim"]
    if p["decode"]:
        return triton.decode_config(p, chip)
    if p["backward"]:
        return config(128, 128, 2, 8) if d <= 64 else config(64, 128, 2, 8) if d <= 128 else config(64, 64, 2, 8)
    if d <= 64:
        return config(128, 128, 2, 4)
    return config(128, 64, 2, 4 if d <= 128 else 8)


IMPL = Impl(
    name="fa2",
    summary="FlashAttention-2's CUDA kernel (mma.sync, sm_80 tiles; the default on Ampere)",
    unavailable=nvidia_only,
    default_config=default_config,
)
