r"""Prefill (forward) of one tensor-parallel shard of a SwiGLU / GQA layer on one GPU.

The time one TP shard of a Llama-style layer takes to run ``batch`` prompts of ``prompt``
tokens forward (the prefill that produces the first token), compute and memory only (no
communication), built from its mechanisms and fitted to our 1x H200 prefill runs
(``measurements/raw/h200-x1-2026-12-02-prefill``, compiled as a serving engine runs a
layer) by ``scripts/fit_prefill.py``; constants and held-out errors in
``data/prefill_model.yaml``.
"""
from __future__ import annotations

import functools

import numpy as np
import yaml

from .. import specs
from .._validate import check_choice, check_int
from ..parallelism.efficiency import peak_flops
from .decode import HEAD_DIM, PRECISIONS, check_heads, weight_element_bytes

__all__ = ["PREFILL_CONSTANTS", "ACTIVATION_ELEMENT_BYTES", "CAST_BYTES_PER_ELEMENT",
           "prefill_constants", "prefill_checks", "prefill_layer_terms",
           "prefill_terms_time", "prefill_layer_time"]

#: Names of the fitted constants, in ``data/prefill_model.yaml``.
PREFILL_CONSTANTS = ("fixed_s", "gemm_efficiency_bf16", "gemm_efficiency_fp8",
                     "attention_efficiency", "activation_bandwidth_fraction",
                     "fp8_fixed_s")
#: Bytes per activation element (BF16). [B]
ACTIVATION_ELEMENT_BYTES = 2
#: HBM bytes per activation element cast to FP8 with one scale per tensor: the amax
#: reduction reads it (2 B), the cast reads it again (2 B) and writes FP8 (1 B). [B]
CAST_BYTES_PER_ELEMENT = 5


@functools.lru_cache(maxsize=None)
def _table():
    return yaml.safe_load(specs.read_data_text("prefill_model.yaml"))


def prefill_constants():
    """The fitted constants as ``{name: value}`` (SI units).

    >>> c = prefill_constants()
    >>> 0 < c["attention_efficiency"] < c["gemm_efficiency_bf16"] <= 1
    True
    """
    return {n: float(_table()[n]["value"]) for n in PREFILL_CONSTANTS}


def prefill_checks():
    """The stored errors (model / measured - 1) on the fit and held-out rows by prompt
    band and precision, and those of the training-efficiency path it replaces
    (``before_*``), as written by ``scripts/fit_prefill.py``."""
    import copy
    return copy.deepcopy(_table()["checks"]["value"])


