"""Playing collective plans on a topology: links are FluidResources, phases are flows.

Several plans can run at once on one set of links (:func:`run_plans`, or
:func:`play_plan` on a pool of your own); their transfers then share the links they
have in common max-min fairly. Time is the fluid engine's integer picoseconds, so
results are exact and deterministic.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import weakref
from collections.abc import Sequence

import simpy

import accelsim.network.algorithms  # noqa: F401  (registers the algorithms)
from accelsim.engine.fluid import FlowBlock, FluidResources
from accelsim.errors import InputError
from accelsim.network.auto import auto_candidates, nccl_one_node_ranking
from accelsim.network.collectives import (
    ALGORITHMS, BUS_FACTORS, Phase, Plan, PlanTimer, Request, check_kind, estimate_s, get_algorithm,
    tuner_estimate_s,
)
from accelsim.network.groups import by_domain
from accelsim.network.topology import ClusterTopology, Topology
from accelsim.network.tuners import tuner_choices
from accelsim.results import CollectiveResult
from accelsim.units import ps_to_seconds, seconds_to_ps


def run_plans(topo: Topology, plans: Sequence[Plan]) -> list[int]:
    """Run ``plans`` concurrently from time 0; each one's finish time in picoseconds."""
    env = simpy.Environment()
    used = sorted({name for plan in plans for name in links_of(plan)})
    pool = FluidResources(env, {name: topo.links[name].bandwidth_bytes_per_s for name in used}, coalesce_starts=True)
    finished = [0] * len(plans)

    def waiter(i: int, process: simpy.Process):
        yield process
        finished[i] = env.now

    for i, plan in enumerate(plans):
        env.process(waiter(i, play_plan(env, pool, plan)))
    env.run()
    return finished


def timer(topo: Topology) -> PlanTimer:
    """What the planners time candidate plans with on ``topo``: :func:`run_plans`."""
    return functools.partial(run_plans, topo)


def links_of(plan: Plan) -> set[str]:
    """Names of every link a plan's transfers cross."""
    return {name for lane in plan.lanes for phase in lane for t in phase.transfers for name in t.links}


def play_plan(env: simpy.Environment, pool: FluidResources, plan: Plan) -> simpy.Process:
    """Start ``plan`` now on ``pool`` (which must hold every link it uses, see
    :func:`links_of`); the returned process ends when the plan's last lane does. Other
    flows on the same pool (other collectives, or anything else modelled as a flow)
    share the links with it."""

    def lane_process(lane: tuple[Phase, ...]):
        for phase in lane:
            yield env.timeout(seconds_to_ps(phase.latency_s))
            if phase.transfers:
                yield _start_phase(env, pool, phase)

    def plan_process():
        yield env.timeout(seconds_to_ps(plan.launch_s))
        yield simpy.AllOf(env, [env.process(lane_process(lane)) for lane in plan.lanes])

    return env.process(plan_process())


_BLOCKS: weakref.WeakKeyDictionary[FluidResources, dict[int, tuple[Phase, FlowBlock]]] = weakref.WeakKeyDictionary()
"""Per pool, each phase's flows as a block (:meth:`FluidResources.block`) by id of the
phase, kept beside it so the id stays its: a cached plan's phases start again at every
layer of a replayed step, and their link loads, paces and columns are the same each time."""


def _start_phase(env: simpy.Environment, pool: FluidResources, phase: Phase) -> simpy.Event:
    """Start one flow per transfer; the returned event fires when the last one ends."""
    blocks = _BLOCKS.get(pool)
    if blocks is None:
        blocks = _BLOCKS[pool] = {}
    known = blocks.get(id(phase))
    if known is None or known[0] is not phase:
        known = blocks[id(phase)] = (phase, _phase_block(pool, phase))
    return simpy.AllOf(env, pool.start_block(known[1]))


def _phase_block(pool: FluidResources, phase: Phase) -> FlowBlock:
    names, demands, paces = [], [], []
    for t in phase.transfers:
        demand = t.link_loads()
        alone = min(pool.capacities[link] / amount for link, amount in demand.items())
        if math.isfinite(t.max_bytes_per_s):
            alone = min(alone, t.max_bytes_per_s / t.bytes)
        names.append("->".join(t.links[:2]))
        demands.append(demand)
        paces.append(alone)
    return pool.block(names, demands, paces)


