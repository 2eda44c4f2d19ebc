"""The committed public reference set: valid files, sourced records, rebuildable from its input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import build_reference
import measurement_format as fmt
import microbenchmark_format as micro_fmt

REFERENCE = Path(__file__).resolve().parents[2] / "validation" / "reference"
MICRO_FILES = sorted(REFERENCE.glob(f"*/{build_reference.MICRO}.json"))
POWER = REFERENCE / "power"
"""Power readings (docs/power.md): their own format, written by hand, not by build_reference."""
FILES = sorted(p for p in set(REFERENCE.glob("*/*.json")) - set(MICRO_FILES) if p.parent != POWER)
"""Kernel-family files; ``MICRO_FILES``: the microbenchmark files beside them."""


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_is_a_reference_set():
    families = {p.stem for p in FILES}
    assert {"gemm", "attention", "layernorm", "rmsnorm", "elementwise"} <= families


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_file_is_valid(path):
    data = _load(path)
    assert fmt.validate_measurement_file(data) == []
    assert data["family"] == path.stem
    assert data["device"]["arch"] == path.parent.name
    assert data["device"]["arch"] in fmt.KNOWN_ARCHS


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_records_are_sourced_measurements(path):
    data = _load(path)
    assert data["records"]
    for record in data["records"]:
        assert record["source"].strip(), record["id"]
        assert record["measured"] is True
        family = data["family"]
        required = fmt.FAMILY_PARAMS[family]
        assert tuple(record["params"])[:len(required)] == required
        assert set(record["params"]) - set(required) <= set(fmt.OPTIONAL_PARAMS.get(family, ()))
        assert record["latency_s"] > 0
        assert record["flops"] == fmt.nominal_flops(data["family"], record["params"])
        assert record["bytes"] == fmt.min_bytes(data["family"], record["params"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_derived_latencies_say_so(path):
    for record in _load(path)["records"]:
        assert "latency_s derived from" in record["notes"] or "latency_s is the source's" in record["notes"], record["id"]


def test_rebuilding_reproduces_the_committed_files(tmp_path):
    source = next((p for p in build_reference.INPUT_CANDIDATES if p.is_file()), None)
    if source is None:
        pytest.skip("shared/reference/public_measurements.json is not beside this checkout")
    assert build_reference.main(["--input", str(source), "--out", str(tmp_path)]) == 0
    rebuilt = sorted(p.relative_to(tmp_path) for p in tmp_path.glob("*/*.json"))
    assert rebuilt == sorted(p.relative_to(REFERENCE) for p in FILES + MICRO_FILES)
    for relative in rebuilt:
        assert _load(tmp_path / relative) == _load(REFERENCE / relative), relative


def test_added_measurements_are_sourced_and_all_converted():
    """The records this repository compiled beyond the shared file: safe YAML, each measured
    and sourced, and every one becomes a reference record but the JAX guide's 1024^3 rows
    (host-bound, left out with that reason)."""
    import yaml

    records = yaml.safe_load(build_reference.ADDED.read_text(encoding="utf-8"))["records"]
    assert records
    for raw in records:
        assert raw["measured"] is True and raw["source"].strip() and raw["notes"].strip()
    converted, left_out = build_reference.convert_all(records)
    assert len(converted) + sum(left_out.values()) == len(records)
    assert all("1024^3" in reason for _, reason in left_out), left_out
    committed = {r["id"] for p in FILES + MICRO_FILES for r in _load(p)["records"]}
    assert {c.record["id"] for c in converted} <= committed


@pytest.mark.parametrize("batch, kv_heads, seq_kv, block_n, split", [
    (1, 4, 1024, 64, 16),  # 1K: 32 splits of 64 would leave splits without keys
    (1, 4, 32768, 64, 32),
    (1, 4, 262144, 128, 32),  # 128-token tiles above 128K
    (32, 8, 4096, 64, 1),  # 256 CTAs already: no split
    (16, 8, 4096, 64, 2),
    (4, 8, 32768, 64, 8),
    (1, 1, 4096, 64, 32),  # batch one keeps its own rule
])
def test_tileops_records_name_the_config_the_doc_gives(batch, kv_heads, seq_kv, block_n, split):
    config, how = build_reference.tileops_decode_config(batch, kv_heads, seq_kv)
    assert config == {"block_m": 64, "block_n": block_n, "num_stages": 2, "num_warps": 4, "split_kv": split}
    assert f"{split} split" in how


def test_only_tileops_decode_records_carry_a_config():
    """TileOPs' twelve table rows, and at 256K batch one its 'Before' column and two of its
    experiments: four configs of one kernel, ranked together (one implementation)."""
    (path,) = [p for p in FILES if p.parent.name == "h200-sxm" and p.stem == "attention"]
    records = _load(path)["records"]
    ours = [r for r in records if "--tileops" in r["id"]]
    assert len(ours) == 15 and all("config" in r for r in ours)
    assert not any("config" in r for r in records if r not in ours)
    assert len({r["implementation"] for r in ours}) == 1
    at_256k = [r["config"]["split_kv"] for r in ours if r["params"]["seq_kv"] == 262144]
    assert sorted(at_256k) == [16, 32, 32, 64]
    tileops_doc = [r for r in records if "tile-ai/TileOPs" in r["source"]]
    assert len(tileops_doc) == 27 and all(r.get("conditions") == {"clock": "1500 MHz"} for r in tileops_doc)
    others = [r.get("conditions") for r in records if r not in tileops_doc]  # the others ran at their own clocks,
    assert all(c is None or c == {"power.dvfs.boost.from_idle": "true"} for c in others)  # some from idle


@pytest.mark.parametrize("cols, warps", [(1024, 4), (1500, 8), (2048, 8), (8191, 16), (8192, 16), (16384, 16),
                                         (16385, 32), (32768, 32)])
def test_liger_launch_is_calculate_settings(cols, warps):
    """One row per program; warps from the Triton block, next_power_of_2(cols)."""
    assert build_reference.liger_norm_config(cols) == {"block_rows": 1, "num_warps": warps}


def test_liger_records_name_liger_launch():
    liger = [r for path in FILES for r in _load(path)["records"] if r["id"].endswith("--liger")]
    rowwise = [r for r in liger if r["family"] != "elementwise"]
    assert len(rowwise) >= 22  # A100 80GB and H100 NVL
    for record in rowwise:
        assert record["config"] == build_reference.liger_norm_config(record["params"]["cols"]), record["id"]
    relu_squared = [r for r in liger if r["family"] == "elementwise"]  # one program per row, the row as its block
    assert len(relu_squared) == 8
    for record in relu_squared:
        cols = record["config"]["block_elements"]
        assert record["params"]["elements"] == 4096 * cols
        assert record["config"]["num_warps"] == build_reference.liger_norm_config(cols)["num_warps"]
    others = [r for path in FILES for r in _load(path)["records"] if r["family"] in ("layernorm", "rmsnorm")
              and not r["id"].endswith("--liger")]
    assert others and not any("config" in r for r in others)


def test_records_timed_after_a_write_flush_say_so():
    """Liger's benchmark scripts and FlashMLA's test time with ``triton.testing.do_bench``, which
    zeroes 256 MB before each timed call; TileOPs' bench zeroes a buffer of the L2's size;
    cudnn-frontend's training SDPA benchmark zeroes 256 MiB; no other source says how it flushed
    the L2."""
    records = [r for path in FILES for r in _load(path)["records"]]
    do_bench = [r for r in records if "Liger-Kernel" in r["source"] or "FlashMLA" in r["notes"]]
    tileops = [r for r in records if "tile-ai/TileOPs" in r["source"]]
    cudnn_training = [r for r in records if "sdpa_benchmark_training" in r["source"]]
    # 67 norm and softmax records, 8 relu_squared, 5 FlashMLA decodes; 65 GB200 and 40 H200 training SDPA calls
    assert len(do_bench) == 80 and len(tileops) == 27 and len(cudnn_training) == 105
    assert all(r["cache_flush"] == build_reference.DO_BENCH_FLUSH for r in do_bench)
    assert all(r["cache_flush"] == build_reference.TILEOPS_FLUSH for r in tileops)
    assert all(r["cache_flush"] == build_reference.CUDNN_SDPA_FLUSH for r in cudnn_training)
    flushed = do_bench + tileops + cudnn_training
    assert not any("cache_flush" in r for r in records if r not in flushed)


def test_rebuilding_removes_only_files_it_wrote(tmp_path):
    """A folder's other JSON files stay; bad input is one line, exit 2, before anything changes."""
    keep = tmp_path / "mine" / "data.json"
    keep.parent.mkdir()
    keep.write_text('{"precious": 1}')
    empty_added = tmp_path / "added.yaml"
    empty_added.write_text("records: []\n")
    source = tmp_path / "public.json"
    source.write_text("[]")
    assert build_reference.main(["--input", str(source), "--added", str(empty_added), "--out", str(tmp_path)]) == 0
    assert keep.read_text() == '{"precious": 1}'
    source.write_text('[{"category": "gemm"}]')
    assert build_reference.main(["--input", str(source), "--added", str(empty_added), "--out", str(tmp_path)]) == 2
    assert keep.exists()


