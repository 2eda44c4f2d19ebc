"""The newcomer's exercise (docs/architecture.md): a kernel family, a collective algorithm
and a trace importer are each one module's worth of code plus one registration line.
Each toy here is registered from the test, no package file edited, and runs through the
CLI as the built-in ones do. A chip kind's engine strategy is one class and one line too;
a chip kind that configs can name needs more places, which must agree (the last tests)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path
from typing import Any, ClassVar, get_args

import pytest

from accelsim.arch import schema
from accelsim.arch.model import CHIP_KINDS, Chip, GpuChip, load_arch
from accelsim.engine.chip import ENGINES, simulate_kernel
from accelsim.engine.gpu import GpuEngine
from accelsim.families import FAMILIES
from accelsim.families.base import Family, Param
from accelsim.importers import IMPORTERS, Imported, Importer
from accelsim.network.collectives import ALGORITHMS, Plan, Request, needs, phase, plan
from accelsim.network.topology import Topology
from accelsim.system.trace import SystemTrace
from accelsim.trace.kernel import KernelTrace

# ---------------------------------------------------------------- a kernel family


def _fill_trace(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    """Writes ``bytes`` of zeros, ``block_bytes`` per program (a GPU kernel)."""
    block = config["block_bytes"]
    programs = math.ceil(params["bytes"] / block)
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": f"fill_{params['bytes']}B", "grid": [programs], "pipeline_depth": 1},
        "tensors": {"dst": {"shape": [programs * block], "dtype": "int8"}},
        "templates": [{"name": "fill", "steps": [
            {"transfers": [{"tensor": "dst", "block": ["p0"], "bytes": block, "direction": "write"}]}]}],
        "metadata": {"family": "fill", "params": dict(params), "config": dict(config)},
    })


FILL = Family(
    name="fill", description="a buffer set to zeros",
    params=(Param("bytes", int, help="buffer size"),),
    config_params=(Param("block_bytes", int, help="bytes per program"),),
    default_config=lambda params, chip: {"block_bytes": 65536},
    config_space=lambda params, chip: [{"block_bytes": b} for b in (16384, 65536, 262144)],
    build=_fill_trace,
)

# ---------------------------------------------------------------- a collective algorithm


def chain(topo: Topology, req: Request, proto) -> Plan:
    """A broadcast passed down the ranks in order, the whole buffer at each hop."""
    needs(req, ("broadcast",), "chain")
    streams = [(a, b, req.size_bytes) for a, b in zip(req.ranks, req.ranks[1:])]
    return plan("chain", topo, [[phase(topo, streams, len(req.ranks) - 1, proto)]], proto)

# ---------------------------------------------------------------- a trace importer


def _steps_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="lines of DEVICES SECONDS: a step of that many devices computing that long")


def _steps_convert(args: argparse.Namespace) -> Imported:
    devices, seconds = Path(args.file).read_text(encoding="utf-8").split()
    return Imported(SystemTrace.model_validate({
        "schema_version": 1, "kind": "system_trace", "name": "toy step", "num_devices": int(devices),
        "programs": [{"name": "spmd", "devices": [f"0-{int(devices) - 1}"],
                      "ops": [{"name": "work", "kind": "compute", "duration_s": float(seconds)}]}],
    }), ("one op per device",))


STEPS = Importer(name="steps", help="a one-line toy format", add_arguments=_steps_add_arguments,
                 inputs=lambda args: [args.file], convert=_steps_convert)


# ---------------------------------------------------------------- a chip kind's engine strategy


class ToyChip(GpuChip):
    """A GPU that a firmware scheduler feeds: every kernel waits ``DISPATCH_S`` more."""

    kind: ClassVar[str] = "toy"


class ToyEngine(GpuEngine):
    """The GPU strategy, plus the toy's dispatch: a strategy need not start from scratch."""

    DISPATCH_S = 1e-6

    def simulate(self, trace, chip, **options):
        sim = super().simulate(trace, chip, **options)
        return dataclasses.replace(sim, latency_s=sim.latency_s + self.DISPATCH_S)

    def lower_bound_s(self, trace, chip, costs, hits, shortcuts) -> float:
        return super().lower_bound_s(trace, chip, costs, hits, shortcuts) + self.DISPATCH_S


