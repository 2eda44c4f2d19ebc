"""What a simulation returns: one versioned schema for a kernel on a chip, a collective on
a system and a replayed step, shared by ``simulate``, ``replay``, sweeps and validation;
and what validation makes of a prediction beside its measurement
(:class:`RecordComparison`, :func:`relative_error`).

Each result is a frozen record whose field names carry their units. ``to_json()`` is the
``--json`` contract (keys documented in README.md, docs/replay.md and docs/collectives.md,
led by ``schema_version``); ``row()`` flattens a result into the scalar metrics of a sweep
table and journal. The CLI renders results from their fields, never by string key.

:data:`SCHEMA_VERSION` changes when a key is renamed or removed or its meaning changes;
adding a key keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class KernelResult:
    """One kernel trace replayed on one chip."""

    arch: str
    kernel: str
    latency_s: float
    launch_overhead_s: float
    """The part of ``latency_s`` that is launch cost."""
    flops: float
    hbm_bytes: float
    bound: str
    """The resource busiest over the kernel."""
    utilization: Mapping[str, float]
    """Per resource: busy time over ``latency_s``."""
    config: Mapping[str, Any]
    programs: int
    programs_per_core: int
    occupancy_limit: str
    shared_cache_hit_rate: float | None
    sim_wall_s: float
    """The simulator's own wall time (the one output that differs run to run)."""
    events: int
    local_memory_bytes: int
    hbm_queueing_s: float | None = None
    """GPU with ``hbm.queueing_latency``: what each HBM load waited on top of the latency."""
    per_kernel_s: tuple[float, ...] | None = None
    """A trace of several kernels: each one's time, launch left out."""
    latency_s_p05: float | None = None
    latency_s_p95: float | None = None
    """The 90% interval from the chip's held-out residuals for the kernel's family."""
    configs_searched: int | None = None
    """``config=auto``: configs the search simulated (or bounded)."""
    roofline: Mapping[str, Any] | None = None
    """``simulate``: the kernel under the chip's roofs (``peak_flops_per_s``, ``peak_flops_of``,
    ``flops_fraction_of_peak``, ``peak_hbm_bytes_per_s``, ``hbm_fraction_of_peak``,
    ``arithmetic_intensity_flops_per_byte``, ``ridge_point_flops_per_byte``:
    :func:`accelsim.report.peaks.roofline_figures`)."""
    energy_j: float | None = None
    """On a chip with a power model (``docs/power.md``): the kernel's energy, launch included."""
    average_power_w: float | None = None
    energy_j_by_part: Mapping[str, float] | None = None
    """``energy_j`` by unit, memory level and ``static`` power."""
    power_cap_w: float | None = None
    """The power cap the kernel ran under (``power.cap``), if any."""
    throttled_clock_hz: float | None = None
    """The clock the cap left (its power at the chip's clock was above the cap); ``latency_s``
    and ``energy_j`` are at this clock."""
    full_clock_latency_s: float | None = None
    """With ``throttled_clock_hz``: the latency at the chip's own clock."""
    limiter_late: bool = False
    """Under a cap its power passes, launched from idle (``power.dvfs.boost.from_idle``): it ended
    within ``power.dvfs.boost.cap_delay``, before the power limiter acted, so it kept its clock
    (``simulate``'s power cap row says so; not in :meth:`to_json`, whose ``power_cap_w`` without
    ``throttled_clock_hz`` says the clock was kept)."""

    @property
    def kernels(self) -> int:
        return len(self.per_kernel_s) if self.per_kernel_s else 1

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.latency_s

    @property
    def achieved_hbm_bytes_per_s(self) -> float:
        return self.hbm_bytes / self.latency_s

    def to_json(self) -> dict[str, Any]:
        out = {
            "schema_version": SCHEMA_VERSION,
            "arch": self.arch,
            "kernel": self.kernel,
            "latency_s": self.latency_s,
            "launch_overhead_s": self.launch_overhead_s,
            "flops": self.flops,
            "hbm_bytes": self.hbm_bytes,
            "achieved_flops_per_s": self.achieved_flops_per_s,
            "achieved_hbm_bytes_per_s": self.achieved_hbm_bytes_per_s,
            "bound": self.bound,
            "utilization": dict(self.utilization),
            "config": dict(self.config),
            "programs": self.programs,
            "programs_per_core": self.programs_per_core,
            "occupancy_limit": self.occupancy_limit,
            "shared_cache_hit_rate": self.shared_cache_hit_rate,
            "sim_wall_s": self.sim_wall_s,
            "events": self.events,
            "local_memory_bytes": self.local_memory_bytes,
        }
        if self.hbm_queueing_s is not None:
            out["hbm_queueing_s"] = self.hbm_queueing_s
        if self.kernels > 1:
            out |= {"kernels": self.kernels, "per_kernel_s": list(self.per_kernel_s or ())}
        if self.roofline is not None:
            out |= dict(self.roofline)
        if self.latency_s_p05 is not None:
            out |= {"latency_s_p05": self.latency_s_p05, "latency_s_p95": self.latency_s_p95}
        if self.configs_searched is not None:
            out["configs_searched"] = self.configs_searched
        return out | self._energy_json()

    def _energy_json(self) -> dict[str, Any]:
        if self.energy_j is None:
            return {}
        out = {"energy_j": self.energy_j, "average_power_w": self.average_power_w,
               "energy_j_by_part": dict(self.energy_j_by_part or {})}
        if self.power_cap_w is not None:
            out["power_cap_w"] = self.power_cap_w
        if self.throttled_clock_hz is not None:
            out |= {"throttled_clock_hz": self.throttled_clock_hz, "full_clock_latency_s": self.full_clock_latency_s}
        return out

    def row(self) -> dict[str, Any]:
        """The scalars of :meth:`to_json`, per-resource, per-kernel and per-part values as
        columns of their own (``utilization.hbm``, ``per_kernel_s.0``, ``energy_j_by_part.hbm``),
        the config as one text."""
        nested = ("schema_version", "utilization", "config", "arch", "kernel", "per_kernel_s", "configs_searched",
                  "energy_j_by_part")
        out = {k: v for k, v in replace(self, roofline=None).to_json().items() if k not in nested}
        out.update({f"utilization.{k}": v for k, v in self.utilization.items()})
        out.update({f"energy_j_by_part.{k}": v for k, v in (self.energy_j_by_part or {}).items()})
        out.update({f"per_kernel_s.{i}": v for i, v in enumerate(self.per_kernel_s or ())})
        out["config"] = " ".join(f"{k}={v}" for k, v in self.config.items())
        if self.configs_searched is not None:
            out["configs_searched"] = self.configs_searched
        return out


