"""Power records (``docs/power.md``): read with one-line errors, predicted by validate --power,
and fitted by calibrate --power on microbenchmark-level readings only."""

from __future__ import annotations

import json

import pytest
import yaml

from accelsim.arch.model import load_arch
from accelsim.validate.power import PowerRecord, fit_power, predict, read_power_records

COPY = {"bytes": 1 << 26}


def _write(tmp_path, records, name="power.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"schema_version": 1, "kind": "power_measurements", "records": records}))
    return path


def _copy_record(rid: str, energy_j: float, latency_s: float, level: str = "microbenchmark") -> dict:
    return {"id": rid, "arch": "h100-sxm", "kind": "kernel", "level": level, "family": "copy", "params": COPY,
            "latency_s": latency_s, "average_power_w": energy_j / latency_s, "source": "synthetic"}


@pytest.mark.parametrize("field, value, fragment", [
    ("average_power_w", -3, "records[0].average_power_w"),
    ("average_power_w", 1e9, "at most"),
    ("level", "step", "records[0].level"),
    ("latency_s", 1e6, "records[0].latency_s"),
])
def test_a_bad_record_is_one_line(cli, tmp_path, field, value, fragment):
    record = _copy_record("r", 1.0, 1e-3)
    record[field] = value
    path = _write(tmp_path, [record])
    result = cli("validate", "--arch", "h100-sxm", "--power", "--measurements", str(path), "-o", str(tmp_path / "o"))
    assert result.code == 2 and fragment in result.err and len(result.err.strip().splitlines()) == 1


def test_validate_reports_the_energy_error(cli, tmp_path):
    sim = predict(PowerRecord(id="x", arch="h100-sxm", kind="kernel", level="kernel", average_power_w=1.0,
                              source="s", family="copy", params=COPY, latency_s=1e-3), "h100-sxm")
    path = _write(tmp_path, [_copy_record("copy", sim.energy_j * 1.1, sim.latency_s, level="kernel"),
                             {"id": "idle", "arch": "h100-sxm", "kind": "idle", "level": "microbenchmark",
                              "average_power_w": 150.0, "source": "synthetic"}])
    result = cli("validate", "--arch", "h100-sxm", "--power", "--measurements", str(path), "-o", str(tmp_path / "o"))
    assert result.code == 0, result.err
    report = (tmp_path / "o" / "power.md").read_text()
    assert "-9.1%" in report and "-6.7%" in report  # 1/1.1 - 1; 140/150 - 1


def test_calibrate_fits_hbm_energy_and_idle_on_readings(tmp_path):
    """A reading made by a chip whose HBM costs 40 pJ/B (the config says 26) moves the fit toward
    it, and the fitted chip reproduces the reading (one reading: the prior shares the change
    between the terms it holds)."""
    truth = load_arch("h100-sxm", ["power.hbm_pj_per_byte=40"])
    base = predict(PowerRecord(id="x", arch="h100-sxm", kind="kernel", level="microbenchmark", average_power_w=1.0,
                               source="s", family="copy", params=COPY, latency_s=1e-3), "h100-sxm")
    true_j = base.energy_j + base.activity.hbm_bytes * (truth.power.hbm_j_per_byte - load_arch("h100-sxm").power.hbm_j_per_byte)
    records = read_power_records([_write(tmp_path, [
        _copy_record("copy", true_j, base.latency_s),
        {"id": "idle", "arch": "h100-sxm", "kind": "idle", "level": "microbenchmark", "average_power_w": 150.0,
         "source": "synthetic"}])])
    values = fit_power(records, "h100-sxm")
    assert values["power.idle"] == "150 W"
    assert 26 < values["power.hbm_pj_per_byte"] <= 40
    fitted = [f'power.static="{values["power.static"]}"', f'power.hbm_pj_per_byte={values["power.hbm_pj_per_byte"]}']
    again = predict(records[0], "h100-sxm", fitted)
    assert again.energy_j == pytest.approx(true_j, rel=0.02)


def test_calibrate_refuses_kernel_level_readings(cli, tmp_path):
    path = _write(tmp_path, [_copy_record("copy", 1.0, 1e-3, level="kernel")])
    result = cli("calibrate", "--arch", "h100-sxm", "--power", "--measurements", str(path), "-o",
                 str(tmp_path / "h100-power.yaml"))
    assert result.code == 2 and "kernel-level power records" in result.err


def test_calibrate_writes_an_overlay_that_loads(cli, tmp_path):
    path = _write(tmp_path, [{"id": "idle", "arch": "h100-sxm", "kind": "idle", "level": "microbenchmark",
                              "average_power_w": 150.0, "source": "synthetic"}])
    out = tmp_path / "h100-power.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--power", "--measurements", str(path), "-o", str(out))
    assert result.code == 0, result.err
    overlay = yaml.safe_load(out.read_text())
    assert overlay["extends"] == "h100-sxm" and overlay["power"]["idle"]["basis"] == "fitted"
    assert load_arch(str(out)).power.idle_w == 150.0
