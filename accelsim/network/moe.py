"""MoE expert-parallel all-to-all: who sends what to whom, and how it moves.

A MoE layer's dispatch sends each token to the ranks holding the experts its router
picked; combine sends the expert outputs back the same way (the transpose). The traffic
is a per-pair byte matrix: read from a file, or the expected matrix of a router that
picks ``top_k`` of ``experts`` spread evenly over the ranks, optionally node-limited
(DeepSeek-V3's group-limited gating: each token first keeps ``node_limit`` of the nodes,
then picks its experts among theirs). Expected values, not one random draw, so the
result is deterministic and is what a long run averages to.

Three ways to move it (:data:`MODES`):

* ``nccl``: NCCL's all-to-all (``ncclSend`` / ``ncclRecv`` per pair): every pair's bytes
  on its route, a token once per destination rank.
* ``deepep``: DeepEP's normal kernels (github.com/deepseek-ai/DeepEP, ``csrc/kernels``
  intranode and internode): within a node over NVLink; across nodes a token goes once per
  destination node over RDMA, to the GPU with the sender's local index there (its rail),
  which forwards it over NVLink to the destination GPUs of that node. The two legs are
  pipelined (chunks), so they share one phase. Each token carries its routing beside it
  on every hop (:func:`deepep_message_bytes`).
* ``deepep-ll``: DeepEP's low-latency kernels: every (token, expert) selection straight to
  its expert's rank (no deduplication, no forwarding), RDMA across nodes; they receive
  after a grid sync, one HBM-bound pass over what arrived (:func:`low_latency_receive_s`,
  ``csrc/kernels/legacy/internode_ll.cu`` @ dd758caf). Within a node they store over NVLink
  since DeepEP#173 (June 2025); before it, and with ``nvlink=False`` (DeepEP's
  ``allow_nvlink_for_low_latency_mode``), every message is an RDMA put through the NICs,
  the own node's peers included (:class:`NicsOnly`).

Each carries an SM budget (how many SMs the kernels hold while they run; DeepEP V1 uses
20 for normal kernels by default, NCCL one per channel, DeepEP's low-latency kernels
nearly the whole GPU), recorded in the result so that a replay can take them from
compute (``docs/collectives.md``). The budget also bounds the transfers: the bytes a
rank's SMs copy move no faster than the SMs doing that copy can issue them
(:func:`sm_issue_caps`: SMs in the role x what one SM moves, NCCL's per-channel ceiling
for the GPU's generation). Bytes a NIC reads itself (DeepEP's RDMA puts) are bounded by the
NIC, not by the SMs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accelsim.errors import InputError, read_json_file, shown
from accelsim.network.collectives import Phase, Plan, Stream, link_loads, phase, plan
from accelsim.network.simulate import run_plans
from accelsim.network.sm_issue import sender, senders, sm_copy_bytes_per_s
from accelsim.network.topology import ClusterTopology, Topology, nic_down, nic_up
from accelsim.units import ps_to_seconds

MODES = ("nccl", "deepep", "deepep-ll")
KINDS = ("dispatch", "combine")
MAX_RANKS = 256
"""Most ranks a dispatch is simulated over: DeepEP's largest published run (EP 256) is
65,280 streams and about a minute on one core; 512 ranks (a quarter million streams) outgrow
the memory of a small machine."""
MAX_TOKENS = 2**20
MAX_TOKEN_BYTES = 2**30
MAX_EXPERTS = 2**16
MAX_PAIR_BYTES = 2**40
"""A traffic matrix's largest byte count from one rank to another: 1 TiB, past any MoE layer's."""


def _check_kind(kind: str) -> None:
    """``kind`` is one of :data:`KINDS`, else one line naming it."""
    if kind not in KINDS:
        raise InputError(f"expected one of: {', '.join(KINDS)}, got {shown(kind)}", field="kind")


@dataclass(frozen=True, kw_only=True)
class Routing:
    """A router's choices, per rank: ``tokens`` each of ``token_bytes``."""

    tokens: int
    token_bytes: float
    top_k: int
    experts: int
    node_limit: int | None = None
    """Nodes a token may use (DeepSeek-V3: 4); None: any."""

    def check(self, ranks: int, ranks_per_node: int) -> None:
        """Refuse choices no router makes on ``ranks`` ranks, naming the field (``routing.NAME``)."""
        if not 1 <= self.experts <= MAX_EXPERTS:
            raise InputError(f"experts must be 1 to {MAX_EXPERTS}, got {self.experts}", field="routing.experts")
        if self.experts % ranks:
            raise InputError(f"{self.experts} experts do not spread evenly over {ranks} ranks", field="routing.experts")
        if not 1 <= self.top_k <= self.experts:
            raise InputError(f"top_k must be 1 to {self.experts}, got {self.top_k}", field="routing.top_k")
        nodes = ranks // ranks_per_node
        if self.node_limit is not None and not 1 <= self.node_limit:
            raise InputError(f"node_limit must be at least 1, got {self.node_limit}", field="routing.node_limit")
        allowed = min(self.node_limit or nodes, nodes) * self.experts // nodes
        if self.top_k > allowed:
            raise InputError(f"top_k {self.top_k} exceeds the {allowed} experts a token may reach",
                             field="routing.top_k")


