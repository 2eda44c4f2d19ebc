"""MLCommons Chakra execution traces (the JSON form of ``et_def.proto``) as a system trace.

One file per rank (see :func:`rank_files` for which is which). A file holds Chakra ``Node`` messages in any
of the JSON shapes tools write: a stream of concatenated JSON objects (what
``chakra_jsonizer`` writes with protobuf's ``MessageToJson``: a ``GlobalMetadata``
object first, then one object per node, camelCase keys, 64-bit integers as strings,
enums by name), a JSON array of nodes, or an object with a ``nodes`` array. Field
names may be camelCase (``dataDeps``) or snake_case (``data_deps``); enums may be names
or numbers.

What becomes what (see ``docs/system-trace-format.md``, section *Chakra*):

* ``COMP_NODE``: a GPU kernel: ``duration_micros`` when it is positive (measured), else
  the ``num_ops`` (flops) and ``tensor_size`` (bytes) attributes as a roofline estimate.
  Kernels run on the CUDA stream their ``stream`` attribute names (stream ``stream N``;
  one at a time in launch order, as a CUDA stream runs them), or on stream ``compute``
  when the trace gives none.
* CPU ops (``is_cpu_op``), ``METADATA_NODE``, ``INVALID_NODE`` and the storage, batch and
  checkpoint nodes take no device time, on stream ``host`` (the host thread), their
  dependencies kept.
* ``COMM_COLL_NODE``: ``comm_type`` and ``comm_size`` (bytes) on stream ``comm``,
  async (NCCL kernels run beside compute kernels; later nodes wait on their data
  deps). The group is the ranks given for its ``pg_name`` (``--group``, else the
  trace's ``process_group:init`` metadata node), or every rank (no ``pg_name``, or
  PyTorch's default group ``"0"``); ``pg_name`` is its communicator, so two process
  groups over the same ranks match on their own. ``BARRIER`` is a zero-byte all-reduce
  (a pure synchronisation).
* ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: ``comm_dst`` / ``comm_src``, ``comm_size`` and
  ``comm_tag`` (sends and recvs match per tag, as ASTRA-sim matches them).
* ``MEM_LOAD_NODE`` / ``MEM_STORE_NODE``: ``tensor_size`` bytes of HBM traffic
  (roofline).

Nodes are emitted in a dependency-respecting order (file order where the dependencies
allow), since ops on one stream of a system trace start in list order. Protobuf's JSON
leaves out fields that hold their default, so a node without ``id`` is node 0; only a
leading object with nothing but ``version`` and ``attr`` is the ``GlobalMetadata``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import (
    InputError,
    json_errors,
    read_text_file,
    reject_duplicate_keys,
    reject_json_constant,
    shown,
    shown_text,
)
from accelsim.importers import Imported, Importer
from accelsim.system.trace import Op, Program, SystemTrace, expand_devices

NODE_TYPES = ("INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE", "COMP_NODE",
              "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE", "STORAGE_NODE", "BATCH_NODE", "CHECKPOINT_NODE")
"""``et_def.proto`` ``NodeType``, in enum value order."""
COMM_TYPES = ("ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST", "ALL_TO_ALL",
              "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER")
"""``et_def.proto`` ``CollectiveCommType``, in enum value order."""
COLLECTIVE_OF = {
    "ALL_REDUCE": "all-reduce", "ALL_GATHER": "all-gather", "REDUCE_SCATTER": "reduce-scatter",
    "REDUCE_SCATTER_BLOCK": "reduce-scatter", "ALL_TO_ALL": "all-to-all", "BROADCAST": "broadcast",
    "BARRIER": "all-reduce",
}
COMPUTE_STREAM = "compute"
HOST_STREAM = "host"
COMM_STREAM = "comm"
HOST_NODES = ("METADATA_NODE", "INVALID_NODE", "STORAGE_NODE", "BATCH_NODE", "CHECKPOINT_NODE")
"""Node types that take no device time (storage I/O is not modelled)."""
DEFAULT_PROCESS_GROUP = "0"
"""PyTorch's default process group, every rank (ASTRA-sim reads it so too)."""


RANK_NUMBER = re.compile(r"\d+")


