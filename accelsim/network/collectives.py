"""Collective algorithms as plans of transfers, and the nccl-tests figures of merit.

An algorithm turns (topology, kind, size, ranks) into a :class:`Plan`: one or more
*lanes* that run concurrently, each a sequence of :class:`Phase` s. A phase is a set of
:class:`Transfer` s, each a pipelined chunk stream between two ranks (all the steps of
a ring between one pair of neighbours are one transfer), plus its latency: ``steps``
times the slowest route's latency. :func:`~accelsim.network.simulate.run_plans` plays
plans on links shared max-min fairly, so a phase takes latency + its bandwidth time
under whatever contention there is.

Sizes follow nccl-tests: ``size_bytes`` is the all-reduce and broadcast buffer, the
all-gather *output* and the reduce-scatter *input*.

Adding an algorithm is one function registered in :data:`ALGORITHMS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelsim.errors import InputError
from accelsim.network.topology import Topology, downlink, uplink

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast")

BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
"""busbw = algbw x factor(n), as nccl-tests defines it (doc/PERFORMANCE.md)."""


@dataclass(frozen=True, kw_only=True)
class Transfer:
    """``bytes`` moved over ``links`` (a route), as one pipelined stream."""

    links: tuple[str, ...]
    bytes: float


@dataclass(frozen=True, kw_only=True)
class Phase:
    transfers: tuple[Transfer, ...]
    latency_s: float


@dataclass(frozen=True, kw_only=True)
class Plan:
    algorithm: str
    lanes: tuple[tuple[Phase, ...], ...]
    launch_s: float


@dataclass(frozen=True, kw_only=True)
class Request:
    """One collective: ``kind`` over ``ranks`` (rank ids of the topology) of ``size_bytes``."""

    kind: str
    size_bytes: float
    ranks: tuple[int, ...]


Algorithm = Callable[[Topology, Request], Plan]
ALGORITHMS: dict[str, Algorithm] = {}
"""Name -> plan builder. A builder raises InputError when it does not apply."""


def register(name: str) -> Callable[[Algorithm], Algorithm]:
    def add(fn: Algorithm) -> Algorithm:
        ALGORITHMS[name] = fn
        return fn

    return add


def get_algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise InputError(f"unknown algorithm {name!r}; known: auto, {', '.join(sorted(ALGORITHMS))}", source="--algorithm")
    return ALGORITHMS[name]


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}", source="--collective")
    return kind


# ------------------------------------------------------------------ building blocks


def _stream(topo: Topology, src: int, dst: int, nbytes: float) -> Transfer:
    return Transfer(links=topo.route(src, dst), bytes=nbytes)


def _phase(topo: Topology, transfers: list[Transfer], steps: int) -> Phase:
    slowest = max((topo.route_latency_s(t.links) for t in transfers), default=0.0)
    return Phase(transfers=tuple(t for t in transfers if t.bytes > 0), latency_s=steps * slowest)


def ring_phase(topo: Topology, ring: list[list[int]], per_rank_bytes: float, steps: int) -> Phase:
    """Every rank of every ring sends ``per_rank_bytes`` to its ring neighbours over
    ``steps`` steps, half each way (bidirectional rings, as NCCL's channels and XLA's
    torus rings use both directions)."""
    transfers = []
    for members in ring:
        m = len(members)
        if m < 2:
            continue
        for i, rank in enumerate(members):
            transfers.append(_stream(topo, rank, members[(i + 1) % m], per_rank_bytes / 2))
            transfers.append(_stream(topo, rank, members[(i - 1) % m], per_rank_bytes / 2))
    return _phase(topo, transfers, steps)


def ring_volume(kind: str, m: int, size_bytes: float) -> tuple[float, int]:
    """(bytes each rank sends, steps) of a ring ``kind`` over ``m`` ranks."""
    if kind == "all-reduce":
        return 2 * (m - 1) / m * size_bytes, 2 * (m - 1)
    if kind in ("all-gather", "reduce-scatter"):
        return (m - 1) / m * size_bytes, m - 1
    raise InputError(f"no ring {kind} here", source="--algorithm")


# ------------------------------------------------------------------ algorithms


@register("ring")
def ring(topo: Topology, req: Request) -> Plan:
    """On a switch: one logical ring over the ranks, bidirectional. On a torus: per-axis
    rings (see :func:`torus_ring`)."""
    if topo.kind == "torus":
        return torus_ring(topo, req)
    ranks = list(req.ranks)
    if req.kind == "broadcast":
        return _chain_broadcast(topo, req, "ring")
    volume, steps = ring_volume(req.kind, len(ranks), req.size_bytes)
    return Plan(algorithm="ring", lanes=((ring_phase(topo, [ranks], volume, steps),),), launch_s=topo.launch_s)


def _chain_broadcast(topo: Topology, req: Request, name: str) -> Plan:
    """Pipelined chain from the first rank: every link of the chain carries the buffer once."""
    ranks = list(req.ranks)
    transfers = [_stream(topo, a, b, req.size_bytes) for a, b in zip(ranks, ranks[1:])]
    return Plan(algorithm=name, lanes=((_phase(topo, transfers, len(ranks) - 1),),), launch_s=topo.launch_s)


@register("nvls")
def nvls(topo: Topology, req: Request) -> Plan:
    """NVLink SHARP all-reduce: the switch reduces (multimem ld_reduce) and multicasts
    (multimem st), so each GPU sends and receives the buffer about once: two hops."""
    if not (topo.kind == "switch" and topo.nvls):
        raise InputError(f"{topo.name!r} has no in-switch reduction (NVLS)", source="--algorithm")
    if req.kind != "all-reduce":
        raise InputError(f"NVLS is modelled for all-reduce only, not {req.kind}", source="--algorithm")
    transfers = [Transfer(links=(uplink(g), downlink(g)), bytes=req.size_bytes) for g in req.ranks]
    hop = topo.route_latency_s(topo.route(req.ranks[0], req.ranks[-1]))
    return Plan(algorithm="nvls", lanes=((Phase(transfers=tuple(transfers), latency_s=2 * hop),),), launch_s=topo.launch_s)


@register("one-shot")
def one_shot(topo: Topology, req: Request) -> Plan:
    """Direct: every rank sends its whole contribution to every peer in one step
    (all-reduce: the full buffer; all-gather: its shard; reduce-scatter: each peer's shard)."""
    if topo.kind != "switch":
        raise InputError("one-shot is modelled on a switch node only", source="--algorithm")
    n = len(req.ranks)
    per_peer = {"all-reduce": req.size_bytes, "broadcast": req.size_bytes}.get(req.kind, req.size_bytes / n)
    senders = req.ranks[:1] if req.kind == "broadcast" else req.ranks
    transfers = [_stream(topo, a, b, per_peer) for a in senders for b in req.ranks if a != b]
    return Plan(algorithm="one-shot", lanes=((_phase(topo, transfers, 1),),), launch_s=topo.launch_s)


def torus_ring(topo: Topology, req: Request) -> Plan:
    """XLA-style per-axis bidirectional rings over the whole torus, several axes at once.

    The buffer is split into one part per axis (of length > 1); part ``p`` visits the
    axes in the order ``p, p+1, ...`` (all-reduce: reduce-scatter along that order,
    then all-gather back), so every axis's links are busy from the start. On an axis
    without wraparound the ring's closing hop is routed back along the line, which
    doubles the load on its links: a missing wraparound doubles ring time.

    Only one ring per axis is simulated (the one through the origin): the plan is the
    same in every ring along an axis and rings along different axes use disjoint
    links, so every link of an axis carries what the corresponding link of that ring
    does. This keeps a 1024-chip slice as cheap as a single ring.
    """
    if tuple(req.ranks) != tuple(range(topo.ranks)):
        raise InputError("torus collectives run over the whole slice (--ranks is not supported on a torus yet)",
                         source="--ranks")
    axes = [a for a, n in enumerate(topo.shape) if n > 1]
    if req.kind == "broadcast":
        return _chain_broadcast(topo, req, "torus-ring")
    if not axes:
        raise InputError(f"{topo.name!r} has a single chip; there is nothing to communicate", source="--system")
    lanes = []
    for p in range(len(axes)):
        order = axes[p:] + axes[:p]
        lanes.append(tuple(_torus_lane(topo, req.kind, req.size_bytes / len(axes), order)))
    return Plan(algorithm="torus-ring", lanes=tuple(lanes), launch_s=topo.launch_s)


def _torus_lane(topo: Topology, kind: str, part_bytes: float, order: list[int]) -> list[Phase]:
    """Phases for one part: a ring collective per axis, with the per-rank size it has there."""
    phases = []
    if kind in ("reduce-scatter", "all-reduce"):
        held = part_bytes  # each rank holds this much, shrinking by the axis length per step
        for axis in order:
            volume, steps = ring_volume("reduce-scatter", topo.shape[axis], held)
            phases.append(ring_phase(topo, topo.axis_rings(axis)[:1], volume, steps))
            held /= topo.shape[axis]
    if kind in ("all-gather", "all-reduce"):
        gather_order = order[::-1] if kind == "all-reduce" else order
        held = part_bytes / _product([topo.shape[a] for a in order])
        for axis in gather_order:
            held *= topo.shape[axis]
            volume, steps = ring_volume("all-gather", topo.shape[axis], held)
            phases.append(ring_phase(topo, topo.axis_rings(axis)[:1], volume, steps))
    return phases


def _product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def auto_candidates(topo: Topology, kind: str) -> list[str]:
    """What ``algorithm=auto`` chooses among, as NCCL's tuner does (it predicts each
    algorithm's time and takes the fastest): ring everywhere, NVLS for all-reduce on a
    switch that reduces. One-shot is not an NCCL algorithm, so auto never picks it."""
    if topo.kind == "switch" and topo.nvls and kind == "all-reduce":
        return ["nvls", "ring"]
    return ["ring"]
