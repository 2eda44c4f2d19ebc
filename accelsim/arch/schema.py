"""Pydantic models of the architecture config files (``arch_configs/*.yaml``).

This is the *spec*: what a user writes, validated once. Every hardware number is
a :class:`Cited` value: either the bare value (``bandwidth: "3.35 TB/s"``) or a
mapping that says where it comes from::

    bandwidth:
      value: 3.35 TB/s
      source: NVIDIA H100 datasheet (2023), table "Technical Specifications"
      basis: spec

Fields marked ``calibratable`` in their schema metadata (efficiencies, latencies,
overheads) are the ones ``accelsim calibrate`` may fit; :func:`calibratable_paths`
lists them. The resolved form used by the simulator lives in :mod:`accelsim.arch.model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from accelsim.errors import shown
from accelsim.text import PrintableText
from accelsim.units import parse_quantity

SCHEMA_VERSION = 1

Basis = Literal["spec", "measured", "derived", "estimate", "fitted", "override", "given"]
"""How a number is known: a vendor specification, a published measurement, derived
from other cited numbers, an engineering estimate, fitted by calibration, a what-if
override (``--set``), or given: written bare in a config file, with no basis or source
(the built-in configs have none)."""

Dtype = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]
Family = Literal["gpu", "tpu"]


LARGEST = 1e30
"""No number in a config is larger (in its base unit): far past any hardware, and far
enough below the float maximum that peaks (rate x cores x clock) stay finite."""


SMALLEST = 1e-30
"""No positive number in a config is smaller (in its base unit): products such as bytes
per cycle x clock would underflow towards zero (5e-324 bytes per cycle made a rate of 0)."""


def _positive(v: float) -> float:
    if not v > 0:
        raise ValueError(f"must be greater than zero, got {shown(v)}")
    if v < SMALLEST:
        raise ValueError(f"must be at least {SMALLEST:g}, got {shown(v)}")
    if v > LARGEST:
        raise ValueError(f"must be at most {LARGEST:g}, got {shown(v)}")
    return v


def _at_least_one(unit: str):
    """Rates and clocks: the engine's fluid model works in bytes and picoseconds, so a
    rate under one ``unit`` is out of its scale (and of any hardware's)."""

    def check(v: float) -> float:
        if not v >= 1:
            raise ValueError(f"must be at least 1 {unit}, got {shown(v)} {unit}")
        if v > LARGEST:
            raise ValueError(f"must be at most {LARGEST:g} {unit}, got {shown(v)} {unit}")
        return v

    return check


def _non_negative(v: float) -> float:
    if v < 0:
        raise ValueError(f"must not be negative, got {shown(v)}")
    return v


MIN_EFFICIENCY = 1e-3
"""The least fraction of its peak a unit, memory or link may be given: below a thousandth
a peak is not derated but replaced (give the slower peak itself); and at 1e-25 a rate
falls out of the engine's scale (bytes and picoseconds) without being refused."""


def _fraction(v: float) -> float:
    if not MIN_EFFICIENCY <= v <= 1:
        raise ValueError(f"must be a fraction from {MIN_EFFICIENCY:g} to 1, got {shown(v)}")
    return v


def _share(v: float) -> float:
    if not 0 <= v <= 1:
        raise ValueError(f"must be a fraction in [0, 1], got {shown(v)}")
    return v


def _loss(v: float) -> float:
    if not 0 <= v < 1:
        raise ValueError(f"must be a fraction in [0, 1), got {shown(v)}")
    return v


class Dimension(str):
    """Marks a quantity field with its dimension (a key of :data:`accelsim.units.UNITS`)."""


class InBaseUnit(float):
    """A quantity as a number in its dimension's base unit (seconds, bytes, B/s, Hz): what
    code that computes one gives (a calibration step's value), where a config file or a
    ``--set`` writes the unit (a bare number there is refused as a likely slip)."""


def _quantity(dimension: str, check=_positive):
    return Annotated[
        float,
        Dimension(dimension),
        BeforeValidator(lambda v: float(v) if isinstance(v, InBaseUnit) else parse_quantity(v, dimension)),
        AfterValidator(check),
    ]


Bytes = _quantity("bytes")
ByteCount = _quantity("bytes", _non_negative)
"""Bytes where none is a meaningful amount (a clean cache holds no dirty bytes)."""
BytesPerS = _quantity("bytes_per_s", _at_least_one("B/s"))
Hz = _quantity("hz", _at_least_one("Hz"))
Seconds = _quantity("seconds", _non_negative)
Watts = _quantity("watts")
PositiveInt = Annotated[int, Field(strict=True), AfterValidator(_positive)]
def _not_bool(v: Any) -> Any:
    """YAML's ``true`` is not a number (pydantic would read it as 1.0)."""
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {shown(v)}")
    return v


PositiveNumber = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_positive)]
Fraction = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_fraction)]
Share = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_share)]
"""A share of something: 0 (none of it) to 1 (all of it)."""
Loss = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_loss)]
"""A fraction of something lost: 0 (nothing) up to, not including, 1."""

T = TypeVar("T")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ConfigFile(_Strict):
    """Fields every config file has."""

    schema_version: Annotated[Literal[1], BeforeValidator(_not_bool)]
    name: PrintableText
    display_name: PrintableText
    description: str | None = None
    aliases: list[str] = []
    """Other names ``accelsim arch show`` accepts for this config."""


class Cited(_Strict, Generic[T]):
    """A value with its provenance. A bare value is accepted as ``{value: ...}``."""

    value: T
    source: str | None = None
    basis: Basis = "spec"
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _wrap_bare_value(cls, data: Any) -> Any:
        if isinstance(data, dict) and "value" in data:
            return data
        return {"value": data, "basis": "given"}  # a bare number: nothing says where it came from


