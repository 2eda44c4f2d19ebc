"""measure_pallas.py on a GPU: a lowering that cannot take a kernel at all (the lowering
raises NotImplementedError) is tried once per kernel; later cases of that kernel skip it
with the remembered reason instead of spending their time budget on it."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("jax")

import measure_pallas as mp  # noqa: E402
import measurement_format as fmt  # noqa: E402


def test_a_lowering_that_cannot_take_the_kernel_is_tried_once(monkeypatch, tmp_path):
    calls = []

    def prepare(p, c, interpret, device, rng):
        calls.append(c["block_m"])
        raise NotImplementedError("scratch memory not implemented in the Triton backend")

    fake = mp.Kernel("fake", "gemm", "a kernel no lowering takes", None, prepare, ("triton",), "")
    monkeypatch.setitem(mp.KERNELS, "fake", fake)
    file = fmt.FamilyFile(path=tmp_path / "gemm.json", family="gemm", device={}, provenance={})
    sweep = mp.Sweep(device=None, on_gpu=True, scale="gpu", timer=None, deadline=time.monotonic() + 600,
                     files={"gemm": file})
    params = {"M": 256, "N": 256, "K": 256, "dtype": "bf16", "batch": 1}
    for index, block in enumerate((64, 128, 256)):
        mp.run_case(mp.Case("fake", params, mp._gemm_cfg(block, 64, 64)), index, sweep)
    assert calls == [64]
    assert len(file.skipped) == 3
    assert all("scratch memory not implemented" in s["reason"] for s in file.skipped)
    assert "as for an earlier case" in file.skipped[2]["reason"]
