"""A tile config that needs more local memory than the chip allows is refused with the
config field that sets the limit: per-block shared memory on a GPU, VMEM on a TPU."""

from __future__ import annotations

import pytest

SMALL = ("--set", "local_memory.capacity=4 KiB", "--set", "local_memory.max_per_program=4 KiB")


@pytest.mark.parametrize("arch, field", [("h100-sxm", "local_memory.max_per_program"),
                                         ("tpu-v5e", "local_memory.capacity")])
@pytest.mark.parametrize("kernel", [("gemm", "M=1024", "N=1024", "K=1024"),
                                    ("attention", "batch=1", "heads=8", "seq_q=1024", "seq_kv=1024", "head_dim=128")])
def test_the_refusal_names_the_limiting_field(cli, arch, field, kernel):
    family, *params = kernel
    args = [arg for param in params for arg in ("--param", param)]
    result = cli("simulate", "--arch", arch, "--kernel", family, *args, *SMALL)
    assert result.code == 2 and f"allows 4096 ({field})" in result.err and result.err.count("\n") == 1
