"""A collective matmul as XLA:TPU decomposes an all-gather into a matmul: a while loop of
async collective-permutes around the ring, each shard's matmul scheduled between a
transfer's start and its done, so the replay overlaps them."""

from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.importers.hlo import import_hlo, lower_module, read_hlo
from accelsim.system.replay import replay

FIXTURE = Path(__file__).parent / "fixtures" / "tpu_v5e_2x2_collective_matmul.hlo.txt.gz"
SHARD_BYTES = 1024 * 4096 * 2  # x's rows on one of 4 devices, bf16


@pytest.fixture(scope="module")
def program():
    return lower_module(read_hlo(FIXTURE))


def test_the_ring_steps_are_async_permutes_of_one_shard(program):
    permutes = [op for op in program.ops if op.kind == "collective-permute"]
    assert len(permutes) == 5  # one before the loop, two each way in its trip
    assert all(op.is_async and op.comm_bytes == SHARD_BYTES for op in permutes)
    directions = {tuple(sorted(op.pairs)) for op in permutes}
    assert directions == {((0, 1), (1, 2), (2, 3), (3, 0)), ((0, 3), (1, 0), (2, 1), (3, 2))}


def test_each_matmul_runs_while_a_transfer_is_in_flight(program):
    order = [op.name for op in program.ops]
    matmuls = [op for op in program.ops if op.cost.matrix_flops]
    assert len(matmuls) == 2 and sum(op.cost.matrix_flops for op in matmuls) == 2 * 4096 * 4096 * 2048
    for matmul in matmuls:
        at = order.index(matmul.name)
        in_flight = [op for op in program.ops if op.kind == "done" and order.index(op.start) < at < order.index(op.name)]
        assert in_flight, matmul.name


def test_replay_overlaps_the_transfers_with_the_matmuls():
    result = replay(import_hlo(FIXTURE, system="tpu-v5e-4x4"), load_arch("tpu-v5e-4x4")).result()
    assert result.overlapped_comm_s > 0.3 * result.comm_s
    assert result.step_time_s < result.compute_s + result.comm_s
