"""Collective measurements (nccl-tests style) and fitting a node's NCCL model to them.

The measurement file (``validation/collectives/*.json``) holds records of one
collective on one system: ranks, size, what NCCL ran (``auto``, ``ring`` with NVLS
off, or ``nvls``) and either nccl-tests' times or a bus bandwidth. The fit moves the
calibratable fields of the node's ``collectives`` section (see
:data:`PARAMETERS`) to minimise the same robust loss as kernel calibration
(:func:`accelsim.validate.calibrate.loss`), by coordinate descent with golden-section
line searches, on the records the fixed hash split puts in training
(:func:`accelsim.validate.calibrate.is_held_out`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.arch.collective_tuning import CollectiveTuning
from accelsim.arch.loader import put
from accelsim.arch.model import Cluster, Node, kind_name
from accelsim.errors import InputError, read_json_file, shown
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import BUS_FACTORS
from accelsim.results import CollectiveResult
from accelsim.validate.calibrate import coordinate_descent, is_held_out, loss
from accelsim.units import MEASURED_RANGE, is_measured_time


@dataclass(frozen=True, kw_only=True)
class CollectiveMeasurement:
    id: str
    system: str
    collective: str
    ranks: int
    size_bytes: float
    algorithm: str
    """What ran: ``auto`` (NCCL's choice), ``ring`` (NVLS off or NCCL_ALGO=Ring), ``nvls``."""
    time_s: float
    """The faster of nccl-tests' out-of-place and in-place times, or size / algbw."""
    source: str
    tool: str = "nccl-tests"
    """What measured it: ``nccl-tests``, ``torch.distributed`` or ``maintainer statement``."""
    fit: bool = True
    """False: never fitted (a cross-check: other GPU counts, approximate figures)."""
    overrides: tuple[str, ...] = ()
    """``--set`` overrides that make ``system`` the measured machine (a cluster's node count)."""

    @property
    def busbw_bytes_per_s(self) -> float:
        return self.size_bytes / self.time_s * BUS_FACTORS[self.collective](self.ranks)

    @property
    def simulated_algorithm(self) -> str:
        """``ring`` where NVLS was off (``ring/ll128`` where the protocol was pinned too),
        ``tree`` where NCCL_ALGO=Tree; NCCL's own choice is compared with ``auto``."""
        return self.algorithm if self.algorithm.startswith(("ring", "tree")) else "auto"


def load_measurements(path: Path) -> list[CollectiveMeasurement]:
    """Every record of a collectives file (``validation/collectives/*.json``: ``records``
    with ``system``, ``size_bytes``, and nccl-tests' times or a bus bandwidth)."""
    doc = read_json_file(path, "collective measurements")
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise InputError("expected a JSON object with a 'records' list", source=str(path))
    return [_collectives_record(r, str(path), k) for k, r in enumerate(doc["records"])]


def _field(r: dict, name: str, kind, source: str, where: str, positive: bool = True):
    value = r.get(name)
    if kind is str:
        if not isinstance(value, str) or not value:
            raise InputError("expected a non-empty string", source=source, field=f"{where}.{name}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or (positive and value <= 0) or (kind is int and value != int(value)):
        raise InputError(f"expected a positive {'whole number' if kind is int else 'number'}, got {shown(value)}",
                         source=source, field=f"{where}.{name}")
    return kind(value)


def _size(r: dict, name: str, source: str, where: str) -> float:
    """A collective's size: a byte at least (a buffer of 1e-300 bytes is no buffer)."""
    value = _field(r, name, float, source, where)
    if value < 1:
        raise InputError(f"expected a size of at least 1 byte, got {shown(r[name])}", source=source,
                         field=f"{where}.{name}")
    return value


def _time(r: dict, name: str, unit_s: float, source: str, where: str) -> float:
    """A record's time field ``name`` (in units of ``unit_s`` seconds), in seconds: a time
    a measurement can hold (:func:`~accelsim.units.is_measured_time`)."""
    value = _field(r, name, float, source, where)
    if not is_measured_time(value * unit_s):
        raise InputError(f"expected {MEASURED_RANGE}, got {shown(r[name])}{'' if unit_s == 1 else ' us'}",
                         source=source, field=f"{where}.{name}")
    return value * unit_s


def _kind(r: dict, name: str, source: str, where: str) -> str:
    kind = _field(r, name, str, source, where)
    if kind not in BUS_FACTORS:
        raise InputError(f"unknown collective {shown(kind)}; expected one of: {', '.join(BUS_FACTORS)}", source=source,
                         field=f"{where}.{name}")
    return kind


def _collectives_record(r: Any, source: str, k: int) -> CollectiveMeasurement:
    where = f"records[{k}]"
    if not isinstance(r, dict):
        raise InputError("expected a record object", source=source, field=where)
    collective, ranks = _kind(r, "collective", source, where), _field(r, "ranks", int, source, where)
    size = _size(r, "size_bytes", source, where)
    if "time_out_of_place_us" in r:
        time_s = min(_time(r, name, 1e-6, source, where) for name in ("time_out_of_place_us", "time_in_place_us"))
    else:
        time_s = size * BUS_FACTORS[collective](ranks) / (_field(r, "busbw_GBps", float, source, where) * 1e9)
        if not is_measured_time(time_s):
            raise InputError(f"size_bytes / busbw_GBps gives a time of {time_s:.3g} s; expected {MEASURED_RANGE}",
                             source=source, field=f"{where}.busbw_GBps")
    algorithm = r.get("algorithm", "auto")
    if algorithm not in ALGORITHMS_RAN:
        raise InputError(f"expected one of {', '.join(ALGORITHMS_RAN)}, got {shown(algorithm)}", source=source,
                         field=f"{where}.algorithm")
    overrides = r.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o for o in overrides):
        raise InputError("expected a list of PATH=VALUE overrides", source=source, field=f"{where}.overrides")
    return CollectiveMeasurement(id=_field(r, "id", str, source, where), system=_field(r, "system", str, source, where),
                                 collective=collective, ranks=ranks, size_bytes=size, algorithm=algorithm,
                                 time_s=time_s, source=str(r.get("source", source)), tool=str(r.get("tool", "nccl-tests")),
                                 fit=r.get("fit", True) is not False, overrides=tuple(overrides))


ALGORITHMS_RAN = ("auto", "ring", "nvls", "ring/ll128", "tree")
"""What a record says ran: NCCL's choice, a ring (NVLS off or ``NCCL_ALGO=Ring``), NVLS,
ring/LL128 (``NCCL_ALGO=Ring NCCL_PROTO=LL128``), a tree (``NCCL_ALGO=Tree``)."""


def load_system(system: str, overrides: Sequence[str] = ()) -> Node | Cluster:
    """The node or cluster ``system`` names, for comparing collective records on it."""
    from accelsim.arch.model import load_arch

    arch = load_arch(system, overrides)
    if not isinstance(arch, Node | Cluster):
        raise InputError(f"{arch.name!r} is a {kind_name(arch)}; collective records are compared on a "
                         f"GPU node or cluster (its NCCL model)", field="system")
    return arch


def system_chip(system: Node | Cluster) -> str:
    return (system.node if isinstance(system, Cluster) else system).chip.name


def load_node(system: str, overrides: Sequence[str] = ()) -> Node:
    """The node ``system`` names: collective records are fitted and compared on the node
    they were measured on (its NCCL model), so any other kind of system is refused."""
    from accelsim.arch.model import load_arch

    node = load_arch(system, overrides)
    if not isinstance(node, Node):
        raise InputError(f"{node.name!r} is a {kind_name(node)}; collective records are fitted and "
                         f"compared on a node (its NCCL model): give the node the runs were on", field="system")
    return node


PUBLISHED_SUFFIX = "-published"
"""Names the published figures of a system whose plain name is its fitted overlay
(``dgx-h100-published``; ``dgx-h100`` is ``dgx-h100-calibrated``, see
``docs/collectives.md``): records name the machine, the plain name."""


def machine_of(config: str) -> str:
    """The machine a system config models, as records name it: ``config`` less
    :data:`PUBLISHED_SUFFIX`."""
    return config.removesuffix(PUBLISHED_SUFFIX)


def node_records(paths: Sequence[str | Path], node: Node | Cluster, measured_on: str, exclude: Sequence[str] = (),
                 fitted_only: bool = False) -> list[CollectiveMeasurement]:
    """The records of ``measured_on`` (the node, or the one a calibrated node extends; its
    :func:`machine_of`) in ``paths``, less those whose tool contains an ``exclude`` text (and,
    with ``fitted_only``, the cross-checks a record marks ``fit: false``); refused when none is left."""
    measured_on = machine_of(measured_on)
    records = [m for m in read_collective_records(paths, measured_on, system_chip(node))
               if (m.fit or not fitted_only) and not any(text in m.tool for text in exclude)]
    if not records:
        raise InputError(f"no collective records of {shown(measured_on)} (collectives files naming it as 'system', or "
                         f"measurement files of family 'collective' measured on {system_chip(node)!r})"
                         + (" after --exclude" if exclude else ""), field="measurements")
    return records


def read_collective_records(paths: Sequence[str | Path], system: str, chip: str) -> list[CollectiveMeasurement]:
    """The records of ``system`` in ``paths`` (files, or folders of ``*.json``): collectives
    files (their ``system`` field names it; ``accelsim import nccl-tests`` writes them) and
    measurement-format files of the ``collective`` family (``validation/measure_collectives.py``;
    their ``device.arch`` is the system's ``chip``, each record's ranks its group)."""
    from accelsim.validate.compare import measurement_files

    out = []
    for path in measurement_files(paths):
        doc = read_json_file(path, "collective measurements")
        if isinstance(doc, dict) and doc.get("kind") == "measurements":
            if doc.get("family") != "collective":
                continue
            device = doc.get("device")
            if not isinstance(device, dict) or device.get("arch") != chip:
                continue
            records = doc.get("records")
            if not isinstance(records, list):
                raise InputError("expected a list of records", source=str(path), field="records")
            out.extend(_measured_record(r, system, str(path), k) for k, r in enumerate(records))
        elif isinstance(doc, dict) and isinstance(doc.get("records"), list):
            out.extend(m for m in load_measurements(path) if m.system == system)
        else:
            raise InputError("not a collectives file (a 'records' list) nor a measurement file of the 'collective' "
                             "family", source=str(path))
    return out


def _measured_record(r: Any, system: str, source: str, k: int) -> CollectiveMeasurement:
    where = f"records[{k}]"
    if not isinstance(r, dict) or not isinstance(r.get("params"), dict):
        raise InputError("expected a record with a 'params' object", source=source, field=where)
    params = r["params"]
    return CollectiveMeasurement(
        id=_field(r, "id", str, source, where), system=system, collective=_kind(params, "collective", source, where),
        ranks=_field(params, "ranks", int, source, f"{where}.params"),
        size_bytes=_size(params, "bytes", source, f"{where}.params"), algorithm="auto",
        time_s=_time(r, "latency_s", 1, source, where), source=f"{source}: {r.get('source', '')}".rstrip(": "),
        tool=str(r.get("implementation", "")))


def overlay(system: str, display_name: str, values: dict[str, dict], *, name: str, description: str) -> dict:
    """A node overlay that ``extends`` ``system`` with ``values`` (``collectives`` paths
    such as ``protocols.ll.base_latency``, each a ``{value, basis, source, note}`` leaf)."""
    collectives: dict = {}
    for path, leaf in values.items():
        put(collectives, path.split("."), leaf)
    return {"schema_version": 1, "kind": "node", "extends": system, "name": name,
            "display_name": f"{display_name} (calibrated collectives)", "description": description,
            "collectives": collectives}


def fitted_leaves(result: "CollectiveFit", parameters: Sequence["TuningParameter"], source: str,
                  note: str) -> dict[str, dict]:
    """The overlay leaves of what ``result`` moved, values written as ``--set`` takes them."""
    from accelsim.units import format_quantity

    leaves = {}
    for p in parameters:
        if p.path in result.values:
            text = format_quantity(result.values[p.path], p.unit) if p.unit else round(result.values[p.path], 4)
            start = format_quantity(result.start[p.path], p.unit) if p.unit else result.start[p.path]
            leaves[p.path] = {"value": text, "basis": "fitted", "source": source,
                              "note": f"value before fitting {start}; {note}"}
    return leaves


@dataclass(frozen=True)
class TuningParameter:
    """A calibratable field of a node's ``collectives`` section, with search bounds."""

    path: str
    """Dotted config path under ``collectives.`` (``protocols.ll.base_latency``)."""
    low: float
    high: float
    unit: str | None = None

    def get(self, t: CollectiveTuning) -> float | None:
        head, *rest = self.path.split(".")
        if head != "protocols":
            return getattr(t, _FIELDS[head])
        name, field = rest
        return getattr(t.protocols[name], _FIELDS[field]) if name in t.protocols else None

    def set(self, t: CollectiveTuning, value: float) -> CollectiveTuning:
        head, *rest = self.path.split(".")
        if head != "protocols":
            return dataclasses.replace(t, **{_FIELDS[head]: value})
        name, field = rest
        protocols = dict(t.protocols)
        protocols[name] = dataclasses.replace(protocols[name], **{_FIELDS[field]: value})
        return dataclasses.replace(t, protocols=protocols)


_FIELDS = {
    "link_efficiency": "link_efficiency", "nvls_efficiency": "nvls_efficiency", "nvls_latency": "nvls_latency_s",
    "base_latency": "base_latency_s", "step_latency": "step_latency_s",
    "max_bandwidth_per_rank": "max_bandwidth_per_rank_bytes_per_s", "channel_bandwidth": "channel_bytes_per_s",
}

PARAMETERS = (
    TuningParameter("link_efficiency", 0.5, 1.0),
    TuningParameter("protocols.ll.base_latency", 0.0, 30e-6, "seconds"),
    TuningParameter("protocols.ll128.base_latency", 0.0, 40e-6, "seconds"),
    TuningParameter("protocols.ll128.max_bandwidth_per_rank", 50e9, 450e9, "bytes_per_s"),
    TuningParameter("nvls_efficiency", 0.3, 1.0),
    TuningParameter("nvls_latency", 0.0, 150e-6, "seconds"),
    TuningParameter("channel_bandwidth", 2e9, 100e9, "bytes_per_s"),
)
"""What the fit moves. Step latencies stay at NCCL's figures: with one group size (8
ranks) only base + steps x step is seen, so the two cannot be told apart. Simple's
base latency stays too: NCCL never picks ring/Simple in the all-reduce records (small
sizes go LL / LL128, large ones NVLS), so they do not constrain it."""


def with_tuning(node: Node, tuning: CollectiveTuning) -> Node:
    return dataclasses.replace(node, collectives=tuning)


def with_values(node: Node, values: dict[str, float], parameters: Sequence[TuningParameter] = PARAMETERS) -> Node:
    """``node`` with the ``parameters`` named in ``values`` (by path) set to them."""
    tuning = node.collectives
    for p in parameters:
        if p.path in values:
            tuning = p.set(tuning, values[p.path])
    return with_tuning(node, tuning)


def log_errors(cases: Sequence[CollectiveMeasurement], node: Node) -> np.ndarray:
    """log(predicted time / measured time) per record, on ``node``."""
    topo = build_topology(node)
    return np.array([math.log(predict(topo, m).latency_s / m.time_s) for m in cases])


TOOL_CALL_OVERHEAD_S: dict[str, float] = {"torch.distributed": 20.6e-6}
"""What a measurement tool adds to each collective it times, beyond NCCL's own cost.
stas00/ml-engineering's ``all_reduce_bench.py`` (@744d01e1, ``timed_allreduce``) leaves a
``dist.barrier()``, records a CUDA event, calls ``dist.all_reduce`` once and records a
second event: the GPU idles while the host dispatches that one call (c10d's work and
stream bookkeeping, then NCCL's launch), so every interval holds one host dispatch.
nccl-tests times back-to-back calls whose launches hide behind the kernels before them,
so its records carry none. Fitted (robust loss on log time error) on the training split of
the DGX H200 torch.distributed series (15 of its 20 records, 32 KiB to 16 GiB), its NCCL
model as the plain name gives it: bus-bandwidth MAPE train 40.4% -> 3.7%, held out 27.0%
-> 2.6% (``python validation/report_collectives.py --fit-tool``); 20.4 -> 20.6 us since one
node follows NCCL's own choice (NVLS from 2 MiB): train 3.4%, held out 4.9%."""


def tool_overhead_s(tool: str) -> float:
    """Seconds ``tool`` adds to each timed collective (:data:`TOOL_CALL_OVERHEAD_S`; 0 for others)."""
    return TOOL_CALL_OVERHEAD_S.get(tool, 0.0)


def with_added_latency(result: CollectiveResult, seconds: float) -> CollectiveResult:
    """``result`` as a tool that adds ``seconds`` to the call would time it."""
    if not seconds:
        return result
    latency_s = result.latency_s + seconds
    algbw = result.size_bytes / latency_s
    return dataclasses.replace(result, latency_s=latency_s, algbw_bytes_per_s=algbw,
                               busbw_bytes_per_s=algbw * BUS_FACTORS[result.kind](result.ranks))


def predict(topo, m: CollectiveMeasurement, tool_overhead: float | None = None) -> CollectiveResult:
    """The collective of ``m`` on ``topo`` as ``m``'s tool times it (its per-call overhead
    added, or ``tool_overhead`` seconds where given)."""
    result = simulate_collective(topo, m.collective, m.size_bytes, m.simulated_algorithm, m.ranks)
    return with_added_latency(result, tool_overhead_s(m.tool) if tool_overhead is None else tool_overhead)


@dataclass
class CollectiveFit:
    start: dict[str, float]
    values: dict[str, float]
    """Fitted value per parameter path (only those the fit moved)."""
    train: list[CollectiveMeasurement]
    held_out: list[CollectiveMeasurement]
    evaluations: int
    node: Node
    """The node with the fitted values."""


def split(cases: Sequence[CollectiveMeasurement]) -> tuple[list, list]:
    return [c for c in cases if not is_held_out(c.id)], [c for c in cases if is_held_out(c.id)]


def fit(cases: Sequence[CollectiveMeasurement], node: Node, parameters: Sequence[TuningParameter] = PARAMETERS,
        *, sweeps: int = 8) -> CollectiveFit:
    """Fit ``parameters`` of ``node``'s NCCL model on the training split of ``cases``."""
    if node.collectives is None:
        raise InputError(f"{node.name!r} has no 'collectives' section to fit", source=node.name)
    train, held_out = split(cases)
    if not train:
        raise InputError("no training records: every record fell in the held-out split", source=node.name)
    active = [p for p in parameters if p.get(node.collectives) is not None]
    start = {p.path: p.get(node.collectives) for p in active}
    evaluations = 0

    def tuned(values: dict[str, float]) -> Node:
        return with_values(node, values, active)

    def train_loss(values: dict[str, float]) -> float:
        nonlocal evaluations
        evaluations += 1
        return loss(log_errors(train, tuned(values)))

    values = coordinate_descent(train_loss, active, start, sweeps)
    moved = {k: v for k, v in values.items() if not math.isclose(v, start[k], rel_tol=1e-3)}
    return CollectiveFit(start={k: start[k] for k in moved}, values=moved, train=train, held_out=held_out,
                         evaluations=evaluations, node=tuned(values))


