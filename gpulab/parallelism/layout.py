"""Parallel layouts (:class:`Layout`, TP x PP x DP), clusters of presets, and the
rules that make a layout valid on a system (divisibility, placement, memory).

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass


from .. import network, systems
from .._validate import check_choice, check_int
from .memory import moe_sp_reason, training_memory
from .model import RECOMPUTE, default_value, check_flag, check_positive, seq_len_of, as_model, check_zero


# --- layouts and systems -----------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """A parallel layout: ``tp x cp x pp x dp`` GPUs.

    Attributes
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees (>= 1).
    virtual : int
        Virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule);
        1 = plain 1F1B.
    cp : int
        Context-parallel degree (>= 1): each sequence is split over ``cp`` GPUs, which
        exchange keys and values in attention (Megatron Core / Transformer Engine's
        ``context_parallel_size``, torchtitan's ``context_parallel_degree``). The
        ``dp`` data-parallel replicas each hold ``cp`` such GPUs; gradients are
        reduced over all ``dp x cp``. Rank order TP fastest, then CP, DP, PP
        (Megatron Core's default ``tp-cp-ep-dp-pp``).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    virtual: int = 1
    cp: int = 1

    def __post_init__(self):
        for key in ("tp", "pp", "dp", "virtual", "cp"):
            object.__setattr__(self, key, check_int(key, getattr(self, key), low=1,
                                                    high=1_000_000))

    @property
    def n_gpus(self):
        """GPUs used, ``tp * cp * pp * dp``."""
        return self.tp * self.cp * self.pp * self.dp

    def __str__(self):
        v = f" v{self.virtual}" if self.virtual > 1 else ""
        c = f" CP{self.cp}" if self.cp > 1 else ""
        return f"TP{self.tp} PP{self.pp}{c} DP{self.dp}{v}"


def as_layout(layout):
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, (tuple, list)) and len(layout) in (3, 4, 5) and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool)
            for x in layout):
        try:
            return Layout(*layout)
        except ValueError as exc:
            raise ValueError(f"layout: {exc}") from None
    raise ValueError("layout must be a Layout or a (tp, pp, dp[, virtual[, cp]]) tuple of "
                     f"integers >= 1; got {layout!r}")


def as_system(system):
    """A System from a preset name, a YAML path, a System, or a cluster preset of
    :data:`gpulab.network.CLUSTER_PRESETS` (one node of it)."""
    if isinstance(system, str) and system in network.CLUSTER_PRESETS:
        return network.scale_out(system, 1)
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
        spans ``nodes`` nodes. A cluster preset of
        :data:`gpulab.network.CLUSTER_PRESETS` is scaled by
        :func:`gpulab.network.scale_out`.
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
    n = check_int("nodes", nodes, low=1, high=100_000)
    if isinstance(system, str) and system in network.CLUSTER_PRESETS:
        return network.scale_out(system, n)
    s = as_system(system)
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
    if n_gpus > s.scale_up_domain and s.network is None:
        raise ValueError(f"nodes must be 1 for system {s.name!r}: it has no network "
                         f"section to connect {n} nodes; got {nodes!r}")
    if n_gpus == s.n_gpus:
        return s
    base = s.name.split(" x")[0]
    return dataclasses.replace(s, n_gpus=n_gpus, name=f"{base} x{n} nodes")


# --- validation --------------------------------------------------------------------
#: How layers are split over pipeline stages: ``"even"`` (every stage the same number
#: of layers, Megatron's default) or ``"uneven"`` (layers need not divide the stages).
PIPELINE_SPLITS = ("even", "uneven")


