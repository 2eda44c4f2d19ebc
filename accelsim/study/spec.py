"""The sweep spec: what a user writes in ``SPEC.yaml`` for ``accelsim sweep``.

A spec names a base chip or system (or a list of them, which then varies like a
parameter called ``arch``), the config fields to vary and how to sample them, the
workloads to run at every point and the metrics to keep::

    base: h100-sxm
    parameters:
      hbm.bandwidth: {values: ["2 TB/s", "4 TB/s", "8 TB/s"]}
      clock: {range: {start: "1.2 GHz", stop: "2 GHz", num: 5}}
    sampling: grid                       # or {random: {samples: 50, seed: 0}}
    workloads:
      - kernel: gemm
        params: {M: 4096, N: 4096, K: 4096}
    metrics: [latency_s, achieved_flops_per_s]

Everything is checked here, with the file and line of the offending field; the
points and workloads are checked against the configs by :mod:`accelsim.study.plan`
before any simulation starts. See ``docs/sweeps.md`` for every field.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from accelsim.arch.loader import read_yaml
from accelsim.errors import InputError, shown
from accelsim.trace.kernel import PathText

Scalar = int | float | str | bool
Value = Scalar | list[Scalar]



MAX_POINTS = 100_000
"""Points one sweep may have (and values one range may give): each is a simulation, so
more would run for hours; checked before any list is built."""
MAX_RUNS = MAX_POINTS
"""Runs one sweep may have: its points times its workloads, each workload counted once
per combination of its ``vars`` (before they are expanded)."""

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RangeSpec(_Strict):
    """Evenly spaced values from ``start`` to ``stop`` inclusive: ``num`` of them, or every ``step``.
    Numbers or quantities with one unit (``"1 TB/s"``)."""

    start: int | float | str
    stop: int | float | str
    num: int | None = Field(default=None, ge=2, le=MAX_POINTS)
    step: int | float | str | None = None

    @model_validator(mode="after")
    def _one_of_num_step(self) -> RangeSpec:
        if (self.num is None) == (self.step is None):
            raise ValueError("give exactly one of 'num' and 'step'")
        return self


class LogRangeSpec(_Strict):
    """``num`` values from ``start`` to ``stop`` inclusive, evenly spaced on a log scale."""

    start: int | float | str
    stop: int | float | str
    num: int = Field(ge=2, le=MAX_POINTS)


class ParameterSpec(_Strict):
    """How one config field varies: exactly one of ``values``, ``range``, ``log_range``."""

    values: list[Value] | None = Field(default=None, min_length=1)
    range: RangeSpec | None = None
    log_range: LogRangeSpec | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ParameterSpec:
        given = [name for name in ("values", "range", "log_range") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'values', 'range', 'log_range'")
        return self


class RandomSampling(_Strict):
    samples: int = Field(ge=1, le=MAX_POINTS)
    seed: int = 0


class SamplingSpec(_Strict):
    random: RandomSampling


class ParetoSpec(_Strict):
    """Two objectives (metrics or varied parameters), each minimised unless said otherwise."""

    x: str
    y: str
    x_goal: Literal["min", "max"] = "min"
    y_goal: Literal["min", "max"] = "min"


class MemoryTerm(_Strict):
    """``bytes`` times the product of the workload variables named in ``per``."""

    bytes: str | int
    per: list[str] = Field(default_factory=list)


class KernelWorkload(_Strict):
    kernel: str
    params: dict[str, Value] = Field(default_factory=dict)


class TraceWorkload(_Strict):
    trace: PathText


class CollectiveWorkload(_Strict):
    collective: str
    bytes: str | int
    algorithm: str = "auto"
    ranks: int | str | None = None


class SystemTraceWorkload(_Strict):
    system_trace: PathText
    algorithm: str = "auto"
    roofline_overhead: str = "0 us"
    """A fixed cost added to every roofline compute op (``replay --roofline-overhead``)."""


class Step(_Strict):
    """One entry of a sequence: a kernel or a collective, ``count`` times in a row."""

    kernel: str | None = None
    params: dict[str, Value] = Field(default_factory=dict)
    collective: str | None = None
    bytes: str | int | None = None
    algorithm: str = "auto"
    ranks: int | str | None = None
    count: int = Field(default=1, ge=1)
    name: str | None = None

    @model_validator(mode="after")
    def _kernel_or_collective(self) -> Step:
        if (self.kernel is None) == (self.collective is None):
            raise ValueError("a step is a 'kernel' or a 'collective' (one of them)")
        if self.collective is not None and self.bytes is None:
            raise ValueError("a collective step needs 'bytes'")
        if self.kernel is not None and (self.bytes is not None or self.ranks is not None):
            raise ValueError("'bytes' and 'ranks' belong to collective steps")
        return self


class SequenceWorkload(_Strict):
    """Steps run one after another (e.g. one decode step of a model); latency adds up."""

    sequence: list[Step] = Field(min_length=1)
    memory: list[MemoryTerm] = Field(default_factory=list)


WORKLOAD_KINDS: dict[str, type[_Strict]] = {
    "kernel": KernelWorkload,
    "trace": TraceWorkload,
    "collective": CollectiveWorkload,
    "system_trace": SystemTraceWorkload,
    "sequence": SequenceWorkload,
}
"""Each workload is a mapping with exactly one of these keys; it decides the kind."""

COMMON_WORKLOAD_KEYS = ("name", "vars")
"""Keys every workload may have: a display name, and variables (each a list of
values) that expand the workload into one per combination; ``$var`` in a value is
replaced by the variable's value."""


class WorkloadSpec(_Strict):
    kind: str
    name: str | None
    vars: dict[str, list[Scalar]]
    body: BaseModel
    index: int
    """Position in the spec's ``workloads`` list."""


