"""measure_pallas.py on a TPU (never run on one here): JAX's TPU device kinds name our
configs, and every case of the TPU sweep is one of our TPU kernels with blocks that the
family accepts on the TPUs it would run on (whole tiles, within VMEM), so each record can
be predicted and ranked."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")

import measure_pallas as mp  # noqa: E402
import measurement_format as fmt  # noqa: E402

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.families import get_family  # noqa: E402
from accelsim.families.base import fits, parse_values  # noqa: E402


@pytest.mark.parametrize(("kind", "arch"), [
    ("TPU v4", "tpu-v4"), ("TPU v4 lite", None), ("TPU v5 lite", "tpu-v5e"), ("TPU v5e", "tpu-v5e"),
    ("TPU v5", "tpu-v5p"), ("TPU v5p", "tpu-v5p"), ("TPU v6 lite", "tpu-v6e"), ("TPU7x", "tpu7x"),
])
def test_jax_device_kinds_name_our_tpu_configs(kind, arch):
    assert fmt.arch_for_device_name(kind) == arch


@pytest.mark.parametrize("scale", ["tpu", "tpu-quick"])
@pytest.mark.parametrize("chip", ["tpu-v5e", "tpu-v5p"])
def test_every_tpu_case_is_a_tpu_kernel_the_family_accepts(scale, chip):
    arch = load_arch(chip)
    cases = mp.plan(scale)
    assert {"matmul", "attention", "attention-bwd", "rmsnorm"} <= {c.kernel for c in cases}
    for case in cases:
        kernel = mp.KERNELS[case.kernel]
        assert kernel.module is not None and kernel.module.startswith("kernels.pallas."), case.kernel
        family = get_family(case.family)
        values = parse_values(family.params, {k: str(v) for k, v in case.params.items()}, "plan")
        config = {k: v for k, v in case.config.items() if k in {p.name for p in family.config_params}}
        assert fits(family.check, values, family.resolve_config(values, config, arch), arch), (case.tag, chip)


def test_a_tpu_sweep_runs_the_kernels_as_written():
    sweep = mp.Sweep(None, False, "tpu", None, 0.0, {}, on_tpu=True)
    assert sweep.lowerings(mp.KERNELS["attention-bwd"]) == (mp.TPU_LOWERING,)
    assert not sweep.on_cpu
    cpu = mp.Sweep(None, False, "cpu", None, 0.0, {})
    assert cpu.on_cpu and cpu.lowerings(mp.KERNELS["matmul"]) == ("interpret",)
