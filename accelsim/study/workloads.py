"""Sweep workloads: what runs at every point, and the metrics each produces.

A spec's workload entry expands into one :class:`Job` per combination of its
``vars``. A job is checked once before the sweep starts (:func:`check_job`: family,
parameters, trace files, collective kind and algorithm, a system base for
collectives), then against every point's system (:func:`check_job_on`: ranks,
devices, protocols), and run at every point on that point's chip or system
(:func:`run_job`), giving a flat mapping of metric name to value. What only a
simulation finds (a kernel that does not fit that point's chip) is the run's error.

Kinds (one registry entry each): ``kernel`` (a built-in family, ``config=auto``
allowed), ``trace`` (a kernel trace file), ``collective`` (on a system base),
``sequence`` (kernels and collectives one after another, e.g. a model's decode
step, with an optional HBM footprint checked against the chip's capacity) and
``system_trace`` (a system trace replayed by :mod:`accelsim.system`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from accelsim.arch.model import Arch, Chip, GpuChip, chip_of
from accelsim.engine.chip import KernelSimulation, simulate_kernel
from accelsim.engine.gpu import reuse_window, shared_cache_hits
from accelsim.errors import InputError, shown
from accelsim.families import get_family
from accelsim.families.search import run_given, split_params
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import check_kind, check_protocol, get_algorithm
from accelsim.network.simulate import check_ranks
from accelsim.network.topology import collective_tuning
from accelsim.study.space import substitute
from accelsim.study.spec import (
    MAX_RUNS,
    WORKLOAD_KINDS,
    CollectiveWorkload,
    KernelWorkload,
    LoadedSpec,
    SequenceWorkload,
    Step,
    SystemTraceWorkload,
    TraceWorkload,
    WorkloadSpec,
)
from accelsim.system.costs import family_args
from accelsim.system.replay import ReplayOptions, check_devices, parse_roofline_overhead, replay
from accelsim.system.trace import SystemTrace, load_system_trace
from accelsim.trace.kernel import KernelTrace, load_trace
from accelsim.units import UnitError, parse_quantity

KERNEL_METRICS = (
    "latency_s", "launch_overhead_s", "flops", "hbm_bytes", "achieved_flops_per_s", "achieved_hbm_bytes_per_s", "bound", "config",
    "programs", "programs_per_core", "occupancy_limit", "shared_cache_hit_rate", "events", "sim_wall_s",
    "configs_searched", "local_memory_bytes",
)
COLLECTIVE_METRICS = ("latency_s", "algbw_bytes_per_s", "busbw_bytes_per_s", "algorithm", "bound")
SEQUENCE_METRICS = (
    "latency_s", "flops", "hbm_bytes", "achieved_flops_per_s", "achieved_hbm_bytes_per_s", "bound", "bound_share",
    "kernel_s", "collective_s", "memory_bytes", "hbm_capacity_bytes", "fits", "events", "sim_wall_s",
)
SYSTEM_TRACE_METRICS = (
    "latency_s", "bound", "compute_s", "comm_s", "exposed_comm_s", "overlapped_comm_s", "idle_s", "kernels_simulated",
    "events", "sim_wall_s",
)
METRICS = tuple(dict.fromkeys(KERNEL_METRICS + COLLECTIVE_METRICS + SEQUENCE_METRICS + SYSTEM_TRACE_METRICS))
"""Metric names a spec may ask for, besides ``utilization.<resource>`` and ``utilization.*``."""
TEXT_METRICS = ("bound", "config", "algorithm", "occupancy_limit")
"""Metrics whose values are text."""
FLAG_METRICS = ("fits",)
"""Metrics that are true or false. Every other metric (``utilization.*`` too) is a number,
or null where the chip has no such part (a TPU's ``shared_cache_hit_rate``)."""


@dataclass(frozen=True)
class Job:
    """One workload of the sweep, its variables substituted."""

    index: int
    name: str
    kind: str
    body: Any
    """The validated workload model (:data:`accelsim.study.spec.WORKLOAD_KINDS`)."""
    variables: tuple[tuple[str, Any], ...] = ()
    spec_index: int = 0
    base_dir: str = "."
    """Folder the spec file is in: relative file paths in workloads are relative to it."""
    memory_terms: tuple[tuple[float, tuple[str, ...]], ...] = field(default=())

    def path(self, text: str) -> Path:
        p = Path(text)
        return p if p.is_absolute() else Path(self.base_dir) / p

    def failed(self, exc: InputError) -> str:
        """``exc`` as this job's error reads in the spec's: led by the job's name, unless
        that is only its kind (an unnamed sequence), which the field names already."""
        detail = exc.one_line()
        return detail if self.name == self.kind else f"{self.name}: {detail}"


# ------------------------------------------------------------------ expansion


def count_jobs(spec: LoadedSpec) -> int:
    """How many jobs :func:`expand_jobs` would give, counted without building them."""
    return sum(math.prod(len(values) for values in w.vars.values()) for w in spec.workloads)


def check_runs(spec: LoadedSpec, points: int) -> None:
    """Refuse a sweep of more than :data:`MAX_RUNS` runs (``points`` x the jobs) before its
    workloads are expanded."""
    jobs = count_jobs(spec)
    if points * jobs > MAX_RUNS:
        raise spec.error(f"the sweep would have {points * jobs:,} runs ({points:,} points x {jobs:,} workloads, each "
                         f"workload once per combination of its vars); a sweep may have at most {MAX_RUNS:,}",
                         ("workloads",))


def expand_jobs(spec: LoadedSpec) -> list[Job]:
    """Every workload of the spec, one job per combination of its ``vars``."""
    jobs: list[Job] = []
    for w in spec.workloads:
        names = list(w.vars)
        for combo in itertools.product(*(w.vars[n] for n in names)):
            variables = dict(zip(names, combo))
            jobs.append(_job(spec, w, variables, len(jobs)))
    return jobs


def _job(spec: LoadedSpec, w: WorkloadSpec, variables: dict[str, Any], index: int) -> Job:
    loc = ("workloads", w.index)
    where = f"{spec.path}: workloads[{w.index}]"
    try:
        data = _substituted(w.body.model_dump(), variables, where)
    except InputError as exc:
        raise spec.error(exc.message, loc) from None
    try:
        body = WORKLOAD_KINDS[w.kind].model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in error["loc"])
        raise spec.error(f"with {_vars_text(variables)}: {field}: {error['msg']}", loc) from None
    # a kernel's default name shows its substituted parameters already; other names get the variables appended
    shows_values = w.name is None and w.kind == "kernel"
    suffix = "" if shows_values else _vars_text(variables)
    name = w.name or _default_name(w.kind, body)
    terms = ()
    if isinstance(body, SequenceWorkload):
        terms = tuple(_memory_term(spec, w, i, variables) for i in range(len(body.memory)))
    return Job(index=index, name=f"{name} {suffix}".strip(), kind=w.kind, body=body,
               variables=tuple(variables.items()), spec_index=w.index, base_dir=str(spec.path.parent),
               memory_terms=terms)


