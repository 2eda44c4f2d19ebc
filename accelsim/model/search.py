"""The fastest layout that fits: enumerate layouts of a model on a system, drop those the
model cannot take or whose memory exceeds HBM, order the rest by a cheap bound, and
replay the first ``limit`` of them (docs/model.md, "Layout sweep").

The bound is the compute each device must do at the chip's dense peak (model FLOPs plus
recompute), stretched by the pipeline's fill and drain (``1 + (PP - 1) / (v x
microbatches)``): it orders layouts by what they cost before communication, so the replays
go to the layouts that can win. The replay then prices communication and overlap.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from accelsim.arch.model import Arch, Cluster, Node
from accelsim.errors import InputError
from accelsim.model.flops import hardware_flops
from accelsim.model.layout import Framework, Layout, Workload, check_layout
from accelsim.model.spec import ModelSpec
from accelsim.model.step import ModelStep, plan_step, run_step, step_trace
from accelsim.results import ModelStepResult
from accelsim.system.costs import CostModel
from accelsim.system.replay import ReplayOptions

MAX_CANDIDATES = 4096
"""Layouts enumerated at most (checked before any is planned)."""
MAX_REPLAYS = 256


@dataclass(frozen=True, kw_only=True)
class Candidate:
    layout: Layout
    fits: bool
    memory_bytes: float
    bound_s: float
    """Compute at peak, stretched by the bubble: the order layouts are replayed in."""
    result: ModelStepResult | None = None
    error: str = ""


def _powers_of_two(limit: int) -> list[int]:
    return [1 << i for i in range(limit.bit_length()) if 1 << i <= limit]


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def scale_up_size(system: Arch) -> int:
    """Devices one tensor-parallel group may span: a node's GPUs, or a whole TPU slice's
    innermost axis products (every power of two up to 16)."""
    if isinstance(system, Cluster):
        return system.node.gpus
    if isinstance(system, Node):
        return system.gpus
    return 16


def enumerate_layouts(model: ModelSpec, workload: Workload, devices: int, tp_limit: int,
                      framework: Framework) -> list[Layout]:
    """Every layout of ``devices`` the sweep considers (before checks): TP up to the
    scale-up domain, PP dividing the rest (with 1, 2 or 4 virtual stages), CP for long
    sequences, EP for MoE, the rest data parallel (FSDP under MaxText, else ZeRO-1 DP),
    microbatches of 1, 2 or 4 sequences, each recompute policy (training)."""
    out: list[Layout] = []
    cps = [1, 2, 4, 8] if workload.seq_len >= 32768 and workload.mode != "decode" else [1]
    recomputes = ["none", "selective", "full"] if workload.training else ["none"]
    for tp in _powers_of_two(tp_limit):
        for cp in cps:
            if devices % (tp * cp):
                continue
            for pp in _divisors(devices // (tp * cp), 64):
                data = devices // (tp * cp * pp)
                eps = _divisors(data * cp, model.moe.experts) if model.moe else [1]
                virtuals = [1, 2, 4] if pp > 1 and workload.training else [1]
                for ep, v, mb, rc in itertools.product(eps, virtuals, [1, 2, 4], recomputes):
                    fsdp, dp = (data, 1) if framework.name == "maxtext" and workload.training else (1, data)
                    out.append(Layout(tp=tp, pp=pp, cp=cp, dp=dp, fsdp=fsdp, ep=ep, virtual_stages=v,
                                      micro_batch=mb, recompute=rc))
                    if len(out) > MAX_CANDIDATES:
                        raise InputError(f"more than {MAX_CANDIDATES} layouts to consider for {devices} devices",
                                         field="devices")
    return out


def plan_candidates(model: ModelSpec, workload: Workload, system: Arch, framework: Framework,
                    devices: int) -> list[tuple[Candidate, ModelStep | None]]:
    """Every enumerated layout the model and mode take, with its memory and bound."""
    out = []
    for layout in enumerate_layouts(model, workload, devices, scale_up_size(system), framework):
        try:
            microbatches = check_layout(model, workload, layout)
            step = plan_step(model, workload, layout, framework, system, check_memory=False)
        except InputError:
            continue
        peak = step.chip.matrix_flops_per_s(workload.dtype)
        compute_s = hardware_flops(model, workload, layout) / devices / peak
        bubble = 1 + (layout.pp - 1) / (layout.virtual_stages * microbatches)
        out.append((Candidate(layout=layout, fits=step.memory.fits, memory_bytes=step.memory.total_bytes,
                              bound_s=compute_s * bubble), step))
    return out


def search_layouts(model: ModelSpec, workload: Workload, system: Arch, framework: Framework, *, devices: int,
                   limit: int, options: ReplayOptions = ReplayOptions(), progress=None) -> list[Candidate]:
    """Candidates, fastest replayed first, then the unreplayed ones by bound; ``progress``
    is called with each replayed candidate."""
    if not 1 <= limit <= MAX_REPLAYS:
        raise InputError(f"expected 1 to {MAX_REPLAYS} layouts to replay, got {limit}", field="limit")
    planned = plan_candidates(model, workload, system, framework, devices)
    fitting = sorted(((c, s) for c, s in planned if c.fits), key=lambda cs: (cs[0].bound_s, cs[0].layout.text()))
    if not fitting:
        raise InputError(f"no layout of {model.name} on {devices} devices of {system.name!r} fits in HBM "
                         f"({len(planned)} considered)", field="memory")
    costs = CostModel(fitting[0][1].chip, Path("."), options.roofline_overhead_s)
    replayed = []
    for candidate, step in fitting[:limit]:
        try:
            result, _ = run_step(step, step_trace(step), options=options, costs=costs)
            done = Candidate(**{**candidate.__dict__, "result": result})
        except InputError as exc:
            done = Candidate(**{**candidate.__dict__, "error": exc.one_line()})
        replayed.append(done)
        if progress is not None:
            progress(done)
    rest = [c for c, _ in fitting[limit:]] + [c for c, _ in planned if not c.fits]
    ranked = sorted(replayed, key=lambda c: (c.result is None, c.result.step_time_s if c.result else 0.0))
    return ranked + rest
