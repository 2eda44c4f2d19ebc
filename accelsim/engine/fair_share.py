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
    return _progressive_filling(_Dense(demand, capacity), max_rate)


def max_min_rates_sparse(columns: np.ndarray, amounts: np.ndarray, max_rate: np.ndarray,
                         capacity: np.ndarray) -> np.ndarray:
    """:func:`max_min_rates` of flows whose demands are given as ``amounts`` on resources
    ``columns`` (flows x width, padded with zero amounts), for pools of many resources
    whose flows each use a few (a link pool of 33,024 links, 16,384 flows at once):
    memory and work grow with the pairs, not with flows x resources. The same rounds;
    a resource's sums are added in flow order here and by BLAS's blocking there, so
    rates can differ in the last bits."""
    return max_min_rates_of_pairs(PairDemand(columns, amounts, capacity), max_rate)


def max_min_rates_of_pairs(demand: PairDemand, max_rate: np.ndarray) -> np.ndarray:
    """:func:`max_min_rates_sparse` of demands already gathered into pairs (a pool keeps
    them to move its flows' progress until the next allocation)."""
    return _progressive_filling(demand, max_rate)


def pair_sums(columns: np.ndarray, amounts: np.ndarray, weights: np.ndarray, resources: int) -> np.ndarray:
    """``weights @ demand`` per resource, for demands as (resource, amount) pairs per flow
    (``columns``, ``amounts``: flows x width, padded with zero amounts), added in flow
    order. Flows of weight 0 add nothing, so they are left out where they are most: a
    link pool's idle slots, a progressive filling's frozen flows."""
    weighted = np.flatnonzero(weights)
    if 2 * weighted.size < weights.size:
        columns, amounts, weights = columns[weighted], amounts[weighted], weights[weighted]
    return np.bincount(columns.ravel(), weights=(weights[:, None] * amounts).ravel(), minlength=resources)


class _Dense:
    """Demands as a flows x resources matrix, cut to the resources some flow uses: a
    pool of many links with few in use at once costs what those few do (unused columns
    never bottleneck or weigh)."""

    def __init__(self, demand: np.ndarray, capacity: np.ndarray) -> None:
        used = np.flatnonzero(demand.any(axis=0))
        self.capacity = capacity[used]
        self.demand = demand[:, used]
        self.dominant = (self.demand / self.capacity).max(axis=1)

    def served(self, weights: np.ndarray) -> np.ndarray:
        return weights @ self.demand

    def using(self, resources: np.ndarray) -> np.ndarray:
        return (self.demand[:, np.flatnonzero(resources)] > 0).any(axis=1)

    def frozen(self, freeze: np.ndarray, rates: np.ndarray, free: np.ndarray, load: np.ndarray,
               weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # a freeze changes the load only in the columns the frozen flows use, so only
        # those are summed again (exactly, so a resource whose flows are all frozen has
        # no load left, not float residue)
        frozen_demand = self.demand[freeze]
        free = np.maximum(free - rates @ frozen_demand, 0.0)
        touched = np.flatnonzero(frozen_demand.any(axis=0))
        load[touched] = weights @ self.demand[:, touched]
        return free, load


class PairDemand:
    """Demands as a list of (flow, resource, amount) pairs with positive amounts, in flow
    order, over the resources some flow uses (renumbered): every sum adds the same products
    in the same order as :func:`pair_sums` over the padded rows (a padding pair adds 0, a
    no-op), and costs what the pairs and the resources in use do, not every resource of a
    pool of thousands of links."""

    def __init__(self, columns: np.ndarray, amounts: np.ndarray, capacity: np.ndarray) -> None:
        self.dominant = (amounts / capacity[columns]).max(axis=1)
        self.flow, place = np.nonzero(amounts > 0)  # in flow order, then a flow's own
        resource = columns[self.flow, place]
        self.amount = amounts[self.flow, place]
        in_use = np.zeros(len(capacity), dtype=bool)
        in_use[resource] = True
        self.used = np.flatnonzero(in_use)
        """The resources in use, in pool order: sums and capacities are theirs."""
        local = np.empty(len(capacity), dtype=np.int64)
        local[self.used] = np.arange(len(self.used))
        self.resource = local[resource]
        self.capacity = capacity[self.used]

    def served(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ demand`` per resource in use, added in flow order."""
        return np.bincount(self.resource, weights=weights[self.flow] * self.amount, minlength=len(self.capacity))

    def using(self, resources: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.dominant), dtype=bool)
        out[self.flow[resources[self.resource]]] = True
        return out

    def frozen(self, freeze: np.ndarray, rates: np.ndarray, free: np.ndarray, load: np.ndarray,
               weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # summed again from scratch over the flows still unfrozen: exact, as above
        pairs = freeze[self.flow]
        at = np.cumsum(freeze) - 1  # a frozen flow's place among the frozen
        taken = np.bincount(self.resource[pairs], weights=rates[at[self.flow[pairs]]] * self.amount[pairs],
                            minlength=len(self.capacity))
        return np.maximum(free - taken, 0.0), self.served(weights)


def _progressive_filling(demand: _Dense | PairDemand, max_rate: np.ndarray) -> np.ndarray:
    capacity, dominant = demand.capacity, demand.dominant
    rate = np.where(dominant > 0, 0.0, max_rate)  # a flow using nothing shared runs free
    unfrozen = dominant > 0
    weight = np.divide(1.0, dominant, out=np.zeros_like(dominant), where=unfrozen)
    free = capacity - demand.served(rate)
    cap_level = np.divide(max_rate, weight, out=np.full_like(max_rate, np.inf), where=unfrozen)
    # each resource's load from the unfrozen flows
    load = demand.served(weight * unfrozen)
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
            freeze = unfrozen & demand.using(levels <= level * (1 + TIE_SLACK))
            rate[freeze] = level * weight[freeze]
        unfrozen &= ~freeze
        free, load = demand.frozen(freeze, rate[freeze], free, load, weight * unfrozen)
    return rate
