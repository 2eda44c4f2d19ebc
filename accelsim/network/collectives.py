"""Collectives as plans of transfers, the building blocks algorithms share, and the
nccl-tests figures of merit.

An algorithm turns (topology, request) into a :class:`Plan`: one or more *lanes* that
run concurrently, each a sequence of :class:`Phase` s. A phase is a set of
:class:`Transfer` s, each a pipelined chunk stream between two ranks (all the steps of
a ring between one pair of neighbours are one transfer), plus its latency: ``steps``
times the cost of one step. :func:`~accelsim.network.simulate.run_plans` plays plans
on links shared max-min fairly, so a phase takes its latency plus its bandwidth time
under whatever contention there is.

On GPU systems with an NCCL model (``topo.tuning``) a plan also has a *protocol* (LL,
LL128 or Simple): a step costs the protocol's ``step_latency`` (plus any NIC latency
it crosses), the plan's fixed cost is the protocol's ``base_latency``, a transfer's
link load is its bytes over (link efficiency x protocol efficiency), and a rank sends
no faster than the protocol's ``max_bandwidth_per_rank`` (nor, where the node states a
``channel_bandwidth``, than the channels NCCL runs a ring or tree of its size on:
:func:`on_channels`). Without one, a step costs
the route's link latencies and the fixed cost is the chip's launch overhead.

Sizes follow nccl-tests: ``size_bytes`` is the all-reduce and broadcast buffer, the
all-gather *output*, the reduce-scatter *input*, the all-to-all buffer each rank sends
(and receives) in all, and what each pair moves for send/recv and collective-permute.

Algorithms are registered in :data:`ALGORITHMS` (see :mod:`accelsim.network.algorithms`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from accelsim.arch.collective_tuning import CollectiveTuning, Protocol
from accelsim.errors import InputError, shown
from accelsim.network.nccl_tables import (
    GENERATIONS, collective_channels, dup_channels, ll128_channel_scale, ll_max_bus_bytes_per_s, net_graph, ring_graph,
)
from accelsim.network.topology import ClusterTopology, NodeTopology, Topology, nic_up
from accelsim.registry import Registry

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "all-to-all", "send-recv", "collective-permute")

BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send-recv": lambda n: 1.0,
    "collective-permute": lambda n: 1.0,
}
"""busbw = algbw x factor(n), as nccl-tests defines it (doc/PERFORMANCE.md)."""


@dataclass(frozen=True, kw_only=True)
class Transfer:
    """``bytes`` of payload moved over ``links`` (a route), as one pipelined stream.

    A link named twice carries the bytes twice (a merged stream to several peers).
    Each link is loaded with ``bytes / efficiency``; the stream moves at most
    ``max_bytes_per_s`` of payload."""

    links: tuple[str, ...]
    bytes: float
    efficiency: float = 1.0
    max_bytes_per_s: float = math.inf

    @property
    def carried(self) -> float:
        """Bytes one mention of a link carries: ``bytes / efficiency``."""
        return self.bytes / self.efficiency

    def link_loads(self) -> dict[str, float]:
        """Bytes each link of the route carries: :attr:`carried` per mention."""
        loads: dict[str, float] = {}
        carried = self.carried
        for link in self.links:
            loads[link] = loads.get(link, 0.0) + carried
        return loads


@dataclass(frozen=True, kw_only=True)
class Phase:
    transfers: tuple[Transfer, ...]
    latency_s: float


@dataclass(frozen=True, kw_only=True)
class Plan:
    algorithm: str
    lanes: tuple[tuple[Phase, ...], ...]
    launch_s: float
    protocol: str = ""
    """NCCL protocol (``ll``, ``ll128``, ``simple``) on GPU systems with an NCCL model."""
    fill_s: float = 0.0
    """Of the phases' latencies, what a Simple pipeline's fill adds: a tree's
    (:func:`~accelsim.network.nccl_tables.tree_simple_fill_s`), NVLS-tree's
    (:func:`~accelsim.network.nccl_tables.nvls_tree_fill_s`, and the node's
    :func:`~accelsim.network.nccl_tables.nvls_node_fill_s`) or NVLS's (the node's). NCCL's own estimate, by
    which it picks an algorithm, has no such term (``ncclTopoGetAlgoTime``, src/graph/tuning.cc
    @ v2.26.2-1 lines 530-546: latency plus bytes over bandwidth, the tree's latency a count
    of hops), so ``auto`` ranks the tree against the ring without it
    (:func:`tuner_estimate_s`), then plays it."""
    partial: bool = False
    """The plan simulates one of the collective's identical parts (one node's GPUs, the
    rails of one NIC, the rings through one chip), which is exact when nothing else runs
    on the other parts' links; :attr:`Request.whole` asks for every part."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """One collective: ``kind`` over ``ranks`` (rank ids of the topology) of ``size_bytes``.

    ``pairs`` are the (source, destination) ranks of a collective-permute (default: each
    rank to the next one of ``ranks``, cyclically); send-recv goes from ``ranks[0]`` to
    ``ranks[1]``; broadcast starts at ``ranks[0]``."""

    kind: str
    size_bytes: float
    ranks: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...] = ()
    whole: bool = False
    """Plan every part of the collective, not one of its identical parts (see
    :attr:`Plan.partial`): needed when other traffic may run on another part's links."""
    time_plans: PlanTimer | None = field(default=None, compare=False, repr=False)
    """How an algorithm that chooses among candidate plans by their time (the torus
    splits) times them; :func:`~accelsim.network.simulate.plan_for` gives it. Not part
    of what is asked: requests equal but for it are equal."""


