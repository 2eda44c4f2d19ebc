"""Kernel design exploration: rank kernel configs on a chip by predicted latency.

Candidates are the configs of a built-in family (its own search space, or a space
file), or the configs of a real kernel captured once per config: a Triton kernel's
``@triton.autotune`` list, or candidate block shapes for a Pallas kernel. Each is
simulated on the chip; a candidate that does not fit (too much shared memory or VMEM,
a bad shape) is kept with its reason. The ranking says why each config is bound
where it is, from the engine's utilisations.

A space file is YAML, either a list of configs or a grid (every combination)::

    configs:
      - {block_m: 128, block_n: 256, block_k: 64}
      - {block_m: 64, block_n: 128, block_k: 64, num_stages: 3}
    # or
    grid:
      block_m: [64, 128, 256]
      block_n: [64, 128, 256]
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accelsim.arch.model import Chip, load_arch
from accelsim.engine.chip import KernelSimulation, ReplayMemo, simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import Family
from accelsim.families.search import fitting_space, rank_key, run_config
from accelsim.study.runner import describe
from accelsim.workers import mapped
from accelsim.study.spec import Scalar, load_validated
from accelsim.trace.kernel import KernelTrace


MAX_CANDIDATES = 100_000
"""Configs one exploration may list (a sweep's cap on points, too)."""


class SpaceSpec(BaseModel):
    """A space file: ``configs`` (a list) or ``grid`` (values per config field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    configs: list[dict[str, Scalar]] | None = Field(default=None, min_length=1)
    grid: dict[str, list[Scalar]] | None = None

    @model_validator(mode="after")
    def _one(self) -> SpaceSpec:
        if (self.configs is None) == (self.grid is None):
            raise ValueError("give exactly one of 'configs' and 'grid'")
        if self.grid is not None and (not self.grid or not all(self.grid.values())):
            raise ValueError("every grid field needs at least one value")
        count = len(self.configs) if self.configs is not None else math.prod(len(v) for v in self.grid.values())
        if count > MAX_CANDIDATES:
            raise ValueError(f"the space has {count:,} configs; at most {MAX_CANDIDATES:,} are explored at once "
                             "(split it, or grid fewer values)")
        return self

    def candidates(self) -> list[dict[str, Scalar]]:
        if self.configs is not None:
            return [dict(c) for c in self.configs]
        names = list(self.grid)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.grid[n] for n in names))]


def load_space(path: str | Path) -> list[dict[str, Scalar]]:
    return load_validated(SpaceSpec, path).candidates()


@dataclass(frozen=True)
class Candidate:
    """One config and its simulation, or why it could not run."""

    config: dict[str, Any]
    sim: KernelSimulation | None
    error: str | None = None

    @property
    def latency_s(self) -> float:
        return self.sim.latency_s if self.sim is not None else float("inf")


def rank(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Fastest first; ties and failures keep their given order (failures last)."""
    order = sorted(range(len(candidates)), key=lambda i: (candidates[i].sim is None, *rank_key(candidates[i].latency_s, i)))
    return [candidates[i] for i in order]


def _try(config: dict[str, Any], simulate: Callable[[], KernelSimulation]) -> Candidate:
    try:
        return Candidate(config, simulate())
    except InputError as exc:
        return Candidate(config, None, exc.message)
    except Exception as exc:  # noqa: BLE001 - one bad candidate does not stop the ranking
        return Candidate(config, None, describe(exc))


def explore_family(family: Family, params: dict[str, Any], chip: Chip,
                   space: Iterable[Mapping[str, Any]] | None = None, *, jobs: int = 1,
                   chip_source: tuple[str, tuple[str, ...]] | None = None) -> list[Candidate]:
    """Rank the family's configs for ``params`` on ``chip``: its own search space (the one
    ``config=auto`` searches) or the given candidates (missing fields take their defaults).
    ``jobs`` worker processes simulate the candidates (the same ranking); they load the chip
    from ``chip_source`` (its name or path, and the ``--set`` overrides it was loaded with)."""
    if space is None:
        configs = fitting_space(family, params, chip)
        job = FamilyJob(family.name, params, resolve=False)
    else:
        configs = [dict(given) for given in space]
        known = {p.name for p in family.config_params}
        unknown = sorted({key for config in configs for key in config} - known)
        if unknown:  # a typo in the space file, not a config that does not fit
            raise InputError(f"{', '.join(map(repr, unknown))}: not a {family.name} config field; expected one of: "
                             f"{', '.join(sorted(known))}", field="space")
        for i, config in enumerate(configs):  # a value of the wrong type is a bad space, not a config that does not fit
            family.parse_config(config, f"space.candidate {i + 1}")
        job = FamilyJob(family.name, params, resolve=True)
    out = _run_jobs(job, configs, chip, jobs, chip_source)
    # report the resolved config (defaults filled in) where it ran
    return rank([Candidate(c.sim.config, c.sim) if space is not None and c.sim is not None else c for c in out])


def explore_captured(capture: Callable[[dict[str, str]], KernelTrace], params: Mapping[str, str], chip: Chip,
                     space: Iterable[Mapping[str, Any]], *, jobs: int = 1,
                     chip_source: tuple[str, tuple[str, ...]] | None = None) -> list[Candidate]:
    """Capture the kernel once per candidate (``params`` plus the candidate's values) and
    rank. With ``jobs`` > 1, ``capture`` must be picklable (a :class:`CaptureSpec`)."""
    return rank(_run_jobs(CaptureJob(capture, dict(params)), [dict(given) for given in space], chip, jobs,
                          chip_source))


@dataclass(frozen=True)
class CaptureSpec:
    """What ``explore`` captures, as data (so worker processes can capture too): the tool,
    the kernel's file and entry function, and the Triton compile target if any."""

    tool: str
    path: str
    function: str
    compile_for: str | None = None
    family: str | None = None
    """The built-in family the kernel implements (its trace's ``metadata.family``)."""

    def __call__(self, params: dict[str, str]) -> KernelTrace:
        if self.tool == "triton":
            from accelsim.capture.triton import capture_triton

            trace = capture_triton(self.path, self.function, params, compile_for=self.compile_for)
        else:
            from accelsim.capture.pallas import capture_pallas

            trace = capture_pallas(self.path, self.function, params)
        if self.family is not None:
            trace.metadata["family"] = self.family
        return trace


@dataclass(frozen=True)
class FamilyJob:
    """Simulate one config of a family (``resolve``: fill in the defaults of a given one)."""

    family: str
    params: dict[str, Any]
    resolve: bool

    def __call__(self, config: dict[str, Any], chip: Chip, replays: ReplayMemo) -> Candidate:
        family = get_family(self.family)
        if self.resolve:
            text = {k: _text(v) for k, v in config.items()}
            return _try(config, lambda: run_config(family, self.params, family.resolve_config(self.params, text, chip),
                                                   chip, replays=replays).sim)
        return _try(config, lambda: run_config(family, self.params, config, chip, replays=replays).sim)


@dataclass(frozen=True)
class CaptureJob:
    """Capture and simulate one candidate of a Triton or Pallas kernel."""

    capture: Callable[[dict[str, str]], KernelTrace]
    params: dict[str, str]

    def __call__(self, given: dict[str, Any], chip: Chip, replays: ReplayMemo) -> Candidate:
        merged = {**self.params, **{k: _text(v) for k, v in given.items()}}
        return _try(given, lambda: simulate_kernel(self.capture(merged), chip, replays=replays))


_WORKER: dict = {}
"""A worker's job, chip and replay memo (in a worker process, or here)."""


def _init_worker(job, chip: Chip | None, chip_source: tuple[str, tuple[str, ...]] | None) -> None:
    _WORKER.clear()
    _WORKER.update(job=job, replays={},
                   chip=chip if chip is not None else load_arch(chip_source[0], list(chip_source[1])))


def _work(item: dict[str, Any]) -> Candidate:
    return _WORKER["job"](item, _WORKER["chip"], _WORKER["replays"])


def _run_jobs(job, items: list[dict[str, Any]], chip: Chip, jobs: int,
              chip_source: tuple[str, tuple[str, ...]] | None) -> list[Candidate]:
    """``job`` over ``items`` here (sharing one replay memo) or in ``jobs`` worker processes."""
    parallel = jobs > 1 and len(items) > 1
    if parallel and chip_source is None:
        raise ValueError("worker processes load the chip from chip_source")
    with mapped(_work, items, jobs, _init_worker, (job, None if parallel else chip, chip_source)) as results:
        return list(results)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def why(sim: KernelSimulation, shown: int = 3) -> str:
    """Why a run is bound where it is: its busiest resources, occupancy and cache hits."""
    busiest = sorted(sim.utilization.items(), key=lambda kv: (-kv[1], kv[0]))[:shown]
    parts = [", ".join(f"{name} {share:.0%}" for name, share in busiest)]
    parts.append(f"{sim.programs} programs, {sim.programs_per_core}/core ({sim.occupancy_limit})")
    if sim.shared_cache_hit_rate is not None:
        parts.append(f"L2 hits {sim.shared_cache_hit_rate:.0%}")
    return "; ".join(parts)


def config_text(config: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def autotune_configs(path: str, function: str) -> list[dict[str, Any]]:
    """The configs of every ``@triton.autotune`` kernel in the module of ``path:function``,
    as keyword arguments of that function: ``BLOCK_M`` -> ``block_m``, plus ``num_warps``
    and ``num_stages``. Empty if the module has none."""
    from accelsim.capture.common import load_function

    # import the file as capture will (Triton decides at its first import whether to interpret)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        module_globals = load_function(path, function).__globals__
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before
    configs, seen = [], set()
    for value in module_globals.values():
        if isinstance(value, type):
            continue
        for config in getattr(value, "configs", None) or []:
            kwargs = getattr(config, "kwargs", None)
            if not isinstance(kwargs, dict) or id(config) in seen:
                continue
            seen.add(id(config))
            entry = {k.lower(): v for k, v in kwargs.items()}
            for extra in ("num_warps", "num_stages"):
                if getattr(config, extra, None) is not None:
                    entry[extra] = getattr(config, extra)
            configs.append(entry)
    return configs
