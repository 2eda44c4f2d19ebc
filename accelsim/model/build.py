"""A model step as a system trace: one program per pipeline stage (its devices fold into
one replayed class), each running its schedule's forward and backward passes, with the
data-parallel traffic the framework issues (docs/model.md).

Per stage, in issue order: parameter gathers (FSDP: every layer of every pass, prefetched
one layer ahead; ZeRO-1/2 with overlapped gathers: the first forward of each chunk), the
tasks of the pipeline schedule (activations and gradients between stages as
collective-permutes on their own streams, so a stage waits for its input and not for its
own sends), gradient reductions (FSDP: reduce-scatter after each layer's backward; else
per layer in each chunk's last backward, one bucket after it on Megatron-LM's later
stages and chunks, or all after the backward without overlap; each bucket's NaN-check
norm and division by the replicas before it where the framework has them), the
optimizer update, and ZeRO's parameter all-gather when not overlapped.

An eager framework's host issues every op (``host_s``: its forward or backward per-op
cost) and waits on its NaN checks (``host_sync``: the loss's and each bucket's norm):
the replay's host timeline (``accelsim.system.streams.HostQueue``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accelsim.model.layer import StepShape, VocabWriter
from accelsim.model.memory import ADAM_STATE_BYTES, MASTER_WEIGHT_BYTES, stage_layers
from accelsim.model.ops import OpList, StageGroups
from accelsim.model.pipeline import Task, receives, schedule, sends

HEAD = -1
"""The output projection, as a unit of parameters beside the layers."""
EMBED = -2
"""The input embedding, as a unit of parameters beside the layers (GPU training steps)."""


@dataclass
class _Stage:
    """What one stage's writer keeps between tasks."""

    ops: OpList
    groups: StageGroups
    writer: VocabWriter
    index: int
    gathers: list[tuple[int, int]] = field(default_factory=list)
    """(task, unit) in the order their parameters are gathered."""
    next_gather: int = 0
    pending: list[str] = field(default_factory=list)
    """Async gradient collectives, waited for (``done``) before the optimizer."""
    waits: list[str] = field(default_factory=list)
    """Other gradient collectives the optimizer waits for (on a stream of their own)."""
    deferred: list[tuple[list[int], list[str]]] = field(default_factory=list)
    """Gradient reductions issued after the whole backward (no overlap): (units, grad ops)."""


def build_programs(shape: StepShape, microbatches: int) -> list[dict]:
    layout = shape.layout
    programs = []
    for stage in range(layout.pp):
        groups = StageGroups(layout, stage)
        ops = OpList()
        st = _Stage(ops=ops, groups=groups, writer=VocabWriter(ops, shape, groups), index=stage)
        _write_stage(st, shape, microbatches)
        last = groups.first + groups.size - 1
        programs.append({"name": f"stage {stage}" if layout.pp > 1 else "spmd",
                         "devices": [f"{groups.first}-{last}"], "ops": ops.ops})
    return programs


def _chunk_layers(shape: StepShape, stage: int) -> list[list[int]]:
    """This stage's model chunks' layers, by local chunk index."""
    chunks = stage_layers(shape.model, shape.layout)
    return [chunks[c * shape.layout.pp + stage] for c in range(shape.layout.virtual_stages)]


def _is_last_chunk(shape: StepShape, stage: int, chunk: int) -> bool:
    return stage == shape.layout.pp - 1 and chunk == shape.layout.virtual_stages - 1


def _has_embedding(shape: StepShape, stage: int, chunk: int) -> bool:
    """The embedding's lookup and weight gradient as ops of their own: GPU training steps,
    on the first chunk (XLA's embedding is not modelled)."""
    return shape.training and not shape.tpu and stage == 0 and chunk == 0


def _task_units(shape: StepShape, stage: int, task: Task, layers: list[int]) -> list[int]:
    """Parameter units a task runs through, in order (the embedding first forward, last
    backward; the output projection last forward, first backward)."""
    head = [HEAD] if _is_last_chunk(shape, stage, task.chunk) else []
    embed = [EMBED] if _has_embedding(shape, stage, task.chunk) else []
    return embed + layers + head if task.kind == "F" else head + layers[::-1] + embed