def test_microbenchmarks_are_their_own_kind_with_sources():
    """gpu-benches' pointer chases, cache bandwidths and capacities and the stencil kernels,
    per chip: valid microbenchmark files, every record sourced and its figures unit-named."""
    assert {p.parent.name for p in MICRO_FILES} >= {"h100-pcie", "h200-sxm", "a100-sxm4-80gb", "a100-sxm4-40gb"}
    for path in MICRO_FILES:
        data = _load(path)
        assert micro_fmt.validate_file(data) == [], path
        assert data["device"]["arch"] == path.parent.name
        for record in data["records"]:
            assert record["source"].strip() and record["notes"].strip(), record["id"]
    chases = [r for p in MICRO_FILES for r in _load(p)["records"] if r["benchmark"] == "load_latency"]
    assert len(chases) == 25 and all(r["latency_s"] == pytest.approx(
        r["latency_cycles"] / (r["params"]["clock_mhz_assumed"] * 1e6)) for r in chases)


def test_records_a_published_value_came_from_say_so():
    """The H200 STREAM init record set h200-sxm's HBM efficiency: it checks nothing there."""
    informs = {(p.parent.name, r["id"]): tuple(r["informs"]) for p in FILES for r in _load(p)["records"]
               if "informs" in r}
    assert informs == build_reference.DERIVED_VALUES
    import yaml

    for (arch, _), paths in informs.items():
        config = yaml.safe_load((REFERENCE.parents[1] / "arch_configs" / "gpu" / f"{arch}.yaml").read_text())
        for path in paths:
            leaf = config
            for part in path.split("."):
                leaf = leaf[part]
            assert leaf["basis"] == "derived", (arch, path)

