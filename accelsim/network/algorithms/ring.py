"""Rings: bidirectional and unidirectional over any group, and NCCL's multi-channel ring
across the nodes of a cluster (broadcast: :mod:`.broadcast`)."""

from __future__ import annotations

from collections import Counter

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Plan, Request, Stream, across_nodes, needs, on_channels, on_searched_channels, phase, plan, register,
    ring_streams, ring_volume, with_protocol,
)
from accelsim.network.groups import box, by_domain, nic_channels, same_local_layout
from accelsim.network.topology import ClusterTopology, MultisliceTopology, Topology, TorusTopology

RING_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast")


@register("ring")
def ring(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """On a switch node: one logical ring, bidirectional. On a torus: per-axis rings over
    the group's box (:mod:`.torus`). Across nodes of a cluster: NCCL's ring, its node
    crossings spread over every NIC (one channel per NIC), when every node holds the same
    GPUs of the group. Across slices: hierarchical (:mod:`.hierarchical`). Any other
    group: one ring in group order. Broadcast from ``ranks[0]``: :mod:`.broadcast`."""
    needs(req, RING_KINDS, "ring")
    if req.kind == "broadcast":
        from accelsim.network.algorithms.broadcast import broadcast

        return broadcast(topo, req, proto)
    parts = by_domain(topo, req.ranks)
    if len(parts) > 1 and isinstance(topo, MultisliceTopology) and same_local_layout(topo, parts):
        from accelsim.network.algorithms.hierarchical import hierarchical

        return hierarchical(topo, req, proto)
    if isinstance(topo, TorusTopology) and box(topo, req.ranks) is not None:
        from accelsim.network.algorithms.torus import torus_ring

        return torus_ring(topo, req, proto)
    if len(parts) > 1 and isinstance(topo, ClusterTopology) and same_local_layout(topo, parts):
        return with_protocol(topo, lambda p: cluster_ring(topo, req, p), proto)
    return _flat(topo, req, proto, bidirectional=True, name="ring")


@register("ring-uni")
def ring_uni(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """One logical ring in one direction over the group, in group order."""
    needs(req, RING_KINDS[:3], "ring-uni")
    return _flat(topo, req, proto, bidirectional=False, name="ring-uni")


def _flat(topo: Topology, req: Request, proto: Protocol | None, *, bidirectional: bool, name: str) -> Plan:
    def build(p: Protocol | None) -> Plan:
        volume, steps = ring_volume(req.kind, len(req.ranks), req.size_bytes)
        streams = ring_streams(list(req.ranks), volume, bidirectional)
        spans_nodes = len(by_domain(topo, req.ranks)) > 1
        wire = on_channels(topo, on_searched_channels(topo, p, across=spans_nodes), "ring", req)
        return plan(name, topo, [[phase(topo, streams, steps, wire)]], p)

    return with_protocol(topo, build, proto)


def cluster_ring(topo: Topology, req: Request, proto: Protocol | None) -> Plan:
    """NCCL's ring across nodes: as many channels as NICs, each a unidirectional ring that
    crosses the node's GPUs and leaves it from a different one, through that GPU's NIC
    (channel ``c`` enters at the GPU after its exit GPU and walks round to it; its exit
    is the first GPU on NIC ``c``, :func:`~accelsim.network.groups.nic_channels`), so every
    GPU forwards ``(channels - 1) / channels`` of the volume over NVLink and the rest
    through its NIC. Only the first node's part is simulated unless ``req.whole``: every
    node's part is the same and loads its own links, so this is exact when nothing else
    runs on them, and keeps 1024-GPU clusters cheap."""
    parts = by_domain(topo, req.ranks)
    order = [r for _, members in sorted(parts.items()) for r in members]
    volume, steps = ring_volume(req.kind, len(order), req.size_bytes)
    domains = sorted(parts)
    forwarded: Counter[tuple[int, int]] = Counter()
    crossing: list[Stream] = []
    for j in range(len(domains) if req.whole else 1):
        senders, receivers = parts[domains[j]], parts[domains[(j + 1) % len(domains)]]
        channels = nic_channels(topo, senders, receivers)
        for exit_index, entry in channels:
            for k in range(1, len(senders)):  # from the GPU after the exit round to the exit
                a, b = senders[(exit_index + k) % len(senders)], senders[(exit_index + k + 1) % len(senders)]
                forwarded[a, b] += volume / len(channels)
            if req.kind != "broadcast" or not req.whole or topo.domain(req.ranks[0]) != domains[(j + 1) % len(domains)]:
                # (a broadcast's chains end before they would cross back into the root's node)
                crossing.append((senders[exit_index], receivers[entry], volume / len(channels)))
    streams = [(a, b, nbytes) for (a, b), nbytes in forwarded.items()] + crossing
    remote_steps = round(steps * len(parts) / len(order))  # a pass round the ring crosses every node once
    wire = on_channels(topo, across_nodes(topo, proto, len(parts)), "ring", req)
    return plan("ring", topo, [[phase(topo, streams, steps, wire, remote_steps)]], proto, partial=not req.whole)
