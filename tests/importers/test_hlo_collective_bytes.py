"""Collective sizes as nccl-tests counts them: all-reduce the buffer, all-gather the
output, reduce-scatter the input, all-to-all the buffer sent, permute the operand."""

import textwrap

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

REDUCER = """
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def only_comm_op(line: str, params: str = "%p = f32[1024]{0} parameter(0)"):
    text = "HloModule m, num_partitions=4\n" + REDUCER + "ENTRY %main () -> f32[] {\n" + textwrap.dedent(
        f"  {params}\n  ROOT {line}\n") + "}\n"
    comm = [op for op in lower_module(parse_module(text)).ops if op.kind != "compute"]
    assert len(comm) == 1
    return comm[0]


@pytest.mark.parametrize(("line", "kind", "size"), [
    (("%r = f32[1024]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
     "to_apply=%add"), "all-reduce", 4096),
    (("%r = f32[4096]{0} all-gather(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, "
     "use_global_device_ids=true"), "all-gather", 16384),
    (("%r = f32[256]{0} reduce-scatter(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, "
     "use_global_device_ids=true, to_apply=%add"), "reduce-scatter", 4096),
    ("%r = f32[1024]{0} all-to-all(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}",
     "all-to-all", 4096),
    ("%r = f32[1024]{0} collective-permute(%p), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
     "collective-permute", 4096),
    (("%r = (bf16[1024]{0}, bf16[4096]{0}) all-gather-start(%p), channel_id=1, replica_groups=[1,4]<=[4], "
     "dimensions={0}, use_global_device_ids=true"), "all-gather", 8192),
])
def test_bytes_per_kind(line, kind, size):
    op = only_comm_op(line, "%p = bf16[1024]{0} parameter(0)" if "bf16" in line else
                      "%p = f32[1024]{0} parameter(0)")
    assert op.kind == kind
    assert op.comm_bytes == size


def test_combined_all_reduce_counts_every_buffer():
    op = only_comm_op(
        "%r = (f32[1024]{0}, bf16[64,64]{1,0}) all-reduce(%p, %q), channel_id=1, replica_groups=[2,2]<=[4], "
        "use_global_device_ids=true, to_apply=%add",
        "%p = f32[1024]{0} parameter(0)\n  %q = bf16[64,64]{1,0} parameter(1)")
    assert op.comm_bytes == 4096 + 64 * 64 * 2
    assert op.groups == ((0, 1), (2, 3))


def test_tuple_all_to_all_counts_all_operands():
    op = only_comm_op(
        "%r = (f32[256]{0}, f32[256]{0}) all-to-all(%p, %q), channel_id=1, replica_groups={{0,1},{2,3}}",
        "%p = f32[256]{0} parameter(0)\n  %q = f32[256]{0} parameter(1)")
    assert op.comm_bytes == 2 * 256 * 4


def test_combined_collective_permute_counts_every_buffer():
    """XLA's collective-permute combiner merges permutes with the same pairs into one
    with several operands (a tuple result): every buffer is sent."""
    op = only_comm_op(
        "%r = (f32[256]{0}, bf16[128]{0}) collective-permute(%p, %q), channel_id=1, "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
        "%p = f32[256]{0} parameter(0)\n  %q = bf16[128]{0} parameter(1)")
    assert op.kind == "collective-permute"
    assert op.comm_bytes == 256 * 4 + 128 * 2
