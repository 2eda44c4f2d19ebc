"""GEMM implementations: one module per library the ``gemm`` family can simulate
(``--param impl=...``). Each module says what it models and what it leaves out; each
provides :class:`~accelsim.families.gemm_impls.base.GemmImpl`."""