PlanTimer = Callable[[Sequence[Plan]], list[int]]
"""Plays plans at once from time 0 on the topology's links and gives when each ends
(integer picoseconds). The one view of the simulator a planner gets, so that planning
depends on no simulator (ASTRA-sim's planners see a network API, not a network)."""


def plan_timer(req: Request) -> PlanTimer:
    """The request's timer, for an algorithm that searches among plans by their time."""
    if req.time_plans is None:
        raise ValueError("this algorithm times candidate plans: plan the request with "
                         "accelsim.network.plan_for, or give it time_plans")
    return req.time_plans


Builder = Callable[[Topology, Request, "Protocol | None"], Plan]
ALGORITHMS: Registry[Builder] = Registry("algorithm")
"""Name -> plan builder. A builder raises InputError when it does not apply; given no
protocol on a system with an NCCL model it uses the one :func:`best_protocol` picks."""


def register(name: str) -> Callable[[Builder], Builder]:
    """``@register("ring")`` adds a plan builder to :data:`ALGORITHMS`."""
    return ALGORITHMS.decorator(name)


def get_algorithm(name: str) -> Callable[[Topology, Request], Plan]:
    """The plan builder called ``name`` (``ring``) or ``name/protocol`` (``ring/ll``)."""
    algorithm, slash, proto = name.partition("/")
    if algorithm == "auto" and slash:
        raise InputError(f"auto chooses the protocol too; give NAME/PROTOCOL (e.g. ring/{proto}) or auto, got {shown(name)}",
                         field="algorithm")
    if algorithm not in ALGORITHMS:
        raise ALGORITHMS.unknown(algorithm, field="algorithm", also=("auto",))
    if slash and not proto:
        raise InputError(f"expected NAME or NAME/PROTOCOL, got {shown(name)}", field="algorithm")
    builder = ALGORITHMS[algorithm]

    def build(topo: Topology, req: Request) -> Plan:
        if not proto:
            return builder(topo, req, None)
        plan = builder(topo, req, protocol_named(topo, proto))
        if plan.protocol and plan.protocol != proto:  # NVLS runs Simple only, say
            raise InputError(f"{algorithm} runs the {plan.protocol} protocol, not {proto}", field="algorithm")
        return plan

    return build


def protocol_named(topo: Topology, name: str) -> Protocol:
    return check_protocol(topo.name, topo.tuning, name)


