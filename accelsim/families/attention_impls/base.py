"""What an attention implementation tells the attention family: where it runs, its tiles
and launch (default config and the configs ``config=auto`` searches), and how its
consumer instruction streams schedule MMAs against the softmax.

The family builds the trace (:mod:`accelsim.families.attention`); an implementation only
chooses among the mechanisms the engine has (docs/kernels-attention.md lists them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, GpuChip
from accelsim.trace.kernel import KernelTrace, check_programs


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
    pipelined_backward: bool = False
    """Whether its fused backward's MMAs are issued a step ahead of the warps computing P and dS,
    so the two overlap (:meth:`backward`)."""

    def execution(self, warps: int) -> dict[str, Any] | None:
        """The trace's ``kernel.execution`` for a program of ``warps`` warps: the consumer
        warpgroups beside the producer, which loads by TMA; without a producer, the warpgroups
        of a program whose warps share one chain; None where neither (each warpgroup a stream)."""
        if not self.producer_warps and self.consumer_chains == "separate":
            return None
        consumers = max(1, (warps - self.producer_warps) // WARPGROUP_WARPS)
        return {"loads": "tma" if self.producer_warps else "threads", "consumers": consumers,
                "consumer_chains": self.consumer_chains}

    def backward(self) -> "Schedule":
        """This schedule in a fused backward's main loop, where barriers over all the program's
        MMA warps separate each iteration's phases: the S and dP MMAs, then P and dS on the CUDA
        cores, then dS (and P) stored to shared memory for the other warps' MMAs to read, then the
        dV, dK and dQ MMAs (FlashAttention-2's ``flash_bwd_kernel.h``: ``__syncthreads()`` between
        the stores of ``sP``/``sdS`` and the GEMMs that read them; FlashAttention-3's
        ``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp``, ``bwd_step``: ``NamedBarrier::sync`` over
        ``NumMmaThreads`` before the dV and the dQ GEMMs). So the warps run in step and no warp's
        CUDA-core work overlaps another's MMAs: one chain per program, its FP32 work on it (no
        iteration is software-pipelined against the next, as FA3's forward is).

        Unless ``pipelined_backward``: a Blackwell backward whose MMAs one thread issues a step
        ahead, the next iteration's S and dP between this one's dK and dQ (FlashAttention-4's
        ``flash_bwd_sm100.py``, ``mma``: "S.T (next), dK (cur), dP.T (next), dQ (cur), dV (next)"),
        all accumulating in tensor memory, so the compute warps' P and dS of one iteration run
        beside the MMAs of another: the schedule stays as the forward's."""
        if self.pipelined_backward:
            return replace(self, overlapped_vector=False)
        return replace(self, overlapped_vector=False, consumer_chains="shared")


@dataclass(frozen=True)
class TileSchedule:
    """A fused forward's tiles as a tile scheduler runs them.

    ``order``: per launch position, the tile's q block and its ``batch * heads + head``
    (None: the grid's order, q blocks fastest, then heads, then batches). ``persistent_ctas``:
    CTAs that walk the tiles in that order, a free one taking the next, so a tile after the first
    ``persistent_ctas`` finds its CTA launched (the trace's ``kernel.execution.persistent_ctas``);
    None: one CTA per tile.
    ``epilogue``: whether a persistent CTA's consumers wait for a tile's store before the next
    tile's MMAs (``exposed``) or issue it and go on (``overlapped``): the trace's
    ``kernel.execution.epilogue``. ``next_loads``: whether such a tile's first loads were
    prefetched while the tile before computed (``prefetched``) or are issued only after its store
    (``after_store``): the trace's ``kernel.execution.next_loads``."""

    order: tuple[np.ndarray, np.ndarray] | None = None
    persistent_ctas: int | None = None
    epilogue: str = "exposed"
    next_loads: str = "prefetched"


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
    blackwell_schedule: Schedule | None = None
    """How its Blackwell kernels schedule the work, where that differs from ``schedule``."""
    hopper_schedule: Schedule | None = None
    """How its Hopper kernels schedule the work, where that differs from ``schedule``."""
    forward_tiles: Callable[[dict[str, Any], int, Chip], "TileSchedule"] | None = None
    """How a tile scheduler runs its fused forward's tiles: ``forward_tiles(problem, block_m,
    chip)`` (None: one CTA per tile, in the grid's order)."""
    backward_staged: Callable[[int], tuple[str, ...]] = lambda head_dim: ("P", "dS")
    """What its fused backward's MMA warps store to shared memory each iteration for the next MMAs
    to read, by head dim: ``P`` and ``dS`` ([q rows, keys], the input type), ``dQ`` (the fp32
    [q rows, head dim] partial a producer warp reduce-adds to global memory by TMA). Default: P
    and dS, FlashAttention-2's ``sP`` and ``sdS`` (its dQ is added from registers by atomics)."""
    blackwell_backward_staged: Callable[[int], tuple[str, ...]] | None = None
    """What its Blackwell backward stores to shared memory, where that differs from
    ``backward_staged``."""
    tensor_memory_operands: bool = False
    """Whether its Blackwell kernels leave P, and in the backward dS, in tensor memory for the MMAs
    that take them as their A operand (the forward's PV, the backward's dV and dK), which then read
    no shared memory for them (``Compute.a_in_tensor_memory``)."""
    fp8_p_relayout: bool = False
    """Whether its fp8 forward moves P between threads before the PV MMA (warp shuffles and byte
    permutes: ``attention.FP8_RELAYOUT_FLOPS_PER_SCORE``). Triton's lowering does
    (``convertMMAV3To8BitsDotOperand``); FlashAttention-3 with V row-major, its default, swaps
    registers within a thread (``permute_Cregs_fp8``: a static permutation, no instructions) and
    shuffles only for a column-major V (``permute_Aregs_fp8``)."""
    fp8_v_transpose: bool = False
    """Whether its fp8 forward transposes each V block in shared memory before the PV MMA reads it
    (an 8-bit wgmma takes its B operand K-major only: PTX ISA, wgmma smem layouts; FlashAttention-3's
    ``load_fp8``: the producer warpgroup's ``do_transpose_V``, LDSM then STSM into ``smem_v_out``).
    The steady state's transposes are the producer's, beside the consumers' MMAs; a tile's first
    is on the consumers' way (``attention.V_TRANSPOSE_PASSES``). Its fp8 backward transposes
    likewise, on the chain, Q's and dO's blocks each iteration and K's once
    (``attention._bwd_transposed_tensors``). Hopper only: Blackwell's ``tcgen05.mma`` is not
    modelled as needing it."""
    exp2_emulated: Callable[[dict[str, Any], int, Chip], float] | None = None
    """The share of its forward's exps computed by a polynomial on the FP32 pipes instead of the
    SFUs, which bound a Blackwell forward whose MMAs run at twice Hopper's rate:
    ``exp2_emulated(problem, block_n, chip)`` (``block_n``: the keys of a row a softmax thread
    holds), taken off the SFUs and charged at ``attention.EX2_EMULATION_FLOPS`` each (None: none)."""
    build: Callable[[dict[str, Any], dict[str, Any], Chip], KernelTrace] | None = None
    """Its own trace builder, for kernels unlike the family's fused flash-attention one (PyTorch
    eager's separate kernels, FlashMLA's scheduled decode): ``build(problem, params, chip)``.
    None: the family builds the trace from the implementation's config and schedule."""


    def staged_for(self, head_dim: int, chip: Chip) -> tuple[str, ...]:
        """What its fused backward stores to shared memory each iteration on ``chip``."""
        if self.blackwell_backward_staged and is_blackwell(chip):
            return self.blackwell_backward_staged(head_dim)
        return self.backward_staged(head_dim)

    def schedule_for(self, chip: Chip) -> Schedule:
        """Its schedule on ``chip``."""
        if self.blackwell_schedule and is_blackwell(chip):
            return self.blackwell_schedule
        return self.hopper_schedule if self.hopper_schedule and is_hopper(chip) else self.schedule


