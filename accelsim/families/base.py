"""What every built-in kernel family provides, and typed parsing of ``--param K=V``.

A family is a parametric trace generator: problem parameters (shapes, dtype) and a
tunable config (tile sizes, stages, warps, ...) in, a kernel trace out, for a GPU or
a TPU chip. ``config=auto`` searches the family's config space with the engine.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accelsim.arch.model import Chip, GpuChip, TpuChip
from accelsim.errors import InputError, shown
from accelsim.trace.kernel import MAX_COUNT
from accelsim.trace.kernel import KernelTrace

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True)
class Param:
    """One parameter of a family or of its config."""

    name: str
    kind: type  # int, str or bool
    default: Any = None
    choices: tuple[Any, ...] | None = None
    help: str = ""
    minimum: int | None = 1

    @property
    def required(self) -> bool:
        return self.default is None

    def parse(self, text: Any, where: str = "params") -> Any:
        """``text`` converted and checked; errors name the field ``where.name`` (``params.M``)."""
        field = f"{where}.{self.name}"
        value = self._convert(text, field)
        if self.choices is not None and value not in self.choices:
            raise InputError(
                f"expected one of: {', '.join(map(str, self.choices))}; got {shown(text)}", field=field
            )
        if self.kind is int and self.minimum is not None and value < self.minimum:
            raise InputError(f"expected an integer >= {self.minimum}, got {shown(value)}", field=field)
        if self.kind is int and value > MAX_COUNT:
            raise InputError(f"expected an integer <= 2^48 (the largest count a kernel trace holds), got {shown(value)}",
                             field=field)
        return value

    def _convert(self, text: Any, field: str) -> Any:
        if self.kind is bool:
            if isinstance(text, bool):
                return text
            lowered = str(text).strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise InputError(f"expected true or false, got {shown(text)}", field=field)
        if self.kind is int:
            if isinstance(text, bool):
                raise InputError(f"expected an integer, got {shown(text)}", field=field)
            if isinstance(text, int):
                return text
            digits = str(text).replace("_", "").strip()
            try:
                return int(digits, 10)
            except ValueError:
                pass
            return _whole_number(digits, text, field)
        return str(text)


def _whole_number(digits: str, text: Any, field: str) -> int:
    """``1e15`` or ``4096.0``: a whole number written as a float, exact below 2^53."""
    try:
        value = float(digits)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and abs(value) <= 2**53):
        raise InputError(f"expected an integer, got {shown(text)}", field=field)
    return int(value)


def parse_values(specs: Sequence[Param], given: Mapping[str, Any], where: str = "params") -> dict[str, Any]:
    """Check names, convert types, fill defaults; errors name the parameter's field,
    ``where.name`` (``params.M``: a caller that took the values from elsewhere, a command
    line option or another file's field, says so)."""
    known = {p.name: p for p in specs}
    for name in given:
        if name not in known:
            raise InputError(f"unknown parameter; expected one of: {', '.join(known)}", field=f"{where}.{name}")
    out = {}
    for spec in specs:
        if spec.name in given:
            out[spec.name] = spec.parse(given[spec.name], where)
        elif spec.required:
            raise InputError("missing required parameter", field=f"{where}.{spec.name}")
        else:
            out[spec.name] = spec.default
    return out


def parse_assignments(items: Sequence[str], source: str) -> dict[str, str]:
    """``["M=4096", "dtype=bf16"]`` -> ``{"M": "4096", "dtype": "bf16"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected K=V, got {shown(item)}", source=source)
        out[key.strip()] = value.strip()
    return out


def check_powers_of_two(config: Mapping[str, Any], fields: Sequence[str]) -> None:
    """Refuse a value Triton would not compile: every dimension of a Triton block tensor and
    the range of ``tl.arange`` must be a power of two, and so must ``num_warps`` (triton
    3.9.0: ``_utils.validate_block_shape``, "Shape element {i} must be a power of 2", run
    for every ``tl.block_type``; ``language/semantic.py``, ``arange``: "arange's range must
    be a power of 2"; ``backends/nvidia/compiler.py`` ``CUDAOptions.__post_init__`` and
    ``backends/amd/compiler.py`` ``HIPOptions.__post_init__``: "num_warps must be a power
    of 2"). ``num_stages``, ``group_m`` and split counts are loop and grid arithmetic, free."""
    for name in fields:
        value = config.get(name)
        if isinstance(value, int) and (value < 1 or value & (value - 1)):
            raise InputError(f"expected a power of two on a GPU (Triton's block sizes and num_warps must be), "
                             f"got {value}", field=f"params.{name}")


def local_limit(chip: Chip) -> tuple[float, str]:
    """Local memory one program may use, and the config field it comes from: a TPU core's
    whole VMEM (one program at a time), a GPU's per-block shared-memory limit."""
    if isinstance(chip, TpuChip):
        return chip.local.capacity_bytes, "local_memory.capacity"
    return chip.local.max_per_program_bytes, "local_memory.max_per_program"


def fits(check: Callable[..., None], *args: Any) -> bool:
    """Whether ``check(*args)`` accepts a config: config spaces keep only those that fit."""
    try:
        check(*args)
    except InputError:
        return False
    return True


@dataclass(frozen=True)
class Family:
    """A built-in kernel family."""

    name: str
    description: str
    params: tuple[Param, ...]
    config_params: tuple[Param, ...]
    """Tunables; their defaults are ``None`` meaning 'chosen by default_config'."""
    default_config: Callable[[dict[str, Any], Chip], dict[str, Any]]
    config_space: Callable[[dict[str, Any], Chip], list[dict[str, Any]]]
    build: Callable[[dict[str, Any], dict[str, Any], Chip], KernelTrace]
    check: Callable[[dict[str, Any], dict[str, Any], Chip], None] | None = None
    """Raises InputError if a config cannot run for these params on this chip."""
    quick_bound: Callable[[dict[str, Any], dict[str, Any], Chip], float] | None = None
    """A lower bound on a config's simulated latency computed without building its trace:
    lets ``config=auto`` skip building configs that cannot win. None: 0."""
    fit_defaults: Callable[[dict[str, Any], dict[str, Any], set[str], Chip], dict[str, Any]] | None = None
    """``(params, config, given, chip)``: the config with the defaults of what the user did
    not give (not in ``given``) made to suit what they did (a GEMM's split-K for their tile)."""
    powers_of_two_on_gpu: tuple[str, ...] = ()
    """Config fields a GPU kernel of this family, a Triton kernel, needs as powers of two:
    see :func:`check_powers_of_two`."""
    compiled_by_triton: Callable[[dict[str, Any], Chip], bool] = lambda params, chip: True
    """``(params, chip)``: whether the kernel these params choose is a Triton kernel, whose
    block sizes must be powers of two (a library's own kernels need not be: FlashAttention-3
    runs 176-column K/V blocks, DeepGEMM 112-column tiles)."""
    gpu_only: tuple[str, ...] = ()
    """Config fields that mean something on a GPU only (warps, launch swizzle, split-K,
    clusters): left out where a TPU config is shown (:meth:`shown_config`)."""

    def shown_config(self, config: Mapping[str, Any], chip: Chip) -> dict[str, Any]:
        """``config`` as printed for ``chip``: without the GPU-only fields on a TPU."""
        return {k: v for k, v in config.items() if isinstance(chip, GpuChip) or k not in self.gpu_only}

    def parse_config(self, given: Mapping[str, Any], where: str = "params") -> dict[str, Any]:
        """The config values given, each converted and checked (type, choices, minimum);
        none is required."""
        specs = [Param(p.name, p.kind, default=False, choices=p.choices, help=p.help, minimum=p.minimum) for p in self.config_params]
        return parse_values(specs, given, where)

    def resolve_config(self, params: dict[str, Any], given: Mapping[str, Any], chip: Chip) -> dict[str, Any]:
        """Defaults for what the user did not set, then the user's values, checked on the chip
        this family's kernels run on (``chip`` with the family's values)."""
        chip = chip.for_family(self.name)
        values = self.parse_config(given)
        if isinstance(chip, GpuChip) and self.compiled_by_triton(params, chip):
            check_powers_of_two({k: v for k, v in values.items() if k in given}, self.powers_of_two_on_gpu)
        config = dict(self.default_config(params, chip))
        config.update({k: v for k, v in values.items() if k in given})
        if self.fit_defaults and given:
            config = self.fit_defaults(params, config, set(given), chip)
        if self.check:
            self.check(params, config, chip)
        return config
