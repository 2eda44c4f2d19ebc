"""Writing a program's ops: :class:`OpList` appends system-trace ops (as the JSON the
trace format takes) and :class:`StageGroups` gives the replica groups of one pipeline
stage's ranks, laid out as ``accelsim.model.layout`` says."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from accelsim.model.layout import Layout


class OpList:
    """One program's ops in issue order; names are unique (the caller tags them).

    ``host_s``: the host time each op added now takes to issue (an eager framework's
    per-op cost, set by the writer as it moves between forward and backward; 0: no host
    timeline); a ``done`` is a wait on the device, not an op the host issues."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.host_s = 0.0

    def add(self, op: dict[str, Any]) -> str:
        if self.host_s and op["kind"] != "done":
            op["host_s"] = self.host_s
        self.ops.append(op)
        return op["name"]

    def host_waits_for(self, names: list[str]) -> None:
        """The host waits for these ops (the last ones added) to finish before it issues
        the next: a check that reads a device value on the host."""
        wanted = set(names)
        for op in reversed(self.ops):
            if not wanted:
                return
            if op["name"] in wanted:
                op["host_sync"] = True
                wanted.discard(op["name"])
        if wanted:
            raise ValueError(f"host_waits_for: no op named {sorted(wanted)[0]!r}")

    def kernel(self, name: str, family: str, params: dict[str, Any], deps: list[str]) -> str:
        return self.add({"name": name, "kind": "compute", "family": family, "params": params, "deps": list(deps)})

    def memory_pass(self, name: str, nbytes: float, deps: list[str]) -> str:
        """A memory-bound pass priced by the roofline (the optimizer update)."""
        return self.add({"name": name, "kind": "compute", "bytes": float(nbytes), "deps": list(deps)})

    def collective(self, name: str, kind: str, nbytes: float, groups: list[list[int]], deps: list[str],
                   *, is_async: bool = False, stream: str | None = None) -> str:
        op: dict[str, Any] = {"name": name, "kind": kind, "bytes": float(nbytes), "groups": groups,
                              "deps": list(deps)}
        if is_async:
            op["async"] = True
        if stream is not None:
            op["stream"] = stream
        return self.add(op)

    def permute(self, name: str, nbytes: float, pairs: list[tuple[int, int]], deps: list[str], stream: str) -> str:
        return self.add({"name": name, "kind": "collective-permute", "bytes": float(nbytes), "pairs": pairs,
                         "deps": list(deps), "stream": stream})

    def done(self, start: str, deps: tuple[str, ...] = ()) -> str:
        op: dict[str, Any] = {"name": f"{start}.done", "kind": "done", "start": start}
        if deps:
            op["deps"] = list(deps)
        return self.add(op)


class StageGroups:
    """Replica groups over the ranks of pipeline stage ``stage`` (each a list of device
    ids; a group list covers every rank of the stage once). Lists are built once and
    shared by every op that uses them."""

    def __init__(self, layout: Layout, stage: int) -> None:
        self.layout = layout
        self.size = layout.tp * layout.cp * layout.fsdp * layout.dp
        self.first = stage * self.size
        self.ranks = np.arange(self.first, self.first + self.size).reshape(
            layout.dp, layout.fsdp, layout.cp, layout.tp)

    @staticmethod
    def _rows(array: np.ndarray, width: int) -> list[list[int]]:
        return array.reshape(-1, width).tolist()

    @cached_property
    def tp(self) -> list[list[int]]:
        return self._rows(self.ranks, self.layout.tp)

    @cached_property
    def cp(self) -> list[list[int]]:
        return self._rows(self.ranks.transpose(0, 1, 3, 2), self.layout.cp)

    @cached_property
    def fsdp(self) -> list[list[int]]:
        return self._rows(self.ranks.transpose(0, 2, 3, 1), self.layout.fsdp)

    @cached_property
    def dp(self) -> list[list[int]]:
        """Ranks that differ only in their data-parallel index (Megatron-LM's data-parallel
        group without CP)."""
        return self._rows(self.ranks.transpose(1, 2, 3, 0), self.layout.dp)

    @cached_property
    def replicas(self) -> list[list[int]]:
        """Ranks holding the same weight shard: CP x DP (what gradients are reduced over,
        after FSDP's reduce-scatter where there is one)."""
        return self._rows(self.ranks.transpose(1, 3, 0, 2), self.layout.dp * self.layout.cp)

    def _data(self) -> np.ndarray:
        """Per TP rank, the stage's other ranks in data-parallel x context-parallel order."""
        return self.ranks.transpose(3, 0, 1, 2).reshape(self.layout.tp, -1)

    @cached_property
    def ep(self) -> list[list[int]]:
        return self._rows(self._data(), self.layout.ep)

    @cached_property
    def expert_replicas(self) -> list[list[int]]:
        """Ranks holding the same experts (what expert gradients are reduced over)."""
        data = self._data()
        width = data.shape[1] // self.layout.ep
        return self._rows(data.reshape(self.layout.tp, width, self.layout.ep).transpose(0, 2, 1), width)

    def to_stage(self, other: int) -> list[tuple[int, int]]:
        """``(rank, the rank at the same place of stage other)`` for every rank of this stage."""
        shift = (other * self.size) - self.first
        return [(r, r + shift) for r in range(self.first, self.first + self.size)]

    def from_stage(self, other: int) -> list[tuple[int, int]]:
        shift = (other * self.size) - self.first
        return [(r + shift, r) for r in range(self.first, self.first + self.size)]
