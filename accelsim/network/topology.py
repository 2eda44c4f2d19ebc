"""Link graphs built from resolved systems: what collectives are routed over.

A :class:`Topology` is a set of directional :class:`Link` records (capacity per
direction in bytes/s, latency in seconds) and a routing rule between ranks. Links are
the resources of :class:`~accelsim.engine.fluid.FluidResources`, so concurrent
transfers that cross the same link share it max-min fairly; link names are the keys.

Each kind is a type with its own routing (all figures from the config, latencies
calibratable):

* ``node`` (:class:`NodeTopology`, an NVSwitch node): GPU ``g`` has ``gpu{g}->switch`` (the chip's
  ``interconnect.latency``) and ``switch->gpu{g}`` (the switch's ``latency``), each of
  ``links x bandwidth_per_link``; a GPU-to-GPU hop crosses one of each.
* ``torus`` (:class:`TorusTopology`, a TPU slice): ``(x, y, ...):axis{a}{+|-}`` to each neighbour, with the chip's
  ``interconnect.latency``; routes are dimension-ordered, the short way round an axis
  that wraps; an axis without wraparound is a line.
* ``cluster`` (:class:`ClusterTopology`, nodes over InfiniBand / RoCE / EFA): every node is a switch node (GPU
  ranks numbered node-major, the same ``gpu{r}`` link names), plus per NIC
  ``node{k}.nic{j}->fabric`` and back, of ``nic_bandwidth``; the way up carries the
  fabric's ``switch_latency`` (the whole crossing), the way down none. GPU ``i`` of a
  node uses NIC ``i x nics / gpus`` (its rail). The fabric itself is non-blocking (full bisection), so only NICs limit bandwidth.
* ``multislice`` (:class:`MultisliceTopology`, TPU slices over DCN): every slice is a torus (link names prefixed
  ``slice{k}:``), plus per chip ``slice{k}.chip{c}->dcn`` and back, of the DCN bandwidth
  per chip with the DCN latency.

Every collective pays the chip's ``launch_overhead`` once, except on GPU systems with an
NCCL model (``collectives`` in the node config), where each protocol's base latency is
the fixed cost instead.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import ClassVar

from accelsim.arch.collective_tuning import CollectiveTuning
from accelsim.arch.model import Arch, Chip, Cluster, Multislice, Node, Torus
from accelsim.errors import InputError
from accelsim.network.nccl_tables import SIMPLE_BUFFER_BYTES, net_graph_channels


@dataclass(frozen=True, kw_only=True)
class Link:
    """One direction of a physical connection (all the parallel lanes of it together)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float
    scale_out: bool = False
    """A NIC or DCN link (between nodes or slices), as opposed to NVLink / ICI."""


