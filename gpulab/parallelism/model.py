"""Transformer presets (:class:`ModelSpec`), parameter and FLOP counts, the
module's assumptions and the checks of training options shared by the other
parallelism modules.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import yaml

from .. import specs
from .._validate import as_number, check_choice, check_int, finite_answer


#: Activation recomputation: none, selective (Korthikanti et al.: only the attention
#: scores/softmax/dropout are recomputed), full (every layer's forward pass) or per-op
#: (torchtitan's per-op selective checkpointing: every second matmul of a layer and
#: the elementwise ops are recomputed, attention is kept; :func:`per_op_recomputed_matrices`).
RECOMPUTE = ("none", "selective", "full", "per-op")
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


def assumption(name):
    """Value of an assumption of this module (``data/parallelism_assumptions.yaml``,
    plus ``"mfu"`` from the course-wide ``data/assumptions.yaml``).

    Parameters
    ----------
    name : str
        ``"mfu"``, ``"weight_bytes"``, ``"grad_bytes"``,
        ``"master_weight_bytes"``, ``"adam_state_bytes"``,
        ``"memory_reserve_fraction"``, ``"dp_bucket_bytes"``, ``"dp_overlap"`` or
        ``"tp_overlap"``; or a number format, ``"param_dtype"`` or
        ``"bf16_grad_dtype"``.

    Returns
    -------
    float or str
        A number, or a format name (``"bf16"``, ``"fp32"``) for the formats.

    Examples
    --------
    >>> assumption("grad_bytes"), assumption("mfu")
    (4.0, 0.4)
    """
    if name == "mfu":
        return float(specs.assumption("course", "mfu"))
    value = specs.assumption("parallelism", name)
    return value if isinstance(value, str) else float(value)


# --- model specs -------------------------------------------------------------------
def check_positive(name, value, low=1):
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
    num_experts : int
        Experts per MoE layer (every layer's MLP is replaced by ``num_experts``
        expert MLPs and a router); 0 for a dense model.
    top_k : int
        Experts each token is routed to, 1..``num_experts`` (0 for a dense model).
    expert_ffn_hidden : int
        Inner size of one expert's MLP (0: ``ffn_hidden``).
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
    num_experts: int = 0
    top_k: int = 0
    expert_ffn_hidden: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string; got {self.name!r}")
        for key in ("hidden", "layers", "heads", "kv_heads", "ffn_hidden", "vocab",
                    "seq_len"):
            object.__setattr__(self, key, check_positive(key, getattr(self, key)))
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
        e = check_int("num_experts", self.num_experts, low=0, high=1_000_000)
        object.__setattr__(self, "num_experts", e)
        if e:
            object.__setattr__(self, "top_k", check_int("top_k", self.top_k, low=1,
                                                        high=e))
            f_e = check_int("expert_ffn_hidden", self.expert_ffn_hidden, low=0,
                            high=10**12)
            object.__setattr__(self, "expert_ffn_hidden", f_e or self.ffn_hidden)
        elif self.top_k or self.expert_ffn_hidden:
            raise ValueError("top_k and expert_ffn_hidden must be 0 for a dense model "
                             f"(num_experts=0); got top_k={self.top_k!r}, "
                             f"expert_ffn_hidden={self.expert_ffn_hidden!r}")
        object.__setattr__(self, "params", param_counts(self)["total"])

    @property
    def is_moe(self):
        """True for a mixture-of-experts model (``num_experts > 0``)."""
        return self.num_experts > 0

    @property
    def head_dim(self):
        """Size of one attention head, ``hidden / heads``."""
        return self.hidden // self.heads


def model_names():
    """Names of the model presets, sorted.

    >>> model_names()[:5], len(model_names())
    (['13b', '70b', 'gpt3-175b', 'gpt3-20b', 'gpt3-5b'], 12)
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


def as_model(spec, param="spec"):
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str) and spec in _models_table():
        return _preset(spec)
    raise ValueError(f"{param} must be a ModelSpec or a preset name "
                     f"({', '.join(model_names())}); got {spec!r}")


def param_counts(m):
    h, f, d = m.hidden, m.ffn_hidden, m.hidden // m.heads
    kv = m.kv_heads * d
    attn = 2 * h * h + 2 * h * kv                     # Q and O; K and V (GQA)
    k = 3 if m.mlp == "swiglu" else 2
    mlp = k * h * f
    norm = (2 if m.norm == "layernorm" else 1) * h
    bias = (h + 2 * kv + h + f + h) if m.bias else 0   # qkv, out, fc1, fc2
    if m.bias and m.mlp == "swiglu":
        bias += f
    experts, one, active_mlp = 0, 0, mlp
    if m.num_experts:
        # every layer's MLP becomes E expert MLPs of inner size f_e (with their
        # biases) and a router (h x E, no bias, as in Mixtral)
        fe = m.expert_ffn_hidden
        one = k * h * fe + ((fe * (2 if m.mlp == "swiglu" else 1) + h) if m.bias
                            else 0)
        experts = m.num_experts * one
        bias = (h + 2 * kv + h) if m.bias else 0
        mlp = h * m.num_experts                        # the router
        active_mlp = mlp + m.top_k * k * h * fe
    layer = attn + mlp + experts + 2 * norm + bias
    embed = m.vocab * h
    pos = m.seq_len * h if m.learned_positions else 0
    head = 0 if m.tied_embeddings else m.vocab * h
    total = m.layers * layer + embed + pos + head + norm
    active = total - m.layers * (m.num_experts - m.top_k) * one
    return {"layer": layer, "layer_matrices": attn + mlp + experts,
            "layer_active_matrices": attn + active_mlp, "expert_layer": experts,
            "embedding": embed, "positions": pos, "output": head,
            "final_norm": norm, "total": total, "active": active}


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
    return as_model(spec).params


