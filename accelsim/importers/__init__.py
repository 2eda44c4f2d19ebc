"""Trace importers: other tools' outputs (XLA HLO, ...) as accelsim system traces."""
