"""A decoder-only transformer as the model builder reads it: shapes only, validated once.

Dense layers (GQA attention, a gated or plain MLP), mixture-of-experts layers (routed and
shared experts, the first ``dense_layers`` layers dense) and multi-head latent attention
(DeepSeek-V2/V3's MLA: low-rank queries and a compressed KV latent). Parameter counts are
exact for the matrices; norm weights and biases (under 0.01% of these models) are left
out of every count.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accelsim.trace.kernel import PrintableText

MAX_LAYERS = 2048
MAX_WIDTH = 1 << 18
"""Largest hidden, FFN or latent width (262,144: ten times today's widest models)."""
MAX_HEADS = 4096
MAX_HEAD_DIM = 1024
MAX_VOCAB = 1 << 22
MAX_EXPERTS = 4096

Count = Annotated[int, Field(strict=True, ge=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MoeSpec(_Strict):
    """Mixture of experts in the MLP of every layer from ``dense_layers`` on."""

    experts: Annotated[int, Field(strict=True, ge=1, le=MAX_EXPERTS)]
    top_k: Annotated[int, Field(strict=True, ge=1, le=MAX_EXPERTS)]
    """Routed experts per token."""
    expert_ffn: Annotated[int, Field(strict=True, ge=1, le=MAX_WIDTH)]
    """Intermediate width of one expert (gated: gate, up and down matrices)."""
    shared_experts: Annotated[int, Field(strict=True, ge=0, le=64)] = 0
    """Experts every token goes through (DeepSeek's shared experts), as one dense MLP of
    ``shared_experts x expert_ffn``."""
    dense_layers: Annotated[int, Field(strict=True, ge=0, le=MAX_LAYERS)] = 0
    """The first layers keep a dense MLP of width ``ffn`` (DeepSeek-V3: 3)."""

    @model_validator(mode="after")
    def _top_k_fits(self) -> "MoeSpec":
        if self.top_k > self.experts:
            raise ValueError(f"top_k: {self.top_k} routed experts per token, but only {self.experts} experts")
        return self


class MlaSpec(_Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): queries through a ``q_lora_rank``
    bottleneck (0: a full projection), keys and values from a ``kv_lora_rank`` latent
    plus a shared ``qk_rope_head_dim`` rotary key."""

    q_lora_rank: Annotated[int, Field(strict=True, ge=0, le=MAX_WIDTH)]
    kv_lora_rank: Annotated[int, Field(strict=True, ge=1, le=MAX_WIDTH)]
    qk_nope_head_dim: Annotated[int, Field(strict=True, ge=1, le=MAX_HEAD_DIM)]
    qk_rope_head_dim: Annotated[int, Field(strict=True, ge=1, le=MAX_HEAD_DIM)]
    v_head_dim: Annotated[int, Field(strict=True, ge=1, le=MAX_HEAD_DIM)]

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


class ModelSpec(_Strict):
    """A decoder-only transformer. ``head_dim`` is the query/key/value head width of
    standard attention (with MLA, ``mla`` gives the widths and ``head_dim`` is unused)."""

    name: PrintableText = Field(min_length=1, max_length=200)
    layers: Annotated[int, Field(strict=True, ge=1, le=MAX_LAYERS)]
    hidden: Annotated[int, Field(strict=True, ge=1, le=MAX_WIDTH)]
    heads: Annotated[int, Field(strict=True, ge=1, le=MAX_HEADS)]
    kv_heads: Annotated[int, Field(strict=True, ge=1, le=MAX_HEADS)]
    head_dim: Annotated[int, Field(strict=True, ge=1, le=MAX_HEAD_DIM)]
    ffn: Annotated[int, Field(strict=True, ge=1, le=MAX_WIDTH)]
    """Intermediate width of a dense MLP."""
    vocab: Annotated[int, Field(strict=True, ge=1, le=MAX_VOCAB)]
    mlp: Literal["gated", "plain"] = "gated"
    """``gated``: SwiGLU (gate, up, down matrices); ``plain``: GELU (up, down)."""
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    tied_embeddings: bool = False
    linear_bias: bool = False
    """Every projection has a bias (GPT-2, Megatron-LM's ``--add-bias-linear`` default);
    Llama-style models have none. Biases are added inside neighbouring kernels; what
    they cost is their gradients' reductions in the backward."""
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    source: str = ""
    """Where the shapes come from."""

    @model_validator(mode="after")
    def _heads_group(self) -> "ModelSpec":
        if self.heads % self.kv_heads:
            raise ValueError(f"heads: {self.heads} query heads are not a multiple of kv_heads={self.kv_heads}")
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError(f"moe.dense_layers: {self.moe.dense_layers} dense layers, but the model has "
                             f"{self.layers}")
        return self

    # ---------------------------------------------------------------- shapes

    @property
    def q_width(self) -> int:
        """Query projection width (all heads): the attention's query/key head width x heads."""
        return self.heads * (self.mla.qk_head_dim if self.mla else self.head_dim)

    @property
    def attn_out_width(self) -> int:
        """Width of the attention output the output projection reads (heads x value width)."""
        return self.heads * (self.mla.v_head_dim if self.mla else self.head_dim)

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.mlp == "gated" else 2

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer >= self.moe.dense_layers

    @property
    def moe_layers(self) -> int:
        return 0 if self.moe is None else self.layers - self.moe.dense_layers

    # ---------------------------------------------------------------- parameters

    @property
    def attention_params(self) -> int:
        """One layer's attention matrices."""
        h = self.hidden
        if self.mla is None:
            return h * self.q_width + 2 * h * self.kv_heads * self.head_dim + self.attn_out_width * h
        m = self.mla
        q = h * self.q_width if m.q_lora_rank == 0 else h * m.q_lora_rank + m.q_lora_rank * self.q_width
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * self.heads * (m.qk_nope_head_dim
                                                                                       + m.v_head_dim)
        return q + kv + self.attn_out_width * h

    @property
    def dense_mlp_params(self) -> int:
        return self.mlp_matrices * self.hidden * self.ffn

    @property
    def expert_params(self) -> int:
        """One routed expert's matrices (0 without MoE)."""
        return 0 if self.moe is None else self.mlp_matrices * self.hidden * self.moe.expert_ffn

    @property
    def shared_expert_params(self) -> int:
        return 0 if self.moe is None else self.moe.shared_experts * self.expert_params

    @property
    def router_params(self) -> int:
        return 0 if self.moe is None else self.hidden * self.moe.experts

    def layer_params(self, layer: int, *, active: bool = False) -> int:
        """Layer ``layer``'s matrices; ``active``: those one token goes through (top-k experts)."""
        if not self.is_moe_layer(layer):
            return self.attention_params + self.dense_mlp_params
        routed = self.moe.top_k if active else self.moe.experts
        return self.attention_params + self.router_params + self.shared_expert_params + routed * self.expert_params

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        """The output projection (the embedding again when tied)."""
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Every matrix: layers, the embedding and (untied) the output projection."""
        layers = sum(self.layer_params(i) for i in range(self.layers))
        return layers + self.embedding_params + (0 if self.tied_embeddings else self.lm_head_params)

    @property
    def active_matmul_params(self) -> int:
        """The matrices one token multiplies through (top-k experts; the embedding lookup
        is no matmul, the output projection is)."""
        return sum(self.layer_params(i, active=True) for i in range(self.layers)) + self.lm_head_params

    # ---------------------------------------------------------------- caches

    def kv_cache_bytes_per_token(self, dtype_bytes: int, tp: int = 1) -> float:
        """KV cache one token takes over all layers on one of ``tp`` tensor-parallel ranks:
        K and V of the ranks' KV heads (a KV head is replicated when heads < tp); MLA keeps
        its latent and rotary key, the same on every rank."""
        if self.mla is not None:
            per_layer = self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        else:
            per_layer = 2 * max(1, self.kv_heads // tp) * self.head_dim
        return float(self.layers * per_layer * dtype_bytes)
