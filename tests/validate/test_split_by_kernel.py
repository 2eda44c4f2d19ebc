"""``--split-by kernel``: every record of one kernel (its configs, in a tile sweep) falls on
one side of the split, so a held-out kernel was never fitted at any config; calibrate
records the split in the overlay and validate labels its report the same way. The
default split (by record id) is unchanged."""

from __future__ import annotations

import json
import re

from accelsim.validate.calibrate import holds_out, is_held_out, kernel_key
from accelsim.validate.compare import Measurement, read_measurements

CONFIGS = [{"block_rows": rows, "num_warps": warps} for rows in (1, 2, 4) for warps in (4, 8)]
SHAPES = [(rows, cols) for rows in (1024, 2048, 4096, 16384) for cols in (512, 1024, 2048)]


def measurement(rows: int, cols: int, config: dict, implementation: str = "sweep") -> Measurement:
    return Measurement(id=f"rmsnorm-{rows}x{cols}-br{config['block_rows']}-w{config['num_warps']}", arch="h100-sxm",
                       family="rmsnorm", implementation=implementation,
                       params={"rows": rows, "cols": cols, "dtype": "bf16"}, latency_s=1e-5, source="test",
                       file="x.json", config=config)


def test_a_kernel_is_held_out_at_all_of_its_configs_or_none():
    for rows, cols in SHAPES:
        sides = {holds_out(measurement(rows, cols, c), "kernel") for c in CONFIGS}
        assert len(sides) == 1
    # ... while the default split by record id cuts through kernels
    assert any(len({holds_out(measurement(r, c, cfg)) for cfg in CONFIGS}) == 2 for r, c in SHAPES)
    assert all(holds_out(measurement(r, c, cfg)) == is_held_out(measurement(r, c, cfg).id)
               for r, c in SHAPES for cfg in CONFIGS)


def test_the_kernel_key_ignores_the_config_but_not_the_implementation():
    a, b = measurement(1024, 1024, CONFIGS[0]), measurement(1024, 1024, CONFIGS[-1])
    assert kernel_key(a) == kernel_key(b)
    assert kernel_key(a) != kernel_key(measurement(1024, 1024, CONFIGS[0], implementation="other"))


STREAM_CONFIGS = [{"block_elements": elements, "num_warps": warps} for elements in (256, 1024, 4096) for warps in (4, 8)]
STREAM_SIZES = [2**n for n in range(16, 28)]


def test_calibrate_and_validate_split_by_kernel(cli, tmp_path):
    """A STREAM kernel swept over its launch configs (calibrate fits microbenchmark-level records only)."""
    records = [{"id": f"stream-{n}-be{cfg['block_elements']}-w{cfg['num_warps']}", "family": "elementwise",
                "implementation": "sweep", "params": {"elements": n, "dtype": "fp32", "inputs": 1, "outputs": 1},
                "config": cfg, "latency_s": 2e-5 * (1 + i % 3) * n / 2**24, "source": "test"}
               for i, (n, cfg) in enumerate((n, cfg) for n in STREAM_SIZES for cfg in STREAM_CONFIGS)]
    path = tmp_path / "elementwise.json"
    path.write_text(json.dumps({"schema_version": 1, "kind": "measurements", "family": "elementwise",
                                "device": {"name": "synthetic", "arch": "h100-sxm"},
                                "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None,
                                               "source": "synthetic"},
                                "records": records}))
    overlay = tmp_path / "overlay.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "--fit", "hbm.efficiency",
                 "--split-by", "kernel", "-o", str(overlay))
    assert result.code == 0, result.err
    assert "(--split-by kernel)" in overlay.read_text()
    out = tmp_path / "report"
    # the overlay says how it was split, so validate labels the report that way unasked
    result = cli("validate", "--arch", str(overlay), "--measurements", str(path), "-o", str(out))
    assert result.code == 0, result.err
    text = (out / "report.md").read_text()
    labels: dict[str, set[str]] = {}
    for m in read_measurements([path]):
        row = re.search(rf"\| {re.escape(m.id)} \| (fitted|held-out) \|", text)
        labels.setdefault(kernel_key(m), set()).add(row.group(1))
    assert all(len(sides) == 1 for sides in labels.values())
    assert {"fitted", "held-out"} == set().union(*labels.values())


def test_an_unknown_split_is_bad_input(cli, tmp_path):
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(tmp_path), "--split-by", "shape",
                 "-o", str(tmp_path / "o.yaml"))
    assert result.code == 2 and "--split-by" in result.err
