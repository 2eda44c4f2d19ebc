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
else ``HEAD_DIM_MINOR``, the head dimension last). Which blocks run is not in the text
XLA prints, so **every block is counted** (dense attention: for a causal mask at 512-wide
blocks over 2048 tokens, 16 blocks where the kernel runs 10); the importer counts each call
as ``splash_attention:PHASE``. The kernel skips a block whose entry in its ``block_mask``
operand (scalar-prefetched, beside ``data_next``: ``s8[heads, q_blocks, kv_blocks]``;
``splash_attention_mask_info.py``) is 0. In MaxText's compiled steps that operand is sliced
from an ``s8`` constant, which ``compiled.as_text()`` elides as ``constant({...})``, and its
other operands do not name the mask: a ``q_sequence`` operand (MaxText's calls have one)
says the mask is computed from positions (a ``_ComputableMask``: causal, local, chunked or
full, its function compiled into the kernel body), not which. A compile that printed large
constants would give the block mask itself.
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


def splash_attention(name: str, target: str, frontend_attributes: str, operands: list[Shape],
                     output: Shape) -> SplashAttention | None:
    """The work of one splash attention kernel call; ``None`` when the call is not one or
    its Q and K do not have the shapes the kernel takes."""
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
    pairs = q.num_elements // head_dim * kv_len
    return SplashAttention(phase=phase, matrix_flops=2.0 * matmuls * pairs * head_dim, exponentials=float(pairs),
                           dtype=q.dtype)


def _array_count(shape: Shape) -> int:
    return sum(1 for s in shape.elements if not s.is_tuple and len(s.dims) >= 2) if shape.is_tuple else 1
