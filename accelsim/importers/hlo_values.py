"""Which constant an HLO operand carries, followed back through the instructions that only
move or select it.

A Pallas TPU kernel's scalar-prefetched operands (splash attention's block mask,
:mod:`hlo_splash`) are constants the program computed at trace time; by the time the
kernel is called they have been sliced to the device's shard, passed into a ``while``
loop through its carry and prefetched into VMEM. :class:`ConstantTracer` follows an
operand back to the ``constant`` it came from through:

* ``copy``, ``copy-start``/``copy-done`` (a prefetch), ``bitcast``, ``reshape``;
* ``slice`` and ``dynamic-slice`` (a part of the constant: the constant is returned whole,
  so what is read of it is its mean over the parts the devices take);
* a ``fusion`` whose root is one of those of a parameter (XLA:TPU's
  ``constant_dynamic-slice_fusion``): the fusion's operand of that parameter;
* ``get-tuple-element`` of a ``tuple``, of a ``while``'s result or of a loop body's or
  condition's parameter: the loop's init element, when the body passes that element
  through unchanged (else the value changes from trip to trip: not a constant);
  a ``call``'s result: its computation's root; a called computation's parameter: the
  call's operand, when the computation has one caller.

Anything else is not a constant (``None``). A constant printed elided
(``constant({...})``: ``HloPrintOptions::print_large_constants`` off, as
``compiled.as_text()`` prints) is returned too: :func:`integer_values` says whether its
values are there.
"""

from __future__ import annotations

import re

from accelsim.importers.hlo_text import Computation, Instruction, Module

PASS_THROUGH = frozenset({"copy", "copy-start", "copy-done", "bitcast", "reshape", "slice", "dynamic-slice"})
"""Instructions whose operand 0 is the value they carry (or a part of it)."""
_MAX_DEPTH = 64
_INTEGER = re.compile(r"-?\d+")


class ConstantTracer:
    """Follows operands of one module back to constants (the rules in the module docstring)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self._names = {name: comp.by_name() for name, comp in module.computations.items()}
        self._callers: dict[str, list[tuple[Computation, Instruction]]] = {}
        for comp in module.computations.values():
            for inst in comp.instructions:
                if inst.opcode in ("while", "call"):
                    for called in inst.called():
                        self._callers.setdefault(called, []).append((comp, inst))

    def constant(self, comp: Computation, operand: str) -> Instruction | None:
        """The ``constant`` instruction ``operand`` (an instruction of ``comp``) carries, else ``None``."""
        return self._value(comp.name, operand, (), 0)

    def _value(self, comp: str, name: str, index: tuple[int, ...], depth: int) -> Instruction | None:
        """The constant element ``index`` (a tuple path, outermost first) of instruction
        ``name`` in computation ``comp`` is."""
        inst = self._names.get(comp, {}).get(name)
        if inst is None or depth > _MAX_DEPTH:
            return None
        depth += 1
        op = inst.opcode
        if op == "constant":
            return inst if not index else None
        if op == "get-tuple-element":
            return self._value(comp, inst.operands[0], (int(inst.attrs.get("index", "-1")), *index), depth)
        if op == "tuple":
            return self._value(comp, inst.operands[index[0]], index[1:], depth) if index and index[0] < len(
                inst.operands) else None
        if op == "copy-start" or (op in PASS_THROUGH and not index):
            return self._value(comp, inst.operands[0], (), depth) if inst.operands else None
        if op == "fusion" and not index:
            number = _sliced_parameter(self.module.computations.get(inst.called()[0]) if inst.called() else None)
            return self._value(comp, inst.operands[number], (), depth) if number is not None and number < len(
                inst.operands) else None
        if op == "call" and inst.called() and inst.called()[0] in self.module.computations:
            callee = self.module.computations[inst.called()[0]]
            return self._value(callee.name, callee.root.name, index, depth)
        if op == "while" and index and self._passed_through(inst, index[0]):
            return self._value(comp, inst.operands[0], index, depth)
        if op == "parameter":
            return self._parameter_value(comp, inst, index, depth)
        return None

    def _parameter_value(self, comp: str, param: Instruction, index: tuple[int, ...], depth: int) -> Instruction | None:
        callers = self._callers.get(comp, [])
        if len(callers) != 1:
            return None
        caller_comp, caller = callers[0]
        number = int(param.attrs.get("parameter_number", "-1"))
        if caller.opcode == "call":
            return self._value(caller_comp.name, caller.operands[number], index, depth) if 0 <= number < len(
                caller.operands) else None
        if number != 0 or not index or not self._passed_through(caller, index[0]):
            return None
        return self._value(caller_comp.name, caller.operands[0], index, depth)

    def _passed_through(self, loop: Instruction, element: int) -> bool:
        """Whether the loop's body writes carry element ``element`` back as it read it."""
        body_name = loop.attrs.get("body", "").lstrip("%")
        body = self.module.computations.get(body_name)
        if body is None or body.root.opcode != "tuple" or element >= len(body.root.operands):
            return False
        names = self._names[body_name]
        out = names.get(body.root.operands[element])
        while out is not None and out.opcode in ("copy", "bitcast") and out.operands:
            out = names.get(out.operands[0])
        return (out is not None and out.opcode == "get-tuple-element" and out.attrs.get("index") == str(element)
                and names.get(out.operands[0]) is not None and names[out.operands[0]].opcode == "parameter")


def _sliced_parameter(fused: Computation | None) -> int | None:
    """The parameter number a fusion's root carries (through :data:`PASS_THROUGH` ops), else ``None``."""
    if fused is None:
        return None
    names = fused.by_name()
    inst = fused.root
    while inst.opcode in PASS_THROUGH and inst.operands and inst.operands[0] in names:
        inst = names[inst.operands[0]]
    return int(inst.attrs["parameter_number"]) if inst.opcode == "parameter" else None


def integer_values(constant: Instruction) -> list[int] | None:
    """An integer constant's values when its text holds all of them; ``None`` when elided
    (``{...}``) or not an integer array."""
    if "..." in constant.literal or constant.shape.dtype[:1] not in ("s", "u"):
        return None
    values = [int(v) for v in _INTEGER.findall(constant.literal)]
    return values if len(values) == constant.shape.num_elements else None
