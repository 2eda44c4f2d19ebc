"""Running a family: build its trace for a config, simulate it, and ``config=auto``
(search the family's config space with the engine, as an autotuner would)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelsim.arch.model import Chip
from accelsim.engine.chip import (
    KernelSimulation,
    latency_lower_bound_s,
    simulate_kernel,
)
from accelsim.errors import InputError
from accelsim.families.base import Family, parse_values
from accelsim.trace.kernel import KernelTrace


@dataclass
class Run:
    config: dict[str, Any]
    trace: KernelTrace
    sim: KernelSimulation


def split_params(family: Family, given: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str], bool]:
    """Problem parameters (typed, defaults filled), config values, and whether config=auto."""
    config_names = {p.name for p in family.config_params}
    auto = False
    problem, config = {}, {}
    for key, value in given.items():
        if key == "config":
            if value != "auto":
                raise InputError(f"expected 'auto', got {value!r}", source="--param", field="config")
            auto = True
        elif key in config_names:
            config[key] = value
        else:
            problem[key] = value
    if auto and config:
        raise InputError("config=auto searches every tunable; drop the others", source="--param", field=next(iter(config)))
    return parse_values(family.params, problem, "--param"), config, auto


def run_config(family: Family, params: dict[str, Any], config: dict[str, Any], chip: Chip, *, timeline: bool = False) -> Run:
    trace = family.build(params, config, chip)
    return Run(config, trace, simulate_kernel(trace, chip, timeline=timeline))


def _fitting_space(family: Family, params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    space = family.config_space(params, chip)
    if not space:
        raise InputError(f"no {family.name} config fits {chip.name} for these parameters", source="--param")
    return space


def autotune(family: Family, params: dict[str, Any], chip: Chip) -> list[Run]:
    """Every config of the family's space that fits, fastest first (ties: config order)."""
    space = _fitting_space(family, params, chip)
    runs = [run_config(family, params, config, chip) for config in space]
    order = sorted(range(len(runs)), key=lambda i: (runs[i].sim.latency_s, i))
    return [runs[i] for i in order]


ROUNDING_S = 1e-12


@dataclass
class Search:
    """The winner of a pruned search, out of ``searched`` configs, ``simulated`` of them replayed."""

    best: Run
    searched: int
    simulated: int


def best_config(family: Family, params: dict[str, Any], chip: Chip) -> Search:
    """The config :func:`autotune` would put first, replaying only what can still win:
    configs go in order of a lower bound on their latency
    (:func:`~accelsim.engine.chip.latency_lower_bound_s`), and the search stops when the
    next bound is no better than the best replayed latency. Ties keep config order."""
    space = _fitting_space(family, params, chip)
    traces = [family.build(params, config, chip) for config in space]
    bounds = [latency_lower_bound_s(trace, chip) for trace in traces]
    best: tuple[float, int] | None = None
    runs: dict[int, Run] = {}
    for i in sorted(range(len(space)), key=lambda i: (bounds[i], i)):
        # the replay counts whole picoseconds, so a bound may sit up to 1 ps above it
        if best is not None and (bounds[i] - ROUNDING_S, i) >= best:
            break
        runs[i] = Run(space[i], traces[i], simulate_kernel(traces[i], chip))
        best = min(best or (float("inf"), 0), (runs[i].sim.latency_s, i))
    assert best is not None
    return Search(best=runs[best[1]], searched=len(space), simulated=len(runs))
