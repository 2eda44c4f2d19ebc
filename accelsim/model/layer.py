"""One transformer layer's ops on one device, forward and backward, with the collectives
its layout needs: tensor parallel (Megatron's column- and row-parallel GEMMs, with or
without sequence parallelism), context parallel (keys and values all-gathered over the
CP group, as Llama 3 trains), expert parallel (token all-to-alls around grouped expert
GEMMs). Kernels are the built-in families (``gemm``, ``attention``, ``rmsnorm`` /
``layernorm``, ``softmax``, ``elementwise``); what each stands for is in docs/model.md.

Every writer method takes the names the new ops wait for (``after``) and returns the
names the next op waits for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from accelsim.families import attention_impls
from accelsim.model.layout import Framework, Layout, Workload
from accelsim.model.memory import ACT_BYTES
from accelsim.model.ops import OpList, StageGroups
from accelsim.model.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class StepShape:
    """What every layer of a step shares: the model, the mode, the layout, the
    framework's choices, and the sizes one device sees per microbatch."""

    model: ModelSpec
    workload: Workload
    layout: Layout
    framework: Framework
    tpu: bool

    @property
    def training(self) -> bool:
        return self.workload.training

    @property
    def sequences(self) -> int:
        return self.layout.micro_batch

    @property
    def seq_per_device(self) -> int:
        return 1 if self.workload.mode == "decode" else self.workload.seq_len // self.layout.cp

    @property
    def tokens(self) -> int:
        """Rows of a microbatch's activations on one device (sequence-parallel regions hold
        1 / TP of them)."""
        return self.sequences * self.seq_per_device

    @property
    def dropout(self) -> bool:
        """Hidden dropout runs (training under a framework that has it)."""
        return self.training and self.framework.hidden_dropout

    @property
    def attention_dropout(self) -> bool:
        """Attention dropout runs inside the fused attention kernel (training, a GPU, a fused
        implementation, under a framework that has it; not for a microbatch of 16 tokens or
        fewer a device, whose forward the family runs as a decode kernel, which has none)."""
        impl = attention_impls.IMPLS.get(self.framework.attention_impl)
        return (self.training and self.framework.attention_dropout and not self.tpu
                and (impl is None or impl.build is None) and self.seq_per_device > 16)

    @property
    def sp(self) -> bool:
        return self.training and self.layout.tp > 1 and self.layout.sequence_parallel

    @property
    def sp_tokens(self) -> int:
        return math.ceil(self.tokens / self.layout.tp) if self.sp else self.tokens

    def gemm_params(self, m: int, n: int, k: int, groups: int = 1, batch: int = 1) -> dict[str, Any]:
        params: dict[str, Any] = {"M": m, "N": n, "K": k, "dtype": self.workload.dtype}
        if batch > 1:
            params["batch"] = batch
        if groups > 1:
            params["groups"] = groups
        if self.framework.gemm_impl != "default" and not self.tpu:
            params["impl"] = self.framework.gemm_impl
        if self.framework.kernel_search:
            params["config"] = "auto"
        return params

    def attention_params(self, backward: bool) -> dict[str, Any]:
        m, tp = self.model, self.layout.tp
        heads = m.heads // tp
        if m.mla is not None:
            kv_heads, head_dim = (1, m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) if not self.training and \
                self.workload.mode == "decode" else (heads, m.mla.qk_head_dim)
        else:
            kv_heads, head_dim = max(1, m.kv_heads // tp), m.head_dim
        params: dict[str, Any] = {"batch": self.sequences, "heads": heads, "kv_heads": kv_heads,
                                  "seq_q": self.seq_per_device}
        if self.workload.mode == "decode":
            params["seq_kv"] = self.workload.seq_len
        elif self.layout.cp > 1:  # a load-balanced CP rank: half the sequence per query, on average
            params["seq_kv"] = self.workload.seq_len // 2
        params["head_dim"] = head_dim
        params["causal"] = self.workload.mode != "decode" and self.layout.cp == 1
        if self.framework.attention_impl != "default":
            params["impl"] = self.framework.attention_impl
        if backward:
            params["pass"] = "bwd"
        if self.attention_dropout:
            params["dropout"] = True
        if self.framework.kernel_search:
            params["config"] = "auto"
        return params


class LayerWriter:
    """Writes layers' ops into one program (one pipeline stage)."""

    def __init__(self, ops: OpList, shape: StepShape, groups: StageGroups) -> None:
        self.ops, self.s, self.g = ops, shape, groups

    # ------------------------------------------------------------ kernels

    def gemm(self, name: str, m: int, n: int, k: int, after: list[str], groups: int = 1, batch: int = 1) -> str:
        return self.ops.kernel(name, "gemm", self.s.gemm_params(m, n, k, groups, batch), after)

    def wgrad(self, name: str, m: int, n: int, k: int, after: list[str], batch: int = 1) -> str:
        """A weight-gradient GEMM; with the framework's ``wgrad_into_main_grad`` it adds into
        the fp32 main gradient, reading it and writing it (Megatron-LM's gradient-accumulation
        fusion: cuBLAS with beta = 1)."""
        params = self.s.gemm_params(m, n, k, batch=batch)
        if self.s.framework.wgrad_into_main_grad:
            params["out_dtype"] = "fp32"
            params["accumulate"] = True
        return self.ops.kernel(name, "gemm", params, after)

    def elementwise(self, name: str, elements: int, inputs: int, outputs: int, after: list[str],
                    dtype: str = "bf16") -> list[str]:
        if self.s.framework.fused_elementwise:
            return after
        params = {"elements": elements, "dtype": dtype, "inputs": inputs, "outputs": outputs}
        return [self.ops.kernel(name, "elementwise", params, after)]

    def norm(self, name: str, rows: int, after: list[str]) -> list[str]:
        if self.s.framework.fused_elementwise:
            return after
        params = {"rows": rows, "cols": self.s.model.hidden, "dtype": "bf16"}
        return [self.ops.kernel(name, self.s.model.norm, params, after)]

    def norm_backward(self, name: str, rows: int, after: list[str]) -> list[str]:
        """Reads x and dy, writes dx (the weight gradient's reduction is small)."""
        return self.elementwise(name, rows * self.s.model.hidden, 2, 1, after)

    def bias_dropout_add(self, name: str, after: list[str]) -> list[str]:
        """A block's output added into the residual stream (sequence-parallel rows): with
        hidden dropout, Megatron-LM's fused bias-dropout-add (``fusions/fused_bias_dropout.py``
        at 937571cf, the projection's bias added in the same kernel), which also writes the
        one-byte keep mask the backward reads. Bytes are counted in one-byte units there:
        two bf16 arrays read, one bf16 array and the mask written."""
        elements = self.s.sp_tokens * self.s.model.hidden
        if not self.s.dropout:
            return self.elementwise(name, elements, 2, 1, after)
        return self.elementwise(name, elements, 2 * ACT_BYTES, ACT_BYTES + 1, after, dtype="int8")

    def dropout_backward(self, name: str, after: list[str], grads: list[str]) -> list[str]:
        """The residual branch's gradient through the bias-dropout-add: the keep mask applied
        (gradient and mask read, the branch's written), then the bias gradient from it."""
        elements = self.s.sp_tokens * self.s.model.hidden
        if self.s.dropout:
            after = self.elementwise(f"{name}.dropout", elements, ACT_BYTES + 1, ACT_BYTES, after, dtype="int8")
        self.bias_grad(name, elements, after, grads)
        return after

    def bias_grad(self, name: str, elements: int, after: list[str], grads: list[str]) -> None:
        """A bias added outside its GEMM (Megatron-LM's ``skip_bias_add`` projections, whose
        bias goes into the bias-GeLU or bias-dropout-add kernel) has its gradient summed
        over the rows by a reduction of its own: PyTorch's autograd sums a broadcast
        input's gradient to its shape (``sum_to``). Biases inside Transformer Engine's
        GEMMs (the QKV projection's) come from the weight-gradient GEMM's epilogue."""
        if self.s.model.linear_bias and self.s.training:
            grads += self.elementwise(f"{name}.dbias", elements, 1, 0, after)

    # ------------------------------------------------------------ tensor parallel

    def _tp(self, kind: str, name: str, rows: int, after: list[str], overlapped: bool | None = None) -> str:
        """A TP collective of ``rows`` activation rows. Overlapped (beside a GEMM; the
        framework's ``tp_overlap`` unless given), it runs apart from the compute stream, and
        :meth:`_waited` gives what waits for it: on GPUs on the TP communicator's own
        stream (NCCL runs one communicator's collectives in order on its stream); on TPUs
        as an async collective (XLA's start/done pair)."""
        nbytes = rows * self.s.model.hidden * ACT_BYTES
        overlap = self.s.framework.tp_overlap if overlapped is None else overlapped
        if overlap and not self.s.tpu:
            return self.ops.collective(name, kind, nbytes, self.g.tp, after, stream="tp")
        return self.ops.collective(name, kind, nbytes, self.g.tp, after, is_async=overlap)

    def _waited(self, comm: str) -> str:
        """What waits for an overlapped TP collective (written after the GEMM beside it)."""
        return comm if not self.s.tpu else self.ops.done(comm)

    def column(self, name: str, n: int, k: int, after: list[str], rows: int | None = None) -> list[str]:
        """All-gather the sequence-sharded input over TP (sequence parallel), then
        ``x @ W[:, shard]``."""
        rows = self.s.tokens if rows is None else rows
        if self.s.layout.tp == 1 or not self.s.sp:
            return [self.gemm(name, rows, n, k, after)]
        gather = self._tp("all-gather", f"{name}.ag", rows, after)
        if not self.s.framework.tp_overlap:
            return [self.gemm(name, rows, n, k, [gather])]
        return [self.gemm(name, rows, n, k, after), self._waited(gather)]

    def row(self, name: str, n: int, k: int, after: list[str], rows: int | None = None) -> list[str]:
        """``x[:, shard] @ W[shard, :]``, reduce-scattered (sequence parallel) or
        all-reduced over TP."""
        rows = self.s.tokens if rows is None else rows
        if self.s.layout.tp == 1:
            return [self.gemm(name, rows, n, k, after)]
        kind = "reduce-scatter" if self.s.sp else "all-reduce"
        if not self.s.framework.tp_overlap:
            return [self._tp(kind, f"{name}.{_short(kind)}", rows, [self.gemm(name, rows, n, k, after)])]
        reduce = self._tp(kind, f"{name}.{_short(kind)}", rows, after)
        return [self.gemm(name, rows, n, k, after), self._waited(reduce)]

    def column_backward(self, tag: str, n: int, k: int, after: list[str], grads: list[str]) -> list[str]:
        """The backward of :meth:`column`: the weight gradient (``dW = X^T dY``) and the
        input gradient reduced over TP."""
        t = self.s.tokens
        if self.s.sp and not self.s.framework.saves_gathered_inputs:
            # Megatron-LM: the input is gathered again beside the data-gradient GEMM, whose
            # reduce-scatter then runs beside the weight-gradient GEMM
            gather = self._tp("all-gather", f"{tag}.dw.ag", t, after, overlapped=True)
            dx = self.gemm(f"{tag}.dx", t, k, n, after)
            scatter = self._tp("reduce-scatter", f"{tag}.dx.rs", t, [dx], overlapped=True)
            grads.append(self.wgrad(f"{tag}.dw", k, n, t, [gather]))
            return [self._waited(scatter)]
        grads.append(self.wgrad(f"{tag}.dw", k, n, t, after))
        return self.row(f"{tag}.dx", k, n, after)

    def row_backward(self, tag: str, n: int, k: int, after: list[str], grads: list[str]) -> list[str]:
        """The backward of :meth:`row`: dY gathered over TP (sequence parallel), then the
        weight and input gradients."""
        grads.append(self.wgrad(f"{tag}.dw", k, n, self.s.tokens, after))
        return self.column(f"{tag}.dx", k, n, after)

    # ------------------------------------------------------------ attention

    def _qkv_width(self) -> int:
        m, tp = self.s.model, self.s.layout.tp
        if m.mla is None:
            return m.q_width // tp + 2 * max(1, m.kv_heads // tp) * m.head_dim
        q = m.mla.q_lora_rank or m.q_width // tp
        return q + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim

    def _mla_up(self, tag: str, after: list[str], grads: list[str] | None) -> list[str]:
        """MLA's up-projections from the latents (per TP rank's heads): the queries' (when
        they have a low rank) and the keys' and values'."""
        m, t = self.s.model, self.s.tokens
        heads = m.heads // self.s.layout.tp
        ups = [("kv_b", heads * (m.mla.qk_nope_head_dim + m.mla.v_head_dim), m.mla.kv_lora_rank)]
        if m.mla.q_lora_rank:
            ups.insert(0, ("q_b", heads * m.mla.qk_head_dim, m.mla.q_lora_rank))
        if grads is None:
            return [self.gemm(f"{tag}.{name}", t, n, k, after) for name, n, k in ups]
        out = []
        for name, n, k in ups:
            grads.append(self.wgrad(f"{tag}.{name}.dw", k, n, t, after))
            out.append(self.gemm(f"{tag}.{name}.dx", t, k, n, after))
        return out

    def _kv_gather(self, tag: str, after: list[str]) -> list[str]:
        """Context parallel: the other ranks' keys and values, gathered (all-gather, Llama 3's
        choice), waited for before attention."""
        m, s = self.s.model, self.s
        if s.layout.cp == 1:
            return after
        per_token = 2 * max(1, m.kv_heads // s.layout.tp) * m.head_dim if m.mla is None else \
            m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
        nbytes = s.tokens * s.layout.cp * per_token * ACT_BYTES
        return after + [self.ops.collective(f"{tag}.cp.ag", "all-gather", nbytes, self.g.cp, after)]

    def _kv_scatter(self, tag: str, after: list[str]) -> list[str]:
        m, s = self.s.model, self.s
        if s.layout.cp == 1:
            return after
        per_token = 2 * max(1, m.kv_heads // s.layout.tp) * m.head_dim if m.mla is None else \
            m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
        nbytes = s.tokens * s.layout.cp * per_token * ACT_BYTES
        return [self.ops.collective(f"{tag}.cp.rs", "reduce-scatter", nbytes, self.g.cp, after)]

    def attention(self, name: str, after: list[str], backward: bool = False) -> list[str]:
        return [self.ops.kernel(name, "attention", self.s.attention_params(backward), after)]

    def _decode_absorb(self, tag: str, after: list[str], into_latent: bool) -> list[str]:
        """MLA decode in the absorbed form: queries into the latent space before attention,
        the attention output out of it after (batched over the rank's heads)."""
        m, t = self.s.model, self.s.tokens
        heads = m.heads // self.s.layout.tp
        n, k = (m.mla.kv_lora_rank, m.mla.qk_nope_head_dim) if into_latent else (m.mla.v_head_dim,
                                                                                    m.mla.kv_lora_rank)
        return [self.gemm(f"{tag}.absorb", t, n, k, after, batch=heads)]

    # ------------------------------------------------------------ forward

    def forward(self, tag: str, layer: int, after: list[str]) -> list[str]:
        s, m = self.s, self.s.model
        tp = s.layout.tp
        after = self.norm(f"{tag}.norm1", s.sp_tokens, after)
        after = self.column(f"{tag}.qkv", self._qkv_width(), m.hidden, after)
        decode_mla = m.mla is not None and s.workload.mode == "decode"
        if decode_mla:
            after = self._decode_absorb(f"{tag}.q", after, True)
        elif m.mla is not None:
            after = self._mla_up(tag, after, None)
        after = self.attention(f"{tag}.attn", self._kv_gather(tag, after))
        if decode_mla:
            after = self._decode_absorb(f"{tag}.o", after, False)
        after = self.row(f"{tag}.o", m.hidden, m.attn_out_width // tp, after)
        after = self.bias_dropout_add(f"{tag}.add1", after)
        after = self.norm(f"{tag}.norm2", s.sp_tokens, after)
        if m.is_moe_layer(layer):
            after = self.moe_forward(tag, after)
        else:
            width = m.ffn // tp
            after = self.column(f"{tag}.gate_up", (m.mlp_matrices - 1) * width, m.hidden, after)
            after = self.elementwise(f"{tag}.act", s.tokens * width, m.mlp_matrices - 1, 1, after)
            after = self.row(f"{tag}.down", m.hidden, width, after)
        return self.bias_dropout_add(f"{tag}.add2", after)

    def _routed_rows(self) -> tuple[int, int, int]:
        """(rows this rank routes, rows its experts take: top_k of them each, rounded up to
        a whole number per local expert (balanced routing), local experts)."""
        s, e = self.s, self.s.model.moe
        rows = math.ceil(s.tokens / s.layout.tp)
        local = e.experts // s.layout.ep
        return rows, math.ceil(rows * e.top_k / local) * local, local

    def _all_to_all(self, name: str, rows: int, after: list[str]) -> list[str]:
        if self.s.layout.ep == 1:
            return after
        nbytes = rows * self.s.model.moe.top_k * self.s.model.hidden * ACT_BYTES
        return [self.ops.collective(name, "all-to-all", nbytes, self.g.ep, after)]

    def moe_forward(self, tag: str, after: list[str]) -> list[str]:
        """Router, dispatch all-to-all, the local experts as grouped GEMMs, combine
        all-to-all, shared experts. Tokens stay sequence-sharded over TP (experts are not
        tensor-parallel); inference steps gather them over TP after."""
        m, e = self.s.model, self.s.model.moe
        rows, expert_rows, local = self._routed_rows()
        router = [self.gemm(f"{tag}.router", rows, e.experts, m.hidden, after)]
        sent = self._all_to_all(f"{tag}.dispatch", rows, router)
        up = [self.gemm(f"{tag}.experts.gate_up", expert_rows, (m.mlp_matrices - 1) * e.expert_ffn, m.hidden, sent,
                        groups=local)]
        up = self.elementwise(f"{tag}.experts.act", expert_rows * e.expert_ffn, m.mlp_matrices - 1, 1, up)
        down = [self.gemm(f"{tag}.experts.down", expert_rows, m.hidden, e.expert_ffn, up, groups=local)]
        out = self._all_to_all(f"{tag}.combine", rows, down)
        if e.shared_experts:
            width = e.shared_experts * e.expert_ffn
            shared = [self.gemm(f"{tag}.shared.gate_up", rows, (m.mlp_matrices - 1) * width, m.hidden, after)]
            out += [self.gemm(f"{tag}.shared.down", rows, m.hidden, width, shared)]
        if not self.s.sp and self.s.layout.tp > 1:
            out = [self._tp("all-gather", f"{tag}.moe.ag", self.s.tokens, out, overlapped=False)]
        return out

    # ------------------------------------------------------------ backward

    def backward(self, tag: str, layer: int, after: list[str], forward_tag: str) -> tuple[list[str], list[str]]:
        """(what the next layer's backward waits for, this layer's weight-gradient ops).
        Recompute runs first: the whole forward again (``full``) or, before the attention
        backward, the attention forward (``selective``)."""
        s, m = self.s, self.s.model
        tp = s.layout.tp
        if s.layout.recompute == "full":
            after = self.forward(forward_tag, layer, after)
        grads: list[str] = []
        branch = self.dropout_backward(f"{tag}.add2", after, grads)
        if m.is_moe_layer(layer):
            after = self.moe_backward(tag, branch, grads)
        else:
            width = m.ffn // tp
            after = self.row_backward(f"{tag}.down", m.hidden, width, branch, grads)
            after = self.elementwise(f"{tag}.act", s.tokens * width, m.mlp_matrices, m.mlp_matrices - 1, after)
            self.bias_grad(f"{tag}.gate_up", s.tokens * (m.mlp_matrices - 1) * width, after, grads)
            after = self.column_backward(f"{tag}.gate_up", (m.mlp_matrices - 1) * width, m.hidden, after, grads)
        after = self.norm_backward(f"{tag}.norm2", s.sp_tokens, after)
        after = self.elementwise(f"{tag}.add1", s.sp_tokens * m.hidden, 2, 1, after)
        after = self.dropout_backward(f"{tag}.add1", after, grads)
        after = self.row_backward(f"{tag}.o", m.hidden, m.attn_out_width // tp, after, grads)
        if s.layout.recompute == "selective":
            after = self.attention(f"{tag}.attn.recompute", self._kv_gather(f"{tag}.recompute", after))
        after = self._kv_scatter(tag, self.attention(f"{tag}.attn", after, backward=True))
        if m.mla is not None:
            after = self._mla_up(tag, after, grads)
        after = self.column_backward(f"{tag}.qkv", self._qkv_width(), m.hidden, after, grads)
        return self.norm_backward(f"{tag}.norm1", s.sp_tokens, after), grads

    def moe_backward(self, tag: str, after: list[str], grads: list[str]) -> list[str]:
        m, e = self.s.model, self.s.model.moe
        rows, expert_rows, local = self._routed_rows()
        per_expert = expert_rows // local
        width = (m.mlp_matrices - 1) * e.expert_ffn
        back = self._all_to_all(f"{tag}.combine", rows, after)
        grads.append(self.wgrad(f"{tag}.experts.down.dw", e.expert_ffn, m.hidden, per_expert, back, batch=local))
        dx = [self.gemm(f"{tag}.experts.down.dx", expert_rows, e.expert_ffn, m.hidden, back, groups=local)]
        dx = self.elementwise(f"{tag}.experts.act", expert_rows * e.expert_ffn, m.mlp_matrices, m.mlp_matrices - 1, dx)
        grads.append(self.wgrad(f"{tag}.experts.gate_up.dw", m.hidden, width, per_expert, dx, batch=local))
        dx = [self.gemm(f"{tag}.experts.gate_up.dx", expert_rows, m.hidden, width, dx, groups=local)]
        out = self._all_to_all(f"{tag}.dispatch", rows, dx)
        grads.append(self.wgrad(f"{tag}.router.dw", m.hidden, e.experts, rows, after))
        if e.shared_experts:
            shared = e.shared_experts * e.expert_ffn
            grads.append(self.wgrad(f"{tag}.shared.down.dw", shared, m.hidden, rows, after))
            sdx = [self.gemm(f"{tag}.shared.down.dx", rows, shared, m.hidden, after)]
            grads.append(self.wgrad(f"{tag}.shared.gate_up.dw", m.hidden, (m.mlp_matrices - 1) * shared, rows, sdx))
            out += [self.gemm(f"{tag}.shared.gate_up.dx", rows, m.hidden, (m.mlp_matrices - 1) * shared, sdx)]
        return out


class VocabWriter(LayerWriter):
    """A stage's ops with the units at the model's vocabulary ends besides its layers: the
    input embedding, the output projection and the loss (each stage's builder writes with
    one; only the first and last stages call these)."""

    # ------------------------------------------------------------ embedding

    def embedding_forward(self, tag: str, after: list[str]) -> list[str]:
        """The vocabulary-parallel lookup (Megatron-LM's ``VocabParallelEmbedding``): each TP
        rank looks up the tokens of its vocabulary shard, and the partial rows are summed
        over TP, reduce-scattered into the sequence-parallel region (all-reduced without
        sequence parallelism; XLA's gather is its own and is not modelled)."""
        s = self.s
        after = self.elementwise(f"{tag}.embed", s.tokens * s.model.hidden, 1, 1, after)
        if s.layout.tp == 1 or s.tpu:
            return after
        kind = "reduce-scatter" if s.sp else "all-reduce"
        return [self._tp(kind, f"{tag}.embed.{_short(kind)}", s.tokens, after, overlapped=False)]

    def embedding_backward(self, tag: str, after: list[str], grads: list[str]) -> None:
        """The lookup's weight gradient (nothing flows further back): the sequence-parallel
        gradient gathered over TP, PyTorch's dense embedding backward (a zeroed table of
        the rank's vocabulary rows, the tokens' rows added in), and the table added into
        the fp32 main gradient (Megatron-LM's gradient hook: bf16 gradient and fp32 main
        gradient read, fp32 written: five bf16-sized arrays)."""
        s = self.s
        if s.sp and not s.tpu:
            after = [self._tp("all-gather", f"{tag}.embed.ag", s.tokens, after, overlapped=False)]
        table = math.ceil(s.model.vocab / s.layout.tp) * s.model.hidden
        after = self.elementwise(f"{tag}.embed.zero", table, 0, 1, after)
        after = self.elementwise(f"{tag}.embed.dw", s.tokens * s.model.hidden, 2, 1, after)
        main_grad_bytes = s.framework.grad_bytes // 2
        grads += self.elementwise(f"{tag}.embed.acc", table, 1 + main_grad_bytes, main_grad_bytes, after)

    # ------------------------------------------------------------ output projection

    def logits_forward(self, tag: str, after: list[str]) -> list[str]:
        """The final norm, the vocabulary-parallel output projection and the loss's
        softmax (training; inference takes each sequence's last position only)."""
        s, m = self.s, self.s.model
        vocab = math.ceil(m.vocab / s.layout.tp)
        rows = s.tokens if s.training else s.sequences
        after = self.norm(f"{tag}.final_norm", s.sp_tokens if s.training else rows, after)
        after = self.column(f"{tag}.logits", vocab, m.hidden, after, rows=rows)
        if s.training and not s.framework.fused_elementwise:
            after = self.cross_entropy(f"{tag}.loss", rows, vocab, after)
            report = s.framework.loss_report_all_reduce
            if report:  # the loss is summed over CP before its NaN check reads it
                after = self._loss_report(tag, "cp", after)
            if s.framework.grad_nan_check:  # the loss's NaN check reads it on the host
                self.ops.host_waits_for(after)
            if report:
                after = self._loss_report(tag, "dp", after)
        return after

    def _loss_report(self, tag: str, over: str, after: list[str]) -> list[str]:
        """The microbatch's loss and token count (two fp32 values) all-reduced over ``over``
        (``cp`` or ``dp``) where it has more than one rank (Megatron-LM's ``loss_func``: over
        CP, then the NaN check, then over DP for reporting): blocking, on the compute stream,
        so the backward that follows waits for each."""
        size, groups = (self.s.layout.cp, self.g.cp) if over == "cp" else (self.s.layout.dp, self.g.dp)
        if size == 1:
            return after
        return [self.ops.collective(f"{tag}.loss_report.{over}.ar", "all-reduce", 8, groups, after)]

    def cross_entropy(self, tag: str, rows: int, vocab: int, after: list[str]) -> list[str]:
        """Megatron-LM's vocabulary-parallel cross-entropy (``tensor_parallel.cross_entropy``,
        unfused, its default), one kernel per PyTorch op over the rank's ``rows x vocab``
        logits: the bf16 logits cast to fp32, the row max (all-reduced over TP), the max
        subtracted, exp, the row sum (it and the target's logit all-reduced over TP), the
        division into the softmax kept for the backward; each in place on the fp32 copy.
        An fp32 array is written as two bf16 arrays where a pass mixes the two."""
        if self.s.framework.fused_cross_entropy:
            return self.fused_cross_entropy(tag, rows, vocab, after)
        elements = rows * vocab
        after = self.elementwise(f"{tag}.cast", elements, 1, 2, after)
        after = self._loss_all_reduce(f"{tag}.max", rows, self.elementwise(f"{tag}.max", elements, 1, 0, after,
                                                                           dtype="fp32"))
        after = self.elementwise(f"{tag}.sub", elements, 1, 1, after, dtype="fp32")
        after = self.elementwise(f"{tag}.exp", elements, 1, 1, after, dtype="fp32")
        after = self.elementwise(f"{tag}.sum", elements, 1, 0, after, dtype="fp32")
        after = self._loss_all_reduce(f"{tag}.target", rows, after)
        after = self._loss_all_reduce(f"{tag}.sum", rows, after)
        return self.elementwise(f"{tag}.div", elements, 1, 1, after, dtype="fp32")

    def fused_cross_entropy(self, tag: str, rows: int, vocab: int, after: list[str]) -> list[str]:
        """``--cross-entropy-loss-fusion`` (``megatron/core/fusions/fused_cross_entropy.py``
        at 937571cf): the same steps as three ``jit_fuser`` (``torch.compile``) functions,
        each one kernel: the cast to fp32 with the row max; the max subtracted, exp and the
        row sum (into the fp32 copy, an input the function mutates); the division. The
        target's logit and the sum go over TP in one all-reduce."""
        elements = rows * vocab
        after = self._loss_all_reduce(f"{tag}.max", rows, self.elementwise(f"{tag}.max", elements, 1, 2, after))
        after = self.elementwise(f"{tag}.exp", elements, 1, 1, after, dtype="fp32")
        after = self._loss_all_reduce(f"{tag}.sum", 2 * rows, after)
        return self.elementwise(f"{tag}.div", elements, 1, 1, after, dtype="fp32")

    def _loss_all_reduce(self, name: str, values: int, after: list[str]) -> list[str]:
        """fp32 per-token values all-reduced over TP (the loss's max, sums and target logits)."""
        if self.s.layout.tp == 1:
            return after
        return [self.ops.collective(f"{name}.ar", "all-reduce", values * 4, self.g.tp, after)]

    def logits_backward(self, tag: str, after: list[str], grads: list[str]) -> list[str]:
        s, m = self.s, self.s.model
        vocab = math.ceil(m.vocab / s.layout.tp)
        # the kept softmax times the loss's gradient (the target's entry corrected), cast back to
        # bf16; fused, one kernel writes both (the softmax is an input the function mutates)
        if s.framework.fused_cross_entropy:
            after = self.elementwise(f"{tag}.loss.grad", s.tokens * vocab, 2, 3, after)
        else:
            after = self.elementwise(f"{tag}.loss.grad", s.tokens * vocab, 1, 1, after, dtype="fp32")
            after = self.elementwise(f"{tag}.loss.cast", s.tokens * vocab, 2, 1, after)
        after = self.column_backward(f"{tag}.logits", vocab, m.hidden, after, grads)
        return self.norm_backward(f"{tag}.final_norm", s.sp_tokens, after)


def _short(kind: str) -> str:
    return {"all-gather": "ag", "reduce-scatter": "rs", "all-reduce": "ar"}[kind]
