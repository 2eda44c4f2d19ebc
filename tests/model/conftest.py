"""Small models and systems for the model-step tests (kernels of a tiny model simulate fast)."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import load_arch
from accelsim.model.spec import ModelSpec, MoeSpec


@pytest.fixture(scope="session")
def tiny() -> ModelSpec:
    """A dense Llama-style model small enough that its kernels simulate in moments."""
    return ModelSpec(name="tiny", layers=4, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1024)


@pytest.fixture(scope="session")
def tiny_moe() -> ModelSpec:
    return ModelSpec(name="tiny-moe", layers=3, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1024,
                     moe=MoeSpec(experts=4, top_k=2, expert_ffn=256, shared_experts=1, dense_layers=1))


@pytest.fixture(scope="session")
def node():
    return load_arch("dgx-h100")


@pytest.fixture
def config(tmp_path) -> str:
    """A tiny Llama's Hugging Face ``config.json``, as a user would pass it to ``accelsim model``."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
                                "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2,
                                "vocab_size": 1024}))
    return str(path)
