"""Every worked study under examples/ still plans: its spec, base configs, overrides,
workloads and committed traces pass the checks a sweep makes before it runs anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsim.study.plan import plan_sweep

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("spec", sorted(EXAMPLES.glob("*/sweep.yaml")), ids=lambda p: p.parent.name)
def test_example_sweeps_plan(spec):
    plan = plan_sweep(spec)
    assert plan.points and plan.jobs
