"""The gemm family's implementations (``--param impl``): each builds its own kernel
(Triton's tutorial tiles, CUTLASS/cuBLAS warp-specialized persistent kernels, DeepGEMM's
fp8 block-scaled kernel with its own config heuristic) and refuses chips or dtypes it cannot
run on."""

from __future__ import annotations

import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.gemm_impls import deepgemm
from accelsim.families.search import run_config, split_params

GEMM = get_family("gemm")


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm")


def params(**given) -> dict:
    return split_params(GEMM, {k: str(v) for k, v in given.items()})[0]


def test_the_default_is_cublas_on_nvidia_and_triton_elsewhere(h100):
    plain = params(M=4096, N=4096, K=4096)
    assert GEMM.default_config(plain, h100) == GEMM.default_config({**plain, "impl": "cublas"}, h100)
    assert GEMM.build(plain, GEMM.default_config(plain, h100), h100).kernel.execution.persistent_ctas == 132
    mi300x = load_arch("mi300x")
    assert GEMM.default_config(plain, mi300x) == GEMM.default_config({**plain, "impl": "triton"}, mi300x)


def test_a_tile_given_below_128_rows_runs_ping_pong(h100):
    config = GEMM.resolve_config(params(M=4096, N=4096, K=4096), {"block_m": "64", "block_n": "128"}, h100)
    assert config["schedule"] == "pingpong"


def test_deepgemm_picks_the_fewest_waves_then_the_fullest_last_wave(h100):
    config = deepgemm.deepgemm_config(params(M=4096, N=7168, K=16384, dtype="fp8", impl="deepgemm"), h100)
    tiles = math.ceil(4096 / config["block_m"]) * math.ceil(7168 / config["block_n"])
    assert config["block_k"] == 128 and 3 <= config["num_stages"] <= 8
    for bm in (64, 128, 256):
        for bn in deepgemm.BLOCK_NS:
            if bm > 128 and bn > 128:
                continue
            assert math.ceil(math.ceil(4096 / bm) * math.ceil(7168 / bn) / 132) >= math.ceil(tiles / 132)
    assert config["persistent_ctas"] == math.ceil(tiles / math.ceil(tiles / 132)) + (config["cluster"] == 2) * 0


def test_deepgemm_contiguous_groups_take_128_row_tiles(h100):
    config = deepgemm.deepgemm_config(params(M=32768, N=4096, K=7168, dtype="fp8", groups=4, impl="deepgemm"), h100)
    assert config["block_m"] == 128


def test_deepgemm_promotes_every_k_block_on_the_cuda_cores(h100):
    p = params(M=4096, N=4096, K=7168, dtype="fp8", impl="deepgemm")
    trace = GEMM.build(p, GEMM.default_config(p, h100), h100)
    step = trace.templates[0].steps[0]
    assert [c.unit for c in step.compute] == ["matrix", "vector"]
    assert step.compute[1].flops == 2 * step.compute[0].shape[0] * step.compute[0].shape[1]
    assert not step.compute[1].useful
    execution = trace.kernel.execution
    assert execution.loads == "tma" and execution.persistent_ctas <= 132 and execution.consumers in (1, 2)


def test_one_consumer_leaves_the_promotion_exposed(h100):
    """A 64-row tile has one math warpgroup: its promotion waits for its own MMAs."""
    narrow = params(M=64, N=7168, K=7168, dtype="fp8", impl="deepgemm")
    config = GEMM.default_config(narrow, h100)
    assert config["block_m"] == 64 and GEMM.build(narrow, config, h100).kernel.execution.consumers == 1


def test_deepgemm_refuses_what_it_cannot_run(h100):
    with pytest.raises(InputError, match="fp8"):
        GEMM.resolve_config(params(M=4096, N=4096, K=4096, dtype="bf16", impl="deepgemm"), {}, h100)
    with pytest.raises(InputError, match="Hopper"):
        GEMM.resolve_config(params(M=4096, N=4096, K=4096, dtype="fp8", impl="deepgemm"), {},
                            load_arch("a100-sxm4-80gb"))


def test_cutlass_schedules(h100):
    p = params(M=8192, N=8192, K=8192, impl="cutlass")
    cooperative = GEMM.resolve_config(p, {"schedule": "cooperative"}, h100)
    pingpong = GEMM.resolve_config(p, {"schedule": "pingpong", "block_m": 128, "block_n": 128}, h100)
    assert GEMM.build(p, cooperative, h100).kernel.execution.epilogue == "exposed"
    assert GEMM.build(p, pingpong, h100).kernel.execution.epilogue == "overlapped"
    with pytest.raises(InputError, match="block_m"):
        GEMM.resolve_config(p, {"schedule": "cooperative", "block_m": 64}, h100)
    schedules = {c["schedule"] for c in GEMM.config_space(p, h100)}
    assert schedules == {"cooperative", "pingpong"}


def test_cublas_on_ampere_is_the_multistage_kernel():
    a100 = load_arch("a100-sxm4-80gb")
    p = params(M=4096, N=4096, K=4096, impl="cublas")
    assert GEMM.build(p, GEMM.default_config(p, a100), a100).kernel.execution is None


def test_a_warp_specialized_gemm_keeps_its_flops(h100):
    p = params(M=4096, N=4096, K=4096, impl="cublas")
    sim = run_config(GEMM, p, GEMM.default_config(p, h100), h100).sim
    assert sim.flops == 2 * 4096**3


def test_tpus_refuse_a_gpu_library():
    with pytest.raises(InputError, match="Pallas"):
        GEMM.resolve_config(params(M=1024, N=1024, K=1024, impl="cublas"), {}, load_arch("tpu-v5e"))
