"""save_trace then load_trace gives the same trace, and large grids stay compact on disk."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import gemm
from accelsim.families.base import parse_values
from accelsim.trace.kernel import KernelTrace, load_trace, save_trace


def gemm_trace(arch: str, **shape) -> KernelTrace:
    chip = load_arch(arch)
    params = parse_values(gemm.PARAMS, shape, "test")
    config = gemm.FAMILY.resolve_config(params, {"block_m": 128, "block_n": 128}, chip)
    return gemm.FAMILY.build(params, config, chip)


def every_feature() -> KernelTrace:
    """Two templates, per-program template indices and variables, loops, sums, all levels."""
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": "mixed", "grid": [2, 3], "launch_order": "last_axis_fastest",
            "dimension_semantics": ["parallel", "arbitrary"],
            "resources": {"local_memory_bytes": 4096, "warps": 8, "registers_per_thread": 96},
            "pipeline_depth": 3,
        },
        "tensors": {"A": {"shape": [64, 64], "dtype": "fp8"}, "B": {"shape": [64], "dtype": "fp32"}},
        "templates": [
            {"name": "body", "steps": [
                {"repeat": "n", "loop_var": "k", "transfers": [
                    {"tensor": "A", "block": ["row", "k0+k+1"], "bytes": 1024},
                    {"tensor": "B", "block": [0], "bytes": 256, "level": "shared_cache"},
                ], "compute": [
                    {"unit": "matrix", "flops": 2048.0, "dtype": "fp8", "shape": [16, 8, 32]},
                    {"unit": "special", "flops": 0.5},
                ]},
                {"transfers": [{"tensor": "B", "block": ["p1"], "bytes": 4, "direction": "write", "level": "local"}]},
            ]},
            {"name": "edge", "steps": [{"compute": [{"unit": "vector", "flops": 1e-3, "dtype": "bf16"}]}]},
        ],
        "program_template": [0, 0, 1, 0, 0, 1],
        "program_vars": {"row": [0, 1, 2, 3, 4, 5], "n": [1, 2, 0, 4, 5, 0], "k0": [0, 0, 0, 8, 8, 8]},
        "metadata": {"family": "hand", "config": {"tile": [16, 8]}, "note": "ünïcode"},
    })


@pytest.mark.parametrize(
    "make",
    [
        every_feature,
        lambda: gemm_trace("h100-sxm", M=1000, N=300, K=200),
        lambda: gemm_trace("tpu-v5e", M=512, N=384, K=640),
    ],
    ids=["every-feature", "gpu-gemm", "tpu-gemm"],
)
def test_save_then_load_gives_an_equal_trace(tmp_path, make):
    trace = make()
    path = tmp_path / "trace.json"
    save_trace(trace, path)
    assert load_trace(path) == trace
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]  # no temporary file left behind


def test_saving_again_replaces_the_file(tmp_path):
    path = tmp_path / "trace.json"
    save_trace(gemm_trace("h100-sxm", M=4096, N=4096, K=64), path)
    small = every_feature()
    save_trace(small, path)
    assert load_trace(path) == small


def test_a_hundred_thousand_programs_fit_in_a_small_file(tmp_path):
    trace = gemm_trace("h100-sxm", M=40960, N=40960, K=128)
    assert trace.num_programs == 320 * 320
    assert len(trace.templates) == 1
    path = tmp_path / "big.json"
    save_trace(trace, path)
    assert path.stat().st_size < 4 * 1024**2  # a few integers per program, not a step list each
    loaded = load_trace(path)
    assert loaded.num_programs == trace.num_programs
    assert loaded.program_vars == trace.program_vars
