"""Run MaxText's ahead-of-time compiler and keep the compiled program's text.

    <maxtext env>/bin/python validation/maxtext/train_compile_text.py OUT.hlo.txt BASE_YML KEY=VALUE ...

Runs in the separate MaxText environment (``make_compile_env.sh``), never in accelsim's.
``maxtext.trainers.pre_train.train_compile`` compiles the training step for the
``compile_topology`` it is given; this wrapper writes ``compiled.as_text()`` of that step
to OUT: the optimised, scheduled module with the TPU compiler's ``estimated_cycles`` in
each op's backend config (an ``--xla_dump_to`` dump of the same module leaves them out),
and prints XLA's ``cost_analysis`` and ``memory_analysis`` as MaxText does.
"""

import sys
from pathlib import Path

from absl import app
from maxtext.trainers.pre_train import train_compile


def main() -> None:
    out = Path(sys.argv[1])
    compile_step = train_compile.jit_and_compile

    def compile_and_keep_text(*args, **kwargs):
        compiled = compile_step(*args, **kwargs)
        out.write_text(compiled.as_text())
        return compiled

    train_compile.jit_and_compile = compile_and_keep_text
    app.run(train_compile.main, argv=[sys.argv[0], *sys.argv[2:]])


if __name__ == "__main__":
    main()
