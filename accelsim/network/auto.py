"""``algorithm=auto``: which algorithms are candidates, as NCCL (GPUs) or XLA (TPUs) would
consider them. :func:`accelsim.network.simulate.plan_for` builds each (each picks its
best protocol) and keeps the one with the least estimated time, as NCCL's tuner does
with its own cost model. The rule is documented in ``docs/collectives.md``."""

from __future__ import annotations

from accelsim.network.algorithms.direct import POINT_TO_POINT
from accelsim.network.collectives import Request
from accelsim.network.groups import by_domain
from accelsim.network.topology import Topology, TorusTopology


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
