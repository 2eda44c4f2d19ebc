"""NCCL's double binary tree and recursive halving-doubling (Rabenseifner)."""

from __future__ import annotations

import math

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Plan, Request, Stream, across_nodes, needs, phase, plan, register, with_protocol,
)
from accelsim.network.groups import by_domain, nic_channels, rails, rails_of_first_nic, same_local_layout
from accelsim.network.topology import Topology


@register("tree")
def double_binary_tree(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """All-reduce on two binary trees over the group, each carrying half the buffer; a
    rank that is inside one tree is a leaf of the other (the second tree is the first
    over the group in reverse order). Reduce up the trees, then broadcast down, each a
    pipelined stream per tree edge taking ``depth`` steps: about 2 S / B and
    2 log2(n) steps, against the ring's 2(n-1)/n S / B and 2(n-1) steps. Across the
    nodes of a cluster (the same GPUs in each), NCCL's shape: chains inside nodes, trees
    across (:func:`_cluster_tree`)."""
    needs(req, ("all-reduce",), "tree")
    ranks = list(req.ranks)
    parts = by_domain(topo, ranks)
    across_nodes = topo.kind == "cluster" and len(parts) > 1 and same_local_layout(topo, parts)

    def build(p: Protocol | None) -> Plan:
        if across_nodes:
            return _cluster_tree(topo, req, parts, p)
        depth = tree_depth(len(ranks))
        up, down = tree_streams(ranks, req.size_bytes)
        return plan("tree", topo, [[phase(topo, up, depth, p), phase(topo, down, depth, p)]], p)

    return with_protocol(topo, build, proto)


def _cluster_tree(topo: Topology, req: Request, parts: dict[int, list[int]], proto: Protocol | None) -> Plan:
    """NCCL's tree on a cluster: one channel per NIC, each carrying its share of the
    buffer; inside a node a chain ending at the channel's head GPU (the one on that NIC),
    across nodes a double binary tree of the heads. Chain and tree run pipelined: reduce
    up both, then broadcast down both. Unless ``req.whole``, the first node's chains and
    the trees of the rails sharing the first head's NIC are simulated (the rest are
    copies)."""
    nodes = [parts[d] for d in sorted(parts)] if req.whole else [parts[min(parts)]]
    k = len(nodes[0])
    heads = [exit for exit, _ in nic_channels(topo, nodes[0], nodes[0])]  # the first GPU on each NIC
    share = req.size_bytes / len(heads)
    up: list[Stream] = []
    down: list[Stream] = []
    for inner in nodes:
        for h in heads:
            chain = inner[h + 1:] + inner[:h] + [inner[h]]
            up += [(a, b, share) for a, b in zip(chain, chain[1:])]
            down += [(b, a, share) for a, b in zip(chain, chain[1:])]
    columns = rails(topo, parts)
    trees = [columns[h] for h in heads]
    simulated = trees if req.whole else rails_of_first_nic(topo, trees)
    for column in simulated:
        across_up, across_down = tree_streams(column, share)
        up += across_up
        down += across_down
    depth = tree_depth(len(parts))
    steps = k - 1 + depth
    partial = not req.whole and (k > 1 or len(simulated) < len(trees))
    wire = across_nodes(topo, proto, len(parts))
    return plan("tree", topo, [[phase(topo, up, steps, wire, depth), phase(topo, down, steps, wire, depth)]], proto,
                partial)


def tree_depth(n: int) -> int:
    return math.ceil(math.log2(n + 1)) - 1 if n > 1 else 0


def tree_streams(ranks: list[int], nbytes: float) -> tuple[list[Stream], list[Stream]]:
    """(reduce, broadcast) streams of a double binary tree over ``ranks`` carrying
    ``nbytes``: half on the heap-ordered tree over the ranks, half on the one over them
    reversed."""
    up: list[Stream] = []
    down: list[Stream] = []
    for order in (ranks, ranks[::-1]):
        for i in range(1, len(order)):
            parent = order[(i - 1) // 2]
            up.append((order[i], parent, nbytes / 2))
            down.append((parent, order[i], nbytes / 2))
    return up, down


@register("halving-doubling")
def halving_doubling(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """Recursive halving reduce-scatter and recursive doubling all-gather over a
    power-of-two group: log2(n) pairwise exchanges each, the same 2(n-1)/n S traffic as
    a ring in 2 log2(n) steps instead of 2(n-1)."""
    needs(req, ("all-reduce", "all-gather", "reduce-scatter"), "halving-doubling")
    n = len(req.ranks)
    if n & (n - 1):
        raise InputError(f"halving-doubling needs a power-of-two group, got {n} ranks", source="--algorithm")
    levels = n.bit_length() - 1

    def exchange(p: Protocol | None, distance: int, nbytes: float):
        streams = [(r, req.ranks[i ^ distance], nbytes) for i, r in enumerate(req.ranks)]
        return phase(topo, streams, 1, p)

    def build(p: Protocol | None) -> Plan:
        phases = []
        if req.kind in ("reduce-scatter", "all-reduce"):
            phases += [exchange(p, n >> (k + 1), req.size_bytes / 2 ** (k + 1)) for k in range(levels)]
        if req.kind in ("all-gather", "all-reduce"):
            phases += [exchange(p, 1 << k, req.size_bytes * 2**k / n) for k in range(levels)]
        return plan("halving-doubling", topo, [phases], p)

    return with_protocol(topo, build, proto)
