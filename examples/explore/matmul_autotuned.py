"""The Triton matmul of ``kernels/triton/matmul.py`` under ``@triton.autotune``, with the
autotuning list of Triton's matrix-multiplication tutorial
(github.com/triton-lang/triton, python/tutorials/03-matrix-multiplication.py,
``get_cuda_autotune_config``), for ``accelsim explore``:

    accelsim explore --arch h100-sxm --kernel examples/explore/matmul_autotuned.py:run \\
        --param M=512 --param N=512 --param K=512 -o examples/explore/results

explore reads the autotuner's configs (``BLOCK_M`` -> ``block_m``, plus ``num_warps`` and
``num_stages``) and calls ``run`` once per config, capturing the one launch it makes;
``run`` launches the kernel with the config it is given, not through the autotuner
(which would launch every config itself).
"""

from __future__ import annotations

import triton

from kernels.triton.matmul import inputs, matmul, matmul_kernel


def _config(bm: int, bn: int, bk: int, stages: int, warps: int) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages,
                         num_warps=warps)


tuned_matmul_kernel = triton.autotune(
    configs=[
        _config(128, 256, 64, 3, 8),
        _config(64, 256, 32, 4, 4),
        _config(128, 128, 32, 4, 4),
        _config(128, 64, 32, 4, 4),
        _config(64, 128, 32, 4, 4),
        _config(128, 32, 32, 4, 4),
        _config(64, 32, 32, 5, 2),
        _config(32, 64, 32, 5, 2),
    ],
    key=["M", "N", "K"],
)(matmul_kernel)


def run(M: int, N: int, K: int, dtype: str = "bf16", block_m: int = 128, block_n: int = 256, block_k: int = 64,
        group_m: int = 8, num_stages: int = 3, num_warps: int = 8):
    """One launch of the matmul with the given config (one of the autotuner's)."""
    a, b = inputs(M, N, K, dtype)
    return matmul(a, b, block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                  num_stages=num_stages, num_warps=num_warps)
