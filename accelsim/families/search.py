"""Running a family: build its trace for a config, simulate it, and ``config=auto``
(search the family's config space with the engine, as an autotuner would)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, GpuChip
from accelsim.engine.chip import (
    KernelSimulation,
    ReplayMemo,
    latency_lower_bound_s,
    shared_cache_hits,
    simulate_kernel,
)
from accelsim.engine.gpu import REUSE_BLIND, reuse_key
from accelsim.engine.programs import ProgramCosts, program_costs
from accelsim.errors import InputError, shown
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
                raise InputError(f"expected 'auto', got {shown(value)}", field="params.config")
            auto = True
        elif key in config_names:
            config[key] = value
        else:
            problem[key] = value
    if auto and config:
        raise InputError("config=auto searches every tunable; drop the others", field=f"params.{next(iter(config))}")
    return parse_values(family.params, problem), config, auto


def run_config(family: Family, params: dict[str, Any], config: dict[str, Any], chip: Chip, *,
               timeline: bool = False, replays: ReplayMemo | None = None) -> Run:
    chip = chip.for_family(family.name)
    trace = family.build(params, config, chip)
    return Run(config, trace, simulate_kernel(trace, chip, timeline=timeline, replays=replays))


def fitting_space(family: Family, params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """The family's configs that fit the chip its kernels run on (``chip`` with the family's
    values): what ``config=auto`` searches and ``explore`` ranks."""
    space = family.config_space(params, chip.for_family(family.name))
    if not space:
        family.resolve_config(params, {}, chip)  # the default config's own reason, where it has one
        raise InputError(f"no {family.name} config fits {chip.name} for these parameters", field="params")
    return space


TIE_S = 1e-9
"""Configs whose latencies round to the same nanosecond are tied, and the earlier in the
family's order wins: differences far below the model's accuracy (a few picoseconds
between two HBM-bound configs, say) must not pick the winner, or it would change with
the float rounding of an unrelated engine change."""


def rank_key(latency_s: float, index: int) -> tuple[int | float, int]:
    """How configs rank: latency to the nearest :data:`TIE_S`, then config order."""
    return (round(latency_s / TIE_S) if math.isfinite(latency_s) else latency_s), index


def autotune(family: Family, params: dict[str, Any], chip: Chip) -> list[Run]:
    """Every config of the family's space that fits, fastest first (:func:`rank_key`)."""
    chip = chip.for_family(family.name)
    space = fitting_space(family, params, chip)
    replays: ReplayMemo = {}
    runs = [run_config(family, params, config, chip, replays=replays) for config in space]
    order = sorted(range(len(runs)), key=lambda i: rank_key(runs[i].sim.latency_s, i))
    return [runs[i] for i in order]


ROUNDING_S = 1e-12


@dataclass
class Search:
    """The winner of a pruned search, out of ``searched`` configs, ``simulated`` of them not
    pruned by a bound."""

    best: Run
    searched: int
    simulated: int
    replayed: int = 0
    """Of ``simulated``, how many replays ran (the others came from the replay memo)."""


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


class _Shared:
    """What a search's configs share, each computed once (read-only: configs share them).
    Configs that differ only in warps or pipeline stages build traces that differ only in
    what :data:`~accelsim.engine.gpu.REUSE_BLIND` leaves out, which neither the per-program
    accounting (:func:`~accelsim.engine.programs.program_costs`) nor the reuse model reads:
    they share both, keyed by the rest of the trace (one JSON dump per config)."""

    def __init__(self, chip: Chip) -> None:
        self.chip = chip
        self.costs: dict[str, ProgramCosts] = {}
        self.hits: dict[str, np.ndarray] = {}

    def costs_of(self, trace: KernelTrace) -> tuple[ProgramCosts, str]:
        """The trace's program costs and its key (the trace less ``REUSE_BLIND``)."""
        key = trace.model_dump_json(exclude=REUSE_BLIND)
        if key not in self.costs:
            costs = program_costs(trace, self.chip)
            for value in vars(costs).values():
                if isinstance(value, np.ndarray):
                    _read_only(value)
            self.costs[key] = costs
        return self.costs[key], key

    def hits_of(self, trace: KernelTrace, key: str) -> np.ndarray | None:
        """:func:`~accelsim.engine.chip.shared_cache_hits`, once per
        :func:`~accelsim.engine.gpu.reuse_key` (``key``: the trace's, from :meth:`costs_of`)."""
        if not isinstance(self.chip, GpuChip):
            return shared_cache_hits(trace, self.chip)
        key = reuse_key(trace, self.chip, body=key)
        if key not in self.hits:
            self.hits[key] = _read_only(shared_cache_hits(trace, self.chip))
        return self.hits[key]