def calibratable(**kwargs: Any) -> Any:
    """A field that calibration may fit (efficiency, latency, overhead)."""
    return Field(json_schema_extra={"calibratable": True}, **kwargs)


# ---------------------------------------------------------------- chip sections


def _core_count(v: int) -> int:
    if v > MAX_CORES:
        raise ValueError(f"must be at most {MAX_CORES:,} (2^20) cores, got {v:,}")
    return v


MAX_CORES = 1 << 20
"""Cores one chip may have: far above any GPU or TPU, and low enough that per-core state fits."""


class Cores(_Strict):
    kind: Literal["sm", "cu", "tensorcore"]
    count: Cited[Annotated[PositiveInt, AfterValidator(_core_count)]]
    program_overhead: Cited[Seconds] = calibratable()
    """Fixed cost per program: CTA launch and retirement on a GPU SM, pipeline
    bookkeeping per grid step on a TPU TensorCore."""
    megacore: bool = False
    """TPU only: the chip's TensorCores act as one device, and ``parallel`` grid
    axes of a kernel are split across them (v4, v5p)."""


class MatrixUnit(_Strict):
    name: str
    units_per_core: Cited[PositiveInt]
    shape: Cited[list[PositiveInt]]
    """GPU: the granule an MMA instruction pads each of an operation's [m, n, k] up to
    (e.g. Hopper wgmma m64nNk16: [64, 8, 16]); TPU: the MXU's [rows, cols], to which
    the contraction and output-column dimensions are padded (rows stream in groups of
    the VPU's sublanes). Padding decides efficiency for small or odd shapes."""
    flops_per_cycle_per_core: Cited[dict[Dtype, PositiveNumber]]
    """Dense (no sparsity) peak, per core per clock cycle, by input dtype."""
    efficiency: Cited[Fraction] = calibratable()
    """Fraction of peak a well-shaped, well-fed kernel sustains."""
    chained_efficiency: Cited[Fraction] | None = calibratable(default=None)
    """Fraction of peak for *chained* matrix operations: those in a step whose matrix
    work alternates with vector or special-function work that consumes or produces its
    operands (attention: S = QK^T, softmax, then PV), so each waits for the one before
    instead of streaming like a GEMM's accumulating MMAs (see ``docs/engine.md``).
    Defaults to ``efficiency``."""
    pair: Cited[PositiveInt] | None = None
    """GPU: how many programs, on neighbouring SMs, one MMA can span, each holding its
    share of the B operand in its own shared memory (Blackwell's ``tcgen05.mma``
    ``cta_group::2``: 2); absent: 1, every program holds all of its B."""
    instruction_shape: Cited[list[PositiveInt]] | None = None
    """GPU with an asynchronous MMA: the largest [m, n, k] one MMA instruction covers (Hopper
    ``wgmma`` m64n256k16 for 16-bit inputs: [64, 256, 16]; Blackwell ``tcgen05.mma``: [128,
    256, 16]). An instruction reads its A and B operands from shared memory itself, so a
    block operation of [m, n, k] reads B once per instruction row (``ceil(m / 64)`` times on
    Hopper) and A once per instruction column (``ceil(n / 256)``): the per-shape cost that
    makes narrow-N MMAs shared-memory-bound (``docs/engine.md``, "Hopper and Blackwell SM
    mechanisms"). Absent: each block operand is read once."""
    asynchronous: Cited[bool] | None = None
    """GPU: the MMA reads its operands from shared memory while the program goes on
    (Hopper's ``wgmma.mma_async``, Blackwell's ``tcgen05.mma``), so a Triton-style
    pipeline of ``num_stages`` keeps one more shared-memory buffer than with a
    synchronous MMA (``mma.sync``, operands in registers): ``num_stages`` buffers rather
    than ``num_stages - 1`` on NVIDIA GPUs (``docs/engine.md``). Absent: false."""


class VectorUnit(_Strict):
    name: str
    shape: Cited[list[PositiveInt]] | None = None
    """TPU VPU: [sublanes, lanes] (8 x 128). GPUs leave it out."""
    flops_per_cycle_per_core: Cited[dict[Dtype, PositiveNumber]]
    special_function_ops_per_cycle_per_core: Cited[PositiveNumber]
    """Transcendentals (exp, rsqrt, ...) per core per cycle."""
    efficiency: Cited[Fraction] = calibratable()