def _write_stage(st: _Stage, shape: StepShape, microbatches: int) -> None:
    layout = shape.layout
    tasks = schedule(layout.pp, layout.virtual_stages, microbatches, st.index, not shape.training)
    chunks = _chunk_layers(shape, st.index)
    last_backward = {t.chunk: i for i, t in enumerate(tasks) if t.kind == "B"}
    st.gathers = _gather_order(shape, st.index, tasks, chunks)
    st.ops.host_s = shape.framework.host_forward_op_s
    if shape.training and shape.framework.zeroes_grad_buffer:
        st.ops.memory_pass("zero-grad", _stage_params(shape, st.index) / shape.layout.fsdp * shape.framework.grad_bytes,
                           [])
    if st.gathers:
        _issue_gather(st, shape, 0)
    fw = shape.framework
    for i, task in enumerate(tasks):
        st.ops.host_s = fw.host_forward_op_s if task.kind == "F" else fw.host_backward_op_s
        _write_task(st, shape, i, task, chunks[task.chunk], reduce_grads=last_backward.get(task.chunk) == i)
    st.ops.host_s = fw.host_forward_op_s
    if shape.training:
        _finish_training(st, shape)


def _gather_order(shape: StepShape, stage: int, tasks: list[Task], chunks: list[list[int]]) -> list[tuple[int, int]]:
    layout, fw = shape.layout, shape.framework
    if layout.fsdp > 1:
        return [(i, u) for i, t in enumerate(tasks) for u in _task_units(shape, stage, t, chunks[t.chunk])
                if _unit_params(shape, u)]
    if shape.training and layout.zero >= 1 and layout.dp * layout.cp > 1 and fw.overlap_param_gather:
        return [(i, u) for i, t in enumerate(tasks) if t.kind == "F" and t.microbatch == 0
                for u in _task_units(shape, stage, t, chunks[t.chunk]) if _unit_params(shape, u)]
    return []


def _unit_params(shape: StepShape, unit: int) -> float:
    """Parameters of a unit on one device before FSDP: (dense part, expert part)."""
    return _dense_params(shape, unit) + _expert_params(shape, unit)


def _dense_params(shape: StepShape, unit: int) -> float:
    m, layout = shape.model, shape.layout
    if unit == HEAD:
        return m.lm_head_params / layout.tp
    if unit == EMBED:  # a weight of its own unless tied to the output projection on the same stage
        return 0.0 if m.tied_embeddings and layout.pp == 1 else m.embedding_params / layout.tp
    if m.is_moe_layer(unit):
        return (m.attention_params + m.shared_expert_params) / layout.tp + m.router_params
    return m.layer_params(unit) // layout.tp


def _expert_params(shape: StepShape, unit: int) -> float:
    m = shape.model
    if unit < 0 or not m.is_moe_layer(unit):
        return 0.0
    return m.moe.experts // shape.layout.ep * m.expert_params


def _unit_name(unit: int) -> str:
    return {HEAD: "head", EMBED: "embed"}.get(unit, str(unit))


def _gather_name(st: _Stage, j: int) -> str:
    task, unit = st.gathers[j]
    return f"pg.{task}.{_unit_name(unit)}"


def _issue_gather(st: _Stage, shape: StepShape, j: int) -> None:
    _, unit = st.gathers[j]
    groups = st.groups.fsdp if shape.layout.fsdp > 1 else st.groups.replicas
    nbytes = _unit_params(shape, unit) * shape.framework.param_bytes
    st.ops.collective(_gather_name(st, j), "all-gather", nbytes, groups, [], is_async=True)


def _wait_gather(st: _Stage, shape: StepShape, task: int, unit: int) -> list[str]:
    """The unit's gathered parameters (waited for), the next gather issued behind them."""
    j = st.next_gather
    if j >= len(st.gathers) or st.gathers[j] != (task, unit):
        return []
    done = st.ops.done(_gather_name(st, j))
    if j + 1 < len(st.gathers):
        _issue_gather(st, shape, j + 1)
    st.next_gather = j + 1
    return [done]


