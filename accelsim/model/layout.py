"""What to run and how it is split: the mode (:class:`Workload`), the parallel layout
(:class:`Layout`) and the framework whose overlap is modelled (:class:`Framework`).

Ranks are laid out as Megatron-LM orders them, tensor parallel fastest: ``rank = tp +
TP x (cp + CP x (fsdp + FSDP x (dp + DP x pp)))``. On a GPU cluster a tensor-parallel
group is then one node's NVLink domain; on a TPU torus the innermost axis (MaxText puts
``tensor`` there). Expert parallel groups are consecutive data-parallel ranks (FSDP
fastest), as Megatron-LM carves them out of the data-parallel group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelsim.errors import InputError, shown
from accelsim.model.spec import ModelSpec
from accelsim.trace.kernel import error_message

MAX_SEQ = 1 << 22
MAX_BATCH = 1 << 24
MAX_MICROBATCHES = 4096
MAX_DEGREE = 1 << 16
MAX_OPS_PER_PROGRAM = 2_000_000
"""Ops one program of the trace may hold (a stage's microbatches x layers x ops per
layer), checked before anything is built: about a minute of replay on one core."""

Degree = Annotated[int, Field(strict=True, ge=1, le=MAX_DEGREE)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Workload(_Strict):
    """``train``: one optimizer step over ``batch`` sequences of ``seq_len`` tokens;
    ``prefill``: the forward of ``batch`` prompts of ``seq_len`` tokens; ``decode``: one
    new token for each of ``batch`` sequences whose KV cache holds ``seq_len`` tokens."""

    mode: Literal["train", "prefill", "decode"]
    seq_len: Annotated[int, Field(strict=True, ge=1, le=MAX_SEQ)]
    batch: Annotated[int, Field(strict=True, ge=1, le=MAX_BATCH)]
    """Global batch, in sequences, over all data-parallel replicas."""
    dtype: Literal["bf16", "fp8"] = "bf16"
    """GEMM input type (fp8: W8A8 GEMMs; attention, norms and caches stay bf16)."""

    @property
    def training(self) -> bool:
        return self.mode == "train"

    @property
    def tokens(self) -> int:
        """Tokens the step produces (training and prefill: every position; decode: one per sequence)."""
        return self.batch * (1 if self.mode == "decode" else self.seq_len)


class Layout(_Strict):
    """Parallel degrees and how the step is scheduled.

    ``fsdp``: fully sharded data parallel (ZeRO-3: weights, gradients and optimizer state
    sharded; weights gathered per layer); ``dp``: replicated data parallel over which
    ``zero`` (0, 1 or 2) shards the optimizer (1) and gradients (2). ``virtual_stages`` > 1
    is Megatron-LM's interleaved 1F1B schedule (that many model chunks per pipeline stage).
    ``micro_batch``: sequences per microbatch of one data-parallel replica."""

    tp: Degree = 1
    pp: Degree = 1
    cp: Degree = 1
    dp: Degree = 1
    fsdp: Degree = 1
    ep: Degree = 1
    sequence_parallel: bool = True
    """Tensor parallel with Megatron's sequence parallelism (norms and residuals sharded
    over the sequence; all-gather / reduce-scatter instead of all-reduce). Training only:
    inference steps all-reduce."""
    zero: Literal[0, 1, 2] = 1
    virtual_stages: Annotated[int, Field(strict=True, ge=1, le=64)] = 1
    micro_batch: Annotated[int, Field(strict=True, ge=1, le=MAX_BATCH)] = 1
    recompute: Literal["none", "selective", "full"] = "none"
    """Activation recompute: ``selective`` recomputes the attention core's forward before
    its backward (Megatron-LM's selective, MaxText's ``minimal``), ``full`` every layer's
    forward (Megatron-LM ``--recompute-granularity full``, MaxText ``full``)."""

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.cp * self.dp * self.fsdp

    @property
    def data_parallel(self) -> int:
        """Replicas that see different data: FSDP x DP."""
        return self.fsdp * self.dp

    def text(self) -> str:
        parts = [f"{name.upper()}{getattr(self, name)}" for name in ("tp", "pp", "cp", "fsdp", "dp", "ep")
                 if getattr(self, name) > 1]
        if self.virtual_stages > 1:
            parts.append(f"v{self.virtual_stages}")
        return " ".join(parts) or "1 device"


@dataclass(frozen=True, kw_only=True)
class Framework:
    """How a training framework issues and overlaps communication (see docs/model.md)."""

    name: str
    overlap_grad_reduce: bool
    """Data-parallel gradient reduction bucketed per layer and issued during the backward
    (Megatron ``--overlap-grad-reduce``, DeepSpeed's reduce buckets, XLA's async
    reduce-scatter); otherwise after the whole backward."""
    overlap_param_gather: bool
    """ZeRO-1/2 parameter all-gather per layer ahead of the forward (Megatron
    ``--overlap-param-gather``); otherwise after the optimizer step. FSDP's per-layer
    gathers are always prefetched one layer ahead."""
    tp_overlap: bool = False
    """Tensor-parallel collectives beside the GEMM they feed or drain (collective matmul,
    Transformer Engine's userbuffers overlap); otherwise each waits for its input and the
    GEMM that needs it waits for it."""
    param_bytes: int = 2
    """Bytes of a weight as stored and gathered (MaxText: fp32 weights)."""
    grad_bytes: int = 4
    """Bytes of a gradient as reduced (Megatron-LM with bf16: fp32 main grads)."""
    gemm_impl: str = "default"
    attention_impl: str = "default"
    fused_elementwise: bool = False
    """Norms, activations, residual adds and the loss fused into neighbouring kernels
    (XLA's fusions): no kernels of their own."""
    saves_gathered_inputs: bool = False
    """The backward reuses each sequence-parallel all-gather's output (XLA keeps it);
    otherwise it gathers again beside the data-gradient GEMM (Megatron-LM)."""
    wgrad_into_main_grad: bool = False
    """Weight-gradient GEMMs accumulate into the fp32 main gradient (Megatron-LM's
    ``--gradient-accumulation-fusion``, its default: cuBLAS reads and writes C in fp32, beta
    = 1, the gemm family's ``accumulate``); otherwise they write the weights' dtype."""
    zeroes_grad_buffer: bool = False
    """Every step starts by zeroing the stage's whole gradient buffer (Megatron-LM's
    ``zero_grad_buffer``: one contiguous buffer of every local parameter's main gradient,
    not sharded by the distributed optimizer)."""
    fused_cross_entropy: bool = False
    """Megatron-LM's ``--cross-entropy-loss-fusion``: the loss's passes compiled in three
    forward kernels and one backward kernel (docs/model.md); otherwise one kernel per
    PyTorch op."""
    hidden_dropout: bool = False
    """Training drops out the output of each block's last projection before the residual
    add (Megatron-LM's ``--hidden-dropout``, 0.1 by default): the bias-dropout-add kernel
    also writes a one-byte keep mask, and the backward applies it in a kernel of its own."""
    attention_dropout: bool = False
    """Training drops out attention probabilities inside the fused attention kernel
    (Megatron-LM's ``--attention-dropout``, 0.1 by default; Transformer Engine passes it to
    cuDNN's fused attention, which draws the keep masks from Philox in the forward and again in
    the backward): the attention family's ``dropout``. Not priced for the unfused attention,
    whose dropout is a kernel of its own (left out)."""
    grad_nan_check: bool = False
    """Before a gradient bucket's data-parallel reduction, its main gradient is read once for
    its norm, checked for NaN (Megatron-LM's ``--check-for-nan-in-loss-and-grad``, on by
    default: ``Bucket.start_grad_sync`` in ``core/distributed/param_and_grad_buffer.py`` at
    937571cf), and each microbatch's loss too (``loss_func`` in ``pretrain_gpt.py``). Both
    are ``assert not x.isnan()`` on a device tensor: the host waits for the value (a host
    sync) before it issues anything more."""
    loss_report_all_reduce: bool = False
    """Each microbatch's loss is all-reduced over the data-parallel group for reporting
    (Megatron-LM's ``loss_func`` in ``pretrain_gpt.py`` at 937571cf, lines 132-145: the loss
    and its token count, over the CP group first where CP > 1, then over DP; the 2021 code's
    ``average_losses_across_data_parallel_group``, ``megatron/utils.py`` at a8d172b3): a
    blocking collective of a few bytes on the compute stream, its latency exposed."""
    grad_prescale: bool = False
    """Before a gradient bucket is summed over the replicas, it is divided by their number in
    place, read and written (Megatron-LM's ``gradient_scaling_factor`` of 1 / DP, without
    ``--ddp-average-in-collective``, its default at 937571cf; the 2021 code's
    ``allreduce_gradients`` divided its buffer the same way)."""
    later_stages_one_bucket: bool = False
    """With overlapped reductions, pipeline stages after the first and model chunks after a
    stage's first keep their gradients in one bucket, reduced once the chunk's last backward
    is done (Megatron-LM's ``DistributedDataParallel`` at 937571cf: ``bucket_size = None``
    there, "data-parallel communication on these stages is not on the critical path");
    otherwise each layer is a bucket of its own."""
    kernel_search: bool = False
    """Each GEMM and attention with ``config=auto`` (XLA tiles its own dots; the best
    block shapes stand in for its choice); otherwise the implementation's own choice."""
    host_forward_op_s: float = 0.0
    """Host (CPU) time to issue one op of the forward and of the step's start and end (an
    eager framework: Python, PyTorch's dispatcher with autograd recording, the kernel
    launch). 0: no host timeline, ops issued ahead of the device (XLA's executable; a
    CUDA graph, whose one launch per step is left out)."""
    host_backward_op_s: float = 0.0
    """Host time to issue one op of a backward (PyTorch's autograd engine issues them from
    C++: no Python, no recording)."""


EAGER_FORWARD_OP_S = 6.8e-6 + 1.3e-6
"""An eager PyTorch op issued from Python with autograd recording, and its launch: 6.8 us
for ``2 * x`` on a one-element tensor that requires grad (5 us without; pytorch/pytorch
issue #41383, 2020, a microbenchmark of a million calls) plus 1.3 us for
``cuLaunchKernel`` itself (meta-pytorch/tritonbench PR #1017, 2026: 1.3 us raw driver
launch; 3.0 us measured on GB200). An estimate: neither was measured on the H100 or
A100 hosts of the records, and a module's own Python (hooks, Transformer Engine's
wrappers) is not counted."""
EAGER_BACKWARD_OP_S = 1.0e-6 + 1.3e-6
"""An op the autograd engine issues in the backward: about 1 us for the C++ dispatch of a
simple op (pytorch/pytorch #41383, a maintainer's figure: ``x * x`` from C++) plus the
launch as above. An estimate, as above."""


FRAMEWORKS: dict[str, Framework] = {
    "megatron": Framework(name="megatron", overlap_grad_reduce=True, overlap_param_gather=True,
                          param_bytes=2, grad_bytes=4, gemm_impl="cublas", wgrad_into_main_grad=True,
                          zeroes_grad_buffer=True, hidden_dropout=True, attention_dropout=True, grad_nan_check=True, loss_report_all_reduce=True,
                          grad_prescale=True,
                          later_stages_one_bucket=True, host_forward_op_s=EAGER_FORWARD_OP_S,
                          host_backward_op_s=EAGER_BACKWARD_OP_S),
    "maxtext": Framework(name="maxtext", overlap_grad_reduce=True, overlap_param_gather=True,
                         param_bytes=4, grad_bytes=4, fused_elementwise=True, saves_gathered_inputs=True,
                         kernel_search=True),
    "deepspeed": Framework(name="deepspeed", overlap_grad_reduce=True, overlap_param_gather=False,
                           param_bytes=2, grad_bytes=2, gemm_impl="cublas"),
    "tensorrt-llm": Framework(name="tensorrt-llm", overlap_grad_reduce=False, overlap_param_gather=False,
                              gemm_impl="cublas", kernel_search=True),
    "vllm": Framework(name="vllm", overlap_grad_reduce=False, overlap_param_gather=False, gemm_impl="cublas",
                      kernel_search=True),
}
"""Training: Megatron-LM (GPUs), MaxText on XLA (TPUs), DeepSpeed ZeRO (GPUs). Inference on
GPUs: TensorRT-LLM, whose engine build times each GEMM's tactics and keeps the fastest, and
vLLM, whose GEMMs are cuBLAS's through PyTorch, whose heuristics are taken to find the
fastest of its kernels as ``impl=cublas`` assumes: both search each GEMM's config (a
decode step's GEMMs of a few rows then split K or take narrow tiles to fill the SMs; the
default tile that fills the fewest waves leaves a 1 x 8192 x 28672 GEMM on 32 of 132 SMs)."""
INFERENCE_DEFAULT = "tensorrt-llm"
"""The framework of a GPU prefill or decode step when none is named."""


def framework_named(name: str) -> Framework:
    if name not in FRAMEWORKS:
        raise InputError(f"unknown framework {shown(name)}; expected one of: {', '.join(FRAMEWORKS)}", field="framework")
    return FRAMEWORKS[name]


# ---------------------------------------------------------------------- checks


def microbatches(workload: Workload, layout: Layout) -> int:
    """Microbatches per data-parallel replica (gradient accumulation steps, or what
    fills the pipeline); inference steps split a replica's batch the same way."""
    per_replica, rest = divmod(workload.batch, layout.data_parallel)
    if rest or per_replica % layout.micro_batch:
        raise InputError(f"the batch of {workload.batch} sequences does not split into {layout.data_parallel} "
                         f"data-parallel replicas of whole microbatches of {layout.micro_batch}", field="batch")
    return per_replica // layout.micro_batch


def check_layout(model: ModelSpec, workload: Workload, layout: Layout) -> int:
    """Refuse a layout the model or mode cannot take, one located line each; returns the
    number of microbatches. Sizes are bounded here, before anything is built."""
    m = microbatches(workload, layout)
    if m > MAX_MICROBATCHES:
        raise InputError(f"{m} microbatches per replica; at most {MAX_MICROBATCHES}", field="micro_batch")
    _divides(model.heads, layout.tp, "tp", "attention heads")
    if model.kv_heads % layout.tp and layout.tp % model.kv_heads:
        raise InputError(f"{model.kv_heads} KV heads neither split over nor replicate evenly on TP {layout.tp}",
                         field="tp")
    _divides(model.ffn, layout.tp, "tp", "the MLP width")
    if model.moe is not None:
        _divides(model.moe.experts, layout.ep, "ep", "experts")
        _divides(layout.data_parallel * layout.cp, layout.ep, "ep", "data-parallel x context-parallel ranks")
        if layout.tp > 1 and workload.training and not layout.sequence_parallel:
            raise InputError("MoE with TP > 1 needs sequence parallelism (as Megatron-LM requires)", field="tp")
    elif layout.ep > 1:
        raise InputError(f"EP {layout.ep} on a dense model (it has no experts)", field="ep")
    chunks = layout.pp * layout.virtual_stages
    if chunks > model.layers:
        raise InputError(f"{chunks} pipeline chunks (PP x virtual stages) for {model.layers} layers", field="pp")
    if layout.virtual_stages > 1 and (layout.pp == 1 or m % layout.pp):
        raise InputError(f"the interleaved schedule needs PP > 1 and microbatches ({m}) a multiple of PP "
                         f"({layout.pp})", field="virtual_stages")
    if layout.cp > 1:
        if workload.mode == "decode":
            raise InputError("context parallelism splits a sequence's tokens; a decode step has one per "
                             "sequence", field="cp")
        _divides(workload.seq_len, 2 * layout.cp, "cp", "the sequence (two chunks per rank, load-balanced)")
    if not workload.training and (layout.fsdp > 1 or layout.recompute != "none"):
        raise InputError("FSDP and activation recompute are for training steps", field="fsdp")
    ops = m * (1 if workload.mode != "train" else 3) * math.ceil(model.layers / layout.pp) * 60
    if ops > MAX_OPS_PER_PROGRAM:
        raise InputError(f"about {ops:,} ops per pipeline stage ({m} microbatches x {model.layers} layers / PP "
                         f"{layout.pp}); at most {MAX_OPS_PER_PROGRAM:,}: use larger microbatches", field="micro_batch")
    return m


def _divides(total: int, degree: int, field: str, what: str) -> None:
    if total % degree:
        raise InputError(f"{what} ({total}) do not split evenly over {field.upper()} {degree}", field=field)


def validated(kind: type[_Strict], values: dict, source: str | None = None) -> _Strict:
    """``kind(**values)`` with a bad value as one line naming its field (``micro-batch``;
    without a ``source``, the command line names the option that gave it)."""
    try:
        return kind.model_validate(values)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        name = str(error["loc"][-1]) if error["loc"] else ""
        raise InputError(error_message(error), source=source, field=name.replace("_", "-") or None) from None
