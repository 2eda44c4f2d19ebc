"""Trace importers: other tools' outputs (XLA HLO text, MLCommons Chakra execution
traces) as accelsim system traces. Each importer is one module with one entry point
(``import_hlo``, ``import_chakra``) and one ``accelsim import`` subcommand
(:mod:`accelsim.cli.import_cmd`)."""
