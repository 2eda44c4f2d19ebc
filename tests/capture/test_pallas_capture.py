"""Pallas capture: the captured trace of our kernels agrees with the built-in family's
trace for the same parameters and config, and bad targets fail cleanly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.pallas import capture_pallas  # noqa: E402
from accelsim.engine.chip import simulate_kernel  # noqa: E402
from accelsim.engine.programs import program_costs, program_templates, program_vars, repeats  # noqa: E402
from accelsim.errors import InputError  # noqa: E402
from accelsim.families import get_family  # noqa: E402
from accelsim.families.base import parse_values  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "pallas"
CHIP = load_arch("tpu-v5e")


def both(file: str, function: str, family: str, params: dict, config: dict):
    captured = capture_pallas(str(KERNELS / file), function, {k: str(v) for k, v in {**params, **config}.items()})
    fam = get_family(family)
    values = parse_values(fam.params, params, "test")
    built = fam.build(values, fam.resolve_config(values, config, CHIP), CHIP)
    return captured, built


def assert_agree(captured, built, *, write_tolerance=0.0, latency_tolerance=0.01):
    a, b = program_costs(captured, CHIP), program_costs(built, CHIP)
    assert captured.num_programs == built.num_programs
    assert a.iterations.sum() == b.iterations.sum()
    assert a.read_bytes.sum() == b.read_bytes.sum()
    assert a.write_bytes.sum() == pytest.approx(b.write_bytes.sum(), rel=write_tolerance)
    assert a.matrix_flops.sum() == b.matrix_flops.sum() or b.matrix_flops.sum() < a.matrix_flops.sum()
    assert simulate_kernel(captured, CHIP).latency_s == pytest.approx(simulate_kernel(built, CHIP).latency_s,
                                                                       rel=latency_tolerance)


def test_matmul_matches_the_gemm_family_exactly():
    captured, built = both("matmul.py", "run", "gemm", {"M": 512, "N": 512, "K": 1024},
                           {"block_m": 128, "block_n": 256, "block_k": 256})
    assert_agree(captured, built)
    assert program_costs(captured, CHIP).matrix_flops.sum() == 2 * 512 * 512 * 1024
    assert captured.kernel.dimension_semantics == ["parallel", "parallel", "arbitrary"]
    assert captured.kernel.resources.local_memory_bytes == built.kernel.resources.local_memory_bytes


def test_ragged_matmul_moves_only_in_bounds_bytes():
    captured, built = both("matmul.py", "run", "gemm", {"M": 200, "N": 136, "K": 264},
                           {"block_m": 128, "block_n": 128, "block_k": 128})
    a = program_costs(captured, CHIP)
    assert a.read_bytes.sum() == program_costs(built, CHIP).read_bytes.sum()
    assert a.write_bytes.sum() == 200 * 136 * 2


def test_ragged_matmul_counts_only_in_bounds_products():
    """Edge blocks run whole (padding costs time) but only their in-bounds products are
    flops: 2*M*N*K exactly, as the family counts (the whole blocks were counted: +68% at
    1000x300x200)."""
    captured, built = both("matmul.py", "run", "gemm", {"M": 1000, "N": 300, "K": 200},
                           {"block_m": 256, "block_n": 128, "block_k": 128})
    a, b = program_costs(captured, CHIP), program_costs(built, CHIP)
    assert a.matrix_flops.sum() == b.matrix_flops.sum() == 2 * 1000 * 300 * 200
    assert a.matrix_s.sum() == pytest.approx(b.matrix_s.sum())


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_the_attention_family(causal):
    captured, built = both("attention.py", "run", "attention",
                           {"heads": 2, "seq_q": 1024, "head_dim": 128, "causal": causal},
                           {"block_m": 256, "block_n": 256})
    assert_agree(captured, built)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_matches_the_family(causal):
    """The family's one trace of both backward kernels moves the bytes and runs the matrix
    work of our two captured Pallas kernels (launches 1 and 2 of ``run_bwd``; 0 is the
    forward). Its latency is within 2% of theirs added up: each kernel of the trace
    starts its pipeline anew and pays its launch (``kernel.kernel_starts``)."""
    params = {"heads": 2, "seq_q": 1024, "head_dim": 128, "causal": causal}
    config = {"block_m": 256, "block_n": 256}
    fam = get_family("attention")
    values = parse_values(fam.params, {**params, "pass": "bwd"}, "test")
    built = fam.build(values, fam.resolve_config(values, config, CHIP), CHIP)
    flat = {k: str(v) for k, v in {**params, **config}.items()}
    captured = [capture_pallas(str(KERNELS / "attention.py"), "run_bwd", flat, launch=n) for n in (1, 2)]
    b, parts = program_costs(built, CHIP), [program_costs(c, CHIP) for c in captured]
    assert built.num_programs == sum(c.num_programs for c in captured)
    for field in ("read_bytes", "write_bytes", "matrix_s"):
        assert getattr(b, field).sum() == pytest.approx(sum(getattr(c, field).sum() for c in parts), rel=1e-12)
    apart = sum(simulate_kernel(c, CHIP).latency_s for c in captured)
    assert built.kernel.kernel_starts == [captured[0].num_programs]
    assert simulate_kernel(built, CHIP).latency_s == pytest.approx(apart, rel=0.02)


@pytest.mark.parametrize("family, function", [("rmsnorm", "run_rmsnorm"), ("layernorm", "run_layernorm"),
                                              ("softmax", "run_softmax")])
def test_row_kernels_match_their_families(family, function):
    captured, built = both("rowwise.py", function, family, {"rows": 1000, "cols": 512}, {"block_rows": 64})
    # the families also write per-row statistics (mean / rstd) that our Pallas kernels do not;
    # the capture counts more vector work from the jaxpr than the family's hand count (casts,
    # broadcasts: rmsnorm 643 against 418 ns over the kernel), which shows since a grid step
    # overlaps its copies with overhead and compute together (1000 x 512: 2.6%)
    assert_agree(captured, built, write_tolerance=0.01, latency_tolerance=0.03)


def test_pl_when_counts_only_the_taken_branch():
    captured, _ = both("matmul.py", "run", "gemm", {"M": 256, "N": 256, "K": 512},
                       {"block_m": 128, "block_n": 128, "block_k": 128})
    # the output cast runs on the last k step only: 4 of 16 grid steps
    costs = program_costs(captured, CHIP)
    per_step = costs.vector_s.reshape(2, 2, 4)
    assert (per_step[..., -1] > per_step[..., 0]).all()


def matrix_flops(trace) -> float:
    variables, template_of = program_vars(trace), program_templates(trace)
    total = 0.0
    for index, template in enumerate(trace.templates):
        members = np.nonzero(template_of == index)[0]
        for step in template.steps:
            count = float(repeats(step, variables, members).sum())
            total += count * sum(c.flops for c in step.compute if c.unit == "matrix")
    return total


@pytest.mark.parametrize("causal", [False, True])
def test_counted_loops_with_grid_dependent_bounds_run_their_trip_count(causal):
    # attention_gpu walks KV blocks with fori_loops; causal bounds come from program_id
    params = {"batch": "1", "heads": "2", "seq_q": "512", "head_dim": "64", "causal": str(causal).lower(),
              "block_m": "128", "block_n": "64"}
    trace = capture_pallas(str(KERNELS / "attention_gpu.py"), "run", params)
    full = 2 * 2 * 2 * 512 * 512 * 64  # QK^T and PV over every key, 2 heads
    # causal: q block i (128 rows) visits kv blocks 0 .. 2i+1 of 8 (64 keys each)
    visited = sum(2 * i + 2 for i in range(4)) / (4 * 8) if causal else 1.0
    assert matrix_flops(trace) == full * visited


def _write(tmp_path, body: str) -> str:
    path = tmp_path / "k.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_missing_file_and_function(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        capture_pallas(str(tmp_path / "none.py"), "run", {})
    with pytest.raises(InputError, match="no function 'nope'"):
        capture_pallas(str(KERNELS / "matmul.py"), "nope", {})


def test_a_function_without_a_pallas_call(tmp_path):
    path = _write(tmp_path, "import jax.numpy as jnp\ndef run():\n    return jnp.ones(3) + 1\n")
    with pytest.raises(InputError, match="launched no pallas_call"):
        capture_pallas(path, "run", {})


def test_cli_capture_then_simulate(cli, tmp_path):
    out = tmp_path / "mm.json"
    result = cli("capture", "pallas", f"{KERNELS / 'matmul.py'}:run", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "-o", str(out))
    assert result.code == 0, result.err
    assert out.exists()
    assert cli("simulate", "--arch", "tpu-v5e", str(out)).code == 0


def test_cli_bad_target(cli):
    result = cli("capture", "pallas", "no_colon_here", "-o", "x.json")
    assert result.code == 2
    assert "FILE.py:FUNCTION" in result.err


def test_a_function_that_exits_is_an_error_not_a_success(tmp_path):
    path = _write(tmp_path, "import sys\ndef run():\n    sys.exit(0)\n")
    with pytest.raises(InputError, match=r"called sys.exit\(0\)"):
        capture_pallas(path, "run", {})


def test_a_launch_of_no_programs_is_an_error_not_a_trace():
    with pytest.raises(InputError, match=r"matmul.py: the kernel was launched with no programs \(grid \[0"):
        capture_pallas(str(KERNELS / "matmul.py"), "run", {"M": "0"})


def test_a_grid_past_the_program_cap_is_refused_before_its_index_maps_run(tmp_path):
    path = tmp_path / "huge.py"
    path.write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]

        def run(**_):
            n = 8 << 25
            spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
            return pl.pallas_call(kernel, grid=(n // 8,), in_specs=[spec], out_specs=spec,
                                  out_shape=jax.ShapeDtypeStruct((n, 128), jnp.float32),
                                  interpret=True)(jnp.zeros((n, 128), jnp.float32))
    """))
    with pytest.raises(InputError, match="the kernel would have 33,554,432 programs"):
        capture_pallas(str(path), "run", {})


