"""MaxText's published v5p training steps as MaxText's own ahead-of-time compiler
compiled them for TPU v5p (``validation/maxtext/compile_maxtext.py``; the HLO is
committed, so this runs without MaxText or libtpu): imported and replayed on the v5p
slice of the record."""

import json
import math
import sys
from collections import Counter
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.importers.hlo import import_hlo, read_hlo
from accelsim.importers.hlo_estimates import compare_with_xla
from accelsim.importers.hlo_splash import SPLASH_KERNEL, block_mask_operand
from accelsim.importers.hlo_values import ConstantTracer, integer_values
from accelsim.system.replay import chip_of, replay

MAXTEXT = Path(__file__).parents[2] / "validation" / "maxtext"
sys.path.insert(0, str(MAXTEXT))

from maxtext_v5p import TORUS, load_records, model, model_tflops_per_chip, model_tflops_terms  # noqa: E402
from report_compiled import SCHEDULE_FORMS, matrix_terms, schedule_form  # noqa: E402

STEP = "maxtext-64b-v5p-128.hlo.txt.gz"
"""The smallest slice compiled (64 chips); the others replay in the report script."""


@pytest.fixture(scope="module", params=[STEP])
def step(request):
    record = next(r for r in load_records() if f"{r['id']}.hlo.txt.gz" == request.param)
    system = load_arch("tpu-v5p-4x4x8", [f"shape={json.dumps(TORUS[record['chips']])}"])
    trace = import_hlo(MAXTEXT / "compiled" / request.param, system_devices=record["chips"], system="tpu-v5p")
    return record, system, trace


def test_every_kernel_of_the_step_is_priced(step):
    """No unknown custom calls or opcodes: splash attention is priced from its shapes."""
    _, _, trace = step
    counts = trace.metadata["importer_counts"]
    assert not [key for key in counts if key.startswith(("unknown_", "contraction_assumed"))]
    assert {"splash_attention:fwd", "splash_attention:dq", "splash_attention:dkv"} <= set(counts)


def test_splash_attention_runs_the_blocks_of_the_causal_mask_the_text_carries(step):
    """Every splash call's ``block_mask`` is followed back to its constant, printed whole
    (``train_compile_text.py``): causal in every head shard, 10 of 16 blocks at 512-wide
    blocks over 2048 tokens. So splash attention is 1.25x MaxText's causal count of its
    pairs, over 11 matmuls (forward 2, the forward ``minimal`` remat recomputes 2, dq 3,
    dkv 4) where MaxText counts 6."""
    record, _, trace = step
    assert not [key for key in trace.metadata["importer_counts"] if key.startswith("splash_attention_dense")]
    module = read_hlo(MAXTEXT / "compiled" / STEP)
    tracer, shares = ConstantTracer(module), []
    for comp in module.computations.values():
        names = comp.by_name()
        for inst in comp.instructions:
            if SPLASH_KERNEL.match(inst.name) is None:
                continue
            target = inst.attrs.get("custom_call_target", "").strip('"')
            number = block_mask_operand(inst.name, target, [names[o].shape for o in inst.operands])
            if number is not None:
                values = integer_values(tracer.constant(comp, inst.operands[number]))
                shares.append(sum(1 for v in values if v) / len(values))
    assert len(shares) >= 3 and shares == [10 / 16] * len(shares)
    _, attention = model_tflops_terms(model(record["global_parameter_scale"]), record["per_device_batch_size"])
    assert matrix_terms(trace)["splash"] / (attention * 1e12) == pytest.approx(11 / 6 * 1.25, rel=0.02)


def test_the_step_runs_the_model_s_matmuls_and_at_most_a_recomputed_forward_more(step):
    """MaxText's count (6 x parameters x tokens + causal attention) is a floor; remat
    (``minimal`` recomputes attention), the attention blocks a causal mask skips (counted
    here) and the recompiled forward's extra work stay within a third more."""
    record, _, trace = step
    model_flops = model_tflops_per_chip(model(record["global_parameter_scale"]), record["per_device_batch_size"]) * 1e12
    ratio = trace.metadata["per_device_totals"]["matrix_flops"] / model_flops
    assert 1.0 <= ratio <= 4 / 3


def test_beyond_xla_s_remat_clones_and_attention_the_step_runs_6_x_params_x_tokens(step):
    """Nothing is counted twice: take away the clones XLA's rematerialization pass made
    (``NAME.rematN``) and splash attention, and the matmuls left are MaxText's 6 x
    parameters x tokens (``minimal`` remat recomputes no weight matmul)."""
    record, _, trace = step
    terms = matrix_terms(trace)
    learnable, _ = model_tflops_terms(model(record["global_parameter_scale"]), record["per_device_batch_size"])
    assert terms["xla_remat"] > 0 and terms["splash"] > 0
    assert (terms["all"] - terms["xla_remat"] - terms["splash"]) / (learnable * 1e12) == pytest.approx(1.0, abs=0.01)


def test_the_step_replays_with_xla_s_estimates_beside_it(step):
    _, system, trace = step
    result = replay(trace, system).result()
    assert result.step_time_s >= result.compute_s > 0 and result.comm_s > 0
    xla = compare_with_xla(trace, chip_of(system))
    assert xla is not None and math.isfinite(xla.xla_s) and xla.xla_s > 0


def test_with_maxtext_0_2_5_s_flags_the_sparsecores_gather_asynchronously():
    """``compile_maxtext.py --flags sparsecore``: the all-gathers XLA offloads to the
    SparseCores import as async all-gathers, each ended by its done; nothing is unknown."""
    record = next(r for r in load_records() if r["id"] == "maxtext-64b-v5p-128")
    trace = import_hlo(MAXTEXT / "compiled" / "maxtext-64b-v5p-128-sparsecore.hlo.txt.gz",
                       system_devices=record["chips"], system="tpu-v5p")
    counts = trace.metadata["importer_counts"]
    assert not [key for key in counts if key.startswith("unknown_")]
    ops = trace.programs[0].ops
    offloaded = {op.name for op in ops if op.kind == "all-gather" and op.is_async}
    assert offloaded and all("call-update/" in name for name in offloaded)
    assert {op.start for op in ops if op.kind == "done" and op.start in offloaded} == offloaded


def _permute_forms(trace) -> Counter:
    ops = trace.programs[0].ops
    return Counter(schedule_form(ops, i) for i, op in enumerate(ops) if op.kind == "collective-permute")


@pytest.mark.parametrize("variant", ["batch2", "no-memory-tracking"])
def test_without_memory_pressure_xla_schedules_the_permutes_beside_work(step, variant):
    """At the record's batch 3 XLA waits for nearly every collective-permute right after
    starting it. The same config one batch lower (``compile_maxtext.py --batch 2``), or at
    batch 3 with XLA's scheduler not tracking memory pressure (``--flags
    no-memory-tracking``), has most of them with compute scheduled between (the replay sees
    the schedule as compiled, async pairs and all)."""
    record, _, trace = step
    other = import_hlo(MAXTEXT / "compiled" / f"maxtext-64b-v5p-128-{variant}.hlo.txt.gz",
                       system_devices=record["chips"], system="tpu-v5p")
    bare, beside = SCHEDULE_FORMS[1], SCHEDULE_FORMS[2]
    as_published, without_pressure = _permute_forms(trace), _permute_forms(other)
    assert as_published[bare] > 10 * as_published[beside]
    assert without_pressure[beside] > 2 * without_pressure[bare]