def prefill_layer_terms(hidden, heads, kv_heads, ffn_hidden, tp, batch, prompt, *,
                        precision="bf16"):
    r"""FLOPs and bytes of the prefill of one TP shard of one layer.

    Parameters
    ----------
    hidden, heads, kv_heads, ffn_hidden, tp : int
        Layer shape and TP degree, as in :func:`gpulab.inference.decode_layer_terms`.
    batch : int
        Prompts prefilled together, in [1, 1e4].
    prompt : int
        Tokens per prompt, in [1, 1e6].
    precision : {"bf16", "fp8"}
        Weight precision (attention and activations stay BF16).

    Returns
    -------
    dict
        ``gemm_flops`` and ``weight_bytes``: arrays of the four GEMMs (QKV, output,
        gate/up, down), ``2 T k n`` [FLOP] and ``k n`` x bytes per weight [B];
        ``attention_flops``: causal, ``2 T s (a/t) 128`` [FLOP] (half of the
        ``4 T s (a/t) 128`` of full attention); ``activation_bytes``: the BF16 inputs
        and outputs of the GEMMs, ``2 T sum(k + n)`` [B]; ``cast_bytes``: FP8 only,
        :data:`CAST_BYTES_PER_ELEMENT` per GEMM input element ``T sum(k)`` [B].
        ``T = batch x prompt``.

    Examples
    --------
    Llama-3-70B at TP 8, one 2048-token prompt:

    >>> t = prefill_layer_terms(8192, 64, 8, 28672, 8, 1, 2048)
    >>> round(float(t["gemm_flops"].sum()) / 1e12, 3), round(t["attention_flops"] / 1e9, 1)
    (0.438, 8.6)
    """
    h, a, kv, f, t = check_heads(hidden, heads, kv_heads, ffn_hidden, tp)
    b = check_int("batch", batch, low=1, high=10**4)
    s = check_int("prompt", prompt, low=1, high=10**6)
    e = weight_element_bytes(precision)
    q = a * HEAD_DIM / t
    kv_shard = max(1, kv // t) * HEAD_DIM
    k = np.array([h, q, h, f / t], dtype=float)
    n = np.array([q + 2 * kv_shard, h, 2 * f / t, h], dtype=float)
    tokens = float(b * s)
    return {"gemm_flops": 2.0 * tokens * k * n, "weight_bytes": k * n * e,
            "attention_flops": 2.0 * tokens * s * (a / t) * HEAD_DIM,
            "activation_bytes": ACTIVATION_ELEMENT_BYTES * tokens * float((k + n).sum()),
            "cast_bytes": (CAST_BYTES_PER_ELEMENT * tokens * float(k.sum())
                           if precision == "fp8" else 0.0)}


def prefill_terms_time(terms, gpu_spec, precision, coef):
    r"""Time of a shard from its :func:`prefill_layer_terms` and constants ``coef``. [s]

    ``terms`` may hold arrays of rows (``gemm_flops`` and ``weight_bytes`` of shape
    ``(..., 4)``), as the fitting script passes them. :func:`prefill_layer_time`
    documents the equation.
    """
    check_choice("precision", precision, PRECISIONS)
    peak = peak_flops(gpu_spec, precision)
    hbm = gpu_spec.memory_bandwidth
    eta = coef["gemm_efficiency_fp8" if precision == "fp8" else "gemm_efficiency_bf16"]
    gemm = np.sum(np.maximum(np.asarray(terms["gemm_flops"]) / (eta * peak),
                             np.asarray(terms["weight_bytes"]) / hbm), axis=-1)
    attn = terms["attention_flops"] / (coef["attention_efficiency"]
                                       * peak_flops(gpu_spec, "bf16"))
    mem = (terms["activation_bytes"] + terms["cast_bytes"]) / (
        coef["activation_bandwidth_fraction"] * hbm)
    out = coef["fixed_s"] + gemm + attn + mem
    if precision == "fp8":
        out = out + coef["fp8_fixed_s"]
    return float(out) if np.ndim(out) == 0 else out


def prefill_layer_time(hidden, heads, kv_heads, ffn_hidden, tp, batch, prompt, *,
                       gpu="H200", precision="bf16"):
    r"""Time of the prefill of one TP shard of one SwiGLU / GQA layer. [s]

    Compute and memory only: no TP all-reduce (see :func:`gpulab.inference.prefill_time`).

    Parameters
    ----------
    hidden, heads, kv_heads, ffn_hidden : int
        Layer shape; head dimension 128 (:data:`gpulab.inference.HEAD_DIM`).
        ``kv_heads`` divides ``heads``.
    tp : int
        Tensor-parallel degree; divides ``heads`` and ``ffn_hidden``, and divides or is
        a multiple of ``kv_heads``.
    batch : int
        Prompts prefilled together, in [1, 1e4].
    prompt : int
        Tokens per prompt, in [1, 1e6].
    gpu : str
        A GPU of ``data/gpus.csv`` (``gpulab specs gpus``).
    precision : {"bf16", "fp8"}
        Weight precision: ``fp8`` is an E4M3 checkpoint with one scale per tensor and
        the activations cast per tensor on the fly; attention stays BF16.

    Returns
    -------
    float
        Seconds per layer shard for the whole batch.

    Notes
    -----
    With :math:`T = b s` tokens and the four GEMMs :math:`j` of the shard (weights
    :math:`k_j \times n_j`):

    .. math::

        t = t_0 + \sum_j \max\Bigl(\frac{2 T k_j n_j}{\eta_p P_p},
            \frac{e_p k_j n_j}{B}\Bigr) + \frac{2 T s (a/t)\,128}{\eta_a P_\mathrm{bf16}}
            + \frac{A + [\mathrm{fp8}]\,C}{f_a B} + [\mathrm{fp8}]\,t_8

    * GEMMs at a fraction :math:`\eta_p` of the dense Tensor Core peak :math:`P_p` of
      the weight precision, or reading their weights (:math:`e_p` bytes each) once at
      the spec HBM bandwidth :math:`B` if that takes longer (only for prompts of a few
      hundred tokens or fewer: every measured row is compute-bound there);
    * causal attention (flash attention skips the masked half: :math:`2 T s (a/t) 128`
      FLOPs, half the full count of Narayanan et al. 2021) at :math:`\eta_a` of the
      BF16 peak;
    * activation traffic :math:`A = 2 T \sum_j (k_j + n_j)` bytes (the GEMMs' BF16
      inputs and outputs) at a fraction :math:`f_a` of :math:`B`; the norms, rotary
      embedding, SiLU and residual kernels move more than that count, which
      :math:`f_a` absorbs; in FP8 the per-tensor casts of the GEMM inputs,
      :math:`C = 5 T \sum_j k_j` bytes (amax pass, cast pass);
    * a fixed cost :math:`t_0` of the shard's kernels, and :math:`t_8` more in FP8
      (the amax and cast kernels).

    Six constants, fitted ONLY on the Llama 3 8B / 70B single-prompt rows of our runs
    (``scripts/fit_prefill.py``); the other hidden size and the batch-4 rows are held
    out (:func:`prefill_checks`).

    =====================================  ==========================================
    Assumption                             Note
    =====================================  ==========================================
    other GPUs                             ASSUMED: the same fractions of their own
                                           Tensor Core peaks and HBM bandwidth, the
                                           same fixed costs (measured on H200 only)
    prompts outside 512-32768 tokens       extrapolated (the measured range)
    no KV-cache write, no sampling         as in the runs; the cache's K and V are
                                           the attention inputs, already counted
    =====================================  ==========================================

    Examples
    --------
    Llama-3-70B, one layer shard at TP 8, one 2048-token prompt, on H200:

    >>> t = prefill_layer_time(8192, 64, 8, 28672, 8, 1, 2048)
    >>> 600e-6 < t < 900e-6
    True
    """
    check_choice("gpu", gpu, specs.gpu_names())
    terms = prefill_layer_terms(hidden, heads, kv_heads, ffn_hidden, tp, batch, prompt,
                                precision=precision)
    return prefill_terms_time(terms, specs.gpu(gpu), precision, prefill_constants())
