"""A JAX training step compiled by the TPU compiler for a v5e 4x4 slice and for a v5p
4x4x4 slice (``accelsim compile tpu``, fixtures/tpu_train_step.py), imported and
replayed on those systems."""

from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.importers.hlo import import_hlo
from accelsim.importers.hlo_estimates import compare_with_xla
from accelsim.system.replay import chip_of, replay

FIXTURES = Path(__file__).parent / "fixtures"
STEPS = {"v5e": ("tpu_v5e_4x4_train_step.hlo.txt.gz", "tpu-v5e-4x4", 16),
         "v5p": ("tpu_v5p_4x4x4_train_step.hlo.txt.gz", "tpu-v5p-4x4x4", 64)}
TOKENS, D, D_FF, VOCAB, LAYERS, TP = 256, 512, 2048, 4096, 2, 4  # train_step's defaults, per device


def matrix_flops_closed_form() -> float:
    """Per device: each layer's forward runs three times (forward, its recompute under
    jax.checkpoint, and backward's two products count as two), except the recompute's last
    matmul, whose result the backward never reads (XLA removes it); the tied unembedding
    once forward and twice backward."""
    qkv, out, mlp = 2 * TOKENS * D * 3 * D / TP, 2 * TOKENS * D * D / TP, 2 * TOKENS * D * D_FF / TP
    attention = 2 * (2 * TOKENS * TOKENS * D / TP)
    forward = qkv + out + 2 * mlp + attention
    return LAYERS * (4 * forward - mlp) + 3 * 2 * TOKENS * D * VOCAB / TP


@pytest.fixture(scope="module", params=sorted(STEPS))
def step(request):
    name, system, devices = STEPS[request.param]
    trace = import_hlo(FIXTURES / name, system_devices=devices, system=system)
    return trace, load_arch(system), devices


def test_step_imports_every_device_and_the_model_s_matmuls(step):
    trace, _, devices = step
    assert trace.num_devices == devices
    assert trace.metadata["per_device_totals"]["matrix_flops"] == matrix_flops_closed_form()


def test_step_replays_with_communication_and_xla_s_estimates(step):
    trace, system, _ = step
    result = replay(trace, system).result()
    assert result.step_time_s >= result.compute_s > 0
    assert result.comm_s > 0
    xla = compare_with_xla(trace, chip_of(system))
    assert xla is not None and len(xla.ops) == len(trace.metadata["xla_estimates"])
    assert xla.xla_s > 0 and xla.accelsim_s > 0
