"""What a GEMM implementation provides to the ``gemm`` family, and the Hopper/Blackwell
kernel shape most of them share (warp-specialized, TMA-fed, persistent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelsim.arch.model import Chip, GpuChip
from accelsim.trace.kernel import Execution, KernelTrace

Config = dict[str, Any]
Params = dict[str, Any]


@dataclass(frozen=True)
class GemmImpl:
    """One implementation: how it picks its config, which configs an autotuner could pick
    from, and the trace of one config."""

    name: str
    description: str
    default_config: Callable[[Params, Chip], Config]
    config_space: Callable[[Params, Chip], list[Config]]
    build: Callable[[Params, Config, Chip], KernelTrace]
    check: Callable[[Params, Config, Chip], None]
    quick_bound: Callable[[Params, Config, Chip], float] | None = None
    """A bound no simulation of a config goes below, from the config alone (before its
    trace is built), for ``config=auto`` to pass over configs without building them; None: 0."""


def warp_specialized(chip: Chip) -> bool:
    """Whether the chip runs the Hopper-style kernels: an asynchronous MMA fed from shared
    memory by a TMA (``matrix_unit.asynchronous`` and ``local_memory.bulk_copy_latency``)."""
    return isinstance(chip, GpuChip) and chip.matrix.asynchronous and chip.local.bulk_copy_latency_s > 0


def with_execution(trace: KernelTrace, execution: Execution) -> KernelTrace:
    """``trace`` run with ``execution`` (warp specialization, TMA loads, persistent units)."""
    kernel = trace.kernel.model_copy(update={"execution": execution})
    return trace.model_copy(update={"kernel": kernel})
