"""Closed-form collective times to check the simulation against.

The JAX scaling book's ICI all-gather model (jax-ml/scaling-book sharding.md
@04d8de58, "What happens when we AllGather over multiple axes?" and Pop Quiz 2), as
its latency and bandwidth terms; the book takes their max."""

from __future__ import annotations

import math

from accelsim.network.topology import Topology


def scaling_book_all_gather_terms(volume_bytes: float, axes: list[int], wraps: list[bool], link_bytes_per_s: float,
                                  hop_s: float) -> tuple[float, float] | None:
    """(latency, bandwidth) terms of an all-gather of ``volume_bytes`` (the output) over
    ``axes``: with wraparound on every axis, T_min sum|X_i| / 2 and
    V (N-1)/N / (W_bidir n_axes) with W_bidir twice the one-way link bandwidth; on one
    axis without wraparound, (N-1) hops and V (N-1)/N at the one-way bandwidth. None where
    the book gives no formula (several axes, some without wraparound)."""
    n = math.prod(axes)
    if all(wraps):
        return hop_s * sum(axes) / 2, volume_bytes * (n - 1) / n / (2 * link_bytes_per_s * len(axes))
    if len(axes) == 1:
        return hop_s * (axes[0] - 1), volume_bytes * (n - 1) / n / link_bytes_per_s
    return None


def torus_case(topo: Topology, axis: int | None) -> tuple[list[int], list[int], list[bool]]:
    """(group, axis lengths, wraparound) of the whole slice (``axis`` None) or of the line
    through rank 0 along ``axis``."""
    if axis is None:
        return list(range(topo.ranks)), list(topo.shape), list(topo.wraparound)
    return topo.axis_rings(axis)[0], [topo.shape[axis]], [topo.wraparound[axis]]
