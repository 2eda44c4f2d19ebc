"""Reading XLA HLO text (``HloModule ...``) into plain records: shapes, instructions,
computations. No costs here; :mod:`accelsim.importers.hlo_cost` prices them.

The grammar followed is the one ``HloModule::ToString`` prints (and XLA's
``hlo_parser.cc`` reads back): a module header line, then computations
``[ENTRY] %name (params) -> shape {`` ... ``}``, one instruction per line::

    [ROOT] %name = SHAPE opcode(OPERANDS), attr=value, attr=value, ...

Shapes are ``dtype[dims]{layout}`` or tuples ``(shape, shape)``; of a layout
(``{1,0:T(8,128)(2,1)S(1)}``) the dimension order, the tiles and the memory space are
kept (:class:`Layout`: what a TPU array occupies and where), the rest skipped. Attribute
values are kept as raw text and parsed by whoever needs them. Lines outside computations
(``FileNames``/``StackFrames`` tables of newer XLA) are ignored. An operand written
``%name#N`` (current XLA's shorthand for element ``N`` of a tuple, with no
``get-tuple-element`` of its own) becomes a ``get-tuple-element`` instruction named so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from accelsim.errors import InputError, shown

DTYPE_BITS: dict[str, int] = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8,
    "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e8m0fnu": 8, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "token": 0, "opaque": 0,
}
"""Storage bits per element of every HLO primitive type (``xla_data.proto``)."""


HBM_SPACE, HOST_SPACE = 0, 5
"""Memory spaces of a layout's ``S(n)``: 0 is device memory (HBM; also what a layout
without ``S`` means), 5 XLA's host memory space. On a TPU every other space is on the
chip: 1 is VMEM; the others hold scalars, DMA contexts and synchronisation flags."""


@dataclass(frozen=True)
class Layout:
    """What a layout says about an array's storage: ``minor_to_major`` (empty: the default,
    minor last), ``tiles`` in order (``T(8,128)(2,1)``: 8x128 tiles of the two most minor
    dimensions, then 2x1 tiles of those), and the ``memory_space``."""

    minor_to_major: tuple[int, ...] = ()
    tiles: tuple[tuple[int, ...], ...] = ()
    memory_space: int = HBM_SPACE

    def padded_elements(self, dims: tuple[int, ...]) -> int:
        """Elements an array of ``dims`` occupies once every tile is padded whole (XLA's
        tiled layout: each tiling splits the most minor dimensions of what the previous one
        left, padding them to multiples of the tile; a tile with more dimensions than that
        pads the missing ones from 1). A ``*`` tile dimension (printed for a combined
        dimension) pads nothing."""
        order = reversed(self.minor_to_major) if len(self.minor_to_major) == len(dims) else range(len(dims))
        physical = [dims[d] for d in order]
        for tile in self.tiles:
            if len(tile) > len(physical):
                physical = [1] * (len(tile) - len(physical)) + physical
            inner = physical[len(physical) - len(tile):]
            tile = tuple(t if t > 0 else d for t, d in zip(tile, inner))
            physical = physical[:len(physical) - len(tile)] + [-(-d // t) for d, t in zip(inner, tile)] + list(tile)
        count = 1
        for d in physical:
            count *= d
        return count


DEFAULT_LAYOUT = Layout()


@dataclass(frozen=True)
class Shape:
    """An array shape (``dtype`` and ``dims``) or a tuple of shapes (``elements``), with
    the array's :class:`Layout` (not part of equality: the same array stored otherwise)."""

    dtype: str = "tuple"
    dims: tuple[int, ...] = ()
    elements: tuple[Shape, ...] = ()
    layout: Layout = field(default=DEFAULT_LAYOUT, compare=False)

    @property
    def is_tuple(self) -> bool:
        return self.dtype == "tuple"

    @property
    def num_elements(self) -> int:
        """Array elements (a scalar has one); a tuple has none of its own."""
        if self.is_tuple:
            return 0
        count = 1
        for d in self.dims:
            count *= d
        return count

    @property
    def size_bytes(self) -> float:
        """Bytes of all arrays in the shape (tuple elements summed; sub-byte types packed)."""
        if self.is_tuple:
            return sum(e.size_bytes for e in self.elements)
        return self.num_elements * DTYPE_BITS[self.dtype] / 8

    @property
    def memory_space(self) -> int:
        return self.layout.memory_space

    @property
    def stored_bytes(self) -> float:
        """Bytes the arrays occupy with their tiles padded whole (tuple elements summed);
        :attr:`size_bytes` without tiles."""
        if self.is_tuple:
            return sum(e.stored_bytes for e in self.elements)
        if not self.layout.tiles:
            return self.size_bytes
        return self.layout.padded_elements(self.dims) * DTYPE_BITS[self.dtype] / 8

    def leaves(self) -> list[Shape]:
        """The array shapes, depth first."""
        if not self.is_tuple:
            return [self]
        return [leaf for e in self.elements for leaf in e.leaves()]


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction as written: ``attrs`` hold the raw text of each ``key=value``."""

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    attrs: dict[str, str] = field(hash=False, compare=False)
    is_root: bool = False
    line: int = 0
    literal: str = ""
    """The text inside the parentheses for ``constant`` (its value), else empty."""

    def called(self) -> list[str]:
        """Names of the computations this instruction calls, in attribute order."""
        names: list[str] = []
        for key in ("calls", "to_apply", "body", "condition", "true_computation", "false_computation",
                    "branch_computations"):
            if key in self.attrs:
                names.extend(n.lstrip("%") for n in split_top(strip_braces(self.attrs[key])) if n)
        return names

    @property
    def control_predecessors(self) -> tuple[str, ...]:
        text = self.attrs.get("control-predecessors", "")
        return tuple(n.lstrip("%") for n in split_top(strip_braces(text)) if n)


@dataclass(frozen=True)
class Computation:
    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool = False

    @property
    def root(self) -> Instruction:
        for inst in self.instructions:
            if inst.is_root:
                return inst
        return self.instructions[-1]

    def by_name(self) -> dict[str, Instruction]:
        return {inst.name: inst for inst in self.instructions}


@dataclass(frozen=True)
class Module:
    """A parsed HLO module; ``computations`` keeps file order, ``entry`` names the entry."""

    name: str
    computations: dict[str, Computation] = field(hash=False)
    entry: str
    attrs: dict[str, str] = field(hash=False, compare=False)
    source: str = "<hlo>"

    @property
    def entry_computation(self) -> Computation:
        return self.computations[self.entry]

    @property
    def num_partitions(self) -> int:
        return int(self.attrs.get("num_partitions", "1"))

    @property
    def replica_count(self) -> int:
        return int(self.attrs.get("replica_count", "1"))

    @property
    def num_devices(self) -> int:
        return self.num_partitions * self.replica_count

    @property
    def is_scheduled(self) -> bool:
        return self.attrs.get("is_scheduled", "false") == "true"


_CLOSE = {"(": ")", "{": "}", "[": "]"}


def _unquoted(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, char)`` of every character from ``start`` outside double quotes
    (backslash escapes inside quotes respected)."""
    quote = False
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        else:
            yield i, ch
        i += 1


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets and quotes; parts stripped, empties dropped."""
    parts, depth, start = [], 0, 0
    for i, ch in _unquoted(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def strip_braces(text: str) -> str:
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        return text[1:-1]
    return text


def matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (quotes respected); -1 if none."""
    opener = text[start]
    closer, depth = _CLOSE[opener], 0
    for i, ch in _unquoted(text, start):
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    return -1


