"""NCCL's double binary tree and recursive halving-doubling (Rabenseifner)."""

from __future__ import annotations

import dataclasses
import math

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import (
    Phase, Plan, Request, Stream, across_nodes, needs, on_channels, phase, plan, register, with_protocol,
)
from accelsim.network.groups import by_domain, nic_channels, rails, rails_of_first_nic, same_local_layout
from accelsim.network.nccl_tables import (
    tree_latency_scales, tree_ll128_cap_scale, tree_simple_channel_bytes, tree_simple_fill_s,
)
from accelsim.network.topology import ClusterTopology, Topology


@register("tree")
def double_binary_tree(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """All-reduce on two binary trees over the group, each carrying half the buffer; a
    rank that is inside one tree is a leaf of the other (the second tree is the first
    over the group in reverse order). A pipelined stream per tree edge reduces up the
    trees while another broadcasts down them (:func:`up_and_down`): about 2 S / B and
    2 log2(n) steps, against the ring's 2(n-1)/n S / B and 2(n-1) steps. Across the
    nodes of a cluster (the same GPUs in each), NCCL's shape: chains inside nodes, trees
    across (:func:`_cluster_tree`)."""
    needs(req, ("all-reduce",), "tree")
    ranks = list(req.ranks)
    parts = by_domain(topo, ranks)
    across_nodes = isinstance(topo, ClusterTopology) and len(parts) > 1 and same_local_layout(topo, parts)

    def build(p: Protocol | None) -> Plan:
        if across_nodes:
            return _cluster_tree(topo, req, parts, p)
        depth = tree_depth(len(ranks))
        up, down = tree_streams(ranks, req.size_bytes)
        return plan("tree", topo, [[up_and_down(topo, up, down, depth, on_channels(topo, p, "tree", req))]], p)

    return with_protocol(topo, build, proto)


def _cluster_tree(topo: ClusterTopology, req: Request, parts: dict[int, list[int]], proto: Protocol | None) -> Plan:
    """NCCL's tree on a cluster: one channel per NIC, each carrying its share of the
    buffer; inside a node a chain ending at the channel's head GPU (the one on that NIC),
    across nodes a double binary tree of the heads. Chain and tree run pipelined, the
    reduce up both and the broadcast down both at once (:func:`up_and_down`). Unless
    ``req.whole``, the first node's chains and
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
    wire = tree_across_nodes(topo, across_nodes(topo, proto, len(parts)), len(parts))
    both = up_and_down(topo, up, down, steps, on_channels(topo, wire, "tree", req), depth)
    if wire is not None and wire.name == "simple" and topo.tuning is not None:
        channel_bytes = tree_simple_channel_bytes(req.size_bytes, len(req.ranks), len(heads), topo.min_channels)
        fill = tree_simple_fill_s(topo.tuning.generation, len(parts), 2 * steps, channel_bytes,
                                  topo.simple_buffer_bytes)
        both = dataclasses.replace(both, latency_s=both.latency_s + fill)
        return dataclasses.replace(plan("tree", topo, [[both]], wire, partial), fill_s=fill)
    return plan("tree", topo, [[both]], wire, partial)


def tree_across_nodes(topo: Topology, proto: Protocol | None, nodes: int) -> Protocol | None:
    """``proto`` as a tree over ``nodes`` nodes runs it, by NCCL's own figures for trees
    where the node's are a ring's (``ncclTopoTuneModel``, src/graph/tuning.cc, NCCL 2.30.7
    @ 5067397c), each scaled by NCCL's tree-over-ring ratio so that a fitted or carried
    ring figure carries to the tree:

    * latencies: ``baseLatencies`` and ``hwLatencies`` of Tree (NVLink chain step, network
      step: LL 5.0 against the ring's 2.7 us, LL128 8.5 against 4.0;
      :func:`~accelsim.network.nccl_tables.tree_latency_scales`);
    * LL128's per-rank cap: ``perChMaxTreeLL128Bws`` against ``perChMaxRingLL128Bws``,
      lower as the tree spans more nodes
      (:func:`~accelsim.network.nccl_tables.tree_ll128_cap_scale`)."""
    if proto is None or topo.tuning is None:
        return proto
    base, intra, net = tree_latency_scales(proto.name)
    cap = proto.max_bandwidth_per_rank_bytes_per_s
    if proto.name == "ll128" and cap is not None:
        cap *= tree_ll128_cap_scale(topo.tuning.generation, nodes)
    net_step = proto.net_step_latency_s
    return dataclasses.replace(proto, base_latency_s=proto.base_latency_s * base,
                               step_latency_s=proto.step_latency_s * intra,
                               net_step_latency_s=None if net_step is None else net_step * net,
                               max_bandwidth_per_rank_bytes_per_s=cap)


def up_and_down(topo: Topology, up: list[Stream], down: list[Stream], steps: int, proto: Protocol | None,
                remote_steps: int | None = None) -> Phase:
    """A tree all-reduce's reduce (``up``) and broadcast (``down``) streams in flight
    together, after the fill of both (``steps`` each, ``remote_steps`` of them across
    nodes): NCCL's tree kernel splits each channel's threads between a reduce-up group and
    a broadcast-down group that run at once on successive chunks (``runTreeSplit``,
    src/device/all_reduce.h, NCCL 2.30.7 @ 5067397c; every protocol, Simple too from CUDA
    11.4), and a rank's streams of both share its protocol's rate cap. On 2 nodes or one
    switch the busiest link carries the same either way; from 3 nodes the reduce loads a
    parent's NIC and the broadcast a leaf's, so running them at once is faster than one
    after the other (GB200 NVL4 x 3 with NCCL_ALGO=Tree: measured 234 GB/s of bus
    bandwidth, 183 when played one after the other, nvidia/nccl#1801)."""
    return phase(topo, up + down, 2 * steps, proto, None if remote_steps is None else 2 * remote_steps)


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
        raise InputError(f"halving-doubling needs a power-of-two group, got {n} ranks", field="algorithm")
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
