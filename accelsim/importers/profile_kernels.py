"""Which kernel family and implementation a profiled kernel is, from its name: one table of
documented rules (:data:`RULES`, shown in ``docs/import-profile.md``), first match wins.

A rule says the kernel's *class* (a kernel family the simulator models, ``gemm``,
``attention``, ``layernorm``, ``rmsnorm``, ``softmax``, ``elementwise``, ``copy``; or
``collective`` for communication kernels, which a step comparison counts as
communication), the implementation in the names the families use (``params.impl``:
gemm ``cublas``, ``cutlass``, ``triton``, ``deepgemm``; attention ``fa2``, ``fa3``,
``cudnn``, ``triton``, ``flashinfer``; norms ``torch``, ``liger``, ``triton``) and its
*role*: ``main`` (the family's kernel: it becomes a measurement record where the
launching op's shapes give the family's parameters, :mod:`accelsim.importers.profile_params`)
or ``part`` (a helper launched beside it: a split-K reduction, a backward's
preprocessing, a split-KV combine), which the family models inside its call and which
gets no record of its own. A kernel no rule matches is *unmapped*: it stays in the
measured step, replayed as measured, and the import lists it with its share of the time.

Names are matched as profilers print them: CUPTI's demangled names (``void
flash::flash_fwd_kernel<...>(...)``), cuBLAS's generated names (``sm90_xmma_gemm_...``,
``nvjet_tst_...``), Triton's function names (``triton_poi_fused_add_0``, ``_attn_fwd``),
XLA's fusion names (``loop_add_fusion``) and, for a CPU run, the ATen op names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    pattern: str
    kernel_class: str
    impl: str | None
    role: str
    why: str
    """What the names are and where they come from (the docs table shows it)."""


@dataclass(frozen=True)
class Mapped:
    """A kernel's class, implementation and role, and the rule that said so."""

    kernel_class: str
    impl: str | None
    role: str
    rule: int
    """Index in :data:`RULES`."""


