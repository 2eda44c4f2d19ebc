"""Unfused (PyTorch eager) attention's kernels as ATen launches them: the softmax's rows per
block and warps, the strided loop of copies and the broadcast mask add, the transposed copy's
sector reads, and the backward that needs no dO copy."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.attention_impls.unfused import LEGACY_UNROLL, SECTOR_BYTES, softmax_launch
from accelsim.families.base import parse_values
from tests.trace_totals import tensor_bytes

FAMILY = get_family("attention")
H100 = load_arch("h100-sxm")


def build(**params):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in params.items()}, "test")
    return FAMILY.build(values, FAMILY.resolve_config(values, {}, H100), H100)


def kernel_templates(trace, name):
    return [t for t in trace.templates if t.name.endswith(f"_{name}")]


@pytest.mark.parametrize(("cols", "backward", "launch"), [
    (64, False, (8, 4)),      # a warp per row, two rows a warp up to 128 elements
    (1024, False, (4, 4)),    # a warp per row, 4 warps a block
    (2048, False, (1, 32)),   # SoftMaxForward_getBlockSize: min(cols, 1024) threads
    (8192, False, (1, 32)),
    (2048, True, (1, 4)),     # SoftMax_getBlockSize: pow2 >= min(cols / 8, 1024) / 2
    (8192, True, (1, 16)),
])
def test_softmax_launches_as_aten_does(cols, backward, launch):
    assert softmax_launch(cols, "bf16", backward) == launch


def test_strided_kernels_run_their_elements_one_after_another():
    trace = build(batch=1, heads=2, seq_q=1024, head_dim=64, causal=True, impl="unfused")
    for name in ("copy_q", "copy_k", "copy_v", "mask_add"):
        (template,) = kernel_templates(trace, name)
        assert [step.repeat for step in template.steps] == [LEGACY_UNROLL], name
    (cast,) = kernel_templates(trace, "mask_cast")
    assert [step.repeat for step in cast.steps] == [1]  # contiguous operands: the vectorized kernel


def test_transposed_copy_reads_a_sector_per_element_and_writes_each_once():
    heads, seq, dim = 2, 1024, 64
    trace = build(batch=1, heads=heads, seq_q=seq, head_dim=dim, impl="unfused")
    totals = tensor_bytes(trace)
    elements = heads * seq * dim
    assert totals["Kt", "write"] == 2 * elements
    assert totals["K_in", "read"] == SECTOR_BYTES * elements
    # the sectors themselves: as many bytes as K, so HBM reads it once and the L2 the rest
    assert trace.tensors["K_in"].shape[0] * trace.tensors["K_in"].shape[1] * 2 == 2 * elements


def test_backward_views_do_and_copies_dk_across_the_sequence():
    trace = build(batch=1, heads=2, seq_q=1024, head_dim=64, impl="unfused", **{"pass": "bwd"})
    names = {t.name.split("_", 1)[1] for t in trace.templates}
    assert "copy_do" not in names
    totals = tensor_bytes(trace)
    assert totals["dK", "read"] == SECTOR_BYTES * 2 * 1024 * 64
    assert totals["dK_packed", "write"] == 2 * 2 * 1024 * 64


@pytest.mark.parametrize(("seq", "exps"), [(1024, 1), (2048, 2)])
def test_a_block_per_row_softmax_evaluates_its_exps_twice(seq, exps):
    trace = build(batch=1, heads=1, seq_q=seq, head_dim=64, impl="unfused")
    (softmax,) = kernel_templates(trace, "softmax")
    per, _ = softmax_launch(seq, "bf16", backward=False)
    special = [c for step in softmax.steps for c in step.compute if c.unit == "special"]
    assert [c.flops for c in special] == [exps * per * seq]