class _Cursor:
    """A position in one line, with the file and line number for errors."""

    def __init__(self, text: str, source: str, line: int) -> None:
        self.text, self.pos, self.source, self.line = text, 0, source, line

    def fail(self, expected: str) -> InputError:
        got = self.text[self.pos:self.pos + 30] or "end of line"
        return InputError(f"expected {expected}, got {shown(got)}", source=self.source, line=self.line)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self, token: str) -> bool:
        self.skip_ws()
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def group(self) -> str:
        """The text inside the bracket at the cursor (which must open one); moves past it."""
        self.skip_ws()
        if self.peek() not in _CLOSE:
            raise self.fail("'(' , '{' or '['")
        end = matching(self.text, self.pos)
        if end < 0:
            raise self.fail(f"a closing {shown(_CLOSE[self.text[self.pos]])}")
        inner = self.text[self.pos + 1:end]
        self.pos = end + 1
        return inner

    def word(self, pattern: re.Pattern[str], expected: str) -> str:
        self.skip_ws()
        m = pattern.match(self.text, self.pos)
        if not m:
            raise self.fail(expected)
        self.pos = m.end()
        return m.group(0)


_DTYPE = re.compile(r"[a-z][a-z0-9]*")
_DIM = re.compile(r"(<=)?(\d+|\?)")
_NAME = re.compile(r"%?[A-Za-z_][\w.\-]*")
_OPCODE = re.compile(r"[a-z][a-z0-9\-_]*")
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/')


