"""A program of a system trace compiled for replay: its ops as index lists (streams,
dependents, dependency counts) and, per communication op, which collective or transfer
instance each of its devices joins. Shared by every replayed class that runs it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from accelsim.system.costs import OpCost
from accelsim.system.trace import COLLECTIVE_KINDS, P2P_KINDS, PERMUTE_KIND, Op, Program, group_index
from accelsim.units import seconds_to_ps

InstanceKey = tuple
"""``(base, seq)``: the ``seq``-th instance on ``base`` (a group and communicator, a pair
set, or one ``src -> dst`` pair and tag)."""


@dataclass(frozen=True, eq=False)
class GroupLayout:
    """How a program's devices meet the groups of one replica-group list: what every op on
    those groups shares (its instances differ only in their keys)."""

    ranks: list[tuple[int, ...]]
    """The distinct groups the devices join, in the order the devices first meet them."""
    slots: list[int]
    """Per device (its position in the program's devices), its group in :attr:`ranks`."""
    counts: list[int]
    """Per group, how many of the program's devices join it."""


@dataclass(frozen=True, eq=False)
class CommJoins:
    """Which instance each of a program's devices joins in one communication op."""

    keys: list[InstanceKey]
    """The instances, in the order the program's devices first meet them."""
    ranks: list[tuple[int, ...]]
    """Per instance, its ranks (a send/recv's ``(src, dst)``)."""
    slots: list[int]
    """Per device (its position in the program's devices), its instance, -1 for none."""
    counts: list[int]
    """Per instance, how many of the program's devices join it."""
    layout: GroupLayout | None = None
    """A collective's groups, shared by every op on them (None for other ops)."""

    def of(self, position: int) -> tuple[InstanceKey, tuple[int, ...]] | None:
        """The instance (key, ranks) the device at ``position`` joins, if any."""
        slot = self.slots[position]
        return None if slot < 0 else (self.keys[slot], self.ranks[slot])


@dataclass
class CompiledProgram:
    """A program's ops as index lists, shared by every class that runs it."""

    index: int
    program: Program
    ops: list[Op]
    """The program's ops (read at every op's start and end)."""
    devices: list[int]
    streams: list[list[int]]
    """Per stream, its ops in list order."""
    stream_of: list[int]
    dependents: list[list[int]]
    """Per op, the ops that wait for it (its dependents, and a done for its async op)."""
    ndeps: list[int]
    costs: list[OpCost | None]
    """Compute ops' costs, priced on first start."""
    comm_joins: list[CommJoins | None]
    """Per comm op, the instances its devices join; see :func:`comm_joins`."""
    position: dict[int, int]
    """Device -> its position in :attr:`devices`."""
    foldable: bool
    """Its devices are interchangeable (:func:`foldable`)."""
    host: HostTimes | None = None
    """What the host takes to issue each op (None: no host timeline)."""


@dataclass(frozen=True, eq=False)
class HostTimes:
    """A program's host timeline: per op, the host time to issue it (picoseconds) and
    whether the host waits for it to finish before issuing the next (ops' ``host_s``,
    ``host_sync``)."""

    issue_ps: list[int]
    sync: list[bool]

    @staticmethod
    def of(ops: list[Op]) -> HostTimes | None:
        if not any(op.host_s or op.host_sync for op in ops):
            return None
        return HostTimes(issue_ps=[seconds_to_ps(op.host_s) for op in ops], sync=[op.host_sync for op in ops])


def compile_program(index: int, program: Program, indexes: dict[tuple, dict]) -> CompiledProgram:
    """``indexes`` caches :func:`~accelsim.system.trace.group_index` across programs."""
    ops = program.ops
    position = {op.name: i for i, op in enumerate(ops)}
    stream_ids: dict[str, int] = {}
    streams: list[list[int]] = []
    stream_of = []
    dependents: list[list[int]] = [[] for _ in ops]
    ndeps = []
    for i, op in enumerate(ops):
        s = stream_ids.setdefault(op.stream, len(stream_ids))
        if s == len(streams):
            streams.append([])
        streams[s].append(i)
        stream_of.append(s)
        before = {position[d] for d in (*op.deps, *op.ctrl_deps)}
        if op.kind == "done":
            before.add(position[op.start])
        for b in before:
            dependents[b].append(i)
        ndeps.append(len(before))
    devices = program.device_ids()
    return CompiledProgram(
        index=index, program=program, ops=ops, devices=devices, streams=streams, stream_of=stream_of,
        dependents=dependents, ndeps=ndeps, costs=[None] * len(ops),
        comm_joins=comm_joins(program, devices, indexes), position={d: k for k, d in enumerate(devices)},
        foldable=foldable(program), host=HostTimes.of(ops),
    )


def comm_in_flight(program: Program) -> int:
    """The most communication ops of a program that can move data at once, from its
    schedule: per stream, the most whose windows overlap, summed over the streams.

    Ops of a stream start in list order, so a communication op at stream position ``i``
    starts no earlier than the op there, and it has ended before the first later op of
    its stream that waits for it starts (its ``done``, or a user of its result); every
    op after that starts later still. Its window is those positions (only its own for a
    synchronous one, which holds its stream; to the stream's end for an asynchronous one
    nothing on its stream waits for). Two ops whose windows do not overlap are never in
    flight together, so at most the most overlapping windows of a stream are: an XLA
    schedule's start/done pairs count one each, not all of them (a compiled MaxText
    step's 1,369 asynchronous permutes each end before the next starts)."""
    stream_length: dict[str, int] = {}
    position: dict[str, tuple[str, int]] = {}
    for op in program.ops:
        position[op.name] = op.stream, stream_length.get(op.stream, 0)
        stream_length[op.stream] = position[op.name][1] + 1
    window_end = {op.name: _NO_WAITER if op.is_async else position[op.name][1] for op in program.ops if op.is_comm}
    for op in program.ops:
        stream, at = position[op.name]
        for before in (*op.deps, *op.ctrl_deps, *((op.start,) if op.kind == "done" else ())):
            if position[before][0] == stream and window_end.get(before, -1) > at - 1:
                window_end[before] = at - 1  # a waiter on its stream comes after it (else a cycle)
    windows: dict[str, list[tuple[int, int]]] = {}
    for name, end in window_end.items():
        stream, start = position[name]
        windows.setdefault(stream, []).append((start, min(end, stream_length[stream] - 1)))
    return sum(_most_overlapping(w) for w in windows.values())


_NO_WAITER = 1 << 62
"""The window end of an asynchronous op that nothing on its stream waits for, until clipped
to the stream's last position."""


def _most_overlapping(windows: list[tuple[int, int]]) -> int:
    """The most of these closed position intervals that share one position."""
    edges = sorted([(start, 1) for start, _ in windows] + [(end + 1, -1) for _, end in windows])
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def foldable(program: Program) -> bool:
    """Devices are interchangeable: no send/recv (chains have ends) and every
    collective's replica groups have one size."""
    for op in program.ops:
        if op.kind in P2P_KINDS:
            return False
        if op.kind in COLLECTIVE_KINDS and op.groups is not None and len({len(g) for g in op.groups}) > 1:
            return False
    return True


class _Sequencer:
    """The n-th op a device issues on one base is the n-th instance there. Counters are
    cells (one-item lists) so that ops on the same groups reuse theirs without hashing
    every group again."""

    def __init__(self) -> None:
        self.counters: dict[tuple, list[int]] = {}

    def cell(self, base: tuple) -> list[int]:
        return self.counters.setdefault(base, [0])

    def next(self, base: tuple) -> InstanceKey:
        cell = self.cell(base)
        cell[0] += 1
        return base, cell[0] - 1


def comm_joins(program: Program, devices: list[int], indexes: dict[tuple, dict]) -> list[CommJoins | None]:
    """Per comm op, which instance each of the program's devices joins. The n-th op a
    device issues on one group and communicator (or one pair set, or one src->dst pair and
    tag) is the n-th instance there. ``indexes`` caches :func:`group_index` across programs
    that repeat the same groups."""
    seq = _Sequencer()
    layouts: dict[tuple, GroupLayout] = {}
    cells: dict[tuple[int, str | None], tuple[list[tuple], list[list[int]]]] = {}
    permutes: dict[tuple, tuple[tuple, tuple[int, ...], list[int], int]] = {}
    out: list[CommJoins | None] = []
    for op in program.ops:
        if op.kind in COLLECTIVE_KINDS:
            out.append(_collective_joins(op, devices, indexes, layouts, cells, seq))
        elif op.kind == PERMUTE_KIND:
            out.append(_permute_joins(op, devices, permutes, seq))
        elif op.kind in P2P_KINDS:
            out.append(_p2p_joins(op, devices, seq))
        else:
            out.append(None)
    return out


def _collective_joins(op: Op, devices: list[int], indexes: dict[tuple, dict], layouts: dict[tuple, GroupLayout],
                      cells: dict[tuple[int, str | None], tuple[list[tuple], list[list[int]]]],
                      seq: _Sequencer) -> CommJoins:
    groups = tuple(map(tuple, op.groups)) if op.groups is not None else (tuple(sorted(devices)),)
    layout = layouts.get(groups)
    if layout is None:
        if groups not in indexes:
            indexes[groups] = group_index(groups)
        layout = layouts[groups] = group_layout(indexes[groups], devices)
    found = cells.get((id(layout), op.communicator))
    if found is None:  # the layout lives as long as ``layouts``: its id stays its own
        bases = [("coll", group, op.communicator) for group in layout.ranks]
        found = cells[id(layout), op.communicator] = (bases, [seq.cell(base) for base in bases])
    bases, counters = found
    keys = [(base, cell[0]) for base, cell in zip(bases, counters)]
    for cell in counters:
        cell[0] += 1
    return CommJoins(keys=keys, ranks=layout.ranks, slots=layout.slots, counts=layout.counts, layout=layout)


def _permute_joins(op: Op, devices: list[int], permutes: dict[tuple, tuple[tuple, tuple[int, ...], list[int], int]],
                   seq: _Sequencer) -> CommJoins:
    """One instance of every device named in the pairs. ``permutes`` keeps, per pair set
    (a pipeline repeats a few), one tuple of it (found by identity where plans are
    looked up), its ranks and which of the program's devices they hold."""
    pairs = tuple(sorted((s, t) for s, t in op.pairs))
    if pairs not in permutes:
        ranks = tuple(sorted({d for pair in pairs for d in pair}))
        members = set(ranks)
        slots = [0 if d in members else -1 for d in devices]
        permutes[pairs] = pairs, ranks, slots, slots.count(0)
    pairs, ranks, slots, count = permutes[pairs]
    return CommJoins(keys=[seq.next(("perm", pairs))], ranks=[ranks], slots=slots, counts=[count])


def _p2p_joins(op: Op, devices: list[int], seq: _Sequencer) -> CommJoins:
    keys, ranks = [], []
    for d in devices:
        peer = op.peer if op.peer is not None else d + op.peer_offset
        src, dst = (d, peer) if op.kind == "send" else (peer, d)
        # counted per side: d may also be the other end of (src, dst)
        _, n = seq.next((op.kind, src, dst, op.tag))
        keys.append((("p2p", src, dst, op.tag), n))
        ranks.append((src, dst))
    return CommJoins(keys=keys, ranks=ranks, slots=list(range(len(devices))), counts=[1] * len(devices))


def group_layout(index: dict[int, tuple], devices: list[int]) -> GroupLayout:
    """The distinct groups the devices join, in the order the devices first meet them,
    each device's position in that list and each group's devices among them."""
    order: list[tuple] = []
    slot_of: dict[int, int] = {}
    slots = []
    for d in devices:
        group = index[d]
        slot = slot_of.get(id(group))  # id: hashing a 1024-rank tuple per device is slow
        if slot is None:
            slot = slot_of[id(group)] = len(order)
            order.append(group)
        slots.append(slot)
    counts = [0] * len(order)
    for slot in slots:
        counts[slot] += 1
    return GroupLayout(ranks=order, slots=slots, counts=counts)


def happens_before(prog: CompiledProgram) -> list[list[int]]:
    """Per op, the ops that have finished whenever it starts and it waits for directly:
    its dependencies (and a done's async op), and the op before it on its stream unless
    that one is async (an async op frees its stream when issued)."""
    ops = prog.ops
    parents: list[list[int]] = [[] for _ in ops]
    for k, children in enumerate(prog.dependents):
        for j in children:
            parents[j].append(k)
    for stream in prog.streams:
        for k, j in zip(stream, stream[1:]):
            if not ops[k].is_async:
                parents[j].append(k)
    return parents


def order_bits(parents: list[list[int]]) -> tuple[list[int], list[int]]:
    """Per op, its ancestors (the ops finished whenever it starts) and its descendants
    (those that start only after it has finished) under ``parents``, as bit sets."""
    order = topological(parents)
    before = [0] * len(parents)
    for j in order:
        bits = 0
        for k in parents[j]:
            bits |= before[k] | (1 << k)
        before[j] = bits
    after = [0] * len(parents)
    for j in reversed(order):
        bit = 1 << j
        for k in parents[j]:
            after[k] |= after[j] | bit
    return before, after


def topological(parents: list[list[int]]) -> list[int]:
    """Ops in an order where each comes after its parents (the trace has no cycles: they
    are refused before the replay)."""
    children: list[list[int]] = [[] for _ in parents]
    waiting = [len(p) for p in parents]
    for j, ps in enumerate(parents):
        for k in ps:
            children[k].append(j)
    ready = deque(j for j, n in enumerate(waiting) if n == 0)
    order = []
    while ready:
        k = ready.popleft()
        order.append(k)
        for j in children[k]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return order
