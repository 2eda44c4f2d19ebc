"""Every family's traces satisfy the checks a trace file gets (docs/trace-format.md): each
block index a program reaches lies inside its tensor's axis and no transfer moves more
than the whole tensor, at edge sizes too (sequences shorter than a tile, ragged last
blocks, split-KV decode), so a built trace saved and loaded again is accepted."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.trace.kernel import check_blocks

CASES = [
    ("gemm", {"M": 100, "N": 36, "K": 17}),
    ("gemm", {"M": 4096, "N": 128, "K": 4096, "batch": 3}),
    ("attention", {"batch": 1, "heads": 2, "seq_q": 5, "seq_kv": 5, "head_dim": 64}),
    ("attention", {"batch": 2, "heads": 4, "seq_q": 100, "seq_kv": 300, "head_dim": 64, "causal": "true"}),
    ("attention", {"batch": 1, "heads": 8, "kv_heads": 1, "seq_q": 1, "seq_kv": 1000, "head_dim": 128}),
    ("attention", {"batch": 2, "heads": 2, "seq_q": 5, "seq_kv": 9, "head_dim": 64, "causal": "true", "pass": "bwd"}),
    ("attention", {"batch": 2, "heads": 2, "seq_q": 100, "seq_kv": 130, "head_dim": 64, "pass": "bwd-kernel"}),
    ("softmax", {"rows": 3, "cols": 1000}),
    ("layernorm", {"rows": 1000, "cols": 8193}),
    ("rmsnorm", {"rows": 7, "cols": 64}),
    ("copy", {"bytes": 1000001}),
    ("elementwise", {"elements": 1000001, "inputs": 2, "outputs": 1, "dtype": "bf16"}),
]
MAX_CONFIGS = 12


@pytest.mark.parametrize("chip_name", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize(("family_name", "given"), CASES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CASES)])
def test_built_traces_pass_the_trace_file_checks(chip_name, family_name, given):
    chip = load_arch(chip_name)
    family = get_family(family_name)
    params = parse_values(family.params, {k: str(v) for k, v in given.items()}, "test")
    space = family.config_space(params, chip)
    assert space
    for config in space[:: max(1, len(space) // MAX_CONFIGS)]:
        check_blocks(family.build(params, family.resolve_config(params, config, chip), chip))
