"""What a norm implementation provides to the ``layernorm`` and ``rmsnorm`` families."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelsim.arch.model import Chip
from accelsim.errors import InputError
from accelsim.families.rowwise import RowOp
from accelsim.trace.kernel import KernelTrace

Config = dict[str, Any]
Params = dict[str, Any]


@dataclass(frozen=True)
class NormImpl:
    """One implementation: the config it launches, the configs a search may pick from, its
    check and the trace of one config; each takes the row operation first."""

    name: str
    default_config: Callable[[RowOp, Params, Chip], Config]
    config_space: Callable[[RowOp, Params, Chip], list[Config]]
    build: Callable[[RowOp, Params, Config, Chip], KernelTrace]
    check: Callable[[RowOp, Params, Config, Chip], None]


def fixed_launch(name: str, config: Config, expected: Config) -> None:
    """Refuse a config other than the one a library launches (it has no tunables)."""
    for key, value in expected.items():
        if config.get(key) != value:
            raise InputError(f"impl={name} launches {key}={value} (the library's own launch); got {config.get(key)}",
                             field=f"params.{key}")
