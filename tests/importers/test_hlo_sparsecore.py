"""Collectives XLA:TPU offloads to the SparseCores (MaxText 0.2.5's v5p flags): the
custom-call start moves nothing, the update issues the collective on its inputs in the
background, the done waits for it; work scheduled between update and done overlaps it.
The module is the shape libtpu 0.0.52 prints (MaxText 64B on v5p-128, trimmed)."""

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

OFFLOADED = """HloModule sc, is_scheduled=true, num_partitions=8

%gather (p: bf16[4,256]) -> bf16[16,256] {
  %p = bf16[4,256]{1,0} parameter(0)
  %t = (bf16[4,256]{1,0}) tuple(%p)
  %g = bf16[4,256]{1,0} get-tuple-element(%t), index=0
  ROOT %ag = bf16[16,256]{1,0} all-gather(%g), channel_id=3, replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true
}, execution_thread="sparsecore"

%add (a: bf16[4,256], b: bf16[4,256]) -> bf16[4,256] {
  %a = bf16[4,256]{1,0} parameter(0)
  %b = bf16[4,256]{1,0} parameter(1)
  ROOT %s = bf16[4,256]{1,0} add(%a, %b)
}

ENTRY %main (x: bf16[4,256], y: bf16[4,256]) -> (bf16[16,256], bf16[4,256]) {
  %x = bf16[4,256]{1,0} parameter(0)
  %y = bf16[4,256]{1,0} parameter(1)
  %ag.call-start = ((), (), (s32[8]{0})) custom-call-start(), async_execution_thread="sparsecore", custom_call_target="TODO(b/522284627)", called_computations={%gather}
  %before = bf16[4,256]{1,0} fusion(%x, %y), kind=kLoop, calls=%add
  %ag.call-update = ((bf16[4,256]{1,0}), bf16[16,256]{1,0}, (s32[8]{0})) custom-call-update(%ag.call-start, %before)
  %between = bf16[4,256]{1,0} fusion(%y, %y), kind=kLoop, calls=%add
  %ag.call-done = bf16[16,256]{1,0} custom-call-done(%ag.call-update)
  ROOT %out = (bf16[16,256]{1,0}, bf16[4,256]{1,0}) tuple(%ag.call-done, %between)
}
"""


@pytest.fixture(scope="module")
def program():
    return lower_module(parse_module(OFFLOADED))


def test_the_update_issues_the_collective_in_the_background(program):
    by_name = {op.name: op for op in program.ops}
    gather = by_name["ag.call-update/ag"]
    assert gather.kind == "all-gather" and gather.is_async
    assert gather.deps == ("before",)  # its input reaches it at the update
    assert gather.comm_bytes == 16 * 256 * 2  # the gathered output, as nccl-tests counts it
    assert gather.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert program.counts["sparsecore_offload:all-gather"] == 1


def test_the_done_waits_for_it_and_the_work_between_overlaps(program):
    order = [op.name for op in program.ops]
    by_name = {op.name: op for op in program.ops}
    assert by_name["ag.call-done"].kind == "done" and by_name["ag.call-done"].start == "ag.call-update/ag"
    assert order.index("ag.call-update/ag") < order.index("between") < order.index("ag.call-done")
    assert "ag.call-update/ag" not in by_name["between"].deps


def test_nothing_is_an_unknown_custom_call(program):
    assert not [key for key in program.counts if key.startswith("unknown")]
    assert [op.kind for op in program.ops] == ["compute", "all-gather", "compute", "done"]


def test_a_done_without_operands_is_an_ordinary_custom_call():
    """Bad input never reaches a traceback: a ``custom-call-done()`` that names no start is
    no offload, and lowers as any other custom call would."""
    text = OFFLOADED.replace("custom-call-done(%ag.call-update)", "custom-call-done()")
    try:
        program = lower_module(parse_module(text))
    except Exception as exc:  # noqa: BLE001 - what matters is that it is the one-line kind
        from accelsim.errors import InputError
        assert isinstance(exc, InputError), f"{type(exc).__name__}: {exc}"
    else:
        assert "ag.call-done" not in {op.start for op in program.ops if op.kind == "done"}
