"""A Hugging Face ``config.json`` read as a :class:`~accelsim.model.spec.ModelSpec`.

The fields of Llama-style configs (Llama, Mistral, Mixtral, Qwen2, DeepSeek-V2/V3) and
GPT-2's short names are read; every other field is ignored. A missing, mistyped or
out-of-range field is one line naming the file and the config's own field name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accelsim.errors import InputError, read_json_file, shown
from accelsim.model.spec import ModelSpec
from accelsim.trace.kernel import error_message

FIELDS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer"),
    "hidden": ("hidden_size", "n_embd"),
    "heads": ("num_attention_heads", "n_head"),
    "vocab": ("vocab_size",),
}
"""Spec field -> the config's names for it, first found wins."""
PLAIN_MLP_TYPES = ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "gpt_bigcode")
"""``model_type`` s whose MLP is up-activation-down (no gate)."""
LAYERNORM_TYPES = PLAIN_MLP_TYPES
BIASED_TYPES = ("gpt2", "gpt_neox", "opt", "bloom", "gpt_bigcode")
"""``model_type`` s with a bias on every projection; Llama-style configs say so in ``mlp_bias``
(a bias on the QKV projection alone, Qwen2's, is added inside its GEMM and costs nothing more)."""


def load_hf_config(path: str | Path) -> ModelSpec:
    data = read_json_file(path, "model config")
    source = str(path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object (a Hugging Face config.json)", source=source)
    return spec_from_hf(data, source, name=data.get("_name_or_path") or Path(path).parent.name or Path(path).stem)


def spec_from_hf(data: dict[str, Any], source: str, name: object = "model") -> ModelSpec:
    reader = _Reader(data, source)
    fields: dict[str, Any] = {key: reader.integer(*names) for key, names in FIELDS.items()}
    model_type = data.get("model_type", "")
    heads = fields["heads"]
    fields["kv_heads"] = reader.integer("num_key_value_heads", default=heads)
    gpt2_default = 4 * fields["hidden"] if model_type in PLAIN_MLP_TYPES else None  # GPT-2: n_inner null
    fields["ffn"] = reader.integer("intermediate_size", "n_inner", default=gpt2_default)
    # heads < 1 is the spec's to refuse (naming the field), not a division by zero here
    fields["head_dim"] = reader.integer("head_dim", default=max(1, fields["hidden"] // max(1, heads)))
    fields["tied_embeddings"] = reader.boolean("tie_word_embeddings", default=model_type in PLAIN_MLP_TYPES)
    fields["mlp"] = "plain" if model_type in PLAIN_MLP_TYPES else "gated"
    fields["norm"] = "layernorm" if model_type in LAYERNORM_TYPES else "rmsnorm"
    fields["linear_bias"] = reader.boolean("mlp_bias", default=model_type in BIASED_TYPES)
    experts = reader.integer("num_local_experts", "n_routed_experts", "num_experts", default=0)
    if experts:
        fields["moe"] = {
            "experts": experts,
            "top_k": reader.integer("num_experts_per_tok"),
            "expert_ffn": reader.integer("moe_intermediate_size", default=fields["ffn"]),
            "shared_experts": reader.integer("n_shared_experts", default=0),
            "dense_layers": reader.integer("first_k_dense_replace", default=0),
        }
    if data.get("kv_lora_rank") is not None:
        fields["mla"] = {
            "q_lora_rank": reader.integer("q_lora_rank", default=0),
            "kv_lora_rank": reader.integer("kv_lora_rank"),
            "qk_nope_head_dim": reader.integer("qk_nope_head_dim"),
            "qk_rope_head_dim": reader.integer("qk_rope_head_dim"),
            "v_head_dim": reader.integer("v_head_dim"),
        }
    fields["name"] = str(name)[:200] if str(name).isprintable() and str(name) else "model"
    fields["source"] = source
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        message, loc = error_message(error), tuple(error["loc"])
        sub, _, rest = message.partition(": ")
        if error["type"] == "value_error" and rest and sub.isidentifier():  # a whole-spec check names its field
            message, loc = rest, (*loc, sub)
        raise InputError(message, source=source, field=reader.config_name(loc)) from None


class _Reader:
    """Fields of a config, typed; remembers which config name gave each spec field."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data, self.source = data, source
        self.used: dict[str, str] = {}

    def integer(self, *names: str, default: int | None = None) -> int | None:
        for name in names:
            value = self.data.get(name)
            if value is None:
                continue
            if type(value) is not int:
                raise InputError(f"expected an integer, got {shown(value)}", source=self.source, field=name)
            self.used[names[0]] = name
            return value
        if default is None:
            raise InputError(f"missing; expected an integer ({' or '.join(names)})", source=self.source,
                             field=names[0])
        return default

    def boolean(self, name: str, default: bool) -> bool:
        value = self.data.get(name, default)
        if type(value) is not bool:
            raise InputError(f"expected true or false, got {shown(value)}", source=self.source, field=name)
        return value

    def config_name(self, loc: tuple) -> str:
        """The config's field name for a spec error location (``moe.top_k`` -> ``num_experts_per_tok``)."""
        spec_to_config = {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
                          "kv_heads": "num_key_value_heads", "ffn": "intermediate_size", "vocab": "vocab_size",
                          "head_dim": "head_dim", "experts": "num_local_experts", "top_k": "num_experts_per_tok",
                          "expert_ffn": "moe_intermediate_size", "shared_experts": "n_shared_experts",
                          "dense_layers": "first_k_dense_replace"}
        last = str(loc[-1]) if loc else ""
        name = spec_to_config.get(last, last)
        return self.used.get(name, name) or "config"


def load_model(name_or_path: str) -> ModelSpec:
    """A built-in model by name, or a Hugging Face ``config.json`` (or a folder holding one)."""
    from accelsim.model.presets import PRESETS

    if name_or_path in PRESETS:
        return PRESETS.get(name_or_path)
    path = Path(name_or_path)
    if path.is_dir():
        path = path / "config.json"
    if not path.exists() and not name_or_path.endswith(".json"):
        raise InputError(
            f"unknown model {shown(name_or_path)}; expected one of: {', '.join(PRESETS)}, or a config.json path",
            source="MODEL")
    return load_hf_config(path)
