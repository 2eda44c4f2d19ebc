"""XLA-style collectives on a TPU torus: a bidirectional ring per axis, several axes at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Phase, Plan, PlanTimer, Request, phase, plan, plan_timer, ring_streams, ring_volume,
)
from accelsim.network.groups import axis_line, axis_lines, box, product
from accelsim.network.topology import Topology
from accelsim.units import ps_to_seconds, seconds_to_ps


def torus_ring(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Per-axis bidirectional rings over the group's box (the whole slice, or any
    sub-box: a row, a plane, every other chip of an axis), several axes at once.

    The buffer is split into one part per axis the box spans; part ``p`` visits the axes
    in the order ``p, p+1, ...`` (all-reduce: reduce-scatter along that order, then
    all-gather back), so every axis's links are busy from the start. The parts are equal
    when the axes are alike (length, wraparound, link bandwidth); otherwise the split
    that finishes soonest is searched for (:func:`_best_shares`), and the reduce-scatter
    and all-gather are also tried as each other's reverse, the all-reduce as the two with
    a barrier between (:func:`_unlike_axes_plan`). A ring whose axis does not close (no
    wraparound, or the box covers only part of the axis) is routed back along the line
    for its closing hop, which doubles the load on those links: a missing wraparound
    doubles ring time.

    Unless ``req.whole``, only the rings through the group's first rank are simulated:
    the plan is the same in every ring along an axis and those rings use disjoint links,
    so every link carries what the corresponding link of the simulated ring does (exact
    when nothing else runs on the other rings' links). This keeps a 1024-chip slice as
    cheap as a single ring.
    """
    spans = box(topo, req.ranks)
    if spans is None:
        raise InputError("torus rings need a box-shaped group (every combination of some coordinates per axis)",
                         field="group")
    axes = [a for a, values in enumerate(spans) if len(values) > 1]
    if not axes:
        raise InputError("the group has a single chip; there is nothing to communicate", field="group")
    if axes_differ(topo, spans, req.ranks[0], axes):
        return _unlike_axes_plan(topo, spans, req, axes, proto)
    return _split_plan(topo, spans, req, axes, [1 / len(axes)] * len(axes), proto, req.whole)


def _unlike_axes_plan(topo: Topology, spans: list[list[int]], req: Request, axes: list[int],
                      proto: Protocol | None) -> Plan:
    """The plan on a box whose axes differ. An all-gather moves what a reduce-scatter
    does over the same links, time-reversed, yet their searched plans took different
    times (a 4x4x4 box wrapped on two axes: all-gather 3322 us, reduce-scatter 3029, for
    1 GiB): a search's lanes all start together, where the reverse's end together, and
    with three axes the reversed orders are not rotations, so neither search tried the
    other's reverse. So each is also tried as the other's best played backwards
    (:func:`_time_reversed`), and the all-reduce also as the reduce-scatter, a barrier,
    then the all-gather (:func:`_then`; the concurrent one had taken 5% longer than the
    two one after the other). Each keeps whichever candidate simulates soonest."""

    time_plans = plan_timer(req)

    def searched(kind: str) -> Callable[[bool], Plan]:
        kind_req = dataclasses.replace(req, kind=kind)
        shares = _best_shares(topo, spans, kind_req, axes, proto)
        return lambda whole: _split_plan(topo, spans, kind_req, axes, shares, proto, whole)

    def backwards(build: Callable[[bool], Plan]) -> Callable[[bool], Plan]:
        ends_ps = _lane_ends_ps(time_plans, build(False))
        return lambda whole: _time_reversed(build(whole), ends_ps)

    searched_rs, searched_ag = searched("reduce-scatter"), searched("all-gather")
    reduce_scatter = fastest(time_plans, [searched_rs, backwards(searched_ag)])
    all_gather = fastest(time_plans, [searched_ag, backwards(searched_rs)])
    if req.kind == "reduce-scatter":
        return reduce_scatter(req.whole)
    if req.kind == "all-gather":
        return all_gather(req.whole)
    rs_ends_ps = _lane_ends_ps(time_plans, reduce_scatter(False))

    def staged(whole: bool) -> Plan:
        return _then(reduce_scatter(whole), rs_ends_ps, all_gather(whole))

    return fastest(time_plans, [searched("all-reduce"), staged])(req.whole)