class LocalMemory(_Strict):
    """Per-core on-chip memory that kernels manage: shared memory / L1 or VMEM."""

    name: str
    capacity: Cited[Bytes]
    max_per_program: Cited[Bytes]
    """Most one program (CTA / Pallas kernel instance) may allocate."""
    bandwidth_bytes_per_cycle: Cited[PositiveNumber]
    registers: Cited[Bytes]
    """Register file (GPU) or vector registers (TPU) per core."""
    fill_bandwidth_bytes_per_cycle: Cited[PositiveNumber] = calibratable()
    """The most one core can move between its local memory and the memory system per
    cycle: the SM's port to L2 on GPUs, the TensorCore's DMA engines on TPUs. Limits
    kernels with fewer programs than cores. A TPU config may leave it out: it is then
    derived from the chip (:data:`TPU_PORT_SOURCE`), so a what-if on HBM bandwidth or
    the clock moves it too."""
    latency: Cited[Seconds] = calibratable()
    tensor_memory: Cited[Bytes] | None = None
    """GPU: tensor memory per SM where matrix operations accumulate (Blackwell's TMEM);
    absent: accumulators live in registers."""
    load_bytes_in_flight: Cited[Bytes] | None = None
    """GPU: the most bytes of its threads' loads one SM keeps in flight (the L1's miss tracking:
    its MSHRs and pending-request table). Each load holds its share for its level's latency, so
    an SM's loads move at most this over the latency, whatever its programs ask (Little's law;
    TMA copies are not held to it). Absent: no limit beyond what the programs keep in flight."""
    bulk_copy_latency: Cited[Seconds] | None = None
    """GPU with a tensor memory accelerator (Hopper's and Blackwell's TMA): what a bulk tensor
    copy (``cp.async.bulk.tensor``) takes on top of a plain load's latency from the same level,
    for a program whose loads a TMA producer issues (trace ``kernel.execution.loads: tma``).
    Absent: 0."""

    @model_validator(mode="after")
    def _per_program_within_capacity(self) -> "LocalMemory":
        if self.max_per_program.value > self.capacity.value:
            raise ValueError(f"max_per_program ({self.max_per_program.value:g} B) exceeds capacity "
                             f"({self.capacity.value:g} B)")
        return self


class Occupancy(_Strict):
    """GPU per-SM limits that decide how many CTAs run at once."""

    max_warps_per_core: Cited[PositiveInt]
    max_programs_per_core: Cited[PositiveInt]
    registers_per_core: Cited[PositiveInt]
    """32-bit registers per SM."""
    max_registers_per_thread: Cited[PositiveInt]
    register_allocation_unit: Cited[PositiveInt] | None = None
    """Registers a warp is given at a time: a warp's registers (per thread x warp size) round
    up to a multiple of this. Absent: no rounding."""
    warp_size: PositiveInt = 32


class SharedCache(_Strict):
    """L2 (GPU) or CMEM (TPU): shared by all cores, in front of HBM."""

    name: str
    capacity: Cited[Bytes]
    bandwidth: Cited[BytesPerS]
    latency: Cited[Seconds] = calibratable()
    efficiency: Cited[Fraction] = calibratable()
    multicast: Cited[PositiveInt] | None = None
    """GPU: how many programs of a thread-block cluster one read of this level can serve
    at once (Hopper's TMA multicast); absent: none (every program reads its own copy)."""
    keeps_own_clock_above: Cited[Hz] | None = None
    """GPU: the lowest SM clock at which the L2 was measured keeping a clock of its own: at or
    above it the L2's bandwidth does not move when DVFS or a power cap lowers the SM clock; below
    it the bandwidth falls in proportion to the SM clock from there. Absent: the L2 is taken to be
    in the SM clock's domain, its bandwidth following the SM clock (``docs/power.md``)."""
    dirty_at_start: Cited[ByteCount] | None = None
    """GPU, how the chip was left rather than what it is: bytes of dirty lines (written by
    earlier work, not yet in HBM) the L2 holds when a kernel, or a trace's first kernel,
    starts; more than ``capacity`` counts as full. A timing tool that flushes the L2 by
    writing a large buffer before each call leaves it full; one that flushes by reading
    leaves 0. Each line the kernel brings in evicts the oldest, and a dirty one is written
    back to HBM (``docs/engine.md``, "Dirty lines at a kernel's start"). Absent: writes
    reach HBM as the kernel makes them (as in back-to-back calls)."""


class Hbm(_Strict):
    name: str
    capacity: Cited[Bytes]
    bandwidth: Cited[BytesPerS]
    latency: Cited[Seconds] = calibratable()
    efficiency: Cited[Fraction] = calibratable()
    """Fraction of the datasheet bandwidth a streaming kernel achieves."""
    queueing_latency: Cited[Seconds] | None = calibratable(default=None)
    """GPU: what a load waits on top of ``latency`` when HBM runs at its full (efficiency-
    capped) bandwidth on an even read-write mix; at utilization u, with a share ``f`` of
    the kernel's HBM bytes reads, it waits ``queueing_latency x 4 f (1 - f) x u^2`` (loads
    queue behind the bus's read-write turns: read-only traffic does not). Absent: latency
    does not grow with load."""
    queueing_unmixed_share: Cited[Share] | None = calibratable(default=None)
    """GPU: the share ``s`` of ``queueing_latency`` that loads wait whatever the read-write
    mix (bank conflicts and row misses of many streams rather than the bus's turns): the
    wait becomes ``queueing_latency x (s + (1 - s) 4 f (1 - f)) x u^2``, so read-only
    traffic queues too. Absent: 0 (only mixed traffic queues)."""
    turnaround_loss: Cited[Loss] | None = calibratable(default=None)
    """Fraction of the bandwidth lost when a kernel's HBM traffic is half reads, half
    writes (the bus turning around between them); a kernel whose HBM bytes are a share
    ``f`` reads gets ``efficiency x (1 - turnaround_loss x 4 f (1 - f))``, so read-only
    and write-only traffic keep ``efficiency``. Absent: no loss for mixed traffic."""


class ChipInterconnect(_Strict):
    """The chip's own scale-up links: NVLink / Infinity Fabric ports, or TPU ICI links."""

    name: str
    links: Cited[PositiveInt]
    bandwidth_per_link: Cited[BytesPerS]
    """Per direction, per link."""
    latency: Cited[Seconds] = calibratable()


def power_fit(**kwargs: Any) -> Any:
    """A field of the power model that ``accelsim calibrate --power`` may fit (on power
    readings, never on latencies: :func:`power_fit_paths`)."""
    return Field(json_schema_extra={"power_fit": True}, **kwargs)