RULES: tuple[Rule, ...] = (
    # communication
    Rule(r"^(void )?nccl(Dev)?Kernel|^ncclKernel", "collective", "nccl", "main",
         "NCCL's collective kernels (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclKernel_...)"),
    Rule(r"cross_device_reduce|allreduce_fusion_kernel|[Aa]llreduce[A-Z_]\w*[Kk]ernel|all_reduce_kernel", "collective",
         "custom", "main", "custom all-reduce kernels (vLLM's cross_device_reduce_1stage, FlashInfer's "
         "allreduce_fusion_kernel_oneshot_lamport)"),
    # attention
    Rule(r"FlashAttnBwdPreprocess|FlashAttnBwdPostprocess|flash_bwd_(dot_do_o|convert_dq|convert_dkv|clear_dkvaccum)"
         r"|flash_fwd_splitkv_combine|prepare_varlen_num_blocks", "attention", None, "part",
         "FlashAttention's helpers: the backward's dO.O row sums and dQ conversion, split-KV's combine, FA3's "
         "flash::prepare_varlen_num_blocks_kernel"),
    Rule(r"FlashAttn(Fwd|Bwd)Sm90|FlashAttn(Fwd|Bwd)Sm100|flash::enable_sm90", "attention", "fa3", "main",
         "FlashAttention-3 (cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>)"),
    Rule(r"flash_fwd|flash_bwd_dq_dk_dv|pytorch_flash::|flash::flash_", "attention", "fa2", "main",
         "FlashAttention-2 (flash::flash_fwd_kernel<Flash_fwd_kernel_traits<...>>, PyTorch's pytorch_flash:: copy, "
         "flash_fwd_splitkv_kernel, flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel)"),
    Rule(r"cudnn\w*sdpa|sdpa\w*cudnn|cudnn_generated_fort_native_sdpa", "attention", "cudnn", "main",
         "cuDNN's fused attention (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_...)"),
    Rule(r"flashinfer::\w*(Prefill|Decode|Attention)", "attention", "flashinfer", "main",
         "FlashInfer's prefill and decode kernels (flashinfer::BatchPrefillWithPagedKVCacheKernel<...>)"),
    Rule(r"fmha_cutlass[FB]|AttentionKernel<|attention_kernel_batched", "attention", "mem-efficient", "main",
         "PyTorch's memory-efficient attention (xFormers' CUTLASS kernels, fmha_cutlassF_bf16_aligned_64x64_rf_sm80): "
         "no model of this implementation, replayed as measured"),
    Rule(r"^_?attn_fwd|^_?attn_bwd|^_fwd_kernel$|^_bwd_kernel$|^triton_\w*flash_attention|^triton_tem_fused_\w*flex",
         "attention", "triton", "main", "Triton attention kernels by their function name (the tutorial's _attn_fwd, "
         "inductor's flex attention templates)"),
    # GEMM
    Rule(r"splitKreduce|splitk_reduce|reduce_splitk", "gemm", None, "part",
         "cuBLAS's split-K reduction, launched after a split-K GEMM"),
    Rule(r"deep_gemm|fp8_gemm_kernel|sm90_fp8_gemm_1d2d|sm100_fp8_gemm_1d1d", "gemm", "deepgemm", "main",
         "DeepGEMM's FP8 GEMMs (deep_gemm::fp8_gemm_kernel<...>, sm90_fp8_gemm_1d2d_impl)"),
    Rule(r"^nvjet_|sm\d+_xmma_gemm|^(void )?(ampere|volta|turing|hopper|sm\d+)_\w*gemm|_cublas$|cublasLt|gemmSN|gemmk1",
         "gemm", "cublas", "main",
         "cuBLAS and cuBLASLt kernels (Hopper: sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize..._cublas; cuBLAS "
         "12.8+: nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT; Ampere: ampere_bf16_s16816gemm_...)"),
    Rule(r"cutlass3x_|cutlass_\d+_\w*gemm|cutlass::Kernel2?<\w*gemm|GemmUniversal|cutlass\w*[Gg]emm", "gemm", "cutlass",
         "main", "CUTLASS GEMMs (cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_..._warpspecialized_cooperative, "
         "cutlass_80_tensorop_bf16_s16816gemm_...); a CUTLASS kernel an ATen GEMM op launched is cuBLAS's own "
         "and counts as cublas"),
    Rule(r"^triton_tem_fused_(mm|addmm|bmm|baddbmm)|^(triton_)?\w*matmul_kernel|^triton_gemm|^gemm_fusion", "gemm",
         "triton", "main", "Triton GEMMs: inductor's templates (triton_tem_fused_mm_0), user kernels named "
         "matmul_kernel, XLA's Triton GEMM fusions (triton_gemm_dot, gemm_fusion_dot)"),
    # norms and softmax
    Rule(r"_rms_norm_forward_kernel|_layer_norm_forward_kernel", "norm", "liger", "main",
         "Liger-Kernel's Triton norms (liger_kernel/ops/rms_norm.py _rms_norm_forward_kernel, layer_norm.py)"),
    Rule(r"layer_norm_grad|GammaBetaBackward|_rms_norm_backward|_layer_norm_backward|LayerNormBackward",
         "norm", None, "part", "norm backward kernels (the families model forward norms only)"),
    Rule(r"vectorized_layer_norm_kernel|layer_norm_kernel|LayerNormForward|RowwiseMomentsCUDAKernel|"
         r"LayerNormForwardCUDAKernel", "norm", "torch", "main",
         "PyTorch's eager layer norm (at::native::vectorized_layer_norm_kernel<...>); an rms_norm op's launch is rmsnorm"),
    Rule(r"rms_?norm\w*[Kk]ernel|RMSNorm\w*Kernel|rmsnorm", "rmsnorm", None, "main",
         "fused RMS norms of serving libraries (vLLM's rms_norm_kernel and fused_add_rms_norm_kernel, FlashInfer's "
         "RMSNormKernel): implementations the family's Triton kernel stands for"),
    Rule(r"softmax_warp_backward|SoftMaxBackward", "softmax", None, "part", "softmax backward kernels"),
    Rule(r"softmax_warp_forward|cunn_SoftMaxForward|SoftMaxForward", "softmax", "torch", "main",
         "PyTorch's eager softmax ((anonymous namespace)::softmax_warp_forward<...>, cunn_SoftMaxForward<...>)"),
    Rule(r"^triton_\w*_fused_\w*(native_layer_norm|layer_norm)", "layernorm", "triton", "main",
         "inductor's fused layer norms (triton_per_fused_native_layer_norm_0)"),
    Rule(r"^triton_\w*_fused_\w*(_softmax|softmax)", "softmax", "triton", "main",
         "inductor's fused softmax (triton_per_fused__softmax_0)"),
    Rule(r"^triton_\w*_fused_\w*rsqrt", "rmsnorm", "triton", "main",
         "inductor's fused RMS norms (triton_per_fused_add_mean_mul_pow_rsqrt_0)"),
    # copies, fills, elementwise
    Rule(r"^Memcpy DtoD|^Memcpy PtoP", "copy", "torch", "main", "device-to-device copies (CUPTI's Memcpy DtoD)"),
    Rule(r"^Memcpy", "host-copy", None, "main", "copies to and from the host (Memcpy HtoD / DtoH): PCIe, not modelled"),
    Rule(r"^Memset", "elementwise", "torch", "main", "CUPTI's Memset (Device): a fill of the bytes"),
    Rule(r"FillFunctor|fill_kernel", "elementwise", "torch", "main",
         "PyTorch's fills (vectorized_elementwise_kernel<4, at::native::FillFunctor<...>>)"),
    Rule(r"direct_copy_kernel|CatArrayBatchedCopy", "copy", "torch", "main",
         "PyTorch's copies and concatenations (direct_copy_kernel_cuda, CatArrayBatchedCopy)"),
    Rule(r"vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel", "elementwise", "torch", "main",
         "PyTorch's eager elementwise kernels (at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<...>>)"),
    Rule(r"^triton_poi_", "elementwise", "triton", "main",
         "inductor's pointwise kernels (triton_poi_fused_add_mul_0)"),
    Rule(r"^(loop_\w*fusion|wrapped_\w+)", "elementwise", "xla", "main",
         "XLA's loop fusions (loop_add_fusion, wrapped_convert): elementwise"),
    # host ops of a CPU run (no device work in the trace)
    Rule(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm)$", "gemm", None, "main", "ATen GEMM ops (a CPU run)"),
    Rule(r"^aten::(scaled_dot_product_attention|_scaled_dot_product_\w*attention\w*)$", "attention", None, "main",
         "ATen attention ops (a CPU run)"),
    Rule(r"^aten::(layer_norm|native_layer_norm|rms_norm|_fused_rms_norm)$", "norm", None, "main",
         "ATen norm ops (a CPU run)"),
    Rule(r"^aten::(softmax|_softmax)$", "softmax", None, "main", "ATen softmax ops (a CPU run)"),
)
"""The table: first match of ``pattern`` (a regular expression, searched in the name) wins.
``norm`` is rmsnorm where the name or the launching op says so (``aten::rms_norm``), else layernorm."""

