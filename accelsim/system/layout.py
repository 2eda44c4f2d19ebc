"""Before a replay runs: which collective and transfer instances each class's
communication ops join, which of them are played on the links, and the links those
cross. Bad groups fail here, before any time is simulated.

Two exactness-preserving shortcuts are decided here, each from the plans alone:

* **folded groups** (``fold_groups``): a folded class plays only its first device's
  group of a collective when every group's plan is a translate of the others' and no
  link they cross carries other traffic that can run at the same time
  (:meth:`CommLayout._foldable_partitions`);
* **representative parts** (``representative_parts``, :class:`~accelsim.system.plans.PlanBook`):
  a collective planned as one of its identical parts plays every part where other
  traffic that can run at the same time meets another part (:meth:`CommLayout._choose_whole`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from accelsim.network.collectives import Plan
from accelsim.system.plans import PlanBook, instance_kind
from accelsim.system.program import CompiledProgram, GroupLayout, happens_before, order_bits
from accelsim.system.trace import COLLECTIVE_KINDS, Op

ORDER_BITS_LIMIT_BYTES = 256 * 2**20
"""The most memory the dependency order of one program may take as bit sets (two of
about ``ops**2 / 16`` bytes each, estimated before they are built: 46,000 ops). A larger
program's collectives are taken as overlapping whatever else crosses their links, so
they play every group and part: exact, only slower."""

T = TypeVar("T")

Joined = dict[tuple, tuple[tuple[int, ...], int]]
"""Instance key -> (ranks, how many devices of the class join it)."""


class ClassLike(Protocol):
    id: int
    prog: CompiledProgram
    devices: list[int]


@dataclass
class Layout:
    """What :meth:`CommLayout.build` decides."""

    joined: dict[tuple[int, int], Joined] = field(default_factory=dict)
    """(class, op) -> the instances its devices join and play."""
    folded_plans: list[Plan | None] = field(default_factory=list)
    """Plans of groups a folded class did not play (translates of one it played)."""
    links: set[str] = field(default_factory=set)
    """Every link a played plan crosses."""


class CommLayout:
    """Decides a replay's :class:`Layout` (see the module doc)."""

    def __init__(self, classes: Sequence[ClassLike], plans: PlanBook, fold_groups: bool = True) -> None:
        self.classes = classes
        self.plans = plans
        self.fold_groups = fold_groups
        self._independent: dict[tuple, tuple[bool, list]] = {}
        """(kind, bytes, partition) -> whether the groups' plans are translates, and the links
        they share with other traffic."""
        self._orders: dict[int, tuple[list[int], list[int]] | None] = {}
        """Per program: per op, bit sets of the ops that finish before it starts and of
        those that start after it ends (None: too large, see :data:`ORDER_BITS_LIMIT_BYTES`)."""
        self._tag_bits: dict[tuple[int, int], int | None] = {}
        """(id(tags), class) -> the ops a list of tags names, as a bit set (None: a tag of a single
        device or of another class)."""
        self._partitions: dict[int, frozenset | None] = {}
        """id(group layout) -> its partition (:func:`_whole_groups` of an op on it)."""
        self._group_plans: dict[tuple, list[Plan | None]] = {}
        """(whole, kind, bytes, id(group layout)) -> the plans of its groups (:meth:`_plans_of`)."""

    def joins(self) -> dict[tuple[int, int], Joined]:
        """(class, op) -> every instance its devices join (before any is folded)."""
        full: dict[tuple[int, int], Joined] = {}
        for cls in self.classes:
            for i, op in enumerate(cls.prog.ops):
                if op.is_comm:
                    full[cls.id, i] = _instances_joined(cls, i)
        return full

    def _layout_of(self, cls: ClassLike, i: int) -> GroupLayout | None:
        """The groups of collective ``i`` when ``cls`` holds every device of its program:
        then the op joins each group of the layout with all the program's devices in it,
        so what follows from its groups alone (plans, partition) is shared by every op on
        them, and computed once per layout instead of once per op and group."""
        joins = cls.prog.comm_joins[i]
        return joins.layout if joins.layout is not None and len(cls.devices) == len(cls.prog.devices) else None

    def _partition(self, cls: ClassLike, i: int, op: Op, joined: Joined) -> frozenset | None:
        """:func:`_whole_groups`, once per group layout."""
        layout = self._layout_of(cls, i)
        if layout is None:
            return _whole_groups(op, joined)
        if id(layout) not in self._partitions:  # the classes hold the layout: its id stays its own
            self._partitions[id(layout)] = _whole_groups(op, joined)
        return self._partitions[id(layout)]

    def build(self, full: dict[tuple[int, int], Joined]) -> Layout:
        """The layout, from :meth:`joins`; every instance played is planned here."""
        owners = self._link_owners(full)
        if self.plans.representative_parts:
            self._choose_whole(full, owners)
        foldable = self._foldable_partitions(full, owners) if self.fold_groups else set()
        layout = Layout()
        counted: set[int] = set()  # plans are cached: each distinct one once
        counted_layouts: set[tuple] = set()
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.ops[i]
            folded = self._partition(cls, i, op, joined) in foldable
            if folded:
                joined = self._fold(cls, i, op, joined, layout)
            layout.joined[c, i] = joined
            shared = None if folded else self._shared_key(cls, i, op, reach=False)
            if shared is not None:
                if shared in counted_layouts:  # its plans' links are in
                    continue
                counted_layouts.add(shared)
            for plan in self._plans_of(cls, i, op, joined, folded=folded):
                if plan is not None and id(plan) not in counted:
                    counted.add(id(plan))
                    layout.links |= self.plans.links(plan)
        return layout

    def _fold(self, cls: ClassLike, i: int, op: Op, joined: Joined, layout: Layout) -> Joined:
        """Keep the first device's group; the others' plans are credited with its loads."""
        key = cls.prog.comm_joins[i].of(cls.prog.position[cls.devices[0]])[0]
        if self._layout_of(cls, i) is not None:  # the first device's group comes first
            layout.folded_plans.extend(self._plans_of(cls, i, op, joined)[1:])
            return {key: joined[key]}
        for (base, seq), (ranks, _count) in joined.items():
            if (base, seq) != key:
                layout.folded_plans.append(self.plans.plan(op.kind, op.bytes, ranks, base, (cls.prog.index, i)))
        return {key: joined[key]}

    def _plans_of(self, cls: ClassLike, i: int, op: Op, joined: Joined, reach: bool = False,
                  folded: bool = False) -> list[Plan | None]:
        """The plans of the instances an op joins, as played (or every part: ``reach``).
        Plans as played are asked for only once :meth:`_choose_whole` has decided which
        play every part. ``folded``: ``joined`` is the first device's group alone."""
        where, kind = (cls.prog.index, i), instance_kind(op)
        get = self.plans.reach if reach else self.plans.plan

        def plans() -> list[Plan | None]:
            return [get(kind, op.bytes, ranks, base, where) for (base, _seq), (ranks, _count) in joined.items()]

        return plans() if folded else self._per_layout(self._group_plans, cls, i, op, reach, plans)

    def _per_layout(self, memo: dict[tuple, T], cls: ClassLike, i: int, op: Op, reach: bool,
                    make: Callable[[], T]) -> T:
        """``make()`` for op ``i``, kept in ``memo`` for the other ops on its group layout
        where they share it (:meth:`_shared_key`)."""
        shared = self._shared_key(cls, i, op, reach)
        if shared is None:
            return make()
        if shared not in memo:
            memo[shared] = make()
        return memo[shared]

    def _shared_key(self, cls: ClassLike, i: int, op: Op, reach: bool) -> tuple | None:
        """What the plans of op ``i`` depend on where every op on its groups has the same
        plans (:meth:`_layout_of`; a collective's plan depends neither on its communicator
        nor on its sequence number), else None."""
        layout = self._layout_of(cls, i)
        return None if layout is None else (reach, instance_kind(op), op.bytes, id(layout))

    def _link_owners(self, full: dict[tuple[int, int], Joined]) -> dict[str, dict[tuple, list]]:
        """Per link, what crosses it: ``{(partition, ranks): [tags, ...]}``, where partition
        is the op's groups when they all lie in its class (else None) and a tag is (class,
        op) for a class of several devices, None for one of a single device. Ops with the
        same plan and owner share one list of tags, entered once per link; the ops on one
        group layout (:meth:`_layout_of`) find their lists once."""
        owners: dict[str, dict[tuple, list]] = {}
        tags_of: dict[tuple, list] = {}
        layout_tags: dict[tuple, list[list]] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.ops[i]
            tag = (c, i) if len(cls.devices) > 1 else None
            tag_lists = self._per_layout(layout_tags, cls, i, op, True,
                                         lambda: self._enter(owners, tags_of, cls, i, op, joined))
            for tags in tag_lists:
                if not tags or tags[-1] != tag:
                    tags.append(tag)
        return owners

    def _enter(self, owners: dict[str, dict[tuple, list]], tags_of: dict[tuple, list], cls: ClassLike, i: int,
               op: Op, joined: Joined) -> list[list]:
        """The list of tags of each instance of op ``i`` that moves data, its plan's and
        owner's (``tags_of``); a new one is entered on the links the plan crosses."""
        partition = self._partition(cls, i, op, joined)
        lists = []
        for ((_base, _seq), (ranks, _count)), plan in zip(joined.items(), self._plans_of(cls, i, op, joined, True)):
            if plan is None:
                continue
            owner = (partition, ranks)
            tags = tags_of.get((id(plan), owner))
            if tags is None:
                tags = tags_of[id(plan), owner] = []
                for link in self.plans.links(plan):
                    owners.setdefault(link, {}).setdefault(owner, []).append(tags)
            lists.append(tags)
        return lists

    def _choose_whole(self, full: dict[tuple[int, int], Joined], owners: dict[str, dict[tuple, list]]) -> None:
        """Which instances play every part of their collective (``plans.whole_keys``): those
        whose plan simulates one representative part (``Plan.partial``) while other traffic
        that can run at the same time crosses the links of the whole collective. A
        representative part is exact only when nothing else meets the parts it stands for."""
        crowded: dict[tuple, list] = {}
        candidates_of: dict[tuple, list] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.ops[i]
            candidates = self._per_layout(candidates_of, cls, i, op, False,
                                          lambda: self._partial_parts(cls, i, op, joined, owners, crowded))
            for key, own, links in candidates:
                if key not in self.plans.whole_keys and any(self._contended(cls, i, on_link, own) for on_link in links):
                    self.plans.whole_keys.add(key)

    def _partial_parts(self, cls: ClassLike, i: int, op: Op, joined: Joined, owners: dict[str, dict[tuple, list]],
                       crowded: dict[tuple, list]) -> list[tuple[tuple, tuple, list]]:
        """The instances of op ``i`` planned as one representative part whose whole
        collective crosses links that other traffic crosses too: (plan key, owner, the
        owners of those links)."""
        plans = self.plans
        kind, where = instance_kind(op), (cls.prog.index, i)
        partition = self._partition(cls, i, op, joined)
        found = []
        for (base, _seq), (ranks, _count) in joined.items():
            part = plans.plan(kind, op.bytes, ranks, base, where, whole=False)
            key = plans.key(kind, op.bytes, ranks, base)
            if part is None or not part.partial:
                continue
            own = (partition, ranks)
            reach = plans.reach(kind, op.bytes, ranks, base, where)
            shared = crowded.get((id(reach), own))
            if shared is None:  # the links something else crosses too, once per plan and owner
                shared = crowded[id(reach), own] = [owners[link] for link in plans.links(reach)
                                                    if len(owners[link]) > 1]
            if shared:
                found.append((key, own, shared))
        return found

    def _foldable_partitions(self, full: dict[tuple[int, int], Joined],
                             owners: dict[str, dict[tuple, list]]) -> set[frozenset]:
        """The partitions (sets of groups) on which a folded class may play only its first
        device's group. Exactly when, for every collective on those groups, the groups'
        plans are translates of one another (the same flows, latencies and link capacities,
        links renamed) and every link they cross carries, while the op runs, nothing but
        that group's traffic of collectives on these same groups: then every group runs as
        the played one does. Traffic of another op of the same class that finishes before
        this one starts, or starts after it ends (the dependencies say so), does not count.
        Otherwise every group is played."""
        ok: dict[frozenset, bool] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.ops[i]
            partition = self._partition(cls, i, op, joined)
            if partition is None or ok.get(partition) is False:
                continue
            key = (op.kind, op.bytes, partition)
            if key not in self._independent:
                self._independent[key] = self._translates(cls, i, op, joined, partition, owners)
            translates, shared = self._independent[key]
            ok[partition] = translates and not any(self._contended(cls, i, on_link, own) for on_link, own in shared)
        return {partition for partition, fine in ok.items() if fine}

    def _translates(self, cls: ClassLike, i: int, op: Op, joined: Joined, partition: frozenset,
                    owners: dict[str, dict[tuple, list]]) -> tuple[bool, list]:
        """Whether the groups' plans are translates, and the links they share with other
        traffic (every link carries the op itself)."""
        where = (cls.prog.index, i)
        plans = [(ranks, self.plans.compared(op.kind, op.bytes, ranks, base, where),
                  self.plans.reach(op.kind, op.bytes, ranks, base, where))
                 for (base, _seq), (ranks, _count) in joined.items()]
        translates = len({None if plan is None else self.plans.shape(plan) for _, plan, _ in plans}) == 1
        shared = [(owners[link], (partition, ranks)) for ranks, _, reach in plans if reach is not None
                  for link in self.plans.links(reach) if len(owners[link]) > 1]
        return translates, shared

    def _contended(self, cls: ClassLike, i: int, on_link: dict[tuple, list], own: tuple) -> bool:
        """Can traffic other than ``own``'s on a link run while op ``i`` of ``cls`` does?
        Traffic of another class, or of another op of this class that the dependencies do
        not order before or after op ``i``, can."""
        for owner, tag_lists in on_link.items():
            if owner == own:
                continue
            for tags in tag_lists:
                ops = self._ops_named(cls.id, tags)
                if ops is None:
                    return True
                order = self._order(cls.prog)
                if order is None or ops & ~(order[0][i] | order[1][i]):  # i itself counts: its other groups
                    return True
        return False

    def _ops_named(self, c: int, tags: list) -> int | None:
        """The ops of class ``c`` a list of tags names, as a bit set; None if one is not
        of ``c`` (or of a single device's class)."""
        key = id(tags), c  # the lists live as long as the owners that hold them
        if key not in self._tag_bits:
            bits = 0
            for tag in tags:
                if tag is None or tag[0] != c:
                    bits = None
                    break
                bits |= 1 << tag[1]
            self._tag_bits[key] = bits
        return self._tag_bits[key]

    def _order(self, prog: CompiledProgram) -> tuple[list[int], list[int]] | None:
        if prog.index not in self._orders:
            n = len(prog.ops)
            small = n * n // 8 <= ORDER_BITS_LIMIT_BYTES
            self._orders[prog.index] = order_bits(happens_before(prog)) if small else None
        return self._orders[prog.index]


