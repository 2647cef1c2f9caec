r"""Decode step of one tensor-parallel shard of a SwiGLU / GQA layer on one GPU.

The time of one decode step (one new token for each of ``batch`` sequences) through one
TP shard of a Llama-style layer, compute and memory only (no communication), fitted to
our 1x H200 runs (``measurements/raw/h200-x1-2026-12-02-decode``) by
``scripts/fit_decode.py``; constants and held-out errors in ``data/decode_model.yaml``.
"""
from __future__ import annotations

import functools

import numpy as np
import yaml

from .. import specs
from .._validate import check_choice, check_int

__all__ = ["HEAD_DIM", "PRECISIONS", "RECIPES", "KV_ELEMENT_BYTES", "decode_constants",
           "decode_checks", "decode_layer_terms", "decode_terms_time",
           "decode_layer_time", "weight_element_bytes", "check_heads",
           "bandwidth_floor"]

#: Head dimension of every modelled layer (the measured shapes use 128). [1]
HEAD_DIM = 128
#: Weight precisions of the decode model: ``bf16``, or ``fp8`` (E4M3 weights, one
#: scale per tensor, activations cast per tensor; KV cache and attention stay BF16).
PRECISIONS = ("bf16", "fp8")
#: Execution recipes: ``compiled`` (torch.compile + CUDA graphs, production-like) and
#: ``eager`` (every operation its own kernel, under CUDA graphs).
RECIPES = ("compiled", "eager")
#: Bytes per element of the KV cache (BF16 in every measured row). [B]
KV_ELEMENT_BYTES = 2
#: Names of the fitted constants of one recipe, in ``data/decode_model.yaml``.
CONSTANTS = ("fixed_s", "weight_bandwidth_fraction", "kv_bandwidth_fraction",
             "gemm_efficiency_bf16", "gemm_efficiency_fp8", "attention_efficiency",
             "smooth_max_power", "fp8_fixed_s", "fp8_cast_s_per_element")


def weight_element_bytes(precision):
    """Bytes per weight element of ``precision`` (``bf16``: 2, ``fp8``: 1). [B]

    >>> weight_element_bytes("fp8")
    1
    """
    check_choice("precision", precision, PRECISIONS)
    return 1 if precision == "fp8" else 2


@functools.lru_cache(maxsize=None)
def _table():
    return yaml.safe_load(specs.read_data_text("decode_model.yaml"))


def decode_constants(recipe="compiled"):
    """The fitted constants of ``recipe`` as ``{name: value}`` (SI units).

    >>> c = decode_constants()
    >>> 10e-6 < c["fixed_s"] < 100e-6
    True
    """
    check_choice("recipe", recipe, RECIPES)
    return {n: float(_table()[recipe][n]["value"]) for n in CONSTANTS}


def decode_checks():
    """The stored errors of the fit (model / measured - 1) on fit and held-out rows,
    per recipe and band, as written by ``scripts/fit_decode.py``."""
    import copy
    return copy.deepcopy(_table()["checks"]["value"])


def check_heads(hidden, heads, kv_heads, ffn_hidden, tp):
    """Validated ``(hidden, heads, kv_heads, ffn_hidden, tp)`` of a GQA layer: ``kv_heads``
    divides ``heads``, ``tp`` divides ``heads``, and ``tp`` and ``kv_heads`` divide one
    another (KV heads are split, or replicated when ``tp > kv_heads``)."""
    h = check_int("hidden", hidden, low=1, high=10**6)
    a = check_int("heads", heads, low=1, high=4096)
    kv = check_int("kv_heads", kv_heads, low=1, high=4096)
    f = check_int("ffn_hidden", ffn_hidden, low=1, high=10**7)
    t = check_int("tp", tp, low=1, high=4096)
    # relations name both parameters (either may be the one that is off)
    if kv > a:
        raise ValueError(f"kv_heads ({kv}) must not exceed heads ({a})")
    if t > a:
        raise ValueError(f"tp ({t}) must not exceed heads ({a})")
    if a % kv:
        raise ValueError(f"kv_heads must divide heads ({a}); got {kv}")
    if a % t:
        raise ValueError(f"tp must divide heads ({a}); got {t}")
    if kv % t and t % kv:
        raise ValueError(f"tp must divide kv_heads ({kv}) or be a multiple of it; "
                         f"got {t}")
    if f % t:
        raise ValueError(f"tp must divide ffn_hidden ({f}); got {t}")
    return h, a, kv, f, t


