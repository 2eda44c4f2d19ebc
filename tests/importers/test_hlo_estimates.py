"""XLA's cost model beside accelsim's: every fusion's ``estimated_cycles`` kept in the
trace, each op's time alone on the chip beside it, by kind and over the step, in
``replay``'s output."""

import gzip
import json
import math
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.importers.hlo import import_hlo
from accelsim.importers.hlo_estimates import compare_with_xla
from accelsim.system.costs import CostModel
from accelsim.system.replay import chip_of

V5E = Path(__file__).parent / "fixtures" / "tpu_v5e_4x4_train_step.hlo.txt.gz"


@pytest.fixture(scope="module")
def trace():
    return import_hlo(V5E, system="tpu-v5e-4x4")


def test_estimates_are_the_cycles_xla_wrote(trace):
    estimates = trace.metadata["xla_estimates"]
    assert estimates and all(entry["cycles"] > 0 for entry in estimates.values())
    assert {entry["kind"] for entry in estimates.values()} >= {"kLoop", "kOutput"}
    cycles = math.fsum(entry["cycles"] for entry in estimates.values())
    assert trace.metadata["per_device_totals"]["xla_estimated_cycles"] == cycles
    lines = {line.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%"): line
             for line in gzip.decompress(V5E.read_bytes()).decode().splitlines() if " = " in line}
    entry_ops = [name for name in estimates if "/" not in name]  # outside loops: one execution each
    assert entry_ops
    for name in entry_ops:
        assert f'"estimated_cycles":"{estimates[name]["cycles"]}"' in lines[name]


def test_side_by_side_prices_each_op_as_the_replay_does(trace):
    chip = chip_of(load_arch("tpu-v5e-4x4"))
    xla = compare_with_xla(trace, chip)
    ops = {op.name: op for op in trace.programs[0].ops}
    costs = CostModel(chip, Path("."))
    for estimate in xla.ops[:20]:
        assert estimate.accelsim_s == costs.cost(ops[estimate.name], "op").seconds
        assert estimate.xla_s == trace.metadata["xla_estimates"][estimate.name]["cycles"] / 1.5e9
    kinds = xla.by_kind()
    assert sum(k.ops for k in kinds) == len(xla.ops)
    assert math.isclose(sum(k.xla_s for k in kinds), xla.xla_s)
    compute = sum(op.kind == "compute" for op in trace.programs[0].ops)
    assert len(xla.ops) + xla.unestimated_ops == compute


def test_kinds_carry_their_hbm_bytes_and_xla_smallest_op(trace):
    """What tells a fixed cost per op from a rate: XLA's smallest estimate of a kind, and
    the HBM rate its estimates imply (the kind's bytes over XLA's time)."""
    xla = compare_with_xla(trace, chip_of(load_arch("tpu-v5e-4x4")))
    ops = {op.name: op for op in trace.programs[0].ops}
    for kind in xla.by_kind():
        mine = [e for e in xla.ops if e.kind == kind.kind]
        assert kind.hbm_bytes == math.fsum(ops[e.name].bytes or 0.0 for e in mine)
        assert kind.fewest_xla_s == min(e.xla_s for e in mine) > 0
        assert kind.xla_hbm_bytes_per_s == kind.hbm_bytes / kind.xla_s


def test_a_trace_without_estimates_has_no_comparison(trace):
    plain = trace.model_copy(update={"metadata": {}})
    assert compare_with_xla(plain, chip_of(load_arch("tpu-v5e-4x4"))) is None


@pytest.mark.parametrize("cycles", [-1, "many", float("inf"), True, pytest.param(10**400, id="10^400: past a float")])
def test_malformed_estimates_are_one_line(trace, cycles):
    name = next(iter(trace.metadata["xla_estimates"]))
    bad = trace.model_copy(update={"metadata": {"xla_estimates": {name: {"cycles": cycles, "kind": "kLoop"}}}})
    with pytest.raises(InputError, match="expected a number of cycles from 0") as exc:
        compare_with_xla(bad, chip_of(load_arch("tpu-v5e-4x4")))
    assert exc.value.field.startswith("metadata.xla_estimates")


def test_replay_prints_and_reports_the_comparison(cli, tmp_path):
    out = tmp_path / "step.json"
    assert cli("import", "hlo", str(V5E), "--system", "tpu-v5e-4x4", "-o", str(out)).code == 0
    text = cli("replay", str(out), "--system", "tpu-v5e-4x4")
    assert text.code == 0, text.err
    assert "XLA's estimate" in text.out and "kOutput:" in text.out and "at 1.5 GHz" in text.out
    data = json.loads(cli("replay", str(out), "--system", "tpu-v5e-4x4", "--json").out)
    estimate = data["xla_estimate"]
    assert estimate["ops"] == len(json.loads(out.read_text())["metadata"]["xla_estimates"])
    assert estimate["by_kind"][0]["xla_s"] >= estimate["by_kind"][-1]["xla_s"]
    assert len(estimate["largest_differences"]) == 20
