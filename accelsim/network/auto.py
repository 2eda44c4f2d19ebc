"""``algorithm=auto``: which algorithms are candidates, as NCCL (GPUs) or XLA (TPUs) would
consider them, and on one NVSwitch node the order NCCL's own estimate puts them in
(:func:`nccl_one_node_ranking`), which :func:`accelsim.network.simulate.plan_for` follows.
Elsewhere it builds each candidate (each picks its best protocol) and keeps the one with the
least estimated time. The rule is documented in ``docs/collectives.md``."""

from __future__ import annotations

from accelsim.network.algorithms.direct import POINT_TO_POINT
from accelsim.network.collectives import Request
from accelsim.network.groups import by_domain
from accelsim.network.nccl_tables import GENERATIONS, nccl_one_node_estimate_s
from accelsim.network.topology import NodeTopology, Topology, TorusTopology


def auto_candidates(topo: Topology, req: Request) -> list[str]:
    """Point-to-point kinds go direct. On GPU systems all-reduce considers NVLS (a switch
    that reduces, the group inside one node) and the ring; across nodes the ring, the
    double binary tree and, with NVLS, NVLS inside nodes and a tree across them; the
    other kinds use the ring. On TPUs XLA uses rings: per axis on a
    slice, hierarchical across slices. One-shot, two-shot, halving-doubling and the
    unidirectional ring are never picked: they are there to compare with."""
    if req.kind in POINT_TO_POINT:
        return ["direct"]
    if isinstance(topo, TorusTopology) or req.kind != "all-reduce":
        return ["ring"]
    spans_nodes = len(by_domain(topo, req.ranks)) > 1
    if not spans_nodes:
        return ["nvls", "ring"] if topo.nvls else ["ring"]
    return ["ring", "tree"] + (["nvls-tree"] if topo.nvls else [])


def nccl_one_node_ranking(topo: Topology, req: Request) -> list[str] | None:
    """The candidates of an all-reduce inside one NVSwitch node as ``NAME/PROTOCOL``, in the
    order of NCCL's own estimate (:func:`~accelsim.network.nccl_tables.nccl_one_node_estimate_s`:
    its tables, nothing fitted), the protocols the node runs; None where the model does not
    carry that estimate (other kinds, groups spanning nodes, nodes without an NCCL class or
    NVLink count). NCCL runs the pair its estimate rates fastest, not the one that runs
    fastest: on DGX H100 NVLS from 2 MiB (nvidia/nccl-tests#309), on DGX A100 ring/LL to 2
    MiB, LL128 to 16 MiB, Simple from 32 MiB."""
    tuning = topo.tuning
    if (req.kind != "all-reduce" or not isinstance(topo, NodeTopology) or tuning is None
            or tuning.generation not in GENERATIONS or topo.nvlink_links is None
            or len(by_domain(topo, req.ranks)) > 1):
        return None
    rated = []
    for algorithm in auto_candidates(topo, req):
        for protocol in tuning.protocols:
            estimate = nccl_one_node_estimate_s(tuning.generation, topo.nvlink_links, algorithm, protocol,
                                                req.size_bytes, len(req.ranks))
            if estimate is not None:
                rated.append((estimate, f"{algorithm}/{protocol}"))
    return [name for _, name in sorted(rated)]
