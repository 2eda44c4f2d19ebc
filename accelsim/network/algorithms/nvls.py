"""NVLink SHARP (NVLS) all-reduce: the switch reduces and multicasts."""

from __future__ import annotations

import dataclasses
import math

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.algorithms.tree import tree_depth, tree_streams
from accelsim.network.collectives import Phase, Plan, Request, Transfer, needs, phase, register
from accelsim.network.groups import by_domain, rails, rails_of_first_nic, same_local_layout
from accelsim.network.nccl_tables import (
    nvls_node_fill_s, nvls_node_loops, nvls_tree_bus_cap_bytes_per_s, nvls_tree_fill_s,
)
from accelsim.network.topology import ClusterTopology, NodeTopology, Topology, downlink, nic_up, uplink


MIN_NVLS_GPUS = 3
"""NCCL sets NVLS up only for a communicator with more than 2 GPUs in a node
(``ncclNvlsInit``, src/transport/nvls.cc: ``gpuCount <= 2`` returns without it)."""


def _enough_gpus(parts: dict) -> None:
    fewest = min(len(members) for members in parts.values())
    if fewest < MIN_NVLS_GPUS:
        raise InputError(f"NVLS needs at least {MIN_NVLS_GPUS} GPUs of the group in a node (NCCL does not set it up "
                         f"for fewer); this group has {fewest}", field="algorithm")