@dataclass(frozen=True, kw_only=True)
class CollectiveResult:
    """One collective alone on a system, with its nccl-tests figures of merit."""

    kind: str
    algorithm: str
    protocol: str
    size_bytes: float
    ranks: int
    latency_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    phases: int
    """Phases in the plan (each a latency wait and a set of flows)."""
    system: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "collective": self.kind, "algorithm": self.algorithm, "protocol": self.protocol,
            "size_bytes": self.size_bytes, "ranks": self.ranks, "latency_s": self.latency_s,
            "algbw_bytes_per_s": self.algbw_bytes_per_s, "busbw_bytes_per_s": self.busbw_bytes_per_s,
            "phases": self.phases, "system": self.system,
        }

    def row(self) -> dict[str, Any]:
        return {"latency_s": self.latency_s, "algbw_bytes_per_s": self.algbw_bytes_per_s,
                "busbw_bytes_per_s": self.busbw_bytes_per_s, "algorithm": self.algorithm, "bound": "network"}


@dataclass(frozen=True, kw_only=True)
class DeviceStats:
    """One device's step: ``compute_s`` with any compute op running, ``comm_s`` with any
    of its collectives or transfers moving data, ``overlapped_comm_s`` both at once,
    ``exposed_comm_s = comm_s - overlapped_comm_s``, ``idle_s`` neither (waiting for
    peers or dependencies, or done before the step ends)."""

    device: int
    program: str
    finish_s: float
    compute_s: float
    comm_s: float
    overlapped_comm_s: float
    exposed_comm_s: float
    idle_s: float
    energy_j: float | None = None
    """On a chip with a power model: its compute ops' dynamic energy, static power while
    computing or communicating, idle power over ``idle_s`` (``docs/power.md``)."""

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None or k != "energy_j"}


