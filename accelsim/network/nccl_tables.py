"""NCCL's own tuning constants, per architecture class, as its source states them.

NCCL rates every (algorithm, protocol) pair as ``base latency + steps x hop latency +
bytes / bandwidth`` (``ncclTopoTuneModel`` in ``src/graph/tuning.cc``). Its latencies are
one table for every GPU (``baseLatencies``; ``hwLatencies`` per link kind: NVLink, PCI,
network); its bandwidth limits are per architecture class (``compCapIndex``: Volta,
Ampere, Hopper, Blackwell): ``llMaxBws``, ``perChMaxRingLL128Bws``, ``nvlsEfficiency``,
and the NVLink bandwidth per channel of ``src/graph/topo.h``. The node configs start from
these figures (a test keeps them equal) and a fit on one node carries to the others by
the same split (:data:`CARRIES`): latencies to every node, bandwidth figures to nodes of
the same class.

All figures from NCCL 2.30.7 (github.com/NVIDIA/nccl @ 5067397c, ``src/graph/tuning.cc``
and ``src/graph/topo.h``); the ring latencies are unchanged since 2.20.3 (@ b6475625),
where the configs first cited them. They serve every record, whatever release it ran: the
per-channel figures that differ between releases (Blackwell's, NVLSTree's from 2.28) are
NCCL's estimates of the same kernels, and the newest describe the older runs better
(docs/collectives.md, "Which NCCL release's figures").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

SOURCE = "NCCL 2.30.7 (github.com/NVIDIA/nccl @ 5067397c) src/graph/tuning.cc"

US = 1e-6
GB = 1e9

RING_BASE_LATENCY_S = MappingProxyType({"ll": 6.6 * US, "ll128": 14.0 * US, "simple": 8.4 * US})
"""``baseLatencies`` of Ring (LL, LL128, Simple): the fixed cost of a ring collective."""
TREE_BASE_LATENCY_S = MappingProxyType({"ll": 6.8 * US, "ll128": 14.0 * US, "simple": 8.4 * US})
RING_NVLINK_STEP_S = MappingProxyType({"ll": 0.6 * US, "ll128": 1.9 * US, "simple": 3.4 * US})
"""``hwLatencies[NVLINK][Ring]``: one ring step over NVLink."""
RING_NET_STEP_S = MappingProxyType({"ll": 2.7 * US, "ll128": 4.0 * US, "simple": 14.0 * US})
"""``hwLatencies[NET][Ring]``: one ring step across the network, before the plugin's own
latency (``latencyInter``: 0 for NCCL's InfiniBand and socket transports,
``src/transport/net_ib/init.cc`` and ``net_socket.cc``)."""
TREE_NVLINK_STEP_S = MappingProxyType({"ll": 0.6 * US, "ll128": 1.25 * US, "simple": 4.0 * US})
"""``hwLatencies[NVLINK][Tree]``: one step of a tree's intra-node chain."""
TREE_NET_STEP_S = MappingProxyType({"ll": 5.0 * US, "ll128": 8.5 * US, "simple": 14.0 * US})
"""``hwLatencies[NET][Tree]``: one tree step across the network (LL and LL128 near twice
the ring's: a tree's network step is a round trip of the parent's proxy, not a hop)."""
NVLS_NVLINK_LATENCY_S = 25.0 * US
"""``hwLatencies[NVLINK][NVLS][Simple]`` (23 us in 2.20 to 2.27)."""
NET_OVERHEAD_S = 1.0 * US
"""``getNetOverhead`` on Intel CPUs (2 us on AMD), x3 for Simple: the least an intra-node
step of a ring that spans nodes costs."""


@dataclass(frozen=True, kw_only=True)
class Generation:
    """NCCL's figures for one architecture class on one NVSwitch node."""

    name: str
    nvlink_channel_bytes_per_s: float
    """``SMxx_NVLINK_BW``: what NCCL's topology search counts per NVLink link."""
    ll_max_bytes_per_s: float
    """``llMaxBws[class][one node]``: ring/LL bus bandwidth limit on one node."""
    ll128_channel_bytes_per_s: float
    """``perChMaxRingLL128Bws[class][one node]``: ring/LL128 limit per channel."""
    nvls_efficiency: float | None
    """``nvlsEfficiency`` (no NVLS before Hopper)."""


GENERATIONS = MappingProxyType({
    "ampere": Generation(name="ampere", nvlink_channel_bytes_per_s=20.0 * GB, ll_max_bytes_per_s=87.7 * GB,
                         ll128_channel_bytes_per_s=20.0 * GB, nvls_efficiency=None),
    "hopper": Generation(name="hopper", nvlink_channel_bytes_per_s=20.6 * GB, ll_max_bytes_per_s=141.0 * GB,
                         ll128_channel_bytes_per_s=36.7 * GB, nvls_efficiency=0.85),
    "blackwell": Generation(name="blackwell", nvlink_channel_bytes_per_s=40.1 * GB, ll_max_bytes_per_s=282.0 * GB,
                            ll128_channel_bytes_per_s=40.0 * GB, nvls_efficiency=0.74),
})

