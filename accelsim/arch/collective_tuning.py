"""Resolved NCCL model of a GPU node: link efficiency, protocols and NVLS figures.

Built from :class:`accelsim.arch.schema.NodeCollectives`; read by the network model
(:mod:`accelsim.network`) to decide per-step latencies and achievable bandwidth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from accelsim.arch import schema


@dataclass(frozen=True, kw_only=True)
class Protocol:
    """One NCCL protocol. ``efficiency`` is the payload fraction of wire bytes;
    ``max_bandwidth_per_rank_bytes_per_s`` caps what one rank sends (None: no cap)."""

    name: str
    efficiency: float
    max_bandwidth_per_rank_bytes_per_s: float | None
    base_latency_s: float
    step_latency_s: float
    net_step_latency_s: float | None = None
    """A step across the scale-out network (NCCL's NET ``hwLat``); None: ``step_latency_s``."""


@dataclass(frozen=True, kw_only=True)
class CollectiveTuning:
    """What NCCL achieves on a node's links (see ``docs/collectives.md``)."""

    link_efficiency: float
    generation: str | None = None
    """NCCL's architecture class (``ampere``, ``hopper``, ``blackwell``), when the config says."""
    protocols: Mapping[str, Protocol]
    nvls_efficiency: float | None
    nvls_latency_s: float | None
    kernel_clock_hz: float | None = None
    """The SM clock NCCL's kernels run at, when the config says (what carried latencies scale by)."""
    channel_bytes_per_s: float | None = None
    """Wire bytes one NCCL channel moves per second, when the config says (see
    :func:`accelsim.network.nccl_tables.collective_channels`)."""


def resolve_collectives(spec: schema.NodeCollectives | None) -> CollectiveTuning | None:
    if spec is None:
        return None
    protocols = {
        name: Protocol(
            name=name,
            efficiency=p.efficiency.value,
            max_bandwidth_per_rank_bytes_per_s=p.max_bandwidth_per_rank.value if p.max_bandwidth_per_rank else None,
            base_latency_s=p.base_latency.value,
            step_latency_s=p.step_latency.value,
            net_step_latency_s=p.net_step_latency.value if p.net_step_latency else None,
        )
        for name, p in sorted(spec.protocols.items())
    }
    return CollectiveTuning(
        link_efficiency=spec.link_efficiency.value,
        generation=spec.generation,
        protocols=MappingProxyType(protocols),
        nvls_efficiency=spec.nvls_efficiency.value if spec.nvls_efficiency else None,
        nvls_latency_s=spec.nvls_latency.value if spec.nvls_latency else None,
        kernel_clock_hz=spec.kernel_clock.value if spec.kernel_clock else None,
        channel_bytes_per_s=spec.channel_bandwidth.value if spec.channel_bandwidth else None,
    )
