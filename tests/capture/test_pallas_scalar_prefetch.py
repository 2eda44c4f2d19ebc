"""Pallas capture of kernels driven by scalar-prefetched values (PrefetchScalarGridSpec):
index maps and ``pl.when`` read them per grid point, dynamic grid sizes come from them,
and SMEM written at one grid step is read at the next, as on the chip."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("jax")

from accelsim.capture.pallas import capture_pallas  # noqa: E402
from accelsim.engine.programs import program_vars  # noqa: E402
from tests.capture.pallas_totals import totals  # noqa: E402

PREFETCHED = """
    import jax, jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(order_ref, active_ref, x_ref, w_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)

        @pl.when(active_ref[pl.program_id(0)] == 1)
        def _():
            o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    def run():
        order = jnp.array([3, 0, 2, 1], jnp.int32)
        active = (jnp.arange(4, dtype=jnp.int32) % 2).astype(jnp.int32)  # computed, not a literal
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2, grid=(4,),
            in_specs=[pl.BlockSpec((128, 128), lambda i, order, active: (order[i], 0)),
                      pl.BlockSpec((128, 128), lambda i, order, active: (0, 0))],
            out_specs=pl.BlockSpec((128, 128), lambda i, order, active: (i, 0)))
        return pl.pallas_call(kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct((512, 128), jnp.float32))(
            order, active, jnp.ones((512, 128), jnp.float32), jnp.ones((128, 128), jnp.float32))
"""
DOT = 2 * 128 * 128 * 128


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("k") / "prefetched.py"
    path.write_text(textwrap.dedent(PREFETCHED))
    return capture_pallas(str(path), "run", {})


def test_index_maps_read_the_prefetched_order(trace):
    assert program_vars(trace)["in0_0"].tolist() == [3, 0, 2, 1]


def test_pl_when_over_a_prefetched_flag_counts_where_it_is_set(trace):
    flops, moved = totals(trace)
    assert flops[("matrix", True)] == 2 * DOT  # programs 1 and 3
    assert moved[("in0", "read")] == 4 * 128 * 128 * 4 and moved[("in1", "read")] == 128 * 128 * 4


def test_a_dynamic_grid_takes_its_size_from_the_program():
    from pathlib import Path

    kernels = Path(__file__).resolve().parents[2] / "kernels" / "pallas" / "tpu_ops.py"
    gmm = capture_pallas(str(kernels), "grouped_matmul", {"m": "512", "k": "256", "n": "256", "groups": "4",
                                                           "skew": "37"})
    # groups of 165, 116, 116 and 115 rows in 128-row tiles: their edges (165, 281, 397)
    # fall inside tiles 1, 2 and 3, so the kernel visits 7 (tile, group) pairs, the dynamic
    # middle axis of its grid, each for 2 column tiles and 2 k tiles
    assert gmm.kernel.grid == [2, 7, 2]
    flops, _ = totals(gmm)
    assert flops[("matrix", True)] == 7 * 2 * 2 * 2 * 128 ** 3
