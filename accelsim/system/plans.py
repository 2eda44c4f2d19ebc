"""The plans of a replay's collectives and transfers, made once per distinct instance
(kind, size, ranks) by :mod:`accelsim.network`, and what follows from a plan alone: the
links it crosses, its shape up to link names, the HBM share its collective takes."""

from __future__ import annotations

from accelsim.errors import InputError
from accelsim.network import Planner, links_of
from accelsim.network.collectives import BUS_FACTORS, Plan, Request, estimate_s
from accelsim.network.sm_issue import held_to_sms
from accelsim.network.topology import Topology
from accelsim.system.trace import P2P_KINDS, PERMUTE_KIND, Op


def instance_kind(op: Op) -> str:
    """A send and its recv are one instance, of kind ``send/recv``."""
    return "send/recv" if op.kind in P2P_KINDS else op.kind


def ranks_text(ranks: tuple[int, ...]) -> str:
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


class PlanBook:
    """Plans cached by kind, size, ranks and whether every part is played.

    ``representative_parts``: a collective whose plan simulates one of its identical
    parts (``Plan.partial``) plays that part alone unless other traffic meets another
    part (:attr:`whole_keys`, decided before the run). Off, every instance plays every
    part: the plain path."""

    def __init__(self, topo: Topology, algorithm: str, representative_parts: bool = True) -> None:
        self.topo = topo
        self.planner = Planner(topo)
        self.algorithm = algorithm
        self.representative_parts = representative_parts
        self.whole_keys: set[tuple] = set()
        """Plan keys (kind, bytes, group number) played with every part."""
        self._plans: dict[tuple, Plan | None] = {}
        self._group_numbers: dict[tuple, int] = {}
        self._group_ids: dict[int, tuple[tuple, int]] = {}
        """id(group) -> (group, its number); holds the group, so the id stays its."""
        self._links: dict[int, frozenset[str]] = {}
        self._hbm_shares: dict[int, float] = {}
        self._held: dict[tuple[int, int], Plan] = {}

    def plan(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
             where: tuple[int, int], whole: bool | None = None) -> Plan | None:
        """The plan of an instance; ``None`` when nothing moves (zero bytes, a group of
        one). ``where`` is (program, op) for errors. ``whole``: every part of the
        collective (True), the plan's own choice of one representative part where it has
        identical ones (False), or as the replay plays it (None)."""
        if nbytes <= 0 or len(ranks) < 2:
            return None
        cache_key = self.key(kind, nbytes, ranks, base)
        if whole is None:
            whole = not self.representative_parts or cache_key in self.whole_keys
        key = (*cache_key, whole)
        if key not in self._plans:
            part = None if not whole else self.plan(kind, nbytes, ranks, base, where, whole=False)
            self._plans[key] = part if part is not None and not part.partial else \
                self._make(kind, nbytes, ranks, base, where, whole)
        return self._plans[key]

    def reach(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
              where: tuple[int, int]) -> Plan | None:
        """The plan of every part of an instance: the links its traffic crosses in truth."""
        return self.plan(kind, nbytes, ranks, base, where, whole=True)

    def compared(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
                 where: tuple[int, int]) -> Plan | None:
        """The plan folding compares between groups: the representative part where
        those are played, else every part."""
        return self.plan(kind, nbytes, ranks, base, where, whole=not self.representative_parts)

    def key(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple) -> tuple:
        """What an instance's plan depends on: kind, size and ranks (a permute's pairs),
        the last as a small number. The same group is one tuple object wherever it is
        named (:func:`~accelsim.system.program.comm_joins`), so it is found by identity: a
        long tuple is hashed anew at every lookup, and a 1024-rank group's plan is looked
        up for every device."""
        group = base[1] if base[0] == "perm" else ranks
        known = self._group_ids.get(id(group))
        if known is None or known[0] is not group:
            number = self._group_numbers.setdefault(group, len(self._group_numbers))
            known = self._group_ids[id(group)] = (group, number)
        return kind, nbytes, known[1]

    def held(self, plan: Plan, sms: int | None) -> Plan:
        """``plan`` as ``sms`` SMs issue it (:func:`~accelsim.network.sm_issue.held_to_sms`;
        None: no budget, the plan as made). Cached beside the plan it holds."""
        if sms is None:
            return plan
        key = (id(plan), sms)
        if key not in self._held:
            self._held[key] = held_to_sms(self.topo, plan, sms)
        return self._held[key]

    def links(self, plan: Plan) -> frozenset[str]:
        found = self._links.get(id(plan))
        if found is None:
            found = self._links[id(plan)] = frozenset(links_of(plan))
        return found

    def shape(self, plan: Plan) -> tuple:
        """A plan with its links renamed by first use: equal for plans that run the same."""
        names: dict[str, int] = {}
        lanes = tuple(
            tuple((phase.latency_s, tuple((t.bytes, t.efficiency, t.max_bytes_per_s,
                                           tuple(names.setdefault(link, len(names)) for link in t.links))
                                          for t in phase.transfers))
                  for phase in lane)
            for lane in plan.lanes)
        capacities = tuple(self.topo.links[link].bandwidth_bytes_per_s for link in names)
        return plan.algorithm, plan.protocol, plan.launch_s, lanes, capacities

    def hbm_share(self, kind: str, nbytes: float, nranks: int, plan: Plan, hbm_bytes_per_s: float) -> float:
        """The share of a GPU's HBM bandwidth a collective takes while it runs: every byte
        it sends is read from HBM and every byte it receives written back, so twice its
        bus bandwidth (nccl-tests' busbw, the bytes each rank moves per second) with the
        plan's estimated time alone (``estimate_s``). Its own rate, not the links' peak: a
        NIC-bound collective takes what the NIC moves, and a faster one takes more for
        less time, the same bytes (the links' peak made faster NVLink slow memory-bound
        compute beside a NIC-bound collective)."""
        share = self._hbm_shares.get(id(plan))
        if share is None:
            factor = BUS_FACTORS["send-recv" if kind == "send/recv" else kind](nranks)
            busbw = factor * nbytes / estimate_s(self.topo, plan)
            share = self._hbm_shares[id(plan)] = 2 * busbw / hbm_bytes_per_s
        return share

    def _make(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
              where: tuple[int, int], whole: bool = False) -> Plan:
        """Every instance is planned by :mod:`accelsim.network`: a collective over its
        group (with ``--algorithm``), a send/recv pair as ``send-recv``, a permute with its
        pairs (both with the network's own choice of algorithm)."""
        algorithm = self.algorithm
        if base[0] == "p2p":
            request, algorithm = Request(kind="send-recv", size_bytes=float(nbytes), ranks=ranks), "auto"
        elif base[0] == "perm":
            request = Request(kind=PERMUTE_KIND, size_bytes=float(nbytes), ranks=ranks, pairs=base[1])
            algorithm = "auto"
        else:
            request = Request(kind=kind, size_bytes=float(nbytes), ranks=ranks, whole=whole)
        try:
            return self.planner.plan(request, algorithm)
        except InputError as exc:
            raise InputError(f"{exc.message} (ranks {ranks_text(ranks)} on {self.topo.name})",
                             field=f"programs[{where[0]}].ops[{where[1]}]") from None