def rank_files(args: Sequence[str | Path]) -> tuple[list[Path], bool]:
    """The rank files ``import chakra`` was given, in rank order, and whether that order
    came from the files' names. A folder stands for the ``.json`` files in it. When every
    file's name holds a number (its last one: ``et_rank_12.json``, ``chakra.3.json``) and
    no two hold the same, ranks follow those numbers: a shell glob lists ``rank10`` before
    ``rank2``. Names that hold as many numbers each (``rank3_iter5.json``) use the last
    place where they all differ. Otherwise the files are ranks in the order given; a
    folder's files must be numbered, since a listing has no order of its own."""
    paths: list[Path] = []
    folders = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".json" and p.is_file())
            if not found:
                raise InputError("no .json files in this folder: expected one Chakra trace per rank", source=str(path))
            folders.append(str(path))
            paths.extend(found)
        else:
            paths.append(path)
    ranks = _rank_numbers([p.name for p in paths])
    if ranks is not None:
        order = sorted(range(len(paths)), key=lambda i: ranks[i])
        return [paths[i] for i in order], order != list(range(len(paths))) or bool(folders)
    if folders:
        raise InputError("cannot tell which file is which rank: give each file its rank number in its name "
                         "(rank0.json, rank1.json, ...), or list the files in rank order", source=folders[0])
    return paths, False


def _rank_numbers(names: list[str]) -> list[int] | None:
    """Each name's rank: the last number in it where every name's differs (``rank3.json``),
    or, when the names hold as many numbers each, the last place where they all differ
    (``rank3_iter5.json``, ``rank10_iter5.json``); None when no place tells them apart."""
    numbers = [[int(n) for n in RANK_NUMBER.findall(name)] for name in names]
    if not all(numbers):
        return None
    places = [-1]
    if len({len(found) for found in numbers}) == 1:
        places = list(range(-1, -len(numbers[0]) - 1, -1))
    for place in places:
        ranks = [found[place] for found in numbers]
        if len(set(ranks)) == len(ranks):
            return ranks
    return None


def import_chakra(paths: Sequence[str | Path], groups: Mapping[str, list[int]] | None = None,
                  name: str | None = None) -> SystemTrace:
    """Rank ``r`` is ``paths[r]``. ``groups`` maps a process-group name (the nodes'
    ``pg_name``) to its ranks; collectives without ``pg_name`` span every rank."""
    if not paths:
        raise InputError("give one Chakra trace file per rank", source="import chakra")
    n = len(paths)
    ranked = []
    for path in paths:
        nodes = _ordered(read_nodes(path), str(path))
        if not nodes:
            raise InputError("no nodes: expected a rank's Chakra execution trace", source=str(path))
        ranked.append(nodes)
    known = {name: ranks for nodes in ranked for name, ranks in _process_groups(nodes, n).items()}
    known.update(groups or {})
    programs = []
    for rank, (path, nodes) in enumerate(zip(paths, ranked)):
        names = {_int(_get(node, "id"), "id", str(path)): _op_name(node) for node in nodes}
        ops = [_op(node, names, n, known, str(path)) for node in nodes]
        programs.append(Program(name=f"rank{rank}", devices=[rank], ops=ops))
    return SystemTrace(
        schema_version=1, name=name or f"chakra ({n} ranks)", num_devices=n, programs=programs,
        metadata={"generator": "accelsim import chakra", "sources": [str(p) for p in paths]},
    )


# ------------------------------------------------------------------ reading


BINARY_HINT = ("a protobuf .et file? convert it first: chakra_jsonizer --input_filename X.et "
               "--output_filename X.json")
GLOBAL_METADATA_FIELDS = frozenset({"version", "attr"})
"""``et_def.proto`` ``GlobalMetadata``: what the first object of a jsonizer stream holds."""


def read_nodes(path: str | Path) -> list[dict]:
    """The node objects of one file. A leading object with only GlobalMetadata's fields
    is skipped; a node without ``id`` is node 0 (protobuf's JSON omits default values)."""
    path = Path(path)
    text = read_text_file(path, "Chakra trace", hint=BINARY_HINT).removeprefix("\ufeff")  # a byte-order mark
    if text.lstrip()[:1] not in ("{", "[", ""):
        raise InputError(f"not JSON text ({BINARY_HINT})", source=str(path))
    values = _json_values(text, str(path))
    if len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    elif len(values) == 1 and isinstance(values[0], dict) and "nodes" in values[0]:
        values = values[0]["nodes"]
        if not isinstance(values, list):
            raise InputError(f"expected a list of node objects, got {type(values).__name__}", source=str(path),
                             field="nodes")
    nodes = []
    for k, value in enumerate(values):
        if not isinstance(value, dict):
            raise InputError(f"expected a node object, got {type(value).__name__}", source=str(path), field=f"[{k}]")
        if k == 0 and "id" not in value and set(value) <= GLOBAL_METADATA_FIELDS:
            continue
        nodes.append(value if "id" in value else {**value, "id": 0})
    return nodes


