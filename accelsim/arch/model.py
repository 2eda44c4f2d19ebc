"""Resolved machine descriptions: what the simulator reads.

These are frozen, keyword-only records whose field names carry their unit. They are
built from a validated spec (:mod:`accelsim.arch.schema`) by :func:`load_arch`, and
nothing downstream reads raw config dictionaries. Per-core figures are per SM (GPU)
or per TensorCore (TPU); chip figures say ``chip`` in their name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Union

from accelsim.arch import schema
from accelsim.arch.clock_domains import enabled_boost, l2_clock_share, run_clock_hz
from accelsim.arch.collective_tuning import CollectiveTuning, resolve_collectives
from accelsim.arch.loader import Override, OverrideError, load_raw, parse_override, validate, with_values
from accelsim.errors import InputError, shown
from accelsim.families import FAMILIES
from accelsim.units import J_PER_PJ


@dataclass(frozen=True, kw_only=True)
class MatrixUnit:
    units_per_core: int
    shape: tuple[int, ...]
    flops_per_cycle_per_core: Mapping[str, float]
    efficiency: float
    chained_efficiency: float
    pair: int = 1
    """Programs one MMA can span, each holding its share of B (Blackwell's 2-SM MMA)."""
    asynchronous: bool = False
    """The MMA reads shared memory asynchronously (wgmma, tcgen05): see :meth:`Chip.staged_buffers`."""
    instruction_shape: tuple[int, int, int] | None = None
    """The largest [m, n, k] one asynchronous MMA instruction covers; its operands are read
    from shared memory per instruction (None: each block operand once)."""


@dataclass(frozen=True, kw_only=True)
class VectorUnit:
    shape: tuple[int, ...] | None
    flops_per_cycle_per_core: Mapping[str, float]
    special_function_ops_per_cycle_per_core: float
    efficiency: float


@dataclass(frozen=True, kw_only=True)
class LocalMemory:
    capacity_bytes: float
    max_per_program_bytes: float
    bandwidth_bytes_per_cycle: float
    registers_bytes: float
    fill_bandwidth_bytes_per_cycle: float
    latency_s: float
    tensor_memory_bytes: float = 0.0
    """Blackwell's TMEM per SM, where MMAs accumulate (0: accumulators in registers)."""
    bulk_copy_latency_s: float = 0.0
    """What a TMA bulk tensor copy takes beyond a plain load's latency (0: no TMA)."""
    load_bytes_in_flight: float = 0.0
    """GPU: the most bytes of thread-issued loads one SM keeps in flight (0: no limit)."""


@dataclass(frozen=True, kw_only=True)
class Occupancy:
    max_warps_per_core: int
    max_programs_per_core: int
    registers_per_core: int
    max_registers_per_thread: int
    warp_size: int
    register_allocation_unit: int = 1
    """Registers per warp allocated at once (1: no rounding)."""


@dataclass(frozen=True, kw_only=True)
class MemoryLevel:
    """A shared memory level (L2 / CMEM, or HBM)."""

    name: str
    capacity_bytes: float
    bandwidth_bytes_per_s: float
    latency_s: float
    efficiency: float
    multicast: int = 1
    """Programs one read can serve at once (TMA multicast within a cluster); 1: none."""
    queueing_latency_s: float = 0.0
    """HBM on a GPU: extra latency at full bandwidth (``Hbm.queueing_latency``)."""
    queueing_unmixed_share: float = 0.0
    """HBM on a GPU: share of the queueing any traffic sees (``Hbm.queueing_unmixed_share``)."""
    turnaround_loss: float = 0.0
    """HBM: bandwidth lost to read-write turnarounds at an even mix (``Hbm.turnaround_loss``)."""
    dirty_at_start_bytes: float | None = None
    """L2 on a GPU: dirty bytes it holds when a kernel starts (``SharedCache.dirty_at_start``);
    None: writes reach HBM as the kernel makes them."""
    keeps_own_clock_above_hz: float | None = None
    """L2 on a GPU: the lowest SM clock down to which it keeps a clock of its own
    (``SharedCache.keeps_own_clock_above``); None: it is in the SM clock's domain."""

    def clock_share(self, clock_hz: float, chip_clock_hz: float) -> float:
        """The share of its bandwidth this level keeps when the SM clock goes from
        ``chip_clock_hz`` to ``clock_hz`` (:func:`~accelsim.arch.clock_domains.l2_clock_share`)."""
        return l2_clock_share(clock_hz, chip_clock_hz, self.keeps_own_clock_above_hz)

    def queueing_mix(self, read_bytes: float, write_bytes: float) -> float:
        """The share of ``queueing_latency`` these reads and writes wait at full load:
        ``s + (1 - s) 4 f (1 - f)`` (``Hbm.queueing_unmixed_share``)."""
        share = self.queueing_unmixed_share
        return share + (1.0 - share) * read_write_mix(read_bytes, write_bytes)

    def mixed_efficiency(self, read_bytes: float, write_bytes: float) -> float:
        """``efficiency`` for traffic of these reads and writes (``Hbm.turnaround_loss``)."""
        if not self.turnaround_loss:
            return self.efficiency
        return self.efficiency * (1.0 - self.turnaround_loss * read_write_mix(read_bytes, write_bytes))


def read_write_mix(read_bytes: float, write_bytes: float) -> float:
    """``4 f (1 - f)`` for a share ``f`` of reads: 0 for read-only or write-only traffic
    (or none), 1 for an even mix. How often the DRAM bus turns between reads and writes,
    which both the turnaround loss and HBM queueing scale with."""
    total = read_bytes + write_bytes
    return 4.0 * read_bytes * write_bytes / (total * total) if total > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class Links:
    name: str
    count: int
    bandwidth_per_link_bytes_per_s: float
    """Per direction."""
    latency_s: float


@dataclass(frozen=True, kw_only=True)
class PowerModel:
    """A chip's power model in joules and watts (``schema.ChipPower``; ``docs/power.md``).
    Per-operation energies hold at the chip's own clock; :class:`Dvfs` says how they scale."""

    tdp_w: float
    idle_w: float
    static_w: float
    cap_w: float | None
    matrix_j_per_flop: Mapping[str, float]
    vector_j_per_flop: Mapping[str, float]
    special_function_j_per_op: float
    local_memory_j_per_byte: float
    shared_cache_j_per_byte: float
    hbm_j_per_byte: float
    interconnect_j_per_byte: float
    dvfs_exponent: float
    floor_clock_hz: float
    min_clock_hz: float
    clock_step_hz: float
    boost_clock_hz: float | None = None
    """With ``power.dvfs.boost`` on, the clock kernels run at where their power allows (the
    chip's ``clock_hz`` then), which a record's locked clock replaces; None: off."""
    cap_delay_s: float | None = None
    """With the boost on and kernels ``from_idle``: how long one keeps the boost clock before the
    limiter brings it down to the capped clock (``power.dvfs.boost.cap_delay``); None: at once."""


def _power_model(spec: schema.ChipPower | None, boost: schema.Boost | None) -> PowerModel | None:
    """The power model; with the boost (:func:`~accelsim.arch.clock_domains.enabled_boost`) on, the matrix energies move from the reference GEMM's
    clock to the boost clock (``(boost / reference) ^ (exponent - 1)``, the DVFS rule's ``V^2``)
    and the cap is the TDP unless one is given."""
    if spec is None:
        return None
    matrix_scale = 1.0
    if boost is not None:
        reference_hz = max(boost.matrix_reference_clock.value, spec.dvfs.floor_clock.value)
        matrix_scale = (boost.clock.value / reference_hz) ** (spec.dvfs.exponent.value - 1.0)

    def per_dtype(cited, scale: float = 1.0) -> Mapping[str, float]:
        return MappingProxyType({dtype: pj * J_PER_PJ * scale for dtype, pj in cited.value.items()})

    cap = spec.cap or (spec.tdp if boost is not None else None)
    return PowerModel(
        tdp_w=spec.tdp.value, idle_w=spec.idle.value, static_w=spec.static.value,
        cap_w=cap.value if cap else None,
        matrix_j_per_flop=per_dtype(spec.matrix_pj_per_flop, matrix_scale),
        vector_j_per_flop=per_dtype(spec.vector_pj_per_flop),
        special_function_j_per_op=spec.special_function_pj_per_op.value * J_PER_PJ,
        local_memory_j_per_byte=spec.local_memory_pj_per_byte.value * J_PER_PJ,
        shared_cache_j_per_byte=spec.shared_cache_pj_per_byte.value * J_PER_PJ if spec.shared_cache_pj_per_byte else 0.0,
        hbm_j_per_byte=spec.hbm_pj_per_byte.value * J_PER_PJ,
        interconnect_j_per_byte=spec.interconnect_pj_per_byte.value * J_PER_PJ,
        dvfs_exponent=spec.dvfs.exponent.value, floor_clock_hz=spec.dvfs.floor_clock.value, min_clock_hz=spec.dvfs.min_clock.value,
        clock_step_hz=spec.dvfs.clock_step.value,
        boost_clock_hz=boost.clock.value if boost is not None else None,
        cap_delay_s=_cap_delay_s(boost),
    )


def _cap_delay_s(boost: schema.Boost | None) -> float | None:
    """The boost clock's hold before the limiter acts, for kernels launched from idle only
    (:attr:`schema.Boost.from_idle`); None where they run back to back or it is not given."""
    if boost is None or not boost.from_idle or boost.cap_delay is None:
        return None
    return boost.cap_delay.value


@dataclass(frozen=True, kw_only=True)
class Chip:
    """A chip of either kind: a :class:`GpuChip` or a :class:`TpuChip` (its type is its
    kind, also named by ``kind``; a config's ``family`` field). "Family" elsewhere means a
    kernel family."""

    kind: ClassVar[str]
    name: str
    display_name: str
    vendor: str
    clock_hz: float
    num_cores: int
    core_kind: str
    program_overhead_s: float
    matrix: MatrixUnit
    vector: VectorUnit
    local: LocalMemory
    shared_cache: MemoryLevel | None
    hbm: MemoryLevel
    launch_overhead_s: float
    links: Links
    kernel_device_overhead_s: float = 0.0
    """The part of ``launch_overhead_s`` inside a kernel's device interval (once per kernel)."""
    power: PowerModel | None = None
    """Energy per operation and byte, static power, TDP and DVFS (None: no energy figures)."""
    uncertainty: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))
    """Per kernel family: (p05, p95) relative error on held-out measurements."""
    family_chips: Mapping[str, Chip] = field(default_factory=lambda: MappingProxyType({}))
    """Per kernel family with ``family_values``: this chip with those values set."""
    datasheet_clock_hz: float | None = None
    """With ``power.dvfs.boost`` on, the config's ``clock``: the one the datasheet's peaks are
    quoted at, while kernels run at ``clock_hz`` (the boost clock) at most; None: ``clock_hz``."""

    def for_family(self, family: str | None) -> Chip:
        """The chip a ``family`` kernel runs on: itself, or its variant with that family's values."""
        return self.family_chips.get(family, self) if family else self

    def staged_buffers(self, num_stages: int) -> int:
        """Shared-memory buffers a Triton-style pipeline of ``num_stages`` keeps per staged
        operand: ``num_stages`` here (not checked for other compilers than Triton's NVIDIA
        pipeliner, :meth:`GpuChip.staged_buffers`)."""
        return num_stages

    def matrix_flops_per_s(self, dtype: str) -> float:
        """Chip peak of the matrix units for ``dtype`` inputs (dense)."""
        return self.matrix.flops_per_cycle_per_core[dtype] * self.num_cores * self.clock_hz

    def vector_flops_per_s(self, dtype: str) -> float:
        return self.vector.flops_per_cycle_per_core[dtype] * self.num_cores * self.clock_hz

    @property
    def peak_clock_hz(self) -> float:
        """The clock the datasheet's peaks are quoted at (:attr:`datasheet_clock_hz`)."""
        return self.datasheet_clock_hz or self.clock_hz

    def datasheet_matrix_flops_per_s(self, dtype: str) -> float:
        """:meth:`matrix_flops_per_s` at :attr:`peak_clock_hz`: the peak a datasheet, a roofline
        and a share of the peak quote, whatever clock kernels run at."""
        return self.matrix.flops_per_cycle_per_core[dtype] * self.num_cores * self.peak_clock_hz

    def datasheet_vector_flops_per_s(self, dtype: str) -> float:
        return self.vector.flops_per_cycle_per_core[dtype] * self.num_cores * self.peak_clock_hz

    @property
    def special_function_ops_per_s(self) -> float:
        return self.vector.special_function_ops_per_cycle_per_core * self.num_cores * self.clock_hz

    @property
    def link_bandwidth_bytes_per_s(self) -> float:
        """All of the chip's scale-up links together, one direction."""
        return self.links.count * self.links.bandwidth_per_link_bytes_per_s