def _vars_text(variables: dict[str, Any]) -> str:
    return " ".join(f"{k}={_text(v)}" for k, v in variables.items())


def _substituted(data: Any, variables: dict[str, Any], where: str) -> Any:
    if isinstance(data, dict):
        return {k: _substituted(v, variables, where) for k, v in data.items()}
    if isinstance(data, list) and not all(isinstance(v, (int, float, bool)) for v in data):
        return [_substituted(v, variables, where) for v in data]
    return substitute(data, variables, where)


def _memory_term(spec: LoadedSpec, w: WorkloadSpec, i: int, variables: dict[str, Any]) -> tuple[float, tuple[str, ...]]:
    term = w.body.memory[i]
    loc = ("workloads", w.index, "memory", i)
    try:
        nbytes = float(term.bytes) if isinstance(term.bytes, int) else parse_quantity(term.bytes, "bytes")
    except UnitError as exc:
        raise spec.error(str(exc), loc + ("bytes",)) from None
    if not nbytes >= 0:
        raise spec.error(f"expected bytes of 0 or more, got {shown(term.bytes)}", loc + ("bytes",))
    for name in term.per:
        if name not in variables or not isinstance(variables[name], (int, float)) or isinstance(variables[name], bool):
            raise spec.error(f"{shown(name)} is not a numeric variable of this workload", loc + ("per",))
    return nbytes, tuple(term.per)