def _json_values(text: str, source: str) -> list[Any]:
    """Every JSON value in ``text``: one document, or several written back to back."""
    decoder = json.JSONDecoder(parse_constant=reject_json_constant, object_pairs_hook=reject_duplicate_keys)
    values, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return values
        with json_errors(source):
            value, pos = decoder.raw_decode(text, pos)
        values.append(value)


def _get(node: Mapping, snake: str, default: Any = None) -> Any:
    """A field by its proto name or its protobuf-JSON (lowerCamelCase) name."""
    if snake in node:
        return node[snake]
    head, *rest = snake.split("_")
    return node.get(head + "".join(w.title() for w in rest), default)


def _list(node: Mapping, field: str, where: str, source: str) -> list:
    """A repeated field: a list (absent or null: empty)."""
    value = _get(node, field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {type(value).__name__}", source=source, field=f"{where}.{field}")
    return value


MAX_PROTO_INT = 2**64
"""Chakra's integers are protobuf int64 / uint64: a number past 64 bits is not one."""


def _int(value: Any, where: str, source: str, minimum: int | None = None) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
        number = int(value)
        if not -MAX_PROTO_INT < number < MAX_PROTO_INT:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"expected a 64-bit integer, got {shown(value)}", source=source, field=where) from None
    if minimum is not None and number < minimum:
        raise InputError(f"expected an integer of at least {minimum}, got {number}", source=source, field=where)
    return number


def _enum(value: Any, names: tuple[str, ...], where: str, source: str) -> str:
    if isinstance(value, str) and value in names:
        return value
    if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).isdigit() and int(value) < len(names):
        return names[int(value)]
    raise InputError(f"unknown value {shown(value)}; expected one of: {', '.join(names)}", source=source, field=where)


_VALUE_KEYS = ("int64_val", "uint64_val", "int32_val", "uint32_val", "sint64_val", "sint32_val", "fixed64_val",
               "fixed32_val", "sfixed64_val", "sfixed32_val", "double_val", "float_val", "bool_val", "string_val")


def _attrs(node: Mapping, where: str, source: str) -> dict[str, Any]:
    """``attr`` as name -> value, whichever ``*_val`` field holds it."""
    out = {}
    for i, attr in enumerate(_list(node, "attr", where, source)):
        if not isinstance(attr, Mapping):
            raise InputError(f"expected an attribute object, got {type(attr).__name__}", source=source,
                             field=f"{where}.attr[{i}]")
        name = attr.get("name")
        if not isinstance(name, str):
            raise InputError(f"expected the attribute's name (a string), got {shown(name)}", source=source,
                             field=f"{where}.attr[{i}].name")
        for key in _VALUE_KEYS:
            value = _get(attr, key)
            if value is not None:
                out[name] = value
                break
    return out


# ------------------------------------------------------------------ ordering


