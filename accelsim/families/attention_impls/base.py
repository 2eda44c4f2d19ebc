"""What an attention implementation tells the attention family: where it runs, its tiles
and launch (default config and the configs ``config=auto`` searches), and how its
consumer instruction streams schedule MMAs against the softmax.

The family builds the trace (:mod:`accelsim.families.attention`); an implementation only
chooses among the mechanisms the engine has (docs/kernels-attention.md lists them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelsim.arch.model import Chip, GpuChip


def is_hopper(chip: Chip) -> bool:
    """An NVIDIA SM with warpgroup MMAs (wgmma, asynchronous, accumulators in registers)
    and no tensor memory: Hopper (sm_90)."""
    return chip.vendor == "nvidia" and chip.matrix.asynchronous and chip.local.tensor_memory_bytes == 0


def is_blackwell(chip: Chip) -> bool:
    """An NVIDIA SM with tensor memory (tcgen05): Blackwell (sm_100)."""
    return chip.vendor == "nvidia" and chip.local.tensor_memory_bytes > 0


WARPGROUP_WARPS = 4
"""Warps of a warpgroup, the unit that issues a Hopper warpgroup MMA (PTX ISA, ``wgmma``)."""


@dataclass(frozen=True)
class Schedule:
    """How one program's consumer streams run an iteration's MMAs and softmax.

    ``chained``: the MMAs wait on the softmax in one instruction stream (QK^T, softmax,
    then PV, each waiting for the last: ``matrix_unit.chained_efficiency``); False: the
    MMAs are issued asynchronously, as a GEMM's are. ``overlapped_vector``: the softmax's
    FP32 arithmetic runs in the shadow of the MMAs (another warpgroup's, or the next
    tile's) and stays off the stream's dependency chain; its exps (MUFU) stay on it.
    ``producer_warps``: warps that only issue loads (a warp-specialized producer, by TMA);
    the other warps are the consumer warpgroups (the trace's ``kernel.execution``).
    ``consumer_chains``: ``shared`` where the consumers take turns (one dependency chain per
    program), ``separate`` where each is a stream of its own."""

    chained: bool = True
    overlapped_vector: bool = False
    producer_warps: int = 0
    consumer_chains: str = "separate"

    def execution(self, warps: int) -> dict[str, Any] | None:
        """The trace's ``kernel.execution`` for a program of ``warps`` warps: the consumer
        warpgroups beside the producer, which loads by TMA; None without warp specialization."""
        if not self.producer_warps:
            return None
        consumers = max(1, (warps - self.producer_warps) // WARPGROUP_WARPS)
        return {"loads": "tma", "consumers": consumers, "consumer_chains": self.consumer_chains}


@dataclass(frozen=True)
class Impl:
    """One attention implementation (``--param impl=NAME``)."""

    name: str
    summary: str
    """One line for the family's help."""
    unavailable: Callable[[Chip], str | None]
    """None where it runs on ``chip``, else why not."""
    default_config: Callable[[dict[str, Any], Chip], dict[str, Any]]
    """Its launch for a resolved problem (``attention._problem``)."""
    config_space: Callable[[dict[str, Any], Chip], list[dict[str, Any]]] | None = None
    """Configs ``config=auto`` searches (None: its default launch only, as a library picks)."""
    schedule: Schedule = Schedule()
    fused: bool = True
    """False: separate kernels (PyTorch eager), built by :mod:`.unfused`."""


def gpu_only(chip: Chip) -> str | None:
    return None if isinstance(chip, GpuChip) else "a GPU kernel"


def hopper_only(chip: Chip) -> str | None:
    return None if is_hopper(chip) else "a Hopper (sm_90) kernel: warpgroup MMAs and TMA"


def nvidia_only(chip: Chip) -> str | None:
    return None if isinstance(chip, GpuChip) and chip.vendor == "nvidia" else "an NVIDIA GPU kernel"


def config(block_m: int, block_n: int, num_stages: int, num_warps: int, split_kv: int = 1) -> dict[str, int]:
    return {"block_m": block_m, "block_n": block_n, "num_stages": num_stages, "num_warps": num_warps,
            "split_kv": split_kv}
