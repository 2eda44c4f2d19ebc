"""Hierarchical collectives: inside each node (or slice), then across them on rails."""

from __future__ import annotations

import dataclasses

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Phase, Plan, Request, needs, phase, plan, register, ring_streams, ring_volume, with_protocol,
)
from accelsim.network.groups import box, by_domain, rails, rails_of_first_nic, same_local_layout
from accelsim.network.topology import Topology


@register("hierarchical")
def hierarchical(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Reduce-scatter inside every node / slice, the collective across them on each
    rail (the ranks at one local position) with 1/k of the data, all-gather inside
    again; all-gather runs the stages the other way round. Inside a slice the stages are
    per-axis torus rings, inside a node a ring over NVLink; across, a bidirectional ring
    per rail over the NICs or DCN. Stages run one after the other (as XLA runs its
    multislice all-reduce), not pipelined.

    Unless ``req.whole``, only the first node's (slice's) inner part and the rails
    sharing the first rail's NIC are simulated: the rest are identical copies on their
    own links."""
    needs(req, ("all-reduce", "all-gather", "reduce-scatter"), "hierarchical")
    parts = by_domain(topo, req.ranks)
    if len(parts) < 2 or not same_local_layout(topo, parts):
        raise InputError("hierarchical needs a group spanning several nodes or slices with the same ranks in each",
                         field="algorithm")

    inner = parts[sorted(parts)[0]]
    k = len(inner)
    every = rails(topo, parts)
    columns = every if req.whole else rails_of_first_nic(topo, every)
    inners = [parts[d] for d in sorted(parts)] if req.whole else [inner]
    partial = not req.whole and (k > 1 or len(columns) < len(every))

    def build(p: Protocol | None) -> Plan:
        lanes = []
        for lane, inner_part in _inner_parts(topo, inner):
            head = _inner(topo, inners, lane, "reduce-scatter", req.size_bytes * inner_part, p, req.whole)
            tail = _inner(topo, inners, lane, "all-gather", req.size_bytes * inner_part, p, req.whole)
            shard = req.size_bytes * inner_part / k
            across = _across(topo, columns, req.kind, shard, p)
            if req.kind == "all-reduce":
                lanes.append(head + across + tail)
            elif req.kind == "reduce-scatter":
                lanes.append(head + across)
            else:
                lanes.append(across + tail)
        return plan("hierarchical", topo, lanes, p, partial)

    return with_protocol(topo, build, proto)


def _inner_parts(topo: Topology, inner: list[int]) -> list[tuple[list[int] | None, float]]:
    """Per lane: the torus axis order (None on a node) and its share of the buffer."""
    spans = box(topo, inner)
    if spans is None or len(inner) < 2:
        return [(None, 1.0)]
    axes = [a for a, values in enumerate(spans) if len(values) > 1]
    return [(axes[p:] + axes[:p], 1.0 / len(axes)) for p in range(len(axes))]


def _inner(topo: Topology, inners: list[list[int]], order: list[int] | None, kind: str, nbytes: float,
           proto: Protocol | None, whole: bool) -> list[Phase]:
    """The stage inside the nodes / slices ``inners`` (alike), run at once."""
    if len(inners[0]) < 2:
        return []
    if order is None:
        volume, steps = ring_volume(kind, len(inners[0]), nbytes)
        return [phase(topo, [s for inner in inners for s in ring_streams(inner, volume)], steps, proto)]
    from accelsim.network.algorithms.torus import axis_phases

    per_slice = [axis_phases(topo, box(topo, inner), inner[0], kind, nbytes, order, proto, whole) for inner in inners]
    return [dataclasses.replace(stage[0], transfers=tuple(t for each in stage for t in each.transfers))
            for stage in zip(*per_slice)]


def _across(topo: Topology, columns: list[list[int]], kind: str, shard: float, proto: Protocol | None) -> list[Phase]:
    volume, steps = ring_volume(kind, len(columns[0]), shard)
    streams = [s for column in columns for s in ring_streams(column, volume)]
    return [phase(topo, streams, steps, proto)]
