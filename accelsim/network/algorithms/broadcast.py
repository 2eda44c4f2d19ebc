"""Broadcast: what ``ring`` runs for it on each kind of system.

* A switch node (or any group that is none of the below): one pipelined chain from the
  root in group order; every link of the chain carries the buffer once.
* Across the nodes of a cluster: NCCL's ring broadcast, one channel per NIC (the rings
  of :func:`~accelsim.network.algorithms.ring.cluster_ring`), each channel a pipelined
  chain carrying ``1 / channels`` of the buffer; its node crossings use every NIC, where
  one chain crossed through a single NIC (1 GiB over two 8-GPU H100 nodes: 49.8 GB/s,
  the NIC's rate).
* A box of a TPU torus: per-axis pipelined chains, the buffer split in one part per
  axis, part ``p`` spreading along the axes in the order ``p, p+1, ...`` (first along
  the root's line, then along every line through the chips that hold it), so every axis
  works from the start. On a closed ring half of a part goes each way round; on a line
  (no wraparound) the chain runs from the holder to both ends. Where the axes differ, the
  split that finishes soonest (equal parts, or any in tenths) is taken, or one chain
  through the group where that is faster still.
* Across the slices of a multislice: the torus broadcast inside the root's slice, then
  every chip of it sends its ``1 / k`` of the buffer to the chips at its place in the
  other slices (a chain per rail over DCN), then an all-gather inside each other slice:
  every chip's DCN port works, where one chain crossed through one.
"""

from __future__ import annotations

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import Phase, Plan, Request, Stream, phase, plan, plan_timer, with_protocol
from accelsim.network.groups import axis_line, box, by_domain, rails, same_local_layout
from accelsim.network.topology import ClusterTopology, MultisliceTopology, Topology, TorusTopology


def broadcast(topo: Topology, req: Request, proto: Protocol | None) -> Plan:
    """The plan ``ring`` runs for a broadcast from ``req.ranks[0]`` (see the module)."""
    if len(req.ranks) < 2:
        raise InputError("broadcast needs at least 2 ranks", field="group")
    parts = by_domain(topo, req.ranks)
    if len(parts) > 1 and isinstance(topo, ClusterTopology) and same_local_layout(topo, parts):
        from accelsim.network.algorithms.ring import cluster_ring

        return with_protocol(topo, lambda p: cluster_ring(topo, req, p), proto)
    if len(parts) > 1 and isinstance(topo, MultisliceTopology) and same_local_layout(topo, parts) \
            and box(topo, parts[topo.domain(req.ranks[0])]) is not None:
        return with_protocol(topo, lambda p: _across_slices(topo, req, parts, p), proto)
    if isinstance(topo, TorusTopology) and box(topo, req.ranks) is not None:
        return with_protocol(topo, lambda p: _on_torus(topo, req, p), proto)
    return with_protocol(topo, lambda p: _chain(topo, req, p), proto)


def _on_torus(topo: Topology, req: Request, proto: Protocol | None) -> Plan:
    """Per-axis chains with equal parts per axis, or, where the axes differ (a line beside
    a closed ring, say), the split that finishes soonest of equal parts and every split in
    tenths; or the single chain through the group, where it is faster still (a box of two
    chips along one axis and long closed rings along the others)."""
    from accelsim.network.algorithms.torus import axes_differ, fastest, share_candidates

    spans = box(topo, req.ranks)
    axes = [a for a, values in enumerate(spans) if len(values) > 1]
    splits = share_candidates(len(axes)) if axes_differ(topo, spans, req.ranks[0], axes) else [None]

    def chains(shares: list[float] | None):
        return lambda whole: plan("ring", topo, _torus_lanes(topo, req.ranks, req.size_bytes, proto, whole, shares),
                                  proto, partial=not whole)

    return fastest(plan_timer(req), [*map(chains, splits), lambda whole: _chain(topo, req, proto)])(req.whole)


def _chain(topo: Topology, req: Request, proto: Protocol | None) -> Plan:
    streams = [(a, b, req.size_bytes) for a, b in zip(req.ranks, req.ranks[1:])]
    return plan("ring", topo, [[phase(topo, streams, len(req.ranks) - 1, proto)]], proto)


