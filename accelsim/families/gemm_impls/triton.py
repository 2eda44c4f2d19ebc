"""``impl=triton``: the Triton matmul tutorial's kernel (``python/tutorials/03-matrix-multiplication.py``),
the ``gemm`` family's original model: one CTA per output tile in group-M order, a k-loop over
``num_stages`` shared-memory buffers filled by the program's own threads (``cp.async`` or
plain loads; Triton's Hopper pipeliner also issues wgmma asynchronously, which the staged
buffers count), split-K with fp32 atomics for small grids, and on Hopper and Blackwell the
2x1 clusters and 2-SM pairs ``config=auto`` searches (``docs/engine.md``).

Left out: Triton's warp specialization and persistent kernels (``tl.range(...,
warp_specialize=True)``, TMA descriptors), which a tutorial launch does not use.
"""

from __future__ import annotations

from accelsim.families import gemm
from accelsim.families.gemm_impls.base import GemmImpl

IMPL = GemmImpl(
    name="triton",
    description="Triton tutorial matmul (one CTA per tile, split-K, clusters and 2-SM pairs where the chip has them)",
    default_config=gemm.triton_default_config,
    config_space=gemm.triton_config_space,
    build=gemm.triton_build,
    check=gemm.check,
    quick_bound=gemm.tile_traffic_bound,
)