def strip_comments(text: str) -> str:
    """Drop ``/*index=5*/`` comments the printer puts in long lists (not inside strings)."""
    if "/*" not in text:
        return text
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


def parse_shape(cur: _Cursor) -> Shape:
    if cur.take("("):
        elements: list[Shape] = []
        while not cur.take(")"):
            elements.append(parse_shape(cur))
            cur.take(",")
            if cur.pos >= len(cur.text):
                raise cur.fail("')' closing a tuple shape")
        return Shape(elements=tuple(elements))
    dtype = cur.word(_DTYPE, "a shape like f32[8,128]")
    if dtype not in DTYPE_BITS:
        cur.pos -= len(dtype)
        raise cur.fail(f"an HLO element type ({', '.join(sorted(DTYPE_BITS)[:6])}, ...)")
    if not cur.take("["):
        raise cur.fail("'[' after the element type")
    dims: list[int] = []
    while not cur.take("]"):
        m = _DIM.match(cur.text, cur.pos)
        if not m:
            raise cur.fail("a dimension size")
        dims.append(int(m.group(2)) if m.group(2) != "?" else 0)
        cur.pos = m.end()
        cur.take(",")
    layout = DEFAULT_LAYOUT
    if cur.pos < len(cur.text) and cur.text[cur.pos] == "{":
        layout = parse_layout(cur.group())
    return Shape(dtype, tuple(dims), layout=layout)


_TILE = re.compile(r"\(([\d,*]*)\)")
_SPACE = re.compile(r"S\((\d+)\)")


def parse_layout(text: str) -> Layout:
    """``1,0:T(8,128)(2,1)S(1)`` -> :class:`Layout`; parts other than the dimension
    order, tiles and memory space (element size ``E``, pointer sizes, ...) are skipped.
    Text that is not a layout's reads as the default one."""
    order_text, _, rest = text.partition(":")
    try:
        order = tuple(int(d) for d in order_text.split(",") if d.strip())
    except ValueError:
        return DEFAULT_LAYOUT
    tiles: list[tuple[int, ...]] = []
    if rest.startswith("T("):
        pos = 1
        while (m := _TILE.match(rest, pos)) is not None:
            tiles.append(tuple(0 if d == "*" else int(d) for d in m.group(1).split(",") if d))
            pos = m.end()
    space = _SPACE.search(rest)
    return Layout(order, tuple(t for t in tiles if t), int(space.group(1)) if space else HBM_SPACE)


def shape_from_text(text: str, source: str = "<shape>", line: int = 0) -> Shape:
    cur = _Cursor(text, source, line)
    shape = parse_shape(cur)
    cur.skip_ws()
    if cur.pos != len(cur.text):
        raise cur.fail("end of shape")
    return shape


def _operand_name(text: str) -> str:
    """``%x`` or ``f32[8]{0} %x`` (older printers) -> ``x``."""
    token = text.split()[-1] if text.split() else text
    return token.lstrip("%")