def check_protocol(system: str, tuning: CollectiveTuning | None, name: str) -> Protocol:
    """The protocol ``name`` of a system with NCCL model ``tuning`` (see
    :func:`~accelsim.network.topology.collective_tuning`); needs no links."""
    if tuning is None:
        raise InputError(f"{shown(system)} has no NCCL model, so no protocol {shown(name)}", field="algorithm")
    if name not in tuning.protocols:
        raise InputError(f"unknown protocol {shown(name)}; known: {', '.join(tuning.protocols)}", field="algorithm")
    return tuning.protocols[name]


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"unknown collective {shown(kind)}; known: {', '.join(KINDS)}", field="kind")
    return kind


def needs(req: Request, kinds: Iterable[str], algorithm: str) -> None:
    if req.kind not in kinds:
        raise InputError(f"{algorithm} does not do {req.kind} (it does {', '.join(kinds)})", field="algorithm")


# ------------------------------------------------------------------ protocols and estimates


def best_protocol(topo: Topology, build: Callable[[Protocol | None], Plan], protocols: Sequence[str] | None = None) -> Plan:
    """The plan ``build(protocol)`` with the least :func:`estimate_s`, as NCCL's tuner
    picks a protocol; ``build(None)`` where the system has no NCCL model. (Fill included:
    see :func:`tuner_estimate_s`.)"""
    if topo.tuning is None:
        return build(None)
    names = protocols if protocols is not None else list(topo.tuning.protocols)
    plans = [build(topo.tuning.protocols[p]) for p in names if p in topo.tuning.protocols]
    return min(plans, key=lambda plan: estimate_s(topo, plan))


def with_protocol(topo: Topology, build: Callable[[Protocol | None], Plan], proto: Protocol | None) -> Plan:
    """``build(proto)`` for a protocol asked for, else the plan :func:`best_protocol` picks."""
    return best_protocol(topo, build) if proto is None else build(proto)


def tuner_estimate_s(topo: Topology, plan: Plan) -> float:
    """What ``auto`` ranks the ring against the tree by: ``plan``'s :func:`estimate_s` as
    NCCL's algorithm choice sees it, without a Simple tree's pipeline fill
    (:attr:`Plan.fill_s`), which NCCL does not rate but its kernels pay. (On 2 A3 Mega nodes,
    Simple only, NCCL kept the tree from 4 to 128 MiB, where the fill made the model's own
    estimate pick the ring: -28 to -60% on bus bandwidth.) A tree's protocol is still picked
    with the fill (:func:`best_protocol`): NCCL rates a Simple tree's bandwidth at 0.5-0.6 of
    its figure from 2 to 64 MiB (``treeCorrectionFactor``, src/graph/tuning.cc @ v2.26.2-1
    lines 524-538), which the model does not carry, and without the fill the 2-node A100
    curve would pick Simple over LL128 at 16-128 MiB (-72 to -15%)."""
    return estimate_s(topo, plan) - plan.fill_s


def estimate_s(topo: Topology, plan: Plan) -> float:
    """Time of ``plan`` alone, from its loads (no simulation): per phase, its latency plus
    the busiest link's load over its capacity or the slowest rate-capped stream. Lanes
    run at once, so where there are several, no sooner than the busiest link carries what
    all of them put on it (nvls-tree's four stages share NVLink and NICs: estimated
    alone, 1 GiB over 2 nodes came out 2841 us against 5402 us played)."""
    lanes = []
    for lane in plan.lanes:
        total = 0.0
        for phase in lane:
            load: Counter[str] = Counter()
            capped = 0.0
            for t in phase.transfers:
                load.update(t.link_loads())
                capped = max(capped, t.bytes / t.max_bytes_per_s)
            busiest = max((amount / topo.links[link].bandwidth_bytes_per_s for link, amount in load.items()), default=0.0)
            total += phase.latency_s + max(busiest, capped)
        lanes.append(total)
    alone = plan.launch_s + max(lanes, default=0.0)
    if len(plan.lanes) < 2:
        return alone
    shared = max((load / topo.links[link].bandwidth_bytes_per_s for link, load in link_loads(plan).items()),
                 default=0.0)
    first = min(lane[0].latency_s for lane in plan.lanes if lane)
    return max(alone, plan.launch_s + first + shared)


