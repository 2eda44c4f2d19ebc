"""Attention implementations, one module each (``--param impl=NAME``): what each models and
leaves out is in its module docstring; docs/kernels-attention.md compares them."""

from __future__ import annotations

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families.attention_impls import cudnn, decode, fa2, fa3, flashinfer, flashmla, pallas, triton, unfused
from accelsim.families.attention_impls.base import Impl, is_blackwell, is_hopper

IMPLS: dict[str, Impl] = {impl.name: impl for impl in (
    fa3.IMPL, cudnn.IMPL, fa2.IMPL, triton.IMPL, unfused.IMPL, decode.FLASH_DECODING, flashinfer.IMPL, flashmla.IMPL,
    pallas.IMPL)}

DEFAULT = "default"


def default_impl(chip: Chip) -> str:
    """The implementation most users run on ``chip``: on Hopper FlashAttention-3 (vLLM's and
    SGLang's default attention backend there, and TransformerEngine's first choice when it is
    installed); on Blackwell cuDNN (FA3 does not run there; TransformerEngine and PyTorch's
    SDPA take cuDNN's fused kernels); on other NVIDIA GPUs FlashAttention-2 (what PyTorch's
    SDPA flash backend and Hugging Face's ``flash_attention_2`` run); elsewhere the Triton
    kernel (AMD) or Pallas (TPU)."""
    if isinstance(chip, TpuChip):
        return "pallas"
    if is_hopper(chip):
        return "fa3"
    if is_blackwell(chip):
        return "cudnn"
    return "fa2" if chip.vendor == "nvidia" else "triton"


def resolve(name: str, chip: Chip) -> Impl:
    """The implementation ``name`` (``default``: :func:`default_impl`), refused where it does
    not run on ``chip``."""
    impl = IMPLS[default_impl(chip) if name == DEFAULT else name]
    reason = impl.unavailable(chip)
    if reason is not None:
        raise InputError(f"impl={impl.name} is {reason}; {chip.name} runs: "
                         f"{', '.join(n for n, i in IMPLS.items() if i.unavailable(chip) is None)}",
                         field="params.impl")
    return impl