def parse_instruction(text: str, source: str, line: int) -> Instruction:
    cur = _Cursor(strip_comments(text), source, line)
    is_root = cur.take("ROOT ")
    name = cur.word(_NAME, "an instruction name").lstrip("%")
    if not cur.take("="):
        raise cur.fail("'=' after the instruction name")
    shape = parse_shape(cur)
    opcode = cur.word(_OPCODE, "an opcode")
    inner = cur.group() if cur.peek() == "(" else ""
    literal = inner if opcode == "constant" else ""
    operands = () if opcode in ("constant", "parameter", "iota") else tuple(
        _operand_name(o) for o in split_top(inner))
    attrs: dict[str, str] = {}
    if opcode == "parameter":
        attrs["parameter_number"] = inner.strip()
    rest = cur.text[cur.pos:].strip()
    for part in split_top(rest.lstrip(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise InputError(f"expected key=value attributes, got {shown(part[:30])}", source=source, line=line)
        attrs[key.strip()] = value.strip()
    return Instruction(name, opcode, shape, operands, attrs, is_root, line, literal)


_HEADER = re.compile(r"^(ENTRY\s+)?(%?[A-Za-z_][\w.\-]*)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def is_complete(text: str) -> bool:
    """Whether an instruction's text closes every bracket and quote it opens. The printer
    writes a backend config as it is stored, newlines included (JAX's TPU custom calls
    indent their ``cost_estimate``), so one instruction can span several lines."""
    if '"' in text:
        text = _STRING.sub("", text)
        if '"' in text:  # a string still open
            return False
    return (text.count("{") <= text.count("}") and text.count("(") <= text.count(")")
            and text.count("[") <= text.count("]"))


def parse_module(text: str, source: str = "<hlo>") -> Module:
    """Parse HLO module text; raises :class:`InputError` (one line, with the line number)."""
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or not lines[first].lstrip().startswith("HloModule"):
        raise InputError("not HLO text: expected a first line 'HloModule NAME, ...'", source=source,
                         line=None if first is None else first + 1)
    header = lines[first].strip()[len("HloModule"):].strip()
    head_parts = split_top(header)
    module_name = head_parts[0] if head_parts else "module"
    module_attrs = {}
    for part in head_parts[1:]:
        key, _, value = part.partition("=")
        module_attrs[key.strip()] = value.strip()

    computations: dict[str, Computation] = {}
    entry = None
    current: str | None = None
    current_entry = False
    body: list[Instruction] = []
    open_line = 0
    pending, pending_line = "", 0  # an instruction whose brackets or quotes are still open
    for index in range(first + 1, len(lines)):
        stripped = lines[index].strip()
        lineno = index + 1
        if current is None:
            m = _HEADER.match(stripped)
            if m and " = " not in stripped.split("(")[0]:
                current, current_entry, body, open_line = m.group(2).lstrip("%"), bool(m.group(1)), [], lineno
            continue
        if pending:
            pending = f"{pending}\n{stripped}"
            if is_complete(pending):
                body.append(parse_instruction(pending, source, pending_line))
                pending = ""
            continue
        if stripped.startswith("}"):
            if not body:
                raise InputError(f"computation {shown(current)} has no instructions", source=source, line=open_line)
            if current in computations:
                raise InputError(f"computation {shown(current)} is defined twice", source=source, line=open_line)
            if current_entry and entry is not None:
                raise InputError(f"a second ENTRY computation ({shown(current)}; the first is {shown(entry)})", source=source,
                                 line=open_line)
            _check_unique_names(body, source)
            body = _expand_tuple_shorthand(body, source)
            computations[current] = Computation(current, tuple(body), current_entry)
            if current_entry:
                entry = current
            current = None
            continue
        if not stripped or stripped.startswith("//"):
            continue
        if not is_complete(stripped):
            pending, pending_line = stripped, lineno
            continue
        body.append(parse_instruction(stripped, source, lineno))
    if pending:
        raise InputError("truncated HLO: this instruction never closes its brackets or quotes", source=source,
                         line=pending_line)
    if current is not None:
        raise InputError(f"truncated HLO: computation {shown(current)} is not closed with '}}'", source=source,
                         line=open_line)
    if entry is None:
        if not computations:
            raise InputError("no computations found in HLO text", source=source)
        raise InputError("no ENTRY computation in HLO text", source=source)
    unordered, calls = _check_references(computations, source)
    for name in unordered:
        computations[name] = _in_dependency_order(computations[name], source)
    _check_call_graph(calls, source)
    return Module(module_name, computations, entry, module_attrs, source)


def _check_unique_names(body: list[Instruction], source: str) -> None:
    seen: set[str] = set()
    for inst in body:
        if inst.name in seen:
            raise InputError(f"instruction {shown(inst.name)} is defined twice in its computation", source=source,
                             line=inst.line)
        seen.add(inst.name)


def _expand_tuple_shorthand(body: list[Instruction], source: str) -> list[Instruction]:
    """Operands ``%t#N`` (``#N#M`` for nested tuples) that no instruction defines become
    ``get-tuple-element`` instructions of that name, each placed before its first user."""
    defined = {inst.name: inst for inst in body}
    out: list[Instruction] = []
    for inst in body:
        for operand in inst.operands:
            if "#" in operand and operand not in defined:
                out.extend(_tuple_elements(operand, defined, inst, source))
        out.append(inst)
    return out


def _tuple_elements(operand: str, defined: dict[str, Instruction], user: Instruction,
                    source: str) -> list[Instruction]:
    """The ``get-tuple-element`` chain that ``t#N#M`` stands for, adding each to ``defined``."""
    base, *indexes = operand.split("#")
    if base not in defined:
        return []  # an undefined operand: refused with the others
    made: list[Instruction] = []
    name = base
    for index in indexes:
        parent = defined[name]
        if not index.isdigit() or not parent.shape.is_tuple or int(index) >= len(parent.shape.elements):
            raise InputError(f"instruction {shown(user.name)}: operand {shown(operand)} names no element of a "
                             "tuple (expected %NAME#INDEX of a tuple-shaped instruction)", source=source,
                             line=user.line)
        name = f"{name}#{index}"
        if name not in defined:
            element = Instruction(name, "get-tuple-element", parent.shape.elements[int(index)], (parent.name,),
                                  {"index": index}, line=user.line)
            defined[name] = element
            made.append(element)
    return made


def _needs(inst: Instruction) -> tuple[str, ...]:
    """What must come before ``inst``: its operands and control predecessors."""
    if "control-predecessors" not in inst.attrs:
        return inst.operands
    return (*inst.operands, *inst.control_predecessors)


def _check_references(computations: dict[str, Computation], source: str
                      ) -> tuple[list[str], dict[str, list[tuple[str, Instruction]]]]:
    """Refuse undefined operands and computations, in one pass that also returns the
    computations listing an instruction before what it needs (XLA prints them in order;
    :func:`_in_dependency_order` sorts those) and each computation's calls (for
    :func:`_check_call_graph`)."""
    unordered: list[str] = []
    calls: dict[str, list[tuple[str, Instruction]]] = {}
    for comp in computations.values():
        names = comp.by_name()
        earlier: set[str] = set()
        edges = calls[comp.name] = []
        for inst in comp.instructions:
            for operand in inst.operands:
                if operand not in names:
                    raise InputError(f"instruction {shown(inst.name)} uses undefined operand {shown(operand)}",
                                     source=source, line=inst.line)
            if comp.name not in unordered and any(n in names and n not in earlier for n in _needs(inst)):
                unordered.append(comp.name)
            earlier.add(inst.name)
            _check_calls_named(inst, source)
            for called in inst.called():
                if called not in computations:
                    raise InputError(f"instruction {shown(inst.name)} calls undefined computation {shown(called)}",
                                     source=source, line=inst.line)
                edges.append((called, inst))
    return unordered, calls


def _check_calls_named(inst: Instruction, source: str) -> None:
    """A conditional names its branches (the importer runs the costliest)."""
    if inst.opcode == "conditional" and not inst.called():
        raise InputError(f"instruction {shown(inst.name)}: a conditional names its branches (branch_computations="
                         "... or true_computation=... and false_computation=...)", source=source, line=inst.line)


def _in_dependency_order(comp: Computation, source: str) -> Computation:
    """``comp`` with every instruction after its operands and control predecessors; a
    cycle is refused at one of its lines."""
    position = {inst.name: i for i, inst in enumerate(comp.instructions)}

    def needs(i: int) -> Iterator[int]:
        return iter([position[n] for n in _needs(comp.instructions[i]) if n in position])

    order: list[int] = []
    state = [0] * len(comp.instructions)  # 0 new, 1 on the path, 2 placed
    for start in range(len(comp.instructions)):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, needs(start))]
        while stack:
            node, pending = stack[-1]
            nxt = next(pending, None)
            if nxt is None:
                stack.pop()
                state[node] = 2
                order.append(node)
            elif state[nxt] == 1:
                inst = comp.instructions[nxt]
                raise InputError(f"instruction {shown(inst.name)} depends on itself (a cycle of operands)",
                                 source=source, line=inst.line)
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, needs(nxt)))
    return Computation(comp.name, tuple(comp.instructions[i] for i in order), comp.is_entry)


def _check_call_graph(calls: dict[str, list[tuple[str, Instruction]]], source: str) -> None:
    """Refuse a computation that calls itself, directly or through others (HLO has no
    recursion; the importer would not end)."""
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        state[name] = 1
        for called, inst in calls[name]:
            if state.get(called) == 1:
                raise InputError(f"computation {shown(called)} calls itself (through {shown(inst.name)})",
                                 source=source, line=inst.line)
            if called not in state:
                visit(called)
        state[name] = 2

    for name in calls:
        if name not in state:
            visit(name)