@pytest.fixture
def registered():
    """Each toy's one registration line; taken back afterwards."""
    FAMILIES.register("fill", FILL)
    ALGORITHMS.register("chain", chain)
    IMPORTERS.register("steps", STEPS)
    yield
    for registry, name in ((FAMILIES, "fill"), (ALGORITHMS, "chain"), (IMPORTERS, "steps")):
        registry.unregister(name)


def test_a_kernel_family_runs_and_searches_its_configs(registered, cli):
    given = ("simulate", "--arch", "h100-sxm", "--kernel", "fill", "--param", "bytes=67108864", "--json")
    result = cli(*given)
    assert result.code == 0, result.err
    out = json.loads(result.out)
    assert out["hbm_bytes"] == 2**26 and out["bound"] == "hbm" and out["config"] == {"block_bytes": 65536}
    searched = json.loads(cli(*given, "--param", "config=auto").out)
    assert searched["configs_searched"] == 3 and searched["latency_s"] <= out["latency_s"]


def test_a_chip_config_may_scope_values_to_a_registered_family(registered, cli, tmp_path):
    config = tmp_path / "scoped.yaml"
    config.write_text("extends: h100-sxm\nname: h100-fill\nfamily_values:\n  fill:\n"
                      "    hbm.bandwidth: {value: 1 TB/s, source: test}\n")
    args = ("--kernel", "fill", "--param", "bytes=67108864", "--json")
    slow = json.loads(cli("simulate", "--arch", str(config), *args).out)["latency_s"]
    assert slow > json.loads(cli("simulate", "--arch", "h100-sxm", *args).out)["latency_s"]


def test_a_collective_algorithm_runs_by_name(registered, cli):
    result = cli("simulate", "--system", "dgx-h100", "--collective", "broadcast", "--bytes", "64 MiB",
                 "--algorithm", "chain", "--json")
    assert result.code == 0, result.err
    out = json.loads(result.out)
    assert out["algorithm"] == "chain" and out["phases"] == 1
    refused = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1 MiB",
                  "--algorithm", "chain")
    assert refused.code == 2 and "chain does not do all-reduce" in refused.err


def test_a_trace_importer_gets_a_subcommand_whose_trace_replays(registered, cli, tmp_path):
    source, trace = tmp_path / "step.txt", tmp_path / "step.json"
    source.write_text("8 0.001\n")
    result = cli("import", "steps", str(source), "-o", str(trace))
    assert result.code == 0, result.err
    assert result.out.splitlines() == [f"wrote {trace}: 1 ops in 1 programs on 8 devices (8 over all devices)",
                                       "one op per device"]
    replayed = json.loads(cli("replay", str(trace), "--system", "dgx-h100", "--json").out)
    assert replayed["step_time_s"] == pytest.approx(1e-3)


def test_a_chip_kind_runs_kernels_with_its_registered_engine(monkeypatch):
    h100 = load_arch("h100-sxm")
    toy = ToyChip(**{f.name: getattr(h100, f.name) for f in dataclasses.fields(h100) if f.init})
    monkeypatch.setitem(ENGINES, ToyChip, ToyEngine())  # the one registration line
    trace = FILL.build({"bytes": 2**26}, {"block_bytes": 65536}, toy)
    assert simulate_kernel(trace, toy).latency_s == simulate_kernel(trace, h100).latency_s + ToyEngine.DISPATCH_S


def test_every_chip_kind_a_config_can_name_has_a_type_rules_and_an_engine():
    """What a chip kind that configs name touches, besides its engine: the ``family`` values
    a chip config may give (``arch/schema.py: Family``), the fields each kind needs and
    alone may set (``CHIP_KIND_RULES``), its resolved type (``arch/model.py: CHIP_KINDS``)
    and its engine (``engine/chip.py: ENGINES``). They must name the same kinds."""
    engines = {kind.kind: kind for kind in ENGINES}
    assert set(get_args(schema.Family)) == set(schema.CHIP_KIND_RULES) == set(CHIP_KINDS) == set(engines)
    assert all(engines[name] is kind for name, kind in CHIP_KINDS.items())
