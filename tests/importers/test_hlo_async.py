"""Async *-start / *-done pairs: the start is an async op, the done waits for it, and
the work scheduled between them is free to overlap."""

from pathlib import Path

from accelsim.importers.hlo import lower_module, read_hlo, to_system_trace
from accelsim.importers.hlo_text import parse_module
from accelsim.system.trace import check_trace

GPU = Path(__file__).parent / "fixtures" / "gpu_async_handwritten.hlo.txt"


def ops():
    program = lower_module(read_hlo(GPU))
    return program, {op.name: op for op in program.ops}, [op.name for op in program.ops]


def test_start_is_async_and_done_names_it():
    _, by_name, _ = ops()
    for start, done in (("all-gather-start", "all-gather-done"), ("all-reduce-start", "all-reduce-done"),
                        ("cp-start", "cp-done")):
        assert by_name[start].is_async
        assert by_name[done].kind == "done" and by_name[done].start == start


def test_window_holds_the_scheduled_compute():
    _, by_name, order = ops()
    assert order.index("all-gather-start") < order.index("gemm") < order.index("all-gather-done")
    assert order.index("all-reduce-start") < order.index("conv") < order.index("all-reduce-done")
    assert "all-gather-start" not in by_name["gemm"].deps


def test_users_of_a_done_depend_on_the_done():
    _, by_name, _ = ops()
    assert by_name["rs-start/reduce-scatter.1"].deps == ("all-reduce-done",)
    assert by_name["cp-start"].deps == ("rs-done",)


def test_generic_async_start_wraps_a_collective():
    _, by_name, _ = ops()
    rs = by_name["rs-start/reduce-scatter.1"]
    assert rs.kind == "reduce-scatter" and rs.is_async
    assert rs.groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert by_name["rs-done"].start == rs.name


def test_async_pairs_survive_conversion():
    trace = to_system_trace(ops()[0])
    check_trace(trace)
    converted = {op.name: op for op in trace.programs[0].ops}
    assert converted["all-gather-start"].is_async
    assert converted["all-gather-done"].kind == "done"
    assert trace.programs[0].device_ids() == list(range(8))


def test_synchronous_cpu_collectives_are_not_async():
    cpu = Path(__file__).parent / "fixtures" / "cpu_shard_map_collectives.hlo.txt"
    program = lower_module(read_hlo(cpu))
    comm = [op for op in program.ops if op.kind not in ("compute", "done")]
    assert comm and not any(op.is_async for op in comm)
    assert not any(op.kind == "done" for op in program.ops)


SHORT_FORM = """
HloModule m, is_scheduled=true, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (p: f32[1024,256], q: f32[64,256]) -> (f32[128,256], f32[64,256]) {
  %p = f32[1024,256]{1,0} parameter(0)
  %q = f32[64,256]{1,0} parameter(1)
  %rs-start = ((f32[1024,256]{1,0}), f32[128,256]{1,0}) reduce-scatter-start(%p), channel_id=8, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%add, use_global_device_ids=true
  %a2a-start = ((f32[64,256]{1,0}), f32[64,256]{1,0}) all-to-all-start(%q), channel_id=9, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}
  %rs-update = ((f32[1024,256]{1,0}), f32[128,256]{1,0}) reduce-scatter-update(%rs-start)
  %a2a-done = f32[64,256]{1,0} all-to-all-done(%a2a-start)
  %rs-done = f32[128,256]{1,0} reduce-scatter-done(%rs-update)
  ROOT %t = (f32[128,256]{1,0}, f32[64,256]{1,0}) tuple(%rs-done, %a2a-done)
}
"""


def test_short_form_async_collectives_are_collectives():
    """XLA prints an async-start wrapping one reduce-scatter or all-to-all as
    ``reduce-scatter-start`` / ``all-to-all-start`` (GPU HLO): collectives, not compute."""
    program = lower_module(parse_module(SHORT_FORM))
    by_name = {op.name: op for op in program.ops}
    rs, a2a = by_name["rs-start"], by_name["a2a-start"]
    assert rs.kind == "reduce-scatter" and rs.is_async and rs.comm_bytes == 1024 * 256 * 4
    assert rs.groups == (tuple(range(8)),)
    assert a2a.kind == "all-to-all" and a2a.is_async and a2a.comm_bytes == 64 * 256 * 4
    assert a2a.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert by_name["rs-done"].start == "rs-start" and by_name["a2a-done"].start == "a2a-start"
    assert not any(op.kind == "compute" for op in program.ops)
    assert not program.counts