@dataclass(frozen=True, kw_only=True)
class GpuChip(Chip):
    """A GPU: programs (CTAs) resident on SMs up to its occupancy limits."""

    kind: ClassVar[str] = "gpu"
    occupancy: Occupancy

    @staticmethod
    def kind_fields(spec: schema.ChipSpec) -> dict:
        occ = spec.occupancy
        return {"occupancy": Occupancy(
            max_warps_per_core=occ.max_warps_per_core.value,
            max_programs_per_core=occ.max_programs_per_core.value,
            registers_per_core=occ.registers_per_core.value,
            max_registers_per_thread=occ.max_registers_per_thread.value,
            warp_size=occ.warp_size,
            register_allocation_unit=occ.register_allocation_unit.value if occ.register_allocation_unit else 1,
        )}

    def staged_buffers(self, num_stages: int) -> int:
        """Shared-memory buffers a Triton-style pipeline of ``num_stages`` keeps per staged
        operand: ``num_stages`` where the MMA reads shared memory asynchronously (Hopper,
        Blackwell: one buffer stays with the running MMA), ``num_stages - 1`` (at least one)
        on other NVIDIA GPUs, whose MMA takes its operands from registers (Triton's pipeliner:
        ``docs/engine.md``); ``num_stages`` elsewhere (not checked for other compilers)."""
        if self.vendor == "nvidia" and not self.matrix.asynchronous:
            return max(1, num_stages - 1)
        return num_stages