def _torus_lanes(topo: Topology, ranks: tuple[int, ...] | list[int], size_bytes: float, proto: Protocol | None,
                 whole: bool = False, shares: list[float] | None = None) -> list[list[Phase]]:
    """Per-axis chains over the box ``ranks`` from ``ranks[0]``: one lane per spanned axis,
    lane ``p`` carrying ``shares[p]`` of the buffer (equal parts by default). Unless
    ``whole``, only the lines through the root are planned: the others are copies on their
    own links, each fed by a chip of the line before."""
    from accelsim.network.algorithms.torus import closes

    spans = box(topo, ranks)
    root = ranks[0]
    axes = [a for a, values in enumerate(spans) if len(values) > 1]
    lanes = []
    for p, share in enumerate(shares or [1 / len(axes)] * len(axes)):
        if share <= 0:
            continue
        lane, holders = [], [root]
        for axis in axes[p:] + axes[:p]:
            sources = holders if whole else [root]
            lines = [axis_line(topo, spans, h, axis) for h in sources]
            streams, steps = [], 0
            for line, holder in zip(lines, sources):
                more, steps = _line_streams(line, line.index(holder), size_bytes * share, closes(topo, line, axis))
                streams += more
            lane.append(phase(topo, streams, steps, proto))
            holders = [r for line in lines for r in line]
        lanes.append(lane)
    return lanes


def _line_streams(line: list[int], source: int, nbytes: float, closed: bool) -> tuple[list[Stream], int]:
    """A pipelined broadcast of ``nbytes`` along ``line`` from ``line[source]``: on a
    closed ring half each way all round, on a line all of it towards each end."""
    m = len(line)
    if closed:
        streams = []
        for k in range(m - 1):
            here, ahead, behind = (source + k) % m, (source + k + 1) % m, (source - k) % m
            streams.append((line[here], line[ahead], nbytes / 2))
            streams.append((line[behind], line[(source - k - 1) % m], nbytes / 2))
        return streams, m - 1
    right = [(line[j], line[j + 1], nbytes) for j in range(source, m - 1)]
    left = [(line[j], line[j - 1], nbytes) for j in range(source, 0, -1)]
    return right + left, max(source, m - 1 - source)


def _across_slices(topo: Topology, req: Request, parts: dict[int, list[int]], proto: Protocol | None) -> Plan:
    """Inside the root's slice, across on every rail, then an all-gather inside the
    others, one stage after the other (each stage's parallel parts in step). Unless
    ``req.whole``, the rail through the root and the lines through the root and through
    one other slice's first chip are planned; the rest are copies on their own links."""
    from accelsim.network.algorithms.torus import axis_phases

    home = topo.domain(req.ranks[0])
    inner = [req.ranks[0]] + [r for r in parts[home] if r != req.ranks[0]]
    k = len(inner)
    phases = _in_step(_torus_lanes(topo, inner, req.size_bytes, proto, req.whole)) if k > 1 else []
    chains = []
    for column in rails(topo, parts):
        start = next(i for i, r in enumerate(column) if topo.domain(r) == home)
        chains.append(column[start:] + column[:start])
    if not req.whole:
        chains = [next(c for c in chains if c[0] == req.ranks[0])]
    streams = [(a, b, req.size_bytes / k) for chain in chains for a, b in zip(chain, chain[1:])]
    phases.append(phase(topo, streams, len(chains[0]) - 1, proto))
    if k > 1:
        others = [parts[d] for d in sorted(parts) if d != home]
        spans = box(topo, others[0])
        axes = [a for a, values in enumerate(spans) if len(values) > 1]
        phases += _in_step([_in_step([axis_phases(topo, box(topo, ranks), ranks[0], "all-gather",
                                                  req.size_bytes / len(axes), axes[p:] + axes[:p], proto, req.whole)
                                      for p in range(len(axes))])
                            for ranks in (others if req.whole else others[:1])])
    return plan("ring", topo, [phases], proto, partial=not req.whole)


def _in_step(lanes: list[list[Phase]]) -> list[Phase]:
    """Parallel lanes of as many phases as one lane: the ``j``-th phases of all run
    together, and all end before the next ones start."""
    return [Phase(transfers=tuple(t for each in step for t in each.transfers),
                  latency_s=max(each.latency_s for each in step))
            for step in zip(*lanes, strict=True)]