@register("nvls")
def nvls(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """The switch reduces and multicasts. Each GPU owns 1/n of the result: a multimem
    ``ld_reduce`` of its shard makes the switch read that shard from every GPU (each GPU
    sends its whole buffer up, S in all) and returns the sum (S/n down); a multimem ``st``
    sends the sum up once (S/n) and the switch writes it to every GPU (the whole buffer
    down, S). So each GPU moves S (n+1)/n each way, the same two halves ``nvls-tree``
    uses. With an NCCL model the streams run at the node's ``nvls_efficiency`` of the link
    bandwidth and the collective costs ``nvls_latency`` plus its pipeline's fill, two loops
    of chunks at a channel's share of that rate
    (:func:`~accelsim.network.nccl_tables.nvls_node_fill_s`); without one, two hops of link
    latency and the chip's launch."""
    if not (isinstance(topo, NodeTopology) and topo.nvls):
        raise InputError(f"{topo.name!r} has no in-switch reduction (NVLS)", field="algorithm")
    needs(req, ("all-reduce",), "nvls")
    if len(by_domain(topo, req.ranks)) > 1:
        raise InputError("NVLS reduces inside one node; the group spans several", field="algorithm")
    _enough_gpus(by_domain(topo, req.ranks))
    tuning = topo.tuning
    efficiency = tuning.nvls_efficiency if tuning else 1.0
    moved = req.size_bytes * (len(req.ranks) + 1) / len(req.ranks)
    transfers = tuple(Transfer(links=(uplink(g), downlink(g)), bytes=moved, efficiency=efficiency)
                      for g in req.ranks)
    if tuning:
        rate = topo.links[uplink(req.ranks[0])].bandwidth_bytes_per_s * efficiency * req.size_bytes / moved
        fill = nvls_node_fill_s(tuning.generation, req.size_bytes, len(req.ranks), rate)
        steps = nvls_node_loops(tuning.generation, req.size_bytes, len(req.ranks)) * _simple_step_s(topo)
        return Plan(algorithm="nvls", lanes=((Phase(transfers=transfers, latency_s=fill + steps),),),
                    launch_s=tuning.nvls_latency_s, protocol="simple", fill_s=fill)
    hop = topo.route_latency_s(topo.route(req.ranks[0], req.ranks[-1]))
    return Plan(algorithm="nvls", lanes=((Phase(transfers=transfers, latency_s=2 * hop),),), launch_s=topo.launch_s)


@register("nvls-tree")
def nvls_tree(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """All-reduce across the nodes of a cluster (NCCL's NVLS_TREE): NVLS reduces inside
    each node (each GPU sends the buffer up, the switch hands it back 1/k of the sum),
    a double binary tree per rail reduces and broadcasts those shards across nodes over
    the NICs, and NVLS multicasts the result inside each node (1/k up, the buffer down).
    The four stages are pipelined, as NCCL runs them: they move their bytes at once on the
    links they share, after a fill of all their latencies and of the tree's chunks crossing
    between nodes whole (:func:`~accelsim.network.nccl_tables.nvls_tree_fill_s`). NCCL
    rates NVLSTree's bus bandwidth no higher than ``perChMaxNVLSTreeBws`` per NVLS head
    (one per NIC, as many as the node has GPUs and NICs, at most 32;
    ``ncclTopoTuneModel``, src/graph/tuning.cc, NCCL 2.30.7 @ 5067397c, from 2.28): a
    GPU's buffer enters and leaves the switch no faster than that bus bandwidth's
    algorithm rate (:func:`_nvls_tree_cap`). Unless ``req.whole``, the rails sharing the
    first rail's NIC and the first node's GPUs are simulated."""
    if not (isinstance(topo, ClusterTopology) and topo.nvls):
        raise InputError(f"{topo.name!r} is not a cluster of nodes with NVLS", field="algorithm")
    needs(req, ("all-reduce",), "nvls-tree")
    parts = by_domain(topo, req.ranks)
    if len(parts) < 2 or not same_local_layout(topo, parts):
        raise InputError("nvls-tree needs a group spanning several nodes with the same GPUs in each",
                         field="algorithm")
    _enough_gpus(parts)
    inner = parts[min(parts)]
    gpus = [g for d in sorted(parts) for g in parts[d]] if req.whole else inner
    shard = req.size_bytes / len(inner)
    efficiency = topo.tuning.nvls_efficiency if topo.tuning else 1.0
    simple = topo.tuning.protocols["simple"] if topo.tuning else None

    cap = _nvls_tree_cap(topo, len(parts), len(inner), len(req.ranks))
    whole = req.size_bytes

    def switch_phase(up_bytes: float, down_bytes: float) -> Phase:
        transfers = [t for g in gpus for t in (
            Transfer(links=(uplink(g),), bytes=up_bytes, efficiency=efficiency, max_bytes_per_s=cap * up_bytes / whole),
            Transfer(links=(downlink(g),), bytes=down_bytes, efficiency=efficiency,
                     max_bytes_per_s=cap * down_bytes / whole))]
        return Phase(transfers=tuple(transfers), latency_s=0.0)

    every = rails(topo, parts)
    columns = every if req.whole else rails_of_first_nic(topo, every)
    up, down = [], []
    for column in columns:
        u, d = tree_streams(column, shard)
        up += u
        down += d
    depth = tree_depth(len(columns[0]))
    stages = [switch_phase(req.size_bytes, shard), phase(topo, up, depth, simple), phase(topo, down, depth, simple),
              switch_phase(shard, req.size_bytes)]
    # NCCL pipelines the four stages chunk by chunk: they run at once, sharing the links
    # they have in common, after the pipeline fills (every stage's latency, and the tree's
    # chunks store-and-forward between nodes)
    chunks = (_nvls_tree_chunks_fill_s(topo, req.size_bytes, len(inner), len(parts), 2 * depth)
              + _nvls_node_fill_s(topo, req.size_bytes, len(inner), efficiency))
    fill = sum(stage.latency_s for stage in stages) + chunks
    lanes = tuple((dataclasses.replace(stage, latency_s=fill),) for stage in stages)
    launch = topo.tuning.nvls_latency_s if topo.tuning else topo.launch_s
    return Plan(algorithm="nvls-tree", lanes=lanes, launch_s=launch, protocol="simple" if simple else "",
                partial=not req.whole, fill_s=chunks)


def _nvls_tree_chunks_fill_s(topo: ClusterTopology, size_bytes: float, local: int, nodes: int, hops: int) -> float:
    """:func:`~accelsim.network.nccl_tables.nvls_tree_fill_s` on ``topo`` (one NVLS head
    per NIC; 0.0 without an NCCL model). The node's own NVLS stages fill as well
    (:func:`_nvls_node_fill_s`)."""
    if topo.tuning is None:
        return 0.0
    nic = topo.links[nic_up(0, 0)].bandwidth_bytes_per_s
    return nvls_tree_fill_s(topo.tuning.generation, size_bytes, min(local, topo.nics_per_node), nodes, hops, nic)


def _simple_step_s(topo: Topology) -> float:
    """What each NVLS loop's Simple step costs: the node's Simple step latency (NCCL's
    ``hwLat[NVLINK][Ring][Simple]``, 3.4 us, or as carried)."""
    return topo.tuning.protocols["simple"].step_latency_s


def _nvls_node_fill_s(topo: ClusterTopology, size_bytes: float, local: int, efficiency: float) -> float:
    """The node's own NVLS stages' fill in ``nvls-tree``: two loops of chunks of its heads
    (:func:`~accelsim.network.nccl_tables.nvls_node_fill_s`) at the rate a GPU's buffer
    enters the switch (0.0 without an NCCL model)."""
    if topo.tuning is None:
        return 0.0
    rate = topo.links[uplink(0)].bandwidth_bytes_per_s * efficiency
    return nvls_node_fill_s(topo.tuning.generation, size_bytes, min(local, topo.nics_per_node), rate)


def _nvls_tree_cap(topo: ClusterTopology, nodes: int, local: int, ranks: int) -> float:
    """The algorithm bandwidth NCCL's NVLSTree ceiling allows (bytes of the buffer per
    second; inf without one): the bus-bandwidth cap of
    :func:`~accelsim.network.nccl_tables.nvls_tree_bus_cap_bytes_per_s` over the all-reduce
    bus factor 2 (n - 1) / n. Each GPU's stage moving the whole buffer through its switch
    port is held to it, the shard stages in proportion."""
    heads = min(local, topo.nics_per_node)
    generation = topo.tuning.generation if topo.tuning is not None else None
    bus = nvls_tree_bus_cap_bytes_per_s(generation, nodes, heads)
    return math.inf if bus is None else bus * ranks / (2 * (ranks - 1))
