"""Memory per GPU: weights, gradients, master weights and Adam states (sharded by
ZeRO stage / Megatron's distributed optimizer), activations (Korthikanti et al. 2022)
for training, and weights plus KV cache for inference.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import specs
from .._validate import as_number, check_choice, check_int, finite_answer
from .model import (RECOMPUTE, param_counts, default_value, check_flag,
                    check_positive, seq_len_of, as_model, check_zero, assumption)


# --- memory ------------------------------------------------------------------------
def activation_memory_per_layer(spec, tp=1, *, micro_batch=1, seq_len=None,
                                sequence_parallel=False, recompute="none",
                                fp8_inputs=False):
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
    recompute : {"none", "selective", "full", "per-op"}
    fp8_inputs : bool
        The four linear layers' inputs are saved as their FP8 casts (1 byte), as
        Transformer Engine's FP8 layers do (``transformer_engine/pytorch/module/
        linear.py`` lines 372-390 at v2.9: the quantized input is kept for the
        backward pass unless ``save_original_input``, False by default, line 1089).
        Of Korthikanti's 34 bytes per ``sbh`` those inputs are 14 (QKV 2, attention
        output 2, fc1 2, fc2 8), so 7 are saved (with SP all over ``t``; with TP
        alone the QKV and fc1 inputs are replicated). Applies to ``"none"`` and
        ``"selective"``; torchao saves the BF16 inputs (``fp8_memory_overhead``).

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
    per-op (torchtitan)         the tensors its policy saves (below)
    ==========================  =========================================

    Per-op selective checkpointing (torchtitan, :func:`per_op_recomputed_matrices`)
    keeps the layer input, the outputs of the saved matmuls (wq, wv, w1, w2; 16-bit),
    the attention output and, with SP, the reduce-scatter outputs:
    :math:`2sb\,(h_\text{in} + (h + d_{kv} + h + f)/t + h)` where the layer input
    is :math:`h/t` with SP and the last term (w2's output, full width before the
    reduction) becomes :math:`h/t` with SP (the saved reduce-scatter): our count of
    the saved tensors, ignoring the small softmax statistics.

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
    if recompute == "per-op":
        kv = m.kv_heads * (m.hidden // m.heads)
        ffn = 0 if m.num_experts else m.ffn_hidden   # grouped expert GEMMs: not counted
        saved = (2 * m.hidden + kv + ffn) / (m.hidden * t)
        width = 1.0 / t if sp else 1.0
        return 2.0 * sbh * (width + saved + width)
    score = 0.0 if recompute == "selective" else 5.0 * m.heads * s / (m.hidden * t)
    fp8 = check_flag("fp8_inputs", fp8_inputs)
    if sp:
        return sbh * (34.0 / t + score - (7.0 / t if fp8 else 0.0))
    if t == 1:
        return sbh * (34.0 + score - (7.0 if fp8 else 0.0))
    return sbh * (10.0 + 24.0 / t + score - ((2.0 + 5.0 / t) if fp8 else 0.0))


#: Number formats of parameters and gradients, and their sizes. [B]
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: The formats :func:`model_state_bytes` accepts.
DTYPES = tuple(DTYPE_BYTES)
#: The parts of the model states, in the order of :func:`model_state_bytes`.
STATE_PARTS = ("weights", "gradients", "master", "grad_copy", "adam")


def _dtype(name, value, default_key):
    if value is None:
        value = assumption(default_key)
    return check_choice(name, value, DTYPES)


def model_state_bytes(dp=1, zero=0, *, param_dtype=None, grad_dtype=None,
                      fp32_grad_copy=None, weight_bytes=None, grad_bytes=None):
    r"""Bytes per parameter of mixed-precision Adam's model states on one GPU.

    Parameters
    ----------
    dp : int
        Data-parallel degree d (the ZeRO sharding group).
    zero : {0, 1, 2, 3}
        What is sharded over the d GPUs: 0 nothing; 1 the optimizer's states
        (master weights, fp32 gradient copy, Adam m and v), which is Megatron-LM's
        distributed optimizer (``--use-distributed-optimizer``) and ZeRO-1; 2 also
        the gradients (ZeRO-2); 3 also the weights (ZeRO-3, FSDP full sharding).
    param_dtype : {"bf16", "fp16", "fp32"}, optional
        Format of the model's working weights (default ``"bf16"``, Megatron ``--bf16``).
    grad_dtype : {"bf16", "fp16", "fp32"}, optional
        Format of the gradient buffer the backward pass accumulates into and DP
        reduces. Default as Megatron-LM: ``"fp32"`` with bf16 weights (it forces
        ``--accumulate-allreduce-grads-in-fp32`` for bf16), else the weights' format.
    fp32_grad_copy : bool, optional
        The optimizer keeps an fp32 copy of 16-bit gradients (Megatron does; the ZeRO
        paper's K = 12 does not count one). Default: True when the gradients are
        16-bit, False when they are already fp32 (Megatron then steps on the buffer).
    weight_bytes, grad_bytes : float, optional
        Override the size of one weight / gradient element, (0, 16]. [B]

    Returns
    -------
    dict
        ``weights``, ``gradients``, ``master`` (fp32 master weights; 0 when the
        weights are fp32), ``grad_copy``, ``adam`` (m and v) and ``total``: bytes per
        parameter held by one GPU after sharding.

    Notes
    -----
    With :math:`w` and :math:`g` bytes per weight and gradient, :math:`o = 4_\text{master}
    + 4_\text{grad copy} + 8_\text{Adam}` (terms present as above) and
    :math:`d_x = d` where stage ``zero`` shards :math:`x` (else 1):

    .. math::

        B = \frac{w}{d_w} + \frac{g}{d_g} + \frac{o}{d_o}

    ====================================  =====================  =================
    Format (Megatron-LM docs table)       no sharding (zero=0)   distributed optim
    ====================================  =====================  =================
    fp16 params, fp16 grads               20                     4 + 16/d
    bf16 params, fp32 grads (default)     18                     6 + 12/d
    fp32 params, fp32 grads               16                     8 + 8/d
    ====================================  =====================  =================

    ZeRO's accounting (Rajbhandari et al. 2020, sec. 3.1 and 5; fp16 weights and
    gradients, K = 12, no fp32 gradient copy) is ``param_dtype="fp16",
    grad_dtype="fp16", fp32_grad_copy=False``: 16, 4 + 12/d, 2 + 14/d, 16/d for
    stages 0-3.

    =====================================  ==========================================
    Assumption                             Source
    =====================================  ==========================================
    bytes per format, fp32 master weights  Megatron-LM docs, "Distributed Optimizer"
    and the three rows above               (docs/user-guide/features/dist_optimizer.md)
    fp32 gradients by default with bf16    megatron/training/arguments.py (bf16 sets
                                           accumulate_allreduce_grads_in_fp32)
    Adam m and v in fp32 (8 B)             ZeRO (Rajbhandari et al. 2020), sec. 3.1
    distributed optimizer = ZeRO-1         Megatron-LM docs: optimizer state sharded,
    (gradients and weights not sharded)    model gradients and parameters not
    =====================================  ==========================================

    Examples
    --------
    >>> model_state_bytes()["total"]                       # Megatron, bf16, no sharding
    18.0
    >>> model_state_bytes(8, zero=1)["total"] == 6 + 12 / 8
    True
    >>> zero = dict(param_dtype="fp16", grad_dtype="fp16", fp32_grad_copy=False)
    >>> [model_state_bytes(64, z, **zero)["total"] for z in (0, 1, 2, 3)]
    [16.0, 4.1875, 2.21875, 0.25]
    """
    d = check_int("dp", dp, low=1, high=1_000_000)
    z = check_zero(zero)
    pdt = _dtype("param_dtype", param_dtype, "param_dtype")
    if grad_dtype is None:
        gdt = (_dtype("grad_dtype", None, "bf16_grad_dtype") if pdt == "bf16"
               else pdt)
    else:
        gdt = _dtype("grad_dtype", grad_dtype, "bf16_grad_dtype")
    w = (DTYPE_BYTES[pdt] if weight_bytes is None else
         as_number("weight_bytes", weight_bytes, low=0, high=16, low_inclusive=False,
                   allow_array=False))
    g = (DTYPE_BYTES[gdt] if grad_bytes is None else
         as_number("grad_bytes", grad_bytes, low=0, high=16, low_inclusive=False,
                   allow_array=False))
    copy = (g < 4) if fp32_grad_copy is None else check_flag("fp32_grad_copy",
                                                             fp32_grad_copy)
    master = 0.0 if pdt == "fp32" else float(assumption("master_weight_bytes"))
    grad_copy = float(assumption("master_weight_bytes")) if copy else 0.0
    adam = float(assumption("adam_state_bytes"))
    d_o = d if z >= 1 else 1
    out = {"weights": w / (d if z >= 3 else 1), "gradients": g / (d if z >= 2 else 1),
           "master": master / d_o, "grad_copy": grad_copy / d_o, "adam": adam / d_o}
    out["total"] = sum(out.values())
    return out


@dataclass(frozen=True)
class TrainingMemory:
    """Training memory of the most loaded GPU (the first pipeline stage). [B]

    ``weights + gradients + optimizer + activations == total`` and
    ``optimizer == master + grad_copy + adam``; ``params_per_gpu`` is the number of
    parameters the GPU's stage holds before sharding; ``bytes_per_param`` is
    :func:`model_state_bytes` of the configuration (after sharding).
    """

    weights: float
    gradients: float
    optimizer: float
    activations: float
    total: float
    params_per_gpu: float
    in_flight: int
    master: float = 0.0
    grad_copy: float = 0.0
    adam: float = 0.0
    bytes_per_param: dict = field(default_factory=dict, hash=False)

    def as_dict(self):
        """The byte counts as a dict (for tables and bar charts)."""
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations,
                "total": self.total}

    @property
    def adam_m(self):
        """Adam's first moment (momentum): half of :attr:`adam`, since m and v are
        both kept in fp32 (``adam_state_bytes`` = 4 + 4). [B]"""
        return self.adam / 2

    @property
    def adam_v(self):
        """Adam's second moment (variance): the other half of :attr:`adam`. [B]"""
        return self.adam / 2

    def breakdown(self):
        """Every part: weights, gradients, master, grad_copy, adam, activations
        and total. [B]"""
        return {"weights": self.weights, "gradients": self.gradients,
                "master": self.master, "grad_copy": self.grad_copy,
                "adam": self.adam, "activations": self.activations,
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


def stage_expert_param_count(m, tp, pp, ep=1):
    """Expert parameters of one pipeline stage held by one GPU: the stage's experts
    split over ``tp x ep`` (EP ranks hold ``num_experts / ep`` whole experts, each
    split over TP as the dense MLP is). 0 for a dense model."""
    return m.layers / pp * param_counts(m)["expert_layer"] / (tp * ep)


def moe_sp_reason(m, tp, sp):
    """Why an MoE layout cannot train, or None: with TP > 1 a mixture-of-experts
    model needs sequence parallelism.

    Megatron Core's MoE layer refuses to train with TP > 1 and sequence parallelism
    off (any EP degree), and its parallel config warns that EP with TP needs it
    (record ``moe_tp_needs_sequence_parallel`` of
    ``data/parallelism_assumptions.yaml``). The EP all-to-all bytes of
    :func:`step_communication` (each TP rank dispatches ``1/tp`` of the tokens)
    assume it too. Dense models and TP1 are never refused."""
    if m.num_experts and tp > 1 and not sp and specs.assumption(
            "parallelism", "moe_tp_needs_sequence_parallel"):
        return (f"an MoE model with TP{tp} needs sequence parallelism (Megatron "
                "Core's MoE layer refuses to train with TP > 1 without it)")
    return None


def check_ep(m, ep, dp):
    """``ep`` checked against the model and the data-parallel degree it is carved
    out of (Megatron: EP groups are made of data-parallel ranks)."""
    e = check_int("ep", ep, low=1, high=1_000_000)
    if e > 1 and not m.num_experts:
        raise ValueError(f"ep must be 1 for the dense model {m.name!r} (it has no "
                         f"experts); got {ep!r}")
    if e > 1 and (m.num_experts % e or dp % e):
        raise ValueError(f"ep must divide the {m.num_experts} experts and the data-"
                         f"parallel degree dp={dp}; got {ep!r}")
    return e


@finite_answer
def training_memory(spec, tp=1, pp=1, dp=1, *, micro_batch=1, seq_len=None, zero=0,
                    sequence_parallel=False, recompute="none", micro_batches=None,
                    virtual=1, param_dtype=None, grad_dtype=None, fp32_grad_copy=None,
                    weight_bytes=None, grad_bytes=None, ep=1, cp=1, fp8_inputs=False):
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
        What is sharded over DP: 1 the optimizer's states (master weights, Adam m
        and v, any fp32 gradient copy) = Megatron's ``--use-distributed-optimizer``;
        2 also the gradients; 3 also the weights. 0 (Megatron without the flag)
        replicates everything.
    sequence_parallel : bool
    recompute : {"none", "selective", "full", "per-op"}
    micro_batches : int, optional
        Micro-batches per step m (default: at least ``pp``). With fewer than ``pp``
        only ``m`` are ever in flight.
    virtual : int
        Virtual stages per GPU (interleaved 1F1B).
    param_dtype, grad_dtype, fp32_grad_copy, weight_bytes, grad_bytes
        Number formats, as in :func:`model_state_bytes` (default Megatron-LM's: bf16
        weights, fp32 gradients, fp32 master weights, fp32 Adam states).
    ep : int
        Expert-parallel degree e of a mixture-of-experts model: the EP ranks hold
        ``num_experts / e`` experts each. EP groups are carved out of DP (e divides
        ``dp`` and the number of experts); the expert parameters' optimizer states
        are sharded over the remaining ``dp / e`` expert-data-parallel ranks.
    cp : int
        Context-parallel degree: each GPU holds ``seq_len / cp`` tokens of a sequence,
        so its activations are those of a ``seq_len / cp`` sequence (ours: the
        attention-score term, which flash attention never stores, is counted for a
        ``seq_len / cp`` square); ZeRO shards over the ``dp x cp`` ranks that hold
        the same weights (Megatron's distributed optimizer uses its data-parallel
        group with CP; torchtitan's FSDP mesh folds CP in).
    fp8_inputs : bool
        Linear-layer inputs saved in FP8 (Transformer Engine;
        :func:`activation_memory_per_layer`).

    Returns
    -------
    TrainingMemory

    Notes
    -----
    With :math:`\Psi` parameters on the GPU's stage (:math:`\approx \Psi_\text{model}
    /(t\,p)`; the first stage also holds the embedding) and :math:`B` bytes per
    parameter from :func:`model_state_bytes` (:math:`6 + 12/d` with Megatron's
    defaults and its distributed optimizer, ``zero=1``):

    .. math::

        M = \Psi\,B + \frac{L}{p}\,A_\text{layer}\,\min(p, m)
            \left(1 + \frac{p-1}{p\,v}\right)_{v>1}

    where :math:`A_\text{layer}` is :func:`activation_memory_per_layer`.

    ===================================  ==========================================
    Assumption                           Source
    ===================================  ==========================================
    bytes per parameter                  see :func:`model_state_bytes`
    ZeRO stages shard over DP only       Rajbhandari et al. 2020, sec. 5
    1F1B: first stage holds p micro-     Narayanan et al. 2021, sec. 2.2;
    batches of L/p layers = L layers     Korthikanti et al. 2022, sec. 4.2.3
    interleaving x (1 + (p-1)/(p v))     Korthikanti et al. 2022, sec. 4.2.3
    MoE: experts / e per GPU, split over  Megatron Core MoE (megatron/core/
    TP; expert states sharded over d/e   transformer/moe/README.md): EP taken
                                         from DP, expert-DP group of d / e ranks
                                         (its classic layout, without parallel
                                         folding)
    MoE activations as a dense layer     approximation (ours): the top-k expert
    of the same shape                    outputs per token are not counted
    full recompute: plus one layer's      ours: its backward rebuilds that
    activations (selective's count)       layer's activations (flash attention:
                                          no scores); Korthikanti's 2sbhL omits
                                          it
    embedding/logit activations ignored  small vs L layers (Korthikanti, 4.3)
    norms split over TP like the rest    they are replicated; < 0.01% of params
    no reduce-scatter/all-gather buffer  Megatron reuses the gradient and
    beyond the states                    parameter buffers for both
    ===================================  ==========================================

    Examples
    --------
    >>> from gpulab.parallelism import parameter_count
    >>> m = training_memory("70b")            # one GPU holds everything
    >>> (m.weights + m.gradients + m.optimizer) / parameter_count("70b")
    18.0
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
    c = check_int("cp", cp, low=1, high=1_000_000)
    if s % c:
        raise ValueError(f"cp must divide seq_len ({s}); got {c}")
    per = model_state_bytes(d * c, z, param_dtype=param_dtype, grad_dtype=grad_dtype,
                            fp32_grad_copy=fp32_grad_copy, weight_bytes=weight_bytes,
                            grad_bytes=grad_bytes)
    e = check_ep(m, ep, d)
    psi = stage_param_count(m, t, p)
    parts = {k: psi * per[k] for k in STATE_PARTS}
    if e > 1:
        psi_e = stage_expert_param_count(m, t, p, e)
        per_e = model_state_bytes(d * c // e, z, param_dtype=param_dtype,
                                  grad_dtype=grad_dtype, fp32_grad_copy=fp32_grad_copy,
                                  weight_bytes=weight_bytes, grad_bytes=grad_bytes)
        dense = psi - stage_expert_param_count(m, t, p, 1)
        psi = dense + psi_e
        parts = {k: dense * per[k] + psi_e * per_e[k] for k in STATE_PARTS}
    opt = parts["master"] + parts["grad_copy"] + parts["adam"]
    per_layer = activation_memory_per_layer(m, t, micro_batch=b, seq_len=s // c,
                                            sequence_parallel=sp,
                                            recompute=recompute, fp8_inputs=fp8_inputs)
    in_flight = min(p, mb)
    acts = m.layers / p * per_layer * in_flight
    if v > 1 and p > 1:
        acts *= 1.0 + (p - 1) / (p * v)
    if recompute == "full":
        # the layer being recomputed holds its whole activations during its backward
        acts += activation_memory_per_layer(m, t, micro_batch=b, seq_len=s // c,
                                            sequence_parallel=sp, recompute="selective",
                                            fp8_inputs=fp8_inputs)
    total = parts["weights"] + parts["gradients"] + opt + acts
    return TrainingMemory(parts["weights"], parts["gradients"], opt, acts, total, psi,
                          in_flight, parts["master"], parts["grad_copy"],
                          parts["adam"], per)


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


#: FP8 training frameworks whose extra memory :func:`fp8_memory_overhead` counts.
FP8_FRAMEWORKS = ("torchao", "transformer-engine")


def fp8_memory_overhead(spec, tp=1, pp=1, *, framework="torchao"):
    r"""Extra bytes per GPU that FP8 training keeps beyond BF16 training's.

    Weights, gradients, optimizer states and saved activations are the same as in
    BF16 (:func:`training_memory`): both frameworks keep BF16 (or FP32) master
    weights, and torchao saves the BF16 input and weight of each linear layer for the
    backward pass (``torchao/float8/float8_linear.py``, ``save_for_backward(input_hp,
    weight_hp_t)``, torchao 0.18.0). What FP8 adds:

    * ``"torchao"`` (dynamic tensorwise scaling, the compiled recipe): the FP8 copy
      of one layer's linear weights and its transposed copy while that layer runs,
      :math:`2\,\Psi_\text{layer}/t` bytes, transient; one FP32 scale per tensor.
    * ``"transformer-engine"`` with FP8 weight caching (the weights cast once per
      optimizer step and reused by every micro-batch; Transformer Engine user guide,
      "Performance Optimizations", FP8 weight caching): the FP8 weight and its
      transpose for every linear layer of the stage, :math:`2\,\Psi_\text{stage
      matrices}/t` bytes, plus the delayed-scaling amax history (1024 FP32 values
      for each of three tensors per linear layer, TE's ``DelayedScaling`` default).

    Parameters
    ----------
    spec : ModelSpec or str
    tp, pp : int
        Tensor- and pipeline-parallel degrees.
    framework : {"torchao", "transformer-engine"}

    Returns
    -------
    float
        Bytes per GPU (the most loaded pipeline stage).

    Examples
    --------
    >>> ao = fp8_memory_overhead("llama3-70b", tp=8, pp=4)
    >>> te = fp8_memory_overhead("llama3-70b", tp=8, pp=4, framework="transformer-engine")
    >>> round(ao / 1e6), round(te / 1e9, 2)
    (214, 4.28)
    """
    m = as_model(spec)
    t = check_positive("tp", tp)
    p = check_positive("pp", pp)
    check_choice("framework", framework, FP8_FRAMEWORKS)
    c = param_counts(m)
    if framework == "torchao":
        return 2.0 * c["layer_matrices"] / t + 4.0 * 3 * 4
    layers = -(-m.layers // p)
    amax = layers * 4 * 3 * 1024 * 4.0
    return 2.0 * layers * c["layer_matrices"] / t + amax


@finite_answer
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
