"""Pipeline schedules: the order in which a stage runs its microbatches' forward and
backward passes (Megatron-LM's ``schedules.py``: 1F1B, and interleaved 1F1B over
``virtual_stages`` model chunks per stage), and who sends to whom."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Task:
    """One microbatch through one model chunk of a stage, forward (``F``) or backward (``B``)."""

    kind: Literal["F", "B"]
    microbatch: int
    chunk: int
    """The stage's model chunk, 0 .. virtual_stages - 1 (global chunk ``chunk x PP + stage``)."""


def schedule(pp: int, virtual_stages: int, microbatches: int, stage: int, forward_only: bool) -> list[Task]:
    """Stage ``stage``'s tasks in the order it runs them. Forward only (inference): every
    microbatch through every chunk in turn. Training: warm-up forwards, then one forward
    and one backward alternately, then the remaining backwards."""
    v, total = virtual_stages, microbatches * virtual_stages
    forwards = [Task("F", _microbatch(k, pp, v), _chunk(k, pp, v, True)) for k in range(total)]
    if forward_only:
        return forwards
    backwards = [Task("B", _microbatch(k, pp, v), _chunk(k, pp, v, False)) for k in range(total)]
    if v == 1:
        warmup = min(pp - stage - 1, total)
    else:
        warmup = min((pp - stage - 1) * 2 + (v - 1) * pp, total)
    order = forwards[:warmup]
    for i in range(total - warmup):
        order += [forwards[warmup + i], backwards[i]]
    return order + backwards[total - warmup:]


def _microbatch(k: int, pp: int, v: int) -> int:
    """Megatron's interleaved order: groups of PP microbatches through every chunk in turn
    (with v = 1: k itself)."""
    return (k // (pp * v)) * pp + k % pp if v > 1 else k


def _chunk(k: int, pp: int, v: int, forward: bool) -> int:
    chunk = (k // pp) % v if v > 1 else 0
    return chunk if forward else v - 1 - chunk


def receives(task: Task, stage: int, pp: int, virtual_stages: int) -> int | None:
    """The stage a task's input comes from (activations forward, gradients backward), or None."""
    first = stage == 0 and task.chunk == 0
    last = stage == pp - 1 and task.chunk == virtual_stages - 1
    if task.kind == "F":
        return None if first else (stage - 1) % pp
    return None if last else (stage + 1) % pp


def sends(task: Task, stage: int, pp: int, virtual_stages: int) -> int | None:
    """The stage a task's output goes to, or None."""
    first = stage == 0 and task.chunk == 0
    last = stage == pp - 1 and task.chunk == virtual_stages - 1
    if task.kind == "F":
        return None if last else (stage + 1) % pp
    return None if first else (stage - 1) % pp