@dataclass(frozen=True, kw_only=True)
class TpuChip(Chip):
    """A TPU: grid steps in sequence on each TensorCore."""

    kind: ClassVar[str] = "tpu"
    megacore: bool = False
    """Two TensorCores that are one device, splitting a grid's first ``parallel`` axis."""

    @staticmethod
    def kind_fields(spec: schema.ChipSpec) -> dict:
        return {"megacore": spec.cores.megacore}


CHIP_KINDS: dict[str, type[Chip]] = {kind.kind: kind for kind in (GpuChip, TpuChip)}
"""Each chip kind's type, by the name a config's ``family`` field gives it."""


@dataclass(frozen=True, kw_only=True)
class Node:
    name: str
    display_name: str
    chip: Chip
    gpus: int
    switch_name: str
    switch_count: int
    switch_latency_s: float
    nvls: bool
    collectives: CollectiveTuning | None = None
    """NCCL's protocols and efficiencies on this node; None: nominal links, no protocols."""

    @property
    def num_chips(self) -> int:
        return self.gpus


@dataclass(frozen=True, kw_only=True)
class Cluster:
    name: str
    display_name: str
    node: Node
    nodes: int
    fabric: str
    nics_per_node: int
    nic_bandwidth_bytes_per_s: float
    switch_latency_s: float
    rail_optimized: bool
    host_cpu: str = "intel"
    nccl_protocols: tuple[str, ...] | None = None
    """NCCL_PROTO of the platform (None: every protocol of the node)."""
    nvls_enabled: bool = True
    """NCCL_NVLS_ENABLE of the platform."""
    nccl_buffer_bytes: float | None = None
    """NCCL_BUFFSIZE of the platform (None: NCCL's default)."""
    tuner: str | None = None
    """The platform's NCCL tuner plugin (None: NCCL's own)."""
    nccl_min_channels: int | None = None
    """NCCL_MIN_NCHANNELS of the run (None: NCCL's own channel count)."""
    nic_j_per_byte: float | None = None
    """Energy per byte through a NIC and the fabric (None: not modelled)."""

    @property
    def num_chips(self) -> int:
        return self.nodes * self.node.gpus


