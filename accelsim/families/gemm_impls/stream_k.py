"""Stream-K: the persistent tile scheduler that spreads a quantised last wave's k-iterations
over every CTA (Osama, Merrill, Cecka, Garland, Rhu, "Stream-K: Work-centric Parallel
Decomposition for Dense Matrix-Matrix Multiplication on the GPU", PPoPP 2023), as CUTLASS 3.x
builds it for its cooperative Hopper kernels (``PersistentTileSchedulerSm90StreamK``; the
decomposition is ``PersistentTileSchedulerSm90StreamKParams``'s ``Heuristic`` mode in
``include/cutlass/gemm/kernel/tile_scheduler_params.h``, read at NVIDIA/cutlass 7107b05).

The heuristic (:func:`decompose`):

- no stream-K where the output tiles fill whole waves of CTAs, where a tile has at most 8
  k-iterations (``min_iters_per_sk_unit_``), or where the last wave is at least half full;
- else the last full wave and the partial one are stream-K tiles (the waves before stay
  data-parallel: one unit per tile), rounded down to whole clusters;
- their k-iterations go to ``min(CTAs, k-iterations / 8)`` stream-K units (whole clusters),
  each an equal share (the first ``total % units`` one iteration more); where the units are a
  multiple of the tiles, that is split-K.

A unit's share runs over parts of one or more tiles (*segments*), last tile first
(``sm90_tile_scheduler_stream_k.hpp``, :func:`unit_segments`). The segment that ends a
tile's k-loop is its tile's *finisher*: it reads the partial fp32 accumulators its peers left
in a workspace, adds them and stores the tile; every other segment writes its partial
accumulator there. The workspace is a few MB that is written and read back within one wave,
so its traffic is traced at the L2 (``level: shared_cache``). Left out: the finisher's wait for
its peers (units of one tile run side by side in one wave, the fluid model has no
dependencies between programs; walking tiles backwards puts the finisher last), CUTLASS's
separate-reduction mode and its groups of units (one group), and its in-place reduction
order (the first peer stores, the middle ones add in the workspace, the finisher loads: about
the traffic modelled here, each partial peer writing once and the finisher reading each).
Ping-pong kernels have no stream-K scheduler (``sm90_gemm_tma_warpspecialized_pingpong.hpp``
refuses it), so only cooperative ones take it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accelsim.families import gemm
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace, check_programs

MIN_ITERS_PER_UNIT = 8
"""``min_iters_per_sk_unit_``: the fewest k-iterations a stream-K unit takes."""
PARTIAL_BYTES = 4
"""A partial accumulator is fp32."""


@dataclass(frozen=True)
class Decomposition:
    """How the scheduler splits a GEMM's output tiles: the first ``dp_tiles`` in launch order
    one unit each, the remaining ``sk_tiles`` shared by ``sk_units`` stream-K units."""

    dp_tiles: int
    sk_tiles: int
    sk_units: int

    @property
    def streams(self) -> bool:
        return self.sk_tiles > 0 and self.sk_units > 0


def decompose(tiles: int, k_tiles: int, ctas: int, cluster: int = 1) -> Decomposition:
    """CUTLASS's ``Heuristic`` decomposition (module docstring) of ``tiles`` output tiles of
    ``k_tiles`` k-iterations each over ``ctas`` persistent CTAs in clusters of ``cluster``."""
    full_waves, total_waves = tiles // ctas, -(-tiles // ctas)
    tail = tiles - full_waves * ctas
    if full_waves == total_waves or k_tiles <= MIN_ITERS_PER_UNIT or 2 * tail >= ctas:
        return Decomposition(tiles, 0, 0)
    dp_waves = full_waves - 1 if full_waves > 1 else 0
    sk_tiles = (tiles - dp_waves * ctas) // cluster * cluster
    per_wave = ctas // cluster * cluster
    units = min(per_wave, k_tiles * sk_tiles // MIN_ITERS_PER_UNIT // cluster * cluster)
    if sk_tiles == 0 or units == 0:
        return Decomposition(tiles, 0, 0)
    return Decomposition(tiles - sk_tiles, sk_tiles, units)


def effective_waves(tiles: int, k_tiles: int, ctas: int, cluster: int = 1) -> float:
    """Waves of whole-tile work the busiest CTA runs: ``ceil(tiles / ctas)`` data-parallel,
    fewer where stream-K spreads the last ones."""
    split = decompose(tiles, k_tiles, ctas, cluster)
    if not split.streams:
        return float(math.ceil(tiles / ctas))
    share = math.ceil(split.sk_tiles * k_tiles / split.sk_units) / k_tiles
    return math.ceil(split.dp_tiles / ctas) + share


@dataclass(frozen=True)
class Segment:
    tile: int
    """Index among the stream-K tiles."""
    k_start: int
    k_count: int
    role: str
    """``whole`` (the tile's every k-iteration), ``partial`` (writes its accumulator to the
    workspace) or ``finish`` (reads its peers' accumulators and stores the tile)."""
    peers: int = 0


def unit_segments(split: Decomposition, k_tiles: int, cluster: int = 1) -> list[list[Segment]]:
    """Each stream-K unit's segments, in unit order and in the order the unit runs them.

    The cluster is the grain (``update_output_tile_id_and_work_tile_k``: "share the same K
    offsets for work within clusters", so a multicast read feeds every CTA of the cluster):
    cluster-unit ``U`` takes a contiguous share of the cluster-tiles' k-iterations laid end to
    end, and its ``c``-th CTA runs that share on the ``c``-th tile of each cluster-tile. A unit
    walks its tiles backwards ("Stream-K work units will work backwards in terms of the tiles
    they are responsible computing"): it starts on the beginning of its last tile, at k = 0
    like every other unit, and ends on the ending of its first, the segment that waits for its
    peers. So the units' k offsets differ by at most one unit's share minus a tile's k-loop,
    not by anything up to a whole tile's, which keeps the L2 reuse of a data-parallel wave."""
    tiles, units = split.sk_tiles // cluster, split.sk_units // cluster
    base, big = divmod(tiles * k_tiles, units)
    bounds = np.cumsum([0] + [base + (u < big) for u in range(units)])
    pieces: list[list[tuple[int, int, int]]] = []
    contributors = np.zeros(tiles, dtype=np.int64)
    for u in range(units):
        start, end, unit = int(bounds[u]), int(bounds[u + 1]), []
        while start < end:
            tile, offset = divmod(start, k_tiles)
            count = min(end - start, k_tiles - offset)
            unit.append((tile, offset, count))
            contributors[tile] += 1
            start += count
        pieces.append(unit[::-1])
    out = []
    for unit in pieces:
        for member in range(cluster):
            segments = []
            for tile, offset, count in unit:
                peers = int(contributors[tile]) - 1
                role = "whole" if peers == 0 else ("finish" if offset + count == k_tiles else "partial")
                segments.append(Segment(tile * cluster + member, offset, count, role,
                                        peers if role == "finish" else 0))
            out.append(segments)
    return out


def build(params: dict, config: dict, chip, split: Decomposition) -> KernelTrace:
    """The data-parallel trace of ``config`` (:func:`gemm.triton_build`) with its last
    ``split.sk_tiles`` tiles replaced by ``split.sk_units`` stream-K units."""
    base = gemm.triton_build(params, {**config, "split_k": 1}, chip)  # split-K's units are traced here
    m, n, k, batch, dtype = gemm._problem(params)
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    num_m, num_n = -(-m // bm), -(-n // bn)
    tiles = num_m * num_n * batch
    k_tiles = -(-k // bk)
    check_programs(split.dp_tiles + split.sk_units)
    pid_m, pid_n = gemm.swizzled_tiles(num_m, num_n, config["group_m"])
    tile_b = np.arange(tiles) // (num_m * num_n)
    tile_m, tile_n = np.tile(pid_m, batch), np.tile(pid_n, batch)
    dp_of = base.program_template if isinstance(base.program_template, list) else None
    first_sk = split.dp_tiles
    units = unit_segments(split, k_tiles, config.get("cluster", 1))

    def shape(tile: int) -> tuple[int, int]:
        g = first_sk + tile
        rows = m - (num_m - 1) * bm if tile_m[g] == num_m - 1 else bm
        cols = n - (num_n - 1) * bn if tile_n[g] == num_n - 1 else bn
        return rows, cols

    rest = k - (k_tiles - 1) * bk
    keys: dict[tuple, int] = {}
    templates = [t.model_dump() for t in base.templates]
    template_of = list(np.asarray(dp_of)[:split.dp_tiles]) if dp_of is not None else [0] * split.dp_tiles
    widest = max(len(u) for u in units)
    variables = {name: list(base.program_vars[name][:split.dp_tiles]) for name in ("pid_m", "pid_n", "k0", "batch")}
    seg_vars = {f"{v}{i}": [0] * split.dp_tiles for i in range(widest) for v in ("m", "n", "b", "k", "f", "r", "t")}
    for segments in units:
        key = tuple((*shape(s.tile), s.role, s.peers, s.k_start + s.k_count == k_tiles and rest != bk)
                    for s in segments)
        if key not in keys:
            keys[key] = len(templates)
            templates.append(_unit_template(f"sk{len(keys) - 1}", key, bm, bn, bk, rest, dtype,
                                            config.get("cluster", 1), config.get("multicast", "B"),
                                            gemm.OUT_BYTES[gemm.output_dtype(params)],
                                            params.get("accumulate", False)))
        template_of.append(keys[key])
        for name in variables:
            variables[name].append(0)
        for i in range(widest):
            s = segments[i] if i < len(segments) else None
            g = first_sk + s.tile if s else 0
            ragged = s is not None and s.k_start + s.k_count == k_tiles and rest != bk
            values = {"m": tile_m[g], "n": tile_n[g], "b": tile_b[g], "k": s.k_start if s else 0,
                      "f": (s.k_count - ragged) if s else 0, "r": int(ragged), "t": s.tile if s else 0}
            for v, value in values.items():
                seg_vars[f"{v}{i}"].append(int(value))
    data = base.model_dump()
    total = split.dp_tiles + split.sk_units
    data["kernel"]["grid"] = [total]
    data["templates"] = templates
    data["program_template"] = [int(t) for t in template_of]
    data["program_vars"] = {**{k_: [int(x) for x in v] for k_, v in variables.items()}, **seg_vars}
    data["tensors"]["P"] = {"shape": [split.sk_tiles, bm * bn], "dtype": "fp32"}
    data["metadata"]["config"] = dict(config)
    data["metadata"]["stream_k"] = {"dp_tiles": split.dp_tiles, "sk_tiles": split.sk_tiles,
                                    "sk_units": split.sk_units}
    return KernelTrace.model_validate(data)


def _unit_template(name: str, key: tuple, bm: int, bn: int, bk: int, rest: int, dtype: str, cluster: int,
                   multicast: str, out_bytes: int, reads_c: bool = False) -> dict:
    """One stream-K unit: per segment its k-loop (and the ragged last k-block where the
    segment reaches it), then its store, its partial accumulator or its fix-up (which read
    their C tile first where the GEMM accumulates into C: ``reads_c``)."""
    in_bytes = DTYPE_BYTES[dtype]
    a_shared, b_shared = (cluster, 1) if multicast == "A" else (1, cluster)
    steps = []
    for i, (rows, cols, role, peers, ragged) in enumerate(key):
        for repeat, depth, k_index in ((f"f{i}", bk, f"k{i}+k"), *(((f"r{i}", rest, f"k{i}+f{i}"),) if ragged else ())):
            steps.append({
                "repeat": repeat, **({"loop_var": "k"} if depth == bk else {}),
                "transfers": [
                    {"tensor": "A", "block": [f"b{i}", f"m{i}", k_index], "bytes": rows * depth * in_bytes,
                     "multicast": a_shared},
                    {"tensor": "B", "block": [f"b{i}", k_index, f"n{i}"], "bytes": depth * cols * in_bytes,
                     "multicast": b_shared}],
                "compute": [gemm._mma(rows, cols, depth, bm, bn, bk, dtype).model_dump()],
            })
        partial = rows * cols * PARTIAL_BYTES
        if role == "partial":
            steps.append({"transfers": [{"tensor": "P", "block": [f"t{i}"], "bytes": partial, "direction": "write",
                                         "level": "shared_cache"}]})
            continue
        transfers, compute = [], []
        if role == "finish":
            transfers.append({"tensor": "P", "block": [f"t{i}"], "bytes": peers * partial, "level": "shared_cache"})
            compute.append({"unit": "vector", "flops": float(peers * rows * cols), "dtype": "fp32", "useful": False})
        c_tile = {"tensor": "C", "block": [f"b{i}", f"m{i}", f"n{i}"], "bytes": rows * cols * out_bytes}
        transfers += [c_tile] if reads_c else []
        transfers.append({**c_tile, "direction": "write"})
        steps.append({"transfers": transfers, "compute": compute})
    return {"name": name, "steps": steps}
