"""The collectives report names the records a published config was derived from."""

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_derivation_point_is_a_record_and_is_not_a_check(report_collectives):
    report = report_collectives
    records = {r["id"]: r for r in json.loads((ROOT / "validation/collectives/all_reduce.json").read_text())["records"]}
    measurements = {m.id: m for m in report.load_measurements(report.MEASUREMENTS)}
    for record_id, field in report.DERIVED_FROM.items():
        assert record_id in records
        assert report._role(measurements[record_id]) == "config derived from it"
        leaf = yaml.safe_load((ROOT / "arch_configs" / "systems" / f"{records[record_id]['system']}-published.yaml").read_text())
        for part in field.split("."):
            leaf = leaf[part]
        assert f"{records[record_id]['busbw_GBps']:g} GB/s" in " ".join(leaf["source"].split())  # it cites the figure
