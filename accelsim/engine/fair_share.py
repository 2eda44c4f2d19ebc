"""Dominant-resource max-min fair rates of flows over shared resources (progressive
filling): the allocation :class:`~accelsim.engine.fluid.FluidResources` makes whenever a
flow starts or ends while some resource is contended."""

from __future__ import annotations

import numpy as np

EPS = 1e-12
"""Loads at or below this are none (float residue of a resource whose flows are frozen)."""

TIE_SLACK = 1e-12
"""Relative difference under which two resources' saturation levels are one level (float
noise of sums in another order); freezing a flow at the lower of the two never takes
more than a resource's capacity."""


def max_min_rates(demand: np.ndarray, max_rate: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Rates (work per second) of flows with ``demand`` (flows x resources, per unit of
    work) and top speeds ``max_rate`` on resources of ``capacity`` (per second).

    Every unfrozen flow runs at ``level * weight``, where ``weight`` makes its largest
    share of any resource equal to ``level``. The level rises until a resource saturates
    (the flows using it freeze there) or flows reach their own ``max_rate`` (they freeze
    at it); repeat with what is left. Every resource that saturates at the same level is
    frozen in one round, which gives the rates of freezing them one at a time.
    """
    # only the resources some flow uses: a pool of many links with few in use at once
    # costs what those few do (unused columns never bottleneck or weigh)
    used = np.flatnonzero(demand.any(axis=0))
    capacity = capacity[used]
    demand = demand[:, used]
    dominant = (demand / capacity).max(axis=1)
    rate = np.where(dominant > 0, 0.0, max_rate)  # a flow using nothing shared runs free
    unfrozen = dominant > 0
    weight = np.divide(1.0, dominant, out=np.zeros_like(dominant), where=unfrozen)
    free = capacity - rate @ demand
    cap_level = np.divide(max_rate, weight, out=np.full_like(max_rate, np.inf), where=unfrozen)
    # each resource's load from the unfrozen flows; a freeze changes it only in the
    # columns the frozen flows use, so only those are summed again (exactly, so a
    # resource whose flows are all frozen has no load left, not float residue)
    load = (weight * unfrozen) @ demand
    while unfrozen.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            levels = np.where(load > EPS, free / load, np.inf)
        level = levels.min()
        capped = unfrozen & (cap_level <= level)
        if capped.any():
            freeze = capped
            rate[freeze] = max_rate[freeze]
        else:
            # every resource that saturates at this level at once (a symmetric
            # collective has thousands of links in a few classes): freezing them
            # one by one would find the same level for each of the others
            bottlenecks = np.flatnonzero(levels <= level * (1 + TIE_SLACK))
            freeze = unfrozen & (demand[:, bottlenecks] > 0).any(axis=1)
            rate[freeze] = level * weight[freeze]
        frozen_demand = demand[freeze]
        free = np.maximum(free - rate[freeze] @ frozen_demand, 0.0)
        unfrozen &= ~freeze
        touched = np.flatnonzero(frozen_demand.any(axis=0))
        load[touched] = (weight * unfrozen) @ demand[:, touched]
    return rate
