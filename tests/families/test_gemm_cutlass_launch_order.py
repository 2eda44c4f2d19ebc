"""CUTLASS's persistent scheduler launches its tiles in its default order (``max_swizzle_size``
1, the raster heuristic): along N a cluster's rows walk a row of tiles, along M (more tile
columns than rows) the whole column; cuBLAS keeps the 8-row groups. The order decides how
often B comes from HBM once it outgrows the L2."""

from __future__ import annotations

from accelsim.families.search import run_config
from tests.families.test_gemm_impls import GEMM, h100, params  # noqa: F401 (h100 is a fixture)


def test_along_n_the_cluster_rows_walk_a_row_of_tiles(h100):
    config = GEMM.default_config(params(M=8192, N=8192, K=512, dtype="fp16", impl="cutlass"), h100)
    assert (config["block_m"], config["block_n"], config["cluster"], config["group_m"]) == (128, 256, 2, 2)


def test_along_m_the_whole_column_goes_first(h100):
    # 16 tile rows (a whole number of 2-row clusters) against 64 tile columns
    config = GEMM.default_config(params(M=2048, N=16384, K=512, dtype="fp16", impl="cutlass"), h100)
    assert config["group_m"] == 16


def test_cublas_keeps_its_8_row_groups(h100):
    given = params(M=8192, N=8192, K=512, dtype="fp16", impl="cublas")
    assert GEMM.default_config(given, h100)["group_m"] == 8
    assert {config["group_m"] for config in GEMM.config_space(given, h100)} == {8}


def test_walking_a_row_rereads_b_from_hbm_each_wave(h100):
    # 8192^3 fp16: B (134 MB) outgrows the 50 MB L2, so a row-by-row walk reads it once a wave
    given = params(M=8192, N=8192, K=8192, dtype="fp16", impl="cutlass")
    config = GEMM.default_config(given, h100)
    by_rows = run_config(GEMM, given, config, h100).sim.hbm_bytes
    grouped = run_config(GEMM, given, {**config, "group_m": 8}, h100).sim.hbm_bytes
    assert by_rows > 1.3 * grouped
