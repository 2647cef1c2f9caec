r"""Disaggregated prefill and decode: when the KV-cache transfer is paid, and the model
beside Mooncake's published transfers.

The prefill instance computes a prompt's KV cache (:mod:`gpulab.inference.kv` gives its
bytes) and ships it to the decode instance. Two ways to pay for it:

* ``sequential``: the whole cache moves after the prefill, TTFT = ``p + x``;
* ``layerwise``: each layer's keys and values are sent as soon as that layer is done
  (as vLLM-Ascend's layer-wise Mooncake connector does), a two-stage pipeline over ``L`` equal
  layers: TTFT = ``p/L + x/L + (L - 1) max(p/L, x/L)``, i.e. ``p + x/L`` when the link
  keeps up with the prefill and ``p/L + x`` when it does not.

Units are SI: bytes, seconds, bytes per second.

Examples
--------
>>> from gpulab.inference import disagg
>>> disagg.ttft_with_transfer(0.8, 0.2)
1.0
>>> round(disagg.ttft_with_transfer(0.8, 0.2, layers=80), 6)     # 0.8 + 0.2 / 80
0.8025
"""
from __future__ import annotations

from .._validate import as_number, check_choice, check_int, finite_result
from .. import network
from . import published
from .kv import kv_bytes_per_token

__all__ = ["OVERLAPS", "MOONCAKE_MODELS", "ttft_with_transfer", "exposed_share",
           "moved_kv_bytes", "kv_transfer_checks"]

#: How the transfer is paid: after the prefill, or layer by layer during it.
OVERLAPS = ("sequential", "layerwise")
#: KV shapes of the models of Mooncake's tables (Hugging Face ``config.json`` of
#: Qwen/Qwen3-8B and Qwen/Qwen3-235B-A22B-Instruct-2507: num_hidden_layers,
#: num_key_value_heads, head_dim) and the TP degree of the runs.
MOONCAKE_MODELS = {"Qwen3-8B": (36, 8, 128),
                   "Qwen3-235B-A22B-Instruct-2507": (94, 4, 128)}


def ttft_with_transfer(prefill_s, transfer_s, *, layers=None):
    """Time to first token of a disaggregated request: prefill and KV transfer, the
    transfer after the prefill (``layers=None``) or layer by layer (``layers=L``). [s]

    Parameters
    ----------
    prefill_s : float
        Prefill time, >= 0. [s]
    transfer_s : float
        Time to move the whole KV cache, >= 0. [s]
    layers : int or None
        Layers sent one by one as the prefill finishes them, in [1, 10000]; None: no
        overlap.
    """
    p = as_number("prefill_s", prefill_s, low=0, allow_array=False)
    x = as_number("transfer_s", transfer_s, low=0, allow_array=False)
    if layers is None:
        return finite_result(float(p + x), prefill_s=p, transfer_s=x)
    n = check_int("layers", layers, low=1, high=10_000)
    return finite_result(float(p / n + x / n + (n - 1) * max(p, x) / n), prefill_s=p,
                         transfer_s=x)


def exposed_share(prefill_s, transfer_s, *, layers=None):
    """Share of the TTFT that the transfer adds beyond the prefill:
    ``(ttft - prefill) / ttft``. [1]

    >>> exposed_share(3.0, 1.0)
    0.25
    """
    t = ttft_with_transfer(prefill_s, transfer_s, layers=layers)
    if t <= 0:
        raise ValueError("prefill_s + transfer_s must be more than 0 s; got 0")
    return float((t - float(prefill_s)) / t)


def moved_kv_bytes(layers, kv_heads, head_dim, tokens, *, tp=1, element_bytes=2):
    """KV bytes a TP instance ships for ``tokens`` tokens: every GPU sends its own KV
    heads, and with fewer KV heads than GPUs each head is held (and sent) by
    ``tp / kv_heads`` GPUs: ``kv_bytes_per_token(layers, max(kv_heads, tp), ...)``. [B]

    >>> moved_kv_bytes(94, 4, 128, 1, tp=8) == 2 * moved_kv_bytes(94, 4, 128, 1, tp=4)
    True
    """
    t = check_int("tokens", tokens, low=1, high=100_000_000)
    g = check_int("tp", tp, low=1, high=1024)
    k = check_int("kv_heads", kv_heads, low=1, high=4096)
    if max(k, g) % min(k, g):
        raise ValueError(f"tp must divide kv_heads or be a multiple of it; got tp={g}, "
                         f"kv_heads={k}")
    return kv_bytes_per_token(layers, max(k, g), head_dim, element_bytes) * t


def kv_transfer_checks(fabric="roce"):
    """The model beside Mooncake's published KV transfers (``published.kv_transfer_rows``),
    one row each: the KV bytes of the model (:func:`moved_kv_bytes`, BF16, at the run's
    TP) moved at the page's aggregate line rate times the fabric's efficiency
    (:func:`gpulab.network.fabric`), no fixed cost.

    Returns
    -------
    list of dict
        ``source_id``, ``model``, ``prompt_tokens``, ``kv_bytes`` (model) [B],
        ``published_ms``, ``model_ms``, ``error`` (model / published - 1),
        ``ttft_ms`` (published) and ``published_share`` (transfer / TTFT).
    """
    eff = network.fabric(check_choice("fabric", fabric, network.fabric_names())).efficiency
    out = []
    for r in published.kv_transfer_rows():
        shape = MOONCAKE_MODELS[r["model"]]
        kv = moved_kv_bytes(*shape, r["prompt_tokens"], tp=r["tp"])
        model_s = kv / (eff * r["line_rate_gb_per_s"] * 1e9)
        out.append({"source_id": r["source_id"], "model": r["model"],
                    "prompt_tokens": r["prompt_tokens"], "kv_bytes": float(kv),
                    "published_ms": r["transfer_ms"], "model_ms": model_s * 1e3,
                    "error": model_s * 1e3 / r["transfer_ms"] - 1, "ttft_ms": r["ttft_ms"],
                    "published_share": r["transfer_ms"] / r["ttft_ms"]})
    return out