def _default_name(kind: str, body: Any) -> str:
    if isinstance(body, KernelWorkload):
        return " ".join([body.kernel] + [f"{k}={_text(v)}" for k, v in body.params.items()])
    if isinstance(body, TraceWorkload):
        return Path(body.trace).stem
    if isinstance(body, CollectiveWorkload):
        return f"{body.collective} {body.bytes}"
    if isinstance(body, SystemTraceWorkload):
        return Path(body.system_trace).stem
    return kind


# ------------------------------------------------------------------ checks before the sweep


def check_job(job: Job, spec: LoadedSpec, base_kinds: dict[str, str]) -> None:
    """Raise a located InputError if ``job`` cannot run on the spec's bases (unmodified)."""
    loc = ("workloads", job.spec_index)
    try:
        CHECKS[job.kind](job, base_kinds)
    except InputError as exc:
        raise spec.error(job.failed(exc), loc) from None


def _check_kernel(job: Job, base_kinds: dict[str, str]) -> None:
    _kernel_params(job.body.kernel, job.body.params)


def _check_trace(job: Job, base_kinds: dict[str, str]) -> None:
    _trace(str(job.path(job.body.trace)))


def _check_collective(job: Job, base_kinds: dict[str, str]) -> None:
    _collective_args(job.body)
    chips = [name for name, kind in base_kinds.items() if kind == "chip"]
    if chips:
        raise InputError(f"a collective runs on a system (node, cluster, torus); {shown(chips[0])} is a chip",
                         source="collective")


def _check_sequence(job: Job, base_kinds: dict[str, str]) -> None:
    for i, step in enumerate(job.body.sequence):
        try:
            if step.kernel is not None:
                _kernel_params(step.kernel, step.params)
            else:
                _check_collective(Job(index=0, name="", kind="collective", body=step), base_kinds)
        except InputError as exc:
            raise _in_step(exc, i) from None


def _in_step(exc: InputError, i: int) -> InputError:
    """A sequence step's error at its field in the workload (``sequence[0].ranks``); the
    step's checks name the step's own fields."""
    inner = ".".join(part for part in (exc.source, exc.field) if part)
    return InputError(exc.message, field=f"sequence[{i}]" + (f".{inner}" if inner else ""))


def _roofline_overhead(body: SystemTraceWorkload) -> float:
    return parse_roofline_overhead(body.roofline_overhead, "roofline_overhead")


def _check_system_trace(job: Job, base_kinds: dict[str, str]) -> None:
    path = job.path(job.body.system_trace)
    _check_compute_ops(_system_trace(str(path)), path)
    _roofline_overhead(job.body)
    if job.body.algorithm != "auto":
        get_algorithm(job.body.algorithm)
    chips = [name for name, kind in base_kinds.items() if kind == "chip"]
    if chips:
        raise InputError(f"a system trace runs on a system (node, cluster, torus); {shown(chips[0])} is a chip",
                         source="system_trace")


def _check_compute_ops(trace: SystemTrace, path: Path) -> None:
    """The kernel traces and families a system trace's compute ops name, each checked once,
    as the replay would (kernel traces relative to the system trace): on no chip would
    they run."""
    families: set[tuple] = set()
    for p, program in enumerate(trace.programs):
        for i, op in enumerate(program.ops):
            if op.kernel_trace is not None:
                _trace(str(path.parent / op.kernel_trace))
                continue
            key = (op.family, tuple(sorted((k, str(v)) for k, v in op.params.items())))
            if op.family is None or key in families:
                continue
            families.add(key)
            try:
                family_args(op, f"programs[{p}].ops[{i}]")
            except InputError as exc:
                raise InputError(exc.message, source=str(path), field=exc.field) from None


