"""cuDNN fused attention custom calls (``__cudnn$fmha*``), as the ``attention`` family.

XLA:GPU rewrites attention (``jax.nn.dot_product_attention`` with the cuDNN
implementation, or a matched softmax(Q K^T) V) into a custom call whose
``backend_config.cudnn_fmha_backend_config`` holds what the family needs:
``intermediate_tensor_shape`` is the logits' [batch, heads, seq_q, seq_kv] and
``mask_type`` says whether it is causal (``CAUSAL``, ``PADDING_CAUSAL``). The head
dimension and the KV heads follow from the element counts of Q (operand 0) and K
(operand 1); the pass from the target (``...Backward``). Layouts (BSHD, BHSD) do not
matter to the counts. Bias, dropout and padding masks are not modelled: such a call runs
as plain (or causal) attention of the same shape.
"""

from __future__ import annotations

import json
from typing import Any

from accelsim.importers.hlo_text import Shape

FMHA_PREFIX = "__cudnn$fmha"


def fmha_params(target: str, backend_config: str, operands: list[Shape]) -> dict[str, Any] | None:
    """The attention family's parameters of one fused-attention call, with the HLO element
    type of Q as ``dtype``; ``None`` when the call is not one or does not say its shape."""
    if not target.startswith(FMHA_PREFIX) or len(operands) < 2:
        return None
    try:
        config = json.loads(backend_config)["cudnn_fmha_backend_config"]
        batch, heads, seq_q, seq_kv = (int(x) for x in config["intermediate_tensor_shape"]["dimensions"])
    except (ValueError, KeyError, TypeError):
        return None
    q, k = operands[0], operands[1]
    rows = batch * heads * seq_q
    if min(batch, heads, seq_q, seq_kv) < 1 or q.num_elements % rows:
        return None
    head_dim = q.num_elements // rows
    kv_rows = batch * seq_kv * head_dim
    if k.num_elements % kv_rows or heads % max(1, k.num_elements // kv_rows):
        return None
    causal = "CAUSAL" in str(config.get("mask_type", "")).upper()
    if causal and seq_kv < seq_q:
        return None
    return {"batch": batch, "heads": heads, "kv_heads": k.num_elements // kv_rows, "seq_q": seq_q, "seq_kv": seq_kv,
            "head_dim": head_dim, "causal": causal, "dtype": q.dtype,
            "pass": "bwd" if target.endswith("Backward") else "fwd"}
