"""Link graphs built from resolved systems: what collectives are routed over.

A :class:`Topology` is a set of directional :class:`Link` records (capacity per
direction in bytes/s, latency in seconds) and a routing rule between ranks. Links are
the resources of :class:`~accelsim.engine.fluid.FluidResources`, so concurrent
transfers that cross the same link share it max-min fairly.

Latency accounting (all from the config, all calibratable):

* NVSwitch node: a GPU's uplink carries the chip's ``interconnect.latency`` (the
  end-to-end per-hop cost) and the switch's downlink carries ``switch.latency``
  (switch traversal), so one GPU-to-GPU hop costs their sum.
* TPU torus: every neighbour link carries the chip's ``interconnect.latency``; routes
  are dimension-ordered, taking the shorter way round an axis that wraps.
* Every collective pays the chip's ``launch_overhead`` once.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from accelsim.arch.model import Arch, Chip, Cluster, Multislice, Node, Torus
from accelsim.errors import InputError


@dataclass(frozen=True, kw_only=True)
class Link:
    """One direction of a physical connection (all the parallel lanes of it together)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float


@dataclass(frozen=True, kw_only=True)
class Topology:
    """Ranks, the links between them and how a transfer from one rank to another is routed.

    ``kind`` is ``"switch"`` (all GPUs on one switch plane) or ``"torus"``. For a torus,
    rank ``r`` sits at coordinate ``coords[r]`` (row-major over ``shape``).
    """

    name: str
    kind: str
    ranks: int
    links: Mapping[str, Link]
    launch_s: float
    nvls: bool = False
    shape: tuple[int, ...] = ()
    wraparound: tuple[bool, ...] = ()
    _routes: dict = field(default_factory=dict, compare=False, repr=False)

    def route(self, src: int, dst: int) -> tuple[str, ...]:
        """Names of the links a transfer from ``src`` to ``dst`` crosses, in order."""
        key = (src, dst)
        if key not in self._routes:
            self._routes[key] = self._switch_route(src, dst) if self.kind == "switch" else self._torus_route(src, dst)
        return self._routes[key]

    def route_latency_s(self, links: tuple[str, ...]) -> float:
        return sum(self.links[name].latency_s for name in links)

    def coords(self, rank: int) -> tuple[int, ...]:
        return coords_of(rank, self.shape)

    def rank_of(self, coords: tuple[int, ...]) -> int:
        rank = 0
        for c, size in zip(coords, self.shape):
            rank = rank * size + c
        return rank

    def axis_rings(self, axis: int) -> list[list[int]]:
        """The lines of ranks along ``axis`` (other coordinates fixed), in axis order."""
        others = [range(n) if a != axis else range(1) for a, n in enumerate(self.shape)]
        rings = []
        for base in itertools.product(*others):
            rings.append([self.rank_of(base[:axis] + (i,) + base[axis + 1 :]) for i in range(self.shape[axis])])
        return rings

    def _switch_route(self, src: int, dst: int) -> tuple[str, ...]:
        return (uplink(src), downlink(dst))

    def _torus_route(self, src: int, dst: int) -> tuple[str, ...]:
        here = list(self.coords(src))
        target = self.coords(dst)
        path = []
        for axis, size in enumerate(self.shape):
            step = _direction(here[axis], target[axis], size, self.wraparound[axis])
            while here[axis] != target[axis]:
                path.append(torus_link(tuple(here), axis, step))
                here[axis] = (here[axis] + step) % size
        return tuple(path)


def coords_of(rank: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major coordinates of ``rank`` on a grid of ``shape``."""
    out = []
    for size in reversed(shape):
        out.append(rank % size)
        rank //= size
    return tuple(reversed(out))


def uplink(gpu: int) -> str:
    return f"gpu{gpu}->switch"


def downlink(gpu: int) -> str:
    return f"switch->gpu{gpu}"


def torus_link(coords: tuple[int, ...], axis: int, step: int) -> str:
    return f"{coords}:axis{axis}{'+' if step > 0 else '-'}"


def _direction(a: int, b: int, size: int, wraps: bool) -> int:
    forward = (b - a) % size
    if not wraps:
        return 1 if b > a else -1
    return 1 if forward <= size - forward else -1


def switch_node(
    *,
    name: str,
    gpus: int,
    uplink_bytes_per_s: float,
    hop_latency_s: float,
    switch_latency_s: float,
    nvls: bool,
    launch_s: float,
) -> Topology:
    """GPUs each with one uplink to and one downlink from a non-blocking switch plane."""
    links = {}
    for g in range(gpus):
        links[uplink(g)] = Link(name=uplink(g), bandwidth_bytes_per_s=uplink_bytes_per_s, latency_s=hop_latency_s)
        links[downlink(g)] = Link(name=downlink(g), bandwidth_bytes_per_s=uplink_bytes_per_s, latency_s=switch_latency_s)
    return Topology(name=name, kind="switch", ranks=gpus, links=MappingProxyType(links), launch_s=launch_s, nvls=nvls)


def torus(
    *,
    name: str,
    shape: tuple[int, ...],
    wraparound: tuple[bool, ...],
    link_bytes_per_s: float,
    hop_latency_s: float,
    launch_s: float,
) -> Topology:
    """Chips on a torus, one link per direction to each neighbour along every axis; an
    axis without wraparound is a line (no link from its last chip back to its first)."""
    if len(shape) != len(wraparound):
        raise InputError(f"torus shape {shape} and wraparound {wraparound} differ in length", field="wraparound")
    ranks = _product(shape)
    links = {}
    for rank in range(ranks):
        here = coords_of(rank, shape)
        for axis, size in enumerate(shape):
            for step in (1, -1):
                end = here[axis] + step
                if size > 1 and (wraparound[axis] or 0 <= end < size):
                    link = torus_link(here, axis, step)
                    links[link] = Link(name=link, bandwidth_bytes_per_s=link_bytes_per_s, latency_s=hop_latency_s)
    return Topology(
        name=name, kind="torus", ranks=ranks, links=MappingProxyType(links), launch_s=launch_s,
        shape=tuple(shape), wraparound=tuple(wraparound),
    )


def build_topology(system: Arch) -> Topology:
    """The link graph of a resolved system config."""
    if isinstance(system, Node):
        chip = system.chip
        return switch_node(
            name=system.name,
            gpus=system.gpus,
            uplink_bytes_per_s=chip.link_bandwidth_bytes_per_s,
            hop_latency_s=chip.links.latency_s,
            switch_latency_s=system.switch_latency_s,
            nvls=system.nvls,
            launch_s=chip.launch_overhead_s,
        )
    if isinstance(system, Torus):
        chip = system.chip
        per_neighbour = max(1, chip.links.count // (2 * len(system.shape)))
        return torus(
            name=system.name,
            shape=system.shape,
            wraparound=system.wraparound,
            link_bytes_per_s=per_neighbour * chip.links.bandwidth_per_link_bytes_per_s,
            hop_latency_s=chip.links.latency_s,
            launch_s=chip.launch_overhead_s,
        )
    if isinstance(system, (Cluster, Multislice)):
        raise InputError(
            f"{system.name!r} is a {type(system).__name__.lower()}; multi-node and multislice "
            "collectives are not modelled yet (use a node or a torus)",
            source="--system",
        )
    if isinstance(system, Chip):
        raise InputError(f"{system.name!r} is a chip; collectives need a system (a node or a torus)", source="--system")
    raise TypeError(f"not a system: {type(system).__name__}")


def _product(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out