def fastest(time_plans: PlanTimer, candidates: list[Callable[[bool], Plan]]) -> Callable[[bool], Plan]:
    """The candidate (a plan as a function of ``whole``) whose representative plan
    ends soonest played alone; ties keep the first."""
    times = [time_plans([build(False)])[0] for build in candidates]
    return candidates[times.index(min(times))]


def _lane_ends_ps(time_plans: PlanTimer, plan_: Plan) -> list[int]:
    """When each lane of ``plan_``, played alone, ends (picoseconds from its start): its
    lanes, each made a plan of its own, played at once exactly as the plan plays them."""
    return time_plans([dataclasses.replace(plan_, lanes=(lane,)) for lane in plan_.lanes])


def _time_reversed(plan_: Plan, ends_ps: list[int]) -> Plan:
    """``plan_`` (whose lanes end at ``ends_ps``) played backwards: each lane's phases in
    reverse order, started as late as the lane ended early, so that the lanes end
    together as ``plan_``'s started together. A ring reduce-scatter phase moves what the
    all-gather phase on the same axis does, so a reduce-scatter reversed is an
    all-gather, and back."""
    done = max(ends_ps)
    lanes = tuple(_wait(done - end) + lane[::-1] for lane, end in zip(plan_.lanes, ends_ps))
    return dataclasses.replace(plan_, lanes=lanes)


def _then(first: Plan, ends_ps: list[int], second: Plan) -> Plan:
    """``first`` (whose lanes end at ``ends_ps``), then ``second``, with one launch: lane
    ``i`` of each joined by a wait, so that, played alone, no phase of ``second`` starts
    before every lane of ``first`` has ended."""
    done = max(ends_ps)
    lanes = []
    for i in range(max(len(first.lanes), len(second.lanes))):
        head = first.lanes[i] if i < len(first.lanes) else ()
        end = ends_ps[i] if i < len(first.lanes) else seconds_to_ps(first.launch_s)
        tail = second.lanes[i] if i < len(second.lanes) else ()
        lanes.append(head + (_wait(done - end) if tail else ()) + tail)
    return dataclasses.replace(first, lanes=tuple(lanes))


def _wait(ps: int) -> tuple[Phase, ...]:
    """A phase that only waits ``ps`` picoseconds (none for no wait)."""
    return (Phase(transfers=(), latency_s=ps_to_seconds(ps)),) if ps > 0 else ()


def _split_plan(topo: Topology, spans: list[list[int]], req: Request, axes: list[int], shares: list[float],
                proto: Protocol | None, whole: bool = False) -> Plan:
    lanes = []
    for p, share in enumerate(shares):
        if share > 0:
            order = axes[p:] + axes[:p]
            lanes.append(axis_phases(topo, spans, req.ranks[0], req.kind, req.size_bytes * share, order, proto,
                                     whole))
    return plan("torus-ring", topo, lanes, proto, partial=len(axes) > 1 and not whole)


SHARE_STEPS = 10
"""Resolution of the search for the parts' shares when the axes differ."""


def _best_shares(topo: Topology, spans: list[list[int]], req: Request, axes: list[int],
                 proto: Protocol | None) -> list[float]:
    """The shares of the buffer, one per starting axis, that finish soonest, found by
    simulating the plan for equal shares and every split in tenths. Needed when the axes differ (length,
    wraparound, bandwidth): a part's biggest phases are on its first axis (its last, for
    an all-gather), and equal parts left fast axes idle while slow ones were overloaded
    (one axis wrapped came out slower than none)."""
    time_plans = plan_timer(req)
    # each part's phases once, for the whole buffer; a share of it scales their bytes (its
    # streams' rate caps and step latencies do not change)
    whole_parts = [axis_phases(topo, spans, req.ranks[0], req.kind, req.size_bytes, axes[p:] + axes[:p], proto)
                   for p in range(len(axes))]
    best = None
    for shares in share_candidates(len(axes)):  # deterministic order: ties keep the first
        lanes = [_scaled(phases, share) for phases, share in zip(whole_parts, shares) if share > 0]
        ps = time_plans([plan("torus-ring", topo, lanes, proto, partial=True)])[0]
        if best is None or ps < best[0]:
            best = (ps, shares)
    return best[1]


