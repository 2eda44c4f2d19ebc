"""In-kernel attention dropout: each executed score's keep decision drawn from Philox and applied
to P, in the forward and again in the backward, charged as vector time and never as useful
flops; refused where no kernel of ours has it."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.attention import DROPOUT_FLOPS_PER_SCORE
from accelsim.families.base import parse_values

H100 = load_arch("h100-sxm")
FAMILY = get_family("attention")
SEQ = 1024  # a whole number of every tile: no padding, every block executed whole


def costs(dropout: bool, pass_: str = "fwd", chip=H100, **extra: str):
    values = parse_values(FAMILY.params, {"heads": "4", "seq_q": str(SEQ), "head_dim": "128", "impl": "cudnn",
                                          "pass": pass_, "dropout": str(dropout).lower(), **extra}, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return program_costs(FAMILY.build(values, config, chip), chip)


def dropout_s(scores: int) -> float:
    v = H100.vector
    return DROPOUT_FLOPS_PER_SCORE * scores / (v.flops_per_cycle_per_core["fp32"] * H100.clock_hz * v.efficiency)


@pytest.mark.parametrize("pass_", ["fwd", "bwd-kernel"])
def test_dropout_adds_its_integer_work_per_executed_score(pass_):
    on, off = costs(True, pass_), costs(False, pass_)
    scores = 4 * SEQ * SEQ
    assert on.issued_vector_s.sum() - off.issued_vector_s.sum() == pytest.approx(dropout_s(scores), rel=1e-9)
    assert on.flops.sum() == pytest.approx(off.flops.sum())  # the draws count no flops
    assert on.matrix_flops.sum() == pytest.approx(off.matrix_flops.sum())


def test_dropout_makes_the_kernels_no_faster():
    for pass_ in ("fwd", "bwd-kernel"):
        on, off = costs(True, pass_), costs(False, pass_)
        assert on.issued_vector_s.sum() > off.issued_vector_s.sum()


@pytest.mark.parametrize("extra, chip, words", [
    ({"impl": "unfused"}, H100, "impl=unfused"),
    ({"seq_q": "1", "seq_kv": "4096", "impl": "default"}, H100, "decode"),
    ({"impl": "default"}, load_arch("tpu-v5e"), "TPUs"),
])
def test_dropout_is_refused_where_no_kernel_has_it(extra, chip, words):
    with pytest.raises(InputError, match=words):
        costs(True, chip=chip, **extra)
