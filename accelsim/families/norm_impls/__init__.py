"""Norm implementations: one module per kernel the ``layernorm`` and ``rmsnorm`` families can
simulate (``--param impl=...``). Each module says what it models and what it leaves out; each
provides :class:`~accelsim.families.norm_impls.base.NormImpl`."""