def decode_layer_terms(hidden, heads, kv_heads, ffn_hidden, tp, batch, context, *,
                       precision="bf16"):
    r"""Bytes and FLOPs of one decode step through one TP shard of one layer.

    Parameters
    ----------
    hidden, heads, kv_heads, ffn_hidden : int
        Layer shape (head dimension :data:`HEAD_DIM`).
    tp : int
        Tensor-parallel degree (Megatron split: QKV and gate/up by columns, output and
        down by rows).
    batch : int
        Sequences decoded together (one new token each).
    context : int
        Tokens already in each sequence's KV cache.
    precision : {"bf16", "fp8"}
        Weight precision; the KV cache is BF16.

    Returns
    -------
    dict
        ``weight_bytes`` and ``kv_bytes`` read from HBM [B]; ``weight_elements`` [1];
        ``gemm_flops`` (``2 batch weight_elements``) and ``attention_flops``
        (``4 batch context heads/tp 128``) [FLOP]; ``cast_elements``: activation elements
        cast to FP8 (``batch (2 hidden + (heads 128 + ffn)/tp)``) [1].

    Examples
    --------
    Llama-3-70B, TP 8, batch 32, 8192 tokens of context, BF16:

    >>> t = decode_layer_terms(8192, 64, 8, 28672, 8, 32, 8192)
    >>> round(t["weight_bytes"] / 1e6, 1), round(t["kv_bytes"] / 2**20)
    (213.9, 128)
    """
    h, a, kv, f, t = check_heads(hidden, heads, kv_heads, ffn_hidden, tp)
    b = check_int("batch", batch, low=1, high=10**6)
    c = check_int("context", context, low=1, high=10**8)
    e = weight_element_bytes(precision)
    q, kv_out = a * HEAD_DIM, kv * HEAD_DIM
    elements = (h * (q + 2 * kv_out) + q * h + 3 * h * f) / t
    kv_shard = max(1, kv // t)
    return {"weight_elements": elements, "weight_bytes": elements * e,
            "kv_bytes": 2.0 * b * c * kv_shard * HEAD_DIM * KV_ELEMENT_BYTES,
            "gemm_flops": 2.0 * b * elements,
            "attention_flops": 4.0 * b * c * (a / t) * HEAD_DIM,
            "cast_elements": b * (2.0 * h + (q + f) / t)}


def decode_terms_time(terms, gpu_spec, precision, coef):
    r"""Time of a shard from its :func:`decode_layer_terms` and constants ``coef``. [s]

    .. math::

        t = t_0 + \left(t_\mathrm{mem}^p + t_\mathrm{math}^p\right)^{1/p}
            + [\mathrm{fp8}]\,(t_8 + c_8 N_\mathrm{cast}),\quad
        t_\mathrm{mem} = \frac{W}{f_w B_\mathrm{HBM}} + \frac{K}{f_k B_\mathrm{HBM}},\quad
        t_\mathrm{math} = \frac{F_\mathrm{gemm}}{\eta_g P} + \frac{F_\mathrm{attn}}
            {\eta_a P_\mathrm{bf16}}

    (:func:`decode_layer_time` documents the symbols.)
    """
    peak = gpu_spec.fp8_dense_flops if precision == "fp8" else gpu_spec.fp16_dense_flops
    if peak is None:
        raise ValueError(f"precision 'fp8' needs a GPU with FP8 Tensor Cores; "
                         f"{gpu_spec.name} has none (use 'bf16')")
    hbm = gpu_spec.memory_bandwidth
    mem = (terms["weight_bytes"] / (coef["weight_bandwidth_fraction"] * hbm)
           + terms["kv_bytes"] / (coef["kv_bandwidth_fraction"] * hbm))
    eta = coef["gemm_efficiency_fp8" if precision == "fp8" else "gemm_efficiency_bf16"]
    math_ = (terms["gemm_flops"] / (eta * peak) + terms["attention_flops"]
             / (coef["attention_efficiency"] * gpu_spec.fp16_dense_flops))
    p = coef["smooth_max_power"]
    big = np.maximum(mem, math_)
    both = big * ((mem / big) ** p + (math_ / big) ** p) ** (1.0 / p)
    extra = (coef["fp8_fixed_s"] + coef["fp8_cast_s_per_element"]
             * terms["cast_elements"]) if precision == "fp8" else 0.0
    out = coef["fixed_s"] + both + extra
    return float(out) if np.ndim(out) == 0 else out


def decode_layer_time(hidden, heads, kv_heads, ffn_hidden, tp, batch, context, *,
                      gpu="H200", precision="bf16", recipe="compiled"):
    r"""Time of one decode step through one TP shard of one SwiGLU / GQA layer. [s]

    Compute and memory only: no TP all-reduce (see :func:`gpulab.inference.decode_step`).

    Parameters
    ----------
    hidden, heads, kv_heads, ffn_hidden : int
        Layer shape; head dimension 128 (:data:`HEAD_DIM`). ``kv_heads`` divides
        ``heads``.
    tp : int
        Tensor-parallel degree; divides ``heads`` and ``ffn_hidden``, and divides or
        is a multiple of ``kv_heads`` (KV heads are replicated beyond ``kv_heads``).
    batch : int
        Sequences decoded together, one token each, in [1, 1e6].
    context : int
        Tokens in each sequence's KV cache, in [1, 1e8].
    gpu : str
        A GPU of ``data/gpus.csv`` (``gpulab specs gpus``).
    precision : {"bf16", "fp8"}
        Weight precision (the KV cache and attention are BF16).
    recipe : {"compiled", "eager"}
        ``compiled``: torch.compile + CUDA graphs (how serving engines run a layer);
        ``eager``: every operation its own kernel, under CUDA graphs.

    Returns
    -------
    float
        Seconds per layer and decode step.

    Notes
    -----
    .. math::

        t = t_0 + \left(t_\mathrm{mem}^p + t_\mathrm{math}^p\right)^{1/p}
            + [\mathrm{fp8}]\,(t_8 + c_8 N_\mathrm{cast}),

    with :math:`t_\mathrm{mem} = W/(f_w B) + K/(f_k B)` (weight bytes :math:`W` and
    KV-cache bytes :math:`K` of the shard read once from HBM at fractions
    :math:`f_w, f_k` of the GPU's HBM bandwidth :math:`B`; HBM bandwidth has no
    direction: reads and writes share it, GB = 1e9 B) and
    :math:`t_\mathrm{math} = 2 b N_w/(\eta_g P) + 4 b c (a/t) 128/(\eta_a P_{bf16})`
    (GEMMs at the Tensor Core peak :math:`P` of the weight precision, attention at the
    BF16 peak). :math:`t_0` is the fixed cost of the layer's kernels under CUDA graphs;
    FP8 adds a fixed :math:`t_8` and :math:`c_8` per activation element cast.
    :math:`p` is a smooth maximum (``p = 1``: the sum, no overlap; ``p -> inf``: the
    larger). All constants are fitted on the fit grid of our 1x H200 runs only
    (``scripts/fit_decode.py``); :func:`decode_checks` holds the held-out errors.

    =====================================  ==========================================
    Assumption                             Note
    =====================================  ==========================================
    other GPUs                             ASSUMED: the same fractions of their own HBM
                                           bandwidth and Tensor Core peak, the same
                                           fixed costs (not measured)
    weights and KV read once per step      no L2 reuse across layers (our runs stack
                                           enough layers to defeat the L2 cache)
    =====================================  ==========================================

    Examples
    --------
    Llama-3-70B, one layer shard at TP 8, batch 32, 8192 tokens, on H200:

    >>> t = decode_layer_time(8192, 64, 8, 28672, 8, 32, 8192)
    >>> 80e-6 < t < 140e-6
    True
    """
    check_choice("recipe", recipe, RECIPES)
    check_choice("gpu", gpu, specs.gpu_names())
    terms = decode_layer_terms(hidden, heads, kv_heads, ffn_hidden, tp, batch, context,
                               precision=precision)
    return decode_terms_time(terms, specs.gpu(gpu), precision, decode_constants(recipe))


def bandwidth_floor(hidden, heads, kv_heads, ffn_hidden, tp, batch, context, *,
                    gpu="H200", precision="bf16"):
    """Lower bound: weight + KV bytes / the GPU's spec HBM bandwidth. [s]

    >>> bandwidth_floor(8192, 64, 8, 28672, 1, 1, 2048) * 1e6 > 300
    True
    """
    check_choice("gpu", gpu, specs.gpu_names())
    t = decode_layer_terms(hidden, heads, kv_heads, ffn_hidden, tp, batch, context,
                           precision=precision)
    return (t["weight_bytes"] + t["kv_bytes"]) / specs.gpu(gpu).memory_bandwidth

