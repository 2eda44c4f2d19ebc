"""Small models and systems for the model-step tests (kernels of a tiny model simulate fast)."""

from __future__ import annotations

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
