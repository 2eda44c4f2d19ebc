"""``accelsim import profile`` on a JAX profiler trace recorded on this CPU: its XLA ops are the
work; the program's HLO (``--hlo``) gives them families and shapes."""

from __future__ import annotations

import json

from accelsim.importers.profile import measured_step, read_profile
from tests.importers.profile_fixtures import JAX_CPU, JAX_CPU_HLO


def _step(hlo=None):
    return measured_step(read_profile(JAX_CPU, hlo), source=str(JAX_CPU), arch=None, device=None, command="t",
                         sha256="0")


def test_xla_ops_are_the_kernels_and_without_the_hlo_they_are_unmapped():
    step = _step()
    assert [k["op"] for k in step["kernels"]] == ["ynn_fusion", "maximum_multiply_fusion"] * 3
    assert step["records"] == [] and sum(u["share"] for u in step["unmapped"]) == 1.0
    assert {u["name"] for u in step["unmapped"]} == {"ynn_fusion", "maximum_multiply_fusion"}


def test_the_hlo_gives_the_dot_fusion_its_gemm_and_the_loop_fusion_its_arrays():
    step = _step(str(JAX_CPU_HLO))
    records = {r["family"]: r for r in step["records"]}
    assert records["gemm"]["params"] == {"M": 256, "N": 256, "K": 512, "dtype": "fp32", "batch": 1}
    assert records["elementwise"]["params"] == {"elements": 65536, "dtype": "fp32", "inputs": 2, "outputs": 1}
    assert [len(r["samples_s"]) for r in step["records"]] == [3, 3] and step["unmapped"] == []


def test_the_cli_reads_the_gzipped_trace(cli, tmp_path):
    out = tmp_path / "jax.json"
    result = cli("import", "profile", str(JAX_CPU), "--hlo", str(JAX_CPU_HLO), "-o", str(out))
    assert result.code == 0, result.err
    assert "2 records (elementwise, gemm)" in result.out and json.loads(out.read_text())["provenance"]["tool"] == "jax"


def test_an_hlo_of_another_program_is_refused(cli, tmp_path):
    other = tmp_path / "other.hlo.txt"
    other.write_text("HloModule m\n\nENTRY %main (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0} parameter(0)\n}\n")
    result = cli("import", "profile", str(JAX_CPU), "--hlo", str(other), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "none of the trace's XLA ops is an instruction" in result.err
    assert not (tmp_path / "o.json").exists()


def test_an_xplane_protobuf_is_refused_in_one_line(cli, tmp_path):
    xplane = tmp_path / "host.xplane.pb"
    xplane.write_bytes(b"\x0a\x00")
    result = cli("import", "profile", str(xplane), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "*.trace.json.gz" in result.err and len(result.err.splitlines()) == 1


def test_a_gpu_trace_takes_kernels_of_the_stream_lines_with_their_launch_shape(tmp_path):
    events = [{"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/device:GPU:0"}},
              {"ph": "M", "pid": 7, "tid": 1, "name": "thread_name", "args": {"name": "Stream #13(Compute)"}},
              {"ph": "M", "pid": 7, "tid": 2, "name": "thread_name", "args": {"name": "XLA Ops"}}]
    kernel = {"ph": "X", "pid": 7, "ts": 10.0, "dur": 5.0, "name": "loop_add_fusion",
              "args": {"hlo_op": "add_fusion.3", "hlo_module": "jit_f",
                       "kernel_details": "regs:16 static_shared:0 dynamic_shared:0 grid:1024,1,1 block:128,1,1"}}
    events += [{**kernel, "tid": 1}, {**kernel, "tid": 2}]  # the XLA Ops line repeats the stream's kernel
    path = tmp_path / "gpu.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = read_profile(path)
    (event,) = profile.events
    assert (event.grid, event.block, event.stream, event.hlo_op) == ((1024, 1, 1), (128, 1, 1),
                                                                      "Stream #13(Compute)", "add_fusion.3")
    assert profile.device == {"name": "/device:GPU:0", "kind": "gpu"}
