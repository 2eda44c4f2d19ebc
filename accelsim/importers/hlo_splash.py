"""JAX's splash attention kernels in TPU HLO, priced from their shapes.

Splash attention (``jax.experimental.pallas.ops.tpu.splash_attention``, MaxText's
``attention=flash`` on a TPU) is a Pallas kernel: a ``custom-call`` to ``tpu_custom_call``
whose body is serialized MLIR and which carries no cost estimate, so without this rule it
would be an unknown custom call with no flops. JAX names the call after the kernel
(``get_kernel_name``: ``splash_{mha,mqa}_{fwd,dq,dkv}[_segmented][_residuals|_no_residuals]``),
and its first three floating-point operands are Q, K and V. Per (query, key) pair and head
dimension each phase runs a fixed number of matmuls of two flops:

* ``fwd``: S = Q K^T and O = P V (2);
* ``dq``: S again, dP = dO V^T and dQ = dS K (3);
* ``dkv``: S, dP, dV = P^T dO and dK = dS^T Q (4), and dQ too when the backward is fused
  into one kernel (its output then holds three arrays: 5);

and each phase exponentiates every pair once (P = exp(S - logsumexp)). The kernel's
``kernel_metadata`` says the layout (``k_layout`` 2: ``SEQ_MINOR``, the key length last;
else ``HEAD_DIM_MINOR``, the head dimension last).

**Which blocks run.** The kernel's grid is (heads, query blocks, key blocks); its first
scalar-prefetched operands are ``data_next`` and ``block_mask``, integer arrays of one
shape ``[heads, q_blocks, kv_blocks]`` (``splash_attention_kernel.py``: ``pallas_call(...)(
mask_info.data_next, mask_info.block_mask, mask_info.mask_next, q, k, v, ...)``, the last
left out when the mask is computed; both or neither present). A grid step whose
``block_mask`` entry is 0 skips its matmuls (``is_nonzero = block_mask_ref[h, i, j] > 0``),
1 runs a partial block (computed whole, then masked), 2 a full one
(``splash_attention_mask_info.py``). So a call runs the nonzero share of its
``block_mask``: the importer follows that operand back to its constant
(:mod:`hlo_values`: MaxText's is a slice of an ``s8`` constant per head shard, passed
into the layer loop and prefetched) and scales the dense count by it (each call is counted as
``splash_attention:PHASE``). The share is that of the whole constant: the
mean over the shards the devices take (MaxText's causal shards are all alike: 10 of 16
blocks at 512-wide blocks over 2048 tokens). Where the constant is elided
(``compiled.as_text()`` prints ``s8[4,4,4] constant({...})``; MaxText's compiles keep the
values with ``HloPrintOptions.print_large_constants``, ``validation/maxtext/train_compile_text.py``)
or the operand is not a constant, **every block is counted** (dense attention), and the
call counted again as ``splash_attention_dense:PHASE``. The share assumes the grid is not shrunk
(``data_next``'s key axis as long as the key blocks, as in MaxText's programs: 4 blocks of
512 over 2048 tokens); where ``_process_mask`` shrinks it (``shrink_grid``, when every head
shard has one mask) the share of the narrower grid overstates the blocks run, so the count
lies between the blocks run and every block. The operands' bytes are counted once, not per
block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelsim.importers.hlo_text import Shape

SPLASH_KERNEL = re.compile(r"splash_(?:mha|mqa)_(fwd|dq|dkv)(?![a-z])")
"""The kernel's name, as the call's instruction name starts (XLA appends ``.N`` and
suffixes of its passes)."""
MATMULS_PER_PHASE = {"fwd": 2, "dq": 3, "dkv": 4}
_FLOATS = ("bf16", "f16", "f32")
_SEQ_MINOR_KEYS = re.compile(r'\\?"k_layout\\?"\s*:\s*2\b')


@dataclass(frozen=True, kw_only=True)
class SplashAttention:
    phase: str
    matrix_flops: float
    exponentials: float
    dtype: str
    """HLO element type of Q (the matmuls' operands)."""
    block_share: float | None = None
    """The nonzero share of the call's ``block_mask`` the counts are scaled by; ``None``:
    not known, every block counted."""


def splash_attention(name: str, target: str, frontend_attributes: str, operands: list[Shape],
                     output: Shape, block_mask: list[int] | None = None) -> SplashAttention | None:
    """The work of one splash attention kernel call, on the blocks its ``block_mask``
    (the values of operand :func:`block_mask_operand`; ``None``: unknown, every block) runs;
    ``None`` when the call is not one or its Q and K do not have the shapes the kernel takes."""
    match = SPLASH_KERNEL.match(name)
    if target != "tpu_custom_call" or match is None:
        return None
    arrays = [s for s in operands if not s.is_tuple and s.dtype in _FLOATS and len(s.dims) >= 2]
    if len(arrays) < 3:
        return None
    q, k = arrays[0], arrays[1]
    seq_minor = _SEQ_MINOR_KEYS.search(frontend_attributes) is not None
    kv_len = k.dims[-1] if seq_minor else k.dims[-2]
    head_dim = k.dims[-2] if seq_minor else k.dims[-1]
    if min(kv_len, head_dim) < 1 or q.num_elements % head_dim:
        return None
    phase = match.group(1)
    matmuls = MATMULS_PER_PHASE[phase] + int(phase == "dkv" and _array_count(output) >= 3)
    share = sum(1 for v in block_mask if v) / len(block_mask) if block_mask else None
    pairs = q.num_elements // head_dim * kv_len * (1.0 if share is None else share)
    return SplashAttention(phase=phase, matrix_flops=2.0 * matmuls * pairs * head_dim, exponentials=float(pairs),
                           dtype=q.dtype, block_share=share)


def block_mask_operand(name: str, target: str, operands: list[Shape]) -> int | None:
    """Which operand of a splash attention call is its ``block_mask`` (the second, after
    ``data_next``: both integer arrays of one 3-D shape), else ``None``."""
    if target != "tpu_custom_call" or SPLASH_KERNEL.match(name) is None or len(operands) < 2:
        return None
    data_next, block_mask = operands[0], operands[1]
    is_grid = all(not s.is_tuple and s.dtype[:1] in ("s", "u") and len(s.dims) == 3 for s in (data_next, block_mask))
    return 1 if is_grid and data_next.dims == block_mask.dims else None


def _array_count(shape: Shape) -> int:
    return sum(1 for s in shape.elements if not s.is_tuple and len(s.dims) >= 2) if shape.is_tuple else 1