def members_moving(classes: Sequence[ClassLike], full: dict[tuple[int, int], Joined]) -> int:
    """Members of every instance of two or more ranks, counted once per instance: about
    the fewest transfers the instances start on the links (a ring starts more). A class
    of several devices counts its first device's group of each collective, as it plays
    it where its groups fold."""
    sizes: dict[tuple, int] = {}
    for (c, i), joined in full.items():
        cls = classes[c]
        first = cls.prog.comm_joins[i].of(cls.prog.position[cls.devices[0]]) if len(cls.devices) > 1 else None
        for key, (ranks, _count) in ([(first[0], joined[first[0]])] if first is not None else joined.items()):
            sizes[key] = len(ranks) if len(ranks) > 1 else 0
    return sum(sizes.values())


def _instances_joined(cls: ClassLike, i: int) -> Joined:
    """Instance key -> (ranks, devices of ``cls`` that join it), in the order the class's
    devices first meet them."""
    joins = cls.prog.comm_joins[i]
    if len(cls.devices) == len(cls.prog.devices):  # every device of the program: its counts
        return {key: (ranks, count) for key, ranks, count in zip(joins.keys, joins.ranks, joins.counts) if count}
    joined: Joined = {}
    position = cls.prog.position
    for d in cls.devices:
        slot = joins.slots[position[d]]
        if slot >= 0:
            key = joins.keys[slot]
            ranks, count = joined.get(key, (joins.ranks[slot], 0))
            joined[key] = (ranks, count + 1)
    return joined


def _whole_groups(op: Op, joined: Joined) -> frozenset | None:
    """The op's groups (its partition) when it is a collective whose several groups all
    lie inside the class, else None."""
    if op.kind not in COLLECTIVE_KINDS or len(joined) < 2 or any(count != len(ranks)
                                                                 for ranks, count in joined.values()):
        return None
    return frozenset(ranks for ranks, _ in joined.values())
