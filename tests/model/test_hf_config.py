"""A Hugging Face config.json read as a model: the same shapes as the preset, bad fields
as one line naming the file and the config's own field."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.model.hf_config import load_hf_config, load_model
from accelsim.model.presets import PRESETS

LLAMA3_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False, "rope_theta": 500000.0}
MIXTRAL = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
           "num_experts_per_tok": 2}


def write(tmp_path, data) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_llama_config_matches_the_preset(tmp_path):
    spec = load_hf_config(write(tmp_path, LLAMA3_8B))
    assert spec.params == PRESETS.get("llama3-8b").params
    assert (spec.kv_heads, spec.head_dim, spec.mlp) == (8, 128, "gated")


def test_gpt2_has_biases_and_llama_only_when_its_mlp_does(tmp_path):
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}
    assert load_hf_config(write(tmp_path, gpt2)).linear_bias
    assert not load_hf_config(write(tmp_path, LLAMA3_8B)).linear_bias
    assert load_hf_config(write(tmp_path, {**LLAMA3_8B, "mlp_bias": True})).linear_bias


def test_mixtral_config_is_moe(tmp_path):
    spec = load_model(write(tmp_path, MIXTRAL))
    assert spec.moe.experts == 8 and spec.params == PRESETS.get("mixtral-8x7b").params


def test_a_folder_holding_config_json(tmp_path):
    write(tmp_path, LLAMA3_8B)
    assert load_model(str(tmp_path)).layers == 32


@pytest.mark.parametrize("change, field, words", [
    ({"hidden_size": "4096"}, "hidden_size", "expected an integer"),
    ({"num_hidden_layers": None}, "num_hidden_layers", "missing"),
    ({"num_key_value_heads": 5}, "num_attention_heads", "not a multiple"),
    ({"vocab_size": 1 << 30}, "vocab_size", "at most"),
    ({"num_attention_heads": 0}, "num_attention_heads", "at least 1"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings", "true or false"),
    ({"num_local_experts": 2, "num_experts_per_tok": 4}, "num_experts_per_tok", "routed experts"),
])
def test_bad_field_is_one_line_naming_it(tmp_path, change, field, words):
    path = write(tmp_path, {**LLAMA3_8B, **change})
    with pytest.raises(InputError) as err:
        load_hf_config(path)
    line = err.value.one_line()
    assert path in line and field in line and words in line and "\n" not in line


def test_unknown_model_name_lists_the_presets():
    with pytest.raises(InputError, match="llama3-70b"):
        load_model("llama-9000")