def link_loads(plan: Plan | None) -> dict[str, float]:
    """Bytes each link carries when ``plan`` runs alone (``{}`` for ``None``, a plan
    that moves nothing): the sum of its transfers' :meth:`Transfer.link_loads`."""
    loads: dict[str, float] = {}
    get = loads.get
    for lane in plan.lanes if plan is not None else ():
        for phase in lane:
            for t in phase.transfers:
                carried = t.carried
                for link in t.links:
                    loads[link] = get(link, 0.0) + carried
    return loads


def across_nodes(topo: Topology, proto: Protocol | None, nodes: int) -> Protocol | None:
    """``proto`` as it runs on a collective spanning ``nodes`` nodes: NCCL rates LL's bus
    bandwidth across nodes no higher than ``llMaxBws`` (its host-CPU row, 2 nodes or more,
    :func:`~accelsim.network.nccl_tables.ll_max_bus_bytes_per_s`), where one node's LL is
    limited by its links alone. A rank's LL streams share that ceiling (a ring rank sends
    its bus bytes, so the ceiling is on bus bandwidth as NCCL states it). LL128 runs on the
    channels NCCL's search finds across nodes (:func:`on_searched_channels`)."""
    if proto is None or nodes < 2:
        return proto
    if proto.name == "ll128":
        return on_searched_channels(topo, proto, across=True)
    if proto.name != "ll":
        return proto
    ceiling = ll_max_bus_bytes_per_s(topo.host_cpu, nodes)
    own = proto.max_bandwidth_per_rank_bytes_per_s
    return dataclasses.replace(proto, max_bandwidth_per_rank_bytes_per_s=min(ceiling, own or math.inf))


def on_searched_channels(topo: Topology, proto: Protocol | None, across: bool) -> Protocol | None:
    """``proto`` with LL128's per-rank cap on the channels of NCCL's ring graph: NCCL rates
    ring/LL128 no faster than ``nChannels x perChMaxRingLL128Bws``, and a node config's cap
    is that figure x :data:`~accelsim.network.nccl_tables.LL128_CHANNELS`, so it is scaled to
    the graph's own count (:func:`~accelsim.network.nccl_tables.ll128_channel_scale`): on one
    node :func:`~accelsim.network.nccl_tables.ring_graph` (DGX A100 and H100 12, B200 16),
    across nodes (``across``) the search over the NICs
    (:func:`~accelsim.network.nccl_tables.net_graph`, then ``ncclTopoDupChannels``), or
    what ``NCCL_MIN_NCHANNELS`` forces on a cluster. Other protocols, and nodes whose NCCL
    class or NVLink count is not known, unchanged. A tree across nodes gets the same scale
    through :func:`across_nodes`: the ring graph's count stands for the tree graph's (the
    scale is 1.0 on every 8-NIC preset; it differs on a GB200 rack or with
    ``NCCL_MIN_NCHANNELS``)."""
    own = proto.max_bandwidth_per_rank_bytes_per_s if proto is not None else None
    if proto is None or proto.name != "ll128" or own is None:
        return proto
    graph = _searched_channels(topo, across)
    scale = ll128_channel_scale(graph, topo.min_channels if isinstance(topo, ClusterTopology) else None)
    return dataclasses.replace(proto, max_bandwidth_per_rank_bytes_per_s=own * scale)