MAX_GRAPH_CHANNELS = 32
"""``ringGraph->maxChannels = MAXCHANNELS / 2`` (src/init.cc, ``MAXCHANNELS`` 64 in
src/include/device.h): the most channels NCCL's ring and tree search may find (the tree
graph may have no more than the ring's)."""
MAX_CHANNELS = 64
"""``MAXCHANNELS`` (src/include/device.h @ v2.26.2-1): the most channels a communicator runs."""

_SM90_SPEEDS_INTER = tuple(s * GB for s in (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                            3.0, 2.4, 1.2, 0.24, 0.12))
NET_SEARCH_SPEEDS_BYTES_PER_S = MappingProxyType({
    "ampere": tuple(s * GB for s in (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                                     4.0, 3.0, 2.4, 1.2, 0.24, 0.12)),
    "hopper": _SM90_SPEEDS_INTER,
    "blackwell": _SM90_SPEEDS_INTER,  # the same list in these versions
})
"""``speedArrayInter``, ``sm90SpeedArrayInter``, ``sm100SpeedArrayInter`` (src/graph/search.cc,
NCCL 2.25.1 and 2.26.2, the versions of the GB200 rack runs; 2.28+ put 96, 86 and 80 GB/s
first for Blackwell, above any 400 Gb/s NIC): the per-channel bandwidths NCCL's search
tries across nodes, fastest first."""


def net_graph_channels(generation: str | None, nvlink_links: int, nic_bytes_per_s: float, nics: int) -> int | None:
    """How many channels NCCL's ring/tree search finds across nodes (``ncclTopoCompute``,
    src/graph/search.cc @ v2.26.2-1), hence how many NICs of a node carry a ring or a tree;
    None where the class has no figures.

    Each channel runs at one speed of :data:`NET_SEARCH_SPEEDS_BYTES_PER_S`, starting at the
    fastest a NIC can take (``system->maxBw``, the GPU-to-NIC path), and takes that much of
    every GPU's NVLink (NCCL counts ``nvlink_links`` x ``SMxx_NVLINK_BW``, ``getTotalBw``),
    and of one NIC (a NIC holds ``floor(NIC / speed)`` channels), up to
    :data:`MAX_GRAPH_CHANNELS`. The search stops once channels x speed reaches the GPU's
    NVLink total; otherwise it tries slower speeds down to 0.49 of the best found and keeps
    the largest channels x speed (``ncclTopoCompareGraphs``; the first found on a tie).
    Duplicating channels afterwards (``ncclTopoDupChannels``, ``ncclTopoPostset``) reuses
    the same NICs. On 8-GPU nodes with a NIC per GPU this is one channel per NIC (DGX H100: 8
    at 45 GB/s, the NVLink total 18 x 20.6 = 371 GB/s holding 7 at 48); on a GB200 NVL72
    rack, whose 72 GPUs each have a NIC, 15 at 48 GB/s (18 x 40 = 720 GB/s of NVLink: the
    search stops at 15 x 48 = 720)."""
    graph = net_graph(generation, nvlink_links, nic_bytes_per_s, nics)
    return graph[0] if graph is not None else None


def net_graph(generation: str | None, nvlink_links: int, nic_bytes_per_s: float,
              nics: int) -> tuple[int, float] | None:
    """(channels, bytes per second each) of NCCL's ring/tree search across nodes, before
    any duplication (:func:`net_graph_channels`); None where the class has no figures."""
    if generation not in NET_SEARCH_SPEEDS_BYTES_PER_S:
        return None
    nvlink = nvlink_links * GENERATIONS[generation].nvlink_channel_bytes_per_s
    best_channels, best_speed = 0, 0.0
    for speed in NET_SEARCH_SPEEDS_BYTES_PER_S[generation]:
        if speed > nic_bytes_per_s * (1 + 1e-9):
            continue
        if best_channels and speed / best_speed <= 0.49:
            break
        channels = min(MAX_GRAPH_CHANNELS, int(nvlink / speed + 1e-9), nics * int(nic_bytes_per_s / speed + 1e-9))
        if channels * speed > best_channels * best_speed * (1 + 1e-9):
            best_channels, best_speed = channels, speed
        if best_channels * best_speed >= nvlink * (1 - 1e-9):
            break
    return (best_channels, best_speed) if best_channels else None


