"""The MMA-wait microbenchmark measures what it says on Hopper: compiled for sm_90 (no GPU needed),
its loop is one warpgroup's wgmma group, the decode tiles' instruction shapes, kept one in flight
(``wait_group 1``) or waited for before the CUDA cores read the result (``wait_group 0``)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import measure_micro  # noqa: E402


def loop_body(tile: tuple[int, int], waited: bool) -> str:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mma_loop, _ = measure_micro._compute_kernels()
    bn, bk = tile
    source = ASTSource(mma_loop, signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "out_ptr": "*fp32", "iters": "i32",
                                            "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                                            "WAITED": "constexpr"},
                       constexprs={"BM": 64, "BN": bn, "BK": bk, "WAITED": waited})
    try:
        ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
    except Exception as exc:  # noqa: BLE001 - no CUDA toolchain in this Triton install
        pytest.skip(f"Triton cannot compile for sm_90 here: {type(exc).__name__}")
    return ptx.split("Inner Loop Header")[1].split("_crit_edge")[0]


@pytest.mark.parametrize("tile, instruction", [((64, 128), "m64n64k16"), ((128, 64), "m64n128k16")])
def test_the_waited_loop_waits_for_every_group(tile, instruction):
    body = loop_body(tile, waited=True)
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", body)) == {instruction}
    assert body.count("wgmma.mma_async") == tile[1] // 16
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", body) == ["0"]


def test_the_plain_loop_keeps_one_group_in_flight():
    body = loop_body((64, 128), waited=False)
    assert body.count("wgmma.mma_async") == 8
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", body) == ["1"]
