"""Per-program arrays derived from a trace (template indices, program variables) are made
once per trace and shared, read-only; a new trace never sees another's arrays."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from accelsim.engine.programs import program_templates, program_vars, template_members
from accelsim.trace.kernel import KernelTrace


def two_template_trace(which: list[int]) -> KernelTrace:
    step = {"transfers": [{"tensor": "X", "block": ["p0"], "bytes": 64}]}
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "k", "grid": [len(which)]},
        "tensors": {"X": {"shape": [1024], "dtype": "bf16"}},
        "templates": [{"name": "a", "steps": [step]}, {"name": "b", "steps": [step]}],
        "program_template": which,
        "program_vars": {"w": [7 * i for i in range(len(which))]},
    })


def test_arrays_are_shared_and_read_only():
    trace = two_template_trace([0, 0, 1])
    assert program_templates(trace) is program_templates(trace)
    assert program_vars(trace)["w"] is program_vars(trace)["w"]
    with pytest.raises(ValueError):
        program_templates(trace)[0] = 1
    with pytest.raises(ValueError):
        program_vars(trace)["p0"][0] = 5


def test_a_new_trace_gets_its_own_arrays():
    for which in ([0, 0, 1], [1, 1, 0], [0, 1, 0]):  # made and dropped in turn: ids may repeat
        trace = two_template_trace(which)
        assert program_templates(trace).tolist() == which
        assert program_vars(trace)["w"].tolist() == [0, 7, 14]
        del trace
        gc.collect()


@pytest.mark.parametrize(("which", "first", "second"), [
    ([0, 0, 1], slice(0, 2), slice(2, 3)),
    ([0, 1, 0], [0, 2], slice(1, 2)),
    ([1, 1, 1], [], slice(0, 3)),
])
def test_template_members_are_a_slice_when_contiguous(which, first, second):
    template_of = np.asarray(which)
    for index, expected in enumerate((first, second)):
        members = template_members(template_of, index)
        if isinstance(expected, slice):
            assert members == expected
        else:
            assert members.tolist() == expected