@dataclass(frozen=True, kw_only=True)
class LinkStats:
    link: str
    bytes: float
    utilization: float
    """Bytes carried / (capacity x step time)."""


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """A system trace replayed on a system: the step and, per device and link, where its
    time and bytes went. Aggregates (``compute_s``, ...) are means over devices."""

    trace: str
    system: str
    step_time_s: float
    devices: tuple[DeviceStats, ...]
    links: tuple[LinkStats, ...]
    """Links that carried data, busiest first."""
    replayed_classes: int
    ops: int
    comm_instances: int
    comm_groups_folded: int
    kernels_simulated: int
    events: int
    sim_wall_s: float
    link_energy_j: float | None = None
    """On a chip with a power model: the bytes every link carried at its kind's energy per byte."""

    @property
    def energy_j(self) -> float | None:
        """The step's energy: every device's and the links'."""
        if self.link_energy_j is None:
            return None
        return sum(d.energy_j or 0.0 for d in self.devices) + self.link_energy_j

    @property
    def average_power_w(self) -> float | None:
        """Over the whole system: ``energy_j`` over the step time."""
        energy = self.energy_j
        return energy / self.step_time_s if energy is not None and self.step_time_s > 0 else None

    def _energy(self) -> dict[str, Any]:
        if self.link_energy_j is None:
            return {}
        return {"energy_j": self.energy_j, "average_power_w": self.average_power_w,
                "link_energy_j": self.link_energy_j}

    def _mean(self, name: str) -> float:
        return sum(getattr(d, name) for d in self.devices) / len(self.devices)

    @property
    def compute_s(self) -> float:
        return self._mean("compute_s")

    @property
    def comm_s(self) -> float:
        return self._mean("comm_s")

    @property
    def exposed_comm_s(self) -> float:
        return self._mean("exposed_comm_s")

    @property
    def overlapped_comm_s(self) -> float:
        return self._mean("overlapped_comm_s")

    @property
    def idle_s(self) -> float:
        return self._mean("idle_s")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "trace": self.trace,
            "system": self.system,
            "step_time_s": self.step_time_s,
            "compute_s": self.compute_s,
            "comm_s": self.comm_s,
            "exposed_comm_s": self.exposed_comm_s,
            "overlapped_comm_s": self.overlapped_comm_s,
            "idle_s": self.idle_s,
            "num_devices": len(self.devices),
            "replayed_classes": self.replayed_classes,
            "ops": self.ops,
            "comm_instances": self.comm_instances,
            "comm_groups_folded": self.comm_groups_folded,
            "kernels_simulated": self.kernels_simulated,
            "devices": [d.as_dict() for d in self.devices],
            "links": [asdict(link) for link in self.links],
            "sim_wall_s": self.sim_wall_s,
            "events": self.events,
        } | self._energy()

    def row(self) -> dict[str, Any]:
        """The step's scalars for a sweep table: ``latency_s`` is the step time, and
        ``bound`` the larger of compute and communication, as a roofline would say it (with
        perfect overlap the step could not be shorter than either)."""
        return {
            "compute_s": self.compute_s, "comm_s": self.comm_s, "exposed_comm_s": self.exposed_comm_s,
            "overlapped_comm_s": self.overlapped_comm_s, "idle_s": self.idle_s,
            "kernels_simulated": self.kernels_simulated, "events": self.events, "sim_wall_s": self.sim_wall_s,
            "latency_s": self.step_time_s, "bound": "network" if self.comm_s > self.compute_s else "compute",
        } | self._energy()


