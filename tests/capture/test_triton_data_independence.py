"""Triton capture counts what a kernel does, not what its data holds: zeros in the data
are useful flops, an activation written with ``tl.where`` discards nothing, and tensor
arguments that share memory (views of one buffer, an output aliasing an input) are told
apart by which of them has the addresses as elements."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.engine.programs import program_costs  # noqa: E402
from tests.capture.test_triton_capture import CHIP  # noqa: E402
from tests.trace_totals import tensor_bytes  # noqa: E402

MATMUL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, ACT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)
    if ACT:
        acc = leaky_relu(acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def run(M=64, N=64, K=128, dtype="int8", zeros="half", act=False):
    torch.manual_seed(0)
    if dtype == "int8":
        a = torch.randint(-3, 4, (M, K), dtype=torch.int8)
        b = torch.randint(-3, 4, (K, N), dtype=torch.int8)
    else:
        a, b = torch.randn((M, K), dtype=torch.float16), torch.randn((K, N), dtype=torch.float16)
    if zeros == "half":
        a[:, ::2] = 0  # a pruned (or ReLU'd) operand
    c = torch.empty((M, N))
    mm[(M // 32, N // 32)](a, b, c, M, N, K, ACT=act, BM=32, BN=32, BK=32)
    return c
'''

VIEWS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def glu(a_ptr, b_ptr, o_ptr, N, stride_a, stride_b, stride_o, BN: tl.constexpr):
    row, cb = tl.program_id(0), tl.program_id(1)
    oc = cb * BN + tl.arange(0, BN)
    a = tl.load(a_ptr + row * stride_a + oc)
    b = tl.load(b_ptr + row * stride_b + oc)
    tl.store(o_ptr + row * stride_o + oc, a * tl.sigmoid(b))


def run_glu(M=8, N=256, BN=128):
    x = torch.randn((M, 2 * N))
    a, b = x[:, :N], x[:, N:]  # two views of a fused projection
    o = torch.empty((M, N))
    glu[(M, N // BN)](a, b, o, N, a.stride(0), b.stride(0), o.stride(0), BN=BN)
    return o


@triton.jit
def fold(x_ptr, y_ptr, H, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o) + tl.load(x_ptr + H + o))


def run_fold(N=4096, BLOCK=512):
    x = torch.randn(N)
    y = x[: N // 2]  # in place: y is the first half of x
    fold[(N // 2 // BLOCK,)](x, y, N // 2, BLOCK=BLOCK)
    return y
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kernels")
    (folder / "mm.py").write_text(textwrap.dedent(MATMUL))
    (folder / "views.py").write_text(textwrap.dedent(VIEWS))
    return folder


def matrix_flops(trace) -> float:
    return float(program_costs(trace, CHIP).matrix_flops.sum())


@pytest.mark.parametrize("dtype", ["int8", "fp16"])
def test_zeros_in_the_data_are_useful_flops(kernels, dtype):
    """Half of A's columns are zero: before, the int8 GEMM counted half its flops and its
    K steps no longer matched (a template per program)."""
    trace = capture_triton(str(kernels / "mm.py"), "run", {"dtype": dtype})
    assert matrix_flops(trace) == 2 * 64 * 64 * 128
    assert len(trace.templates) == 1


def test_an_activation_written_with_where_discards_nothing(kernels):
    """The Triton tutorial's leaky ReLU epilogue chooses between computed values; it used to
    discount the dot's negative outputs as masked."""
    trace = capture_triton(str(kernels / "mm.py"), "run", {"dtype": "fp16", "zeros": "none", "act": "true"})
    assert matrix_flops(trace) == 2 * 64 * 64 * 128
    assert len(trace.templates) == 1


def test_views_of_one_buffer_are_told_apart(kernels):
    trace = capture_triton(str(kernels / "views.py"), "run_glu", {})
    moved = tensor_bytes(trace)
    assert moved["a", "read"] == moved["b", "read"] == 8 * 256 * 4


def test_an_output_aliasing_its_input_captures(kernels):
    """y is x's first half: the loads past it belong to x (it used to be refused as outside
    every argument); the addresses both hold go to the smaller, y."""
    trace = capture_triton(str(kernels / "views.py"), "run_fold", {})
    moved = tensor_bytes(trace)
    assert sum(b for (t, d), b in moved.items() if d == "read") == 4096 * 4
    assert moved["y", "write"] == 2048 * 4 and moved["x", "read"] == 2048 * 4
    assert np.isfinite(matrix_flops(trace))


PRECISION = '''
import torch
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, PREC: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, b, input_precision=PREC))


def run(prec="tf32"):
    a, b, c = torch.randn((32, 32)), torch.randn((32, 32)), torch.empty((32, 32))
    mm[(1,)](a, b, c, PREC=prec, B=32)
    return c
'''


def test_tf32x3_runs_three_matrix_passes_for_one_products_flops(tmp_path):
    path = tmp_path / "prec.py"
    path.write_text(textwrap.dedent(PRECISION))
    one, three = (capture_triton(str(path), "run", {"prec": p}) for p in ("tf32", "tf32x3"))
    dot_one, dot_three = (t.templates[0].steps[0].compute[0] for t in (one, three))
    assert (dot_one.count, dot_three.count) == (1, 3)
    assert dot_one.flops == dot_three.flops == 2 * 32**3
    assert matrix_flops(three) == matrix_flops(one)


ALLOCATION = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + o, tl.load(x_ptr + o) + tl.load(y_ptr + o))


def run(first="x"):
    buffer = torch.randn(3 * 4096)  # one allocation: the order of addresses is chosen here
    order = (first, "y" if first == "x" else "x", "o")
    made = {name: buffer[i * 4096:(i + 1) * 4096] for i, name in enumerate(order)}
    add[(4,)](made["x"], made["y"], made["o"], BLOCK=1024)
    return made["o"]
'''


def test_a_trace_does_not_depend_on_where_memory_was_allocated(tmp_path):
    """Tensors were listed in address order: the same kernel allocated in another order
    (or with another environment) gave another file."""
    path = tmp_path / "alloc.py"
    path.write_text(textwrap.dedent(ALLOCATION))
    traces = [capture_triton(str(path), "run", {"first": first}) for first in ("x", "y")]
    dumps = [json.dumps(t.model_dump(exclude={"metadata"})) for t in traces]  # key order counts
    assert dumps[0] == dumps[1] and list(traces[0].tensors) == ["x", "y", "o"]