THREAD_THRESHOLD_BYTES = MappingProxyType({"ll": 8, "ll128": 8, "simple": 64})
"""``NCCL_LL_THREAD_THRESHOLD``, ``NCCL_LL128_THREAD_THRESHOLD``,
``NCCL_SIMPLE_THREAD_THRESHOLD`` (src/include/comm.h @ v2.26.2-1, lines 37-39): the bytes
each thread of a channel should have before NCCL adds a channel; ring/LL's is multiplied
by the ranks (``threadThresholds[RING][LL] *= nRanks``, src/graph/tuning.cc @ v2.26.2-1
line 493, line 593 @ v2.30.7-1)."""
MAX_THREADS = MappingProxyType({"ll": 512, "ll128": 640, "simple": 512})
"""``maxThreads`` of ring and tree (``NCCL_LL_MAX_NTHREADS``, ``NCCL_LL128_MAX_NTHREADS``,
``NCCL_SIMPLE_MAX_NTHREADS``, src/include/device.h @ v2.26.2-1; ring/Simple's default is
the maximum on NVLink, src/graph/tuning.cc ``simpleDefaultThreads``)."""


def collective_channels(algorithm: str, protocol: str, size_bytes: float, ranks: int,
                        channels: int = MAX_GRAPH_CHANNELS) -> int:
    """How many channels NCCL runs a ring or tree collective of ``size_bytes`` on (its
    buffer as nccl-tests sizes it: ``ncclFuncMaxSendRecvCount``) over ``ranks`` ranks, of
    the communicator's ``channels``.

    ``topoGetAlgoInfo`` (src/enqueue.cc @ v2.26.2-1, lines 1734-1756; the same loop in
    ``getAlgoInfo`` since 2.12 and @ v2.30.7-1 lines 2070-2095) starts from every channel
    and drops one while ``nBytes < nc x nThreads x threadThreshold``
    (:data:`MAX_THREADS`, :data:`THREAD_THRESHOLD_BYTES`): ring/LL on 8 ranks runs one
    channel up to 32 KiB and one more per 32 KiB after, a tree or LL128 one per 4 or 5
    KiB, Simple one per 32 KiB. Below one channel's threshold NCCL halves the threads
    instead, which is not modelled."""
    threshold = THREAD_THRESHOLD_BYTES[protocol] * (ranks if (algorithm, protocol) == ("ring", "ll") else 1)
    per_channel = MAX_THREADS[protocol] * threshold
    return max(1, min(channels, int(size_bytes // per_channel)))


def communicator_channels(graph_channels: int, min_channels: int | None = None) -> int:
    """The channels a communicator whose search found ``graph_channels`` runs:
    ``ncclTopoPostset`` runs every searched ring and tree twice (src/graph/connect.cc @
    v2.26.2-1 line 452, "Duplication should be complete now": ``nChannels =
    min(MAXCHANNELS, nChannels*2)``), then copies channels up to ``NCCL_MIN_NCHANNELS``
    where the environment sets it (``min_channels``; the same function, "Honor
    NCCL_MIN_NRINGS/NCCL_MAX_NRINGS": ``copyChannels`` up to ``max(ncclMinNchannels(),
    config.minCTAs)``), at most :data:`MAX_CHANNELS`."""
    return min(MAX_CHANNELS, max(2 * graph_channels, min_channels or 0))


def ll128_channel_scale(graph_channels: int | None, min_channels: int | None = None) -> float:
    """What a node's ring/LL128 per-rank cap (NCCL's ``perChMaxRingLL128Bws`` x
    :data:`LL128_CHANNELS`, the configs' estimate of the channel count) is multiplied by
    where NCCL's ring graph has ``graph_channels`` channels (on one node or across nodes,
    after ``ncclTopoDupChannels``) and the environment may force ``min_channels``
    (``NCCL_MIN_NCHANNELS``).

    NCCL rates ring/LL128 no faster than ``nChannels x perChMaxRingLL128Bws`` (``busBw =
    std::min(busBw * 0.92, graphs[a]->nChannels * perChMaxRingLL128Bw)``,
    ``ncclTopoTuneModel``, src/graph/tuning.cc @ v2.26.2-1), a figure per searched channel,
    each of which runs as two (:func:`communicator_channels`). So the cap is per searched
    channel: ``graph_channels`` of them, or half of the channels ``NCCL_MIN_NCHANNELS``
    forces when that is more (each LL128 channel is one thread block, and LL128's rate is
    its threads' polling, not the links'). 1.0 where the search is not known."""
    if graph_channels is None:
        return 1.0
    forced = communicator_channels(graph_channels, min_channels) / 2
    return max(graph_channels, forced) / LL128_CHANNELS


def tree_simple_channel_bytes(size_bytes: float, ranks: int, graph_channels: int,
                              min_channels: int | None = None) -> float:
    """The part of a ``size_bytes`` Simple tree all-reduce over ``ranks`` ranks that one of
    NCCL's channels carries, when its tree search found ``graph_channels`` channels (one per
    NIC a tree uses).

    A communicator has twice the search's channels, two per NIC, or the ``min_channels``
    ``NCCL_MIN_NCHANNELS`` forces (:func:`communicator_channels`); of those, a collective of
    this size runs :func:`collective_channels` (Simple: one per 32 KiB,
    ``topoGetAlgoInfo``). Each channel moves ``size_bytes`` / that count, so below 32 KiB x
    the channels every channel carries 32 KiB (or the whole buffer on one channel)."""
    communicator = communicator_channels(graph_channels, min_channels)
    return size_bytes / collective_channels("tree", "simple", size_bytes, ranks, communicator)


LL_MAX_BUS_ACROSS_NODES = MappingProxyType({
    "amd": (22.5 * GB, 19.0 * GB),
    "other": (39.0 * GB, 20.4 * GB),
})
"""``llMaxBws`` across nodes (2 nodes, more than 2): NCCL rates ring/LL's bus bandwidth no
higher than these, by the host CPU (``index1``: AMD hosts row 1, every other host row 0),
whatever the GPU (LL's flag-per-8-bytes lines cross the network through the proxy)."""


def ll_max_bus_bytes_per_s(host_cpu: str, nodes: int) -> float:
    """NCCL's ceiling on LL's bus bandwidth across ``nodes`` (2 or more) nodes of ``host_cpu``
    hosts (:data:`LL_MAX_BUS_ACROSS_NODES`)."""
    two, more = LL_MAX_BUS_ACROSS_NODES["amd" if host_cpu == "amd" else "other"]
    return two if nodes <= 2 else more


TREE_LL128_CHANNEL_BYTES_PER_S = MappingProxyType({
    "ampere": (20.0 * GB, 20.0 * GB, 20.0 * GB),
    "hopper": (36.7 * GB, 36.7 * GB, 29.0 * GB),
    "blackwell": (55.6 * GB, 31.67 * GB, 20.0 * GB),
})
"""``perChMaxTreeLL128Bws[class]`` (one node, 2 nodes, more than 2): NCCL caps tree/LL128's
bus bandwidth per channel by these, not by the ring's ``perChMaxRingLL128Bws``, and lower
as the tree spans more nodes (Blackwell: 55.6, 31.67, 20 GB/s against the ring's 40)."""


def tree_ll128_cap_scale(generation: str | None, nodes: int) -> float:
    """What a ring/LL128 per-rank cap is multiplied by for a tree over ``nodes`` nodes of
    ``generation``: NCCL's per-channel tree/LL128 ceiling over its ring/LL128 one, at
    NCCL's node-count index (1, 2, more), with the same channels for both (1.0 where the
    class is not known)."""
    if generation not in GENERATIONS:
        return 1.0
    tree = TREE_LL128_CHANNEL_BYTES_PER_S[generation][min(nodes, 3) - 1]
    return tree / GENERATIONS[generation].ll128_channel_bytes_per_s


TREE_CHANNEL_BYTES_PER_S = MappingProxyType({
    "ampere": (24.0 * GB, 23.6 * GB, 17.8 * GB),
    "hopper": (38.7 * GB, 41.4 * GB, 36.0 * GB),
    "blackwell": (70.0 * GB, 42.8 * GB, 24.0 * GB),
})
"""``perChMaxTreeBws[class]`` (one node, 2 nodes, more than 2): NCCL's ceiling on one
channel's tree bus bandwidth (one thread block per channel moves its part of the buffer)."""
SIMPLE_BUFFER_BYTES = 4 * 2**20
"""``DEFAULT_BUFFSIZE`` (src/init.cc, ``NCCL_BUFFSIZE``): Simple's buffer per connection."""
STEPS = 8
"""``NCCL_STEPS`` (src/include/device.h): the slots a connection's buffer is cut into."""


def tree_simple_fill_s(generation: str | None, nodes: int, hops: int, channel_bytes: float,
                       buffer_bytes: float = SIMPLE_BUFFER_BYTES) -> float:
    """What a Simple tree's pipeline fill costs beyond its step latencies: the last chunk
    crossing ``hops`` hops, each a whole chunk at one channel's rate, on a tree over
    ``nodes`` nodes whose channels each carry ``channel_bytes`` (0.0 where the class has no
    figure).

    On Simple a step becomes visible to the next rank only once all of it is written
    (``postPeer`` after the slice, src/device/prims_simple.h), and a tree's chunk is one
    step (``calcCollChunking``, src/enqueue.cc: ``stepSize x chunkSteps`` with
    ``chunkSteps`` 1 outside rings, and no shrinking for deep trees, which LL128 and CollNet
    have), ``buffer_bytes`` (``NCCL_BUFFSIZE``) / ``STEPS`` or the channel's whole part when
    smaller. So a
    chunk crosses every hop store-and-forward, at a channel's rate: NCCL's per-channel tree
    ceiling over 2, its tree's bus-to-algorithm ratio (``ratio *= .5``, src/graph/tuning.cc).
    LL and LL128 flag every line and forward as lines arrive, so they have no such fill."""
    if generation not in TREE_CHANNEL_BYTES_PER_S:
        return 0.0
    chunk = min(buffer_bytes / STEPS, channel_bytes)
    rate = TREE_CHANNEL_BYTES_PER_S[generation][min(nodes, 3) - 1] / 2
    return hops * chunk / rate


NVLS_CHANNELS = MappingProxyType({"hopper": 16, "blackwell": 32})
"""``NVLS_NCHANNELS_SM90`` and ``NVLS_NCHANNELS_SM100`` (src/transport/nvls.cc @ v2.25.1-1
lines 144-145, the same in 2.26.2 and, across nodes, 2.27): the channels NVLS and NVLSTree
run on, whatever the size (``topoGetAlgoInfo``: ``nc = comm->nvlsChannels``,
src/enqueue.cc @ v2.25.1-1 line 1688)."""
NVLS_CHUNK_BYTES = 128 * 2**10
"""``NCCL_NVLS_CHUNKSIZE``'s default (src/transport/nvls.cc @ v2.25.1-1 line 149): an NVLS
chunk at most."""


def nvls_tree_chunk_bytes(size_bytes: float, channels: int, heads: int, nodes: int) -> int:
    """NVLSTree's chunk for a ``size_bytes`` all-reduce over ``nodes`` nodes
    (``calcCollChunking``, src/enqueue.cc @ v2.26.2-1 lines 1888-1899:
    ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` defaults to 64 KiB from 4 nodes, else
    :data:`NVLS_CHUNK_BYTES`; then 256 KiB below 32 x channels x heads chunks, 128 KiB
    below 16, 64 KiB below 4, 32 KiB below 1)."""
    return _shrunk_chunk(size_bytes, channels * heads, NVLS_CHUNK_BYTES if nodes < 4 else 65536,
                         ((32, 262144), (16, 131072), (4, 65536), (1, 32768)))


def _shrunk_chunk(size_bytes: float, ops: int, chunk: int, steps: tuple[tuple[int, int], ...]) -> int:
    """``calcCollChunking``'s shrinking, in order: for each (loops, smaller), the chunk drops
    to ``smaller`` where the buffer is under ``loops`` x ``ops`` chunks and it is larger."""
    for loops, smaller in steps:
        if size_bytes < loops * ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def nvls_tree_fill_s(generation: str | None, size_bytes: float, heads: int, nodes: int, hops: int,
                     nic_bytes_per_s: float) -> float:
    """What NVLSTree's pipeline fill across nodes costs (0.0 where the class has no NVLS
    channel count): each of the tree's ``hops`` between nodes a whole chunk
    (:func:`nvls_tree_chunk_bytes`, or a head's share of the channel's part when smaller)
    store-and-forward, as Simple posts a step only once it is written (see
    :func:`tree_simple_fill_s`), at a channel's share of a head's NIC: every one of the
    :data:`NVLS_CHANNELS` sends its chunk of that head through it
    (``RunWorkColl<AllReduce, NVLS_TREE, SIMPLE>``, src/device/all_reduce.h @ v2.26.2-1
    lines 521-626: each head reduces its chunk of a loop and sends it up the tree, and
    receives and multicasts it on the way down)."""
    if generation not in NVLS_CHANNELS:
        return 0.0
    channels = NVLS_CHANNELS[generation]
    heads = min(heads, MAX_NVLS_HEADS)
    chunk = min(nvls_tree_chunk_bytes(size_bytes, channels, heads, nodes), size_bytes / (channels * heads))
    return hops * chunk / (nic_bytes_per_s / channels)


NVLS_TREE_CHANNEL_BYTES_PER_S = MappingProxyType({
    "hopper": (57.7 * GB, 57.7 * GB, 45.5 * GB),
    "blackwell": (96.0 * GB, 96.0 * GB, 80.0 * GB),
})
"""``perChMaxNVLSTreeBws[class]`` for 2 nodes and more than 2 (NCCL 2.28+; its one-node
entry is 0, NVLSTree needing 2 nodes, so the 2-node figure stands in): NCCL caps NVLSTree's
bus bandwidth per channel, one channel per NVLS head."""
MAX_NVLS_HEADS = 32
"""``NCCL_MAX_NVLS_ARITY`` (src/include/device.h): NVLS heads per node at most."""


def nvls_tree_bus_cap_bytes_per_s(generation: str | None, nodes: int, heads: int) -> float | None:
    """NCCL's ceiling on NVLSTree's bus bandwidth across ``nodes`` nodes with ``heads``
    NVLS heads per node (each a GPU with a NIC, at most :data:`MAX_NVLS_HEADS`): heads x
    ``perChMaxNVLSTreeBws`` of the class at NCCL's node-count index. None where the class
    has no figure."""
    if generation not in NVLS_TREE_CHANNEL_BYTES_PER_S:
        return None
    return min(heads, MAX_NVLS_HEADS) * NVLS_TREE_CHANNEL_BYTES_PER_S[generation][min(nodes, 3) - 1]


def tree_latency_scales(protocol: str) -> tuple[float, float, float]:
    """(base, NVLink step, network step) of a tree over a ring's, in NCCL's tables, for
    ``protocol``: what a node's ring latencies (NCCL's, or fitted and carried) are
    multiplied by for a tree."""
    return (TREE_BASE_LATENCY_S[protocol] / RING_BASE_LATENCY_S[protocol],
            TREE_NVLINK_STEP_S[protocol] / RING_NVLINK_STEP_S[protocol],
            TREE_NET_STEP_S[protocol] / RING_NET_STEP_S[protocol])


LL128_CHANNELS = 8
"""Channels the configs size LL128's per-rank cap with (an estimate); a ring scales the cap
to the channels of NCCL's own graph (:func:`ll128_channel_scale`: 12 on DGX A100 and H100,
16 on DGX B200, 8 across nodes of 8 NICs)."""

LATENCY_PATHS = ("protocols.ll.base_latency", "protocols.ll128.base_latency", "protocols.simple.base_latency",
                 "protocols.ll.step_latency", "protocols.ll128.step_latency", "protocols.simple.step_latency",
                 "nvls_latency")
CYCLE_RATE_PATHS = ("channel_bandwidth",)
"""Rates of one thread block (bytes per second of one channel): what the SM does per cycle,
so they carry to every node in GPU cycles as the latencies do (x the clocks' ratio
inverted)."""
BANDWIDTH_PATHS = ("link_efficiency", "protocols.ll128.max_bandwidth_per_rank", "nvls_efficiency")

CARRIES = MappingProxyType({**{p: "every node" for p in LATENCY_PATHS + CYCLE_RATE_PATHS},
                            **{p: "same generation" for p in BANDWIDTH_PATHS}})
"""Where a value fitted on one node carries: NCCL's latency table is the same for every
GPU, so a fitted latency (what NCCL's launch, protocol and hop really cost) carries to
every node that has no measurements of its own, in GPU cycles (scaled by the two nodes'
kernel clocks, :func:`latency_carry_scale`); its bandwidth tables are per
architecture class, so a fitted efficiency or cap carries only within the class (DGX
H100 to DGX H200, not to DGX B200, whose NVLink 5 reaches a smaller share of its rate)."""


def latency_carry_scale(fitted_clock_hz: float | None, clock_hz: float | None) -> float:
    """What a latency fitted on a node whose NCCL kernels run at ``fitted_clock_hz`` is
    multiplied by on a node whose kernels run at ``clock_hz``: it carries in GPU cycles.

    NCCL's kernels poll flags, fence and loop in the SM's clock, and its launch and setup
    run on the GPU too, so the fixed cost of a small collective is mostly cycles: on the
    public nccl-tests curves read here 8x A100 (1.41 GHz) takes 1.34 to 1.60 times as long
    as 8x H100 (1.98 GHz) from 8 B to 512 KiB, the clocks' ratio being 1.40
    (docs/collectives.md, "Latencies carry in cycles"). Where either clock is not stated
    the latency carries unscaled (1.0)."""
    if fitted_clock_hz is None or clock_hz is None:
        return 1.0
    return fitted_clock_hz / clock_hz


def carries_to(path: str, fitted_generation: str | None, generation: str | None) -> bool:
    """Does a value fitted at ``path`` on a node of ``fitted_generation`` carry to a node of
    ``generation`` (:data:`CARRIES`)?"""
    rule = CARRIES.get(path)
    if rule == "every node":
        return True
    return rule == "same generation" and fitted_generation is not None and fitted_generation == generation


# ------------------------------------------------------------------ NCCL's own choice on one node


INTRA_SEARCH_SPEEDS_BYTES_PER_S = MappingProxyType({
    "ampere": tuple(s * GB for s in (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)),
    "hopper": tuple(s * GB for s in (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)),
    "blackwell": tuple(s * GB for s in (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)),
})
"""``speedArrayIntra``, ``sm90SpeedArrayIntra``, ``sm100SpeedArrayIntra`` (src/graph/search.cc
@ v2.26.2-1 lines 913-923; Ampere's and Hopper's the same @ v2.21.5-1): the per-channel
bandwidths NCCL's search tries on a node without NICs, fastest first."""
DUP_MIN_SPEED_BYTES_PER_S = 25.0 * GB
DUP_FAST_SPEED_BYTES_PER_S = 50.0 * GB
"""``ncclTopoDupChannels`` (src/graph/search.cc @ v2.26.2-1 lines 898-910): a graph of
channels at 25 GB/s or more is run twice at half the speed each, except past Ampere when
it has more than 4 channels below 50 GB/s."""
NVLS_BUS_TO_ALG = 5.0 / 6.0
"""NCCL's NVLS algorithm bandwidth over its graph's bus bandwidth (``ratio *= 5.0/6.0``,
src/graph/tuning.cc @ v2.26.2-1 line 293; the same @ v2.21.5-1 line 216)."""


def _search(speeds: tuple[float, ...], total_bytes_per_s: float,
            channels_at: Callable[[float], int]) -> tuple[int, float]:
    """NCCL's speed loop (``ncclTopoCompute``): from the fastest speed a GPU's NVLink can
    take, the most channels each speed fits (``channels_at``), keeping the largest channels x
    speed (the first found on a tie), until it reaches the NVLink total or the next speed is
    no more than 0.49 of the best's."""
    best_channels, best_speed = 0, 0.0
    for speed in speeds:
        if speed > total_bytes_per_s * (1 + 1e-9):
            continue
        if best_channels and speed / best_speed <= 0.49:
            break
        channels = channels_at(speed)
        if channels * speed > best_channels * best_speed * (1 + 1e-9):
            best_channels, best_speed = channels, speed
        if best_channels * best_speed >= total_bytes_per_s * (1 - 1e-9):
            break
    return best_channels, best_speed


def ring_graph(generation: str, nvlink_links: int) -> tuple[int, float]:
    """(channels, bytes per second each) of NCCL's ring graph on one NVSwitch node, as its
    tuning reads it: each channel takes its speed out of and into every GPU's NVLink
    (links x ``SMxx_NVLINK_BW``), at most :data:`MAX_GRAPH_CHANNELS`, then
    ``ncclTopoDupChannels`` (:data:`DUP_MIN_SPEED_BYTES_PER_S`). DGX H100: 6 at 60 GB/s, run
    as 12 at 30; DGX A100: 6 at 40, 12 at 20 (as an HGX A100's NCCL log shows,
    nvidia/nccl-tests#100); DGX B200: 8 at 90, 16 at 45."""
    total = nvlink_links * GENERATIONS[generation].nvlink_channel_bytes_per_s
    channels, speed = _search(INTRA_SEARCH_SPEEDS_BYTES_PER_S[generation], total,
                              lambda s: min(MAX_GRAPH_CHANNELS, int(total / s + 1e-9)))
    return dup_channels(generation, channels, speed)


def dup_channels(generation: str, channels: int, speed: float) -> tuple[int, float]:
    """A searched ring or tree graph of ``channels`` at ``speed`` as ``ncclTopoDupChannels``
    leaves it (src/graph/search.cc @ v2.26.2-1 lines 898-910): run twice at half the speed
    each from 25 GB/s (:data:`DUP_MIN_SPEED_BYTES_PER_S`), except past Ampere with more
    than 4 channels below 50 GB/s; at most :data:`MAX_GRAPH_CHANNELS`. This is the graph's
    ``nChannels`` that NCCL's tuning multiplies its per-channel figures by."""
    if speed < DUP_MIN_SPEED_BYTES_PER_S or (generation != "ampere" and speed < DUP_FAST_SPEED_BYTES_PER_S
                                              and channels > 4):
        return channels, speed
    doubled = min(2 * channels, MAX_GRAPH_CHANNELS)
    return doubled, speed / math.ceil(doubled / channels)


def nvls_graph(generation: str, nvlink_links: int, gpus: int) -> tuple[int, float]:
    """(channels, bytes per second each) of NCCL's NVLS graph on one node of ``gpus`` GPUs:
    at most one channel per GPU, each its head; a channel takes its speed out of and into
    every GPU's NVLink and twice its head's (``ncclTopoSearchTryNvls``, src/graph/search.cc @
    v2.26.2-1, ``d0 == g ? 2 : 1``), so ``gpus`` channels load a GPU's NVLink (gpus + 1)
    times the speed. No duplication (``ncclTopoDupChannels`` skips NVLS). DGX H100: 8 at 40
    GB/s (9 x 40 within 18 x 20.6); DGX B200: 8 at 80."""
    total = nvlink_links * GENERATIONS[generation].nvlink_channel_bytes_per_s
    return _search(INTRA_SEARCH_SPEEDS_BYTES_PER_S[generation], total,
                   lambda s: min(gpus, int(total * gpus / ((gpus + 1) * s) + 1e-9)))


def nccl_one_node_estimate_s(generation: str, nvlink_links: int, algorithm: str, protocol: str,
                             size_bytes: float, ranks: int) -> float | None:
    """NCCL's own time estimate of a ``size_bytes`` all-reduce over ``ranks`` GPUs of one
    NVSwitch node as ``algorithm`` (``ring`` or ``nvls``) on ``protocol``: what it picks the
    algorithm and protocol by (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``,
    src/graph/tuning.cc @ v2.26.2-1 lines 246-345 and 530-546; the same form @ v2.21.5-1
    lines 172-263 and 418-444): latency plus bytes over algorithm bandwidth, from NCCL's own
    tables, nothing fitted. None for a pair NCCL does not run (NVLS on LL or LL128).

    Ring: bus bandwidth channels x speed (:func:`ring_graph`), LL at half of it and no more
    than ``llMaxBws``, LL128 at 0.92 and no more than channels x ``perChMaxRingLL128Bws``;
    algorithm bandwidth bus x n / (2 (n - 1)); latency ``baseLat`` + 2 (n - 1) NVLink steps.
    NVLS: channels x speed (:func:`nvls_graph`) x 5/6, latency ``hwLat[NVLINK][NVLS]``."""
    gen = GENERATIONS[generation]
    if algorithm == "nvls":
        if protocol != "simple":
            return None
        channels, speed = nvls_graph(generation, nvlink_links, ranks)
        return NVLS_NVLINK_LATENCY_S + size_bytes / (channels * speed * NVLS_BUS_TO_ALG)
    channels, speed = ring_graph(generation, nvlink_links)
    bus = channels * speed
    if protocol == "ll":
        bus = min(gen.ll_max_bytes_per_s, bus * 0.5)
    elif protocol == "ll128":
        bus = min(bus * 0.92, channels * gen.ll128_channel_bytes_per_s)
    steps = 2 * (ranks - 1)
    latency = RING_BASE_LATENCY_S[protocol] + steps * RING_NVLINK_STEP_S[protocol]
    return latency + size_bytes / (bus * ranks / steps)


def nvls_chunk_bytes(size_bytes: float, channels: int, heads: int) -> int:
    """NVLS's chunk on one node (``calcCollChunking``, src/enqueue.cc @ v2.26.2-1 lines
    1877-1887): :data:`NVLS_CHUNK_BYTES`, then 64 KiB below 64 x channels x heads chunks,
    32 KiB below 8, 16 KiB below 2."""
    return _shrunk_chunk(size_bytes, channels * heads, NVLS_CHUNK_BYTES, ((64, 65536), (8, 32768), (2, 16384)))


NVLS_FILL_LOOPS = 2
"""Loops of NVLS's pipeline that one node's stages fill: scatter, the heads' multimem
reduce and multicast, and gather run at once, each handing a whole loop on (one
``postPeer`` per loop, ``ScatterGatherOp`` in src/device/prims_simple.h; the stages of
``RunWorkColl<AllReduce, NVLS, SIMPLE>``, src/device/all_reduce.h @ v2.25.1-1 lines 388-454),
so the first loop is scattered before a head reduces it and the last gathered after."""


def nvls_node_fill_s(generation: str | None, size_bytes: float, heads: int, rate_bytes_per_s: float) -> float:
    """What one node's NVLS pipeline fill costs (0.0 where the class has no NVLS channel
    count): :data:`NVLS_FILL_LOOPS` loops of :data:`NVLS_CHANNELS` x ``heads`` chunks
    (:func:`nvls_chunk_bytes`; the whole buffer when smaller), each channel moving its part
    at its share of the node's NVLS rate ``rate_bytes_per_s`` (bytes of the buffer per
    second)."""
    if generation not in NVLS_CHANNELS:
        return 0.0
    channels = NVLS_CHANNELS[generation]
    loop = min(channels * heads * nvls_chunk_bytes(size_bytes, channels, heads), size_bytes)
    return NVLS_FILL_LOOPS * loop / rate_bytes_per_s


def nvls_node_loops(generation: str | None, size_bytes: float, heads: int) -> int:
    """How many loops each NVLS channel runs on one node (0 where the class has no NVLS
    channel count): its part of the buffer (``ncclCollCbdPart``) over a loop of ``heads``
    chunks (``loopCount = nHeads x chunkSize``, ``RunWorkColl<AllReduce, NVLS, SIMPLE>``,
    src/device/all_reduce.h @ v2.25.1-1 lines 409-452), rounded up. Every loop is one Simple
    step of each stage (``prims.scatter``, ``directRecvDirectSend``, ``prims.gather``)."""
    if generation not in NVLS_CHANNELS:
        return 0
    channels = NVLS_CHANNELS[generation]
    loop = channels * heads * nvls_chunk_bytes(size_bytes, channels, heads)
    return math.ceil(size_bytes / loop)