def _write_task(st: _Stage, shape: StepShape, i: int, task: Task, layers: list[int], reduce_grads: bool) -> None:
    layout, writer = shape.layout, st.writer
    tag = f"{task.kind}{task.microbatch}.{task.chunk}"
    after: list[str] = []
    source = receives(task, st.index, layout.pp, layout.virtual_stages)
    if source is not None:
        pairs = st.groups.from_stage(source)
        after = [st.ops.permute(f"{tag}.recv", _p2p_bytes(shape), pairs, [], stream=f"pp.recv.{task.kind}")]
    units = _task_units(shape, st.index, task, layers)
    # a tied output projection's gradient is reduced once the lookup's gradient is added in
    shared = EMBED in units and HEAD in units and not _unit_params(shape, EMBED)
    held: list[str] = []
    bucket = _one_bucket(shape, st.index, task.chunk)
    bucket_units: list[int] = []
    bucket_grads: list[str] = []
    for unit in units:
        after = after + _wait_gather(st, shape, i, unit)
        grads: list[str] = []
        if task.kind == "F" and unit == EMBED:
            after = writer.embedding_forward(tag, after)
        elif task.kind == "F":
            after = writer.logits_forward(tag, after) if unit == HEAD else \
                writer.forward(f"{tag}.L{unit}", unit, after)
        elif unit == EMBED:
            writer.embedding_backward(tag, after, grads)
        elif unit == HEAD:
            after = writer.logits_backward(tag, after, grads)
        else:
            after, grads = writer.backward(f"{tag}.L{unit}", unit, after, forward_tag=f"R{tag[1:]}.L{unit}")
        if task.kind != "B" or not (layout.fsdp > 1 or reduce_grads):
            continue
        if bucket:
            bucket_units += [unit] if _unit_params(shape, unit) else []
            bucket_grads += grads
        elif shared and unit == HEAD:
            held = grads
        elif shared and unit == EMBED:
            _reduce(st, shape, f"{tag}.head", [HEAD], held + grads)
        elif _unit_params(shape, unit):
            _reduce(st, shape, f"{tag}.{_unit_name(unit)}", [unit], grads)
    if bucket_units:
        _reduce(st, shape, f"{tag}.bucket", bucket_units, bucket_grads)
    target = sends(task, st.index, layout.pp, layout.virtual_stages)
    if target is not None:
        st.ops.permute(f"{tag}.send", _p2p_bytes(shape), st.groups.to_stage(target), after,
                       stream=f"pp.send.{task.kind}")


def _p2p_bytes(shape: StepShape) -> float:
    """A microbatch's activations (or their gradients) between stages, split over TP (the
    scatter-gather of Megatron-LM's pipeline sends)."""
    return shape.tokens * shape.model.hidden * 2 / shape.layout.tp


def _one_bucket(shape: StepShape, stage: int, chunk: int) -> bool:
    """The chunk's overlapped gradient reductions are one bucket (the framework's
    ``later_stages_one_bucket``: every stage after the first, every chunk after a stage's
    first), reduced after its last backward."""
    fw = shape.framework
    return (fw.later_stages_one_bucket and fw.overlap_grad_reduce and shape.layout.fsdp == 1
            and (stage > 0 or chunk > 0))


def _reduce(st: _Stage, shape: StepShape, name: str, units: list[int], grads: list[str]) -> None:
    """A bucket's gradient reduction (its units' gradients): issued now (overlapped), or kept
    for after the backward."""
    layout, fw = shape.layout, shape.framework
    if layout.fsdp > 1:
        unit, = units
        nbytes = _unit_params(shape, unit) * fw.grad_bytes
        rs = st.ops.collective(f"rs.{name}", "reduce-scatter", nbytes, st.groups.fsdp, grads, is_async=True)
        st.pending.append(rs)
        if layout.dp * layout.cp > 1:  # each shard all-reduced over the replicas, on its own stream
            st.waits.append(st.ops.collective(f"ar.{name}", "all-reduce", nbytes / layout.fsdp,
                                              st.groups.replicas, [rs], stream="dp"))
        return
    if fw.overlap_grad_reduce:
        st.pending += _grad_collectives(st, shape, name, units, grads, is_async=True)
    else:
        st.deferred.append((units, grads))


