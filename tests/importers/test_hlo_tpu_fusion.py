"""XLA:TPU's fused collectives (libtpu 0.0.42.1): an async collective fusion's start is an
async collective, its done waits for it, and the continuation fusions between them are
compute that overlaps it; an all-reduce-scatter fusion is a reduce-scatter."""

from pathlib import Path

import pytest

from accelsim.importers.hlo import lower_module, read_hlo

V5E = Path(__file__).parent / "fixtures" / "tpu_v5e_4x4_train_step.hlo.txt.gz"


@pytest.fixture(scope="module")
def program():
    return lower_module(read_hlo(V5E))


def test_every_start_has_its_done_and_compute_between(program):
    order = [op.name for op in program.ops]
    by_name = {op.name: op for op in program.ops}
    dones = [op for op in program.ops if op.kind == "done" and "async-collective-done" in op.name]
    assert len(dones) == program.counts["async_collective_fusion:all-gather"] == 12
    for done in dones:
        start = by_name[done.start]
        assert start.kind == "all-gather" and start.is_async and "async-collective-start" in start.name
        between = [by_name[n] for n in order[order.index(start.name) + 1:order.index(done.name)]]
        assert any(op.kind == "compute" and op.cost.matrix_flops for op in between)
        assert not any(start.name in op.deps for op in between)  # they overlap it, not wait for it


def test_continuations_are_compute_without_the_collective(program):
    module = read_hlo(V5E)
    fusions = {inst.name for comp in module.computations.values() for inst in comp.instructions
               if inst.opcode == "fusion" and inst.called()[0].startswith("async_collective_fusion")}
    continuations = [op for op in program.ops if op.name.rpartition("/")[2] in fusions]
    assert len(continuations) == program.counts["async_collective_fusion:continuation"] == 36
    assert all(op.kind == "compute" and op.xla_cycles for op in continuations)
    assert sum(op.cost.matrix_flops > 0 for op in continuations) >= 24  # the matmuls they fuse


def test_gathered_bytes_are_the_layer_weight_shard_gathered(program):
    starts = [op for op in program.ops if op.kind == "all-gather" and "async-collective-start" in op.name]
    # FSDP over 4 chips gathers a layer's weights: w1/w2 are 512x2048 bf16 split 4 ways over TP
    assert {op.comm_bytes for op in starts} <= {512 * 512 * 2 // 4 * m for m in (1, 3, 4)}
    assert all(len(op.groups) == 4 and all(len(g) == 4 for g in op.groups) for op in starts)


def test_all_reduce_scatter_fusions_are_reduce_scatters(program):
    scatters = [op for op in program.ops if op.kind == "reduce-scatter"]
    assert len(scatters) == program.counts["collective_fusion:reduce-scatter"] == 4
    assert all(op.comm_bytes > 0 and not op.is_async for op in scatters)


def test_nothing_is_an_unknown_custom_call(program):
    assert not [key for key in program.counts if key.startswith(("unknown", "async_collective_fusion:done_without"))]
