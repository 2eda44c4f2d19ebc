"""FLOP counts of a step, each convention stated (docs/model.md, "FLOPs, MFU and HFU").

**Model FLOPs** (MFU's numerator): 2 x the matrices a token goes through (active
parameters, the output projection included, the embedding lookup not) per token, plus the
attention core: 4 x attended keys x heads x head width per query token and layer (QK^T
and PV; MLA: the mean of its query/key and value widths), with causal attention over half
the keys on average ((seq + 1) / 2). Training is 3 x the forward (forward, data and weight
gradients). **Hardware FLOPs** (HFU's) add what recompute runs again: the whole layers'
forward (``full``) or the attention core's (``selective``).

Published figures use other conventions (Megatron-LM: attention over all keys and full
recompute counted; PaLM: 6N plus non-causal attention); the validation scripts compute
each publication's own count.
"""

from __future__ import annotations

from accelsim.model.layout import Layout, Workload
from accelsim.model.spec import ModelSpec


def attention_width(model: ModelSpec) -> float:
    """Head width the attention core's two matmuls average (QK^T over the query/key
    width, PV over the value width)."""
    if model.mla is None:
        return float(model.head_dim)
    return (model.mla.qk_head_dim + model.mla.v_head_dim) / 2


def attended_keys(workload: Workload) -> float:
    """Keys one query attends to, on average: causal half (and the diagonal) of the
    sequence for training and prefill, the whole cache for decode."""
    if workload.mode == "decode":
        return float(workload.seq_len)
    return (workload.seq_len + 1) / 2


def attention_core_flops_per_token(model: ModelSpec, workload: Workload) -> float:
    """Forward QK^T and PV of every layer, per query token."""
    return 4.0 * attended_keys(workload) * model.heads * attention_width(model) * model.layers


def forward_flops_per_token(model: ModelSpec, workload: Workload) -> float:
    return 2.0 * model.active_matmul_params + attention_core_flops_per_token(model, workload)


def model_flops(model: ModelSpec, workload: Workload) -> float:
    """Model FLOPs of the whole step (all devices)."""
    forward = forward_flops_per_token(model, workload) * workload.tokens
    return 3.0 * forward if workload.training else forward


def hardware_flops(model: ModelSpec, workload: Workload, layout: Layout) -> float:
    """Model FLOPs plus recompute (training)."""
    flops = model_flops(model, workload)
    if not workload.training or layout.recompute == "none":
        return flops
    if layout.recompute == "full":
        layers = 2.0 * (model.active_matmul_params - model.lm_head_params)
        return flops + (layers + attention_core_flops_per_token(model, workload)) * workload.tokens
    return flops + attention_core_flops_per_token(model, workload) * workload.tokens
