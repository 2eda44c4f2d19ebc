"""Per-device memory of a step, checked against HBM capacity before anything is built.

Per pipeline stage (the largest one counts): weights, gradients and optimizer state of
the stage's share of the parameters (divided by TP, by EP for experts, by FSDP, and by DP
for what ZeRO shards); activations stored for the backward by the microbatches in flight
(the Korthikanti et al. 2022 accounting, "Reducing Activation Recomputation in Large
Transformer Models", section 4, per tensor); the KV cache of inference steps. Left out:
the CUDA/XLA runtime, workspaces, the allocator's fragmentation and communication
buffers (a few GB on a GPU; docs/model.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accelsim.errors import InputError
from accelsim.model.layout import Framework, Layout, Workload
from accelsim.model.spec import ModelSpec

ACT_BYTES = 2
"""Activations, attention and the KV cache in bf16."""
ADAM_STATE_BYTES = 8
"""Adam's two moments in fp32."""
MASTER_WEIGHT_BYTES = 4
"""fp32 master weights, kept by the optimizer when the weights themselves are narrower."""
LOGIT_BYTES = 4
"""Logits in fp32 for the loss."""


@dataclass(frozen=True, kw_only=True)
class Memory:
    """Bytes per device on its busiest pipeline stage."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    kv_cache_bytes: float
    capacity_bytes: float
    stage: int

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes
                + self.kv_cache_bytes)

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def text(self) -> str:
        gb = lambda v: f"{v / 1e9:.1f}"  # noqa: E731
        parts = [("weights", self.weights_bytes), ("gradients", self.gradients_bytes),
                 ("optimizer", self.optimizer_bytes), ("activations", self.activations_bytes),
                 ("KV cache", self.kv_cache_bytes)]
        return ", ".join(f"{name} {gb(v)}" for name, v in parts if v)

    def as_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "gradients_bytes": self.gradients_bytes,
                "optimizer_bytes": self.optimizer_bytes, "activations_bytes": self.activations_bytes,
                "kv_cache_bytes": self.kv_cache_bytes, "total_bytes": self.total_bytes,
                "capacity_bytes": self.capacity_bytes, "stage": self.stage}


def stage_layers(model: ModelSpec, layout: Layout) -> list[list[int]]:
    """The layers of each pipeline chunk, in chunk order (chunk ``c`` runs on stage ``c %
    PP``). Layers split as evenly as they go, the spare ones to the middle chunks: the
    first and last stages also hold the embedding and the output projection (Llama 3's
    405B run put one layer fewer on those two)."""
    chunks = layout.pp * layout.virtual_stages
    base, spare = divmod(model.layers, chunks)
    order = sorted(range(chunks), key=lambda c: (abs(c - (chunks - 1) / 2), c))
    extra = set(order[:spare])
    out, start = [], 0
    for c in range(chunks):
        n = base + (c in extra)
        out.append(list(range(start, start + n)))
        start += n
    return out


def stage_params(model: ModelSpec, layout: Layout, stage: int) -> float:
    """Parameters one device of ``stage`` holds before FSDP sharding."""
    chunks = stage_layers(model, layout)
    layers = [i for c in range(stage, len(chunks), layout.pp) for i in chunks[c]]
    params = 0.0
    for i in layers:
        if model.is_moe_layer(i):
            params += (model.attention_params + model.shared_expert_params) / layout.tp + model.router_params
            params += model.moe.experts / layout.ep * model.expert_params
        else:
            params += model.layer_params(i) / layout.tp
    if stage == 0:
        params += model.embedding_params / layout.tp
    if stage == layout.pp - 1 and (not model.tied_embeddings or layout.pp > 1):
        params += model.lm_head_params / layout.tp
    return params


def in_flight_microbatches(layout: Layout, microbatches: int, stage: int) -> float:
    """Microbatches whose activations a stage holds at its peak, in units of the stage's
    whole layers: 1F1B keeps PP - stage; the interleaved schedule its warm-up chunks
    plus one, each a 1/v of the stage's layers."""
    if layout.virtual_stages == 1:
        return min(microbatches, layout.pp - stage)
    v = layout.virtual_stages
    warmup = (layout.pp - stage - 1) * 2 + (v - 1) * layout.pp
    return min(microbatches * v, warmup + 1) / v