@dataclass(frozen=True, kw_only=True)
class Torus:
    name: str
    display_name: str
    chip: Chip
    shape: tuple[int, ...]
    wraparound: tuple[bool, ...]

    @property
    def num_chips(self) -> int:
        count = 1
        for n in self.shape:
            count *= n
        return count

    def links_per_neighbour(self) -> int:
        """The chip's ICI links spread evenly over its 2 x axes neighbours; a count that does
        not divide evenly is refused (floored, 1 to 7 links on a 2-D torus had all run as 4)."""
        ports = 2 * len(self.shape)
        if self.chip.links.count % ports:
            raise InputError(f"a chip on a {len(self.shape)}-D torus spreads its ICI links evenly over its {ports} "
                             f"neighbours: expected a multiple of {ports}, got {self.chip.links.count}",
                             source=self.name, field="chip.interconnect.links")
        return self.chip.links.count // ports


@dataclass(frozen=True, kw_only=True)
class Multislice:
    name: str
    display_name: str
    slice: Torus
    slices: int
    dcn_bandwidth_per_chip_bytes_per_s: float
    dcn_latency_s: float
    dcn_j_per_byte: float | None = None
    """Energy per byte over the DCN (None: not modelled)."""

    @property
    def num_chips(self) -> int:
        return self.slices * self.slice.num_chips