def _ordered(nodes: list[dict], source: str) -> list[dict]:
    """Nodes in file order where dependencies allow (Kahn's algorithm, earliest first);
    unknown dependencies and cycles are errors."""
    ids = [_int(_get(node, "id"), f"[{k}].id", source) for k, node in enumerate(nodes)]
    position = {}
    for k, node_id in enumerate(ids):
        if node_id in position:
            raise InputError(f"duplicate node id {node_id}", source=source, field=f"[{k}].id")
        position[node_id] = k
    waiting = [0] * len(nodes)
    users: list[list[int]] = [[] for _ in nodes]
    for k, node in enumerate(nodes):
        for dep in _deps(node, k, source):
            if dep not in position:
                raise InputError(f"node {ids[k]} depends on unknown node {dep}", source=source, field=f"[{k}]")
            users[position[dep]].append(k)
            waiting[k] += 1
    ready = [k for k in range(len(nodes)) if not waiting[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        stuck = min(k for k in range(len(nodes)) if waiting[k])
        raise InputError(f"dependency cycle through node {ids[stuck]}", source=source, field=f"[{stuck}]")
    return [nodes[k] for k in order]


def _deps(node: Mapping, k: int, source: str) -> list[int]:
    out = []
    for field in ("data_deps", "ctrl_deps"):
        out.extend(_int(d, f"[{k}].{field}", source) for d in _list(node, field, f"[{k}]", source))
    return sorted(set(out))


# ------------------------------------------------------------------ conversion


def _op_name(node: Mapping) -> str:
    return f"{_get(node, 'id')}:{node.get('name', '')}"


def _op(node: Mapping, names: Mapping[int, str], n: int, groups: Mapping[str, list[int]], source: str) -> Op:
    where = f"node {_get(node, 'id')}"
    kind = _enum(_get(node, "type", 0), NODE_TYPES, f"{where}.type", source)
    attrs = _attrs(node, where, source)
    common: dict[str, Any] = {"name": names[_int(_get(node, "id"), "id", source)]}
    for field, target in (("data_deps", "deps"), ("ctrl_deps", "ctrl_deps")):
        common[target] = sorted({names[_int(d, f"{where}.{field}", source)] for d in _list(node, field, where, source)})
    if kind in HOST_NODES or (kind == "COMP_NODE" and _truthy(attrs.get("is_cpu_op"))):
        return Op(kind="compute", stream=HOST_STREAM, flops=0.0, **common)
    if kind in ("COMP_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE"):
        stream = attrs.get("stream")
        name = COMPUTE_STREAM if stream is None else f"stream {_int(stream, f'{where}.attr.stream', source)}"
        return Op(kind="compute", stream=name, **common, **_compute_cost(node, kind, attrs, where, source))
    size = float(_int(attrs.get("comm_size", 0), f"{where}.attr.comm_size", source, 0))
    if kind == "COMM_COLL_NODE":
        comm = _enum(attrs.get("comm_type"), COMM_TYPES, f"{where}.attr.comm_type", source)
        if comm not in COLLECTIVE_OF:
            raise InputError(f"{comm} is not modelled; collectives modelled: {', '.join(COLLECTIVE_OF)}",
                             source=source, field=f"{where}.attr.comm_type")
        if comm == "BARRIER":
            size = 0.0
        elif "comm_size" not in attrs:
            raise InputError(f"collective {comm} needs the comm_size attribute (bytes)", source=source,
                             field=f"{where}.attr")
        pg_name = attrs.get("pg_name")
        return Op(kind=COLLECTIVE_OF[comm], stream=COMM_STREAM, is_async=True, bytes=size,
                  groups=[_group(pg_name, groups, n, where, source)],
                  communicator=None if pg_name is None else str(pg_name), **common)
    peer_key = "comm_dst" if kind == "COMM_SEND_NODE" else "comm_src"
    if peer_key not in attrs:
        raise InputError(f"a {kind} needs the {peer_key} attribute", source=source, field=f"{where}.attr")
    peer = _int(attrs[peer_key], f"{where}.attr.{peer_key}", source, 0)
    if peer >= n:
        raise InputError(f"rank {peer} is past the {n} ranks of the files given (give one file per rank, in "
                         "rank order)", source=source,
                         field=f"{where}.attr.{peer_key}")
    tag = attrs.get("comm_tag")
    return Op(kind="send" if kind == "COMM_SEND_NODE" else "recv", stream=COMM_STREAM, is_async=True,
              bytes=size, peer=peer, tag=None if tag is None else _int(tag, f"{where}.attr.comm_tag", source, 0),
              **common)


def _truthy(value: Any) -> bool:
    """A boolean attribute as any of its encodings writes it (bool, int64 or string)."""
    return value in (True, 1, "1", "true", "True")


def _compute_cost(node: Mapping, kind: str, attrs: dict, where: str, source: str) -> dict:
    duration_us = _int(_get(node, "duration_micros", 0), f"{where}.duration_micros", source, 0)
    if kind == "COMP_NODE" and duration_us > 0:
        return {"duration_s": duration_us / 1e6}
    flops = float(_int(attrs.get("num_ops", 0), f"{where}.attr.num_ops", source, 0)) if kind == "COMP_NODE" else 0.0
    nbytes = float(_int(attrs.get("tensor_size", 0), f"{where}.attr.tensor_size", source, 0))
    return {"flops": flops, "bytes": nbytes}


def _group(pg_name: Any, groups: Mapping[str, list[int]], n: int, where: str, source: str) -> list[int]:
    if pg_name is None:
        return list(range(n))
    if str(pg_name) in groups:
        return list(groups[str(pg_name)])
    if str(pg_name) in ("", DEFAULT_PROCESS_GROUP):
        return list(range(n))
    raise InputError(f"process group {shown(pg_name)} has no ranks; pass --group {shown_text(str(pg_name))}=RANKS "
                     "(e.g. 0-3)",
                     source=source, field=f"{where}.attr.pg_name")


PROCESS_GROUP_NODE = "process_group:init"
"""PyTorch's metadata node that lists every process group (its inputs' values: a JSON
list of ``{"pg_name", "ranks", ...}``, an empty ``ranks`` meaning every rank)."""


def _process_groups(nodes: list[dict], n: int) -> dict[str, list[int]]:
    """pg_name -> ranks from a ``process_group:init`` node, where the trace has one
    that can be read (anything else in it is left alone: ``--group`` can always say)."""
    found: dict[str, list[int]] = {}
    for node in nodes:
        if PROCESS_GROUP_NODE not in str(node.get("name", "")):
            continue
        text = (node.get("inputs") or {}).get("values") if isinstance(node.get("inputs"), dict) else None
        if not isinstance(text, str) or "[{" not in text:
            continue
        # the converter writes Python's repr of a list holding the JSON text: take the JSON
        try:
            entries = json.loads(text[text.index("[{"): text.rindex("}]") + 2])
        except (ValueError, json.JSONDecodeError):
            continue
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or "pg_name" not in entry:
                continue
            ranks = entry.get("ranks")
            if isinstance(ranks, list) and all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n
                                               for r in ranks):
                found.setdefault(str(entry["pg_name"]), sorted(ranks) if ranks else list(range(n)))
    return found


def parse_group_option(text: str) -> tuple[str, list[int]]:
    """``"tp0=0-3,8"`` -> ``("tp0", [0, 1, 2, 3, 8])``."""
    name, sep, ranks = text.partition("=")
    try:
        if not (sep and name):
            raise ValueError
        return name, expand_devices([int(r) if r.strip().isdigit() else r.strip() for r in ranks.split(",")])
    except ValueError:
        raise InputError(f"expected NAME=RANKS like 'tp0=0-3,8', got {shown(text)}", field="group") from None


# ------------------------------------------------------------------ accelsim import chakra


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="one trace per rank, or a folder of them: ranks follow the numbers in the file names "
                        "(rank0.json ... rank11.json) when every name has its own, else the order given")
    p.add_argument("--group", action="append", default=[], metavar="NAME=RANKS",
                   help="ranks of a process group that nodes name in pg_name, e.g. tp0=0-3 (repeatable)")