def gpu_only(chip: Chip) -> str | None:
    return None if isinstance(chip, GpuChip) else "a GPU kernel"


def hopper_only(chip: Chip) -> str | None:
    return None if is_hopper(chip) else "a Hopper (sm_90) kernel: warpgroup MMAs and TMA"


def nvidia_only(chip: Chip) -> str | None:
    return None if isinstance(chip, GpuChip) and chip.vendor == "nvidia" else "an NVIDIA GPU kernel"


def config(block_m: int, block_n: int, num_stages: int, num_warps: int, split_kv: int = 1) -> dict[str, int]:
    return {"block_m": block_m, "block_n": block_n, "num_stages": num_stages, "num_warps": num_warps,
            "split_kv": split_kv}


class Launches:
    """Kernels launched one after another, built into one trace (``kernel_starts``): PyTorch
    eager's separate kernels, or a library's main kernel and its combine kernel."""

    def __init__(self) -> None:
        self.templates: list[dict] = []
        self.template_of: list[np.ndarray] = []
        self.vars: list[dict[str, np.ndarray]] = []
        self.resources: list[dict] = []
        self.tensors: dict[str, dict] = {}
        self.execution: dict | None = None

    def tensor(self, name: str, elements: int, dtype: str) -> str:
        self.tensors.setdefault(name, {"shape": [max(1, int(elements))], "dtype": dtype})
        return name

    def add(self, template: dict, programs: int, variables: dict[str, np.ndarray], resources: dict) -> None:
        """A kernel of ``programs`` programs that all run ``template``."""
        self.add_kernel([template], np.zeros(programs, dtype=np.int64), variables, resources)

    def add_kernel(self, templates: list[dict], choice: np.ndarray, variables: dict[str, np.ndarray],
                   resources: dict) -> None:
        """A kernel whose program ``i`` runs ``templates[choice[i]]``."""
        kernel = len(self.resources)
        self.template_of.append(np.asarray(choice, dtype=np.int64) + len(self.templates))
        self.templates += [{**t, "name": f"k{kernel}_{t['name']}"} for t in templates]
        self.vars.append(variables)
        self.resources.append(resources)

    def trace(self, name: str, metadata: dict) -> KernelTrace:
        counts = [len(t) for t in self.template_of]
        check_programs(sum(counts))
        names = sorted({n for v in self.vars for n in v})
        program_vars = {n: np.concatenate([v.get(n, np.zeros(c, dtype=np.int64)) for v, c in zip(self.vars, counts)])
                        .tolist() for n in names}
        starts = np.cumsum(counts)[:-1].tolist()
        return KernelTrace.model_validate({
            "schema_version": 1,
            "kernel": {"name": name, "grid": [sum(counts)], "resources": self.resources[0],
                       "pipeline_depth": 2, "kernel_starts": starts or None,
                       **({"kernel_resources": self.resources[1:]} if starts else {}),
                       **({"execution": self.execution} if self.execution else {})},
            "tensors": self.tensors,
            "templates": self.templates,
            "program_template": np.concatenate(self.template_of).tolist(),
            "program_vars": program_vars,
            "metadata": metadata,
        })
