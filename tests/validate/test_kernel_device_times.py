"""Records timed kernel by kernel (``kernel_device_s``, from ``measure_gpu.py``): each
measured kernel beside the simulated kernel at its place in the call, when the call
launched as many kernels as the trace has; the report lists calls of several kernels."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.validate.compare import compare, kernel_rows, read_measurements

HEADER = {"kind": "measurements", "schema_version": 1, "family": "attention", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}
DECODE = {"batch": 1, "heads": 32, "kv_heads": 4, "seq_q": 1, "seq_kv": 16384, "head_dim": 128}
SPLIT = {"block_m": 16, "block_n": 64, "num_stages": 2, "num_warps": 4, "split_kv": 32}


def _write(tmp_path, records):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, "records": records}))
    return path


def _record(rid, launches, config=SPLIT):
    return {"id": rid, "family": "attention", "params": DECODE, "config": config, "latency_s": 20e-6,
            "latency_kind": "device",
            "kernel_device_s": [{"name": name, "device_s": s} for name, s in launches]}


def test_a_split_decode_pairs_its_two_kernels(tmp_path):
    path = _write(tmp_path, [_record("split", [("flash_fwd_splitkv", 12e-6), ("combine", 3e-6)]),
                             _record("extra", [("fill", 1e-6), ("flash_fwd_splitkv", 12e-6), ("combine", 3e-6)])])
    paired, unpaired = compare(read_measurements([path]))
    assert len(paired.per_kernel_s) == 2
    assert sum(paired.per_kernel_s) == pytest.approx(paired.predicted_s)  # device time: the launches left out
    rows = kernel_rows([paired, unpaired])
    assert [(r.name, r.predicted_s) for r in rows[:2]] == [("flash_fwd_splitkv", paired.per_kernel_s[0]),
                                                           ("combine", paired.per_kernel_s[1])]
    assert [r.predicted_s for r in rows[2:]] == [None, None, None]  # three launched, two simulated


def test_the_report_lists_them(tmp_path, cli):
    path = _write(tmp_path, [_record("split", [("flash_fwd_splitkv", 12e-6), ("combine", 3e-6)])])
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Kernels within a call" in text and "2 kernels pair with a simulated one" in text
    assert "| split | 1: `combine` | 3.0 us |" in text


@pytest.mark.parametrize("value", [[{"name": "k", "device_s": 0}], [{"name": "k"}], {"k": 1e-6}, [], None,
                                   [{"name": "k", "device_s": 1e-6, "extra": 1}], [{"name": "k", "device_s": 10**400}]])
def test_bad_kernel_times_name_the_record(tmp_path, value):
    record = _record("split", [])
    record["kernel_device_s"] = value
    with pytest.raises(InputError, match=r"records\[0\]\.kernel_device_s"):
        read_measurements([_write(tmp_path, [record])])


def test_memsets_copies_and_fills_are_set_aside_when_the_counts_differ(tmp_path):
    """A call that zeroes a buffer before its two kernels (as PyTorch fills an output) still
    pairs its kernels with the simulated ones; the fill pairs with none."""
    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1> >"
    path = _write(tmp_path, [_record("a", [(fill, 1e-6), ("flash_fwd_splitkv", 12e-6), ("Memset (Device)", 1e-6),
                                           ("combine", 3e-6)]),
                             _record("b", [("Memcpy DtoD (Device -> Device)", 1e-6), ("flash_fwd_splitkv", 12e-6)])])
    a, b = compare(read_measurements([path]))
    rows = kernel_rows([a, b])
    assert [(r.name[:14], r.predicted_s) for r in rows[:4]] == [
        (fill[:14], None), ("flash_fwd_spli", a.per_kernel_s[0]), ("Memset (Device", None), ("combine", a.per_kernel_s[1])]
    assert [r.predicted_s for r in rows[4:]] == [None, None]  # one kernel left for two simulated: none pairs