class Boost(_Strict):
    """The per-kernel clock under the power limit (``docs/power.md``, "The boost clock"), off
    unless ``enabled``: every kernel starts at ``clock`` (the GPU's boost clock) under a cap of
    the TDP (or ``power.cap``), and one whose power passes the cap there runs at the clock the
    cap leaves it (:class:`Dvfs`). The chip's ``clock`` stays the one its peaks are quoted at;
    ``matrix_unit.efficiency`` and ``power.matrix_pj_per_flop`` are taken as measured by one
    GEMM that ran at ``matrix_reference_clock`` under the TDP, so the resolved chip has the
    clock-free pipe efficiency ``efficiency x clock / matrix_reference_clock`` and the matrix
    energy per flop at ``clock``; ``matrix_unit.chained_efficiency`` likewise as measured on
    kernels that ran at ``chained_reference_clock``."""

    enabled: bool = False
    clock: Cited[Hz]
    """The clock a kernel runs at where its power allows (the boost / default application clock;
    a record's locked clock is set here, not in ``clock``, while the boost is on)."""
    matrix_reference_clock: Cited[Hz]
    """The clock the GEMM behind ``matrix_unit.efficiency`` and the matrix energy ran at, at the TDP."""
    chained_reference_clock: Cited[Hz]
    """The clock the kernels behind ``matrix_unit.chained_efficiency`` ran at: with the boost on, the
    chained efficiency per cycle is ``chained_efficiency x clock / chained_reference_clock`` (a share
    of the peak quoted at ``clock``, reached at this clock)."""
    cap_delay: Cited[Seconds] | None = None
    """How long a kernel launched on a GPU that was below its power limit keeps ``clock`` before the
    power limiter, which acts on power it has measured, brings the clock down to what the cap allows
    (None: at once). Only kernels ``from_idle`` meet it."""
    from_idle: bool = False
    """How the kernels meet the limiter: False, back to back (a timing loop, a training step), the
    limiter settled, so a kernel over the cap runs at the capped clock throughout; True, each one
    launched alone on a GPU that idled before it (a timing tool that opens a profiler window per
    call and reads it on the host between calls), so its first ``cap_delay`` runs at ``clock``.
    A record says which in its ``conditions``."""

    @model_validator(mode="after")
    def _from_idle_needs_delay(self) -> "Boost":
        if self.from_idle and self.cap_delay is None:
            raise ValueError("'from_idle' needs 'cap_delay' (how long a kernel keeps the boost clock before the "
                             "power limiter acts)")
        return self


class Dvfs(_Strict):
    """How the clock answers a power cap (``docs/power.md``, "The DVFS rule"): the energy of an
    operation in the clock's domain goes as ``V^2``, and ``V`` tracks the clock down to
    ``floor_clock``, so at a clock ``f`` below the chip's ``clock`` each such operation costs
    ``(max(f, floor_clock) / clock) ^ (exponent - 1)`` of its energy there (power at a fixed
    amount of work per cycle goes as ``f ^ exponent``; 3 where ``V`` is proportional to ``f``)."""

    exponent: Cited[PositiveNumber] = power_fit()
    floor_clock: Cited[Hz] = power_fit()
    """Below this clock the voltage stops dropping: an operation costs what it costs here."""
    min_clock: Cited[Hz]
    """The lowest clock the power manager sets."""
    clock_step: Cited[Hz]
    """The steps the clock takes (NVIDIA GPUs: 15 MHz)."""
    boost: Boost | None = None
    """The boost clock with the TDP as the cap (off unless ``boost.enabled``; absent: the chip
    runs at ``clock``, its matrix efficiency and energy as measured at the TDP)."""

    @field_validator("exponent")
    @classmethod
    def _exponent_range(cls, value: Cited) -> Cited:
        if not 1 <= value.value <= 4:
            raise ValueError(f"'exponent' must be from 1 (voltage fixed) to 4, got {shown(value.value)}")
        return value


class ChipPower(_Strict):
    """A chip's power model (``docs/power.md``): energy per operation on each unit and per byte
    at each memory level and over the chip's links, in picojoules at the chip's ``clock``;
    the chip's power when idle and its static power while a kernel runs; TDP, an optional
    cap, and how the clock answers the cap (:class:`Dvfs`). Registers are not a level of
    their own: an operation's energy includes reading its operands from them."""

    tdp: Cited[Watts]
    """The board power the chip is designed to sustain (its default power limit)."""
    idle: Cited[Watts] = power_fit()
    """Power with nothing running (what a device waiting in a step draws)."""
    static: Cited[Watts] = power_fit()
    """Power while a kernel runs that does not depend on its activity (leakage, clocks,
    always-on logic, HBM refresh and PHYs)."""
    cap: Cited[Watts] | None = None
    """A power limit to apply (``--set power.cap="500 W"``): a kernel whose power at the
    chip's clock is above it runs at the highest clock step whose power fits. Absent: the
    clock is never lowered."""
    matrix_pj_per_flop: Cited[dict[Dtype, PositiveNumber]] = power_fit()
    """Per executed flop on the matrix units (padding included), by input dtype."""
    vector_pj_per_flop: Cited[dict[Dtype, PositiveNumber]] = power_fit()
    """Per flop on the vector units, by dtype (a dtype without an entry costs fp32's)."""
    special_function_pj_per_op: Cited[PositiveNumber]
    local_memory_pj_per_byte: Cited[PositiveNumber]
    """Shared memory / VMEM: every byte filled, drained or read as a matrix operand."""
    shared_cache_pj_per_byte: Cited[PositiveNumber] | None = None
    """L2: every byte it serves (GPUs; absent where the engine keeps no shared cache)."""
    hbm_pj_per_byte: Cited[PositiveNumber] = power_fit()
    interconnect_pj_per_byte: Cited[PositiveNumber]
    """NVLink / ICI: every byte crossing one of the chip's links, per direction."""
    dvfs: Dvfs

    @model_validator(mode="after")
    def _within_tdp(self) -> "ChipPower":
        for name in ("idle", "static"):
            if getattr(self, name).value >= self.tdp.value:
                raise ValueError(f"'{name}' ({getattr(self, name).value:g} W) must be below 'tdp' "
                                 f"({self.tdp.value:g} W)")
        return self


