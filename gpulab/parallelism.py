r"""Choosing a parallel layout: memory, communication, compute and bubble models.

Given a transformer (:class:`ModelSpec`, presets in ``data/llm_models.yaml``) and a
cluster (:mod:`gpulab.systems`), this module answers: how much memory does each GPU
need for a tensor- (TP), pipeline- (PP) and data-parallel (DP) layout, how long does
one training step take, and which layout is fastest among those that fit?

* memory per GPU: :func:`training_memory` (weights, gradients, Adam states with ZeRO
  stages, activations per Korthikanti et al. 2022) and :func:`inference_memory`
  (weights and KV cache);
* communication per step: :func:`step_communication`, every collective timed with
  :func:`gpulab.collectives.collective_time` on the chosen system and placement
  (one process per GPU, as torchrun launches training);
* compute: :func:`flops_per_step` (Narayanan et al. 2021) at an assumed MFU;
* the pipeline bubble: :func:`bubble_fraction`;
* step time and throughput: :func:`step_time`; the chooser: :func:`rank_layouts`;
* helpers for the chapters: :func:`tp_allreduce_count`, :func:`speedup`,
  :func:`slowdown`, :func:`nvlink_roi`, :func:`cluster`.

Units are SI: bytes, seconds, FLOP, FLOP/s. Rank placement follows Megatron-LM's
default order: TP ranks are adjacent GPUs, DP ranks next, PP stages outermost.

Examples
--------
>>> from gpulab import parallelism as par
>>> spec = par.model("llama3-70b")
>>> round(spec.params / 1e9, 2)
70.55
>>> mem = par.training_memory(spec, tp=8, pp=4, dp=2, zero=1, recompute="selective",
...                           sequence_parallel=True)
>>> round(mem.total / 1e9, 1)
45.5
>>> par.tp_allreduce_count()          # 2 forward + 2 backward, per layer and micro-batch
4
>>> round(par.bubble_fraction(4, 16), 4)
0.1875

References
----------
* Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models
  Using Model Parallelism", arXiv:1909.08053.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", SC21, arXiv:2104.04473.
* Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", SC20, arXiv:1910.02054.
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", arXiv:2205.05198.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import yaml

from . import collectives, scaling, specs, systems
from ._validate import as_number, check_choice, check_int

__all__ = [
    "ModelSpec", "Layout", "TrainingMemory", "InferenceMemory", "Communication",
    "StepTime", "LayoutResult", "Ranking", "ROI", "RECOMPUTE", "ZERO_STAGES",
    "MLP_KINDS", "NORMS", "FLOPS_METHODS",
    "model_names", "model", "parameter_count", "assumption", "cluster",
    "activation_memory_per_layer", "training_memory", "inference_memory",
    "tp_allreduce_count", "bubble_fraction", "flops_per_step",
    "step_communication", "step_time", "validate_layout", "rank_layouts",
    "speedup", "slowdown", "nvlink_roi",
]

#: Activation recomputation: none, selective (Korthikanti et al.: only the attention
#: scores/softmax/dropout are recomputed) or full (every layer's forward pass).
RECOMPUTE = ("none", "selective", "full")
#: ZeRO stages: 0 plain DP, 1 optimizer states sharded (= Megatron's distributed
#: optimizer), 2 also gradients, 3 also weights (= FSDP full sharding).
ZERO_STAGES = (0, 1, 2, 3)
#: MLP kinds: GELU (two matrices) or SwiGLU (three).
MLP_KINDS = ("gelu", "swiglu")
#: Normalisation layers: LayerNorm (scale and bias) or RMSNorm (scale).
NORMS = ("layernorm", "rmsnorm")
#: FLOP counting: Narayanan et al. 2021 per-layer detail, or the 6 N rule.
FLOPS_METHODS = ("narayanan", "6n")


# --- data --------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _models_table():
    return yaml.safe_load(specs.read_data_text("llm_models.yaml"))["models"]


@functools.lru_cache(maxsize=None)
def _assumptions():
    return yaml.safe_load(specs.read_data_text("parallelism_assumptions.yaml"))


def assumption(name):
    """Value of an assumption of this module (``data/parallelism_assumptions.yaml``,
    plus ``"mfu"`` from the course-wide ``data/assumptions.yaml``).

    Parameters
    ----------
    name : str
        ``"mfu"``, ``"weight_bytes"``, ``"grad_bytes"``, ``"optimizer_bytes"``,
        ``"memory_reserve_fraction"``, ``"dp_bucket_bytes"``, ``"dp_overlap"`` or
        ``"tp_overlap"``.

    Returns
    -------
    float

    Examples
    --------
    >>> assumption("optimizer_bytes"), assumption("mfu")
    (12.0, 0.4)
    """
    table = _assumptions()
    check_choice("name", name, ["mfu"] + sorted(table))
    if name == "mfu":
        return scaling.assumption("mfu")
    return float(table[name]["value"])


# --- model specs -------------------------------------------------------------------
def _pos_int(name, value, low=1):
    return check_int(name, value, low=low, high=10**12)


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a decoder-only transformer.

    Attributes
    ----------
    name : str
    hidden : int
        Hidden size h.
    layers : int
        Transformer layers L.
    heads : int
        Attention (query) heads a; ``hidden`` must be a multiple.
    kv_heads : int
        Key/value heads (query groups); ``heads`` must be a multiple. Equal to
        ``heads`` for multi-head attention, fewer for grouped-query attention.
    ffn_hidden : int
        MLP inner size f.
    vocab : int
        Vocabulary size V.
    seq_len : int
        Default sequence length s. [tokens]
    mlp : {"gelu", "swiglu"}
    tied_embeddings : bool
        The output layer reuses the input embedding matrix.
    learned_positions : bool
        A learned ``seq_len x hidden`` position table (GPT); False for RoPE.
    norm : {"layernorm", "rmsnorm"}
    bias : bool
        Linear layers carry biases.
    source : str
    params : int
        Parameter count, computed by :func:`parameter_count` (do not pass it).
    """

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    mlp: str = "gelu"
    tied_embeddings: bool = True
    learned_positions: bool = True
    norm: str = "layernorm"
    bias: bool = True
    source: str = ""
    params: int = field(default=0, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string; got {self.name!r}")
        for key in ("hidden", "layers", "heads", "kv_heads", "ffn_hidden", "vocab",
                    "seq_len"):
            object.__setattr__(self, key, _pos_int(key, getattr(self, key)))
        if self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden ({self.hidden}); got "
                             f"{self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads ({self.heads}); got "
                             f"{self.kv_heads}")
        check_choice("mlp", self.mlp, MLP_KINDS)
        check_choice("norm", self.norm, NORMS)
        for key in ("tied_embeddings", "learned_positions", "bias"):
            if not isinstance(getattr(self, key), (bool, np.bool_)):
                raise ValueError(f"{key} must be True or False; got "
                                 f"{getattr(self, key)!r}")
        object.__setattr__(self, "params", _count(self)["total"])

    @property
    def head_dim(self):
        """Size of one attention head, ``hidden / heads``."""
        return self.hidden // self.heads


def model_names():
    """Names of the model presets, sorted.

    >>> model_names()
    ['13b', '70b', 'llama3-70b', 'llama3-8b']
    """
    return sorted(_models_table())