class Planner:
    """Plans collectives on one topology and keeps every plan it made: its plan cache. A
    request planned again (every layer of a replayed step, the part a whole collective is
    planned from) is looked up, not planned anew. Hold one planner per topology for as
    long as its plans may be asked for again; :func:`plan_for` plans with a fresh one."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._plans: dict[tuple[Request, str], Plan] = {}
        """(request, algorithm) -> its plan."""

    def plan(self, request: Request, algorithm: str = "auto") -> Plan:
        """The plan of ``request`` (any group of ranks). ``algorithm`` is a name
        (``ring``), a name and a protocol (``ring/ll``), or ``auto``: the platform tuner's
        choice where it makes one, on one node NCCL's own choice
        (:func:`_nccl_one_node_plan`), else of the candidates of
        :func:`~accelsim.network.auto.auto_candidates` that apply the one with the least
        :func:`~accelsim.network.collectives.estimate_s`, of the ring and the tree the one
        NCCL would prefer (:func:`_ring_or_tree`)."""
        key = (request, algorithm)
        hit = self._plans.get(key)
        if hit is None:
            topo = self.topo
            check_request(topo, request)
            request = dataclasses.replace(request, time_plans=timer(topo))
            if request.whole:  # the algorithm and protocol the part's plan chose, every part
                part = self.plan(dataclasses.replace(request, whole=False), algorithm)
                hit = _every_part(topo, request, part) if part.partial else part
            else:
                hit = _choose(topo, request, algorithm)
            self._plans[key] = hit
        return hit


def plan_for(topo: Topology, request: Request, algorithm: str = "auto") -> Plan:
    """The plan of ``request`` on ``topo`` (:meth:`Planner.plan`, by a planner of its own)."""
    return Planner(topo).plan(request, algorithm)


REGISTERED_AS = {"torus-ring": "ring"}
"""Plan algorithm names that are not the name of the builder that makes them."""


def _every_part(topo: Topology, request: Request, part: Plan) -> Plan:
    """``request`` (``whole``) planned as ``part`` was: the same algorithm and protocol."""
    builder = ALGORITHMS[REGISTERED_AS.get(part.algorithm, part.algorithm)]
    proto = topo.tuning.protocols[part.protocol] if part.protocol and topo.tuning else None
    return builder(topo, request, proto)


def _choose(topo: Topology, request: Request, algorithm: str) -> Plan:
    if algorithm != "auto":
        return get_algorithm(algorithm)(topo, request)
    tuned = _platform_tuner_plan(topo, request) or _nccl_one_node_plan(topo, request)
    if tuned is not None:
        return tuned
    plans, refusals = [], []
    for name in auto_candidates(topo, request):
        try:
            plans.append(get_algorithm(name)(topo, request))
        except InputError as exc:  # a candidate that does not apply to this group
            refusals.append(exc)
    if not plans:
        raise refusals[0]
    return min(_ring_or_tree(topo, plans), key=lambda plan: estimate_s(topo, plan))


RATED_ALIKE = ("ring", "tree")
"""The algorithms NCCL rates from the same graph: its ring and tree bandwidths are both the
ring/tree search's channels x per-channel speed, scaled by fixed ratios (``ncclTopoTuneModel``,
src/graph/tuning.cc @ v2.26.2-1 lines 250-297), where NVLS and NVLSTree are rated from the
NVLS heads and channels."""


def _ring_or_tree(topo: Topology, plans: list[Plan]) -> list[Plan]:
    """``plans`` with only one of the ring and the tree: the one NCCL's estimate would
    prefer, the least :func:`~accelsim.network.collectives.tuner_estimate_s` (a Simple
    tree's pipeline fill left out, as NCCL leaves it out). The others (NVLS, NVLS-tree)
    are weighed against it by the model's whole estimate: NCCL rates them from other
    figures, which the model does not carry, so there the model's times decide."""
    alike = [p for p in plans if p.algorithm in RATED_ALIKE]
    if len(alike) < 2:
        return plans
    kept = min(alike, key=lambda plan: tuner_estimate_s(topo, plan))
    return [p for p in plans if p.algorithm not in RATED_ALIKE or p is kept]


def _nccl_one_node_plan(topo: Topology, request: Request) -> Plan | None:
    """The plan of the first pair in NCCL's own order
    (:func:`~accelsim.network.auto.nccl_one_node_ranking`) that applies here (NVLS needs 3
    GPUs of the node); None where the model does not carry NCCL's estimate."""
    for name in nccl_one_node_ranking(topo, request) or ():
        try:
            return get_algorithm(name)(topo, request)
        except InputError:
            continue
    return None


def _platform_tuner_plan(topo: Topology, request: Request) -> Plan | None:
    """The plan of the first algorithm and protocol the platform's tuner plugin picks that
    applies here (:func:`~accelsim.network.tuners.tuner_choices`), as the plugin skips a
    region NCCL cannot run; None where it leaves the choice to NCCL."""
    if not isinstance(topo, ClusterTopology) or topo.tuner is None or topo.tuning is None:
        return None
    parts = by_domain(topo, request.ranks)
    per_node = {len(members) for members in parts.values()}
    choices = tuner_choices(topo.tuner, request.kind, request.size_bytes, len(request.ranks), len(parts),
                            per_node.pop() if len(per_node) == 1 else 0)
    for algorithm, protocol in choices:
        if protocol not in topo.tuning.protocols:
            continue
        try:
            return get_algorithm(f"{algorithm}/{protocol}")(topo, request)
        except InputError:  # NVLS-tree without NVLS, say
            continue
    return None


def check_request(topo: Topology, request: Request) -> None:
    check_kind(request.kind)
    ranks = request.ranks
    if len(ranks) < 2:
        raise InputError(f"a collective needs at least 2 ranks, got {len(ranks)}", field="group")
    if len(set(ranks)) != len(ranks):
        raise InputError(f"the group names a rank twice: {list(ranks)}", field="group")
    bad = [r for r in ranks if not 0 <= r < topo.ranks]
    if bad:
        raise InputError(f"ranks {bad} are not on {topo.name!r} (ranks 0..{topo.ranks - 1})", field="group")
    if not request.size_bytes > 0:
        raise InputError(f"size must be positive, got {request.size_bytes!r} bytes", field="size_bytes")


def make_request(topo: Topology, kind: str, size_bytes: float, ranks: int | None = None,
                 group: Sequence[int] | None = None) -> Request:
    """The request for the first ``ranks`` ranks (all by default), or for ``group``, timed
    on ``topo`` where its algorithm searches (:func:`timer`)."""
    check_kind(kind)
    if group is not None:
        members = tuple(int(r) for r in group)
    else:
        members = tuple(range(check_ranks(topo.name, topo.ranks, ranks)))
    request = Request(kind=kind, size_bytes=float(size_bytes), ranks=members, time_plans=timer(topo))
    check_request(topo, request)
    return request


def check_ranks(system: str, system_ranks: int, ranks: int | None = None) -> int:
    """How many ranks a collective over the first ``ranks`` (all by default) of a system
    of ``system_ranks`` has; InputError unless that is 2 to all of them. Needs no links,
    so a sweep checks every point's system with it before building any."""
    n = system_ranks if ranks is None else ranks
    if system_ranks < 2:
        raise InputError(f"{system!r} has {system_ranks} rank; a collective needs at least 2", field="system")
    if not 2 <= n <= system_ranks:
        raise InputError(f"ranks must be between 2 and {system_ranks} on {system!r}, got {n}", field="ranks")
    return n


def simulate_collective(topo: Topology, kind: str, size_bytes: float, algorithm: str = "auto",
                        ranks: int | None = None, group: Sequence[int] | None = None) -> CollectiveResult:
    """One collective alone on the topology, over the first ``ranks`` ranks or ``group``."""
    request = make_request(topo, kind, size_bytes, ranks, group)
    plan = plan_for(topo, request, algorithm)
    return result_of(plan, kind, size_bytes, len(request.ranks), run_plans(topo, [plan])[0], topo.name)


def result_of(plan: Plan, kind: str, size_bytes: float, n: int, finished_ps: int, system: str) -> CollectiveResult:
    latency_s = ps_to_seconds(finished_ps)
    algbw = size_bytes / latency_s
    return CollectiveResult(
        kind=kind, algorithm=plan.algorithm, protocol=plan.protocol, size_bytes=size_bytes, ranks=n,
        latency_s=latency_s, algbw_bytes_per_s=algbw, busbw_bytes_per_s=algbw * BUS_FACTORS[kind](n),
        phases=sum(len(lane) for lane in plan.lanes), system=system,
    )
