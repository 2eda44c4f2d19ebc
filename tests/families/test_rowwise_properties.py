"""Properties of the row-wise families over random shapes (hypothesis): registers never fall
as a program holds more, a kernel never beats the HBM roofline of the bytes it must move,
and more rows never make it faster (within 1%, from 64 rows and columns up: with one or two
rows of a few hundred columns, two programs can come out 2% faster than one, because the
L2 hit rate of the weights they share is the kernel's, spread over its programs, where a
real second read of a line still in flight waits like a miss)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.rowwise import LAYERNORM_OP, RMSNORM_OP, SOFTMAX_OP, one_pass_registers
from accelsim.families.search import split_params

H100 = load_arch("h100-sxm")
OPS = st.sampled_from([SOFTMAX_OP, LAYERNORM_OP, RMSNORM_OP])
DTYPES = st.sampled_from(["fp32", "bf16", "fp16"])
SIZE = {"fp32": 4, "bf16": 2, "fp16": 2}


@settings(max_examples=200, deadline=None)
@given(op=OPS, dtype=DTYPES, width=st.integers(5, 16).map(lambda e: 1 << e),
       threads=st.sampled_from([32, 64, 128, 256, 512, 1024]), rows=st.integers(0, 5).map(lambda e: 1 << e))
def test_registers_grow_with_what_a_program_holds(op, dtype, width, threads, rows):
    here = one_pass_registers(op, rows, width, threads, dtype)
    assert here >= 1
    assert one_pass_registers(op, rows * 2, width, threads, dtype) >= here
    assert one_pass_registers(op, rows, width * 2, threads, dtype) >= here
    assert one_pass_registers(op, rows, width, threads * 2, dtype) <= here


def _simulate(name: str, rows: int, cols: int, dtype: str):
    family = get_family(name)
    params, _, _ = split_params(family, {"rows": str(rows), "cols": str(cols), "dtype": dtype})
    config = family.resolve_config(params, {}, H100)
    return simulate_kernel(family.build(params, config, H100), H100)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["softmax", "layernorm", "rmsnorm"]), dtype=DTYPES,
       rows=st.integers(64, 8192), cols=st.integers(64, 20000))
def test_no_kernel_beats_the_hbm_roofline_and_more_rows_cost_more(name, dtype, rows, cols):
    try:
        sim = _simulate(name, rows, cols, dtype)
    except InputError:
        assume(False)  # a shape the family refuses
        return
    moved = 2 * rows * cols * SIZE[dtype]  # each row read once and written once, at least
    assert sim.latency_s >= moved / H100.hbm.bandwidth_bytes_per_s
    assert _simulate(name, 2 * rows, cols, dtype).latency_s >= sim.latency_s * 0.99
