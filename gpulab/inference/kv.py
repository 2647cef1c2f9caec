r"""KV-cache bytes and their transfer in disaggregated serving (prefill on some GPUs,
decode on others).

With prefill/decode disaggregation the prefill instance computes a prompt's KV cache
and ships it to the decode instance before the first token can be decoded there. Its
size per token is

.. math::

    S_\mathrm{KV} = 2 \, L \, n_\mathrm{kv} \, d_\mathrm{head} \, e

(keys and values, ``L`` layers, ``n_kv`` KV heads of ``d_head`` elements, ``e`` bytes
per element). Units are SI: bytes, seconds, bytes per second (GB = 1e9 B).

Examples
--------
Llama-3-70B in BF16: 2 x 80 x 8 x 128 x 2 B = 320 KiB per token.

>>> from gpulab.inference import kv
>>> kv.model_kv_bytes_per_token("llama3-70b") / 2**10
320.0
"""
from __future__ import annotations

from .._validate import as_number, check_int
from ..parallelism.model import as_model

__all__ = ["kv_bytes_per_token", "model_kv_bytes_per_token", "kv_transfer_time",
           "ttft_share"]


def kv_bytes_per_token(layers, kv_heads, head_dim, element_bytes=2):
    """KV-cache bytes of one token: ``2 x layers x kv_heads x head_dim x element_bytes``. [B]

    Parameters
    ----------
    layers : int
        Transformer layers, in [1, 10000].
    kv_heads : int
        Key/value heads per layer (GQA), in [1, 4096].
    head_dim : int
        Elements per head, in [1, 4096].
    element_bytes : int
        Bytes per cached element: 2 (BF16/FP16), 1 (FP8) or 4 (FP32).

    Raises
    ------
    ValueError
        If an argument is not an integer in its range.

    Examples
    --------
    Qwen3-8B (36 layers, 8 KV heads of 128, BF16):

    >>> kv_bytes_per_token(36, 8, 128)
    147456
    """
    n = check_int("layers", layers, low=1, high=10_000)
    k = check_int("kv_heads", kv_heads, low=1, high=4096)
    d = check_int("head_dim", head_dim, low=1, high=4096)
    e = check_int("element_bytes", element_bytes, low=1, high=4)
    if e == 3:
        raise ValueError("element_bytes must be 1, 2 or 4; got 3")
    return 2 * n * k * d * e


def model_kv_bytes_per_token(model, element_bytes=2):
    """:func:`kv_bytes_per_token` of a model preset (``data/llm_models.yaml``), with
    ``head_dim = hidden / heads``. [B]

    >>> model_kv_bytes_per_token("llama3-8b")
    131072
    """
    m = as_model(model, "model")
    if m.hidden % m.heads:
        raise ValueError(f"model must have hidden divisible by heads; {m.name!r} has "
                         f"{m.hidden} / {m.heads}")
    return kv_bytes_per_token(m.layers, m.kv_heads, m.hidden // m.heads, element_bytes)


def kv_transfer_time(kv_bytes, bandwidth, *, latency=0.0):
    """Time to move ``kv_bytes`` at ``bandwidth`` (per direction) after ``latency``. [s]

    Parameters
    ----------
    kv_bytes : float
        Bytes to move, >= 0. [B]
    bandwidth : float
        Achieved rate of the path, per direction, > 0 (e.g. the sum over the NICs
        that carry the transfer). [B/s]
    latency : float
        Fixed cost of the transfer (setup, first byte), >= 0. [s]

    Examples
    --------
    >>> kv_transfer_time(1e9, 50e9)
    0.02
    """
    b = as_number("kv_bytes", kv_bytes, low=0, allow_array=False)
    bw = as_number("bandwidth", bandwidth, low=0, low_inclusive=False,
                   allow_array=False)
    lat = as_number("latency", latency, low=0, allow_array=False)
    return float(lat + b / bw)


def ttft_share(transfer_s, prefill_s):
    """Share of the time to first token spent moving the KV cache, when the transfer
    follows the prefill without overlap: ``transfer / (prefill + transfer)``. [1]

    >>> ttft_share(1.0, 3.0)
    0.25
    """
    t = as_number("transfer_s", transfer_s, low=0, allow_array=False)
    p = as_number("prefill_s", prefill_s, low=0, allow_array=False)
    if t + p <= 0:
        raise ValueError("transfer_s + prefill_s must be more than 0 s; got 0")
    return float(t / (t + p))