def _work(trace, unit: str) -> dict[bool, float]:
    """Work of one unit over every program, split by its useful flag."""
    variables, template_of = program_vars(trace), program_templates(trace)
    out = {True: 0.0, False: 0.0}
    for index, template in enumerate(trace.templates):
        members = np.nonzero(template_of == index)[0]
        for step in template.steps:
            count = float(repeats(step, variables, members).sum())
            for c in step.compute:
                if c.unit == unit:
                    out[c.useful] += count * c.flops
    return out


def test_a_bitwise_predicate_is_bitwise(tmp_path):
    """``(program_id & 1) == 0`` takes the even programs; it was read as a logical and
    (true for program 0 only)."""
    path = _write(tmp_path, """
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]

            @pl.when((pl.program_id(0) & 1) == 0)
            def _():
                o_ref[...] = jnp.exp(x_ref[...])

        def run():
            return pl.pallas_call(kernel, grid=(8,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                                  out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32),
                                  interpret=True)(jnp.ones((64, 128), jnp.float32))
    """)
    assert _work(capture_pallas(path, "run", {}), "special")[True] == 4 * 8 * 128


def test_integer_mask_work_is_not_counted_as_flops(tmp_path):
    """A ragged row sum: the iota and the compare are integer work and the select picks
    values; they cost time, the flops are the sum's."""
    path = _write(tmp_path, """
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl

        def kernel(x_ref, o_ref):
            col = pl.program_id(0) * 128 + jax.lax.broadcasted_iota(jnp.int32, (8, 128), 1)
            x = jnp.where(col < 200, x_ref[...], 0.0)
            o_ref[...] = jnp.sum(x, axis=1, keepdims=True) + jnp.zeros((8, 128), jnp.float32)

        def run():
            return pl.pallas_call(kernel, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (0, i))],
                                  out_specs=pl.BlockSpec((8, 128), lambda i: (0, i)),
                                  out_shape=jax.ShapeDtypeStruct((8, 256), jnp.float32),
                                  interpret=True)(jnp.ones((8, 256), jnp.float32))
    """)
    work = _work(capture_pallas(path, "run", {}), "vector")
    assert work[True] == 2 * (8 * 128 + 8 * 128)  # the reduction's inputs and the broadcast add, per program
    assert work[False] > 0  # iota arithmetic, compare, select