def _searched_channels(topo: Topology, across: bool) -> int | None:
    """``nChannels`` of NCCL's ring graph on ``topo`` (one node, or ``across`` nodes of a
    cluster) after ``ncclTopoDupChannels``; None where it is not known."""
    generation = topo.tuning.generation if topo.tuning is not None else None
    links = topo.nvlink_links if isinstance(topo, NodeTopology) else None
    if generation not in GENERATIONS or links is None:
        return None
    if not across:
        return ring_graph(generation, links)[0]
    if not isinstance(topo, ClusterTopology):
        return None
    graph = net_graph(generation, links, topo.links[nic_up(0, 0)].bandwidth_bytes_per_s, topo.nics_per_node)
    return dup_channels(generation, *graph)[0] if graph is not None else None


def on_channels(topo: Topology, proto: Protocol | None, algorithm: str, req: Request) -> Protocol | None:
    """``proto`` as NCCL runs ``req`` as ``algorithm`` (``ring`` or ``tree``): on the channels
    :func:`~accelsim.network.nccl_tables.collective_channels` gives for its size, each
    moving the node's ``channel_bandwidth`` of wire bytes, so a rank sends no faster than
    channels x that x the protocol's efficiency (the channels' share of the rank's bytes
    is equal: NCCL splits the buffer across them). Unchanged where the node states no
    channel bandwidth."""
    rate = topo.tuning.channel_bytes_per_s if topo.tuning is not None else None
    if proto is None or rate is None:
        return proto
    channels = collective_channels(algorithm, proto.name, req.size_bytes, len(req.ranks))
    own = proto.max_bandwidth_per_rank_bytes_per_s
    cap = channels * rate * proto.efficiency
    return dataclasses.replace(proto, max_bandwidth_per_rank_bytes_per_s=min(cap, own or math.inf))


def launch_s(topo: Topology, proto: Protocol | None) -> float:
    return proto.base_latency_s if proto is not None else topo.launch_s


# ------------------------------------------------------------------ building blocks


Stream = tuple[int, int, float]
"""(source rank, destination rank, payload bytes)."""


def phase(topo: Topology, streams: Sequence[Stream], steps: int, proto: Protocol | None,
          remote_steps: int | None = None) -> Phase:
    """A phase of point-to-point streams taking ``steps`` algorithm steps, of which
    ``remote_steps`` (default: all) cross between nodes or slices.

    A step costs the slowest route's link latencies; with a protocol, its
    ``step_latency``, except that a remote step costs the protocol's
    ``net_step_latency`` (where given) plus the NIC / DCN latency of the slowest route
    (NCCL: (nsteps - nInterSteps) x intraLat + nInterSteps x interLat). A rank's streams share the
    protocol's per-rank rate limit in proportion to their bytes, so they finish together
    when it binds (equal shares halved a ring's big NVLink stream beside its small NIC
    stream)."""
    routes = [topo.route(s, d) for s, d, _ in streams]  # the first of a stream's routes: they are alike
    crosses = [any(topo.links[name].scale_out for name in r) for r in routes]
    remote = max((topo.scale_out_latency_s(r) for r, c in zip(routes, crosses) if c), default=0.0)
    remote_steps = (steps if any(crosses) else 0) if remote_steps is None else remote_steps
    if proto is None:
        local = max((topo.route_latency_s(r) for r, c in zip(routes, crosses) if not c), default=0.0)
        latency = remote_steps * remote + (steps - remote_steps) * local
    else:
        latency = steps * proto.step_latency_s + remote_steps * (remote + _net_step_extra_s(proto))
    sent: Counter[int] = Counter()
    for s, _, nbytes in streams:
        sent[s] += max(nbytes, 0.0)
    transfers = []
    for src, dst, nbytes in streams:
        if nbytes > 0 and src != dst:
            for share, route in topo.routes(src, dst):  # half each way round at a tie
                transfers.append(_transfer(topo, route, nbytes * share, proto, sent[src] / (nbytes * share)))
    return Phase(transfers=tuple(transfers), latency_s=latency)


def _net_step_extra_s(proto: Protocol) -> float:
    """What a step across the network costs beyond an NVLink step, before the fabric's
    latency: NCCL's NET step latency in place of its NVLink one, where the config gives it."""
    return 0.0 if proto.net_step_latency_s is None else proto.net_step_latency_s - proto.step_latency_s


