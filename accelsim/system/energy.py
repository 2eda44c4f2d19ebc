"""A replayed step's energy (``docs/power.md``): each device's compute ops' dynamic energy, its
static power while it computes or communicates and its idle power while it waits, and every
byte each link carried at the energy per byte of its kind (NVLink / ICI from the chip's power
model, NICs from a cluster's, the DCN from a multislice's)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from accelsim.arch.model import Arch, Chip, Cluster, Multislice, PowerModel
from accelsim.network.topology import Topology
from accelsim.results import DeviceStats, LinkStats
from accelsim.system.costs import OpCost


def op_dynamic_j(cost: OpCost, power: PowerModel) -> float:
    """An op's energy beyond static power; an op known only by its duration (a measured op:
    its activity is unknown) is taken at the chip's TDP over that time."""
    if cost.dynamic_j is not None:
        return cost.dynamic_j
    return (power.tdp_w - power.static_w) * cost.seconds


def device_j(stats: DeviceStats, costs: Iterable[OpCost | None], power: PowerModel) -> float:
    """One device's step: its ops' dynamic energy, static power while busy, idle power while
    it waits (``idle_s``)."""
    dynamic = sum(op_dynamic_j(cost, power) for cost in costs if cost is not None)
    busy_s = stats.compute_s + stats.exposed_comm_s  # computing, communicating or both
    return dynamic + power.static_w * busy_s + power.idle_w * stats.idle_s


def link_j_per_byte(system: Arch, chip: Chip) -> dict[bool, float | None]:
    """Energy per byte of the system's scale-up links (False) and scale-out links (True: NICs or
    the DCN); None where the config gives none."""
    scale_out = None
    if isinstance(system, Cluster):
        scale_out = system.nic_j_per_byte
    elif isinstance(system, Multislice):
        scale_out = system.dcn_j_per_byte
    return {False: chip.power.interconnect_j_per_byte if chip.power else None, True: scale_out}


def links_j(links: Iterable[LinkStats], topo: Topology, per_byte: Mapping[bool, float | None]) -> float:
    """Every byte each link carried at its kind's energy per byte (links of a kind with none: 0)."""
    total = 0.0
    for link in links:
        energy = per_byte[topo.links[link.link].scale_out]
        if energy is not None:
            total += link.bytes * energy
    return total
