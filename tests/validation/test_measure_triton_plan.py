"""Every case of measure_triton.py's GPU sweep is a config the family accepts on the GPUs it
would run on (so each record can be predicted and ranked), and the backward's cases are
the kernel alone (``pass: bwd-kernel``)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")
os.environ.setdefault("TRITON_INTERPRET", "1")  # measure_triton imports triton

import measure_triton as mt  # noqa: E402

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.families import get_family  # noqa: E402
from accelsim.families.base import fits, parse_values  # noqa: E402


@pytest.mark.parametrize("chip", ["h100-sxm", "h200-sxm"])
@pytest.mark.parametrize("scale", ["gpu", "gpu-quick"])
def test_every_gpu_case_is_a_config_the_family_accepts(chip, scale):
    arch = load_arch(chip)
    for case in mt.plan(scale):
        family = get_family(case.family)
        values = parse_values(family.params, {k: str(v) for k, v in case.params.items()}, "plan")
        config = {k: v for k, v in case.config.items() if k in {p.name for p in family.config_params}}
        assert fits(family.check, values, family.resolve_config(values, config, arch), arch), (case.tag, chip)


def test_the_backward_cases_are_the_kernel_alone():
    backward = [c for c in mt.plan("gpu") if c.kernel == "attention-bwd"]
    assert len(backward) == 8 and all(c.params["pass"] == "bwd-kernel" for c in backward)
