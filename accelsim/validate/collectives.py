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

import numpy as np

from accelsim.arch.collective_tuning import CollectiveTuning
from accelsim.arch.model import Node
from accelsim.errors import InputError, read_json_file
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import BUS_FACTORS
from accelsim.validate.calibrate import coordinate_descent, is_held_out, loss


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

    @property
    def busbw_bytes_per_s(self) -> float:
        return self.size_bytes / self.time_s * BUS_FACTORS[self.collective](self.ranks)

    @property
    def simulated_algorithm(self) -> str:
        """``ring`` where NVLS was off; NCCL's own choice is compared with ``auto``."""
        return "ring" if self.algorithm == "ring" else "auto"


def load_measurements(path: Path) -> list[CollectiveMeasurement]:
    doc = read_json_file(path, "collective measurements")
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object with a 'records' list", source=str(path))
    out = []
    for r in doc.get("records", []):
        size = float(r["size_bytes"])
        if "time_out_of_place_us" in r:
            time_s = min(r["time_out_of_place_us"], r["time_in_place_us"]) * 1e-6
        else:
            time_s = size * BUS_FACTORS[r["collective"]](r["ranks"]) / (r["busbw_GBps"] * 1e9)
        out.append(CollectiveMeasurement(id=r["id"], system=r["system"], collective=r["collective"], ranks=r["ranks"],
                                         size_bytes=size, algorithm=r["algorithm"], time_s=time_s, source=r["source"],
                                         tool=r.get("tool", "nccl-tests"), fit=r.get("fit", True) is not False))
    return out


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
    "max_bandwidth_per_rank": "max_bandwidth_per_rank_bytes_per_s",
}

PARAMETERS = (
    TuningParameter("link_efficiency", 0.5, 1.0),
    TuningParameter("protocols.ll.base_latency", 0.0, 30e-6, "seconds"),
    TuningParameter("protocols.ll128.base_latency", 0.0, 40e-6, "seconds"),
    TuningParameter("protocols.ll128.max_bandwidth_per_rank", 50e9, 450e9, "bytes_per_s"),
    TuningParameter("nvls_efficiency", 0.3, 1.0),
    TuningParameter("nvls_latency", 0.0, 150e-6, "seconds"),
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


def predict(topo, m: CollectiveMeasurement):
    return simulate_collective(topo, m.collective, m.size_bytes, m.simulated_algorithm, m.ranks)


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


