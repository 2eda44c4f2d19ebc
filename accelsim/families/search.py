"""Running a family: build its trace for a config, simulate it, and ``config=auto``
(search the family's config space with the engine, as an autotuner would)."""

from __future__ import annotations

import heapq
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
    chip = chip.for_family(family.name)
    trace = family.build(params, config, chip)
    return Run(config, trace, simulate_kernel(trace, chip, timeline=timeline))


def _fitting_space(family: Family, params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    space = family.config_space(params, chip)
    if not space:
        raise InputError(f"no {family.name} config fits {chip.name} for these parameters", source="--param")
    return space


def autotune(family: Family, params: dict[str, Any], chip: Chip) -> list[Run]:
    """Every config of the family's space that fits, fastest first (ties: config order)."""
    chip = chip.for_family(family.name)
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
    """The config :func:`autotune` would put first, replaying only what can still win.

    Best-first over two lower bounds, both never above the simulated latency: the
    family's ``quick_bound`` (no trace needed) and, once a config's trace is built,
    :func:`~accelsim.engine.chip.latency_lower_bound_s`. The next step is whichever is
    lower: build the config with the lowest quick bound not yet built, or replay the
    built config with the lowest trace bound. The search stops when neither can beat the
    best replayed latency. Ties keep config order."""
    chip = chip.for_family(family.name)  # the bounds too: a family's values may be faster
    space = _fitting_space(family, params, chip)
    quick = [family.quick_bound(params, c, chip) if family.quick_bound else 0.0 for c in space]
    to_build = sorted(range(len(space)), key=lambda i: (quick[i], i))
    built: list[tuple[float, int, KernelTrace]] = []  # heap of (trace bound, config index, trace)
    best: tuple[float, int] | None = None
    runs: dict[int, Run] = {}

    def can_win(bound: float, i: int) -> bool:
        # the replay counts whole picoseconds, so a bound may sit up to 1 ps above it
        return best is None or (bound - ROUNDING_S, i) < best

    next_build = 0
    while True:
        build_next = next_build < len(to_build) and can_win(quick[to_build[next_build]], to_build[next_build])
        replay_next = bool(built) and can_win(built[0][0], built[0][1])
        if build_next and (not replay_next or (quick[to_build[next_build]], to_build[next_build]) <= built[0][:2]):
            i = to_build[next_build]
            next_build += 1
            trace = family.build(params, space[i], chip)
            heapq.heappush(built, (latency_lower_bound_s(trace, chip), i, trace))
        elif replay_next:
            _, i, trace = heapq.heappop(built)
            runs[i] = Run(space[i], trace, simulate_kernel(trace, chip))
            best = min(best or (float("inf"), 0), (runs[i].sim.latency_s, i))
        else:
            break
    assert best is not None
    return Search(best=runs[best[1]], searched=len(space), simulated=len(runs))


def run_given(family: Family, params: dict[str, Any], config: Mapping[str, str], auto: bool,
              chip: Chip) -> tuple[Run, int | None]:
    """What :func:`split_params` asked for: the run ``config=auto`` picks and how many
    configs it searched, or the run of the given config (defaults filled in) and None."""
    if auto:
        search = best_config(family, params, chip)
        return search.best, search.searched
    return run_config(family, params, family.resolve_config(params, config, chip), chip), None
