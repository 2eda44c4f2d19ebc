"""Direct algorithms: every rank talks to its peers in one step (one-shot, two-shot,
all-to-all, send/recv, collective-permute)."""

from __future__ import annotations

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import Plan, Request, best_protocol, merged_phase, needs, phase, plan, register
from accelsim.network.topology import Topology

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
        share = req.size_bytes / len(req.ranks)
        sends = {a: [(b, share) for b in req.ranks if b != a] for a in req.ranks}
        return _best(topo, "direct", lambda p: [merged_phase(topo, sends, 1, p)], proto)
    streams = [(a, b, req.size_bytes) for a, b in pairs_of(req)]
    return _best(topo, "direct", lambda p: [phase(topo, streams, 1, p)], proto)


def pairs_of(req: Request) -> tuple[tuple[int, int], ...]:
    if req.kind == "send-recv":
        if len(req.ranks) != 2:
            raise InputError(f"send-recv goes from one rank to another: give 2 ranks, got {len(req.ranks)}",
                             source="--group")
        return ((req.ranks[0], req.ranks[1]),)
    if req.pairs:
        members = set(req.ranks)
        for a, b in req.pairs:
            if a not in members or b not in members:
                raise InputError(f"collective-permute pair ({a}, {b}) is not within the group", source="--group")
        return req.pairs
    n = len(req.ranks)
    return tuple((req.ranks[i], req.ranks[(i + 1) % n]) for i in range(n))


def _best(topo: Topology, name: str, phases, proto: Protocol | None) -> Plan:
    def build(p: Protocol | None) -> Plan:
        return plan(name, topo, [phases(p)], p)

    return best_protocol(topo, build) if proto is None else build(proto)