@functools.lru_cache(maxsize=None)
def _preset(name):
    row = dict(_models_table()[name])
    row.pop("description", None)
    row.pop("accessed", None)
    return ModelSpec(name=name, **row)


def model(name):
    """The model preset ``name`` (see :func:`model_names`) as a :class:`ModelSpec`.

    >>> m = model("13b")
    >>> m.hidden, m.layers, m.heads, m.vocab, round(m.params / 1e9, 2)
    (5120, 40, 40, 51200, 12.86)
    """
    check_choice("name", name, model_names())
    return _preset(name)


def _spec(spec, param="spec"):
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str) and spec in _models_table():
        return _preset(spec)
    raise ValueError(f"{param} must be a ModelSpec or a preset name "
                     f"({', '.join(model_names())}); got {spec!r}")


def _count(m):
    h, f, d = m.hidden, m.ffn_hidden, m.hidden // m.heads
    kv = m.kv_heads * d
    attn = 2 * h * h + 2 * h * kv                     # Q and O; K and V (GQA)
    mlp = (3 if m.mlp == "swiglu" else 2) * h * f
    norm = (2 if m.norm == "layernorm" else 1) * h
    bias = (h + 2 * kv + h + f + h) if m.bias else 0   # qkv, out, fc1, fc2
    if m.bias and m.mlp == "swiglu":
        bias += f
    layer = attn + mlp + 2 * norm + bias
    embed = m.vocab * h
    pos = m.seq_len * h if m.learned_positions else 0
    head = 0 if m.tied_embeddings else m.vocab * h
    total = m.layers * layer + embed + pos + head + norm
    return {"layer": layer, "layer_matrices": attn + mlp, "embedding": embed,
            "positions": pos, "output": head, "final_norm": norm, "total": total}


def parameter_count(spec):
    r"""Parameters of a model, from its dimensions.

    Parameters
    ----------
    spec : ModelSpec or str
        A :class:`ModelSpec` or a preset name.

    Returns
    -------
    int

    Notes
    -----
    Per layer, with :math:`d = h/a` and :math:`g` KV heads:

    .. math::

        P_\text{layer} = \underbrace{2h^2 + 2h\,g d}_{Q,O;\;K,V}
        + \underbrace{k\,h f}_{\text{MLP}} + 2P_\text{norm} + P_\text{bias}

    with :math:`k = 2` (GELU) or 3 (SwiGLU), :math:`P_\text{norm} = 2h`
    (LayerNorm) or :math:`h` (RMSNorm). The model adds :math:`Vh` for the
    embedding, :math:`s h` for learned positions, :math:`Vh` for an untied output
    layer and one final norm. With :math:`f = 4h` and MHA this is the familiar
    :math:`12 L h^2` plus embeddings (Narayanan et al. 2021, section 5.1).

    Examples
    --------
    >>> parameter_count("llama3-8b")
    8030261248
    >>> parameter_count("70b")        # the article's "70B" shape: about 65 B
    64886030336
    """
    return _spec(spec).params


# --- layouts and systems -----------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """A 3-D parallel layout: ``tp x pp x dp`` GPUs.

    Attributes
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees (>= 1).
    virtual : int
        Virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule);
        1 = plain 1F1B.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    virtual: int = 1

    def __post_init__(self):
        for key in ("tp", "pp", "dp", "virtual"):
            object.__setattr__(self, key, check_int(key, getattr(self, key), low=1,
                                                    high=1_000_000))

    @property
    def n_gpus(self):
        """GPUs used, ``tp * pp * dp``."""
        return self.tp * self.pp * self.dp

    def __str__(self):
        v = f" v{self.virtual}" if self.virtual > 1 else ""
        return f"TP{self.tp} PP{self.pp} DP{self.dp}{v}"


def _layout(layout):
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, (tuple, list)) and len(layout) in (3, 4) and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool)
            for x in layout):
        try:
            return Layout(*layout)
        except ValueError as exc:
            raise ValueError(f"layout: {exc}") from None
    raise ValueError("layout must be a Layout or a (tp, pp, dp[, virtual]) tuple of "
                     f"integers >= 1; got {layout!r}")


def _system(system):
    try:
        return systems.resolve(system)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith("system") else f"system: {msg}") \
            from None


def cluster(system, nodes, network_from=None):
    """A system preset scaled out to ``nodes`` identical nodes.

    Parameters
    ----------
    system : systems.System or str
        A single- or multi-node preset; it must have a ``network`` section (the
        nodes talk over it) unless ``nodes`` is 1 or its NVLink domain already
        spans ``nodes`` nodes.
    nodes : int
        Number of nodes (>= 1).
    network_from : systems.System or str, optional
        For a system without a ``network`` section (e.g. ``h100-pcie``), the preset
        whose scale-out network the nodes are assumed to share (an assumption of
        the caller, stated where it is used). Ignored if the system has a network.

    Returns
    -------
    systems.System
        Same GPU, NVLink and network per node; ``n_gpus = nodes * gpus_per_node``.

    Examples
    --------
    >>> big = cluster("hgx-h200", 8)
    >>> big.n_gpus, big.nodes, big.nvlink_domain, big.name
    (64, 8, 8, 'hgx-h200 x8 nodes')
    >>> cluster("h100-pcie", 2, network_from="dgx-h100").network.nics_per_node
    8
    """
    s = _system(system)
    n = check_int("nodes", nodes, low=1, high=100_000)
    if network_from is not None:
        try:
            donor = systems.resolve(network_from)
        except ValueError as exc:
            raise ValueError(f"network_from: {exc}") from None
        if donor.network is None:
            raise ValueError(f"network_from must name a system with a network section; "
                             f"{donor.name!r} has none")
        if s.network is None:
            s = dataclasses.replace(s, network=donor.network)
    n_gpus = n * s.gpus_per_node
    if n_gpus > max(s.nvlink_domain, s.gpus_per_node) and s.network is None:
        raise ValueError(f"nodes must be 1 for system {s.name!r}: it has no network "
                         f"section to connect {n} nodes; got {nodes!r}")
    if n_gpus == s.n_gpus:
        return s
    base = s.name.split(" x")[0]
    return dataclasses.replace(s, n_gpus=n_gpus, name=f"{base} x{n} nodes")


def _reach(system):
    """GPUs one GPU reaches without the scale-out network."""
    return max(system.nvlink_domain, system.gpus_per_node)