CHECKS: dict[str, Callable[[Job, dict[str, str]], None]] = {
    "kernel": _check_kernel, "trace": _check_trace, "collective": _check_collective,
    "sequence": _check_sequence, "system_trace": _check_system_trace,
}


# ------------------------------------------------------------------ checks against each point's system


def check_job_on(job: Job, system: Arch) -> None:
    """Raise an InputError if ``job`` cannot run on ``system`` (one point's resolved chip or
    system) for what its size or NCCL model decides: a collective's ranks and protocol, a
    system trace's devices. Builds no links (a million-chip system's take seconds)."""
    check = SYSTEM_CHECKS.get(job.kind)
    if check is not None:
        check(job, system)


def _collective_job_on(job: Job, system: Arch) -> None:
    _collective_on(job.body, system)


def _collective_on(body: CollectiveWorkload | Step, system: Arch) -> None:
    _, _, algorithm, ranks = _collective_args(body)
    check_ranks(system.name, system.num_chips, ranks)
    _protocol_on(algorithm, system)


def _protocol_on(algorithm: str, system: Arch) -> None:
    protocol = algorithm.partition("/")[2]
    if protocol:
        check_protocol(system.name, collective_tuning(system), protocol)


def _sequence_on(job: Job, system: Arch) -> None:
    for i, step in enumerate(job.body.sequence):
        if step.collective is None:
            continue
        try:
            _collective_on(step, system)
        except InputError as exc:
            raise _in_step(exc, i) from None


def _system_trace_on(job: Job, system: Arch) -> None:
    path = str(job.path(job.body.system_trace))
    try:
        check_devices(_system_trace(path), system)
    except InputError as exc:
        raise InputError(exc.message, source=path, field=exc.field) from None
    _protocol_on(job.body.algorithm, system)


SYSTEM_CHECKS: dict[str, Callable[[Job, Arch], None]] = {
    "collective": _collective_job_on, "sequence": _sequence_on, "system_trace": _system_trace_on,
}
"""Checks of a job against a point's system, by kind (kernels: none, their failures depend
on simulating them)."""


def _kernel_params(family_name: str, params: dict[str, Any]):
    try:
        family = get_family(family_name)
    except InputError as exc:  # a workload names its family ``kernel``
        raise InputError(exc.message, field="kernel") from None
    given = {k: _text(v, f"params.{k}") for k, v in params.items()}
    problem, config, auto = split_params(family, given)
    return family, problem, config, auto


def _text(value: Any, field: str = "params") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        raise InputError(f"expected one value, got a list {shown(value)} (use 'vars' to expand a workload)", field=field)
    return str(value)


def _collective_args(body: CollectiveWorkload | Step) -> tuple[str, float, str, int | None]:
    check_kind(body.collective)
    try:
        size = float(body.bytes) if isinstance(body.bytes, int) else parse_quantity(body.bytes, "bytes")
    except UnitError as exc:
        raise InputError(str(exc), source="bytes") from None
    if not size >= 1 or not size.is_integer():
        raise InputError(f"expected a whole number of bytes, at least 1, got {shown(body.bytes)}", source="bytes")
    if body.algorithm != "auto":
        get_algorithm(body.algorithm)  # an unknown name fails here, before the sweep
    ranks = body.ranks
    if ranks is not None and not isinstance(ranks, int):
        raise InputError(f"expected an integer number of ranks, got {shown(ranks)}", source="ranks")
    return body.collective, size, body.algorithm, ranks


def files_read(job: Job) -> list[Path]:
    """The files ``job`` reads: its kernel trace, or its system trace and the kernel
    traces that trace's compute ops name (relative to it), each once."""
    if job.kind == "trace":
        return [job.path(job.body.trace)]
    if job.kind != "system_trace":
        return []
    path = job.path(job.body.system_trace)
    named = (path.parent / op.kernel_trace for program in _system_trace(str(path)).programs
             for op in program.ops if op.kernel_trace is not None)
    return [path, *dict.fromkeys(named)]