def _group_options(texts: Sequence[str], files: int) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for text in texts:
        name, ranks = parse_group_option(text)
        if name in groups:
            raise InputError(f"process group {shown(name)} is given twice", field="group")
        if len(set(ranks)) != len(ranks):
            raise InputError(f"process group {shown(name)} names a rank twice: {shown(text)}", field="group")
        past = [r for r in ranks if r >= files]
        if past:
            raise InputError(f"process group {shown(name)} names rank {past[0]}, but there are {files} rank "
                             f"files (ranks 0-{files - 1})", field="group")
        groups[name] = ranks
    return groups


def _convert(args: argparse.Namespace) -> Imported:
    files, renumbered = rank_files(args.files)
    trace = import_chakra(files, _group_options(args.group, len(files)))
    if not renumbered:
        return Imported(trace)
    order = (f"ranks from the file names: {', '.join(f'{r}={f.name}' for r, f in enumerate(files[:4]))}"
             + (f", ... {len(files) - 1}={files[-1].name}" if len(files) > 4 else ""))
    return Imported(trace, (order,))


IMPORTER = Importer(
    name="chakra", help="MLCommons Chakra execution traces (JSON form of et_def.proto), one file per rank",
    add_arguments=_add_arguments, inputs=lambda args: rank_files(args.files)[0], convert=_convert,
    hint=" (give one file per rank, in rank order, and every --group's ranks)", options_of_fields={"group": "--group"},
)