ROUTING_FIELDS = {"tokens": MAX_TOKENS, "token_bytes": MAX_TOKEN_BYTES, "top_k": MAX_EXPERTS,
                  "experts": MAX_EXPERTS, "node_limit": MAX_RANKS}
"""The router's fields as text gives them (``tokens=4096``), each a whole number from 1 to its bound."""


def routing_of(values: dict[str, str]) -> Routing:
    """A :class:`Routing` from ``NAME -> text`` (``node_limit`` optional), each a whole
    number within :data:`ROUTING_FIELDS`' bound; an error names ``routing.NAME``."""
    unknown = sorted(set(values) - set(ROUTING_FIELDS))
    if unknown:
        raise InputError(f"unknown field {shown(unknown[0])}; known: {', '.join(ROUTING_FIELDS)}", field="routing")
    missing = [name for name in ROUTING_FIELDS if name != "node_limit" and name not in values]
    if missing:
        raise InputError(f"needs {', '.join(missing)} (NAME=VALUE each)", field="routing")
    numbers = {}
    for name, text in values.items():
        bound = ROUTING_FIELDS[name]
        digits = text.lstrip("0")
        if not (text.isascii() and text.isdigit() and len(digits) <= 12 and 1 <= int(digits or "0") <= bound):
            raise InputError(f"expected a whole number from 1 to {bound}, got {shown(text)}", field=f"routing.{name}")
        numbers[name] = int(digits)
    return Routing(**numbers)


def _miss(allowed: int, away: int, k: int) -> float:
    """Chance that none of ``k`` experts picked uniformly among ``allowed`` lies in a set of ``away``."""
    return math.comb(allowed - away, k) / math.comb(allowed, k) if allowed - away >= k else 0.0


def hit_chances(r: Routing, ranks: int, ranks_per_node: int) -> tuple[float, float]:
    """(chance a token reaches a given rank, chance it reaches a given node)."""
    r.check(ranks, ranks_per_node)
    nodes = ranks // ranks_per_node
    kept = min(r.node_limit or nodes, nodes)
    node_chosen = kept / nodes
    allowed = kept * r.experts // nodes
    per_rank, per_node = r.experts // ranks, r.experts // nodes
    return node_chosen * (1 - _miss(allowed, per_rank, r.top_k)), node_chosen * (1 - _miss(allowed, per_node, r.top_k))


def expected_matrix(r: Routing, ranks: int, ranks_per_node: int) -> np.ndarray:
    """Bytes rank ``i`` sends rank ``j`` in a dispatch (a token once per destination rank)."""
    rank_hit, _ = hit_chances(r, ranks, ranks_per_node)
    return np.full((ranks, ranks), r.tokens * rank_hit * r.token_bytes)