@dataclass(frozen=True, kw_only=True)
class Topology:
    """Ranks, the links between them and how a transfer from one rank to another is routed.

    One type per kind (:data:`KINDS`), each with its routing: :class:`NodeTopology`,
    :class:`ClusterTopology`, :class:`TorusTopology`, :class:`MultisliceTopology`. Ranks are
    grouped in *domains* (the GPUs of a node, the chips of a slice); a node and a torus
    are one domain. A topology memoises its own routes (a pure function of its links);
    the plans made on it are the planner's (:class:`~accelsim.network.simulate.Planner`).
    """

    kind: ClassVar[str]
    name: str
    ranks: int
    links: Mapping[str, Link]
    launch_s: float
    tuning: CollectiveTuning | None = None
    """NCCL's protocols and efficiencies (GPU systems whose node config has ``collectives``)."""
    _routes: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """(src, dst) -> :meth:`route`, made once."""

    @property
    def domain_size(self) -> int:
        """Ranks per domain (node or slice)."""
        return self.ranks

    def domain(self, rank: int) -> int:
        """The node (cluster) or slice (multislice) of ``rank``; 0 elsewhere."""
        return rank // self.domain_size

    def route(self, src: int, dst: int) -> tuple[str, ...]:
        """Names of the links a transfer from ``src`` to ``dst`` crosses, in order."""
        key = (src, dst)
        hit = self._routes.get(key)
        if hit is None:
            hit = self._routes[key] = () if src == dst else self._route(src, dst)
        return hit

    def routes(self, src: int, dst: int) -> tuple[tuple[float, tuple[str, ...]], ...]:
        """The routes a stream from ``src`` to ``dst`` takes, each with its share of the
        bytes: the one :meth:`route` (a torus splits some, :meth:`TorusTopology.routes`)."""
        return ((1.0, self.route(src, dst)),)

    def route_latency_s(self, links: tuple[str, ...]) -> float:
        return sum(self.links[name].latency_s for name in links)

    def scale_out_latency_s(self, links: tuple[str, ...]) -> float:
        """Latency of the NIC / DCN links of a route (what a step adds between domains)."""
        return sum(self.links[name].latency_s for name in links if self.links[name].scale_out)

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        """The route between two different ranks: each kind's own."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class NodeTopology(Topology):
    """An NVSwitch node: GPU ``g`` has ``gpu{g}->switch`` and ``switch->gpu{g}``; a
    GPU-to-GPU hop crosses one of each."""

    kind: ClassVar[str] = "node"
    nvls: bool = False
    """In-switch reduction (NVLink SHARP)."""
    nvlink_links: int | None = None
    """NVLink links per GPU, which NCCL's own estimate counts (``getTotalBw``:
    links x ``SMxx_NVLINK_BW``) when it picks an algorithm; None where not stated."""

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        return (uplink(src), downlink(dst))


@dataclass(frozen=True, kw_only=True)
class ClusterTopology(NodeTopology):
    """Switch nodes of ``local_ranks`` GPUs (ranks numbered node-major) whose NICs meet on
    a non-blocking fabric; GPU ``i`` of a node sends and receives through NIC
    ``i x nics / gpus`` (its rail)."""

    kind: ClassVar[str] = "cluster"
    local_ranks: int
    """GPUs per node."""
    nics_per_node: int
    host_cpu: str = "intel"
    """The host CPU vendor: NCCL's LL ceiling across nodes depends on it
    (:func:`~accelsim.network.nccl_tables.ll_max_bus_bytes_per_s`)."""
    tuner: str | None = None
    """The platform's NCCL tuner plugin (:mod:`accelsim.network.tuners`); None: NCCL's own."""
    simple_buffer_bytes: float = SIMPLE_BUFFER_BYTES
    """The platform's ``NCCL_BUFFSIZE``: a Simple tree's chunk is an eighth of it."""
    net_channels: int | None = None
    """NICs of a node that NCCL's rings and trees use, one channel each, as its search finds
    them (:func:`~accelsim.network.nccl_tables.net_graph_channels`); None: every NIC."""
    min_channels: int | None = None
    """The run's ``NCCL_MIN_NCHANNELS`` (:func:`~accelsim.network.nccl_tables.communicator_channels`);
    None: NCCL's own count."""

    @property
    def domain_size(self) -> int:
        return self.local_ranks

    def nic_of(self, rank: int) -> tuple[int, int]:
        """(node, NIC index) a GPU sends and receives through: its rail's NIC."""
        node, local = divmod(rank, self.domain_size)
        return node, local * self.nics_per_node // self.domain_size

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        if self.domain(src) == self.domain(dst):
            return (uplink(src), downlink(dst))
        return (nic_up(*self.nic_of(src)), nic_down(*self.nic_of(dst)))