@functools.lru_cache(maxsize=4096)
def _group_system(system, n, stride):
    """A stand-in system in which ``n`` ranks placed ``stride`` GPUs apart fill
    'nodes' exactly as they fill the real system's NVLink domains.

    collectives.predict assumes ranks fill domains one after another; a DP group
    of stride tp has only ``reach // tp`` members per domain. The stand-in keeps
    every GPU's NVLink and network bandwidth."""
    reach = _reach(system)
    g = 1 if stride >= reach else max(1, min(n, reach // stride))
    nodes = math.ceil(n / g)
    if nodes == 1 and g == n and system.n_gpus >= n and n <= reach and stride == 1:
        return system
    nv = system.nvlink
    nvlink = dataclasses.replace(
        nv, domain_gpus=(g if nv.fabric != "none" else None), peer_links=None)
    net = system.network
    if net is not None:
        net = dataclasses.replace(net, nics_per_node=net.nics_per_node * g
                                  / system.gpus_per_node)
    return dataclasses.replace(system, name=f"{system.name} [{n} ranks, stride "
                               f"{stride}]", n_gpus=g * nodes, gpus_per_node=g,
                               nvlink=nvlink, network=net)


@functools.lru_cache(maxsize=65536)
def _ctime(collective, message_bytes, n, system, nvls):
    return float(collectives.collective_time(collective, message_bytes, n, system,
                                             nvls=nvls, gpus_per_process=1))


def _coll(collective, message_bytes, n, stride, system, nvls):
    """Time of one collective call of ``n`` ranks ``stride`` GPUs apart. [s]"""
    if n <= 1 or message_bytes <= 0:
        return 0.0
    return _ctime(collective, float(message_bytes), n,
                  _group_system(system, n, stride), bool(nvls))


def _bucketed(collective, total_bytes, bucket, n, stride, system, nvls):
    """Time to move ``total_bytes`` in calls of ``bucket`` bytes. [s]"""
    if n <= 1 or total_bytes <= 0:
        return 0.0
    full, rest = divmod(float(total_bytes), float(bucket))
    t = full * _coll(collective, bucket, n, stride, system, nvls)
    if rest > 0:
        t += _coll(collective, rest, n, stride, system, nvls)
    return t


# --- option checks -----------------------------------------------------------------
def _flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _zero(zero):
    return check_int("zero", zero, low=0, high=3)


def _seq(spec, seq_len):
    if seq_len is None:
        return spec.seq_len
    return _pos_int("seq_len", seq_len)


def _default(name, value, param, **bounds):
    if value is None:
        return assumption(name)
    return as_number(param, value, allow_array=False, **bounds)


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
    m = _spec(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    b = _pos_int("micro_batch", micro_batch)
    s = _seq(m, seq_len)
    sp = _flag("sequence_parallel", sequence_parallel) and t > 1
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


def _stage_params(m, tp, pp):
    """Parameters of the most loaded pipeline stage, per TP rank."""
    c = _count(m)
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
    >>> m = training_memory("70b")            # one GPU holds everything
    >>> (m.weights + m.gradients + m.optimizer) / parameter_count("70b")
    16.0
    >>> z3 = training_memory("70b", dp=8, zero=3)
    >>> z3.weights * 8 == m.weights
    True
    """
    m = _spec(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    p = check_int("pp", pp, low=1, high=1_000_000)
    d = check_int("dp", dp, low=1, high=1_000_000)
    b = _pos_int("micro_batch", micro_batch)
    s = _seq(m, seq_len)
    z = _zero(zero)
    sp = _flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    mb = p if micro_batches is None else _pos_int("micro_batches", micro_batches)
    v = check_int("virtual", virtual, low=1, high=1_000_000)
    wb = _default("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    gb = _default("grad_bytes", grad_bytes, "grad_bytes", low=0, low_inclusive=False)
    ob = _default("optimizer_bytes", optimizer_bytes, "optimizer_bytes", low=0)
    psi = _stage_params(m, t, p)
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
    m = _spec(spec)
    t = check_int("tp", tp, low=1, high=1_000_000)
    p = check_int("pp", pp, low=1, high=1_000_000)
    bsz = _pos_int("batch", batch)
    s = _seq(m, seq_len)
    wb = _default("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    kb = as_number("kv_dtype_bytes", kv_dtype_bytes, low=0, low_inclusive=False,
                   allow_array=False)
    weights = _stage_params(m, t, p) * wb
    heads = math.ceil(m.kv_heads / t)
    kv = 2.0 * m.layers / p * heads * m.head_dim * s * bsz * kb
    return InferenceMemory(weights, kv, weights + kv, heads)


# --- counts, bubble, flops ---------------------------------------------------------
def tp_allreduce_count(sequence_parallel=False, recompute="none"):
    """Tensor-parallel all-reduces per transformer layer per micro-batch.

    Megatron-LM's layer has two all-reduces in the forward pass (after the
    row-parallel attention output projection and after the row-parallel second
    MLP GEMM: the "g" operators) and two in the backward pass (the input gradients
    of the column-parallel QKV and first MLP GEMMs: the "f" operators), Shoeybi et
    al. 2019, section 3 and Fig. 4. That is **four per layer, two of them in the
    forward pass**: the source article's "four all-reduces in the forward pass" is
    wrong. The count does not depend on the TP degree. Full recomputation repeats
    the forward pass, and its two all-reduces (six in total).

    Parameters
    ----------
    sequence_parallel : bool
        With sequence parallelism each all-reduce becomes a reduce-scatter plus an
        all-gather of the same total volume (Korthikanti et al. 2022); the function
        then counts those pairs.
    recompute : {"none", "selective", "full"}

    Returns
    -------
    int

    Examples
    --------
    >>> tp_allreduce_count(), tp_allreduce_count(recompute="full")
    (4, 6)
    """
    _flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    return 6 if recompute == "full" else 4


def bubble_fraction(pp, micro_batches, virtual=1):
    r"""Pipeline bubble as a fraction of the ideal (bubble-free) compute time.

    Parameters
    ----------
    pp : int
        Pipeline stages p.
    micro_batches : int
        Micro-batches per step m.
    virtual : int
        Virtual stages per GPU v (interleaved 1F1B).

    Returns
    -------
    float

    Notes
    -----
    .. math:: \frac{t_\text{bubble}}{t_\text{ideal}} = \frac{p-1}{v\,m}

    (Narayanan et al. 2021, sections 2.2.1-2.2.2). As a share of the whole step it
    is :math:`(p-1)/(vm + p - 1)`.

    Examples
    --------
    >>> bubble_fraction(4, 8), bubble_fraction(4, 8, virtual=2), bubble_fraction(1, 1)
    (0.375, 0.1875, 0.0)
    """
    p = check_int("pp", pp, low=1, high=1_000_000)
    m = check_int("micro_batches", micro_batches, low=1, high=10**12)
    v = check_int("virtual", virtual, low=1, high=1_000_000)
    return (p - 1) / (v * m)


def flops_per_step(spec, tokens, *, seq_len=None, recompute="none",
                   method="narayanan"):
    r"""Training FLOPs of one step (forward and backward) over ``tokens`` tokens.

    Parameters
    ----------
    spec : ModelSpec or str
    tokens : float
        Tokens in the step (global batch x sequence length).
    seq_len : int, optional
        Sequence length (default: the model's); sets the attention term.
    recompute : {"none", "selective", "full"}
        Recomputed work is counted (it is executed, though not "model" FLOPs).
    method : {"narayanan", "6n"}
        Per-layer detail, or the 6 N rule (N = all parameters).

    Returns
    -------
    float
        [FLOP]

    Notes
    -----
    Forward FLOPs per token: :math:`2 P_\text{matrices}` per layer (GEMMs),
    :math:`4 s h` per layer (:math:`QK^T` and scores x V) and :math:`2 h V` for the
    logits. Training = 3 x forward; full recompute adds one forward of the layers,
    selective recompute the :math:`4sh` attention term once more. For a GPT layer
    (:math:`12h^2` matrix parameters) this is Narayanan et al. 2021, eq. (3):

    .. math:: F = 72\,B s L h^2 \left(1 + \frac{s}{6h} + \frac{V}{12hL}\right)

    (96 and :math:`V/(16hL)` with full recompute).

    Examples
    --------
    >>> B, s, L, h, V = 1, 2048, 40, 5120, 51200
    >>> f = flops_per_step("13b", B * s, seq_len=s)
    >>> f == 72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * h * L))
    True
    """
    m = _spec(spec)
    n_tok = as_number("tokens", tokens, low=0, allow_array=False)
    s = _seq(m, seq_len)
    check_choice("recompute", recompute, RECOMPUTE)
    check_choice("method", method, FLOPS_METHODS)
    if method == "6n":
        base = 6.0 * m.params * n_tok
        fwd_layers = 2.0 * (m.params - _count(m)["embedding"]) * n_tok
        extra = {"none": 0.0, "full": fwd_layers,
                 "selective": 4.0 * s * m.hidden * m.layers * n_tok}[recompute]
        return base + extra
    layers, logits = _flops_parts(m, n_tok, s, recompute)
    return layers + logits


def _flops_parts(m, n_tok, s, recompute):
    """Training FLOPs of the transformer layers and of the logits (output layer)."""
    gemm = 2.0 * _count(m)["layer_matrices"] * m.layers * n_tok
    attn = 4.0 * s * m.hidden * m.layers * n_tok
    layers = 3.0 * (gemm + attn)
    if recompute == "full":
        layers += gemm + attn
    elif recompute == "selective":
        layers += attn
    return layers, 3.0 * 2.0 * m.hidden * m.vocab * n_tok


# --- communication -----------------------------------------------------------------
@dataclass(frozen=True)
class Communication:
    """Communication of one GPU in one training step (before any overlap). [s]

    Attributes
    ----------
    tp, pp, dp : float
        Time of the TP collectives, the PP sends/receives and the DP reduction
        (and parameter gathers) per step. [s]
    dp_parts : dict
        DP time per collective kind (``all_reduce``, ``reduce_scatter``,
        ``all_gather``). [s]
    tp_calls, pp_calls : int
        TP collective calls (an all-reduce, or a reduce-scatter + all-gather pair,
        counts once) and PP send/receive calls per step.
    tp_bytes, pp_bytes, dp_bytes : float
        Message size of one TP call and one PP call, and the per-GPU gradient
        buffer the DP reduction covers. [B]
    notes : tuple of str
        Placement notes (TP spanning NVLink domains, DP/PP crossing nodes).
    """

    tp: float
    pp: float
    dp: float
    dp_parts: dict
    tp_calls: int
    pp_calls: int
    tp_bytes: float
    pp_bytes: float
    dp_bytes: float
    notes: tuple


def _placement_notes(system, lay):
    reach, notes = _reach(system), []
    if lay.tp > 1:
        if system.nvlink.fabric == "none":
            notes.append(f"TP{lay.tp} runs over PCIe (no NVLink)")
        elif lay.tp > system.nvlink_domain:
            notes.append(f"TP spans NVLink domains: TP{lay.tp} > "
                         f"{system.nvlink_domain} GPUs per NVLink domain, so TP "
                         "collectives cross the network")
    if lay.dp > 1 and lay.tp * lay.dp > reach:
        notes.append(f"DP groups cross nodes (TP{lay.tp} x DP{lay.dp} > {reach} "
                     "GPUs per node): gradients travel over the network")
    if lay.pp > 1 and lay.tp * lay.dp >= reach:
        notes.append("PP stages sit on different nodes: activations cross the "
                     "network")
    return tuple(notes)


def _comm(m, system, lay, b, mb, s, z, sp, recompute, bucket, nvls, gb, wb):
    sp = sp and lay.tp > 1
    act = float(b) * s * m.hidden * 2.0          # one BF16 activation tensor
    per_mb = tp_allreduce_count(sp, recompute) * m.layers // lay.pp
    tp_calls = per_mb * mb
    if lay.tp > 1:
        if sp:
            one = _coll("reduce_scatter", act, lay.tp, 1, system, nvls) + \
                _coll("all_gather", act, lay.tp, 1, system, nvls)
        else:
            one = _coll("all_reduce", act, lay.tp, 1, system, nvls)
    else:
        one, tp_calls = 0.0, 0
    tp_t = tp_calls * one
    pp_bytes = act / lay.tp if sp else act
    pp_calls = 2 * mb * lay.virtual if lay.pp > 1 else 0
    pp_t = pp_calls * _coll("sendrecv", pp_bytes, 2, lay.tp * lay.dp, system,
                            nvls) if pp_calls else 0.0
    psi = _stage_params(m, lay.tp, lay.pp)
    grad_bytes, w_bytes = psi * gb, psi * wb
    stride, d = lay.tp, lay.dp
    parts = {}
    if d > 1:
        if z == 0:
            parts["all_reduce"] = _bucketed("all_reduce", grad_bytes, bucket, d,
                                            stride, system, nvls)
        else:
            rs = _bucketed("reduce_scatter", grad_bytes, bucket, d, stride, system,
                           nvls)
            ag = _bucketed("all_gather", w_bytes, bucket, d, stride, system, nvls)
            parts["reduce_scatter"] = rs * (mb if z >= 2 else 1)
            parts["all_gather"] = ag * (2 * mb if z == 3 else 1)
    return Communication(tp_t, pp_t, float(sum(parts.values(), 0.0)), parts, tp_calls, pp_calls,
                         act if lay.tp > 1 else 0.0, pp_bytes if lay.pp > 1 else 0.0,
                         grad_bytes if d > 1 else 0.0,
                         _placement_notes(system, lay))


def step_communication(spec, system, layout, *, micro_batch=1, micro_batches=1,
                       seq_len=None, zero=0, sequence_parallel=False,
                       recompute="none", bucket_bytes=None, grad_bytes=None,
                       weight_bytes=None, nvls=True):
    r"""Communication time of one GPU in one training step (nothing overlapped).

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
        The cluster (see :func:`cluster` for more nodes of a preset).
    layout : Layout or tuple
        ``(tp, pp, dp[, virtual])``; ``tp * pp * dp`` at most the system's GPUs.
    micro_batch : int
        Sequences per micro-batch b.
    micro_batches : int
        Micro-batches per step m (gradient-accumulation steps).
    seq_len : int, optional
    zero : {0, 1, 2, 3}
        0: all-reduce the gradients once per step. 1 (distributed optimizer):
        reduce-scatter the gradients and all-gather the updated BF16 weights once
        per step. 2: the reduce-scatter runs every micro-batch. 3: also all-gather
        the weights twice (forward and backward) every micro-batch.
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    bucket_bytes : float, optional
        DP bucket size (default 25 MiB, PyTorch DDP's); one collective per bucket.
    grad_bytes, weight_bytes : float, optional
        Bytes per gradient / weight element on the wire (default 2 and 2).
    nvls : bool
        Let NCCL use NVLink SHARP where the system has it (``predict``'s default).

    Returns
    -------
    Communication

    Notes
    -----
    Per step, with :math:`m` micro-batches, :math:`L/p` layers per GPU, activation
    tensor :math:`A = b s h \cdot 2` bytes and :math:`\Psi` parameters per GPU:

    .. math::

        t_\text{TP} &= m \cdot \tfrac{L}{p} \cdot 4 \cdot t_\text{AR}(A, t)
        \quad (\text{SP: } t_\text{RS}(A,t) + t_\text{AG}(A,t)) \\
        t_\text{PP} &= 2\,m\,v \cdot t_\text{sendrecv}(A) \\
        t_\text{DP} &= \textstyle\sum_\text{buckets} t_\text{AR}(\text{bucket}, d)
        \quad (\text{ZeRO} \ge 1:\ t_\text{RS} + t_\text{AG})

    Placement follows Megatron's rank order (TP fastest, then DP, then PP): TP
    groups are adjacent GPUs, a DP group's ranks are ``tp`` GPUs apart and PP
    neighbours ``tp * dp`` apart. Every collective is timed by
    :func:`gpulab.collectives.collective_time` on a stand-in system in which the
    group fills nodes as it does on the real one, so a DP group of one GPU per node
    runs at the network rate, and TP wider than an NVLink domain crosses it.

    =========================================  ====================================
    Assumption                                 Source
    =========================================  ====================================
    2 fwd + 2 bwd TP all-reduces per layer     Shoeybi et al. 2019, sec. 3
    SP: RS + AG, same volume                   Korthikanti et al. 2022, sec. 4.2.2
    PP sends full activations (SP: 1/t)        Narayanan et al. 2021, sec. 4.1
    parallel groups do not slow each other     one NIC per GPU; PCIe switch
                                               contention not modelled
    collective times                           gpulab.collectives (NCCL-like model)
    =========================================  ====================================

    Examples
    --------
    >>> c = step_communication("13b", "hgx-h200", (8, 1, 1), micro_batches=4)
    >>> c.tp_calls == 4 * 40 * 4, c.pp, c.dp
    (True, 0.0, 0.0)
    """
    m = _spec(spec)
    s_ = _system(system)
    lay = _layout(layout)
    if lay.n_gpus > s_.n_gpus:
        raise ValueError(f"layout needs {lay.n_gpus} GPUs but system {s_.name!r} "
                         f"has {s_.n_gpus}; got {layout!r}")
    b = _pos_int("micro_batch", micro_batch)
    mb = _pos_int("micro_batches", micro_batches)
    s = _seq(m, seq_len)
    z = _zero(zero)
    sp = _flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    bucket = _default("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    gb = _default("grad_bytes", grad_bytes, "grad_bytes", low=0, low_inclusive=False)
    wb = _default("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    nv = _flag("nvls", nvls)
    return _comm(m, s_, lay, b, mb, s, z, sp, recompute, bucket, nv, gb, wb)


# --- validation --------------------------------------------------------------------
def _structural_reasons(m, system, lay, n_gpus, global_batch, b, s, sp):
    why = []
    if lay.n_gpus != n_gpus:
        why.append(f"TP x PP x DP = {lay.tp} x {lay.pp} x {lay.dp} = {lay.n_gpus}, "
                   f"not the {n_gpus} GPUs to use")
    if lay.n_gpus > system.n_gpus:
        why.append(f"needs {lay.n_gpus} GPUs; system {system.name!r} has "
                   f"{system.n_gpus}")
    if m.heads % lay.tp:
        why.append(f"{m.heads} attention heads do not split over TP{lay.tp}")
    if m.kv_heads % lay.tp:
        why.append(f"{m.kv_heads} KV heads do not split over TP{lay.tp} (Megatron "
                   "needs num_query_groups % TP == 0 for training)")
    if m.ffn_hidden % lay.tp:
        why.append(f"MLP size {m.ffn_hidden} does not split over TP{lay.tp}")
    if m.layers % (lay.pp * lay.virtual):
        v = f" x {lay.virtual} virtual stages" if lay.virtual > 1 else ""
        why.append(f"{m.layers} layers do not split over PP{lay.pp}{v}")
    if global_batch % (lay.dp * b):
        why.append(f"global_batch {global_batch} is not a multiple of DP{lay.dp} x "
                   f"micro_batch {b} = {lay.dp * b}")
    if lay.virtual > 1:
        mb = global_batch // (lay.dp * b)
        if lay.pp < 2:
            why.append("virtual pipeline stages need PP >= 2")
        elif mb % lay.pp:
            why.append(f"interleaved 1F1B needs micro-batches ({mb}) divisible by "
                       f"PP{lay.pp}")
    if sp and lay.tp > 1 and s % lay.tp:
        why.append(f"sequence length {s} does not split over TP{lay.tp} "
                   "(sequence parallelism)")
    return why


def _memory_reason(mem, system, reserve):
    cap = system.gpu_spec.memory_bytes * (1.0 - reserve)
    if mem.total > cap:
        return (f"needs {mem.total / 1e9:.1f} GB per GPU; {system.gpu} has "
                f"{cap / 1e9:.1f} GB usable ({1 - reserve:.0%} of "
                f"{system.gpu_spec.memory_bytes / 1e9:.0f} GB)")
    return None


def validate_layout(spec, system, layout, *, global_batch, micro_batch=1,
                    seq_len=None, zero=0, sequence_parallel=False, recompute="none",
                    n_gpus=None, reserve=None):
    """Reasons a layout cannot run (an empty list: it can).

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
    layout : Layout or tuple
    global_batch : int
        Sequences per optimizer step.
    micro_batch : int
    seq_len : int, optional
    zero : {0, 1, 2, 3}
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    n_gpus : int, optional
        GPUs the layout must use (default: all of the system's).
    reserve : float, optional
        Share of GPU memory kept free (default 0.10).

    Returns
    -------
    list of str

    Notes
    -----
    Checks: ``tp * pp * dp`` equals ``n_gpus``; TP divides the attention heads,
    the KV heads (Megatron refuses to replicate query groups in training; vLLM
    replicates them for inference, see :func:`inference_memory`) and the MLP
    size; PP x virtual stages divides the layers; DP x micro-batch divides the
    global batch; interleaving needs PP >= 2 and micro-batches divisible by PP;
    sequence parallelism needs the sequence divisible by TP; and the memory of
    :func:`training_memory` fits. TP wider than an NVLink domain is allowed (a
    note in :func:`step_time`, not a reason).

    Examples
    --------
    >>> validate_layout("13b", "hgx-h200", (3, 1, 1), global_batch=64)
    ... # doctest: +NORMALIZE_WHITESPACE
    ['TP x PP x DP = 3 x 1 x 1 = 3, not the 8 GPUs to use',
     '40 attention heads do not split over TP3',
     '40 KV heads do not split over TP3 (Megatron needs num_query_groups % TP == 0
     for training)', 'MLP size 20480 does not split over TP3']
    >>> validate_layout("13b", "hgx-h200", (8, 1, 1), global_batch=64)
    []
    """
    m = _spec(spec)
    s_ = _system(system)
    lay = _layout(layout)
    gbatch = _pos_int("global_batch", global_batch)
    b = _pos_int("micro_batch", micro_batch)
    s = _seq(m, seq_len)
    z = _zero(zero)
    sp = _flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    n = s_.n_gpus if n_gpus is None else check_int("n_gpus", n_gpus, low=1,
                                                    high=s_.n_gpus)
    res = _default("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                   high_inclusive=False)
    why = _structural_reasons(m, s_, lay, n, gbatch, b, s, sp)
    if not why:
        mem = training_memory(m, lay.tp, lay.pp, lay.dp, micro_batch=b, seq_len=s,
                              zero=z, sequence_parallel=sp, recompute=recompute,
                              micro_batches=gbatch // (lay.dp * b),
                              virtual=lay.virtual)
        r = _memory_reason(mem, s_, res)
        if r:
            why.append(r)
    return why


# --- step time ---------------------------------------------------------------------
@dataclass(frozen=True)
class StepTime:
    """Time of one training step on the critical path. [s]

    ``compute + tp_comm + pp_comm + dp_comm + bubble == total``: the
    communication terms are what is *exposed* after overlap.

    Attributes
    ----------
    layout : Layout
    compute : float
        GEMM and attention time at the assumed MFU (includes recomputation). [s]
    tp_comm, pp_comm, dp_comm : float
        Exposed communication. [s]
    bubble : float
        Pipeline bubble. [s]
    total : float
        Step time. [s]
    tokens_per_s : float
        Training throughput of the whole layout. [tokens/s]
    mfu : float
        End-to-end model FLOPs utilisation (model FLOPs, no recomputation, over
        ``total x GPUs x peak``).
    micro_batches : int
    memory : TrainingMemory
    fits : bool
        ``memory.total`` within the GPU memory less the reserve.
    comm : Communication
        Communication before overlap.
    notes : tuple of str
    """

    layout: Layout
    compute: float
    tp_comm: float
    pp_comm: float
    dp_comm: float
    bubble: float
    total: float
    tokens_per_s: float
    mfu: float
    micro_batches: int
    memory: TrainingMemory
    fits: bool
    comm: Communication
    notes: tuple

    def components(self):
        """The five parts of :attr:`total` as a dict."""
        return {"compute": self.compute, "tp_comm": self.tp_comm,
                "pp_comm": self.pp_comm, "dp_comm": self.dp_comm,
                "bubble": self.bubble}


def _hidden(t, overlap, budget):
    return min(overlap * t, budget)


def _step(m, s_, lay, gbatch, b, s, z, sp, recompute, mfu, dpo, tpo, bucket, res,
          nvls, gb, wb):
    mb = gbatch // (lay.dp * b)
    n = lay.n_gpus
    tokens = float(gbatch) * s
    peak = s_.gpu_spec.fp16_dense_flops
    f_layers, f_logits = _flops_parts(m, tokens, s, recompute)
    # the slowest stage sets the pace: the last one also computes the logits
    compute = (f_layers / lay.pp + f_logits) / (lay.tp * lay.dp * peak * mfu)
    comm = _comm(m, s_, lay, b, mb, s, z, sp, recompute, bucket, nvls, gb, wb)
    tp = comm.tp * (1.0 - tpo)
    pp = comm.pp
    bubble = bubble_fraction(lay.pp, mb, lay.virtual) * (compute + tp)
    # per micro-batch forward and backward time (recomputation is in the backward)
    fwd_share = {"none": 1 / 3, "selective": 1 / 3, "full": 1 / 4}[recompute]
    fwd = compute / mb * fwd_share
    bwd = compute / mb - fwd
    parts, dp = comm.dp_parts, 0.0
    if "all_reduce" in parts:
        dp = parts["all_reduce"] - _hidden(parts["all_reduce"], dpo, bwd)
    elif parts:
        rs, ag = parts["reduce_scatter"], parts["all_gather"]
        if z == 3:
            dp = rs + ag - _hidden(rs + ag, dpo, compute)
        else:
            rs_budget = bwd * (mb if z == 2 else 1)
            dp = rs - _hidden(rs, dpo, rs_budget) + ag - _hidden(ag, dpo, fwd)
    total = compute + tp + pp + dp + bubble
    mem = training_memory(m, lay.tp, lay.pp, lay.dp, micro_batch=b, seq_len=s,
                          zero=z, sequence_parallel=sp, recompute=recompute,
                          micro_batches=mb, virtual=lay.virtual, grad_bytes=gb,
                          weight_bytes=wb)
    fits = _memory_reason(mem, s_, res) is None
    model_flops = flops_per_step(m, tokens, seq_len=s)
    notes = list(comm.notes)
    if lay.pp > 1 and mb < lay.pp:
        notes.append(f"only {mb} micro-batches for {lay.pp} stages: the pipeline "
                     "never fills")
    if sp and lay.tp == 1:
        notes.append("sequence parallelism has no effect at TP1")
    if not fits:
        notes.append(_memory_reason(mem, s_, res))
    return StepTime(lay, compute, tp, pp, dp, bubble, total, tokens / total,
                    model_flops / (total * n * peak), mb, mem, fits, comm,
                    tuple(notes))


def step_time(spec, system, layout, *, global_batch, micro_batch=1, seq_len=None,
              zero=0, sequence_parallel=False, recompute="none", mfu=None,
              dp_overlap=None, tp_overlap=None, bucket_bytes=None, reserve=None,
              nvls=True):
    r"""Step time, throughput and memory of one layout.

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
    layout : Layout or tuple
        ``(tp, pp, dp[, virtual])``.
    global_batch : int
        Sequences per optimizer step; micro-batches per step
        ``m = global_batch / (dp * micro_batch)``.
    micro_batch : int
    seq_len : int, optional
    zero : {0, 1, 2, 3}
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    mfu : float, optional
        Fraction of the GPU's dense BF16 peak the compute reaches, in (0, 1]
        (default 0.40, the course's ``mfu`` assumption). Communication and bubble
        come on top, so the end-to-end :attr:`StepTime.mfu` is lower.
    dp_overlap : float, optional
        Fraction of the DP communication allowed to overlap compute, [0, 1]
        (default 1.0: Megatron ``--overlap-grad-reduce``/``--overlap-param-gather``).
    tp_overlap : float, optional
        Fraction of the TP communication hidden behind GEMMs, [0, 1] (default 0;
        Megatron's ``--tp-comm-overlap`` hides part of it).
    bucket_bytes : float, optional
        DP bucket size (default 25 MiB).
    reserve : float, optional
        Share of GPU memory kept free, [0, 1) (default 0.10).
    nvls : bool

    Returns
    -------
    StepTime

    Raises
    ------
    ValueError
        If the layout breaks a divisibility rule (see :func:`validate_layout`); a
        layout that merely does not fit returns ``fits=False``.

    Notes
    -----
    .. math::

        T = \underbrace{\frac{F}{n\,P\,\eta}}_{\text{compute}}
          + (1-o_t)\,t_\text{TP} + t_\text{PP} + t_\text{DP}^\text{exposed}
          + \frac{p-1}{v\,m}\left(\frac{F}{nP\eta} + (1-o_t)\,t_\text{TP}\right)

    with :math:`F` from :func:`flops_per_step`, :math:`n` GPUs of peak :math:`P`
    (dense BF16), MFU :math:`\eta`. With pipelining, the compute term is that of
    the slowest stage, the last one: :math:`(F_\text{layers}/p +
    F_\text{logits})/(t\,d\,P\eta)`. The DP reduction hides behind compute only
    where it can run: plain DP and ZeRO-1 reduce once per step, during the last
    micro-batch's backward pass (and gather parameters during the first forward);
    ZeRO-2 reduces every micro-batch; ZeRO-3 prefetches throughout. Hidden time is
    :math:`\min(o_d\,t, \text{that compute})`.

    ======================================  =====================================
    Assumption                              Source
    ======================================  =====================================
    MFU 0.40 of dense BF16 peak             data/assumptions.yaml ``mfu``
    (Narayanan 2021: 44-52% on A100;        (end-to-end figures, so the compute
    Llama 3: 38-43% on H100)                share here is conservative)
    bubble (p-1)/(v m) of ideal time        Narayanan et al. 2021, sec. 2.2
    TP collectives on the critical path     Shoeybi et al. 2019, sec. 3
    PP sends not overlapped                 Megatron's 1F1B schedule
    last stage also computes the logits     Megatron's default layer split
    (it sets the pace of the pipeline)      (no --account-for-loss-in-pipeline-
                                            split)
    ======================================  =====================================

    Examples
    --------
    >>> st = step_time("13b", "hgx-h200", (8, 1, 1), global_batch=64)
    >>> parts = sum(st.components().values())
    >>> abs(parts - st.total) < 1e-12 * st.total, st.fits
    (True, True)
    """
    m = _spec(spec)
    s_ = _system(system)
    lay = _layout(layout)
    gbatch = _pos_int("global_batch", global_batch)
    b = _pos_int("micro_batch", micro_batch)
    s = _seq(m, seq_len)
    z = _zero(zero)
    sp = _flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    eta = _default("mfu", mfu, "mfu", low=0, high=1, low_inclusive=False)
    dpo = _default("dp_overlap", dp_overlap, "dp_overlap", low=0, high=1)
    tpo = _default("tp_overlap", tp_overlap, "tp_overlap", low=0, high=1)
    bucket = _default("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    res = _default("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                   high_inclusive=False)
    nv = _flag("nvls", nvls)
    why = _structural_reasons(m, s_, lay, lay.n_gpus, gbatch, b, s, sp)
    if why:
        raise ValueError(f"layout {lay} cannot run: {'; '.join(why)}")
    return _step(m, s_, lay, gbatch, b, s, z, sp, recompute, eta, dpo, tpo, bucket,
                 res, nv, assumption("grad_bytes"), assumption("weight_bytes"))


# --- chooser -----------------------------------------------------------------------
@dataclass(frozen=True)
class LayoutResult:
    """One candidate of :func:`rank_layouts`.

    Attributes
    ----------
    layout : Layout
    options : dict
        ``micro_batch``, ``sequence_parallel`` and ``recompute`` of this candidate.
    step : StepTime or None
        None when a divisibility rule fails.
    reasons : tuple of str
        Why the candidate cannot run (empty when valid).
    why : str
        One line: why it ranks where it does.
    rank : int or None
        1 = fastest; None for invalid candidates.
    """

    layout: Layout
    options: dict
    step: StepTime | None
    reasons: tuple
    why: str
    rank: int | None = None

    @property
    def valid(self):
        """True when the candidate runs and fits."""
        return not self.reasons


@dataclass(frozen=True)
class Ranking:
    """Result of :func:`rank_layouts`: ``valid`` (fastest first) and ``invalid``."""

    valid: list
    invalid: list

    @property
    def best(self):
        """The fastest valid candidate, or None when nothing fits."""
        return self.valid[0] if self.valid else None

    def table(self):
        """Rows (dicts) of every candidate, valid ones first, for display."""
        rows = []
        for r in self.valid + self.invalid:
            st = r.step
            rows.append({"rank": r.rank, "layout": str(r.layout), **r.options,
                         "step_s": None if st is None else st.total,
                         "memory_gb": None if st is None else st.memory.total / 1e9,
                         "why": r.why})
        return rows


_PART_NAMES = {"compute": "compute", "tp_comm": "TP communication",
               "pp_comm": "PP communication", "dp_comm": "DP communication",
               "bubble": "pipeline bubble"}


def _label(res, ref):
    """The layout, plus the options in which ``res`` differs from ``ref``."""
    diff = [f"{k}={v}" for k, v in res.options.items() if ref.options.get(k) != v]
    return f"{res.layout}" + (f" ({', '.join(diff)})" if diff else "")


def _why_best(best, runner):
    st = best.step
    parts = st.components()
    top = max(parts, key=parts.get)
    head = (f"fastest: {st.total:.3g} s/step, {top.replace('_', ' ')} is "
            f"{parts[top] / st.total:.0%} of it")
    if runner is None:
        return head + "; the only layout that fits"
    rp = runner.step.components()
    diff = {k: rp[k] - parts[k] for k in parts}
    k = max(diff, key=diff.get)
    return (f"{head}; next best {_label(runner, best)} is "
            f"{runner.step.total / st.total - 1:.1%} slower, mostly "
            f"{_PART_NAMES[k]} (+{diff[k]:.3g} s)")


def _why_other(res, best):
    st, bp = res.step.components(), best.step.components()
    diff = {k: st[k] - bp[k] for k in st}
    k = max(diff, key=diff.get)
    return (f"{res.step.total / best.step.total - 1:.1%} slower than "
            f"{_label(best, res)}: mostly {_PART_NAMES[k]} (+{diff[k]:.3g} s)")


def _as_tuple(name, value, check):
    vals = value if isinstance(value, (tuple, list)) else (value,)
    if not vals:
        raise ValueError(f"{name} must be a value or a non-empty tuple of values; "
                         f"got {value!r}")
    return tuple(dict.fromkeys(check(name, v) for v in vals))


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def rank_layouts(spec, system, n_gpus=None, *, global_batch, micro_batch=1,
                 seq_len=None, zero=1, sequence_parallel=False, recompute="none",
                 virtual=1, mfu=None, dp_overlap=None, tp_overlap=None,
                 bucket_bytes=None, reserve=None, nvls=True):
    """Enumerate every TP x PP x DP layout of ``n_gpus`` GPUs and rank them.

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
        The cluster (:func:`cluster` scales a preset to more nodes).
    n_gpus : int, optional
        GPUs to use (default: all of the system's).
    global_batch : int
        Sequences per optimizer step.
    micro_batch : int or tuple of int
        Micro-batch size(s) to try.
    seq_len : int, optional
    zero : {0, 1, 2, 3}
        ZeRO stage (default 1: Megatron's distributed optimizer).
    sequence_parallel : bool or tuple of bool
        Value(s) to try (True is only tried where TP > 1).
    recompute : str or tuple of str
        Recomputation mode(s) to try.
    virtual : int or tuple of int
        Virtual pipeline stages to try (only where PP > 1).
    mfu, dp_overlap, tp_overlap, bucket_bytes, reserve, nvls
        As in :func:`step_time`.

    Returns
    -------
    Ranking
        ``valid``: candidates that run and fit, fastest first, each with a
        one-line ``why``; ``invalid``: the others, each with its ``reasons``
        (a broken divisibility rule, or the memory it would need). No candidate
        raises.

    Notes
    -----
    Candidates: every ``(tp, pp)`` with ``tp * pp`` dividing ``n_gpus`` and
    ``dp = n_gpus / (tp * pp)``, times the option values given. Collective times
    are cached, so 64 GPUs rank in a few milliseconds per option combination.

    Examples
    --------
    >>> r = rank_layouts("13b", "hgx-h200", global_batch=64)
    >>> str(r.best.layout), all(x.step.fits for x in r.valid)
    ('TP1 PP1 DP8', True)
    """
    m = _spec(spec)
    s_ = _system(system)
    n = s_.n_gpus if n_gpus is None else check_int("n_gpus", n_gpus, low=1,
                                                    high=s_.n_gpus)
    gbatch = _pos_int("global_batch", global_batch)
    mbs = _as_tuple("micro_batch", micro_batch, _pos_int)
    s = _seq(m, seq_len)
    z = _zero(zero)
    sps = _as_tuple("sequence_parallel", sequence_parallel, _flag)
    recs = _as_tuple("recompute", recompute,
                     lambda k, v: check_choice(k, v, RECOMPUTE))
    virts = _as_tuple("virtual", virtual,
                      lambda k, v: check_int(k, v, low=1, high=1_000_000))
    eta = _default("mfu", mfu, "mfu", low=0, high=1, low_inclusive=False)
    dpo = _default("dp_overlap", dp_overlap, "dp_overlap", low=0, high=1)
    tpo = _default("tp_overlap", tp_overlap, "tp_overlap", low=0, high=1)
    bucket = _default("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    res = _default("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                   high_inclusive=False)
    nv = _flag("nvls", nvls)
    gb, wb = assumption("grad_bytes"), assumption("weight_bytes")
    valid, invalid = [], []
    for tp in _divisors(n):
        for pp in _divisors(n // tp):
            dp = n // (tp * pp)
            for v in virts:
                if v > 1 and pp == 1:
                    continue
                lay = Layout(tp, pp, dp, v)
                for b in mbs:
                    for sp in sps:
                        if sp and tp == 1:
                            continue
                        for rc in recs:
                            opts = {"micro_batch": b, "sequence_parallel": sp,
                                    "recompute": rc}
                            why = _structural_reasons(m, s_, lay, n, gbatch, b, s,
                                                      sp)
                            if why:
                                invalid.append(LayoutResult(lay, opts, None,
                                                            tuple(why), why[0]))
                                continue
                            st = _step(m, s_, lay, gbatch, b, s, z, sp, rc, eta,
                                       dpo, tpo, bucket, res, nv, gb, wb)
                            if not st.fits:
                                r = _memory_reason(st.memory, s_, res)
                                invalid.append(LayoutResult(lay, opts, st, (r,), r))
                            else:
                                valid.append(LayoutResult(lay, opts, st, (), ""))
    valid.sort(key=lambda r: r.step.total)
    out = []
    for i, r in enumerate(valid):
        if i == 0:
            why = _why_best(r, valid[1] if len(valid) > 1 else None)
        else:
            why = _why_other(r, valid[0])
        out.append(dataclasses.replace(r, why=why, rank=i + 1))
    return Ranking(out, invalid)


# --- speedup, slowdown, ROI --------------------------------------------------------
def speedup(t_fast, t_slow):
    r"""How much faster the fast configuration is: :math:`t_\text{slow}/t_\text{fast}
    - 1`.

    Parameters
    ----------
    t_fast, t_slow : float
        Times of the same work (step times, or 1 / throughput). [s]

    Returns
    -------
    float
        Fractional gain in throughput (0.52 = 52% faster).

    Notes
    -----
    Speedup and slowdown are different numbers for the same pair:
    :math:`(1 + \text{speedup})(1 - \text{slowdown}) = 1`. The source article's
    3.2 vs 2.1 samples/s is a 52% speedup of NVLink, or a 34% slowdown of PCIe,
    never a "34% gain".

    Examples
    --------
    >>> round(speedup(1 / 3.2, 1 / 2.1), 3), round(slowdown(1 / 3.2, 1 / 2.1), 3)
    (0.524, 0.344)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    return s / f - 1.0


def slowdown(t_fast, t_slow):
    r"""Throughput the slow configuration loses: :math:`1 - t_\text{fast}/t_\text{slow}`.

    Parameters
    ----------
    t_fast, t_slow : float
        Times of the same work. [s]

    Returns
    -------
    float
        Fraction of the fast configuration's throughput lost (0.34 = 34% slower).

    Examples
    --------
    >>> g, s = speedup(2.0, 3.0), slowdown(2.0, 3.0)
    >>> round(g, 4), round(s, 4), round((1 + g) * (1 - s), 12)
    (0.5, 0.3333, 1.0)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    return 1.0 - f / s


@dataclass(frozen=True)
class ROI:
    """NVLink-vs-PCIe comparison of one training project (see :func:`nvlink_roi`).

    Times in seconds, money in the price's currency, throughput in tokens/s.
    """

    speedup: float
    slowdown: float
    tokens_per_s_fast: float
    tokens_per_s_slow: float
    project_s_fast: float
    project_s_slow: float
    time_saved_s: float
    cost_fast: float
    cost_slow: float
    cost_per_mtoken_fast: float
    cost_per_mtoken_slow: float
    savings: float
    breakeven_price_ratio: float


def nvlink_roi(t_fast, t_slow, *, tokens_per_step, price_fast, price_slow, n_gpus,
               project_tokens):
    r"""Is the faster (NVLink) cluster worth its price for one training project?

    Parameters
    ----------
    t_fast, t_slow : float
        Step times of the fast (e.g. NVLink) and slow (e.g. PCIe) cluster. [s]
    tokens_per_step : float
        Tokens per step (global batch x sequence length), the same on both.
    price_fast, price_slow : float
        Price per GPU-hour of each cluster (any currency, the same for both).
    n_gpus : int
        GPUs in each cluster.
    project_tokens : float
        Tokens to train on.

    Returns
    -------
    ROI

    Notes
    -----
    .. math::

        T_i = \frac{N_\text{tok}}{\text{tokens}_i/\text{s}}, \quad
        C_i = T_i\,[\text{h}] \cdot n \cdot \text{price}_i, \quad
        \frac{\text{price}_\text{fast}}{\text{price}_\text{slow}}\bigg|_\text{break-even}
        = \frac{t_\text{slow}}{t_\text{fast}} = 1 + \text{speedup}

    The fast cluster is cheaper per token whenever its price per GPU-hour is less
    than ``1 + speedup`` times the slow one's; it also finishes
    ``time_saved_s`` earlier (time to market), which this function does not price.

    Examples
    --------
    >>> r = nvlink_roi(1 / 3.2, 1 / 2.1, tokens_per_step=1, price_fast=3.0,
    ...                price_slow=2.0, n_gpus=8, project_tokens=1e6)
    >>> round(r.speedup, 3), round(r.breakeven_price_ratio, 3), r.savings > 0
    (0.524, 1.524, True)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    tok = as_number("tokens_per_step", tokens_per_step, low=0, low_inclusive=False,
                    allow_array=False)
    pf = as_number("price_fast", price_fast, low=0, allow_array=False)
    ps = as_number("price_slow", price_slow, low=0, allow_array=False)
    n = check_int("n_gpus", n_gpus, low=1, high=10**9)
    proj = as_number("project_tokens", project_tokens, low=0, low_inclusive=False,
                     allow_array=False)
    rf, rs = tok / f, tok / s
    tf, ts = proj / rf, proj / rs
    cf, cs = tf / 3600 * n * pf, ts / 3600 * n * ps
    return ROI(speedup(f, s), slowdown(f, s), rf, rs, tf, ts, ts - tf, cf, cs,
               cf / proj * 1e6, cs / proj * 1e6, cs - cf, s / f)