def test_element_block_dimensions_are_refused(tmp_path):
    """``pl.Element`` index maps give element offsets, not block indices: refused rather
    than read as blocks (one program's read went missing)."""
    path = _write(tmp_path, """
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]

        def run():
            return pl.pallas_call(kernel, grid=(2,),
                                  in_specs=[pl.BlockSpec((pl.Element(128), 128), lambda i: (i * 128, 0))],
                                  out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)),
                                  out_shape=jax.ShapeDtypeStruct((256, 128), jnp.float32),
                                  interpret=True)(jnp.ones((256, 128), jnp.float32))
    """)
    with pytest.raises(InputError, match="Element.*not supported yet"):
        capture_pallas(path, "run", {})


def test_narrow_integer_tensors_keep_their_width(tmp_path):
    """A uint8 mask and a bool array are 1 byte an element, an int16 one 2: they were
    declared fp32, four times (twice) their size."""
    path = _write(tmp_path, """
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl

        def kernel(m_ref, b_ref, h_ref, o_ref):
            o_ref[...] = (m_ref[...].astype(jnp.float32) + b_ref[...].astype(jnp.float32)
                          + h_ref[...].astype(jnp.float32))

        def run():
            spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
            return pl.pallas_call(kernel, grid=(2,), in_specs=[spec, spec, spec], out_specs=spec,
                                  out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32), interpret=True)(
                jnp.ones((16, 128), jnp.uint8), jnp.ones((16, 128), jnp.bool_), jnp.ones((16, 128), jnp.int16))
    """)
    tensors = capture_pallas(path, "run", {}).tensors
    assert [tensors[n].dtype for n in sorted(tensors)][:3] == ["int8", "int8", "fp16"]