@dataclass(frozen=True, kw_only=True)
class TorusTopology(Topology):
    """Chips on a torus of ``shape`` (a rank's local index at ``coords(rank)``, row-major),
    one link per direction to each neighbour along every axis; routes are
    dimension-ordered, the short way round an axis that wraps; an axis without
    wraparound is a line."""

    kind: ClassVar[str] = "torus"
    shape: tuple[int, ...]
    wraparound: tuple[bool, ...]
    _split_routes: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """(src, dst) -> :meth:`routes`, for the pairs split at a tie."""

    def coords(self, rank: int) -> tuple[int, ...]:
        return coords_of(rank % self.domain_size, self.shape)

    def rank_of(self, coords: tuple[int, ...], domain: int = 0) -> int:
        rank = 0
        for c, size in zip(coords, self.shape):
            rank = rank * size + c
        return domain * self.domain_size + rank

    def axis_rings(self, axis: int) -> list[list[int]]:
        """The lines of ranks of slice 0 along ``axis`` (other coordinates fixed), in axis order."""
        others = [range(n) if a != axis else range(1) for a, n in enumerate(self.shape)]
        rings = []
        for base in itertools.product(*others):
            rings.append([self.rank_of(base[:axis] + (i,) + base[axis + 1 :]) for i in range(self.shape[axis])])
        return rings

    def link_prefix(self, domain: int) -> str:
        """What the names of ``domain``'s torus links start with (a slice's prefix)."""
        return ""

    def routes(self, src: int, dst: int) -> tuple[tuple[float, tuple[str, ...]], ...]:
        """The one :meth:`route`, except where the destination is exactly half way round a
        wrapped axis: either way is as short, so the stream goes half each way (per such
        axis), as the rings do. (Always one way, a wraparound added to a 4-chip axis
        loaded one direction with every tie: a tree all-reduce 1.5x slower.)"""
        if not self._tie_axes or self.domain(src) != self.domain(dst):
            return ((1.0, self.route(src, dst)),)
        here, there = self.coords(src), self.coords(dst)
        ties = [axis for axis in self._tie_axes
                if (there[axis] - here[axis]) % self.shape[axis] == self.shape[axis] // 2]
        if not ties:
            return ((1.0, self.route(src, dst)),)
        key = (src, dst)
        hit = self._split_routes.get(key)
        if hit is None:
            share = 1.0 / 2 ** len(ties)
            hit = self._split_routes[key] = tuple(
                (share, self._torus_route(src, dst, frozenset(a for a, f in zip(ties, flips) if f)))
                for flips in itertools.product((False, True), repeat=len(ties)))
        return hit

    @cached_property
    def _tie_axes(self) -> tuple[int, ...]:
        """Axes where a destination can be exactly half way round: wrapped, of even length."""
        return tuple(axis for axis, (size, wraps) in enumerate(zip(self.shape, self.wraparound))
                     if wraps and size % 2 == 0)

    def torus_hops(self, src: int, dst: int) -> list[tuple[int, int, int]]:
        """(axis, direction +1 / -1, hops) of the dimension-ordered route, axis by axis."""
        here, target = self.coords(src), self.coords(dst)
        out = []
        for axis, size in enumerate(self.shape):
            if here[axis] != target[axis]:
                step = _direction(here[axis], target[axis], size, self.wraparound[axis])
                out.append((axis, step, (step * (target[axis] - here[axis])) % size))
        return out

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        return self._torus_route(src, dst)

    def _torus_route(self, src: int, dst: int, flipped: frozenset = frozenset()) -> tuple[str, ...]:
        """Dimension-ordered; along the axes in ``flipped`` the other way round."""
        names = self._link_names[self.domain(src)]
        axes = len(self.shape)
        here = list(self.coords(src))
        local = src % self.domain_size
        path = []
        for axis, step, hops in self.torus_hops(src, dst):
            if axis in flipped:
                step, hops = -step, self.shape[axis] - hops
            size, stride = self.shape[axis], math.prod(self.shape[axis + 1:])
            for _ in range(hops):
                path.append(names[(local * axes + axis) * 2 + (step > 0)])
                after = (here[axis] + step) % size
                local += (after - here[axis]) * stride
                here[axis] = after
        return tuple(path)

    @cached_property
    def _link_names(self) -> list[list[str]]:
        """Per domain (slice), the names of its torus links, made once: index
        ``(local rank x axes + axis) x 2 + (1 if the + direction else 0)``. A route of many
        hops looks its names up instead of formatting each (a million routes of a direct
        all-reduce on 1024 chips)."""
        return [[torus_link(coords_of(local, self.shape), axis, step, self.link_prefix(domain))
                 for local in range(self.domain_size) for axis in range(len(self.shape)) for step in (-1, 1)]
                for domain in range(self.ranks // self.domain_size)]


@dataclass(frozen=True, kw_only=True)
class MultisliceTopology(TorusTopology):
    """Identical tori of ``local_ranks`` chips (link names prefixed ``slice{k}:``) joined
    over the data-centre network: per chip ``slice{k}.chip{c}->dcn`` and back."""

    kind: ClassVar[str] = "multislice"
    local_ranks: int
    """Chips per slice."""

    @property
    def domain_size(self) -> int:
        return self.local_ranks

    def link_prefix(self, domain: int) -> str:
        return slice_prefix(domain)

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        if self.domain(src) == self.domain(dst):
            return self._torus_route(src, dst)
        up, down = self._dcn_names
        return (up[src], down[dst])

    @cached_property
    def _dcn_names(self) -> tuple[list[str], list[str]]:
        """Each rank's DCN up and down link names, made once (a direct all-reduce across
        slices routes most of its million pairs over them)."""
        ranks = range(self.ranks)
        return ([dcn_up(r, self.domain_size) for r in ranks], [dcn_down(r, self.domain_size) for r in ranks])


KINDS: tuple[type[Topology], ...] = (NodeTopology, ClusterTopology, TorusTopology, MultisliceTopology)
"""The kinds of topology, one type each."""


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


def nic_up(node: int, nic: int) -> str:
    return f"node{node}.nic{nic}->fabric"


def nic_down(node: int, nic: int) -> str:
    return f"fabric->node{node}.nic{nic}"


def slice_prefix(index: int) -> str:
    return f"slice{index}:"


def dcn_up(rank: int, per_slice: int) -> str:
    return f"slice{rank // per_slice}.chip{rank % per_slice}->dcn"


def dcn_down(rank: int, per_slice: int) -> str:
    return f"dcn->slice{rank // per_slice}.chip{rank % per_slice}"


def torus_link(coords: tuple[int, ...], axis: int, step: int, prefix: str = "") -> str:
    return f"{prefix}{coords}:axis{axis}{'+' if step > 0 else '-'}"


def _direction(a: int, b: int, size: int, wraps: bool) -> int:
    forward = (b - a) % size
    if not wraps:
        return 1 if b > a else -1
    return 1 if forward <= size - forward else -1


def _gpu_links(gpus: range, uplink_bytes_per_s: float, hop_latency_s: float, switch_latency_s: float) -> dict:
    links = {}
    for g in gpus:
        links[uplink(g)] = Link(name=uplink(g), bandwidth_bytes_per_s=uplink_bytes_per_s, latency_s=hop_latency_s)
        links[downlink(g)] = Link(name=downlink(g), bandwidth_bytes_per_s=uplink_bytes_per_s, latency_s=switch_latency_s)
    return links


def switch_node(
    *,
    name: str,
    gpus: int,
    uplink_bytes_per_s: float,
    hop_latency_s: float,
    switch_latency_s: float,
    nvls: bool,
    launch_s: float,
    tuning: CollectiveTuning | None = None,
    nvlink_links: int | None = None,
) -> Topology:
    """GPUs each with one uplink to and one downlink from a non-blocking switch plane."""
    links = _gpu_links(range(gpus), uplink_bytes_per_s, hop_latency_s, switch_latency_s)
    return NodeTopology(name=name, ranks=gpus, links=MappingProxyType(links), launch_s=launch_s, nvls=nvls,
                        tuning=tuning, nvlink_links=nvlink_links)


class ClusterLinks(dict):
    """A cluster's links by name, made when first asked for: a cluster of 100,000 nodes
    has 3.2 million of them, and a collective crosses a few. The same names, records and
    order as a dict of them all would have: per GPU ``gpu{g}->switch`` and
    ``switch->gpu{g}``, then per node and NIC ``node{k}.nic{j}->fabric`` and
    ``fabric->node{k}.nic{j}``. A dict of the links made so far (so a lookup of a made
    link costs what a dict's does, routes ask for the same links again and again) that
    answers for every link: membership, length, iteration and equality are over all."""

    _NAME = re.compile(r"gpu(0|[1-9][0-9]*)->switch|switch->gpu(0|[1-9][0-9]*)"
                       r"|node(0|[1-9][0-9]*)\.nic(0|[1-9][0-9]*)->fabric|fabric->node(0|[1-9][0-9]*)\.nic(0|[1-9][0-9]*)")

    def __init__(self, *, nodes: int, gpus_per_node: int, uplink_bytes_per_s: float, hop_latency_s: float,
                 switch_latency_s: float, nics_per_node: int, nic_bytes_per_s: float, fabric_latency_s: float) -> None:
        super().__init__()
        self._sizes = dict(nodes=nodes, gpus_per_node=gpus_per_node, uplink_bytes_per_s=uplink_bytes_per_s,
                           hop_latency_s=hop_latency_s, switch_latency_s=switch_latency_s,
                           nics_per_node=nics_per_node, nic_bytes_per_s=nic_bytes_per_s,
                           fabric_latency_s=fabric_latency_s)
        self._gpus, self._nodes, self._nics = nodes * gpus_per_node, nodes, nics_per_node
        self._gpu_link = (uplink_bytes_per_s, hop_latency_s, switch_latency_s)
        self._nic_link = (nic_bytes_per_s, fabric_latency_s)

    def __missing__(self, name: str) -> Link:
        link = self._make(name)
        if link is None:
            raise KeyError(name)
        dict.__setitem__(self, name, link)
        return link

    def _make(self, name: object) -> Link | None:
        """The link called ``name``, or None where the cluster has none."""
        found = self._NAME.fullmatch(name) if isinstance(name, str) else None
        if found is None:
            return None
        up, down, node_up, nic_up_, node_down, nic_down_ = found.groups()
        if up is not None or down is not None:
            if int(up if up is not None else down) >= self._gpus:
                return None
            bandwidth, hop_s, switch_s = self._gpu_link
            return Link(name=name, bandwidth_bytes_per_s=bandwidth, latency_s=hop_s if up is not None else switch_s)
        node, nic = (node_up, nic_up_) if node_up is not None else (node_down, nic_down_)
        if int(node) >= self._nodes or int(nic) >= self._nics:
            return None
        bandwidth, fabric_s = self._nic_link
        return Link(name=name, bandwidth_bytes_per_s=bandwidth, latency_s=fabric_s if node_up is not None else 0.0,
                    scale_out=True)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or self._make(name) is not None

    def get(self, name: str, default: Link | None = None) -> Link | None:
        return self[name] if name in self else default

    def __iter__(self) -> Iterator[str]:
        for g in range(self._gpus):
            yield uplink(g)
            yield downlink(g)
        for node in range(self._nodes):
            for nic in range(self._nics):
                yield nic_up(node, nic)
                yield nic_down(node, nic)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self))

    def __len__(self) -> int:
        return 2 * self._gpus + 2 * self._nodes * self._nics

    def copy(self) -> dict[str, Link]:
        """Every link, as a plain dict (what ``dict.copy`` of a dict of them all gives)."""
        return dict(self.items())

    def __or__(self, other: object) -> dict[str, Link]:
        return self.copy() | other if isinstance(other, Mapping) else NotImplemented

    def __ror__(self, other: object) -> dict[str, Link]:
        return dict(other) | self.copy() if isinstance(other, Mapping) else NotImplemented

    def __reduce__(self):
        return functools.partial(type(self), **self._sizes), ()

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a cluster's links are read-only")

    __setitem__ = __delitem__ = __ior__ = _read_only
    pop = popitem = clear = update = setdefault = _read_only  # type: ignore[assignment]

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Link]:
        return ItemsView(self)

    def values(self) -> ValuesView[Link]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterLinks):
            return (self._gpus, self._nodes, self._nics, self._gpu_link, self._nic_link) == (
                other._gpus, other._nodes, other._nics, other._gpu_link, other._nic_link)
        return isinstance(other, Mapping) and len(other) == len(self) and all(
            name in self and self[name] == link for name, link in other.items())

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"ClusterLinks({len(self)} links, {dict.__len__(self)} made)"

    __hash__ = None  # type: ignore[assignment]


