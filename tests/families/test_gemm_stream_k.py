"""Stream-K (``tile_scheduler=stream_k``): CUTLASS's heuristic decides which tiles stream,
every k-iteration of every tile is computed once, units walk their tiles backwards from k = 0
(so a wave keeps its L2 reuse), and cuBLAS's default takes it for a quantised last wave."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.gpu import shared_cache_hits
from accelsim.engine.programs import program_templates, program_vars
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.gemm_impls import stream_k
from accelsim.families.search import split_params

GEMM = get_family("gemm")
MAMF = {"M": 1280, "N": 4096, "K": 12032, "dtype": "fp8", "impl": "cublas"}
"""The H200 mamf-finder shape: 160 128x256 tiles on 132 SMs."""
COOPERATIVE = {"block_m": "128", "block_n": "256", "schedule": "cooperative"}


@pytest.fixture(scope="module")
def h200():
    return load_arch("h200-sxm")


def params(**given) -> dict:
    return split_params(GEMM, {k: str(v) for k, v in given.items()})[0]


def build(chip, given: dict, config: dict):
    p = params(**given)
    resolved = GEMM.resolve_config(p, config, chip)
    return GEMM.build(p, resolved, chip)


@pytest.mark.parametrize(("tiles", "k_tiles", "expected"), [
    (160, 94, (0, 160, 132)),  # 1.2 waves: every tile streams
    (300, 94, (132, 168, 132)),  # 2.3 waves: the waves before the last full one stay data-parallel
    (264, 94, (264, 0, 0)),  # whole waves
    (250, 94, (250, 0, 0)),  # the last wave at least half full
    (160, 8, (160, 0, 0)),  # too few k-iterations to share
    (161, 94, (1, 160, 132)),  # stream-K tiles in whole clusters
])
def test_the_decomposition_follows_cutlass_heuristic(tiles, k_tiles, expected):
    split = stream_k.decompose(tiles, k_tiles, 132, cluster=2)
    assert (split.dp_tiles, split.sk_tiles, split.sk_units) == expected


@pytest.mark.parametrize("cluster", [1, 2])
def test_every_k_iteration_of_every_tile_runs_once_and_one_unit_finishes_it(cluster):
    split = stream_k.decompose(160, 94, 132, cluster)
    units = stream_k.unit_segments(split, 94, cluster)
    covered = np.zeros((split.sk_tiles, 94), dtype=int)
    stores = np.zeros(split.sk_tiles, dtype=int)
    for segments in units:
        for s in segments:
            covered[s.tile, s.k_start:s.k_start + s.k_count] += 1
            stores[s.tile] += s.role in ("whole", "finish")
    assert len(units) == split.sk_units
    assert (covered == 1).all() and (stores == 1).all()


def test_units_walk_their_tiles_backwards_and_a_cluster_shares_its_k_offsets():
    """CUTLASS's units start on the beginning of their last tile, so nearly all start at
    k = 0, and end on the part of a tile that reduces its peers' partials."""
    units = stream_k.unit_segments(stream_k.decompose(160, 94, 132, 2), 94, 2)
    starts = [segments[0].k_start for segments in units]
    assert sum(start == 0 for start in starts) >= 0.9 * len(units)
    assert all(s.role != "partial" or s.k_start == 0 for segments in units for s in segments[:1])
    for first, second in zip(units[::2], units[1::2]):
        assert [(s.k_start, s.k_count) for s in first] == [(s.k_start, s.k_count) for s in second]
        assert [s.tile // 2 for s in first] == [s.tile // 2 for s in second]


def matrix_flops(trace) -> float:
    variables, template_of = program_vars(trace), program_templates(trace)
    total = 0.0
    for pid in range(trace.num_programs):
        for step in trace.templates[template_of[pid]].steps:
            reps = step.repeat if isinstance(step.repeat, int) else int(variables[step.repeat][pid])
            total += reps * sum(c.flops for c in step.compute if c.unit == "matrix" and c.useful)
    return total


def test_a_streamed_gemm_computes_its_flops_once_and_stores_every_tile(h200):
    trace = build(h200, MAMF, {**COOPERATIVE, "tile_scheduler": "stream_k"})
    assert trace.metadata["stream_k"] == {"dp_tiles": 0, "sk_tiles": 160, "sk_units": 132}
    assert trace.num_programs == 132
    assert matrix_flops(trace) == pytest.approx(2 * 1280 * 4096 * 12032, rel=1e-12)


def test_walking_backwards_keeps_the_l2_reuse_of_a_data_parallel_wave(h200):
    """Units entering tiles at scattered k would read A and B blocks tens of iterations
    apart, past the L2's reach; CUTLASS's order keeps them within a few iterations."""
    streamed = build(h200, MAMF, {**COOPERATIVE, "tile_scheduler": "stream_k"})
    plain = build(h200, MAMF, COOPERATIVE)
    streamed_hits, plain_hits = shared_cache_hits(streamed, h200)[0].sum(), shared_cache_hits(plain, h200)[0].sum()
    assert streamed_hits >= 0.85 * plain_hits


def test_cublas_default_streams_a_quantised_last_wave_only(h200):
    quantised = GEMM.default_config(params(**MAMF), h200)
    assert quantised["tile_scheduler"] == "stream_k" and (quantised["block_m"], quantised["block_n"]) == (128, 256)
    square = GEMM.default_config(params(M=8192, N=8192, K=8192, impl="cublas"), h200)
    tiles = math.ceil(8192 / square["block_m"]) * math.ceil(8192 / square["block_n"])
    assert "tile_scheduler" not in square and not stream_k.decompose(tiles, 8192 // 64, 132, 2).streams


def test_ping_pong_has_no_stream_k_scheduler(h200):
    with pytest.raises(InputError, match="cooperative"):
        GEMM.resolve_config(params(**MAMF), {**COOPERATIVE, "schedule": "pingpong", "tile_scheduler": "stream_k"},
                            h200)
