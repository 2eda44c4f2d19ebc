"""Plain-data descriptions of configs for ``accelsim arch list/show/diff``: every number
resolved to base units, with its unit, basis and source, plus the peaks derived from them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from accelsim.arch import loader, model, schema
from accelsim.units import format_quantity

BASE_UNITS = {"bytes": "B", "bytes_per_s": "B/s", "hz": "Hz", "seconds": "s", "flops_per_s": "FLOP/s", "watts": "W"}


def _dimension(cited_type: type[schema.Cited]) -> str | None:
    for meta in cited_type.model_fields["value"].metadata:
        if isinstance(meta, schema.Dimension):
            return str(meta)
    return None


def _leaf(value: schema.Cited) -> dict[str, Any]:
    dim = _dimension(type(value))
    out: dict[str, Any] = {"value": value.value}
    if dim:
        out["unit"] = BASE_UNITS[dim]
        out["text"] = format_quantity(value.value, dim)
    out["basis"] = value.basis
    if value.source:
        out["source"] = value.source
    if value.note:
        out["note"] = value.note
    return out


def spec_tree(spec: BaseModel) -> dict[str, Any]:
    """The spec as nested dicts; each cited number becomes ``{value, unit, text, basis, source, note}``."""
    out: dict[str, Any] = {}
    for name in type(spec).model_fields:
        value = getattr(spec, name)
        if value is not None:
            out[name] = _tree(value)
    return out


def _tree(value: Any) -> Any:
    if isinstance(value, schema.Cited):
        return _leaf(value)
    if isinstance(value, BaseModel):
        return spec_tree(value)
    if isinstance(value, dict) and value and all(isinstance(v, (BaseModel, dict)) for v in value.values()):
        return {key: _tree(v) for key, v in value.items()}  # a node's NCCL protocols, a chip's family_values
    return value


def derived(arch: model.Arch) -> dict[str, Any]:
    """Chip- or system-level figures computed from the config (not in the file); the peaks and
    the ridge point the datasheet's, at :attr:`~accelsim.arch.model.Chip.peak_clock_hz` (as
    ``simulate`` and ``arch list`` quote them, also where kernels start at a boost clock)."""
    if isinstance(arch, model.Chip):
        matrix, vector = arch.matrix.flops_per_cycle_per_core, arch.vector.flops_per_cycle_per_core
        out: dict[str, Any] = {
            "matrix_flops_per_s": {d: arch.datasheet_matrix_flops_per_s(d) for d in matrix},
            "vector_flops_per_s": {d: arch.datasheet_vector_flops_per_s(d) for d in vector},
            "special_function_ops_per_s": arch.special_function_ops_per_s,
            "local_memory_bandwidth_bytes_per_s": arch.local.bandwidth_bytes_per_cycle * arch.num_cores * arch.clock_hz,
            "link_bandwidth_bytes_per_s": arch.link_bandwidth_bytes_per_s,
        }
        if "bf16" in matrix:
            ridge = arch.datasheet_matrix_flops_per_s("bf16") / arch.hbm.bandwidth_bytes_per_s
            out["ridge_point_flops_per_byte_bf16"] = ridge
        return out
    if isinstance(arch, model.Node):
        return {"chips": arch.gpus, "nvlink_bandwidth_per_gpu_bytes_per_s": arch.chip.link_bandwidth_bytes_per_s}
    if isinstance(arch, model.Cluster):
        return {
            "chips": arch.num_chips,
            "scale_out_bandwidth_per_node_bytes_per_s": arch.nics_per_node * arch.nic_bandwidth_bytes_per_s,
        }
    if isinstance(arch, model.Torus):
        return {"chips": arch.num_chips, "ici_bandwidth_per_chip_bytes_per_s": arch.chip.link_bandwidth_bytes_per_s}
    return {"chips": arch.num_chips}


def describe(name_or_path: str, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything ``arch show --json`` prints for one config; a system includes the
    config it is built on under ``based_on``."""
    arch, spec = model.load_arch_and_spec(name_or_path, overrides)
    tree = spec_tree(spec)
    out: dict[str, Any] = {
        "name": tree.pop("name"),
        "kind": tree.pop("kind"),
        "display_name": tree.pop("display_name"),
        "config": tree,
        "derived": derived(arch),
    }
    reference = model.REFERENCE_FIELDS.get(out["kind"])
    if reference:
        out["based_on"] = describe(tree[reference], model.forwarded_overrides(overrides, reference))
    return out