def cluster(
    *,
    name: str,
    nodes: int,
    gpus_per_node: int,
    uplink_bytes_per_s: float,
    hop_latency_s: float,
    switch_latency_s: float,
    nics_per_node: int,
    nic_bytes_per_s: float,
    fabric_latency_s: float,
    nvls: bool,
    launch_s: float,
    tuning: CollectiveTuning | None = None,
    host_cpu: str = "intel",
    tuner: str | None = None,
    simple_buffer_bytes: float = SIMPLE_BUFFER_BYTES,
    net_channels: int | None = None,
    nvlink_links: int | None = None,
    min_channels: int | None = None,
) -> Topology:
    """Switch nodes whose NICs meet on a non-blocking fabric (links made as they are asked
    for: :class:`ClusterLinks`)."""
    links = ClusterLinks(nodes=nodes, gpus_per_node=gpus_per_node, uplink_bytes_per_s=uplink_bytes_per_s,
                         hop_latency_s=hop_latency_s, switch_latency_s=switch_latency_s,
                         nics_per_node=nics_per_node, nic_bytes_per_s=nic_bytes_per_s,
                         fabric_latency_s=fabric_latency_s)
    return ClusterTopology(name=name, ranks=nodes * gpus_per_node, links=links, launch_s=launch_s,
                           nvls=nvls, local_ranks=gpus_per_node, nics_per_node=nics_per_node, host_cpu=host_cpu,
                           tuner=tuner, tuning=tuning, simple_buffer_bytes=simple_buffer_bytes,
                           net_channels=net_channels, nvlink_links=nvlink_links, min_channels=min_channels)