def load_matrix(path: str | Path, ranks: int) -> np.ndarray:
    """A ``{"bytes": [[...], ...]}`` file: ``ranks`` rows of ``ranks`` non-negative byte counts."""
    doc = read_json_file(Path(path), "traffic matrix")
    rows = doc.get("bytes") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or len(rows) != ranks or len(rows) > MAX_RANKS:
        raise InputError(f"expected 'bytes': a list of {ranks} rows (at most {MAX_RANKS})", source=str(path),
                         field="bytes")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != ranks or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= MAX_PAIR_BYTES for v in row):
            raise InputError(f"expected {ranks} non-negative byte counts, each at most {MAX_PAIR_BYTES} (1 TiB)",
                             source=str(path), field=f"bytes[{i}]")
    return np.array(rows, dtype=float)


def matrix_text(matrix: np.ndarray) -> str:
    """A matrix in the file form :func:`load_matrix` reads."""
    return json.dumps({"bytes": matrix.tolist()})


@dataclass(frozen=True, kw_only=True)
class MoeTimes:
    """Where a MoE all-to-all's time goes: each part as it would take alone. The simulated
    time is no less than :attr:`bound_s` (the bandwidth parts overlap, the rest adds) and,
    where every rank's traffic is alike, close to it."""

    fixed_s: float
    """Launch and step latencies (NCCL's, as for every GPU collective here)."""
    nvlink_s: float
    """The busiest NVLink link's load over its bandwidth."""
    network_s: float
    """The busiest NIC link's load over its bandwidth."""
    issue_s: float
    """The slowest stream at its rate cap: what the SMs that issue it copy (:func:`sm_issue_caps`)."""
    receive_s: float
    """The low-latency kernels' pass over what arrived (:func:`low_latency_receive_s`); 0 elsewhere."""

    @property
    def bound_s(self) -> float:
        return self.fixed_s + max(self.nvlink_s, self.network_s, self.issue_s) + self.receive_s

    def as_dict(self) -> dict:
        return {"fixed_s": self.fixed_s, "nvlink_s": self.nvlink_s, "network_s": self.network_s,
                "issue_s": self.issue_s, "receive_s": self.receive_s}


def part_times(topo: Topology, p: Plan, receive_s: float = 0.0) -> MoeTimes:
    """:class:`MoeTimes` of the one-lane plan ``p`` on ``topo``."""
    busiest = {False: 0.0, True: 0.0}
    for name, load in link_loads(p).items():
        link = topo.links[name]
        busiest[link.scale_out] = max(busiest[link.scale_out], load / link.bandwidth_bytes_per_s)
    phases = [ph for lane in p.lanes for ph in lane]
    issue = max((t.bytes / t.max_bytes_per_s for ph in phases for t in ph.transfers), default=0.0)
    return MoeTimes(fixed_s=p.launch_s + sum(ph.latency_s for ph in phases), nvlink_s=busiest[False],
                    network_s=busiest[True], issue_s=issue, receive_s=receive_s)


@dataclass(frozen=True, kw_only=True)
class MoeResult:
    mode: str
    latency_s: float
    ranks: int
    sm_budget: int
    """SMs the kernels hold while they run (compute on the same GPU gets the rest)."""
    nvlink_bytes_per_rank: float
    network_bytes_per_rank: float
    times: MoeTimes
    """Where the time goes (:func:`part_times`)."""

    def as_dict(self) -> dict:
        return {"mode": self.mode, "latency_s": self.latency_s, "ranks": self.ranks, "sm_budget": self.sm_budget,
                "nvlink_bytes_per_rank": self.nvlink_bytes_per_rank,
                "network_bytes_per_rank": self.network_bytes_per_rank, "times": self.times.as_dict()}


