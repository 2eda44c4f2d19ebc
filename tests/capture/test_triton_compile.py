"""Compiling a captured Triton launch for a real GPU target on the CPU: the trace's shared
memory and registers then come from Triton's compiler and ptxas, the capture's own
estimates stay in the metadata, and a kernel the compiler rejects is one clear error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.capture.triton_compile import parse_target  # noqa: E402
from accelsim.cli.main import main  # noqa: E402
from accelsim.errors import InputError  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "triton"
MATMUL = {"M": "256", "N": "192", "K": "256", "dtype": "fp16", "block_m": "64", "block_n": "64", "block_k": "32",
          "num_stages": "3", "num_warps": "4"}


@pytest.fixture(scope="module")
def compiled_matmul():
    return capture_triton(str(KERNELS / "matmul.py"), "run", MATMUL, compile_for="sm_90")


def test_targets_are_sm_and_a_compute_capability():
    assert parse_target("sm_90") == 90
    assert parse_target("sm_90a") == 90
    assert parse_target("sm_80") == 80
    assert parse_target("sm_100") == 100
    for bad in ("90", "sm90", "sm_9", "compute_90", "sm_90x"):
        with pytest.raises(InputError, match="expected an NVIDIA target"):
            parse_target(bad)


def test_shared_memory_is_the_pipelined_operand_tiles(compiled_matmul):
    # Triton's pipeliner keeps num_stages copies of the A [64, 32] and B [32, 64] fp16 tiles
    staged = 3 * (64 * 32 + 32 * 64) * 2
    compiled = compiled_matmul.metadata["compiled"]
    assert compiled["target"] == "sm_90"
    assert staged <= compiled["shared_memory_bytes"] <= staged + 4096
    assert compiled_matmul.kernel.resources.local_memory_bytes == compiled["shared_memory_bytes"]


def test_registers_come_from_ptxas_and_the_estimates_are_kept(compiled_matmul):
    compiled = compiled_matmul.metadata["compiled"]
    # a 64 x 64 fp32 accumulator over 128 threads is 32 registers a thread before anything else
    assert 32 < compiled["registers_per_thread"] <= 255
    assert compiled_matmul.kernel.resources.registers_per_thread == compiled["registers_per_thread"]
    assert compiled["spilled_bytes_per_thread"] == 0
    estimated = compiled_matmul.metadata["estimated_resources"]
    assert estimated["local_memory_bytes"] == 3 * (64 * 32 + 32 * 64) * 2
    assert estimated["warps"] == compiled_matmul.kernel.resources.warps == 4


def test_compiling_changes_resources_only(compiled_matmul):
    plain = capture_triton(str(KERNELS / "matmul.py"), "run", MATMUL)
    a, b = plain.model_dump(), compiled_matmul.model_dump()
    for doc in (a, b):
        doc.pop("metadata")
        doc["kernel"].pop("resources")
    assert a == b


FP8 = '''
import torch
import triton
import triton.language as tl


@triton.jit
def widen(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32) * 2.0)


def run(block=128):
    x = torch.randn(block).to(torch.float8_e4m3fn)
    y = torch.empty(block)
    widen[(1,)](x, y, BLOCK=block)
    return y
'''


def test_a_kernel_the_target_cannot_run_is_one_clear_error(tmp_path):
    # e4m3 fp8 needs sm_89 or newer: Hopper compiles it, Ampere's compiler refuses
    path = tmp_path / "fp8.py"
    path.write_text(textwrap.dedent(FP8))
    hopper = capture_triton(str(path), "run", {}, compile_for="sm_90")
    assert hopper.metadata["compiled"]["registers_per_thread"] > 0
    with pytest.raises(InputError, match=r"fp8.py:run: compiling widen for sm_80 failed: .*fp8e4nv not supported"):
        capture_triton(str(path), "run", {}, compile_for="sm_80")


def test_cli_checks_the_flag_before_capturing(tmp_path, capsys):
    out = str(tmp_path / "t.json")
    assert main(["capture", "triton", f"{KERNELS / 'vector_add.py'}:run", "--param", "n=4096",
                 "--compile-for", "sm_9", "-o", out]) == 2
    assert "--compile-for: expected an NVIDIA target" in capsys.readouterr().err
    assert main(["capture", "pallas", "kernels/pallas/matmul.py:run", "--compile-for", "sm_90", "-o", out]) == 2
    assert "--compile-for: applies to Triton capture only, not pallas" in capsys.readouterr().err
    assert not Path(out).exists()
