"""Pallas (Mosaic) kernels in TPU HLO: ``custom-call``s to ``tpu_custom_call``.

The kernel body is serialized MLIR (``custom_call_config.body``, base64) that this
importer does not read. What it does read is the estimate the kernel's author may give
``pallas_call(..., cost_estimate=pl.CostEstimate(flops, transcendentals,
bytes_accessed))``: JAX writes it into the same backend config as
``custom_call_config.cost_estimate`` (XLA's scheduler reads it too). With one, the call
is priced as a roofline op on its estimate: ``flops`` on the matrix unit at the dtype of
its largest floating-point operand, ``transcendentals`` on the vector unit, and
``bytes_accessed`` as its HBM traffic (the output's bytes written, the rest read), which
can be less than its operands (a paged-attention kernel reads only the pages it uses) or
more (blocks re-read). Without one the call stays an unknown custom call priced by its
operand and output bytes alone. ``remote_bytes_transferred`` (a kernel doing its own
remote DMAs) is counted, not modelled as communication.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from accelsim.importers.hlo_text import Shape

TPU_KERNEL_TARGET = "tpu_custom_call"
_FLOATS = ("bf16", "f16", "f32", "f64", "f8e4m3fn", "f8e5m2", "f8e4m3b11fnuz", "f8e4m3fnuz", "f8e5m2fnuz")


@dataclass(frozen=True)
class KernelEstimate:
    flops: float
    transcendentals: float
    bytes_accessed: float
    remote_bytes: float
    dtype: str
    """HLO element type the flops run at: the largest floating-point operand's."""


def kernel_estimate(target: str, backend_config: str, operands: list[Shape]) -> KernelEstimate | None:
    """The author's cost estimate of a Pallas TPU kernel call; ``None`` when the call is
    not one, carries no estimate, or the estimate is not four finite counts >= 0."""
    if target != TPU_KERNEL_TARGET or "cost_estimate" not in backend_config:
        return None
    try:
        estimate = json.loads(backend_config)["custom_call_config"]["cost_estimate"]
        values = [float(estimate.get(key, 0)) for key in
                  ("flops", "transcendentals", "bytes_accessed", "remote_bytes_transferred")]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all(math.isfinite(v) and v >= 0 for v in values):
        return None
    floats = [s for s in operands if s.dtype in _FLOATS]
    dtype = max(floats, key=lambda s: s.size_bytes).dtype if floats else (operands[0].dtype if operands else "bf16")
    return KernelEstimate(*values, dtype=dtype)