def _torus_links(shape: tuple[int, ...], wraparound: tuple[bool, ...], link_bytes_per_s: float,
                 hop_latency_s: float, prefix: str = "") -> dict:
    links = {}
    for rank in range(_product(shape)):
        here = coords_of(rank, shape)
        for axis, size in enumerate(shape):
            for step in (1, -1):
                end = here[axis] + step
                if size > 1 and (wraparound[axis] or 0 <= end < size):
                    link = torus_link(here, axis, step, prefix)
                    links[link] = Link(name=link, bandwidth_bytes_per_s=link_bytes_per_s, latency_s=hop_latency_s)
    return links


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
    links = _torus_links(tuple(shape), tuple(wraparound), link_bytes_per_s, hop_latency_s)
    return TorusTopology(
        name=name, ranks=_product(shape), links=MappingProxyType(links), launch_s=launch_s,
        shape=tuple(shape), wraparound=tuple(wraparound),
    )


def multislice(
    *,
    name: str,
    slices: int,
    shape: tuple[int, ...],
    wraparound: tuple[bool, ...],
    link_bytes_per_s: float,
    hop_latency_s: float,
    dcn_bytes_per_s: float,
    dcn_latency_s: float,
    launch_s: float,
) -> Topology:
    """Identical tori joined over the data-centre network, one DCN port per chip."""
    per_slice = _product(shape)
    links = {}
    for k in range(slices):
        links.update(_torus_links(tuple(shape), tuple(wraparound), link_bytes_per_s, hop_latency_s, slice_prefix(k)))
        for rank in range(k * per_slice, (k + 1) * per_slice):
            for link, latency in ((dcn_up(rank, per_slice), dcn_latency_s), (dcn_down(rank, per_slice), 0.0)):
                links[link] = Link(name=link, bandwidth_bytes_per_s=dcn_bytes_per_s, latency_s=latency, scale_out=True)
    return MultisliceTopology(
        name=name, ranks=slices * per_slice, links=MappingProxyType(links), launch_s=launch_s,
        shape=tuple(shape), wraparound=tuple(wraparound), local_ranks=per_slice,
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
            tuning=collective_tuning(system),
            nvlink_links=chip.links.count,
        )
    if isinstance(system, Torus):
        return torus(name=system.name, shape=system.shape, wraparound=system.wraparound,
                     link_bytes_per_s=_ici_link_bytes_per_s(system), hop_latency_s=system.chip.links.latency_s,
                     launch_s=system.chip.launch_overhead_s)
    if isinstance(system, Cluster):
        node, chip = system.node, system.node.chip
        return cluster(
            name=system.name, nodes=system.nodes, gpus_per_node=node.gpus,
            uplink_bytes_per_s=chip.link_bandwidth_bytes_per_s, hop_latency_s=chip.links.latency_s,
            switch_latency_s=node.switch_latency_s, nics_per_node=system.nics_per_node,
            nic_bytes_per_s=system.nic_bandwidth_bytes_per_s, fabric_latency_s=system.switch_latency_s,
            nvls=node.nvls and system.nvls_enabled, launch_s=chip.launch_overhead_s,
            tuning=collective_tuning(system), host_cpu=system.host_cpu, tuner=system.tuner,
            simple_buffer_bytes=system.nccl_buffer_bytes or SIMPLE_BUFFER_BYTES,
            net_channels=_net_channels(system), nvlink_links=chip.links.count,
            min_channels=system.nccl_min_channels,
        )
    if isinstance(system, Multislice):
        part = system.slice
        return multislice(
            name=system.name, slices=system.slices, shape=part.shape, wraparound=part.wraparound,
            link_bytes_per_s=_ici_link_bytes_per_s(part), hop_latency_s=part.chip.links.latency_s,
            dcn_bytes_per_s=system.dcn_bandwidth_per_chip_bytes_per_s, dcn_latency_s=system.dcn_latency_s,
            launch_s=part.chip.launch_overhead_s,
        )
    if isinstance(system, Chip):
        raise InputError(f"{system.name!r} is a chip; collectives need a system (a node, cluster, torus or multislice)",
                         field="system")
    raise TypeError(f"not a system: {type(system).__name__}")