def stage_layers(layers, pp, split="even"):
    """(layers of the busiest stage, layers of the last stage) of a pipeline.

    ``"even"``: ``layers / pp`` each. ``"uneven"``: the busiest stage runs
    ``ceil(layers / pp)`` layers and the last one, which also computes the logits,
    ``floor(layers / pp)``: torchtitan's generated split points
    (``generate_split_points`` in ``torchtitan/parallelisms/pipelining_utils.py`` at
    9dec370: the first and last stages get the base share, middle stages the extra
    layers) and Megatron's ``account_for_embedding_in_pipeline_split`` /
    ``account_for_loss_in_pipeline_split`` (embedding and loss counted as one layer
    each, set for Llama 3.1 405B by Megatron-Bridge's recipe,
    ``src/megatron/bridge/recipes/llama/llama3.py`` lines 413-414 at 5776a6d) both
    give that for 126 layers over 8 stages (16 and 15).

    >>> stage_layers(126, 8, "uneven"), stage_layers(80, 8)
    ((16, 15), (10, 10))

    Parameters: ``layers`` (>= 1), ``pp`` (1 to ``layers``), ``split`` (one of
    :data:`PIPELINE_SPLITS`; ``"even"`` needs ``pp`` to divide ``layers``).
    """
    n = check_int("layers", layers, low=1, high=10**6)
    p = check_int("pp", pp, low=1, high=n)
    check_choice("split", split, PIPELINE_SPLITS)
    if split == "even" and n % p:
        raise ValueError(f"pp must divide layers ({n}) with split 'even'; got {p}")
    return -(-n // p), n // p


def structural_reasons(m, system, lay, n_gpus, global_batch, b, s, sp, split="even"):
    why = []
    if lay.n_gpus != n_gpus:
        if lay.cp > 1:
            why.append(f"TP x CP x PP x DP = {lay.tp} x {lay.cp} x {lay.pp} x {lay.dp} "
                       f"= {lay.n_gpus}, not the {n_gpus} GPUs to use")
        else:
            why.append(f"TP x PP x DP = {lay.tp} x {lay.pp} x {lay.dp} = "
                       f"{lay.n_gpus}, not the {n_gpus} GPUs to use")
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
    v = f" x {lay.virtual} virtual stages" if lay.virtual > 1 else ""
    if split == "even" and m.layers % (lay.pp * lay.virtual):
        why.append(f"{m.layers} layers do not split over PP{lay.pp}{v}")
    elif m.layers < lay.pp * lay.virtual:
        why.append(f"{m.layers} layers are fewer than PP{lay.pp}{v} stages")
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
    moe_sp = moe_sp_reason(m, lay.tp, sp)
    if moe_sp:
        why.append(moe_sp)
    if sp and lay.tp > 1 and (s // lay.cp) % lay.tp:
        why.append(f"sequence length {s} does not split over TP{lay.tp} "
                   "(sequence parallelism)")
    if lay.cp > 1 and s % (2 * lay.cp):
        why.append(f"sequence length {s} does not split into 2 x CP{lay.cp} = "
                   f"{2 * lay.cp} chunks (context parallelism balances causal "
                   "attention with two chunks per rank)")
    return why


def memory_reason(mem, system, reserve):
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
    recompute : {"none", "selective", "full", "per-op"}
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
    m = as_model(spec)
    s_ = as_system(system)
    lay = as_layout(layout)
    gbatch = check_positive("global_batch", global_batch)
    b = check_positive("micro_batch", micro_batch)
    s = seq_len_of(m, seq_len)
    z = check_zero(zero)
    sp = check_flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    n = s_.n_gpus if n_gpus is None else check_int("n_gpus", n_gpus, low=1,
                                                    high=s_.n_gpus)
    res = default_value("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                   high_inclusive=False)
    why = structural_reasons(m, s_, lay, n, gbatch, b, s, sp)
    if not why:
        mem = training_memory(m, lay.tp, lay.pp, lay.dp, micro_batch=b, seq_len=s,
                              zero=z, sequence_parallel=sp, recompute=recompute,
                              micro_batches=gbatch // (lay.dp * b),
                              virtual=lay.virtual, cp=lay.cp)
        r = memory_reason(mem, s_, res)
        if r:
            why.append(r)
    return why
