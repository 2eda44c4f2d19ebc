"""Bad inputs a fuzzing pass over every subcommand found (2026-12-01), each now one line,
exit 2, and nothing written: an output that would overwrite an input (a capture's own
source, a kernel trace a system trace names, an input inside an output folder under a name
the command writes), importers building ops past the trace format's limits, a kernel
trace's ``metadata.family`` that is not a name, a config that references itself, a record
without an id, a torus whose link count does not spread over its neighbours, and worker
counts past the limit."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MATMUL_TRACE = ROOT / "traces" / "triton" / "matmul_512.json"
GEMM_RECORDS = ROOT / "validation" / "reference" / "h100-sxm" / "gemm.json"


def one_line_error(result, *needles: str) -> None:
    assert result.code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_capture_does_not_write_over_its_kernel_source(cli, tmp_path):
    pytest.importorskip("triton")
    source = tmp_path / "mm.py"
    shutil.copy(ROOT / "kernels" / "triton" / "matmul.py", source)
    before = source.read_bytes()
    result = cli("capture", "triton", f"{source}:run", "--param", "M=64", "--param", "N=64", "--param", "K=64",
                 "-o", str(source))
    one_line_error(result, "-o", "also an input")
    assert source.read_bytes() == before


def test_replay_timeline_does_not_write_over_a_named_kernel_trace(cli, tmp_path):
    kernel = tmp_path / "k.json"
    shutil.copy(MATMUL_TRACE, kernel)
    system = tmp_path / "s.json"
    system.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "num_devices": 2, "programs": [
        {"name": "p", "devices": ["0-1"], "ops": [{"name": "a", "kind": "compute", "kernel_trace": "k.json"}]}]}))
    before = kernel.read_bytes()
    one_line_error(cli("replay", str(system), "--system", "dgx-h100", "--timeline", str(kernel)),
                   "--timeline", "also an input")
    assert kernel.read_bytes() == before


@pytest.mark.parametrize("command", ["validate", "sweep", "explore"])
def test_an_output_folder_does_not_write_over_an_input_in_it(cli, tmp_path, command):
    out = tmp_path / "out"
    out.mkdir()
    if command == "validate":
        given = out / "report.md"
        shutil.copy(GEMM_RECORDS, given)
        args = ("validate", "--arch", "h100-sxm", "--measurements", str(given), "-o", str(out))
    elif command == "sweep":
        given = out / "results.csv"
        given.write_text(textwrap.dedent(f"""\
            base: h100-sxm
            parameters: {{hbm.bandwidth: {{values: [2 TB/s]}}}}
            workloads: [{{trace: {MATMUL_TRACE}}}]
            """))
        args = ("sweep", str(given), "-o", str(out), "--quiet")
    else:
        given = out / "ranking.md"
        given.write_text("block_m: [64]\n")
        args = ("explore", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                "--param", "K=256", "--space", str(given), "-o", str(out))
    before = given.read_bytes()
    one_line_error(cli(*args), "-o", "would overwrite that input")
    assert given.read_bytes() == before and sorted(p.name for p in out.iterdir()) == [given.name]


def test_an_imported_op_past_the_formats_limits_is_the_inputs_fault(cli, tmp_path):
    hlo = tmp_path / "m.hlo.txt"
    hlo.write_text(textwrap.dedent("""\
        HloModule m, is_scheduled=true

        ENTRY main {
          p0 = f32[8,32]{1,0} parameter(0)
          ROOT a = f32[99999999999999999999,99999999999999]{1,0} add(p0, p0)
        }
        """))
    one_line_error(cli("import", "hlo", str(hlo), "--system", "dgx-h100", "-o", str(tmp_path / "h.json")),
                   str(hlo), "cannot hold")
    chakra = tmp_path / "rank0.json"
    chakra.write_text(json.dumps({"nodes": [{"id": 1, "name": "r", "type": 7, "attr": [
        {"name": "comm_type", "int64_val": 0}, {"name": "comm_size", "int64_val": "9" * 34}]}]}))
    one_line_error(cli("import", "chakra", str(chakra), "-o", str(tmp_path / "c.json")), str(chakra),
                   "attr.comm_size", "64-bit integer")
    assert not (tmp_path / "h.json").exists() and not (tmp_path / "c.json").exists()


def test_metadata_family_must_be_a_name(cli, tmp_path):
    trace = json.loads(MATMUL_TRACE.read_text())
    trace["metadata"]["family"] = ["gemm"]
    path = tmp_path / "k.json"
    path.write_text(json.dumps(trace))
    one_line_error(cli("simulate", "--arch", "h100-sxm", str(path)), "metadata.family", "a string")


def test_a_config_that_references_itself_is_a_cycle(cli, tmp_path):
    node = (ROOT / "arch_configs" / "systems" / "dgx-h100-published.yaml").read_text()
    path = tmp_path / "loop.yaml"
    path.write_text(node.replace("name: dgx-h100-published", "name: loop").replace("chip: h100-sxm", f"chip: {path}"))
    one_line_error(cli("arch", "show", str(path)), "chip", "forms a cycle")


def test_a_record_without_an_id_is_refused(cli, tmp_path):
    data = json.loads(GEMM_RECORDS.read_text())
    del data["records"][0]["id"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    one_line_error(cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "r")),
                   "records[0].id", "non-empty string")
    assert not (tmp_path / "r").exists()


def test_every_command_refuses_ici_links_that_do_not_spread_evenly(cli):
    one_line_error(cli("arch", "show", "tpu-v5e-4x4", "--set", "chip.interconnect.links=3"),
                   "chip.interconnect.links", "multiple of 4")


def test_sweep_workers_past_the_limit(cli, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(f"base: h100-sxm\nworkloads: [{{trace: {MATMUL_TRACE}}}]\n")
    one_line_error(cli("sweep", str(spec), "-o", str(tmp_path / "o"), "--workers", "100000"),
                   "--workers", "1 to 1024")
    assert not (tmp_path / "o").exists()


def test_sweep_on_ray_without_ray_leaves_no_folder(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed (the test extra installs it)
    spec = tmp_path / "s.yaml"
    spec.write_text(f"base: h100-sxm\nworkloads: [{{trace: {MATMUL_TRACE}}}]\n")
    one_line_error(cli("sweep", str(spec), "-o", str(tmp_path / "o"), "--ray", "auto"), "--ray", "not installed")
    assert not (tmp_path / "o").exists()
