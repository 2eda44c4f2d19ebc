"""Pallas kernels in TPU HLO (``tpu_custom_call``): an instruction whose backend config
spans several lines parses, and the author's cost estimate prices the call."""

import re
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.importers.hlo import lower_module, read_hlo, to_system_trace
from accelsim.importers.hlo_text import parse_module
from accelsim.system.replay import replay

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "tpu_pallas_matmul.hlo.txt"
M, K, N, BLOCK = 1024, 512, 1024, 256  # make_fixtures.TPU_MATMUL
FLOPS = 2 * M * N * K
BYTES = 2 * (M * K * (N // BLOCK) + K * N * (M // BLOCK) + M * N)


def _kernel_op(hlo):
    (op,) = [op for op in hlo.ops if op.kind == "compute"]
    return op


def test_the_exported_kernel_spans_several_lines_and_parses():
    text = FIXTURE.read_text()
    call_line = next(i for i, line in enumerate(text.splitlines(), 1) if "tpu_custom_call" in line)
    assert not text.splitlines()[call_line - 1].rstrip().endswith("}")  # JAX's estimate is indented JSON
    module = read_hlo(FIXTURE)
    (call,) = [i for i in module.entry_computation.instructions if i.opcode == "custom-call"]
    assert call.line == call_line and '"bytes_accessed"' in call.attrs["backend_config"]


def test_the_cost_estimate_prices_the_call():
    hlo = lower_module(read_hlo(FIXTURE))
    op = _kernel_op(hlo)
    assert op.cost.matrix_flops == FLOPS and op.cost.vector_flops == 0
    assert op.cost.bytes_written == 2 * M * N and op.cost.bytes == BYTES  # blocks re-read, as the author counts
    assert op.cost.matrix_dtype == "bf16"
    assert hlo.counts["cost_estimate:tpu_custom_call"] == 1
    assert not [key for key in hlo.counts if key.startswith("unknown")]


def test_the_call_replays_no_faster_than_its_roofline():
    trace = to_system_trace(lower_module(read_hlo(FIXTURE)))
    system = load_arch("tpu-v5e-4x4")
    chip = system.chip
    result = replay(trace, system)
    roofline = max(FLOPS / chip.matrix_flops_per_s("bf16"), BYTES / chip.hbm.bandwidth_bytes_per_s)
    assert result.step_time_s >= roofline


def _with_backend_config(config: str) -> str:
    text = FIXTURE.read_text()
    return re.sub(r"backend_config=\{.*\}\s*\n\}", f"backend_config={config}\n}}", text, flags=re.DOTALL)


def test_a_call_without_an_estimate_stays_unknown_at_its_boundary_bytes():
    hlo = lower_module(parse_module(_with_backend_config('{"custom_call_config": {"body": "AAAA"}}')))
    op = _kernel_op(hlo)
    assert op.cost.matrix_flops == 0 and op.cost.bytes == 2 * (M * K + K * N + M * N)
    assert hlo.counts["unknown_custom_call:tpu_custom_call"] == 1


@pytest.mark.parametrize("estimate", ['{"flops": -1, "bytes_accessed": 8}', '{"flops": NaN, "bytes_accessed": 8}',
                                      '"none"'])
def test_a_malformed_estimate_is_not_used(estimate):
    config = f'{{"custom_call_config": {{"body": "AAAA", "cost_estimate": {estimate}}}}}'
    hlo = lower_module(parse_module(_with_backend_config(config)))
    assert _kernel_op(hlo).cost.matrix_flops == 0
    assert hlo.counts["unknown_custom_call:tpu_custom_call"] == 1


def test_an_instruction_that_never_closes_is_refused_at_its_line():
    text = FIXTURE.read_text().replace('"body": "', '"body": ', 1)  # a string left open
    call_line = next(i for i, line in enumerate(text.splitlines(), 1) if "tpu_custom_call" in line)
    with pytest.raises(InputError, match="never closes") as info:
        parse_module(text, source="k.hlo")
    assert info.value.line == call_line
