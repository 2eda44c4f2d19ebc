"""What a record's accuracy is reported by, besides its family: the implementation that ran
and the source that published (or measured) it.

Records name their implementation in free text (``implementation``: "attention forward
(FlashAttention-2)", "torch.matmul (cuBLAS)") and, in families that model several,
``params.impl`` (``fa3``, ``cudnn``, ``cublas``, ``deepgemm``). Sources are citations
("github.com/linkedin/Liger-Kernel benchmark/data/... @0400d313 (...)"). Both are reduced
to short keys so that records of one kernel library, or of one publication, group
together across files, chips and commits.
"""

from __future__ import annotations

import re

from accelsim.validate.compare import Measurement

IMPLEMENTATION_PATTERNS: tuple[tuple[str, str], ...] = (
    # the first pattern found in the free text names the implementation (case-insensitive);
    # library names before the calls that reach them
    (r"flash-?attention-?3|\bfa3\b", "fa3"),
    (r"flash-?attention-?2|\bfa2\b", "fa2"),
    (r"flashinfer", "flashinfer"),
    (r"tileops", "tileops"),
    (r"cudnn", "cudnn"),
    (r"deepgemm", "deepgemm"),
    (r"cutlass", "cutlass"),
    (r"cublas", "cublas"),
    (r"liger", "liger"),
    (r"huggingface \(unfused", "hf-unfused"),
    (r"gpu-stream", "gpu-stream"),
    (r"jnp\.matmul|\bxla\b", "xla"),
    (r"pallas", "pallas"),
    (r"triton", "triton"),
    (r"scaled_dot_product_attention", "sdpa"),
    (r"mamf-finder|torch\.mm\b|torch\.matmul", "torch-matmul"),
    (r"huggingface/torch|\btorch\.|\btorch\b", "torch"),
)
"""Free-text implementation -> key. ``torch-matmul``: PyTorch's matmul where the source does
not name the library it reached (cuBLAS on NVIDIA, hipBLASLt on AMD); ``torch``: PyTorch's
own kernels (eager norms, elementwise, copies)."""

MAX_KEY_CHARS = 40


def implementation_key(m: Measurement) -> str:
    """``params.impl`` where the record has one, else the first of
    :data:`IMPLEMENTATION_PATTERNS` found in ``implementation``, else that text in short
    (lower case, up to its first parenthesis or comma)."""
    impl = m.params.get("impl")
    if isinstance(impl, str) and impl.strip():
        return impl.strip()
    text = m.implementation.lower()
    for pattern, key in IMPLEMENTATION_PATTERNS:
        if re.search(pattern, text):
            return key
    return _short(re.split(r"[(,;]", text)[0]) or "unnamed"


def source_key(m: Measurement) -> str:
    """The publication or repository a record comes from: ``owner/repo`` of a GitHub
    citation (``#N`` for a pull request), an arXiv id with the words before it, else the
    citation up to its first parenthesis, comma or semicolon."""
    text = " ".join(m.source.split())
    repo = re.search(r"github\.com/([\w.-]+/[\w.-]+)", text)
    if repo:
        pull = re.search(r"pull request #(\d+)", text)
        return repo.group(1) + (f" #{pull.group(1)}" if pull else "")
    arxiv = re.search(r"arXiv:\s*(\d{4}\.\d{4,5})", text)
    if arxiv:
        return f"{_short(re.split(r'[(,;]', text)[0])} (arXiv:{arxiv.group(1)})"
    return _short(re.split(r"[(,;]", text)[0]) or "unsourced"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_KEY_CHARS else text[:MAX_KEY_CHARS - 3].rstrip() + "..."
