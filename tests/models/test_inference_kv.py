"""KV-cache bytes per token and their transfer (gpulab.inference.kv): analytic values,
a published cross-check (Mooncake's KV size per prompt), and bad input."""
from __future__ import annotations

import pytest

from gpulab.inference import kv, published


def test_bytes_per_token_analytic():
    # Llama-3-70B: 80 layers, 8 KV heads of 128, BF16 -> 2*80*8*128*2
    assert kv.model_kv_bytes_per_token("llama3-70b") == 327_680
    assert kv.model_kv_bytes_per_token("llama3-70b", element_bytes=1) == 163_840
    assert kv.kv_bytes_per_token(36, 8, 128, 4) == 2 * kv.kv_bytes_per_token(36, 8, 128)


def test_matches_mooncake_kv_size_in_binary_units():
    # Qwen3-8B (36 layers, 8 KV heads, head_dim 128, BF16; Hugging Face Qwen/Qwen3-8B
    # config.json: num_hidden_layers, num_key_value_heads, head_dim): the page's "GB" are GiB
    per_token = kv.kv_bytes_per_token(36, 8, 128)
    rows = [r for r in published.kv_transfer_rows()
            if r["model"] == "Qwen3-8B" and r["kv_size_unit"] == "GB"]
    assert rows
    for r in rows:
        assert per_token * r["prompt_tokens"] / 2**30 == pytest.approx(r["kv_size"],
                                                                       abs=0.006)


def test_transfer_time_and_share():
    assert kv.kv_transfer_time(2e9, 100e9, latency=1e-3) == pytest.approx(0.021)
    assert kv.ttft_share(0.1, 0.3) == pytest.approx(0.25)
    assert kv.ttft_share(0.0, 0.3) == 0.0


@pytest.mark.parametrize("call, name", [
    (lambda: kv.kv_bytes_per_token(0, 8, 128), "layers"),
    (lambda: kv.kv_bytes_per_token(80, 8, 128, 3), "element_bytes"),
    (lambda: kv.kv_bytes_per_token(80, 2.5, 128), "kv_heads"),
    (lambda: kv.kv_transfer_time(1e9, 0), "bandwidth"),
    (lambda: kv.kv_transfer_time(-1, 1e9), "kv_bytes"),
    (lambda: kv.kv_transfer_time(1e9, 1e9, latency=-1), "latency"),
    (lambda: kv.ttft_share(0, 0), "transfer_s"),
    (lambda: kv.model_kv_bytes_per_token("no-such-model"), "model"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