@lru_cache(maxsize=64)
def _trace(path: str) -> KernelTrace:
    return load_trace(path)


@lru_cache(maxsize=16)
def _system_trace(path: str):
    return load_system_trace(path)


# ------------------------------------------------------------------ running


def run_job(job: Job, arch: Arch) -> dict[str, Any]:
    """Run one job on one point's chip or system; metric name -> value."""
    return RUNNERS[job.kind](job, arch)


def kernel_metrics(sim: KernelSimulation, searched: int | None = None,
                   config: dict[str, Any] | None = None) -> dict[str, Any]:
    """A kernel simulation's result as a table row (:meth:`~accelsim.results.KernelResult.row`);
    ``config``: the config as shown, where not the simulation's own (a TPU's, without GPU-only
    fields)."""
    result = replace(sim.result(), configs_searched=searched)
    return (result if config is None else replace(result, config=config)).row()


class SharedCacheMemo:
    """The reuse model's hits (:func:`~accelsim.engine.gpu.shared_cache_hits`) of the kernel
    traces a process simulates, kept for the points that share them: a trace's hits
    follow from its content and the chip's reuse window alone
    (:func:`~accelsim.engine.gpu.reuse_window`: resident programs and L2 capacity), which
    points that change bandwidths or clocks leave as they are. The hits are the ones the
    replay would compute (read-only arrays); the oldest of ``max_entries`` go first."""

    def __init__(self, max_entries: int = 32) -> None:
        self.max_entries = max_entries
        self._hits: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def hits(self, trace: KernelTrace, chip: Chip) -> np.ndarray | None:
        """The trace's hits on ``chip`` (as scoped to its family); None on a chip without
        a reuse model (a TPU: the replay has no hits to take)."""
        if not isinstance(chip, GpuChip):
            return None
        window = reuse_window(trace, chip)
        key = hashlib.blake2b(f"{window!r}".encode() + trace.model_dump_json().encode(), digest_size=20).digest()
        if key in self._hits:
            self._hits.move_to_end(key)
            return self._hits[key]
        hits = shared_cache_hits(trace, chip)
        hits.flags.writeable = False
        self._hits[key] = hits
        if len(self._hits) > self.max_entries:
            self._hits.popitem(last=False)
        return hits


_HITS = SharedCacheMemo()
"""This process's hits (each sweep worker keeps its own)."""


def _kernel_sim(family_name: str, params: dict[str, Any], chip: Chip) -> tuple[KernelSimulation, int | None]:
    """As :func:`~accelsim.families.search.run_given` runs it; a fixed config's replay takes
    its hits from :data:`_HITS`."""
    family, problem, config, auto = _kernel_params(family_name, params)
    if auto:
        run, searched = run_given(family, problem, config, auto, chip)
        return run.sim, searched
    resolved = family.resolve_config(problem, config, chip)
    chip = chip.for_family(family.name)
    trace = family.build(problem, resolved, chip)
    scoped = chip.for_family(trace.metadata.get("family"))  # the chip simulate_kernel replays on
    return simulate_kernel(trace, chip, hits=_HITS.hits(trace, scoped)), None


def _run_kernel(job: Job, arch: Arch) -> dict[str, Any]:
    started = time.perf_counter()
    chip = chip_of(arch)
    sim, searched = _kernel_sim(job.body.kernel, job.body.params, chip)
    metrics = kernel_metrics(sim, searched, get_family(job.body.kernel).shown_config(sim.config, chip))
    if searched:  # as simulate reports it: the whole search, not only the winner's replay
        metrics["sim_wall_s"] = time.perf_counter() - started
    return metrics


def _run_trace(job: Job, arch: Arch) -> dict[str, Any]:
    return kernel_metrics(simulate_kernel(_trace(str(job.path(job.body.trace))), chip_of(arch)))