DEFAULT_SM_BUDGET = {"nccl": 16, "deepep": 20}
"""SMs held when the caller gives none: NCCL's channels on one NVSwitch node (16, one SM
each); DeepEP V1's ``Buffer.num_sms`` default for normal kernels (20, ``deep_ep/buffer.py``).
The low-latency kernels' count follows from the experts and the GPU
(:func:`low_latency_sms`)."""


def low_latency_sms(experts: int, device_sms: int) -> int:
    """SMs DeepEP V1's low-latency kernels launch on: one warp group per expert, as few
    groups per SM as fit the GPU (``csrc/kernels/legacy/internode_ll.cu`` @ dd758caf,
    ``num_warp_groups = ceil_div(num_experts, num_device_sms)``, ``num_sms =
    ceil_div(num_experts, num_warp_groups)``): 128 of H800's 132 SMs for 256 experts."""
    if experts < 1 or device_sms < 1:
        raise InputError(f"experts and device SMs must be at least 1, got {experts} and {device_sms}", field="experts")
    groups = -(-experts // device_sms)
    return -(-experts // groups)


def _roles(mode: str, budget: int) -> dict[bool, int]:
    """SMs that issue a rank's bytes, by whether the bytes cross the network. NCCL: every
    channel's SM copies all its bytes. DeepEP normal kernels split the budget in two
    (``num_channels = num_sms / 2``, ``csrc/kernels/legacy/intranode.cu`` and
    ``internode.cu``): half send over NVLink (intranode senders, internode forwarders,
    which also carry the own node's tokens), half stage the RDMA sends. Low-latency: every
    SM copies its tokens to NVLink peers; RDMA puts are read by the NIC (IBGDA), no SM cap."""
    if mode == "nccl":
        return {False: budget, True: budget}
    if mode == "deepep":
        half = max(budget // 2, 1)
        return {False: half, True: half}
    return {False: budget}


def _over_nics(topo: Topology, src: int, dst: int) -> bool:
    """Whether a stream leaves through a NIC (its route crosses a scale-out link)."""
    return src != dst and any(topo.links[name].scale_out for name in topo.route(src, dst))


def sm_issue_caps(topo: Topology, mode: str, budget: int, streams: list[Stream]) -> list[float]:
    """Each stream's rate cap from the SMs that issue it: a rank's bytes of one role share
    that role's SMs x :func:`sm_copy_bytes_per_s` in proportion to their bytes (so that
    they finish together where the SMs bind, as :func:`~accelsim.network.collectives.phase`
    shares a protocol's cap). NCCL's SMs issue a rank's NVLink and network bytes alike, so
    its cap is over both."""
    per_sm = sm_copy_bytes_per_s(topo)
    roles = _roles(mode, budget)
    remote = [_over_nics(topo, s, d) for s, d, _ in streams]
    key = [(s, False if mode == "nccl" else r) for (s, _, _), r in zip(streams, remote)]
    totals: dict[tuple[int, bool], float] = {}
    for k, (s, d, nbytes) in zip(key, streams):
        if s != d and nbytes > 0:
            totals[k] = totals.get(k, 0.0) + nbytes
    caps = []
    for k, r, (_, _, nbytes) in zip(key, remote, streams):
        sms = roles.get(r)
        caps.append(math.inf if per_sm is None or sms is None or nbytes <= 0 else sms * per_sm * nbytes / totals[k])
    return caps


RDMA_PUT_EFFICIENCY = 47 / 50
"""Share of a 400 Gb/s ConnectX-7's 50 GB/s that NVSHMEM's puts (DeepEP's RDMA transport)
reach between nodes: "when running shmem_put_bw between nodes, we get the expected bandwidth
of around 47 GB/s" (github.com/deepseek-ai/DeepEP/issues/155, NVSHMEM's perftest); an NVIDIA
maintainer expects the same 46-48 GB/s per NDR NIC of NCCL (github.com/NVIDIA/nccl-tests/issues/290).
NCCL's all-to-all keeps the line rate, as every NCCL collective here does
(docs/collectives.md)."""


def _held(topo: Topology, mode: str, ph: Phase, streams: list[Stream], caps: list[float]) -> Phase:
    """``ph`` (built by ``phase`` from ``streams``, in their order) with each stream's
    transfers held to its SM cap (split as the stream is over its routes) and, for DeepEP's
    kernels, its network legs to NVSHMEM's put bandwidth (:data:`RDMA_PUT_EFFICIENCY`)."""
    transfers = iter(ph.transfers)
    out = []
    for (src, dst, nbytes), cap in zip(streams, caps):
        if nbytes <= 0 or src == dst:
            continue
        nvshmem = mode != "nccl" and _over_nics(topo, src, dst)
        for share, _ in topo.routes(src, dst):
            t = next(transfers)
            efficiency = t.efficiency * (RDMA_PUT_EFFICIENCY if nvshmem else 1.0)
            out.append(dataclasses.replace(t, max_bytes_per_s=min(t.max_bytes_per_s, cap * share), efficiency=efficiency))
    return dataclasses.replace(ph, transfers=tuple(out))


def _streams_direct(topo: Topology, matrix: np.ndarray) -> list[Stream]:
    n = len(matrix)
    return [(i, j, float(matrix[i, j])) for i in range(n) for j in range(n) if i != j and matrix[i, j] > 0]


def deepep_message_bytes(token_bytes: float, top_k: int, kind: str, across_nodes: bool) -> float:
    """Bytes a normal kernel moves per token of ``token_bytes`` (its values and any FP8
    scales): the token and the routing that travels beside it on every hop (DeepEP V1,
    ``csrc/kernels/intranode.cu`` and ``internode.cu`` from the first release @ ebfe47e,
    whose figures the records are, to ``csrc/kernels/legacy/`` @ dd758caf). Within a node
    (per-slot buffers beside ``channel_x_buffers``) a dispatch carries its source index
    (4 B), its ``top_k`` expert indices (``int64_t``, 8 B each) and weights (4 B each), a
    combine its source index and weights. Across nodes one message holds the token, an
    8-byte ``SourceMeta``, ``top_k`` 4-byte indices (dispatch only) and ``top_k`` 4-byte
    weights, padded to 16 B (``get_num_bytes_per_rdma_token``; the NVLink forward carries
    the same fields, padded too since)."""
    _check_kind(kind)
    indices = top_k if kind == "dispatch" else 0
    if not across_nodes:
        return token_bytes + 4 + 8 * indices + 4 * top_k
    return math.ceil((token_bytes + 8 + 4 * indices + 4 * top_k) / 16) * 16


@dataclass(frozen=True, kw_only=True)
class NicsOnly(ClusterTopology):
    """A cluster whose GPUs reach every other rank through their NICs, their own node's
    peers included: DeepEP's low-latency kernels as first released (every message an IBGDA
    put, ``nvshmemi_ibgda_put_nbi_warp``, ``csrc/kernels/internode_ll.cu`` @ ebfe47e) and
    with ``allow_nvlink_for_low_latency_mode=False``. A put to a peer of the same node
    leaves through the sender's rail NIC and arrives through the peer's."""

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        return (nic_up(*self.nic_of(src)), nic_down(*self.nic_of(dst)))

    @classmethod
    def of(cls, topo: Topology) -> NicsOnly:
        """``topo`` (a cluster) with every route through the NICs."""
        if not isinstance(topo, ClusterTopology):
            raise InputError(f"{topo.name!r} has no NICs to send through", field="nvlink")
        return cls(**{f.name: getattr(topo, f.name) for f in dataclasses.fields(topo) if f.init})


def _streams_deepep(topo: Topology, r: Routing, ranks: int, kind: str) -> list[Stream]:
    """Normal kernels: NVLink within a node; across nodes one RDMA send per (token, node)
    to the sender's rail GPU there, which forwards to the node's destination GPUs. Each
    token as the kernels move it, its routing beside it (:func:`deepep_message_bytes`)."""
    g = topo.domain_size
    rank_hit, node_hit = hit_chances(r, ranks, g)
    message = deepep_message_bytes(r.token_bytes, r.top_k, kind, across_nodes=ranks > g)
    per_rank = r.tokens * rank_hit * message
    per_node = r.tokens * node_hit * message
    forwarded: dict[tuple[int, int], float] = {}
    streams: list[Stream] = []
    for src in range(ranks):
        home, local = divmod(src, g)
        for node in range(ranks // g):
            if node == home:
                streams += [(src, node * g + k, per_rank) for k in range(g) if node * g + k != src]
                continue
            relay = node * g + local
            streams.append((src, relay, per_node))
            for k in range(g):
                dst = node * g + k
                if dst != relay:
                    forwarded[relay, dst] = forwarded.get((relay, dst), 0.0) + per_rank
    return streams + [(a, b, nbytes) for (a, b), nbytes in sorted(forwarded.items())]


def _streams_low_latency(topo: Topology, r: Routing, ranks: int) -> list[Stream]:
    """Every (token, expert) selection to its expert's rank: top_k / ranks of the tokens x
    top_k selections land on each rank, local ones included."""
    r.check(ranks, topo.domain_size)
    per_pair = r.tokens * r.top_k / ranks * r.token_bytes
    return [(i, j, per_pair) for i in range(ranks) for j in range(ranks) if i != j]


def moe_plan(topo: Topology, mode: str, *, routing: Routing | None = None, matrix: np.ndarray | None = None,
             sm_budget: int | None = None, kind: str = "dispatch", nvlink: bool = True) -> Plan:
    """The plan of one dispatch (or combine: the same traffic, transposed) in ``mode``,
    its streams held to what ``sm_budget`` SMs issue (None: no SM bound); ``nvlink=False``:
    the low-latency kernels put even their own node's messages through the NICs
    (:class:`NicsOnly`)."""
    if mode not in MODES:
        raise InputError(f"unknown MoE all-to-all mode {shown(mode)}; known: {', '.join(MODES)}", field="mode")
    _check_kind(kind)
    if not nvlink:
        if mode != "deepep-ll":
            raise InputError(f"only deepep-ll sends within a node without NVLink, not {mode}", field="nvlink")
        topo = NicsOnly.of(topo)
    ranks = len(matrix) if matrix is not None else topo.ranks
    if ranks > topo.ranks:
        raise InputError(f"the matrix has {ranks} ranks; {topo.name!r} has {topo.ranks}", field="bytes")
    simple = topo.tuning.protocols["simple"] if topo.tuning is not None else None
    if mode == "nccl":
        if matrix is None:
            matrix = expected_matrix(routing, ranks, topo.domain_size)
        streams = _streams_direct(topo, matrix)
    elif routing is None:
        raise InputError(f"{mode} needs the router's choices (tokens, top_k, experts), not a matrix", field="mode")
    elif mode == "deepep":
        streams = _streams_deepep(topo, routing, ranks, kind)
    else:
        streams = _streams_low_latency(topo, routing, ranks)
    ph = phase(topo, streams, 1, simple)
    caps = sm_issue_caps(topo, mode, sm_budget, streams) if sm_budget is not None else [math.inf] * len(streams)
    ph = _held(topo, mode, ph, streams, caps)
    return plan(mode, topo, [[ph]], simple)


def default_sm_budget(mode: str, routing: Routing | None, device_sms: int | None) -> int:
    """The SMs ``mode`` holds when the caller names none (:data:`DEFAULT_SM_BUDGET`; the
    low-latency kernels' from the experts and the GPU's SMs)."""
    if mode != "deepep-ll":
        return DEFAULT_SM_BUDGET[mode]
    if routing is None or device_sms is None:
        raise InputError("deepep-ll's SM budget follows from the experts and the GPU's SMs: give sm_budget, or "
                         "routing and device_sms", field="sm_budget")
    return low_latency_sms(routing.experts, device_sms)


def low_latency_receive_s(routing: Routing, kind: str, hbm_bytes_per_s: float) -> float:
    """The low-latency kernels' receive phase, which runs after the data has arrived: each
    kernel's send phase ends in a grid sync (``cg::this_grid().sync()``; combine first
    waits for every (expert, source) flag), and only then do its SMs read the receive
    buffer (``csrc/kernels/legacy/internode_ll.cu`` @ dd758caf). A rank receives
    ``tokens x top_k`` messages (each of its experts' share from every rank); dispatch
    copies each into the packed per-expert layout (read and write it), combine reads the
    ``top_k`` messages of a token and writes the weighted sum (one token per ``top_k``
    read). At the GPU's HBM bandwidth, as one HBM-bound copy."""
    _check_kind(kind)
    read = routing.tokens * routing.top_k * routing.token_bytes
    written = read if kind == "dispatch" else read / routing.top_k
    return (read + written) / hbm_bytes_per_s


def simulate_moe(topo: Topology, mode: str, *, routing: Routing | None = None, matrix: np.ndarray | None = None,
                 sm_budget: int | None = None, device_sms: int | None = None, kind: str = "dispatch",
                 hbm_bytes_per_s: float | None = None, nvlink: bool = True) -> MoeResult:
    """One dispatch (``kind``: or the combine, its traffic transposed) alone on ``topo``
    with ``sm_budget`` SMs (None: the mode's default, :func:`default_sm_budget`;
    ``device_sms``, the GPU's SMs, sizes the low-latency kernels'): its time, its SM budget
    and the bytes each rank puts on NVLink and on the network (the busiest rank's). With
    ``hbm_bytes_per_s`` (the GPU's achievable HBM bandwidth) the low-latency kernels' time
    includes their receive phase after the data (:func:`low_latency_receive_s`); the other
    modes receive as the data arrives. ``nvlink=False``: the low-latency kernels send
    within a node through the NICs too (:func:`moe_plan`)."""
    if mode not in MODES:
        raise InputError(f"unknown MoE all-to-all mode {shown(mode)}; known: {', '.join(MODES)}", field="mode")
    if topo.ranks > MAX_RANKS:
        raise InputError(f"{topo.name!r} has {topo.ranks} ranks; a MoE dispatch is simulated over at most {MAX_RANKS}",
                         field="system")
    budget = default_sm_budget(mode, routing, device_sms) if sm_budget is None else sm_budget
    if budget < 1 or device_sms is not None and budget > device_sms:
        most = "" if device_sms is None else f" and at most the GPU's {device_sms}"
        raise InputError(f"an SM budget is at least 1{most}, got {budget}", field="sm_budget")
    if kind == "combine" and matrix is not None:
        matrix = np.ascontiguousarray(np.asarray(matrix).T)  # the dispatch's traffic, back
    p = moe_plan(topo, mode, routing=routing, matrix=matrix, sm_budget=budget, kind=kind, nvlink=nvlink)
    gpu_of = senders(topo)
    nvlink: dict[str, float] = {}
    network: dict[str, float] = {}
    for lane in p.lanes:
        for ph in lane:
            for t in ph.transfers:
                src = sender(t.links)
                src = gpu_of.get(src, src)
                bucket = network if topo.links[t.links[0]].scale_out else nvlink
                bucket[src] = bucket.get(src, 0.0) + t.bytes
    receive_s = 0.0
    if mode == "deepep-ll" and hbm_bytes_per_s is not None:
        receive_s = low_latency_receive_s(routing, kind, hbm_bytes_per_s)
    return MoeResult(mode=mode, latency_s=ps_to_seconds(run_plans(topo, [p])[0]) + receive_s, ranks=topo.ranks,
                     sm_budget=budget, nvlink_bytes_per_rank=max(nvlink.values(), default=0.0),
                     network_bytes_per_rank=max(network.values(), default=0.0),
                     times=part_times(topo, p, receive_s))