def best_config(family: Family, params: dict[str, Any], chip: Chip) -> Search:
    """The config :func:`autotune` would put first, replaying only what can still win.

    Best-first over lower bounds that never exceed the simulated latency, each tighter
    and dearer than the one before: the family's ``quick_bound`` (no trace needed);
    once a config's trace is built, :func:`~accelsim.engine.chip.latency_lower_bound_s`;
    on a GPU, that bound again with the trace's shared-cache hits (the reuse model, once
    per reuse key: configs that differ only in warps or stages share them; then kept for
    the replay). The config with the lowest bound takes its next step (build,
    hits, replay) until no bound can beat the best replayed latency. Ties keep config
    order (:func:`rank_key`)."""
    chip = chip.for_family(family.name)  # the bounds too: a family's values may be faster
    space = fitting_space(family, params, chip)
    # heap of (bound, config index, stage, payload); one entry per config, so the payload
    # is never compared
    QUICK, TRACE, HITS = 0, 1, 2
    heap: list[tuple[float, int, int, Any]] = [
        (family.quick_bound(params, c, chip) if family.quick_bound else 0.0, i, QUICK, None)
        for i, c in enumerate(space)
    ]
    heapq.heapify(heap)
    best: tuple[int | float, int] | None = None
    runs: dict[int, Run] = {}
    replays: ReplayMemo = {}
    shared = _Shared(chip)
    replayed = 0
    refused: list[InputError] = []

    # a bound's float rounding may put it a hair above the (picosecond) replay: allow 1 ps;
    # rank_key rounds monotonically, so a config whose bound ranks behind the best cannot win
    while heap and (best is None or rank_key(heap[0][0] - ROUNDING_S, heap[0][1]) < best):
        _, i, stage, payload = heapq.heappop(heap)
        if stage == QUICK:
            try:
                trace = family.build(params, space[i], chip)
            except InputError as exc:  # too many programs, say: the search passes over it
                refused.append(exc)
                continue
            costs, key = shared.costs_of(trace)
            heapq.heappush(heap, (latency_lower_bound_s(trace, chip, costs=costs), i, TRACE, (trace, costs, key)))
            continue
        trace, costs, key_or_hits = payload  # TRACE: the trace's key; HITS: its hits
        hits = shared.hits_of(trace, key_or_hits) if stage == TRACE else key_or_hits
        if stage == TRACE and hits is not None:
            bound = latency_lower_bound_s(trace, chip, hits, costs=costs)
            heapq.heappush(heap, (bound, i, HITS, (trace, costs, hits)))
        else:
            known = len(replays)
            sim = simulate_kernel(trace, chip, replays=replays, hits=hits, costs=costs)
            replayed += hits is None or len(replays) > known  # TPU replays are not memoised
            runs[i] = Run(space[i], trace, sim)
            best = min(best or rank_key(float("inf"), 0), rank_key(runs[i].sim.latency_s, i))
    if best is None:
        raise refused[0]
    return Search(best=runs[best[1]], searched=len(space), simulated=len(runs), replayed=replayed)


def run_given(family: Family, params: dict[str, Any], config: Mapping[str, str], auto: bool,
              chip: Chip) -> tuple[Run, int | None]:
    """What :func:`split_params` asked for: the run ``config=auto`` picks and how many
    configs it searched, or the run of the given config (defaults filled in) and None."""
    if auto:
        search = best_config(family, params, chip)
        return search.best, search.searched
    return run_config(family, params, family.resolve_config(params, config, chip), chip), None
