"""A communication op may say how many SMs its kernels hold (``sm_budget``); a compute op may not."""

import pytest
from pydantic import ValidationError

from accelsim.system.trace import Op


def test_a_collective_records_its_sm_budget():
    op = Op.model_validate({"name": "a2a", "kind": "all-to-all", "bytes": 1024, "sm_budget": 20})
    assert op.sm_budget == 20


@pytest.mark.parametrize("op", [
    {"name": "c", "kind": "compute", "duration_s": 1e-3, "sm_budget": 4},
    {"name": "a2a", "kind": "all-to-all", "bytes": 1024, "sm_budget": 0},
])
def test_a_budget_where_it_means_nothing_or_below_one_sm_is_refused(op):
    with pytest.raises(ValidationError):
        Op.model_validate(op)
