"""Collectives and transfers of a replay: devices meet in instances, and an instance
whose members have all arrived plays its plan on the shared link pool.

A collective starts when every member of its group has reached it (the n-th op each
member issues on that group); a send and its recv when both are reached. While it moves
data it slows the compute of its members' classes (:class:`~accelsim.system.compute.CommLoad`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import simpy

from accelsim.engine.fluid import FluidResources
from accelsim.errors import InputError
from accelsim.network import play_plan
from accelsim.system.layout import Joined
from accelsim.system.plans import PlanBook, instance_kind, ranks_text
from accelsim.system.streams import Completions, DeviceClass, Segment
from accelsim.system.trace import Op


@dataclass
class Instance:
    """One collective (or transfer) instance: who must arrive, who has."""

    key: tuple
    kind: str
    bytes: float
    ranks: tuple[int, ...]
    expected: int
    first: tuple[int, int, int]
    """(device, class, op) of the first arrival: for error messages."""
    arrived: int = 0
    members: list[tuple[int, int]] = field(default_factory=list)
    """(class, op) that wait for it."""
    started_ps: int = 0
    shares: dict[int, float] = field(default_factory=dict)
    """Class -> the HBM share the instance takes from its compute (see :meth:`Rendezvous._launch`)."""
    budgets: dict[int, float | None] = field(default_factory=dict)
    """Class -> the SMs the instance holds on its devices (its op's ``sm_budget``), None without a budget."""


class Rendezvous:
    """Matches arrivals into instances and plays each complete one on ``pool``.

    ``hbm_bytes_per_s``: the chip's HBM bandwidth where collectives take their own HBM
    share from compute (GPUs), else None."""

    def __init__(self, env: simpy.Environment, pool: FluidResources, plans: PlanBook,
                 joined: dict[tuple[int, int], Joined], classes: Sequence[DeviceClass], completions: Completions,
                 hbm_bytes_per_s: float | None, segments: list[Segment] | None) -> None:
        self.env = env
        self.pool = pool
        self.plans = plans
        self.joined = joined
        self.classes = classes
        self.completions = completions
        self.hbm_bytes_per_s = hbm_bytes_per_s
        self.segments = segments
        self.instances: dict[tuple, Instance] = {}
        """Instances some member has reached and that have not ended."""
        self.played = 0
        """Instances launched (zero-byte ones too)."""

    def arrive(self, cls: DeviceClass, i: int, op: Op) -> None:
        joined = self.joined[cls.id, i]
        if not joined:
            self.completions.complete(cls, i)  # no device of this class takes part (a permute that skips it)
            return
        cls.pending[i] = len(joined)
        for key, (ranks, count) in joined.items():
            inst = self.instances.get(key)
            if inst is None:
                inst = Instance(key=key, kind=instance_kind(op), bytes=op.bytes, ranks=ranks, expected=len(ranks),
                                first=(cls.devices[0], cls.id, i))
                self.instances[key] = inst
            else:
                self._check_match(inst, cls, i, op)
            inst.arrived += count
            inst.members.append((cls.id, i))
            if inst.arrived == inst.expected:
                self._launch(inst)

    def waiting_in(self, c: int, i: int) -> Instance | None:
        """The instance op ``i`` of class ``c`` waits in, if any."""
        for inst in self.instances.values():
            if (c, i) in inst.members:
                return inst
        return None

    def _check_match(self, inst: Instance, cls: DeviceClass, i: int, op: Op) -> None:
        kind = instance_kind(op)
        if kind != inst.kind or op.bytes != inst.bytes:
            device, c, j = inst.first
            other = self.classes[c].prog
            raise InputError(
                f"{kind} {op.name!r} of {op.bytes:g} bytes on device {cls.devices[0]} meets {inst.kind} "
                f"{other.ops[j].name!r} of {inst.bytes:g} bytes on device {device} "
                f"(programs[{other.index}].ops[{j}]); members must issue the same ops on a group in the same order",
                field=f"programs[{cls.prog.index}].ops[{i}]",
            )

    def _launch(self, inst: Instance) -> None:
        self.played += 1
        device, c, j = inst.first
        plan = self.plans.plan(inst.kind, inst.bytes, inst.ranks, inst.key[0], (self.classes[c].prog.index, j))
        if plan is None:
            self._done(inst)
            return
        plan = self.plans.held(plan, self._fewest_sms(inst))
        inst.started_ps = self.env.now
        share = 0.0
        if self.hbm_bytes_per_s is not None:
            share = self.plans.hbm_share(inst.kind, inst.bytes, len(inst.ranks), plan, self.hbm_bytes_per_s)
        key, classes, shares, budgets = inst.key, self.classes, inst.shares, inst.budgets
        for c, i in sorted(inst.members):
            # a class whose devices play several groups of the op takes each group's share
            # for its own devices: every device takes one group's
            joined = self.joined[c, i]
            mine = joined[key][1]
            own = mine / (mine if len(joined) == 1 else sum(count for _ranks, count in joined.values()))
            cls = classes[c]
            shares[c] = share * own
            budget = cls.prog.ops[i].sm_budget
            budgets[c] = None if budget is None else budget * own
            cls.compute.comm_changed(+1, shares[c], budgets[c])
        process = play_plan(self.env, self.pool, plan)
        process.callbacks.append(lambda _e: self._done(inst, communicated=True))

    def _fewest_sms(self, inst: Instance) -> int | None:
        """The smallest ``sm_budget`` among the instance's ops (None: no op holds one): the
        members' kernels run in step, so the rank that issues slowest paces them all."""
        budgets = [self.classes[c].prog.ops[i].sm_budget for c, i in inst.members]
        return min((b for b in budgets if b is not None), default=None)

    def _done(self, inst: Instance, communicated: bool = False) -> None:
        del self.instances[inst.key]
        classes = sorted({c for c, _ in inst.members})
        if communicated:
            for c in classes:
                self.classes[c].compute.comm_changed(-1, inst.shares[c], inst.budgets[c])
            if self.segments is not None:
                name = f"{inst.kind} {inst.bytes:g} B over {len(inst.ranks)}"
                for c in classes:
                    self.segments.append(Segment(track=c, lane="comm", name=name, kind=inst.kind,
                                                 start_ps=inst.started_ps, end_ps=self.env.now))
        for c, i in inst.members:
            cls = self.classes[c]
            cls.pending[i] -= 1
            if not cls.pending[i]:
                del cls.pending[i]
                self.completions.put(cls, i)
        self.completions.drain()