class SweepSpec(_Strict):
    """A validated sweep spec. ``source`` is the file it came from."""

    base: PathText | list[PathText]
    """A config name or file (names are printable text too)."""
    parameters: dict[str, ParameterSpec] = Field(default_factory=dict)
    sampling: Annotated[Literal["grid"] | SamplingSpec, Field(union_mode="left_to_right")] = "grid"

    @field_validator("sampling", mode="before")
    @classmethod
    def _sampling(cls, value: Any) -> Any:
        """A mapping is a random sampling: validate it as one, so its own errors show
        (``samples``, ``seed``) instead of the union's "should be 'grid'"."""
        return SamplingSpec.model_validate(value) if isinstance(value, dict) else value
    workloads: list[dict[str, Any]] = Field(min_length=1)
    metrics: list[str] = Field(default_factory=lambda: ["latency_s"])
    plots: list[str] | None = None
    """Metrics to plot (default: every numeric metric in ``metrics``)."""
    pareto: ParetoSpec | None = None
    name: str | None = None
    description: str | None = None

    @property
    def bases(self) -> list[str]:
        return [self.base] if isinstance(self.base, str) else list(self.base)


class LoadedSpec(BaseModel):
    """A spec with where it came from (file and line of every key) and its workloads."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: SweepSpec
    workloads: list[WorkloadSpec]
    raw: dict[str, Any]
    path: Path
    lines: dict[tuple, int]

    def error(self, message: str, loc: Sequence[object]) -> InputError:
        """An InputError at ``loc`` (a key path in the spec), with the line of its deepest known part."""
        return _error(message, loc, self.path, self.lines)


def load_sweep_spec(path: str | Path) -> LoadedSpec:
    """Read and validate a sweep spec file; raises a located InputError."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such sweep spec file", source=str(path))
    data, lines = read_yaml(path)
    spec = _validate(SweepSpec, data, (), path, lines)
    if isinstance(spec.base, list) and not spec.base:
        raise _error("give at least one base config", ("base",), path, lines)
    bases = [_beside(base, path) for base in spec.bases]
    spec = spec.model_copy(update={"base": bases[0] if isinstance(spec.base, str) else bases})
    workloads = [_workload(item, i, path, lines) for i, item in enumerate(spec.workloads)]
    return LoadedSpec(spec=spec, workloads=workloads, raw=data, path=path, lines=lines)


def is_config_file(base: str) -> bool:
    """Whether a sweep base names a config file (else a config name)."""
    return base.endswith((".yaml", ".yml")) or "/" in base


def _beside(base: str, spec_path: Path) -> str:
    """A base given as a relative file path is relative to the spec file; names stay names."""
    if not is_config_file(base):
        return base
    candidate = Path(base)
    return base if candidate.is_absolute() else str(spec_path.parent / candidate)


def load_validated(model: type[BaseModel], path: str | Path):
    """Read a YAML file and validate it as ``model``; errors name the file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    data, lines = read_yaml(path)
    return _validate(model, data, (), path, lines)


def _workload(item: dict[str, Any], index: int, path: Path, lines: dict) -> WorkloadSpec:
    loc = ("workloads", index)
    kinds = [k for k in WORKLOAD_KINDS if k in item]
    if len(kinds) != 1:
        raise _error(f"a workload has exactly one of the keys: {', '.join(WORKLOAD_KINDS)}", loc, path, lines)
    kind = kinds[0]
    body = {k: v for k, v in item.items() if k not in COMMON_WORKLOAD_KEYS}
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise _error("expected a string", loc + ("name",), path, lines)
    variables = item.get("vars", {})
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and v for k, v in variables.items()
    ):
        raise _error("expected a mapping of variable name -> non-empty list of values", loc + ("vars",), path, lines)
    for var, values in variables.items():
        for k, value in enumerate(values):
            if not isinstance(value, Scalar):
                raise _error(f"expected a number, text or true/false, got {shown(value)}", loc + ("vars", var, k),
                             path, lines)
    model = _validate(WORKLOAD_KINDS[kind], body, loc, path, lines)
    return WorkloadSpec(kind=kind, name=name, vars=variables, body=model, index=index)


def _validate(model: type[BaseModel], data: Any, prefix: tuple, path: Path, lines: dict):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = prefix + tuple(_user_loc(error["loc"]))
        kind = error["type"]
        if kind == "missing":
            message = "missing required field"
        elif kind == "extra_forbidden":
            message = f"unknown field; expected one of: {', '.join(_field_names(model, error['loc'][:-1]))}"
        else:
            message = error["msg"].removeprefix("Value error, ")
            if kind != "value_error" and "input" in error:
                message += f" (got {shown(error['input'])})"
        raise _error(message, loc, path, lines) from None


def _user_loc(loc: Sequence[object]) -> list[object]:
    """Drop pydantic's union-member steps (``str``, ``list[...]``, class names) from a location."""
    out = []
    for part in loc:
        if isinstance(part, str) and (part in ("str", "int", "float", "bool", "[key]") or part[:1].isupper()
                                      or part.startswith(("list[", "dict[", "literal[", "function-"))):
            continue
        out.append(part)
    return out


def _field_names(model: type[BaseModel], loc: Sequence[object]) -> list[str]:
    current: Any = model
    for part in loc:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return list(getattr(current, "model_fields", {}) or [])
        annotation = fields[part].annotation
        current = next((a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")), annotation)
    return list(getattr(current, "model_fields", {}) or [])


def _error(message: str, loc: Sequence[object], path: Path, lines: dict) -> InputError:
    for n in range(len(loc), 0, -1):
        line = lines.get(tuple(loc[:n]))
        if line is not None:
            break
    else:
        line = None
    return InputError(message, source=str(path), line=line, field=tuple(loc) or None)
