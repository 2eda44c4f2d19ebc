"""Replica groups and source-target pairs of HLO collectives, as lists of device ids.

HLO writes the groups of a collective in one of three forms:

* explicit: ``{{0,1,2,3},{4,5,6,7}}`` (``{}`` means everyone);
* iota: ``[G,S]<=[d0,d1,...]T(p0,p1,...)``: ``arange(prod(d)).reshape(d).transpose(p)``
  reshaped to ``G`` groups of ``S``;
* mesh axes (newer XLA): ``mesh['x'=2,'y'=4] {'x'}``, optionally with
  ``device_ids=(...)`` and sub-axes ``'x':(pre)size``: the devices that differ only
  along the named axes form a group.

What the ids mean depends on the collective's mode (XLA's ``CollectiveOpGroupMode``):
without ``channel_id`` they are replica ids (cross-replica); with a ``channel_id`` and
``use_global_device_ids=true`` they are global device ids (flattened); with a
``channel_id`` and no ``use_global_device_ids`` they are partition ids for ops that have
no such flag (all-to-all, collective-permute) and replica ids spanning all partitions
for those that do (all-reduce, all-gather, reduce-scatter). :func:`device_groups`
turns any of these into groups of global device ids
``replica * num_partitions + partition``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from accelsim.arch.model import MAX_SYSTEM_CHIPS
from accelsim.importers.hlo_text import split_top, strip_braces

Groups = tuple[tuple[int, ...], ...]

HAS_GLOBAL_IDS_FLAG = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-reduce-start",
                                  "all-gather-start"})
"""Opcodes whose printed form carries ``use_global_device_ids`` (absent means false)."""

_IOTA = re.compile(r"^\[([\d,\s]+)\]<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?$")
_MESH = re.compile(r"^mesh\[(?P<axes>[^\]]*)\](?:\s*,\s*device_ids=\((?P<ids>[^)]*)\))?\s*\{(?P<group>[^}]*)\}$")
_AXIS_REF = re.compile(r"^'?(?P<name>[^':]+)'?(?::\((?P<pre>\d+)\)(?P<size>\d+))?$")


class GroupSyntaxError(ValueError):
    """The replica-group text matches none of the known forms."""


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.replace(" ", "").split(",") if t]


def parse_groups(text: str) -> Groups:
    """Replica groups as written (ids in the mode's id space); ``()`` means one group of all."""
    text = text.strip()
    if text.startswith("["):
        return _iota_groups(text)
    if text.startswith("mesh"):
        return _mesh_groups(text)
    if text.startswith("{"):
        inner = strip_braces(text)
        try:
            return tuple(tuple(_ints(strip_braces(g))) for g in split_top(inner))
        except ValueError as exc:
            raise GroupSyntaxError(f"expected groups like {{{{0,1}},{{2,3}}}}, got {text[:40]!r}") from exc
    raise GroupSyntaxError(f"expected {{{{0,1}},...}}, [G,S]<=[N] or mesh[...] {{axes}}, got {text[:40]!r}")


def _check_device_count(count: int, text: str) -> None:
    """Refuse a group list over more devices than any system has, before expanding it."""
    if count > MAX_SYSTEM_CHIPS:
        raise GroupSyntaxError(f"{text[:60]!r} spans {count:,} devices; systems have at most {MAX_SYSTEM_CHIPS:,}")


def _iota_groups(text: str) -> Groups:
    m = _IOTA.match(text.replace(" ", ""))
    if not m:
        raise GroupSyntaxError(f"expected an iota group list like [2,4]<=[8] or [4,2]<=[2,4]T(1,0), got {text!r}")
    shape, reshape = _ints(m.group(1)), _ints(m.group(2))
    perm = _ints(m.group(3)) if m.group(3) else list(range(len(reshape)))
    if len(shape) != 2 or math.prod(shape) != math.prod(reshape) or sorted(perm) != list(range(len(reshape))):
        raise GroupSyntaxError(f"inconsistent iota group list {text!r}")
    _check_device_count(math.prod(reshape), text)
    ids = np.arange(math.prod(reshape)).reshape(reshape).transpose(perm).reshape(shape)
    return tuple(tuple(int(d) for d in row) for row in ids)


def _mesh_groups(text: str) -> Groups:
    m = _MESH.match(text.strip())
    if not m:
        raise GroupSyntaxError(f"expected mesh['x'=2,...] {{'x'}}, got {text[:60]!r}")
    names, sizes = [], []
    for axis in split_top(m.group("axes")):
        name, _, size = axis.partition("=")
        names.append(name.strip().strip("'\""))
        sizes.append(int(size))
    total = math.prod(sizes)
    _check_device_count(total, text)
    devices = np.array(_ints(m.group("ids"))) if m.group("ids") else np.arange(total)
    if devices.size != total:
        raise GroupSyntaxError(f"mesh device_ids has {devices.size} ids for {total} devices: {text[:60]!r}")
    refs = []
    for ref in split_top(m.group("group")):
        r = _AXIS_REF.match(ref.strip())
        if not r or r.group("name") not in names:
            raise GroupSyntaxError(f"unknown mesh axis {ref!r} in {text[:60]!r}")
        dim = names.index(r.group("name"))
        refs.append((dim, int(r.group("pre")) if r.group("pre") else None, int(r.group("size") or sizes[dim])))
    return _groups_over_axes(devices, sizes, refs)


def _groups_over_axes(devices: np.ndarray, sizes: list[int], refs: list[tuple[int, int | None, int]]) -> Groups:
    """Split every mesh axis into the sub-axes the refs name, then gather the named ones."""
    split_dims: list[int] = []
    grouped: dict[tuple[int, int | None], int] = {}
    for dim, size in enumerate(sizes):
        cuts = sorted((pre, sub) for d, pre, sub in refs if d == dim and pre is not None)
        whole = any(d == dim and pre is None for d, pre, _ in refs)
        if whole:
            grouped[(dim, None)] = len(split_dims)
            split_dims.append(size)
            continue
        done = 1
        for pre, sub in cuts:
            if pre != done:
                split_dims.append(pre // done)
            grouped[(dim, pre)] = len(split_dims)
            split_dims.append(sub)
            done = pre * sub
        if done != size:
            split_dims.append(size // done)
    group_axes = [grouped[(dim, pre)] for dim, pre, _ in refs]
    others = [i for i in range(len(split_dims)) if i not in group_axes]
    per_group = math.prod(split_dims[i] for i in group_axes)
    arranged = devices.reshape(split_dims).transpose(others + group_axes).reshape(-1, per_group)
    return tuple(tuple(int(d) for d in row) for row in arranged)


def parse_pairs(text: str) -> tuple[tuple[int, int], ...]:
    """``{{0,1},{1,2}}`` -> ``((0, 1), (1, 2))``."""
    pairs = []
    for part in split_top(strip_braces(text)):
        ids = _ints(strip_braces(part))
        if len(ids) != 2:
            raise GroupSyntaxError(f"expected source-target pairs like {{{{0,1}},{{1,2}}}}, got {text[:40]!r}")
        pairs.append((ids[0], ids[1]))
    return tuple(pairs)


def group_mode(opcode: str, attrs: dict[str, str]) -> str:
    """``cross_replica``, ``cross_partition``, ``cross_replica_and_partition`` or ``flattened_id``."""
    if "channel_id" not in attrs:
        return "cross_replica"
    flag = attrs.get("use_global_device_ids")
    if flag == "true":
        return "flattened_id"
    base = opcode.removesuffix("-start")
    if base in {op.removesuffix("-start") for op in HAS_GLOBAL_IDS_FLAG}:
        return "cross_replica_and_partition"
    return "cross_partition"


def device_groups(groups: Groups, mode: str, replica_count: int, num_partitions: int) -> Groups:
    """Groups of global device ids (``replica * num_partitions + partition``), sorted by first id."""
    devices = replica_count * num_partitions
    out: list[tuple[int, ...]] = []
    if mode == "flattened_id":
        out = list(groups) if groups else [tuple(range(devices))]
    elif mode == "cross_replica":
        replica_sets = groups or (tuple(range(replica_count)),)
        out = [tuple(r * num_partitions + p for r in g) for p in range(num_partitions) for g in replica_sets]
    elif mode == "cross_partition":
        partition_sets = groups or (tuple(range(num_partitions)),)
        out = [tuple(r * num_partitions + p for p in g) for r in range(replica_count) for g in partition_sets]
    elif mode == "cross_replica_and_partition":
        replica_sets = groups or (tuple(range(replica_count)),)
        out = [tuple(r * num_partitions + p for r in g for p in range(num_partitions)) for g in replica_sets]
    else:
        raise ValueError(f"unknown collective group mode {mode!r}")
    for group in out:
        for d in group:
            if not 0 <= d < devices:
                raise GroupSyntaxError(f"device id {d} outside the module's {devices} devices")
    return tuple(sorted(out))


def device_pairs(pairs: tuple[tuple[int, int], ...], mode: str, replica_count: int,
                 num_partitions: int) -> tuple[tuple[int, int], ...]:
    """Source-target pairs of a collective-permute as global device ids."""
    devices = replica_count * num_partitions
    if mode == "cross_replica":
        out = [(s * num_partitions + p, t * num_partitions + p) for p in range(num_partitions) for s, t in pairs]
    else:
        out = [(r * num_partitions + s, r * num_partitions + t) for r in range(replica_count) for s, t in pairs]
    for s, t in out:
        if not (0 <= s < devices and 0 <= t < devices):
            raise GroupSyntaxError(f"pair ({s},{t}) outside the module's {devices} devices")
    return tuple(out)