def _collective(body: CollectiveWorkload | Step, arch: Arch, topologies: dict) -> dict[str, Any]:
    kind, size, algorithm, ranks = _collective_args(body)
    if "topo" not in topologies:
        topologies["topo"] = build_topology(arch)
    return simulate_collective(topologies["topo"], kind, size, algorithm, ranks).row()


def _run_collective(job: Job, arch: Arch) -> dict[str, Any]:
    return _collective(job.body, arch, {})


def _run_sequence(job: Job, arch: Arch) -> dict[str, Any]:
    chip = chip_of(arch)
    totals = {"latency_s": 0.0, "flops": 0.0, "hbm_bytes": 0.0, "kernel_s": 0.0, "collective_s": 0.0,
              "events": 0, "sim_wall_s": 0.0}
    by_bound: dict[str, float] = {}
    busy: dict[str, float] = {}
    topologies: dict = {}
    energy_j = 0.0  # kernels' energy on a chip with a power model (collectives' links not counted)
    for i, step in enumerate(job.body.sequence):
        if step.kernel is not None:
            try:
                sim, _ = _kernel_sim(step.kernel, step.params, chip)
            except InputError as exc:  # what only the point's chip refuses (a tile too large for it)
                raise _in_step(exc, i) from None
            seconds = sim.latency_s * step.count
            energy_j += sim.energy.joules * step.count if sim.energy else 0.0
            totals["kernel_s"] += seconds
            totals["flops"] += sim.flops * step.count
            totals["hbm_bytes"] += sim.hbm_bytes * step.count
            totals["events"] += sim.events
            totals["sim_wall_s"] += sim.sim_wall_s
            bound = sim.bound
            for resource, share in sim.utilization.items():
                busy[resource] = busy.get(resource, 0.0) + share * seconds
        else:
            metrics = _collective(step, arch, topologies)
            seconds = metrics["latency_s"] * step.count
            totals["collective_s"] += seconds
            bound = "network"
        totals["latency_s"] += seconds
        by_bound[bound] = by_bound.get(bound, 0.0) + seconds
    out: dict[str, Any] = dict(totals)
    latency = totals["latency_s"]
    out["achieved_flops_per_s"] = totals["flops"] / latency
    out["achieved_hbm_bytes_per_s"] = totals["hbm_bytes"] / latency
    out["bound"] = max(by_bound, key=lambda k: (by_bound[k], k))
    out["bound_share"] = by_bound[out["bound"]] / latency
    out.update({f"utilization.{k}": v / latency for k, v in sorted(busy.items())})
    if chip.power is not None:
        out |= {"energy_j": energy_j, "average_power_w": energy_j / latency}
    if job.memory_terms:
        variables = dict(job.variables)
        memory = sum(nbytes * math.prod(variables[n] for n in per) for nbytes, per in job.memory_terms)
        out["memory_bytes"] = memory
        out["hbm_capacity_bytes"] = chip.hbm.capacity_bytes
        out["fits"] = memory <= chip.hbm.capacity_bytes
    return out


def _run_system_trace(job: Job, arch: Arch) -> dict[str, Any]:
    path = job.path(job.body.system_trace)
    replayed = replay(_system_trace(str(path)), arch, base_dir=path.parent,
                    options=ReplayOptions(algorithm=job.body.algorithm,
                                          roofline_overhead_s=_roofline_overhead(job.body)))
    return replayed.result().row()


RUNNERS: dict[str, Callable[[Job, Arch], dict[str, Any]]] = {
    "kernel": _run_kernel, "trace": _run_trace, "collective": _run_collective,
    "sequence": _run_sequence, "system_trace": _run_system_trace,
}


def check_metrics(spec: LoadedSpec) -> None:
    for i, name in enumerate(spec.spec.metrics):
        if name in METRICS or (name.startswith("utilization.") and len(name) > len("utilization.")):
            continue
        raise spec.error(f"unknown metric {shown(name)}; expected utilization.<resource>, utilization.* or one of: "
                         f"{', '.join(METRICS)}", ("metrics", i))