class ClusterPower(_Strict):
    nic_pj_per_byte: Cited[PositiveNumber]
    """Every byte through a NIC and the scale-out fabric (InfiniBand, RoCE, EFA), one way."""


class MultislicePower(_Strict):
    dcn_pj_per_byte: Cited[PositiveNumber]
    """Every byte over the data-centre network between slices, one way."""


def power_fit_paths() -> list[str]:
    """Dotted paths of the power fields ``calibrate --power`` may fit (``power.static``, ...)."""
    out = []
    for section, model in (("power", ChipPower), ("power.dvfs", Dvfs)):
        for name, field in model.model_fields.items():
            extra = field.json_schema_extra
            if isinstance(extra, dict) and extra.get("power_fit"):
                out.append(f"{section}.{name}")
    return out


class Interval(_Strict):
    """Relative error quantiles of a kernel family's predictions on held-out measurements."""

    p05: float
    p95: float
    records: PositiveInt
    source: str

    @model_validator(mode="after")
    def _ordered(self) -> "Interval":
        if not -1 < self.p05 <= self.p95:
            raise ValueError(f"expected -1 < p05 <= p95, got p05={self.p05}, p95={self.p95}")
        return self


class FamilyValue(_Strict):
    """A calibratable value that holds for one kernel family only (``family_values``)."""

    value: float | int | str
    """As ``--set`` takes it: a number, or a quantity with its unit (``3.26 us``)."""
    basis: Literal["fitted", "estimate", "measured", "derived"] = "fitted"
    source: str
    note: str | None = None


TPU_PORT_SOURCE = ("HBM bandwidth / clock, shared by the TensorCores that are separate devices "
                   "(megacore: one): one TensorCore's DMAs can use all of its HBM")


def _tpu_port(data: dict) -> dict:
    """A TPU config without ``local_memory.fill_bandwidth_bytes_per_cycle`` gets it
    derived from its HBM bandwidth and clock (as given, overrides included)."""
    memory = data.get("local_memory")
    if data.get("family") != "tpu" or not isinstance(memory, dict) or memory.get("fill_bandwidth_bytes_per_cycle"):
        return data

    def value(entry: Any) -> Any:
        return entry.get("value") if isinstance(entry, dict) else entry

    try:
        hbm = parse_quantity(value(data["hbm"]["bandwidth"]), "bytes_per_s")
        clock = parse_quantity(value(data["clock"]), "hz")
        cores = data.get("cores") or {}
        devices = 1 if value(cores.get("megacore")) else int(value(cores["count"]))
        port = hbm / clock / devices
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
        return data  # the fields' own validation says what is wrong
    return {**data, "local_memory": {**memory, "fill_bandwidth_bytes_per_cycle": {
        "value": port, "basis": "derived", "source": TPU_PORT_SOURCE}}}


