"""Built-in models: parameter counts match their published sizes."""

from __future__ import annotations

import pytest

from accelsim.model.presets import PRESETS


@pytest.mark.parametrize("name, billions, tolerance", [
    ("llama3-8b", 8.03, 0.01), ("llama3-70b", 70.55, 0.01), ("llama3-405b", 405.85, 0.01),
    ("mixtral-8x7b", 46.70, 0.01), ("gpt3-175b", 174.6, 0.01), ("deepseek-v3", 671.0, 0.01),
])
def test_parameter_counts_match_published_sizes(name, billions, tolerance):
    assert PRESETS.get(name).params / 1e9 == pytest.approx(billions, rel=tolerance)


def test_active_parameters_of_moe_models():
    """Mixtral: about 13B of its 47B per token; DeepSeek-V3: 37B of 671B (both published)."""
    assert PRESETS.get("mixtral-8x7b").active_matmul_params / 1e9 == pytest.approx(12.9, rel=0.03)
    assert PRESETS.get("deepseek-v3").active_matmul_params / 1e9 == pytest.approx(37.5, rel=0.03)


def test_kv_cache_per_token():
    """Llama 3 70B: 80 layers x K and V x 8 heads x 128 x 2 bytes; MLA keeps its 576-wide latent."""
    assert PRESETS.get("llama3-70b").kv_cache_bytes_per_token(2) == 80 * 2 * 8 * 128 * 2
    assert PRESETS.get("llama3-70b").kv_cache_bytes_per_token(2, tp=8) == 80 * 2 * 1 * 128 * 2
    assert PRESETS.get("deepseek-v3").kv_cache_bytes_per_token(2) == 61 * 576 * 2