def activation_bytes_per_token(model: ModelSpec, layout: Layout, layer: int, unfused_attention: bool,
                               seq_kv: int, training: bool, dot_outputs_only: bool = False,
                               dropout_masks: bool = False) -> float:
    """Bytes one token of one layer stores for the backward on one device.
    ``dot_outputs_only``: selective recompute as XLA's ``checkpoint_dots_with_no_batch_dims``
    (MaxText's ``minimal``) keeps it: the projections' outputs, everything else recomputed.
    ``dropout_masks``: hidden dropout's two one-byte keep masks (Korthikanti et al.'s ``sbh``
    after the attention and after the MLP), sequence-parallel."""
    h, tp = model.hidden, layout.tp
    sp = tp if layout.sequence_parallel and tp > 1 and training else 1
    if layout.recompute == "full":
        return ACT_BYTES * h / sp
    q_local = model.q_width / tp
    kv_local = 2 * max(1, model.kv_heads // tp) * (model.mla.v_head_dim if model.mla else model.head_dim)
    if dot_outputs_only and layout.recompute == "selective" and not model.is_moe_layer(layer):
        mlp_out = (model.mlp_matrices - 1) * model.ffn / tp
        return ACT_BYTES * (q_local + kv_local + 2 * h / sp + mlp_out)
    attn = ACT_BYTES * (2 * h / sp + q_local + kv_local + model.attn_out_width / tp)
    if unfused_attention and layout.recompute == "none":
        attn += 5 * model.heads / tp * seq_kv  # scores and softmax in bf16, the dropout mask in bytes
    if model.is_moe_layer(layer):
        e = model.moe
        routed = e.top_k * (h + (model.mlp_matrices - 1) * e.expert_ffn + e.expert_ffn)
        shared = e.shared_experts * e.expert_ffn * model.mlp_matrices
        mlp = ACT_BYTES * (2 * h / sp + (routed + shared) / sp)
    else:
        mlp = ACT_BYTES * (2 * h / sp + model.mlp_matrices * model.ffn / tp)
    masks = 2 * h / sp if dropout_masks and training else 0.0
    return attn + mlp + masks


def device_memory(model: ModelSpec, workload: Workload, layout: Layout, framework: Framework, microbatches: int,
                  capacity_bytes: float, unfused_attention: bool = False) -> Memory:
    """The busiest stage's memory per device."""
    best: Memory | None = None
    for stage in range(layout.pp):
        m = _stage_memory(model, workload, layout, framework, microbatches, capacity_bytes, unfused_attention, stage)
        if best is None or m.total_bytes > best.total_bytes:
            best = m
    return best


def _stage_memory(model: ModelSpec, workload: Workload, layout: Layout, framework: Framework, microbatches: int,
                  capacity_bytes: float, unfused_attention: bool, stage: int) -> Memory:
    params = stage_params(model, layout, stage) / layout.fsdp
    chunks = stage_layers(model, layout)
    layers = [i for c in range(stage, len(chunks), layout.pp) for i in chunks[c]]
    tokens = layout.micro_batch * (workload.seq_len // layout.cp if workload.mode != "decode" else 1)
    if not workload.training:
        weight_bytes = 1 if workload.dtype == "fp8" else ACT_BYTES
        per_replica = workload.batch // layout.data_parallel
        cache = per_replica * workload.seq_len * model.kv_cache_bytes_per_token(ACT_BYTES, layout.tp)
        cache *= len(layers) / model.layers
        working = max((activation_bytes_per_token(model, layout, i, unfused_attention, workload.seq_len, False)
                       for i in layers), default=0.0) * tokens
        return Memory(weights_bytes=params * weight_bytes, gradients_bytes=0.0, optimizer_bytes=0.0,
                      activations_bytes=working, kv_cache_bytes=cache, capacity_bytes=capacity_bytes, stage=stage)
    optimizer_per_param = ADAM_STATE_BYTES + (MASTER_WEIGHT_BYTES if framework.param_bytes < 4 else 0)
    zero_optimizer = layout.dp if layout.zero >= 1 else 1
    zero_grads = layout.dp if layout.zero >= 2 else 1
    per_layer = [activation_bytes_per_token(model, layout, i, unfused_attention, workload.seq_len, True,
                                            framework.fused_elementwise, framework.hidden_dropout) for i in layers]
    stored = sum(per_layer) * tokens * in_flight_microbatches(layout, microbatches, stage)
    if layout.recompute == "full" and layers:  # the layer being recomputed holds its whole activations
        whole = layout.model_copy(update={"recompute": "none"})
        stored += max(activation_bytes_per_token(model, whole, i, unfused_attention, workload.seq_len, True,
                                                 dropout_masks=framework.hidden_dropout) for i in layers) * tokens
    if stage == layout.pp - 1:
        stored += tokens * math.ceil(model.vocab / layout.tp) * LOGIT_BYTES
    return Memory(weights_bytes=params * framework.param_bytes, gradients_bytes=params * framework.grad_bytes / zero_grads,
                  optimizer_bytes=params * optimizer_per_param / zero_optimizer, activations_bytes=stored,
                  kv_cache_bytes=0.0, capacity_bytes=capacity_bytes, stage=stage)


def check_fits(memory: Memory, chip_name: str) -> None:
    """Refuse a step whose memory exceeds HBM, one line with the breakdown (GB)."""
    if not memory.fits:
        raise InputError(f"does not fit: {memory.total_bytes / 1e9:.1f} GB per device on pipeline stage "
                         f"{memory.stage} ({memory.text()}) > {memory.capacity_bytes / 1e9:.1f} GB of HBM on "
                         f"{chip_name}; shard more (TP, PP, FSDP, ZeRO), recompute, or shrink the microbatch",
                         field="memory")