class ChipSpec(_ConfigFile):
    kind: Literal["chip"]
    vendor: str
    family: Family
    clock: Cited[Hz]
    cores: Cores
    matrix_unit: MatrixUnit
    vector_unit: VectorUnit
    local_memory: LocalMemory
    occupancy: Occupancy | None = None
    shared_cache: SharedCache | None = None
    hbm: Hbm
    launch_overhead: Cited[Seconds] = calibratable()
    """Fixed cost per kernel launch (GPU) or per pallas_call (TPU)."""
    kernel_device_overhead: Cited[Seconds] | None = calibratable(default=None)
    """The part of ``launch_overhead`` that a kernel's own device interval holds, once per
    kernel: from the kernel's start on the device to its first program, and from its last
    program's end to the kernel's end. A device timing (CUPTI, ``latency_kind: device``)
    sees it where it leaves the launch out; absent: none (``docs/engine.md``, "A kernel's
    device-side fixed time"). Not checked against ``launch_overhead``, so that a fit or a
    what-if of either leaves the other as published."""
    interconnect: ChipInterconnect
    power: ChipPower | None = None
    """Energy and power (``docs/power.md``); absent: results carry no energy."""
    uncertainty: dict[str, Interval] = {}
    """Per kernel family: prediction error quantiles on held-out measurements, written by
    ``accelsim calibrate``; ``simulate --json`` turns them into ``latency_s_p05/p95``."""
    family_values: dict[str, dict[str, FamilyValue]] = {}
    """Per kernel family: config paths whose value differs for that family's kernels (written
    by ``accelsim calibrate --scope FAMILY``): a per-program overhead that stands in for
    costs one family's model lacks must not slow every other family's kernels."""

    @model_validator(mode="before")
    @classmethod
    def _derived_fields(cls, data: Any) -> Any:
        return _tpu_port(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _derived_port_follows(self) -> "ChipSpec":
        """A derived TPU port follows the HBM bandwidth, clock and cores it came from when
        an override on the validated spec changes them (as it does in a config's text)."""
        port = self.local_memory.fill_bandwidth_bytes_per_cycle
        if self.family != "tpu" or port is None or port.basis != "derived":
            return self
        devices = 1 if self.cores.megacore else self.cores.count.value
        value = self.hbm.bandwidth.value / self.clock.value / devices
        if value == port.value:
            return self
        memory = self.local_memory.model_copy(update={"fill_bandwidth_bytes_per_cycle": port.model_copy(
            update={"value": value})})
        return self.model_copy(update={"local_memory": memory})

    @model_validator(mode="after")
    def _family_sections(self) -> "ChipSpec":
        rules = CHIP_KIND_RULES[self.family]
        if _field_at(self, rules.required) is None:
            raise ValueError(f"field {rules.required!r} is required for family {self.family!r}")
        if len(self.matrix_unit.shape.value) != rules.matrix_entries:
            raise ValueError(f"'matrix_unit.shape': expected {rules.matrix_entries} entries {rules.matrix_shape} on a "
                             f"{self.family.upper()}, got {self.matrix_unit.shape.value}")
        shape = self.matrix_unit.instruction_shape
        if shape is not None and (self.family != "gpu" or len(shape.value) != 3):
            raise ValueError(f"'matrix_unit.instruction_shape': expected [m, n, k] on a GPU, got {shape.value}")
        if self.vector_unit.shape is not None and len(self.vector_unit.shape.value) != 2:
            raise ValueError(f"'vector_unit.shape': expected 2 entries [sublanes, lanes], got "
                             f"{self.vector_unit.shape.value}")
        for other in CHIP_KIND_RULES.values():
            if other is rules:
                continue
            for path, message in other.only.items():  # another kind's field, set
                if _field_at(self, path) not in (None, False):
                    raise ValueError(message)
        return self


@dataclass(frozen=True)
class ChipKindRules:
    """What a chip config of one kind (its ``family``) must give and alone may give."""

    required: str
    """A field (dotted path) this kind needs."""
    matrix_entries: int
    matrix_shape: str
    """What ``matrix_unit.shape``'s entries are."""
    only: dict[str, str]
    """Fields (dotted paths) only this kind may set, and the error when another does."""


CHIP_KIND_RULES: dict[str, ChipKindRules] = {
    "gpu": ChipKindRules(
        required="occupancy", matrix_entries=3, matrix_shape="[m, n, k] (the MMA granule)",
        only={"hbm.queueing_latency": "'hbm.queueing_latency' applies to GPUs only (the TPU engine does not model it)",
              "hbm.queueing_unmixed_share": "'hbm.queueing_unmixed_share' applies to GPUs only (the TPU engine does "
                                            "not model queueing)",
              "shared_cache.dirty_at_start": "'shared_cache.dirty_at_start' applies to GPUs only (the TPU engine "
                                             "keeps no L2 state)",
              "shared_cache.keeps_own_clock_above": "'shared_cache.keeps_own_clock_above' applies to GPUs only (a "
                                                    "TPU's clock search leaves its CMEM's bandwidth as it is)"}),
    "tpu": ChipKindRules(required="vector_unit.shape", matrix_entries=2, matrix_shape="[rows, cols] (the MXU)",
                         only={"cores.megacore": "'cores.megacore' applies to TPUs only"}),
}


def _field_at(spec: Any, path: str) -> Any:
    """The field at a dotted path, or None where a section on the way is absent."""
    for name in path.split("."):
        if spec is None:
            return None
        spec = getattr(spec, name)
    return spec


# ---------------------------------------------------------------- systems


class NodeSwitch(_Strict):
    name: str
    count: Cited[PositiveInt]
    latency: Cited[Seconds] = calibratable()
    nvls: bool = False
    """In-switch reduction (NVLink SHARP) available for all-reduce."""


class Protocol(_Strict):
    """One NCCL protocol (LL, LL128, Simple) on this node's links: how much of a link's
    bandwidth carries data, how fast one rank can push it, and what a collective and
    each of its steps cost in latency (NCCL's own tuning model: base + steps x hop)."""

    efficiency: Cited[Fraction]
    """Payload fraction of what crosses the wire (LL: 4 B of data per 8 B; LL128:
    120 B per 128 B line; Simple: all of it)."""
    max_bandwidth_per_rank: Cited[BytesPerS] | None = calibratable(default=None)
    """Most one rank sends per second with this protocol (LL and LL128 are limited by
    the GPU threads that poll flags, not by the links). None: no limit."""
    base_latency: Cited[Seconds] = calibratable()
    """Fixed cost of one collective with this protocol (kernel start, synchronisation)."""
    step_latency: Cited[Seconds] = calibratable()
    """Cost of one algorithm step over NVLink, hop included (NCCL's ``hwLat``)."""
    net_step_latency: Cited[Seconds] | None = calibratable(default=None)
    """Cost of a step that crosses the scale-out network, before the fabric's own
    latency (NCCL's ``hwLat`` of NET, which replaces the NVLink one on such steps). None:
    the NVLink step latency, with the fabric latency added."""


class NodeCollectives(_Strict):
    """How NCCL moves data on the node: achievable link bandwidth, its protocols, NVLS."""

    generation: Literal["ampere", "hopper", "blackwell"] | None = None
    """NCCL's architecture class for the node's GPUs (its ``compCapIndex``): which of
    NCCL's per-architecture tables apply (``accelsim.network.nccl_tables``), and which
    nodes a fit's bandwidth figures carry to (``docs/collectives.md``)."""
    link_efficiency: Cited[Fraction] = calibratable()
    """Fraction of the nominal NVLink bandwidth that a bulk transfer achieves (packet
    headers, flow control)."""
    protocols: dict[Literal["ll", "ll128", "simple"], Protocol]
    nvls_efficiency: Cited[Fraction] | None = calibratable(default=None)
    """NVLS (in-switch reduction) all-reduce: fraction of the link bandwidth each GPU's
    send-once / receive-once streams achieve. Required when ``switch.nvls`` is true."""
    nvls_latency: Cited[Seconds] | None = calibratable(default=None)
    """Fixed cost of one NVLS all-reduce."""
    channel_bandwidth: Cited[BytesPerS] | None = calibratable(default=None)
    """Wire bytes one NCCL channel (one thread block) moves per second: a ring or tree
    that NCCL runs on few channels, as it does below some hundreds of KiB
    (``nccl_tables.collective_channels``), sends no faster than its channels do. Without
    it the channel count is not modelled; the shipped nodes leave it out (with it fitted on
    DGX H100, never-fitted systems got worse overall: docs/collectives.md, "NCCL's channel
    count for small messages")."""
    kernel_clock: Cited[Hz] | None = None
    """The SM clock NCCL's kernels run at (the GPU's maximum boost: a kernel that moves a few
    bytes draws little power). A latency fitted on another node carries here in GPU cycles,
    scaled by that node's ``kernel_clock`` over this one (``nccl_tables.latency_carry_scale``);
    without it a carried latency is taken unscaled."""

    @model_validator(mode="after")
    def _simple_present(self) -> "NodeCollectives":
        if "simple" not in self.protocols:
            raise ValueError("'protocols' needs at least 'simple'")
        return self


MAX_NODE_GPUS = 1024
"""GPUs a node may hold: a node's collectives share one switch fabric, simulated with
every GPU's links at once (memory grows as GPUs squared: 8192 took 2 GB)."""


class NodeSpec(_ConfigFile):
    """GPUs in one box, all-to-all through switches (NVSwitch)."""

    kind: Literal["node"]
    chip: str
    gpus: Cited[PositiveInt]
    switch: NodeSwitch
    collectives: NodeCollectives | None = None
    """The NCCL model of the node (protocols, link efficiency, NVLS). Without it links run
    at their nominal bandwidth and a step costs the route's link latencies."""

    @model_validator(mode="after")
    def _domain_size(self) -> "NodeSpec":
        if self.gpus.value > MAX_NODE_GPUS:
            raise ValueError(f"gpus: at most {MAX_NODE_GPUS} GPUs in one NVLink domain (the largest announced, "
                             f"NVL576, has 576), got {self.gpus.value}; for more, a cluster of nodes")
        return self

    @model_validator(mode="after")
    def _nvls_figures(self) -> "NodeSpec":
        c = self.collectives
        if c and self.switch.nvls and (c.nvls_efficiency is None or c.nvls_latency is None):
            raise ValueError("'collectives' needs 'nvls_efficiency' and 'nvls_latency' when 'switch.nvls' is true")
        return self


MAX_NCCL_CHANNELS = 64
"""``MAXCHANNELS`` (NCCL src/include/device.h): the most channels a communicator runs."""
MAX_NICS_PER_NODE = 144
"""Scale-out NICs one node may have: the densest nodes have one or two per GPU (8 to 16
for 8 GPUs, 72 for a GB200 NVL72 rack taken as one node); each is simulated as a pair of
links."""
MAX_CLUSTER_NICS = 1 << 20
"""NICs of a whole cluster (nodes x NICs per node): as many as the chips accelsim models,
so the fabric is never larger than the system it serves."""


def _nic_count(v: int) -> int:
    if v > MAX_NICS_PER_NODE:
        raise ValueError(f"must be at most {MAX_NICS_PER_NODE} NICs per node, got {v:,}")
    return v


MAX_NCCL_BUFFER_BYTES = 2**30
"""``NCCL_BUFFSIZE`` at most: 1 GiB, 256 times NCCL's 4 MiB default."""


class ScaleOutNetwork(_Strict):
    fabric: Literal["infiniband", "roce", "efa", "gpudirect-tcpx", "gpudirect-tcpxo"]
    """The transport NCCL's network plugin runs on (its latency is ``switch_latency``)."""
    nics_per_node: Cited[Annotated[PositiveInt, AfterValidator(_nic_count)]]
    nic_bandwidth: Cited[BytesPerS]
    """Per NIC, per direction."""
    switch_latency: Cited[Seconds] = calibratable()
    rail_optimized: bool = True
    """Each GPU's NIC goes to its own rail switch (GPU i of every node on rail i)."""
    host_cpu: Literal["intel", "amd", "arm"] = "intel"
    """The nodes' host CPU vendor: NCCL sizes LL across nodes by it (``llMaxBws``, AMD hosts
    one row, every other host the Intel one; ``accelsim.network.nccl_tables``)."""
    nccl_protocols: Annotated[list[Literal["ll", "ll128", "simple"]], Field(min_length=1)] | None = None
    """The protocols the platform's NCCL environment allows (its ``NCCL_PROTO``; e.g. the
    GPUDirect-TCPXO plugin runs Simple only). None: every protocol of the node."""
    nvls_enabled: bool = True
    """The platform's ``NCCL_NVLS_ENABLE``: false where its network plugin cannot run NVLS
    (GPUDirect-TCPXO), so neither NVLS nor NVLS-tree is a candidate."""
    nccl_buffer_size: Cited[Bytes] | None = None
    """The platform's ``NCCL_BUFFSIZE``: Simple's buffer per connection, whose eighth
    (``NCCL_STEPS``) is a tree's chunk (``accelsim.network.nccl_tables.tree_simple_fill_s``).
    None: NCCL's default, 4 MiB."""
    nccl_min_channels: Annotated[int, Field(ge=1, le=MAX_NCCL_CHANNELS)] | None = None
    """The run's ``NCCL_MIN_NCHANNELS``: the communicator copies its channels up to this many
    (``ncclTopoPostset``), so LL128, whose rate is per channel, runs on more of them
    (``accelsim.network.nccl_tables.ll128_channel_scale``). None: the channels NCCL's search
    finds, run twice."""
    tuner: Literal["aws-ofi-p6"] | None = None
    """The platform's NCCL tuner plugin, where it picks the algorithm and protocol instead of
    NCCL's own cost model (``accelsim.network.tuners``). None: NCCL's choice (``auto``)."""

    @field_validator("nccl_buffer_size")
    @classmethod
    def _buffer_size_range(cls, value: Cited | None) -> Cited | None:
        if value is not None and not 0 < value.value <= MAX_NCCL_BUFFER_BYTES:
            raise ValueError(f"'nccl_buffer_size' must be above 0 and at most 1 GiB, got {shown(value.value)} bytes")
        return value


class ClusterSpec(_ConfigFile):
    """N identical nodes over a scale-out network."""

    kind: Literal["cluster"]
    node: str
    nodes: Cited[PositiveInt]
    network: ScaleOutNetwork
    power: ClusterPower | None = None

    @model_validator(mode="after")
    def _fabric_size(self) -> "ClusterSpec":
        nics = self.network.nics_per_node.value
        # more nodes than that: the system's chip count refuses them (a node has a GPU at least)
        if self.nodes.value <= MAX_CLUSTER_NICS < nics * self.nodes.value:
            raise ValueError(f"network.nics_per_node: the cluster would have {nics * self.nodes.value:,} NICs "
                             f"({self.nodes.value:,} nodes x {nics}); accelsim models at most {MAX_CLUSTER_NICS:,}")
        return self


WRAP_RULES = ("axes of 16", "full cubes")
"""How a TPU generation wraps a slice's axes, as its documentation states the rule:
v5e and v6e close an axis into a ring when it has 16 chips; v4 and v5p close every axis
of a 3D slice made of whole 4x4x4 cubes (every axis a multiple of 4) and none of a smaller
one (nor of a 1D or 2D what-if shape)."""


def wrapped_axes(wraparound: list[bool] | str, shape: list[int] | tuple[int, ...]) -> tuple[bool, ...]:
    """Per axis of ``shape``: does it close into a ring (a list as given, or a rule of
    :data:`WRAP_RULES` applied to the shape)?"""
    if wraparound == "axes of 16":
        return tuple(n == 16 for n in shape)
    if wraparound == "full cubes":
        whole = len(shape) == 3 and all(n % 4 == 0 for n in shape)
        return tuple(whole for _ in shape)
    return tuple(wraparound)


class TorusSpec(_ConfigFile):
    """A TPU slice: chips on a 2D or 3D torus of ICI links."""

    kind: Literal["torus"]
    chip: str
    shape: list[PositiveInt]
    wraparound: Cited[list[bool] | Literal[WRAP_RULES]]
    """Per axis: whether the axis closes into a ring; or the generation's rule
    (:data:`WRAP_RULES`), so that a what-if slice shape wraps as that generation would."""

    @field_validator("wraparound", mode="before")
    @classmethod
    def _known_rule(cls, value: Any) -> Any:
        given = value.get("value") if isinstance(value, dict) else value
        if isinstance(given, str) and given not in WRAP_RULES:
            raise ValueError(f"expected a list of booleans, one per axis, or a rule: {', '.join(WRAP_RULES)}; "
                             f"got {shown(given)}")
        return value

    @model_validator(mode="after")
    def _axes_agree(self) -> "TorusSpec":
        if not 1 <= len(self.shape) <= 3:
            raise ValueError(f"'shape' must have 1 to 3 axes, got {len(self.shape)}")
        if isinstance(self.wraparound.value, list) and len(self.wraparound.value) != len(self.shape):
            raise ValueError(
                f"'wraparound' has {len(self.wraparound.value)} entries but 'shape' has "
                f"{len(self.shape)} axes"
            )
        return self


class Dcn(_Strict):
    bandwidth_per_chip: Cited[BytesPerS]
    """Data-centre network bandwidth per chip, per direction."""
    latency: Cited[Seconds] = calibratable()


class MultisliceSpec(_ConfigFile):
    """Several identical TPU slices joined over the data-centre network."""

    kind: Literal["multislice"]
    slice: str
    slices: Cited[PositiveInt]
    dcn: Dcn
    power: MultislicePower | None = None


SystemSpec = Union[NodeSpec, ClusterSpec, TorusSpec, MultisliceSpec]
ConfigSpec = Annotated[
    Union[ChipSpec, NodeSpec, ClusterSpec, TorusSpec, MultisliceSpec],
    Field(discriminator="kind"),
]
KINDS = ("chip", "node", "cluster", "torus", "multislice")


def calibratable_paths(model: type[BaseModel] = ChipSpec, prefix: tuple[str, ...] = ()) -> list[str]:
    """Dotted paths of every field marked calibratable, e.g. ``hbm.efficiency``."""
    out: list[str] = []
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get("calibratable"):
            out.append(".".join(prefix + (name,)))
            continue
        for sub in _model_types(field.annotation):
            out.extend(calibratable_paths(sub, prefix + (name,)))
    return out


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and not issubclass(annotation, Cited):
        return [annotation]
    return [t for arg in getattr(annotation, "__args__", ()) for t in _model_types(arg)]
