"""A what-if on a trace's schedule: every async op waited for where its result is first used.

A compiled schedule places each async op's ``done`` where the compiler chose, and the
stream waits there: XLA's latency-hiding scheduler moves a ``*-done`` up to just after its
``*-start`` when keeping the transfer in flight would hold too much memory (a permute in
flight holds its receive buffer), and the replay then exposes the whole transfer, as the
chip would. :func:`waited_at_first_use` drops the ``done`` ops and makes whatever waited on
one wait on its async op itself: the stream goes on with the ops that do not need the
result and stops only at the first op that does (or that orders after it). The schedule's
order is kept; only the waits move. What the step takes then is the overlap the program's
dependencies allow, given its order: a bound on what a schedule without the compiler's
memory limit could hide, not a prediction of the compiled program.
"""

from __future__ import annotations

from accelsim.system.trace import Program, SystemTrace


def waited_at_first_use(trace: SystemTrace) -> SystemTrace:
    """``trace`` with its ``done`` ops dropped and every ``deps`` / ``ctrl_deps`` entry that
    named a ``done`` naming the async op it waited for (each named once). A trace without
    ``done`` ops is returned as it is."""
    if not any(op.kind == "done" for program in trace.programs for op in program.ops):
        return trace
    return trace.model_copy(update={"programs": [_program(p) for p in trace.programs]})


def _program(program: Program) -> Program:
    started = {op.name: op.start for op in program.ops if op.kind == "done"}
    if not started:
        return program
    ops = []
    for op in program.ops:
        if op.kind == "done":
            continue
        deps, ctrl = _waits(op.deps, started), _waits(op.ctrl_deps, started)
        ops.append(op if (deps, ctrl) == (op.deps, op.ctrl_deps) else
                   op.model_copy(update={"deps": deps, "ctrl_deps": ctrl}))
    return program.model_copy(update={"ops": ops})


def _waits(names: list[str], started: dict[str, str]) -> list[str]:
    """``names`` with each done replaced by its async op, first occurrences kept in order."""
    return list(dict.fromkeys(started.get(name, name) for name in names))