_COMPILED = tuple(re.compile(rule.pattern) for rule in RULES)
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_scaled_mm")
RMS_NORM_OPS = ("aten::rms_norm", "aten::_fused_rms_norm")


def classify(name: str, op_names: tuple[str, ...] = ()) -> Mapped | None:
    """The rule a kernel ``name`` matches, refined by the names of the ops that launched it
    (innermost first): a norm whose name or launching op says RMS is ``rmsnorm``; a CUTLASS kernel
    an ATen GEMM op launched is cuBLAS's."""
    for index, (rule, pattern) in enumerate(zip(RULES, _COMPILED)):
        if pattern.search(name):
            kernel_class, impl = rule.kernel_class, rule.impl
            if kernel_class == "norm":
                rms = "rms" in name.lower() or any(op in RMS_NORM_OPS for op in op_names)
                kernel_class = "rmsnorm" if rms else "layernorm"
            if impl == "cutlass" and any(op in GEMM_OPS for op in op_names):
                impl = "cublas"
            return Mapped(kernel_class, impl, rule.role, index)
    return None


def short_name(name: str) -> str:
    """A kernel's name without its return type, namespaces, template arguments and
    parameters (``void at::native::vectorized_elementwise_kernel<4, ...>(...)`` ->
    ``vectorized_elementwise_kernel``), for tables; the full name stays in the records."""
    text = name[5:] if name.startswith("void ") else name
    depth, out = 0, []
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip() or text
    return base.rsplit("::", 1)[-1] if "::" in base and not base.startswith("aten::") else base
