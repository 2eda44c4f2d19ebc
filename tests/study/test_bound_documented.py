"""docs/sweeps.md says what a run's ``bound`` is as the engine decides it: its worked
example (matrix 30%, vector 25%, HBM 40%) and each case give what ``_bound`` gives."""

from __future__ import annotations

from accelsim.engine.result import LATENCY_BOUND_BELOW, bound_of as _bound
from tests.conftest import REPO

DOC = " ".join((REPO / "docs" / "sweeps.md").read_text(encoding="utf-8").split())


def test_the_threshold_is_the_documented_half():
    assert LATENCY_BOUND_BELOW == 0.5 and "busy at least half of the kernel's time" in DOC


def test_the_documented_cases():
    assert _bound({"hbm": 0.9, "matrix_unit": 0.6}) == "hbm"  # the busiest, busy half the time or more
    example = {"matrix_unit": 0.30, "vector_unit": 0.25, "hbm": 0.40}
    assert "(matrix 30%, vector 25%, HBM 40%: `matrix_unit`)" in DOC and _bound(example) == "matrix_unit"
    assert _bound({"matrix_unit": 0.2, "vector_unit": 0.2, "hbm": 0.4}) == "latency"
    assert "Else the kernel is `latency`-bound" in DOC
