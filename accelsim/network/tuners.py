"""Platform tuner plugins: where a cloud's NCCL plugin, not NCCL's own cost model, picks
the algorithm and protocol.

AWS's ``aws-ofi-nccl`` ships a *region* tuner (``src/tuner/nccl_ofi_regions.cpp``,
github.com/aws/aws-ofi-nccl @ 2daf7d30): per platform and collective, polygons in the
plane of (log2 message bytes, log2 ranks), each naming an (algorithm, protocol); the
first polygon holding the point (inside or on its edge) wins. It applies with 8 ranks per
node on more than 2 nodes; elsewhere NCCL's own tuner decides (here: ``auto``'s
estimate). The polygons below are that file's vertices, as data; the geometry is
written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

SOURCE = "github.com/aws/aws-ofi-nccl @ 2daf7d30 src/tuner/nccl_ofi_regions.cpp"
MAX_BYTES = 100.0 * 2**30
"""``TUNER_MAX_SIZE``: the far corner the polygons are extended to."""
MAX_RANKS = 1024.0 * 1024
"""``TUNER_MAX_RANKS``."""
EPS = 1e-10

Point = tuple[float, float]
"""(log2 bytes, log2 ranks)."""


def log_point(nbytes: float, ranks: float) -> Point:
    return math.log2(max(nbytes, 1e-6)), math.log2(max(ranks, 1e-6))


def extend(a: tuple[float, float], b: tuple[float, float], far: tuple[float, float]) -> Point:
    """The point where the line through ``a`` and ``b`` (bytes, ranks) meets the edge of
    the box whose far corner is ``far``, in log2 space (``extend_region``)."""
    (ax, ay), (bx, by), (zx, zy) = log_point(*a), log_point(*b), log_point(*far)
    if ax == bx:
        return ax, zy
    if ay == by:
        return zx, ay
    slope = (ay - by) / (ax - bx)
    intercept = by - slope * bx
    y_at_far = slope * zx + intercept
    if y_at_far < zy:
        return zx, y_at_far
    return (zy - intercept) / slope, zy


@dataclass(frozen=True, kw_only=True)
class Region:
    """An (algorithm, protocol) over a polygon of (log2 bytes, log2 ranks) vertices."""

    algorithm: str
    protocol: str
    vertices: tuple[Point, ...]

    def holds(self, point: Point) -> bool:
        """Inside or on an edge (the plugin takes both)."""
        edges = list(zip(self.vertices, self.vertices[1:] + self.vertices[:1]))
        if any(_on_segment(point, a, b) for a, b in edges):
            return True
        xs = [v[0] for v in self.vertices]
        ys = [v[1] for v in self.vertices]
        if not (min(xs) <= point[0] <= max(xs) and min(ys) <= point[1] <= max(ys)):
            return False
        crossings = 0
        for (x0, y0), (x1, y1) in edges:
            if (y0 > point[1]) != (y1 > point[1]):
                x_at = x0 + (point[1] - y0) * (x1 - x0) / (y1 - y0)
                if x_at > point[0]:
                    crossings += 1
        return crossings % 2 == 1


def _on_segment(p: Point, a: Point, b: Point) -> bool:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    if length2 == 0:
        return math.dist(p, a) < EPS
    t = ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2
    if t < 0 or t > 1:
        return False
    return math.dist(p, (a[0] + t * dx, a[1] + t * dy)) < EPS


def _region(algorithm: str, protocol: str, *vertices: tuple[float, float] | Point, logged: frozenset = frozenset()) -> Region:
    """Vertices in (bytes, ranks); those at the indices in ``logged`` are already log2 points."""
    return Region(algorithm=algorithm, protocol=protocol,
                  vertices=tuple(v if i in logged else log_point(*v) for i, v in enumerate(vertices)))


def _p6_all_reduce() -> tuple[Region, ...]:
    """``region_init_internal_p6``, all-reduce, 8 ranks per node (p6-b200.48xlarge)."""
    far = (MAX_BYTES, MAX_RANKS)
    tree_ll = extend((393216, 16), (393216, 1024), far)
    tree_ll128 = extend((96993280, 1024), (106430464, 2048), far)
    nvls_tree = extend((10737418240, 512), (34359738368, 1500), far)
    return (
        _region("tree", "ll", (0, 16), (393216, 16), tree_ll, (0, MAX_RANKS), logged=frozenset({2})),
        _region("tree", "ll128", tree_ll, (393216, 16), (4718592, 16), (18350080, 32), (40370176, 64),
                (57147392, 128), (72876032, 256), (96993280, 1024), (106430464, 2048), tree_ll128,
                logged=frozenset({0, 9})),
        _region("ring", "ll128", (90701824, 128), (50855936, 64), (18350080, 32), (133693440, 32), (120061952, 64)),
        _region("nvls-tree", "simple", tree_ll128, (106430464, 2048), (96993280, 1024), (72876032, 256),
                (57147392, 128), (40370176, 64), (18350080, 32), (50855936, 64), (90701824, 128), (120061952, 64),
                (133693440, 32), (18350080, 32), (4718592, 16), (MAX_BYTES, 16), (435159040, 32), (1072693248, 64),
                (10737418240, 512), (34359738368, 1500), nvls_tree, logged=frozenset({0, 18})),
        _region("ring", "simple", nvls_tree, (10737418240, 512), (1072693248, 64), (435159040, 32), (MAX_BYTES, 16),
                logged=frozenset({0})),
    )


TUNERS = MappingProxyType({
    "aws-ofi-p6": MappingProxyType({"all-reduce": _p6_all_reduce()}),
})
"""Tuner name (a cluster's ``network.tuner``) -> collective -> its regions, in order."""


def tuner_choices(tuner: str, kind: str, size_bytes: float, ranks: int, nodes: int,
                  ranks_per_node: int) -> list[tuple[str, str]]:
    """The (algorithm, protocol) of every region of the platform's tuner that holds the
    point, in the tuner's order: it takes the first that NCCL can run here. Empty where it
    leaves the choice to NCCL: not 8 ranks per node, 2 nodes or fewer, a collective or a
    point it has no region for."""
    regions = TUNERS[tuner].get(kind)
    if not regions or nodes <= 2 or ranks_per_node != 8 or size_bytes > MAX_BYTES or ranks > MAX_RANKS:
        return []
    point = log_point(size_bytes, ranks)
    return [(region.algorithm, region.protocol) for region in regions if region.holds(point)]