def merged_phase(topo: Topology, sends: dict[int, list[tuple[int, float]]], steps: int, proto: Protocol | None) -> Phase:
    """Like :func:`phase` for direct patterns with many peers per rank: each rank's
    streams of one size become one transfer over all their routes (links repeated), so a
    phase has O(ranks) transfers instead of O(ranks^2). Streams within a node (or slice)
    and across nodes stay separate, as they load different links. A merged transfer's
    ``bytes`` is one stream's, so its rate cap is one stream's share of the rank's cap:
    the cap over all the rank's streams, not over its merged transfers."""
    transfers = []
    step = 0.0
    crosses = False
    size = topo.domain_size
    for src, peers in sends.items():
        groups: dict[tuple[bool, float], list[str]] = {}
        total = 0.0
        domain = src // size
        for dst, nbytes in peers:
            if nbytes <= 0 or dst == src:
                continue
            total += nbytes
            remote = dst // size != domain
            crosses = crosses or remote
            for share, route in topo.routes(src, dst):  # half each way round at a tie
                groups.setdefault((remote, nbytes * share), []).extend(route)
                latency = topo.route_latency_s(route) if proto is None else topo.scale_out_latency_s(route)
                step = max(step, latency)
        for (_, nbytes), links in sorted(groups.items()):
            transfers.append(_transfer(topo, tuple(links), nbytes, proto, total / nbytes))
    if proto is not None:
        step += proto.step_latency_s + (_net_step_extra_s(proto) if crosses else 0.0)
    return Phase(transfers=tuple(transfers), latency_s=steps * step)


def _transfer(topo: Topology, links: tuple[str, ...], nbytes: float, proto: Protocol | None, streams: float) -> Transfer:
    """A stream as a transfer; ``streams`` is how many of it the rank's bytes make (its
    share of the rank's rate cap is ``1 / streams``)."""
    if proto is None:
        return Transfer(links=links, bytes=nbytes)
    remote = any(topo.links[name].scale_out for name in links)
    efficiency = proto.efficiency * (1.0 if remote else topo.tuning.link_efficiency)
    cap = proto.max_bandwidth_per_rank_bytes_per_s
    return Transfer(links=links, bytes=nbytes, efficiency=efficiency,
                    max_bytes_per_s=cap / streams if cap is not None else math.inf)


def ring_streams(members: Sequence[int], per_rank_bytes: float, bidirectional: bool = True) -> list[Stream]:
    """Every member sends ``per_rank_bytes`` to its ring neighbours: half each way round
    (bidirectional, as NCCL's channels and XLA's torus rings use both directions), or
    all of it to the next member."""
    m = len(members)
    if m < 2:
        return []
    out = []
    for i, rank in enumerate(members):
        if bidirectional:
            out.append((rank, members[(i + 1) % m], per_rank_bytes / 2))
            out.append((rank, members[(i - 1) % m], per_rank_bytes / 2))
        else:
            out.append((rank, members[(i + 1) % m], per_rank_bytes))
    return out


def ring_volume(kind: str, m: int, size_bytes: float) -> tuple[float, int]:
    """(bytes each rank sends, steps) of a ring ``kind`` over ``m`` ranks."""
    if kind == "all-reduce":
        return 2 * (m - 1) / m * size_bytes, 2 * (m - 1)
    if kind in ("all-gather", "reduce-scatter"):
        return (m - 1) / m * size_bytes, m - 1
    if kind == "broadcast":  # a pipelined chain: every rank but the last forwards the buffer
        return size_bytes, m - 1
    raise InputError(f"no ring {kind} here", field="algorithm")


def plan(name: str, topo: Topology, lanes: Sequence[Sequence[Phase]], proto: Protocol | None,
         partial: bool = False) -> Plan:
    return Plan(algorithm=name, lanes=tuple(tuple(lane) for lane in lanes), launch_s=launch_s(topo, proto),
                protocol=proto.name if proto is not None else "", partial=partial)
