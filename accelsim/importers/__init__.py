"""Trace importers: other tools' outputs (XLA HLO text, MLCommons Chakra execution
traces) as accelsim system traces, one ``accelsim import NAME`` subcommand each.

An importer is one module that defines an :class:`Importer` (its options, the files it
reads, and the conversion to a :class:`~accelsim.system.trace.SystemTrace`) and one line
here that registers it; the CLI adds ``-o``, checks the output path against the inputs,
validates and writes the trace. An importer of measured runs (``profile``: profiler
traces) also hands back a measured-step document (:attr:`Imported.measured`), which the CLI
writes instead, once the trace of the same step checks. (``accelsim import nccl-tests``
turns logs into collective measurements, not a trace: it is :mod:`accelsim.cli.import_cmd`'s own.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.registry import Registry

if TYPE_CHECKING:
    from accelsim.system.trace import SystemTrace


@dataclass(frozen=True)
class Imported:
    """What an importer made: the trace, and lines to print after the CLI's summary."""

    trace: SystemTrace
    notes: tuple[str, ...] = ()
    measured: dict[str, Any] | None = None
    """A measured run (``accelsim import profile``): the document the CLI writes in place of
    the trace, which is still checked (it is the run's step as the replay will see it)."""


@dataclass(frozen=True, kw_only=True)
class Importer:
    """One ``accelsim import NAME`` format."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    """Its inputs and options (the CLI adds ``-o``)."""
    inputs: Callable[[argparse.Namespace], Sequence[str | Path]]
    """Checks the options and names the files it imports (errors about what it built name
    them), before any is read."""
    convert: Callable[[argparse.Namespace], Imported]
    configs: Callable[[argparse.Namespace], Sequence[str | Path]] = lambda args: ()
    """Config files it also reads (the output may not overwrite them either)."""
    what_if: bool = False
    """It takes ``--set PATH=VALUE`` overrides (``args.overrides``) of the config it reads."""
    hint: str = ""
    """Added to the error when what it built is not a valid trace."""
    writes: str = "system trace"
    """What ``-o`` names (its help): a system trace, or a measured step."""
    options_of_fields: Mapping[str, str] = field(default_factory=dict)
    """The options (of :attr:`add_arguments`) that give the fields its errors name
    (``{"group": "--group"}``): the CLI names the option."""


IMPORTERS: Registry[Importer] = Registry("importer")
IMPORTERS.register_lazy("chakra", "accelsim.importers.chakra:IMPORTER")
IMPORTERS.register_lazy("hlo", "accelsim.importers.hlo:IMPORTER")
IMPORTERS.register_lazy("profile", "accelsim.importers.profile:IMPORTER")