Arch = Union[Chip, Node, Cluster, Torus, Multislice]


_KIND_NAMES = {GpuChip: "GPU chip", TpuChip: "TPU chip", Chip: "chip", Node: "node", Cluster: "cluster",
               Torus: "TPU slice", Multislice: "multislice"}


def kind_name(kind: type | object) -> str:
    """What a config is, in words for an error line: ``GPU chip``, ``node``, ``TPU slice``..."""
    cls = kind if isinstance(kind, type) else type(kind)
    return next((name for k, name in _KIND_NAMES.items() if issubclass(cls, k)), cls.__name__.lower())

MAX_SYSTEM_CHIPS = 1 << 20
"""The largest system: a million chips (the system trace format's device limit)."""

REFERENCE_FIELDS = {"node": "chip", "cluster": "node", "torus": "chip", "multislice": "slice"}
"""For each system kind, the field naming the config it is built on. ``--set`` paths
that start with it (``chip.hbm.bandwidth=...``) are applied to that config."""


def load_arch(name_or_path: str, overrides: Sequence[str] = ()) -> Arch:
    """Load a chip or system by built-in name or path, apply ``--set`` overrides, resolve.

    Raises :class:`~accelsim.errors.InputError` for any bad input.
    """
    return load_arch_and_spec(name_or_path, overrides)[0]


def chip_of(arch: Arch) -> Chip:
    """The chip a kernel runs on: the arch itself, or the chip a system is built from."""
    if isinstance(arch, Chip):
        return arch
    if isinstance(arch, (Node, Torus)):
        return arch.chip
    if isinstance(arch, Cluster):
        return arch.node.chip
    if isinstance(arch, Multislice):
        return arch.slice.chip
    raise TypeError(f"not an arch: {type(arch).__name__}")


def config_files(name_or_path: str, _seen: tuple[str, ...] = ()) -> list[Path]:
    """Every file a config is built from: its own, those it ``extends``, and the same for
    the config it references (a system's chip, node or slice), each once (a reference back
    into the chain is left to :func:`load_arch`, which reports the cycle)."""
    raw = load_raw(name_or_path)
    files = list(raw.files)
    here = os.path.realpath(raw.path)
    reference = REFERENCE_FIELDS.get(str(raw.data.get("kind")))
    if reference and isinstance(raw.data.get(reference), str) and here not in _seen:
        files += config_files(raw.data[reference], (*_seen, here))
    return list(dict.fromkeys(files))


def refuse_clock_under_boost(spec, own: Sequence[Override]) -> None:
    """Refuse a ``clock`` override of a chip with the boost on: there ``clock`` is the clock
    matrix_unit.efficiency was quoted at, not the one kernels run at, and an override would
    rescale the pipe efficiency, silently (``docs/power.md``, "The boost clock")."""
    if isinstance(spec, schema.ChipSpec) and enabled_boost(spec) and any(o.path == ("clock",) for o in own):
        raise OverrideError("with power.dvfs.boost.enabled kernels run at power.dvfs.boost.clock under the power "
                            "cap; set that (or power.cap), not clock, or set power.dvfs.boost.enabled=false "
                            "for one fixed clock", field="clock")


