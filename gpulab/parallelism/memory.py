"""Memory per GPU: weights, gradients, optimizer states (ZeRO stages), activations
(Korthikanti et al. 2022) for training, and weights plus KV cache for inference.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


from .._validate import as_number, check_choice, check_int
from .model import RECOMPUTE, param_counts, default_value, check_flag, check_positive, seq_len_of, as_model, check_zero


# --- memory ------------------------------------------------------------------------
def activation_memory_per_layer(spec, tp=1, *, micro_batch=1, seq_len=None,
                                sequence_parallel=False, recompute="none"):
    r"""Activation memory of one transformer layer on one GPU (16-bit activations).

    Parameters
    ----------
    spec : ModelSpec or str
    tp : int
        Tensor-parallel degree t.
    micro_batch : int
        Micro-batch size b. [sequences]
    seq_len : int, optional
        Sequence length s (default: the model's).
    sequence_parallel : bool
        Megatron's sequence parallelism (shards LayerNorm/dropout activations).
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float
        [B]

    Notes
    -----
    Korthikanti et al. 2022, Table 2 (per layer, a heads, hidden h):

    ==========================  =========================================
    Case                        Bytes per layer
    ==========================  =========================================
    no parallelism              :math:`sbh(34 + 5as/h)`
    TP                          :math:`sbh(10 + 24/t + 5as/(ht))`
    TP + SP                     :math:`sbh(34/t + 5as/(ht))`
    selective recompute         drop the :math:`5as/h` term
    full recompute              :math:`2sbh` (the layer input; /t with SP)
    ==========================  =========================================

    =========================================  ====================================
    Assumption                                 Source
    =========================================  ====================================
    GPT layer: MHA, 4h GELU MLP, dropout       Korthikanti et al. 2022, section 4.1
    same constants for GQA/SwiGLU models       approximation (ours)
    FlashAttention ~ selective (no score term) Korthikanti 2022; FlashAttention
    full recompute with SP stores 1/t input    Megatron stores the SP-sharded input
    =========================================  ====================================

    Examples
    --------
    >>> a = activation_memory_per_layer("13b", micro_batch=1, seq_len=2048)
    >>> a == 2048 * 5120 * (34 + 5 * 40 * 2048 / 5120)
    True
    """
    m = as_model(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    b = check_positive("micro_batch", micro_batch)
    s = seq_len_of(m, seq_len)
    sp = check_flag("sequence_parallel", sequence_parallel) and t > 1
    check_choice("recompute", recompute, RECOMPUTE)
    sbh = float(s) * b * m.hidden
    if recompute == "full":
        return 2.0 * sbh / (t if sp else 1)
    score = 0.0 if recompute == "selective" else 5.0 * m.heads * s / (m.hidden * t)
    if sp:
        return sbh * (34.0 / t + score)
    if t == 1:
        return sbh * (34.0 + score)
    return sbh * (10.0 + 24.0 / t + score)


@dataclass(frozen=True)
class TrainingMemory:
    """Training memory of the most loaded GPU (the first pipeline stage). [B]

    ``weights + gradients + optimizer + activations == total``; ``params_per_gpu``
    is the number of parameters the GPU's stage holds before ZeRO sharding.
    """

    weights: float
    gradients: float
    optimizer: float
    activations: float
    total: float
    params_per_gpu: float
    in_flight: int

    def as_dict(self):
        """The byte counts as a dict (for tables and bar charts)."""
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations,
                "total": self.total}


def stage_param_count(m, tp, pp):
    """Parameters of the most loaded pipeline stage, per TP rank."""
    c = param_counts(m)
    layers = m.layers / pp * c["layer"]
    first = layers + c["embedding"] + c["positions"]
    if pp == 1:
        return (first + c["output"] + c["final_norm"]) / tp
    # Megatron keeps a copy of a tied embedding on the last stage
    last = layers + (c["embedding"] if m.tied_embeddings else c["output"]) \
        + c["final_norm"]
    return max(first, last) / tp


def training_memory(spec, tp=1, pp=1, dp=1, *, micro_batch=1, seq_len=None, zero=0,
                    sequence_parallel=False, recompute="none", micro_batches=None,
                    virtual=1, weight_bytes=None, grad_bytes=None,
                    optimizer_bytes=None):
    r"""Memory per GPU for mixed-precision Adam training of a TP x PP x DP layout.

    Parameters
    ----------
    spec : ModelSpec or str
    tp, pp, dp : int
        Parallel degrees.
    micro_batch : int
        Sequences per micro-batch b.
    seq_len : int, optional
        Sequence length (default: the model's).
    zero : {0, 1, 2, 3}
        ZeRO stage: 1 shards the optimizer states over DP (= Megatron's
        ``--use-distributed-optimizer``), 2 also the gradients, 3 also the weights.
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    micro_batches : int, optional
        Micro-batches per step m (default: at least ``pp``). With fewer than ``pp``
        only ``m`` are ever in flight.
    virtual : int
        Virtual stages per GPU (interleaved 1F1B).
    weight_bytes, grad_bytes, optimizer_bytes : float, optional
        Bytes per parameter (defaults 2, 2 and 12 from
        ``data/parallelism_assumptions.yaml``).

    Returns
    -------
    TrainingMemory

    Notes
    -----
    With :math:`\Psi` parameters on the GPU's stage (:math:`\approx \Psi_\text{model}
    /(t\,p)`; the first stage also holds the embedding) and DP degree :math:`d`:

    .. math::

        M = \Psi\left(\frac{2}{d_w} + \frac{2}{d_g} + \frac{12}{d_o}\right)
            + \frac{L}{p}\,A_\text{layer}\,\min(p, m)
            \left(1 + \frac{p-1}{p\,v}\right)_{v>1}

    where :math:`d_o = d` from ZeRO-1, :math:`d_g = d` from ZeRO-2, :math:`d_w = d`
    at ZeRO-3 (else 1), and :math:`A_\text{layer}` is
    :func:`activation_memory_per_layer`. 2 + 2 + 12 = 16 bytes per parameter is
    ZeRO's accounting (BF16 weights and gradients; FP32 master weights, Adam
    momentum and variance).

    ===================================  ==========================================
    Assumption                           Source
    ===================================  ==========================================
    16 B/param mixed-precision Adam      Rajbhandari et al. 2020 (ZeRO), sec. 3.1
    FP32 grads (Megatron default) 18 B   Megatron-LM distributed-optimizer docs
    ZeRO stages shard over DP only       Rajbhandari et al. 2020, sec. 5
    1F1B: first stage holds p micro-     Narayanan et al. 2021, sec. 2.2;
    batches of L/p layers = L layers     Korthikanti et al. 2022, sec. 4.2.3
    interleaving x (1 + (p-1)/(p v))     Korthikanti et al. 2022, sec. 4.2.3
    embedding/logit activations ignored  small vs L layers (Korthikanti, 4.3)
    norms split over TP like the rest    they are replicated; < 0.01% of params
    ===================================  ==========================================

    Examples
    --------
    >>> from gpulab.parallelism import parameter_count
    >>> m = training_memory("70b")            # one GPU holds everything
    >>> (m.weights + m.gradients + m.optimizer) / parameter_count("70b")
    16.0
    >>> z3 = training_memory("70b", dp=8, zero=3)
    >>> z3.weights * 8 == m.weights
    True
    """
    m = as_model(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    p = check_int("pp", pp, low=1, high=1_000_000)
    d = check_int("dp", dp, low=1, high=1_000_000)
    b = check_positive("micro_batch", micro_batch)
    s = seq_len_of(m, seq_len)
    z = check_zero(zero)
    sp = check_flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    mb = p if micro_batches is None else check_positive("micro_batches", micro_batches)
    v = check_int("virtual", virtual, low=1, high=1_000_000)
    wb = default_value("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    gb = default_value("grad_bytes", grad_bytes, "grad_bytes", low=0, low_inclusive=False)
    ob = default_value("optimizer_bytes", optimizer_bytes, "optimizer_bytes", low=0)
    psi = stage_param_count(m, t, p)
    weights = psi * wb / (d if z >= 3 else 1)
    grads = psi * gb / (d if z >= 2 else 1)
    opt = psi * ob / (d if z >= 1 else 1)
    per_layer = activation_memory_per_layer(m, t, micro_batch=b, seq_len=s,
                                            sequence_parallel=sp,
                                            recompute=recompute)
    in_flight = min(p, mb)
    acts = m.layers / p * per_layer * in_flight
    if v > 1 and p > 1:
        acts *= 1.0 + (p - 1) / (p * v)
    total = weights + grads + opt + acts
    return TrainingMemory(weights, grads, opt, acts, total, psi, in_flight)


@dataclass(frozen=True)
class InferenceMemory:
    """Inference memory per GPU: ``weights + kv_cache == total``. [B]"""

    weights: float
    kv_cache: float
    total: float
    kv_heads_per_gpu: int

    def as_dict(self):
        """The byte counts as a dict."""
        return {"weights": self.weights, "kv_cache": self.kv_cache,
                "total": self.total}


def inference_memory(spec, tp=1, pp=1, *, batch=1, seq_len=None, weight_bytes=None,
                     kv_dtype_bytes=2):
    r"""Memory per GPU for serving: weights plus the KV cache.

    Parameters
    ----------
    spec : ModelSpec or str
    tp, pp : int
        Tensor- and pipeline-parallel degrees.
    batch : int
        Sequences in the batch.
    seq_len : int, optional
        Cached tokens per sequence (default: the model's sequence length).
    weight_bytes : float, optional
        Bytes per weight (default 2: BF16).
    kv_dtype_bytes : float
        Bytes per cached key/value element (2: BF16, 1: FP8).

    Returns
    -------
    InferenceMemory

    Notes
    -----
    .. math::

        M_\text{KV} = 2 \cdot \frac{L}{p} \cdot \lceil g/t \rceil \cdot d \cdot s
        \cdot B \cdot \text{bytes}

    (keys and values, :math:`g` KV heads of size :math:`d`). When :math:`t > g`
    each KV head is replicated on :math:`t/g` GPUs (as vLLM does), so a GPU keeps
    one head, not a fraction.

    =========================================  ==================================
    Assumption                                 Source
    =========================================  ==================================
    no activation memory beyond the KV cache   small at decode time
    KV heads replicated when t > g             vLLM's GQA tensor parallelism
    =========================================  ==================================

    Examples
    --------
    >>> m = inference_memory("llama3-70b", tp=8, batch=1, seq_len=8192)
    >>> round(m.kv_cache / 2**20), m.kv_heads_per_gpu      # 2.5 GiB / 8 GPUs
    (320, 1)
    """
    m = as_model(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    p = check_int("pp", pp, low=1, high=1_000_000)
    bsz = check_positive("batch", batch)
    s = seq_len_of(m, seq_len)
    wb = default_value("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    kb = as_number("kv_dtype_bytes", kv_dtype_bytes, low=0, low_inclusive=False,
                   allow_array=False)
    weights = stage_param_count(m, t, p) * wb
    heads = math.ceil(m.kv_heads / t)
    kv = 2.0 * m.layers / p * heads * m.head_dim * s * bsz * kb
    return InferenceMemory(weights, kv, weights + kv, heads)
