"""A TPU kernel whose grid step holds more VMEM than a pallas_call gets by default (the
scoped limit, ``local_memory.max_per_program``) runs, with a note that it needs
``vmem_limit_bytes``; ``--json`` reports what a program holds."""

import json


def test_a_block_past_the_default_scoped_vmem_gets_a_note(cli):
    args = ("simulate", "--arch", "tpu-v5e", "--kernel", "gemm", "--param", "M=4096", "--param", "N=4096",
            "--param", "K=4096", "--param", "block_m=1024", "--param", "block_n=1024", "--param", "block_k=2048")
    result = cli(*args)
    assert result.code == 0 and "note: a grid step holds 24 MiB of VMEM, over the 16 MiB" in result.err
    assert json.loads(cli(*args, "--json").out)["local_memory_bytes"] == 24 * 2**20
    small = cli("simulate", "--arch", "tpu-v5e", "--kernel", "gemm", "--param", "M=1024", "--param", "N=1024",
                "--param", "K=1024", "--param", "block_m=256", "--param", "block_n=256", "--param", "block_k=256")
    assert small.code == 0 and "note:" not in small.err
