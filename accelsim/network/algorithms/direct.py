"""Direct algorithms: every rank talks to its peers in one step (one-shot, two-shot,
all-to-all, send/recv, collective-permute)."""

from __future__ import annotations

from collections import Counter

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Phase, Plan, Request, Transfer, merged_phase, needs, phase, plan, register, with_protocol,
)
from accelsim.network.groups import box, by_domain, same_local_layout
from accelsim.network.topology import ClusterTopology, Topology, TorusTopology, torus_link

POINT_TO_POINT = ("all-to-all", "send-recv", "collective-permute")


@register("one-shot")
def one_shot(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Every rank sends its whole contribution to every peer in one step (all-reduce: the
    full buffer, each rank then reduces locally; all-gather: its shard; reduce-scatter:
    each peer's shard; broadcast: the root sends the buffer to everyone)."""
    needs(req, ("all-reduce", "all-gather", "reduce-scatter", "broadcast"), "one-shot")
    n = len(req.ranks)
    per_peer = req.size_bytes if req.kind in ("all-reduce", "broadcast") else req.size_bytes / n
    senders = req.ranks[:1] if req.kind == "broadcast" else req.ranks
    sends = {a: [(b, per_peer) for b in req.ranks if b != a] for a in senders}
    return _best(topo, "one-shot", lambda p: [merged_phase(topo, sends, 1, p)], proto)


@register("two-shot")
def two_shot(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """All-reduce as a direct reduce-scatter (each rank sends every peer its 1/n) and a
    direct all-gather of the reduced shards: 2(n-1)/n S of traffic in two steps."""
    needs(req, ("all-reduce",), "two-shot")
    shard = req.size_bytes / len(req.ranks)
    sends = {a: [(b, shard) for b in req.ranks if b != a] for a in req.ranks}
    return _best(topo, "two-shot", lambda p: [merged_phase(topo, sends, 1, p), merged_phase(topo, sends, 1, p)], proto)


@register("direct")
def direct(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Point-to-point kinds: all-to-all (each rank sends 1/n of its buffer to every peer),
    send/recv (``ranks[0]`` to ``ranks[1]``), collective-permute (each pair moves the
    buffer; by default every rank to the next in the group)."""
    needs(req, POINT_TO_POINT, "direct")
    if req.kind == "all-to-all":
        return _best(topo, "direct", lambda p: [all_to_all_phase(topo, req, p)], proto, _a2a_partial(topo, req))
    streams = [(a, b, req.size_bytes) for a, b in pairs_of(req)]
    return _best(topo, "direct", lambda p: [phase(topo, streams, 1, p)], proto)


def all_to_all_phase(topo: Topology, req: Request, proto: Protocol | None) -> Phase:
    """Each rank sends 1/n of its buffer to every peer over its routes, all at once.

    Symmetric groups are represented by a few sources, as rings are (the other ranks'
    traffic is a copy on their own links): on a cluster, the ranks of the first node
    (every node holding the same positions of the group); on a torus whose group spans
    whole wrapped axes, the first rank alone, its routes' hops counted per axis and
    direction and put on its own link of that axis and direction (each chip's link
    carries as many hops as the first chip's routes make in that direction); across
    slices, that rank's DCN port too. A peer half way round a wrapped axis gets half its
    share each way, as XLA's bidirectional rings send it. Anything else, or with
    ``req.whole``, sends from every rank (on a torus, every rank's hops on its own
    links)."""
    share = req.size_bytes / len(req.ranks)
    parts = by_domain(topo, req.ranks)
    first = parts[min(parts)]
    if _torus_symmetric(topo, req):
        return _torus_all_to_all(topo, req.ranks, first, share, req.whole)
    sources = first if _a2a_partial(topo, req) else req.ranks
    sends = {a: [(b, share) for b in req.ranks if b != a] for a in sources}
    return merged_phase(topo, sends, 1, proto)


def _torus_symmetric(topo: Topology, req: Request) -> bool:
    parts = by_domain(topo, req.ranks)
    return (isinstance(topo, TorusTopology) and same_local_layout(topo, parts)
            and _translation_invariant(topo, parts[min(parts)]))


def _a2a_partial(topo: Topology, req: Request) -> bool:
    """Does the all-to-all plan send from some of the ranks only (``req.whole`` unset)?"""
    if req.whole or req.kind != "all-to-all":
        return False
    parts = by_domain(topo, req.ranks)
    if _torus_symmetric(topo, req):
        return len(req.ranks) > 1
    return isinstance(topo, ClusterTopology) and same_local_layout(topo, parts) and len(parts) > 1


def _translation_invariant(topo: Topology, inner: list[int]) -> bool:
    spans = box(topo, inner)
    return spans is not None and all(
        len(v) == 1 or (len(v) == topo.shape[a] and topo.wraparound[a]) for a, v in enumerate(spans))


def _torus_all_to_all(topo: Topology, ranks: tuple[int, ...], inner: list[int], share: float,
                      whole: bool = False) -> Phase:
    """The first rank's hops, on its own links (or every rank's, ``whole``)."""
    source = inner[0]
    latency = 0.0
    offsets: Counter[tuple[int, int]] = Counter()  # (axis, direction) -> hops, in half shares
    for dst in inner:
        latency = max(latency, topo.route_latency_s(topo.route(source, dst)))
        for axis, step, count in topo.torus_hops(source, dst):
            size = topo.shape[axis]
            if 2 * count == size and topo.wraparound[axis]:  # half way round: either way, so half each way
                offsets[axis, 1] += count
                offsets[axis, -1] += count
            else:
                offsets[axis, step] += 2 * count
    remote = len(ranks) - len(inner)
    # across slices: each rank's DCN port sends its share to every remote rank; each is
    # sent to the rank at its position in the next slice, so every port carries as much
    parts = by_domain(topo, ranks)
    domains = sorted(parts)
    transfers = []
    for j, d in enumerate(domains if whole else domains[:1]):
        for i, src in enumerate(parts[d] if whole else parts[d][:1]):
            prefix = topo.link_prefix(d)
            here = topo.coords(src)
            hops = Counter({torus_link(here, axis, step, prefix): count for (axis, step), count in offsets.items()})
            # a link named k times carries k x share / 2
            links = [name for name, count in sorted(hops.items()) for _ in range(count)]
            if links:
                transfers.append(Transfer(links=tuple(links), bytes=share / 2))
            if remote:
                route = topo.route(src, parts[domains[(j + 1) % len(domains)]][i])
                transfers.append(Transfer(links=tuple(route) * remote, bytes=share))
                latency = max(latency, topo.route_latency_s(route))
    return Phase(transfers=tuple(transfers), latency_s=latency)


def pairs_of(req: Request) -> tuple[tuple[int, int], ...]:
    if req.kind == "send-recv":
        if len(req.ranks) != 2:
            raise InputError(f"send-recv goes from one rank to another: give 2 ranks, got {len(req.ranks)}",
                             field="group")
        return ((req.ranks[0], req.ranks[1]),)
    if req.pairs:
        members = set(req.ranks)
        for a, b in req.pairs:
            if a not in members or b not in members:
                raise InputError(f"collective-permute pair ({a}, {b}) is not within the group", field="group")
        return req.pairs
    n = len(req.ranks)
    return tuple((req.ranks[i], req.ranks[(i + 1) % n]) for i in range(n))


def _best(topo: Topology, name: str, phases, proto: Protocol | None, partial: bool = False) -> Plan:
    def build(p: Protocol | None) -> Plan:
        return plan(name, topo, [phases(p)], p, partial)

    return with_protocol(topo, build, proto)
