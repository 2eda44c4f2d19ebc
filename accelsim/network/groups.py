"""How a group of ranks sits on a topology: per node / slice, per axis of a torus."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from accelsim.network.topology import ClusterTopology, Topology, TorusTopology


def by_domain(topo: Topology, ranks: Sequence[int]) -> dict[int, list[int]]:
    """The group's ranks per node (cluster) or slice (multislice), in group order."""
    out: dict[int, list[int]] = {}
    for r in ranks:
        out.setdefault(topo.domain(r), []).append(r)
    return out


def same_local_layout(topo: Topology, parts: dict[int, list[int]]) -> bool:
    """Does every node / slice hold the group's ranks at the same local positions?"""
    layouts = {tuple(sorted(r % topo.domain_size for r in members)) for members in parts.values()}
    return len(layouts) == 1


def box(topo: Topology, ranks: Sequence[int]) -> list[list[int]] | None:
    """Per axis, the coordinates a torus group spans, if the group is exactly that box
    (every combination of them, in one slice); otherwise None."""
    if not isinstance(topo, TorusTopology) or len({topo.domain(r) for r in ranks}) != 1:
        return None
    coords = [topo.coords(r) for r in ranks]
    axes = [sorted({c[a] for c in coords}) for a in range(len(topo.shape))]
    size = 1
    for values in axes:
        size *= len(values)
    if size != len(set(ranks)) or size != len(ranks):
        return None
    return axes


def axis_line(topo: Topology, spans: list[list[int]], base: int, axis: int) -> list[int]:
    """The group's ranks along ``axis`` through rank ``base`` (other coordinates fixed)."""
    here = list(topo.coords(base))
    domain = topo.domain(base)
    line = []
    for value in spans[axis]:
        here[axis] = value
        line.append(topo.rank_of(tuple(here), domain))
    return line


def axis_lines(topo: Topology, spans: list[list[int]], base: int, axis: int) -> list[list[int]]:
    """Every line of the box ``spans`` along ``axis`` (in ``base``'s slice), the one
    through ``base`` first."""
    first = axis_line(topo, spans, base, axis)
    here = topo.coords(base)
    others = [a for a in range(len(spans)) if a != axis]
    lines = [first]
    for values in itertools.product(*(spans[a] for a in others)):
        if all(v == here[a] for a, v in zip(others, values)):
            continue
        point = list(here)
        for a, v in zip(others, values):
            point[a] = v
        lines.append(axis_line(topo, spans, topo.rank_of(tuple(point), topo.domain(base)), axis))
    return lines


def nic_channels(topo: Topology, senders: Sequence[int], receivers: Sequence[int]) -> list[tuple[int, int]]:
    """NCCL's channels across nodes: one per NIC the senders' GPUs use, as (index in
    ``senders`` of the GPU the channel leaves through, index in ``receivers`` of the GPU
    it enters at): the first GPU on that NIC on each side (rail to rail), at most one
    channel per receiver. A channel per NIC, not per evenly spaced GPU: with 5 NICs for
    8 GPUs, evenly spaced exits put two channels on one NIC and left another idle. Where
    NCCL's search finds fewer channels than NICs (``net_channels``: a GB200 rack's 72 NICs
    carry 15), that many NICs, evenly spaced (which ones NCCL picks is not modelled; every
    NIC and GPU of a node is alike here)."""
    exits: dict[int, int] = {}
    for i, gpu in enumerate(senders):
        exits.setdefault(topo.nic_of(gpu)[1], i)
    entries: dict[int, int] = {}
    for i, gpu in enumerate(receivers):
        entries.setdefault(topo.nic_of(gpu)[1], i)
    nics = sorted(exits)
    limit = topo.net_channels if isinstance(topo, ClusterTopology) else None
    if limit is not None and limit < len(nics):
        nics = [nics[c * len(nics) // limit] for c in range(limit)]
    nics = nics[:len(receivers)]
    return [(exits[nic], entries.get(nic, c * len(receivers) // len(nics))) for c, nic in enumerate(nics)]


def rails(topo: Topology, parts: dict[int, list[int]]) -> list[list[int]]:
    """Rail groups: the ranks at the same local position in each node / slice."""
    ordered = [sorted(members, key=lambda r: r % topo.domain_size) for _, members in sorted(parts.items())]
    return [list(column) for column in zip(*ordered)]


def product(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def rails_of_first_nic(topo: Topology, columns: list[list[int]]) -> list[list[int]]:
    """The rails that share the first rail's NIC: what a rail collective must simulate
    to see NIC sharing (on DCN every chip has its own port, so the first rail alone)."""
    if not isinstance(topo, ClusterTopology):
        return columns[:1]
    nic = topo.nic_of(columns[0][0])[1]
    return [c for c in columns if topo.nic_of(c[0])[1] == nic]