def leaves(tree: dict[str, Any], prefix: str = ""):
    """``(dotted path, leaf)`` for every field of a :func:`spec_tree`; a cited number's
    leaf has ``basis``, a plain field's is ``{"value": ...}``."""
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and "basis" in value and "value" in value:
            yield path, value
        elif isinstance(value, dict):
            yield from leaves(value, path)
        else:
            yield path, {"value": value}


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"hbm": {"bandwidth": {...leaf...}}}`` -> ``{"hbm.bandwidth": leaf_text}``."""
    if isinstance(tree, dict) and "value" in tree and "basis" in tree:
        return {prefix: tree.get("text", tree["value"])}
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: tree}


CORE_NOUNS = {"sm": ("SM", "SMs"), "cu": ("CU", "CUs"), "tensorcore": ("TensorCore", "TensorCores")}


def core_noun(chip: model.Chip) -> str:
    singular, plural = CORE_NOUNS[chip.core_kind]
    return singular if chip.num_cores == 1 else plural


def summary_row(arch: model.Arch, node_name: str | None = None) -> dict[str, str]:
    """One line of ``arch list``; a cluster names its node as ``node_name`` (what its config
    writes, e.g. the plain ``dgx-h100``) where given, else by the resolved config's name."""
    if isinstance(arch, model.Chip):
        dtype = "bf16" if "bf16" in arch.matrix.flops_per_cycle_per_core else next(iter(arch.matrix.flops_per_cycle_per_core))
        return {
            "kind": f"chip/{arch.kind}",
            "summary": (
                f"{arch.num_cores} {core_noun(arch)} @ {format_quantity(arch.peak_clock_hz, 'hz')}, "
                f"{format_quantity(arch.datasheet_matrix_flops_per_s(dtype), 'flops_per_s')} {dtype}, "
                f"HBM {format_quantity(arch.hbm.capacity_bytes, 'bytes')} "
                f"{format_quantity(arch.hbm.bandwidth_bytes_per_s, 'bytes_per_s')}"
            ),
        }
    if isinstance(arch, model.Node):
        return {"kind": "node", "summary": f"{arch.gpus} x {arch.chip.name}, {arch.switch_count} {arch.switch_name}"}
    if isinstance(arch, model.Cluster):
        return {
            "kind": "cluster",
            "summary": (
                f"{arch.nodes} x {node_name or arch.node.name} ({arch.num_chips} chips), {arch.fabric} "
                f"{arch.nics_per_node} x {format_quantity(arch.nic_bandwidth_bytes_per_s, 'bytes_per_s')} per node"
            ),
        }
    if isinstance(arch, model.Torus):
        wrap = "".join("w" if w else "-" for w in arch.wraparound)
        return {
            "kind": "torus",
            "summary": f"{'x'.join(map(str, arch.shape))} {arch.chip.name} ({arch.num_chips} chips), wrap {wrap}",
        }
    return {
        "kind": "multislice",
        "summary": f"{arch.slices} x {arch.slice.name} ({arch.num_chips} chips) over DCN",
    }


def list_rows() -> list[tuple[str, str, str, str]]:
    """``arch list``'s rows (name, kind, display name, summary): every built-in config, and
    every name a user types for one (an alias, e.g. ``dgx-h100`` for the fitted
    ``dgx-h100-calibrated``), in name order. An alias row shows what it resolves to."""
    targets = {name: name for name in loader.builtin_names()}
    targets.update(loader.builtin_aliases())
    rows = []
    for name in sorted(targets):
        arch, spec = model.load_arch_and_spec(targets[name])
        row = summary_row(arch, getattr(spec, "node", None))
        display = spec.display_name if name == targets[name] else f"= {targets[name]}: {spec.display_name}"
        rows.append((name, row["kind"], display, row["summary"]))
    return rows
