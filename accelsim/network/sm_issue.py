"""What the SMs that run a collective can issue: a GPU collective's kernels copy its bytes
on the SMs they hold, so a rank's bytes move no faster than those SMs issue them.

One SM moves what NCCL allows one channel (one thread block on one SM),
``perChMaxRingLL128Bws`` of the GPU's generation (NCCL ``src/graph/tuning.cc``; Hopper
36.7 GB/s, Ampere 20, Blackwell 40: :mod:`accelsim.network.nccl_tables`). NCCL's channels
copy every byte they send, NVLink and network alike (``src/device/prims_*.h``: the
channel's threads load and store each chunk), so a rank's bytes in a phase share all its
SMs. :mod:`accelsim.network.moe` splits a budget into the roles DeepEP's kernels give
their SMs; :func:`held_to_sms` is the plain NCCL rule for any plan, which the system
replay applies to a collective whose op holds an ``sm_budget``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from accelsim.network.collectives import Phase, Plan
from accelsim.network.nccl_tables import GENERATIONS
from accelsim.network.topology import ClusterTopology, Topology, nic_up, uplink


def sm_copy_bytes_per_s(topo: Topology) -> float | None:
    """What one SM moves: NCCL's own ceiling on one channel (one thread block on one SM),
    ``perChMaxRingLL128Bws`` of the GPU's generation (Hopper 36.7 GB/s, Ampere 20,
    Blackwell 40; :mod:`accelsim.network.nccl_tables`). None where the system has no
    NCCL generation (TPUs, GPUs without a tuning section): no SM bound."""
    generation = topo.tuning.generation if topo.tuning is not None else None
    if generation not in GENERATIONS:
        return None
    return GENERATIONS[generation].ll128_channel_bytes_per_s


def sender(links: tuple[str, ...]) -> str:
    """The device a route starts at (its first link's near end): a GPU within a node, its
    NIC for a route that leaves the node (see :func:`senders`)."""
    return links[0].split("->")[0]


def senders(topo: Topology) -> dict[str, str]:
    """NICs -> the GPU whose SMs issue what leaves through them: a route across nodes starts
    at the sender's rail NIC (``ClusterTopology._route``), but its bytes are that GPU's to
    copy, NVLink and network alike. Where GPUs share a NIC it names the first of them, so
    their budgets pace that NIC's bytes together (an underestimate of what they issue)."""
    if not isinstance(topo, ClusterTopology):
        return {}
    out: dict[str, str] = {}
    for rank in range(topo.ranks):
        out.setdefault(sender((nic_up(*topo.nic_of(rank)),)), sender((uplink(rank),)))
    return out


def _held_phase(ph: Phase, rate_of: dict[str, float], gpu_of: dict[str, str]) -> Phase:
    """``ph`` with a sender's transfers sharing ``rate_of[sender]`` in proportion to their bytes."""
    totals: Counter[str] = Counter()
    for t in ph.transfers:
        src = sender(t.links)
        totals[gpu_of.get(src, src)] += t.bytes
    out = []
    for t in ph.transfers:
        src = sender(t.links)
        src = gpu_of.get(src, src)
        cap = rate_of[src] * t.bytes / totals[src] if t.bytes > 0 else t.max_bytes_per_s
        out.append(dataclasses.replace(t, max_bytes_per_s=min(t.max_bytes_per_s, cap)))
    return dataclasses.replace(ph, transfers=tuple(out))


def held_to_sms(topo: Topology, plan: Plan, sms: int) -> Plan:
    """``plan`` with each rank's bytes held to what ``sms`` SMs issue: in every phase a
    GPU's transfers (its NIC's included, :func:`senders`) share ``sms`` x
    :func:`sm_copy_bytes_per_s` in proportion to their bytes (so that they finish together
    where the SMs bind); a sender active in several
    lanes at once (lanes run side by side) splits its SMs evenly over them. ``plan``
    itself where the system has no per-SM rate."""
    per_sm = sm_copy_bytes_per_s(topo)
    if per_sm is None:
        return plan
    gpu_of = senders(topo)
    lanes_of: Counter[str] = Counter()
    for lane in plan.lanes:
        lanes_of.update({gpu_of.get(src, src) for ph in lane for t in ph.transfers for src in (sender(t.links),)})
    rate_of = {src: sms * per_sm / n for src, n in lanes_of.items()}
    lanes = tuple(tuple(_held_phase(ph, rate_of, gpu_of) for ph in lane) for lane in plan.lanes)
    return dataclasses.replace(plan, lanes=lanes)