def _scaled(phases: list[Phase], share: float) -> list[Phase]:
    return [dataclasses.replace(ph, transfers=tuple(dataclasses.replace(t, bytes=t.bytes * share)
                                                    for t in ph.transfers)) for ph in phases]


def share_candidates(n: int) -> list[list[float]]:
    """Splits of a buffer over ``n`` parts to try: equal parts (not on the grid for three
    axes, and often best there), then every split in tenths."""

    def splits(parts: int, left: int):
        if parts == 1:
            yield (left,)
            return
        for k in range(left + 1):
            for rest in splits(parts - 1, left - k):
                yield (k, *rest)

    return [[1 / n] * n] + [[k / SHARE_STEPS for k in split] for split in splits(n, SHARE_STEPS)]


def axes_differ(topo: Topology, spans: list[list[int]], base: int, axes: list[int]) -> bool:
    """Do the box's axes differ in length, wraparound or link bandwidth (so that equal
    parts per axis may not be best)?"""
    lines = [axis_line(topo, spans, base, a) for a in axes]
    kinds = {(len(line), closes(topo, line, a), topo.links[topo.route(line[0], line[1])[0]].bandwidth_bytes_per_s)
             for a, line in zip(axes, lines)}
    return len(kinds) > 1


def axis_phases(topo: Topology, spans: list[list[int]], base: int, kind: str, part_bytes: float,
                order: list[int], proto: Protocol | None, whole: bool = False) -> list[Phase]:
    """Phases for one part of the buffer: a ring collective per axis, with the per-rank
    size it has there (reduce-scatter shrinks it by the axis length, all-gather grows it):
    along the line through ``base``, or every line of the box along that axis (``whole``)."""
    lines = {a: axis_lines(topo, spans, base, a) if whole else [axis_line(topo, spans, base, a)] for a in order}
    phases = []
    if kind in ("reduce-scatter", "all-reduce"):
        held = part_bytes
        for axis in order:
            m = len(lines[axis][0])
            volume, _ = ring_volume("reduce-scatter", m, held)
            phases.append(_axis_phase(topo, lines[axis], axis, volume, proto))
            held /= m
    if kind in ("all-gather", "all-reduce"):
        gather_order = order[::-1] if kind == "all-reduce" else order
        held = part_bytes / product([len(lines[a][0]) for a in order])
        for axis in gather_order:
            held *= len(lines[axis][0])
            volume, _ = ring_volume("all-gather", len(lines[axis][0]), held)
            phases.append(_axis_phase(topo, lines[axis], axis, volume, proto))
    return phases


def _axis_phase(topo: Topology, lines: list[list[int]], axis: int, volume: float, proto: Protocol | None) -> Phase:
    """A bidirectional ring along each of ``lines`` (parallel, alike). On a closed ring
    each half goes half way round (m // 2 steps, the scaling book's |X| / 2 hops); on a
    line (no wraparound, or part of an axis) the far end is m - 1 steps away, and the
    ring's closing stream runs back along the line, doubling its links' load. A step
    costs one neighbour-to-neighbour route, not the closing one."""
    line = lines[0]
    m = len(line)
    steps = m // 2 if closes(topo, line, axis) else m - 1
    ring = phase(topo, [s for each in lines for s in ring_streams(each, volume)], steps, proto)
    step_s = topo.route_latency_s(topo.route(line[0], line[1]))
    if proto is not None:
        step_s = proto.step_latency_s
    return dataclasses.replace(ring, latency_s=steps * step_s)


def closes(topo: Topology, line: list[int], axis: int) -> bool:
    """Does the ring go on round the axis (through a wraparound) at every hop, its
    last-to-first one included, rather than back along the line at one of them? A part
    of a wrapped axis that straddles its end (6, 7, 0, 1 of 8) is a line: the hop from 1
    to 6 goes back."""
    if not topo.wraparound[axis]:
        return False
    size = topo.shape[axis]
    coords = [topo.coords(r)[axis] for r in line]
    forward = [(b - a) % size for a, b in zip(coords, coords[1:] + coords[:1])]
    return all(f <= size - f for f in forward)