# --- option checks -----------------------------------------------------------------
def check_flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_zero(zero):
    return check_int("zero", zero, low=0, high=3)


def seq_len_of(spec, seq_len):
    if seq_len is None:
        return spec.seq_len
    return check_positive("seq_len", seq_len)


def default_value(name, value, param, **bounds):
    if value is None:
        return assumption(name)
    return as_number(param, value, allow_array=False, **bounds)


@finite_answer
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
    recompute : {"none", "selective", "full", "per-op"}
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
    m = as_model(spec)
    n_tok = as_number("tokens", tokens, low=0, allow_array=False)
    s = seq_len_of(m, seq_len)
    check_choice("recompute", recompute, RECOMPUTE)
    check_choice("method", method, FLOPS_METHODS)
    if method == "6n":
        active = param_counts(m)["active"]
        base = 6.0 * active * n_tok
        fwd_layers = 2.0 * (active - param_counts(m)["embedding"]) * n_tok
        extra = {"none": 0.0, "full": fwd_layers,
                 "selective": 4.0 * s * m.hidden * m.layers * n_tok,
                 "per-op": 2.0 * per_op_recomputed_matrices(m) * m.layers * n_tok
                 }[recompute]
        return base + extra
    layers, logits = flops_parts(m, n_tok, s, recompute)
    return layers + logits


@finite_answer
def layer_flops(spec, tokens, *, seq_len=None, recompute="none"):
    r"""Training FLOPs (forward and backward) of ONE transformer layer over ``tokens``.

    The per-layer part of :func:`flops_per_step` (no logits): for a GPT layer
    :math:`72\,B s h^2 (1 + s/(6h))`, Narayanan et al. 2021, eq. (3) per layer.
    Divide by the TP degree for one tensor-parallel rank.

    Parameters
    ----------
    spec : ModelSpec or str
    tokens : float
        Tokens (micro-batch x sequence length).
    seq_len : int, optional
        Sequence length (default: the model's).
    recompute : {"none", "selective", "full", "per-op"}

    Returns
    -------
    float
        [FLOP]

    Examples
    --------
    >>> b, s, h = 1, 4096, 8192
    >>> layer_flops("70b", b * s, seq_len=s) == 72 * b * s * h**2 * (1 + s / (6 * h))
    True
    """
    m = as_model(spec)
    n_tok = as_number("tokens", tokens, low=0, allow_array=False)
    s = seq_len_of(m, seq_len)
    check_choice("recompute", recompute, RECOMPUTE)
    return flops_parts(m, n_tok, s, recompute)[0] / m.layers


def per_op_recomputed_matrices(spec):
    r"""Weights per layer whose matmuls torchtitan's per-op selective activation
    checkpointing recomputes in the backward pass. [parameters]

    torchtitan's policy (``_get_custom_policy`` in ``parallelize_llama.py``: lines
    254-268 at commit 820504e, 250-264 at 9dec370) saves the outputs of the ops in its
    save list (``aten.mm``, the flash / memory-efficient attention ops, the
    reduce-scatter, ``aten.max``) and recomputes every other op, but only every
    second ``aten.mm`` of a layer is saved: the counter restarts at each layer, odd
    calls are saved, even calls recomputed. A Llama layer calls its linears as wq,
    wk, wv, wo, w1, w3, w2 (SwiGLU; a GELU MLP has w1, w2), so wk, wo and w3 (GELU: wk,
    wo, w2) are recomputed and attention is not. torchao's float8 linears reach the
    policy as ``aten.mm`` too (counted the same way). Mixture-of-experts MLPs (grouped
    GEMMs, not ``aten.mm``) count only their attention matmuls here: ours.

    Examples
    --------
    >>> m = model("llama3-8b")
    >>> per_op_recomputed_matrices(m) == 4096 * 1024 + 4096 * 4096 + 4096 * 14336
    True
    """
    m = as_model(spec)
    h, d = m.hidden, m.hidden // m.heads
    kv = m.kv_heads * d
    attn = h * kv + h * h                              # wk (2nd mm), wo (4th)
    if m.num_experts:
        return attn
    return attn + m.ffn_hidden * h                     # w3 (6th) or GELU's w2 (6th)


def flops_parts(m, n_tok, s, recompute):
    """Training FLOPs of the transformer layers and of the logits (output layer)."""
    gemm = 2.0 * param_counts(m)["layer_active_matrices"] * m.layers * n_tok
    attn = 4.0 * s * m.hidden * m.layers * n_tok
    layers = 3.0 * (gemm + attn)
    if recompute == "full":
        layers += gemm + attn
    elif recompute == "selective":
        layers += attn
    elif recompute == "per-op":
        layers += 2.0 * per_op_recomputed_matrices(m) * m.layers * n_tok
    return layers, 3.0 * 2.0 * m.hidden * m.vocab * n_tok
