"""Fuzzing Hugging Face ``config.json`` files: a mutated config (dense or MoE with MLA)
is refused in one line naming the file, or built into a step whose trace is checked
(``--no-replay``), with a model whose parameter count follows from the fields read."""

import json

from hypothesis import given
from hypothesis import strategies as st

from accelsim.model.hf_config import load_hf_config
from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

DENSE = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
         "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 1024, "tie_word_embeddings": False}
MOE_MLA = {"model_type": "deepseek_v3", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
           "num_hidden_layers": 3, "num_key_value_heads": 4, "vocab_size": 1024, "n_routed_experts": 8,
           "num_experts_per_tok": 2, "moe_intermediate_size": 128, "n_shared_experts": 1,
           "first_k_dense_replace": 1, "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
           "qk_rope_head_dim": 16, "v_head_dim": 32}


SIZES = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 7, 8, 64, 4096, 2**18, 2**18 + 1, 2**22 + 1, 2**31, 2**64]),
                  st.integers(-2, 600))
"""Where a size was: the edges of each field's range, and small numbers that do or do not divide."""
SIZE_FIELDS = sorted(k for k in MOE_MLA if k != "model_type")


@fuzz_settings(examples=20)
@given(data=mutated(DENSE) | mutated(MOE_MLA))
def test_a_mutated_config_json(cli, tmp_path, data):
    _built_or_refused(cli, tmp_path, data)


@fuzz_settings(examples=20)
@given(base=st.sampled_from([DENSE, MOE_MLA]), sizes=st.dictionaries(st.sampled_from(SIZE_FIELDS), SIZES, min_size=1,
                                                                      max_size=4))
def test_config_json_sizes_at_their_edges(cli, tmp_path, base, sizes):
    _built_or_refused(cli, tmp_path, {**base, **sizes})


def _built_or_refused(cli, tmp_path, data) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    result = cli("model", str(path), "--system", "dgx-h100", "--tp", "4", "--seq", "128", "--mode", "prefill",
                 "--no-replay")
    if refused_or_ok(result):
        spec = load_hf_config(path)
        assert spec.params >= spec.layers * spec.attention_params + spec.embedding_params > 0
    elif "config.json" not in result.err:  # the model is valid; the layout refused it (TP 4, one node)
        assert any(f"--{flag}:" in result.err for flag in ("tp", "ep", "pp", "micro-batch")) or \
            "does not fit" in result.err, result.err