@dataclass(frozen=True, kw_only=True)
class ModelStepResult:
    """A model's step (``accelsim model``): the replayed system trace and what it means for
    the model. FLOP conventions: docs/model.md ("FLOPs, MFU and HFU")."""

    model: str
    mode: str
    layout: str
    framework: str
    devices: int
    microbatches: int
    tokens: int
    """Tokens the step processes (training, prefill) or produces (decode)."""
    model_flops: float
    hardware_flops: float
    peak_flops_per_s: float
    """One device's dense matrix peak at the GEMM dtype (the MFU and HFU denominator), the
    datasheet's: with ``power.dvfs.boost`` on, at the config's ``clock``, not the boost clock."""
    memory: Mapping[str, float]
    """Per device on the busiest stage: ``weights_bytes``, ``gradients_bytes``,
    ``optimizer_bytes``, ``activations_bytes``, ``kv_cache_bytes``, ``total_bytes``,
    ``capacity_bytes``, ``stage``."""
    bubble_s: float
    """Pipeline bubble: the idle time the schedule's fill and drain explain
    (``(PP - 1) / (v x microbatches)`` of the compute, at most the idle time)."""
    step: StepResult

    @property
    def step_time_s(self) -> float:
        return self.step.step_time_s

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.step.step_time_s

    @property
    def mfu(self) -> float:
        return self.model_flops / (self.step.step_time_s * self.devices * self.peak_flops_per_s)

    @property
    def hfu(self) -> float:
        return self.hardware_flops / (self.step.step_time_s * self.devices * self.peak_flops_per_s)

    @property
    def idle_s(self) -> float:
        """Idle time other than the bubble (waiting for peers, dependencies)."""
        return max(0.0, self.step.idle_s - self.bubble_s)

    @property
    def energy_j(self) -> float | None:
        """The step's energy over every device and link (None: a chip without a power model)."""
        return self.step.energy_j

    @property
    def tokens_per_j(self) -> float | None:
        """Tokens per joule of the whole system: ``tokens`` over ``energy_j``."""
        energy = self.energy_j
        return self.tokens / energy if energy else None

    @property
    def average_power_w_per_device(self) -> float | None:
        """The step's average power (devices and links) divided by the device count."""
        power = self.step.average_power_w
        return power / self.devices if power is not None else None

    def _energy(self) -> dict[str, Any]:
        if self.energy_j is None:
            return {}
        return {"energy_j": self.energy_j, "tokens_per_j": self.tokens_per_j,
                "average_power_w_per_device": self.average_power_w_per_device}

    def to_json(self) -> dict[str, Any]:
        step = self.step.to_json()
        step.pop("schema_version")
        return {
            "schema_version": SCHEMA_VERSION,
            "model": self.model, "mode": self.mode, "layout": self.layout, "framework": self.framework,
            "system": self.step.system, "devices": self.devices, "microbatches": self.microbatches,
            "step_time_s": self.step_time_s, "tokens": self.tokens, "tokens_per_s": self.tokens_per_s,
            "model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
            "peak_flops_per_s": self.peak_flops_per_s, "mfu": self.mfu, "hfu": self.hfu,
            "compute_s": self.step.compute_s, "exposed_comm_s": self.step.exposed_comm_s,
            "overlapped_comm_s": self.step.overlapped_comm_s, "bubble_s": self.bubble_s, "idle_s": self.idle_s,
            "memory": dict(self.memory), "replay": step,
        } | self._energy()

    def row(self) -> dict[str, Any]:
        """The step's scalars (a layout sweep's table)."""
        return {
            "latency_s": self.step_time_s, "tokens_per_s": self.tokens_per_s, "mfu": self.mfu, "hfu": self.hfu,
            "compute_s": self.step.compute_s, "exposed_comm_s": self.step.exposed_comm_s,
            "bubble_s": self.bubble_s, "idle_s": self.idle_s, "memory_bytes": self.memory["total_bytes"],
            "sim_wall_s": self.step.sim_wall_s,
        } | self._energy()


def relative_error(predicted: float, measured: float) -> float:
    """Signed relative error of a prediction: ``predicted / measured - 1`` (negative:
    predicted below measured; for a latency, predicted faster). Every comparison with a
    measurement reports this one figure."""
    return predicted / measured - 1.0


@dataclass(frozen=True, kw_only=True)
class RecordComparison:
    """One measured record beside its prediction, as ``accelsim validate`` reports it: a
    row of ``records.json`` (what ``validation/accuracy_headline.py`` tabulates). ``status``
    says whether a fit touched the record (``accelsim.validate.fit_status.STATUSES``:
    never fitted, held-out, fitted, derived)."""

    measured_on: str
    """The config of the published figures of the chip the record was measured on."""
    id: str
    family: str
    implementation: str
    source: str
    status: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return relative_error(self.predicted_s, self.measured_s)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "error": self.error}
