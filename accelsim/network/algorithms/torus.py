"""XLA-style collectives on a TPU torus: a bidirectional ring per axis, several axes at once."""

from __future__ import annotations

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import Phase, Plan, Request, phase, plan, ring_streams, ring_volume
from accelsim.network.groups import axis_line, box, product
from accelsim.network.topology import Topology


def torus_ring(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Per-axis bidirectional rings over the group's box (the whole slice, or any
    sub-box: a row, a plane, every other chip of an axis), several axes at once.

    The buffer is split into one part per axis the box spans; part ``p`` visits the axes
    in the order ``p, p+1, ...`` (all-reduce: reduce-scatter along that order, then
    all-gather back), so every axis's links are busy from the start. A ring whose axis
    does not close (no wraparound, or the box covers only part of the axis) is routed
    back along the line for its closing hop, which doubles the load on those links: a
    missing wraparound doubles ring time.

    Only the rings through the group's first rank are simulated: the plan is the same in
    every ring along an axis and those rings use disjoint links, so every link carries
    what the corresponding link of the simulated ring does. This keeps a 1024-chip slice
    as cheap as a single ring.
    """
    spans = box(topo, req.ranks)
    if spans is None:
        raise InputError("torus rings need a box-shaped group (every combination of some coordinates per axis)",
                         source="--group")
    axes = [a for a, values in enumerate(spans) if len(values) > 1]
    if not axes:
        raise InputError("the group has a single chip; there is nothing to communicate", source="--group")
    lanes = []
    for p in range(len(axes)):
        order = axes[p:] + axes[:p]
        lanes.append(axis_phases(topo, spans, req.ranks[0], req.kind, req.size_bytes / len(axes), order, proto))
    return plan("torus-ring", topo, lanes, proto)


def axis_phases(topo: Topology, spans: list[list[int]], base: int, kind: str, part_bytes: float,
                order: list[int], proto: Protocol | None) -> list[Phase]:
    """Phases for one part of the buffer: a ring collective per axis, with the per-rank
    size it has there (reduce-scatter shrinks it by the axis length, all-gather grows it)."""
    lines = {a: axis_line(topo, spans, base, a) for a in order}
    phases = []
    if kind in ("reduce-scatter", "all-reduce"):
        held = part_bytes
        for axis in order:
            volume, _ = ring_volume("reduce-scatter", len(lines[axis]), held)
            phases.append(phase(topo, ring_streams(lines[axis], volume), ring_steps(topo, lines[axis], axis), proto))
            held /= len(lines[axis])
    if kind in ("all-gather", "all-reduce"):
        gather_order = order[::-1] if kind == "all-reduce" else order
        held = part_bytes / product([len(lines[a]) for a in order])
        for axis in gather_order:
            held *= len(lines[axis])
            volume, _ = ring_volume("all-gather", len(lines[axis]), held)
            phases.append(phase(topo, ring_streams(lines[axis], volume), ring_steps(topo, lines[axis], axis), proto))
    return phases


def ring_steps(topo: Topology, line: list[int], axis: int) -> int:
    """Hops of a bidirectional reduce-scatter or all-gather along ``line``: on a closed
    ring each half goes half way round (m // 2, the scaling book's |X| / 2); on a line
    the far end is m - 1 hops away."""
    m = len(line)
    closed = m == topo.shape[axis] and topo.wraparound[axis]
    return m // 2 if closed else m - 1