def _bucket_passes(st: _Stage, shape: StepShape, name: str, units: list[int], deps: list[str]) -> list[str]:
    """What the framework does to a bucket's gradients on the compute stream before reducing
    them: its norm read for the NaN check and its division by the replicas in place
    (``grad_nan_check``, ``grad_prescale``)."""
    layout, fw = shape.layout, shape.framework
    nbytes = sum(_unit_params(shape, u) for u in units) * fw.grad_bytes
    if fw.grad_nan_check:
        deps = [st.ops.memory_pass(f"nan.{name}", nbytes, deps)]
        st.ops.host_waits_for(deps)
    if fw.grad_prescale and layout.dp * layout.cp > 1:
        deps = [st.ops.memory_pass(f"scale.{name}", 2 * nbytes, deps)]
    return deps


def _grad_collectives(st: _Stage, shape: StepShape, name: str, units: list[int], deps: list[str],
                      is_async: bool) -> list[str]:
    """All-reduce (ZeRO-0) or reduce-scatter (ZeRO-1/2) of a bucket's gradients over the
    replicas, experts' over the ranks that hold the same experts."""
    layout, fw = shape.layout, shape.framework
    kind = "all-reduce" if layout.zero == 0 else "reduce-scatter"
    deps = _bucket_passes(st, shape, name, units, deps)
    out = []
    if layout.dp * layout.cp > 1:
        dense = sum(_dense_params(shape, u) for u in units)
        out.append(st.ops.collective(f"gr.{name}", kind, dense * fw.grad_bytes, st.groups.replicas, deps,
                                     is_async=is_async))
    experts = sum(_expert_params(shape, u) for u in units)
    if experts and layout.data_parallel * layout.cp // layout.ep > 1:
        out.append(st.ops.collective(f"gr.{name}.experts", kind, experts * fw.grad_bytes,
                                     st.groups.expert_replicas, deps, is_async=is_async))
    return out


def _stage_units(shape: StepShape, stage: int) -> list[int]:
    """The parameter units a stage holds (the embedding when it is a weight of its own)."""
    units = [u for layers in _chunk_layers(shape, stage) for u in layers]
    if stage == shape.layout.pp - 1:
        units.append(HEAD)
    if _has_embedding(shape, stage, 0) and _unit_params(shape, EMBED):
        units.append(EMBED)
    return units


def _stage_params(shape: StepShape, stage: int) -> float:
    """Parameters one device of the stage holds before FSDP and ZeRO sharding."""
    return sum(_unit_params(shape, u) for u in _stage_units(shape, stage))


def _finish_training(st: _Stage, shape: StepShape) -> None:
    layout, fw = shape.layout, shape.framework
    waits = [st.ops.done(op) for op in st.pending] + st.waits
    for units, grads in st.deferred:
        name = "end." + "-".join(map(_unit_name, units))
        waits += _grad_collectives(st, shape, name, units, grads, False)
    units = _stage_units(shape, st.index)
    params = _stage_params(shape, st.index) / layout.fsdp / (layout.dp if layout.zero >= 1 else 1)
    master = MASTER_WEIGHT_BYTES if fw.param_bytes < 4 else 0
    per_param = 2 * fw.param_bytes + fw.grad_bytes + 2 * (ADAM_STATE_BYTES + master)
    update = st.ops.memory_pass("optimizer", params * per_param, waits)
    if layout.fsdp == 1 and layout.zero >= 1 and layout.dp * layout.cp > 1 and not fw.overlap_param_gather:
        for unit in units:
            st.ops.collective(f"pg.end.{_unit_name(unit)}", "all-gather", _dense_params(shape, unit) * fw.param_bytes,
                              st.groups.replicas, [update])
