"""Run MaxText's ahead-of-time compiler and keep the compiled program's text.

    <maxtext env>/bin/python validation/maxtext/train_compile_text.py OUT.hlo.txt BASE_YML KEY=VALUE ...

Runs in the separate MaxText environment (``make_compile_env.sh``), never in accelsim's.
``maxtext.trainers.pre_train.train_compile`` compiles the training step for the
``compile_topology`` it is given; this wrapper writes ``compiled.as_text()`` of that step
to OUT: the optimised, scheduled module with the TPU compiler's ``estimated_cycles`` in
each op's backend config (an ``--xla_dump_to`` dump of the same module leaves them out),
and prints XLA's ``cost_analysis`` and ``memory_analysis`` as MaxText does.

``as_text()`` elides every large constant (``s8[4,4,4] constant({...})``), splash
attention's block masks among them (``accelsim/importers/hlo_splash.py``). The same
executable's modules printed with ``HloPrintOptions.print_large_constants`` keep them, so
each elided constant of the text is written with the values that printing gives it
(matched by instruction name; a constant the other printing lacks stays elided, and the
count of both is printed).
"""

import re
import sys
from pathlib import Path

from absl import app
from maxtext.trainers.pre_train import train_compile

_CONSTANT = re.compile(r"^(\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*[^=]*?\s)constant\((.*)$")


def _constant_literals(text: str) -> dict[str, str]:
    """Instruction name -> the text inside ``constant(...)``, for every constant of ``text``."""
    literals = {}
    for line in text.splitlines():
        match = _CONSTANT.match(line)
        if match is None:
            continue
        rest, depth = match.group(3), 1
        for end, char in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                literals[match.group(2)] = rest[:end]
                break
    return literals


def with_large_constants(text: str, compiled) -> str:
    """``text`` (``compiled.as_text()``) with each elided constant's values filled in."""
    from jax._src.lib import hlo

    options = hlo.HloPrintOptions()
    options.print_large_constants = True
    modules = compiled.runtime_executable().hlo_modules()
    whole = _constant_literals("\n".join(module.to_string(options) for module in modules))
    lines, filled, left = [], 0, 0
    for line in text.splitlines():
        match = _CONSTANT.match(line)
        if match is not None and match.group(3).startswith("{...})"):
            literal = whole.get(match.group(2))
            if literal is not None and "..." not in literal:
                line = f"{match.group(1)}constant({literal}{match.group(3)[len('{...}'):]}"
                filled += 1
            else:
                left += 1
        lines.append(line)
    print(f"large constants: {filled} filled in, {left} left elided")
    return "\n".join(lines) + "\n"


def main() -> None:
    out = Path(sys.argv[1])
    compile_step = train_compile.jit_and_compile

    def compile_and_keep_text(*args, **kwargs):
        compiled = compile_step(*args, **kwargs)
        out.write_text(with_large_constants(compiled.as_text(), compiled))
        return compiled

    train_compile.jit_and_compile = compile_and_keep_text
    app.run(train_compile.main, argv=[sys.argv[0], *sys.argv[2:]])


if __name__ == "__main__":
    main()
