"""A model step end to end: checked (layout, devices, memory), written as a system trace,
replayed, and read back as model figures (:class:`~accelsim.results.ModelStepResult`)."""

from __future__ import annotations

from dataclasses import dataclass

from accelsim.arch.model import Arch, Chip, TpuChip
from accelsim.errors import InputError, checked
from accelsim.model.build import build_programs
from accelsim.model.flops import hardware_flops, model_flops
from accelsim.model.layer import StepShape
from accelsim.model.layout import Framework, Layout, Workload, check_layout
from accelsim.model.memory import Memory, check_fits, device_memory
from accelsim.model.spec import ModelSpec
from accelsim.results import ModelStepResult
from accelsim.system.costs import CostModel
from accelsim.system.replay import ReplayOptions, chip_of, replay
from accelsim.system.trace import Op, Program, SystemTrace, check_trace


@dataclass(frozen=True, kw_only=True)
class ModelStep:
    """A step that passed every check: its shape, microbatches and memory."""

    shape: StepShape
    microbatches: int
    memory: Memory
    chip: Chip
    system: Arch


def plan_step(model: ModelSpec, workload: Workload, layout: Layout, framework: Framework, system: Arch,
              *, check_memory: bool = True) -> ModelStep:
    """Everything checked before any work: the layout against the model and mode, the
    devices against the system, the memory against HBM (``check_memory=False`` keeps a
    step that does not fit, for a sweep to report)."""
    microbatches = check_layout(model, workload, layout)
    chip = chip_of(system)
    if layout.devices > system.num_chips:
        raise InputError(f"the layout ({layout.text()}) needs {layout.devices} devices; {system.name!r} has "
                         f"{system.num_chips}", field="layout")
    unfused = framework.attention_impl == "unfused"
    memory = device_memory(model, workload, layout, framework, microbatches, chip.hbm.capacity_bytes, unfused)
    if check_memory:
        check_fits(memory, chip.name)
    shape = StepShape(model=model, workload=workload, layout=layout, framework=framework,
                      tpu=isinstance(chip, TpuChip))
    return ModelStep(shape=shape, microbatches=microbatches, memory=memory, chip=chip, system=system)


def step_trace(step: ModelStep) -> SystemTrace:
    """The step as a system trace, checked as a whole (names, dependencies, cycles,
    groups). Its ops are the builder's own, made without pydantic's per-field validation
    (a 16,384-GPU step has 10^5 ops whose replica groups list every device of their stage:
    validating them field by field took most of the build); ``tests/model`` validates
    built traces field by field, and a written trace is validated whole when read back."""
    s = step.shape
    data = {
        "schema_version": 1, "kind": "system_trace",
        "name": f"{s.model.name} {s.workload.mode} ({s.layout.text()}, {s.framework.name})",
        "num_devices": s.layout.devices,
        "programs": build_programs(s, step.microbatches),
        "metadata": {"generator": "accelsim model", "model": s.model.name, "mode": s.workload.mode,
                     "seq_len": s.workload.seq_len, "batch": s.workload.batch, "layout": s.layout.model_dump(),
                     "framework": s.framework.name, "microbatches": step.microbatches},
    }
    return checked(check_trace, _constructed(data), "accelsim model")


def _constructed(data: dict) -> SystemTrace:
    programs = [Program.model_construct(name=p["name"], devices=p["devices"],
                                        ops=[_op(op) for op in p["ops"]]) for p in data["programs"]]
    return SystemTrace.model_construct(**{**data, "programs": programs})


_OP_DEFAULTS = {name: field.get_default(call_default_factory=True) for name, field in Op.model_fields.items()
                if not field.is_required()}
"""Every optional field of an op, given explicitly: pydantic resolves a missing field's
default factory through ``inspect.signature`` on every construction (most of the build)."""


def _op(fields: dict) -> Op:
    values = {**_OP_DEFAULTS, "deps": [], "ctrl_deps": [], "params": {}, **fields}
    if "async" in values:
        values["is_async"] = values.pop("async")
    return Op.model_construct(**values)


def run_step(step: ModelStep, trace: SystemTrace, *, options: ReplayOptions = ReplayOptions(),
             costs: CostModel | None = None) -> tuple[ModelStepResult, object]:
    """Replay ``trace`` (``step``'s, possibly edited) and read it as the model's step;
    returns the result and the replay's own (for a timeline)."""
    s = step.shape
    replayed = replay(trace, step.system, options=options, costs=costs)
    stats = replayed.result()
    layout = s.layout
    bubble = 0.0
    if layout.pp > 1:
        share = (layout.pp - 1) / (layout.virtual_stages * step.microbatches)
        bubble = min(stats.idle_s, share * stats.compute_s)
    result = ModelStepResult(
        model=s.model.name, mode=s.workload.mode, layout=layout.text(), framework=s.framework.name,
        devices=layout.devices, microbatches=step.microbatches, tokens=s.workload.tokens,
        model_flops=model_flops(s.model, s.workload), hardware_flops=hardware_flops(s.model, s.workload, layout),
        peak_flops_per_s=step.chip.matrix_flops_per_s(s.workload.dtype), memory=step.memory.as_dict(),
        bubble_s=bubble, step=stats)
    return result, replayed
