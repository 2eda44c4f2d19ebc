"""``accelsim arch list | show | diff``."""

from __future__ import annotations

import argparse
from typing import Any

from accelsim.arch import describe, loader, model
from accelsim.cli.output import print_json, table
from accelsim.units import format_quantity

SET_HELP = "override a config field for a what-if study, e.g. --set hbm.bandwidth='8 TB/s' (repeatable)"


def add_set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help=SET_HELP)


def register(sub: argparse._SubParsersAction) -> None:
    arch = sub.add_parser("arch", help="list, show and compare architecture configs")
    arch_sub = arch.add_subparsers(dest="arch_command", required=True, metavar="ACTION")

    p = arch_sub.add_parser("list", help="list the built-in chips and systems")
    p.set_defaults(run=run_list)

    p = arch_sub.add_parser("show", help="show a config's resolved numbers with their sources")
    p.add_argument("name", metavar="NAME_OR_PATH")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_set_option(p)
    p.set_defaults(run=run_show)

    p = arch_sub.add_parser("diff", help="show the fields where two configs differ")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=run_diff)


def run_list(args: argparse.Namespace) -> int:
    print(table(("NAME", "KIND", "DISPLAY NAME", "SUMMARY"), describe.list_rows()))
    return 0


def run_show(args: argparse.Namespace) -> int:
    info = describe.describe(args.name, args.overrides)
    if args.json:
        print_json(info)
        return 0
    _print_description(info)
    return 0


def _print_description(info: dict[str, Any], indent: str = "") -> None:
    config = dict(info["config"])
    print(f"{indent}{info['name']}: {info['display_name']} ({info['kind']})")
    for key in ("description",):
        if config.get(key):
            print(f"{indent}  {config[key]}")
    hidden = ("schema_version", "description", "aliases")
    rows = []
    for path, leaf in describe.leaves({k: v for k, v in config.items() if k not in hidden}):
        rows.append((path, _text(leaf), leaf.get("basis", ""), leaf.get("source") or leaf.get("note") or ""))
    print(_indent(table(("FIELD", "VALUE", "BASIS", "SOURCE / NOTE"), rows), indent + "  "))
    derived_rows = [(k, _derived_text(k, v)) for k, v in describe.flatten(info["derived"]).items()]
    print(f"{indent}  derived from the above:")
    print(_indent(table(("FIGURE", "VALUE"), derived_rows), indent + "    "))
    if "based_on" in info:
        print(f"{indent}  built on:")
        _print_description(info["based_on"], indent + "    ")


def _text(leaf: dict[str, Any]) -> str:
    value = leaf.get("text", leaf["value"])
    if isinstance(value, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return _number(value) if isinstance(value, float) else str(value)


def _number(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


_DERIVED_UNITS = (("_flops_per_s", "flops_per_s"), ("_bytes_per_s", "bytes_per_s"), ("_ops_per_s", "flops_per_s"))


def _derived_text(key: str, value: Any) -> str:
    for suffix, dim in _DERIVED_UNITS:
        head = key.split(".")[0]
        if head.endswith(suffix) and isinstance(value, (int, float)):
            text = format_quantity(float(value), dim)
            return text.replace("FLOP/s", "OP/s") if head.endswith("_ops_per_s") else text
    return _number(value) if isinstance(value, float) and not value.is_integer() else f"{value:.4g}" if isinstance(value, float) else str(value)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def run_diff(args: argparse.Namespace) -> int:
    a, b = describe.describe(args.a), describe.describe(args.b)
    flat_a = describe.flatten({"config": a["config"], "derived": a["derived"]})
    flat_b = describe.flatten({"config": b["config"], "derived": b["derived"]})
    hidden = ("config.description", "config.aliases", "config.schema_version")
    keys = [k for k in dict.fromkeys([*flat_a, *flat_b]) if k not in hidden]
    changed = [(k, flat_a.get(k, "-"), flat_b.get(k, "-")) for k in keys if flat_a.get(k) != flat_b.get(k)]
    if args.json:
        print_json([{"field": k, a["name"]: va, b["name"]: vb} for k, va, vb in changed])
        return 0
    rows = [(k, _diff_text(k, va), _diff_text(k, vb)) for k, va, vb in changed]
    print(table(("FIELD", a["name"], b["name"]), rows) if rows else f"{a['name']} and {b['name']} are the same")
    return 0


def _diff_text(key: str, value: Any) -> str:
    if key.startswith("derived."):
        return _derived_text(key.removeprefix("derived."), value)
    return _text({"value": value})
