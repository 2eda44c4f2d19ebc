"""Built-in models, by name. Each shape is from the model's published configuration."""

from __future__ import annotations

from accelsim.model.spec import MlaSpec, ModelSpec, MoeSpec
from accelsim.registry import Registry

PRESETS: Registry[ModelSpec] = Registry("model")


def _add(spec: ModelSpec) -> None:
    PRESETS.register(spec.name, spec)


_add(ModelSpec(
    name="gpt3-175b", layers=96, hidden=12288, heads=96, kv_heads=96, head_dim=128, ffn=49152, vocab=51200,
    mlp="plain", norm="layernorm", tied_embeddings=True,
    source="Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1 (96 layers, d_model 12288, "
           "96 heads of 128, FFN 4 x d_model); vocabulary 50257 padded to 51200 as Megatron-LM pads it "
           "(Narayanan et al. 2021); input and output embeddings tied, as in Megatron-LM's GPT"))
_add(ModelSpec(
    name="llama3-8b", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256,
    source="huggingface.co/meta-llama/Meta-Llama-3-8B config.json"))
_add(ModelSpec(
    name="llama3-70b", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn=28672, vocab=128256,
    source="huggingface.co/meta-llama/Meta-Llama-3-70B config.json"))
_add(ModelSpec(
    name="llama3-405b", layers=126, hidden=16384, heads=128, kv_heads=8, head_dim=128, ffn=53248, vocab=128256,
    source="huggingface.co/meta-llama/Llama-3.1-405B config.json; Dubey et al. 2024, 'The Llama 3 Herd of "
           "Models', Table 3"))
_add(ModelSpec(
    name="mixtral-8x7b", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=32000,
    moe=MoeSpec(experts=8, top_k=2, expert_ffn=14336),
    source="huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json"))
_add(ModelSpec(
    name="deepseek-v3", layers=61, hidden=7168, heads=128, kv_heads=128, head_dim=128, ffn=18432, vocab=129280,
    moe=MoeSpec(experts=256, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=3),
    mla=MlaSpec(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
    source="huggingface.co/deepseek-ai/DeepSeek-V3 config.json (the multi-token-prediction module left out)"))