def load_arch_and_spec(name_or_path: str, overrides: Sequence[str] = ()):
    """Like :func:`load_arch`, also returning the validated spec (for sources and display)."""
    raw = load_raw(name_or_path)
    reference = REFERENCE_FIELDS.get(str(raw.data.get("kind")))
    own = [parse_override(o) for o in overrides if not (reference and o.lstrip().startswith(reference + "."))]
    spec = with_values(validate(raw), own)
    refuse_clock_under_boost(spec, own)
    arch = resolve(spec, overrides, referrer=str(raw.path))
    if not isinstance(arch, Chip) and arch.num_chips > MAX_SYSTEM_CHIPS:
        error = OverrideError if overrides else InputError
        raise error(f"the system would have {arch.num_chips:,} chips; accelsim models at most "
                    f"{MAX_SYSTEM_CHIPS:,} (2^20, as many as a system trace may name)",
                    source=None if overrides else str(raw.path))
    return with_family_chips(arch, raw, spec, own), spec


def with_family_chips(arch: Arch, raw, spec, own: Sequence) -> Arch:
    """``arch`` with its ``family_values`` families' chips (a chip whose config has them;
    ``own`` are its parsed ``--set`` overrides); any other arch as it is."""
    if isinstance(spec, schema.ChipSpec) and spec.family_values:
        return replace(arch, family_chips=MappingProxyType(_family_chips(raw, spec, own)))
    return arch


def _family_chips(raw, spec: schema.ChipSpec, own: Sequence) -> dict[str, Chip]:
    """Each ``family_values`` family's chip: the config with that family's values set, then
    the ``--set`` overrides (a what-if still applies to every family)."""
    out = {}
    for family, values in spec.family_values.items():
        where = f"family_values.{family}"
        if family not in FAMILIES:  # the registry's names: no family module is imported
            raise FAMILIES.unknown(family, source=str(raw.path), field=where)
        try:
            scoped = [Override(tuple(path.split(".")), value.value, f"{where}.{path}") for path, value in values.items()]
            variant = with_values(with_values(validate(raw), scoped), own)
        except InputError as exc:
            raise InputError(exc.message, source=str(raw.path), field=f"{where}.{exc.field or ''}".rstrip(".")) from None
        out[family] = _resolve_chip(variant)
    return out


def forwarded_overrides(overrides: Sequence[str], prefix: str) -> list[str]:
    """The ``--set`` paths under ``prefix.``, with the prefix removed."""
    return [o.lstrip()[len(prefix) + 1 :] for o in overrides if o.lstrip().startswith(prefix + ".")]


_RESOLVING: ContextVar[tuple[str, ...]] = ContextVar("resolving", default=())
"""The config files being resolved, outermost first: a reference back into them is a cycle."""


def _referenced(name: str, field: str, expected_kind: type, overrides: Sequence[str], referrer: str):
    chain = _RESOLVING.get() or (os.path.realpath(referrer),)
    try:
        target = os.path.realpath(load_raw(name).path)
    except InputError:
        target = None  # load_arch below says what is wrong with the name
    if target in chain:
        raise InputError(f"{shown(field)} forms a cycle: {' -> '.join(Path(p).name for p in (*chain, target))}",
                         source=referrer, field=field)
    token = _RESOLVING.set(chain + ((target,) if target else ()))
    try:
        arch = load_arch(name, forwarded_overrides(overrides, field))
    except InputError as exc:
        if isinstance(exc, OverrideError) and exc.field:  # the user wrote the path with this prefix
            exc.field = f"{field}.{exc.field}"
        elif exc.source is None or "unknown config" in exc.message:
            raise InputError(exc.message, source=referrer, field=field) from None
        raise
    finally:
        _RESOLVING.reset(token)
    if not isinstance(arch, expected_kind):
        raise InputError(
            f"{shown(name)} is a {kind_name(arch)}; expected a {kind_name(expected_kind)}",
            source=referrer,
            field=field,
        )
    return arch