def collective_tuning(system: Arch) -> CollectiveTuning | None:
    """The NCCL model a system's collectives use: its nodes' (GPU nodes and clusters whose
    node config has ``collectives``); None elsewhere."""
    if isinstance(system, Node):
        return system.collectives
    if isinstance(system, Cluster):
        return _platform_protocols(system)
    return None


def _platform_protocols(system: Cluster) -> CollectiveTuning | None:
    """The cluster's node model with only the protocols its platform's NCCL_PROTO allows."""
    tuning = system.node.collectives
    allowed = system.nccl_protocols
    if tuning is None or allowed is None:
        return tuning
    kept = {name: p for name, p in tuning.protocols.items() if name in allowed}
    if not kept:
        raise InputError(f"none of the protocols {list(allowed)} is in {system.node.name!r}'s NCCL model "
                         f"(it has {', '.join(tuning.protocols)})", source=system.name, field="network.nccl_protocols")
    return dataclasses.replace(tuning, protocols=MappingProxyType(kept))


def _net_channels(system: Cluster) -> int | None:
    """The NICs per node NCCL's search puts channels on (None where the node has no NCCL
    model of a known class)."""
    tuning = system.node.collectives
    if tuning is None:
        return None
    return net_graph_channels(tuning.generation, system.node.chip.links.count, system.nic_bandwidth_bytes_per_s,
                              system.nics_per_node)


def _ici_link_bytes_per_s(system: Torus) -> float:
    """Per neighbour and direction (:meth:`Torus.links_per_neighbour`)."""
    return system.links_per_neighbour() * system.chip.links.bandwidth_per_link_bytes_per_s


def _product(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out
