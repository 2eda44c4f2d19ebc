"""Fixtures for engine tests: chips with round numbers, hand-built kernel traces, and
comparison of simulated times with analytic ones."""

from __future__ import annotations

from functools import lru_cache

import pytest

from accelsim.arch.model import Chip, load_arch, load_arch_and_spec
from accelsim.trace.kernel import KernelTrace

IDEAL = (
    "matrix_unit.efficiency=1",
    "vector_unit.efficiency=1",
    "hbm.efficiency=1",
    "hbm.latency=0 ns",
    "local_memory.latency=0 ns",
    "cores.program_overhead=0 ns",
    "launch_overhead=0 ns",
)
IDEAL_SHARED_CACHE = ("shared_cache.efficiency=1", "shared_cache.latency=0 ns")


@lru_cache(maxsize=None)
def _ideal(name: str, overrides: tuple[str, ...]) -> Chip:
    chip, spec = load_arch_and_spec(name)
    has_cache = chip.shared_cache is not None
    # the boost clock (h100-sxm and the configs that extend it) prices kernels under the TDP as a
    # cap, at per-kernel clocks: an ideal chip runs at its one fixed clock, uncapped
    has_boost = spec.power is not None and spec.power.dvfs.boost is not None
    return load_arch(name, [*IDEAL, *(IDEAL_SHARED_CACHE if has_cache else ()),
                            *(("power.dvfs.boost.enabled=false",) if has_boost else ()), *overrides])


@pytest.fixture
def ideal_chip():
    """``ideal_chip(name, *overrides)``: a built-in chip with every efficiency 1, every
    latency and fixed overhead 0 and no boost clock (one fixed clock, no cap), so simulated
    times have exact analytic answers."""

    def load(name: str, *overrides: str) -> Chip:
        return _ideal(name, tuple(overrides))

    return load


@pytest.fixture
def kernel_trace():
    """``kernel_trace(grid, steps, **kernel)``: a one-template trace; ``tensors`` and
    ``program_vars`` may be given, every other keyword goes to ``kernel``."""

    def build(grid, steps, *, tensors=None, program_vars=None, **kernel) -> KernelTrace:
        return KernelTrace.model_validate({
            "schema_version": 1,
            "kernel": {"name": "hand_built", "grid": list(grid), **kernel},
            "tensors": tensors or {name: {"shape": [1 << 30], "dtype": "bf16"} for name in ("X", "Y")},
            "templates": [{"name": "only", "steps": steps}],
            "program_vars": program_vars or {},
        })

    return build


@pytest.fixture
def exactly():
    """``exactly(seconds)``: equal up to the engine's clock tick (1 ps) on each of a few events."""

    def approx(seconds: float):
        return pytest.approx(seconds, rel=1e-12, abs=1e-11)

    return approx


def draw_flows(draw, strategies, resources: tuple[str, ...], max_flows: int, max_used: int) -> tuple[dict, list]:
    """A hypothesis draw of a fluid pool's capacities and flows (name, demand per resource,
    rate cap, start in picoseconds) over ``resources``: what the fluid-model property tests
    replay. ``strategies``: ``hypothesis.strategies``, passed in so that conftest loads
    hypothesis only where a test asks for it."""
    capacities = {r: draw(strategies.floats(1.0, 100.0)) for r in resources}
    flows = []
    for i in range(draw(strategies.integers(1, max_flows))):
        used = draw(strategies.lists(strategies.sampled_from(resources), min_size=0, max_size=max_used, unique=True))
        demand = {r: draw(strategies.floats(0.1, 50.0)) for r in used}
        flows.append((f"f{i}", demand, draw(strategies.floats(0.05, 20.0)), draw(strategies.integers(0, 3 * 10**12))))
    return capacities, flows
