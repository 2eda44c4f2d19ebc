"""Triton capture: what a captured trace holds (bytes of masked tiles, block identities,
useful flops, vector and special work, loops), the sampling rule (compressed loops,
first and last program of each template in full) against a full trace, and errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.engine.programs import program_costs, program_templates, program_vars, repeats  # noqa: E402
from accelsim.errors import InputError  # noqa: E402
from accelsim.families.attention import useful_flops  # noqa: E402
from tests.trace_totals import tensor_bytes  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "triton"
CHIP = load_arch("h100-sxm")
RAGGED = {"M": 200, "N": 130, "K": 300, "dtype": "fp16", "block_m": 64, "block_n": 64, "block_k": 32, "group_m": 2}
"""4 x 3 output tiles, the last row and column of tiles partly masked; 10 K steps, the last one masked."""


def capture(kernel: str, exact: bool = False, **params):
    return capture_triton(str(KERNELS / f"{kernel}.py"), "run", {k: str(v) for k, v in params.items()}, exact=exact)


def without_metadata(trace) -> dict:
    data = trace.model_dump()
    data.pop("metadata")
    return data


@pytest.fixture(scope="module")
def ragged_pair():
    """The ragged matmul captured with the sampling rule and in full."""
    return capture("matmul", **RAGGED), capture("matmul", exact=True, **RAGGED)


def test_sampled_capture_equals_the_full_trace_on_ragged_m_and_n(ragged_pair):
    sampled, full = ragged_pair
    assert without_metadata(sampled) == without_metadata(full)
    sampling = sampled.metadata["sampling"]
    assert sampling["programs"] == 12
    assert sampling["loops_interpolated"] > 0
    assert full.metadata["sampling"]["loops_interpolated"] == 0


def test_masked_tiles_count_only_their_valid_elements(ragged_pair):
    trace, _ = ragged_pair
    M, N, K = RAGGED["M"], RAGGED["N"], RAGGED["K"]
    tiles_m, tiles_n = 4, 3
    assert tensor_bytes(trace) == {("a", "read"): M * K * 2 * tiles_n, ("b", "read"): K * N * 2 * tiles_m,
                                   ("c", "write"): M * N * 2}
    costs = program_costs(trace, CHIP)
    assert costs.matrix_flops.sum() == 2 * M * N * K
    assert costs.iterations.tolist() == [11] * 12  # 9 full K steps + the masked one + the store
    # interior, edge row, edge column, corner
    assert len(trace.templates) == 4


def test_blocks_are_tile_coordinates_and_loops_advance_them(ragged_pair):
    trace, _ = ragged_pair
    variables, template_of = program_vars(trace), program_templates(trace)
    corner = int(np.nonzero((variables["p0"] == 11))[0][0])
    steps = trace.templates[template_of[corner]].steps
    loop, tail, store = steps
    assert (loop.repeat, loop.loop_var) == (9, "i")
    assert [x.block for x in loop.transfers] == [[3, "i"], ["i", 2]]
    assert [x.bytes for x in loop.transfers] == [(200 - 192) * 32 * 2, 32 * (130 - 128) * 2]
    assert [x.block for x in tail.transfers] == [[3, 9], [9, 2]]
    assert [x.bytes for x in tail.transfers] == [8 * (300 - 288) * 2, (300 - 288) * 2 * 2]
    assert store.transfers[0].block == [3, 2] and store.transfers[0].direction == "write"
    assert loop.compute[0].shape == [64, 64, 32] and loop.compute[0].flops == 2 * 8 * 2 * 32


def test_grouped_launch_order_is_in_the_program_variables(ragged_pair):
    """group_m=2: programs walk two rows of tiles, column by column."""
    trace, _ = ragged_pair
    variables, template_of = program_vars(trace), program_templates(trace)
    rows = []
    for pid in range(trace.num_programs):
        block = trace.templates[template_of[pid]].steps[-1].transfers[0].block
        rows.append([int(variables[b][pid]) if isinstance(b, str) else b for b in block])
    assert rows[:6] == [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]]


def test_resources_follow_the_launch(ragged_pair):
    trace, _ = ragged_pair
    resources = trace.kernel.resources
    assert resources.warps == 8
    assert resources.local_memory_bytes == 4 * (64 * 32 + 32 * 64) * 2  # num_stages x (A + B tiles)
    assert resources.registers_per_thread == 64 * 64 // 256 + 40
    assert trace.kernel.pipeline_depth == 4
    assert trace.metadata["config"]["BLOCK_M"] == 64


def test_causal_attention_counts_attended_pairs_and_exponentials():
    params = {"batch": 1, "heads": 2, "seq_q": 128, "head_dim": 32, "causal": True}
    trace = capture("attention", block_m=64, block_n=32, dtype="fp16", **params)
    costs = program_costs(trace, CHIP)
    family_params = {**params, "kv_heads": 0, "seq_kv": 0, "dtype": "fp16", "pass": "fwd"}
    assert costs.matrix_flops.sum() == useful_flops(family_params)
    # one exp2 per score of every block visited, one per row and block (the rescale), one log2 per row
    blocks_per_q_block = [2, 4]
    scores = sum(n * 64 * 32 for n in blocks_per_q_block) * 2
    rows = sum(n * 64 for n in blocks_per_q_block) * 2
    assert costs.special_ops.sum() == scores + rows + 128 * 2


def test_softmax_vector_work_per_element():
    trace = capture("softmax", rows=8, cols=64, dtype="fp32", block_rows=2, num_warps=4)
    costs = program_costs(trace, CHIP)
    assert costs.special_ops.sum() == 8 * 64  # one exp per element
    assert costs.flops.sum() == 4 * 8 * 64  # max, subtract, sum, divide
    assert trace.kernel.pipeline_depth == 1
    assert trace.kernel.resources.local_memory_bytes == 4 * 2 * 4  # warps x rows x fp32 scratch


CARRIED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def carried(a_ptr, out_ptr, chunks, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    ptrs = a_ptr + pid * chunks * BLOCK + tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(chunks):
        total += tl.load(ptrs)
        ptrs += BLOCK
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), total)


def run(programs=3, chunks=8, block=16, launches=1):
    a = torch.randn(programs * chunks * block)
    out = torch.empty(programs * block)
    for _ in range(launches):
        carried[(programs,)](a, out, chunks, BLOCK=block)
    return out
'''


@pytest.fixture
def carried_kernel(tmp_path) -> str:
    path = tmp_path / "carried.py"
    path.write_text(textwrap.dedent(CARRIED))
    return str(path)


def test_a_pointer_carried_across_iterations_falls_back_to_a_full_run(carried_kernel):
    """Iterations 0, 6 and 7 of a compressed loop read blocks 0, 1 and 2: not a regular
    loop, so every program runs again in full; plain ``range`` loops are seen too."""
    sampled = capture_triton(carried_kernel, "run", {})
    full = capture_triton(carried_kernel, "run", {}, exact=True)
    assert without_metadata(sampled) == without_metadata(full)
    assert sampled.metadata["sampling"]["traced_in_full"] == 3
    loop = sampled.templates[0].steps[0]
    assert loop.repeat == 8 and loop.transfers[0].block == ["a_0+i"]
    assert loop.compute[0].flops == 16  # the fp32 add


def test_hooks_are_removed_after_a_capture(carried_kernel):
    from triton.runtime import interpreter

    capture_triton(carried_kernel, "run", {})
    assert "create_dot" not in vars(interpreter.interpreter_builder)
    assert interpreter.interpreter_builder.options.sanitize_overflow
    assert interpreter.GridExecutor.__call__.__module__ == "triton.runtime.interpreter"


def test_errors_name_the_file_and_function(tmp_path, carried_kernel):
    with pytest.raises(InputError, match="no such file"):
        capture_triton(str(tmp_path / "missing.py"), "run", {})
    with pytest.raises(InputError, match="no function 'nope'"):
        capture_triton(carried_kernel, "nope", {})
    with pytest.raises(InputError, match=r"carried.py:run: the parameters do not fit"):
        capture_triton(carried_kernel, "run", {"colour": "red"})
    with pytest.raises(InputError, match=r"carried.py:run: 2 Triton kernels were launched"):
        capture_triton(carried_kernel, "run", {"launches": "2"})
    with pytest.raises(InputError, match=r"carried.py:run: no Triton kernel was launched"):
        capture_triton(carried_kernel, "run", {"launches": "0"})


def test_a_launch_of_no_programs_is_an_error_not_a_trace():
    vector_add = str(Path(__file__).resolve().parents[2] / "kernels" / "triton" / "vector_add.py")
    with pytest.raises(InputError, match=r"vector_add.py:run: the kernel was launched with no programs"):
        capture_triton(vector_add, "run", {"n": "0"})


def test_a_function_that_exits_is_an_error_not_a_success(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\ndef run():\n    sys.exit(0)\n")
    with pytest.raises(InputError, match=r"exits.py:run: running it called sys.exit\(0\)"):
        capture_triton(str(path), "run", {})


def test_accumulators_past_a_threads_registers_are_refused_as_the_family_does():
    """256x256 fp32 accumulators over 4 warps are 512 values a thread: the gemm family
    refuses the config; the capture clamped its estimate to 255 and ranked it."""
    with pytest.raises(InputError, match="512 fp32 values per thread"):
        capture("matmul", M=256, N=256, K=64, block_m=256, block_n=256, block_k=64, num_warps=4, num_stages=2)
    assert capture("matmul", M=256, N=256, K=64, block_m=128, block_n=256, block_k=64, num_warps=8,
                   num_stages=2).kernel.resources.registers_per_thread <= 255
