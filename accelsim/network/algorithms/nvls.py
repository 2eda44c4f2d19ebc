"""NVLink SHARP (NVLS) all-reduce: the switch reduces and multicasts."""

from __future__ import annotations

from accelsim.arch.collective_tuning import Protocol
from accelsim.errors import InputError
from accelsim.network.collectives import Phase, Plan, Request, Transfer, needs, register
from accelsim.network.groups import by_domain
from accelsim.network.topology import Topology, downlink, uplink


@register("nvls")
def nvls(topo: Topology, req: Request, proto: Protocol | None = None) -> Plan:
    """The switch reduces (multimem ld_reduce) and multicasts (multimem st), so each GPU
    sends and receives the buffer about once. With an NCCL model the streams run at the
    node's ``nvls_efficiency`` of the link bandwidth and the collective costs
    ``nvls_latency``; without one, two hops of link latency and the chip's launch."""
    if not (topo.kind in ("switch", "cluster") and topo.nvls):
        raise InputError(f"{topo.name!r} has no in-switch reduction (NVLS)", source="--algorithm")
    needs(req, ("all-reduce",), "nvls")
    if len(by_domain(topo, req.ranks)) > 1:
        raise InputError("NVLS reduces inside one node; the group spans several", source="--algorithm")
    tuning = topo.tuning
    efficiency = tuning.nvls_efficiency if tuning else 1.0
    transfers = tuple(Transfer(links=(uplink(g), downlink(g)), bytes=req.size_bytes, efficiency=efficiency)
                      for g in req.ranks)
    if tuning:
        return Plan(algorithm="nvls", lanes=((Phase(transfers=transfers, latency_s=0.0),),),
                    launch_s=tuning.nvls_latency_s, protocol="simple")
    hop = topo.route_latency_s(topo.route(req.ranks[0], req.ranks[-1]))
    return Plan(algorithm="nvls", lanes=((Phase(transfers=transfers, latency_s=2 * hop),),), launch_s=topo.launch_s)