def resolve(spec, overrides: Sequence[str] = (), referrer: str | None = None) -> Arch:
    referrer = referrer or spec.name
    if isinstance(spec, schema.ChipSpec):
        return _resolve_chip(spec)
    if isinstance(spec, schema.NodeSpec):
        return Node(
            name=spec.name,
            display_name=spec.display_name,
            chip=_referenced(spec.chip, "chip", Chip, overrides, referrer),
            gpus=spec.gpus.value,
            switch_name=spec.switch.name,
            switch_count=spec.switch.count.value,
            switch_latency_s=spec.switch.latency.value,
            nvls=spec.switch.nvls,
            collectives=resolve_collectives(spec.collectives),
        )
    if isinstance(spec, schema.ClusterSpec):
        net = spec.network
        return Cluster(
            name=spec.name,
            display_name=spec.display_name,
            node=_referenced(spec.node, "node", Node, overrides, referrer),
            nodes=spec.nodes.value,
            fabric=net.fabric,
            nics_per_node=net.nics_per_node.value,
            nic_bandwidth_bytes_per_s=net.nic_bandwidth.value,
            switch_latency_s=net.switch_latency.value,
            rail_optimized=net.rail_optimized,
            host_cpu=net.host_cpu,
            nccl_protocols=tuple(net.nccl_protocols) if net.nccl_protocols is not None else None,
            nvls_enabled=net.nvls_enabled,
            nccl_buffer_bytes=net.nccl_buffer_size.value if net.nccl_buffer_size is not None else None,
            tuner=net.tuner,
            nccl_min_channels=net.nccl_min_channels,
            nic_j_per_byte=spec.power.nic_pj_per_byte.value * J_PER_PJ if spec.power else None,
        )
    if isinstance(spec, schema.TorusSpec):
        torus = Torus(
            name=spec.name,
            display_name=spec.display_name,
            chip=_referenced(spec.chip, "chip", Chip, overrides, referrer),
            shape=tuple(spec.shape),
            wraparound=schema.wrapped_axes(spec.wraparound.value, spec.shape),
        )
        torus.links_per_neighbour()  # refused here, so every command that loads the torus says so
        return torus
    if isinstance(spec, schema.MultisliceSpec):
        return Multislice(
            name=spec.name,
            display_name=spec.display_name,
            slice=_referenced(spec.slice, "slice", Torus, overrides, referrer),
            slices=spec.slices.value,
            dcn_bandwidth_per_chip_bytes_per_s=spec.dcn.bandwidth_per_chip.value,
            dcn_latency_s=spec.dcn.latency.value,
            dcn_j_per_byte=spec.power.dcn_pj_per_byte.value * J_PER_PJ if spec.power else None,
        )
    raise TypeError(f"not a config spec: {type(spec).__name__}")


def _memory_level(spec: schema.SharedCache | schema.Hbm) -> MemoryLevel:
    multicast = getattr(spec, "multicast", None)  # the shared cache's only
    return MemoryLevel(
        name=spec.name,
        capacity_bytes=spec.capacity.value,
        bandwidth_bytes_per_s=spec.bandwidth.value,
        latency_s=spec.latency.value,
        efficiency=spec.efficiency.value,
        multicast=multicast.value if multicast else 1,
        queueing_latency_s=queueing.value if (queueing := getattr(spec, "queueing_latency", None)) else 0.0,
        queueing_unmixed_share=share.value if (share := getattr(spec, "queueing_unmixed_share", None)) else 0.0,
        turnaround_loss=loss.value if (loss := getattr(spec, "turnaround_loss", None)) else 0.0,
        dirty_at_start_bytes=dirty.value if (dirty := getattr(spec, "dirty_at_start", None)) else None,
        keeps_own_clock_above_hz=own.value if (own := getattr(spec, "keeps_own_clock_above", None)) else None,
    )


def _matrix_efficiencies(spec: schema.ChipSpec) -> tuple[float, float]:
    """``matrix_unit``'s efficiency and chained efficiency as the resolved chip prices them:
    as given, or with the boost on, each made a share of the peak per cycle at the clock its
    measurement ran at: the efficiency ``x clock / matrix_reference_clock`` (the reference GEMM's
    throughput over the peak at its clock, under the TDP), a chained efficiency given apart
    ``x clock / chained_reference_clock`` (FlashAttention-2's share of the datasheet peak, on
    kernels that ran below the TDP, at the boost clock); without one, chains take the
    efficiency."""
    mu = spec.matrix_unit
    efficiency = mu.efficiency.value
    chained = mu.chained_efficiency.value if mu.chained_efficiency else None
    boost = enabled_boost(spec)
    if boost is not None:
        efficiency = _per_cycle_at(efficiency, spec.clock.value, boost.matrix_reference_clock.value,
                                   "efficiency", "matrix_reference_clock")
        if chained is not None:
            chained = _per_cycle_at(chained, spec.clock.value, boost.chained_reference_clock.value,
                                    "chained_efficiency", "chained_reference_clock")
    return efficiency, efficiency if chained is None else chained


