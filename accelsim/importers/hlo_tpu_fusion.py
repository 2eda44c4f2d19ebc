"""TPU fusions that hold collectives, as XLA's TPU compiler writes them (libtpu 0.0.42.1).

XLA:TPU does not print its overlapped collectives as ``all-gather-start`` /
``all-gather-done`` pairs; it fuses them:

* an **async collective fusion**: a *start* fusion whose computation holds the
  collective and ends in ``custom-call(...), custom_call_target="AsyncCollectiveStart"``;
  then *continuation* fusions, compute fusions (a matmul, a softmax) that also hold a copy
  of the collective with ``async_collective_fusion_config`` ``flag_start`` >= 0 (the
  collective's steps are issued from inside them, so it moves while they compute); then a
  *done* fusion ending in ``AsyncCollectiveDone``. The three share the collective's
  ``chain_id`` (a frontend attribute) and ``channel_id``;
* a **collective fusion** (``kind=kCustom`` with a ``collective_algorithm_config``): one
  synchronous collective, which XLA may have fused with what it feeds: an ``all-reduce``
  whose result is then dynamic-sliced to this device's shard (the ``all-reduce-scatter``
  fusion) is a reduce-scatter.

:func:`fused_collective` says which of these a ``fusion`` instruction is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelsim.importers.hlo_cost import FUSED_COLLECTIVES
from accelsim.importers.hlo_text import Computation, Instruction, Module

START_TARGET, DONE_TARGET = "AsyncCollectiveStart", "AsyncCollectiveDone"
_FLAG_START = re.compile(r'"async_collective_fusion_config"\s*:\s*\{\s*"flag_start"\s*:\s*"(-?\d+)"')
_CHAIN = re.compile(r'chain_id="?([^",}\s]+)')


@dataclass(frozen=True)
class FusedCollective:
    """The collective a fusion holds, and the fusion's part in it."""

    role: str
    """``start``, ``continue`` or ``done`` of an async collective fusion; ``sync`` for a
    collective fusion."""
    collective: Instruction
    computation: Computation
    """The fused computation that holds ``collective``."""
    kind: str | None = None
    """The system-trace kind when it is not the collective's own (``reduce-scatter``)."""

    @property
    def chain(self) -> str:
        """What ties a start to its continuations and done: the ``chain_id``, else the
        ``channel_id``."""
        m = _CHAIN.search(self.collective.attrs.get("frontend_attributes", ""))
        return m.group(1) if m else self.collective.attrs.get("channel_id", self.collective.name)


def fused_collective(module: Module, inst: Instruction) -> FusedCollective | None:
    """What part of a collective ``inst`` (a ``fusion``) is, or ``None`` for a fusion that
    holds none."""
    if inst.opcode != "fusion" or not inst.called():
        return None
    fused = module.computations[inst.called()[0]]
    collectives = [i for i in fused.instructions if i.opcode in FUSED_COLLECTIVES]
    if not collectives:
        return None
    collective = collectives[0]
    root = fused.root
    target = root.attrs.get("custom_call_target", "").strip('"') if root.opcode == "custom-call" else ""
    if target == START_TARGET:
        return FusedCollective("start", collective, fused)
    if target == DONE_TARGET:
        return FusedCollective("done", collective, fused)
    flag = _FLAG_START.search(collective.attrs.get("backend_config", ""))
    if flag is not None and int(flag.group(1)) >= 0:
        return FusedCollective("continue", collective, fused)
    return FusedCollective("sync", collective, fused, kind=_reduce_scatter(fused, collective))


def _reduce_scatter(fused: Computation, collective: Instruction) -> str | None:
    """``reduce-scatter`` for an all-reduce whose result the fusion only dynamic-slices
    (XLA's all-reduce-scatter fusion), else ``None``."""
    if collective.opcode != "all-reduce":
        return None
    users = [i for i in fused.instructions if collective.name in i.operands]
    if users and all(u.opcode == "dynamic-slice" for u in users):
        return "reduce-scatter"
    return None
