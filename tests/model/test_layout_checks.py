"""Layouts a model or mode cannot take are refused before anything is built, one line each."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.model.layout import Layout, Workload, check_layout

TRAIN = Workload(mode="train", seq_len=1024, batch=8)


@pytest.mark.parametrize("layout, workload, field", [
    (Layout(tp=8), TRAIN, "tp"),  # 4 heads over 8 ranks
    (Layout(pp=8), TRAIN, "pp"),  # 8 stages, 4 layers
    (Layout(pp=2, virtual_stages=2, dp=1, micro_batch=1), Workload(mode="train", seq_len=1024, batch=3),
     "virtual_stages"),  # 3 microbatches, not a multiple of PP
    (Layout(ep=2, dp=2), TRAIN, "ep"),  # a dense model
    (Layout(cp=2), Workload(mode="decode", seq_len=1024, batch=8), "cp"),
    (Layout(dp=3), TRAIN, "batch"),  # 8 sequences over 3 replicas
    (Layout(fsdp=2), Workload(mode="decode", seq_len=1024, batch=8), "fsdp"),
])
def test_refused_with_the_field(tiny, layout, workload, field):
    with pytest.raises(InputError) as err:
        check_layout(tiny, workload, layout)
    assert err.value.field == field


def test_microbatches_fill_the_batch(tiny):
    assert check_layout(tiny, TRAIN, Layout(dp=2, micro_batch=2)) == 2


def test_ops_are_bounded_before_building(tiny):
    huge = Workload(mode="train", seq_len=1024, batch=1 << 20)
    with pytest.raises(InputError, match="microbatches"):
        check_layout(tiny, huge, Layout(micro_batch=1))