def _per_cycle_at(share: float, quoted_hz: float, ran_hz: float, name: str, clock_field: str) -> float:
    """A share of the peak quoted at ``quoted_hz`` that a kernel reached running at ``ran_hz``, as
    a share of the peak per cycle; more than 1 is refused (a pipe cannot pass its peak)."""
    per_cycle = share * quoted_hz / ran_hz
    if per_cycle > 1.0:
        raise InputError(f"matrix_unit.{name} x clock / {clock_field} is {per_cycle:.3g}; "
                         "expected at most 1 (a pipe cannot pass its peak)", field=f"power.dvfs.boost.{clock_field}")
    return per_cycle


def _resolve_chip(spec: schema.ChipSpec) -> Chip:
    mu, vu, lm = spec.matrix_unit, spec.vector_unit, spec.local_memory
    kind = CHIP_KINDS[spec.family]
    boost = enabled_boost(spec)
    matrix_efficiency, chained_efficiency = _matrix_efficiencies(spec)
    return kind(
        **kind.kind_fields(spec),
        name=spec.name,
        display_name=spec.display_name,
        vendor=spec.vendor,
        clock_hz=run_clock_hz(spec),
        datasheet_clock_hz=spec.clock.value if boost else None,
        num_cores=spec.cores.count.value,
        core_kind=spec.cores.kind,
        program_overhead_s=spec.cores.program_overhead.value,
        matrix=MatrixUnit(
            units_per_core=mu.units_per_core.value,
            shape=tuple(mu.shape.value),
            flops_per_cycle_per_core=MappingProxyType(dict(mu.flops_per_cycle_per_core.value)),
            efficiency=matrix_efficiency,
            chained_efficiency=chained_efficiency,
            pair=mu.pair.value if mu.pair else 1,
            asynchronous=bool(mu.asynchronous.value) if mu.asynchronous else False,
            instruction_shape=tuple(mu.instruction_shape.value) if mu.instruction_shape else None,
        ),
        vector=VectorUnit(
            shape=tuple(vu.shape.value) if vu.shape else None,
            flops_per_cycle_per_core=MappingProxyType(dict(vu.flops_per_cycle_per_core.value)),
            special_function_ops_per_cycle_per_core=vu.special_function_ops_per_cycle_per_core.value,
            efficiency=vu.efficiency.value,
        ),
        local=LocalMemory(
            capacity_bytes=lm.capacity.value,
            max_per_program_bytes=lm.max_per_program.value,
            bandwidth_bytes_per_cycle=lm.bandwidth_bytes_per_cycle.value,
            registers_bytes=lm.registers.value,
            fill_bandwidth_bytes_per_cycle=lm.fill_bandwidth_bytes_per_cycle.value,
            latency_s=lm.latency.value,
            tensor_memory_bytes=lm.tensor_memory.value if lm.tensor_memory else 0.0,
            bulk_copy_latency_s=lm.bulk_copy_latency.value if lm.bulk_copy_latency else 0.0,
            load_bytes_in_flight=lm.load_bytes_in_flight.value if lm.load_bytes_in_flight else 0.0,
        ),
        shared_cache=_memory_level(spec.shared_cache) if spec.shared_cache else None,
        hbm=_memory_level(spec.hbm),
        launch_overhead_s=spec.launch_overhead.value,
        kernel_device_overhead_s=spec.kernel_device_overhead.value if spec.kernel_device_overhead else 0.0,
        uncertainty=MappingProxyType({f: (i.p05, i.p95) for f, i in spec.uncertainty.items()}),
        links=Links(
            name=spec.interconnect.name,
            count=spec.interconnect.links.value,
            bandwidth_per_link_bytes_per_s=spec.interconnect.bandwidth_per_link.value,
            latency_s=spec.interconnect.latency.value,
        ),
        power=_power_model(spec.power, boost),
    )
