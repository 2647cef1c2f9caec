"""Communication per training step: every TP, PP and DP collective timed with
:func:`gpulab.collectives.collective_time` on the chosen system and rank placement
(one process per GPU, as torchrun launches training), and gradient buckets.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import collectives
from .._validate import as_number, check_choice, check_int, finite_answer
from .layout import as_layout, as_system
from .memory import check_ep, moe_sp_reason, stage_expert_param_count, stage_param_count
from .model import RECOMPUTE, default_value, check_flag, check_positive, seq_len_of, as_model, check_zero


@functools.lru_cache(maxsize=4096)
def _group_system(system, n, stride):
    """A stand-in system in which ``n`` ranks placed ``stride`` GPUs apart fill
    'nodes' exactly as they fill the real system's NVLink domains.

    collectives.predict assumes ranks fill domains one after another; a DP group
    of stride tp has only ``reach // tp`` members per domain. The stand-in keeps
    every GPU's NVLink and network bandwidth."""
    reach = system.scale_up_domain
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


def split_buckets(total_bytes, bucket_bytes):
    """Split ``total_bytes`` into full buckets and one last, smaller bucket.

    Parameters
    ----------
    total_bytes : float
        All the bytes to send. [B]
    bucket_bytes : float or numpy.ndarray
        Bucket size(s); a bucket larger than the total is one call of the total. [B]

    Returns
    -------
    size, n_full, rest : numpy.ndarray
        Bucket size used, number of full buckets and the remainder [B] (0: none);
        ``ceil(total / size)`` calls in all.

    Examples
    --------
    >>> size, n_full, rest = split_buckets(100.0, 30.0)
    >>> float(size), float(n_full), float(rest)
    (30.0, 3.0, 10.0)
    """
    b = np.minimum(np.asarray(bucket_bytes, dtype=float), float(total_bytes))
    n_full = np.floor(float(total_bytes) / b)
    return b, n_full, float(total_bytes) - n_full * b


def _bucketed(collective, total_bytes, bucket, n, stride, system, nvls):
    """Time to move ``total_bytes`` in calls of ``bucket`` bytes. [s]"""
    if n <= 1 or total_bytes <= 0:
        return 0.0
    size, full, rest = (float(x) for x in split_buckets(total_bytes, bucket))
    t = full * _coll(collective, size, n, stride, system, nvls)
    if rest > 0:
        t += _coll(collective, rest, n, stride, system, nvls)
    return t


@finite_answer
def bucket_allreduce_time(gradient_bytes, bucket_bytes, n_ranks, system,
                          transport="p2p"):
    """Time to all_reduce a gradient split into buckets, one call per bucket.

    ``floor(G / b)`` full buckets of ``b`` bytes and one last bucket of the
    remainder (``ceil(G / b)`` calls in all, :func:`split_buckets`); a bucket larger
    than the gradient is one call of ``G``. Calls run one after another (no overlap
    with compute); each call's time is :func:`gpulab.collectives.predict` for
    ``all_reduce`` with one process per GPU, as data-parallel training runs
    (torchrun).

    Parameters
    ----------
    gradient_bytes : float
        Size of all the gradients to reduce. [B]
    bucket_bytes : array_like
        Bucket size(s). [B]
    n_ranks : int
        GPUs in the data-parallel group.
    system : str
        A :func:`gpulab.systems.names` preset.
    transport : {"p2p", "shm"}

    Returns
    -------
    total_time : numpy.ndarray
        [s], one per bucket size.
    n_buckets : numpy.ndarray of int
        ``ceil(G / b)``.

    Examples
    --------
    >>> t, n = bucket_allreduce_time(2 ** 30, [2 ** 30, 25 * 2 ** 20], 2, "hgx-h200")
    >>> n.tolist(), bool(t[1] > t[0])
    ([1, 41], True)
    """
    g = as_number("gradient_bytes", gradient_bytes, low=1, allow_array=False)
    try:
        b = np.atleast_1d(np.asarray(bucket_bytes, dtype=float))
        if np.asarray(bucket_bytes).dtype.kind not in "iuf":
            raise TypeError
    except (TypeError, ValueError, OverflowError):
        b = np.array([np.nan])
    if b.ndim != 1 or b.size == 0 or not (np.all(np.isfinite(b)) and np.all(b >= 1)):
        raise ValueError(f"bucket_bytes must be >= 1 [B]; got {bucket_bytes!r}")
    size, n_full, rem = split_buckets(g, b)
    sizes = np.concatenate([size, np.where(rem > 0, rem, size)])
    p = collectives.predict("all_reduce", sizes, n_ranks, system,
                            transport=transport, gpus_per_process=1)
    t = np.asarray(p.time, dtype=float)
    total = n_full * t[:size.size] + np.where(rem > 0, t[size.size:], 0.0)
    return total, np.ceil(g / size).astype(int)


# --- expert parallelism --------------------------------------------------------------
@dataclass(frozen=True)
class ExpertAllToAll:
    """The expert-parallel all-to-all of one MoE layer (see
    :func:`expert_alltoall_time`).

    Attributes
    ----------
    message_bytes : float
        Each rank's alltoall buffer (nccl-tests' ``size``): its tokens' copies
        routed to experts, ``tokens x top_k x hidden x bytes``. [B]
    per_call : float
        Time of one alltoall. [s]
    calls : int
        Alltoalls per layer and micro-batch: dispatch and combine, forward and
        backward (4).
    total : float
        ``calls x per_call``. [s]
    nodes : int
        NVLink domains the EP group spans (1: it stays on NVLink / NVSwitch).
    """

    message_bytes: float
    per_call: float
    calls: int
    total: float
    nodes: int


@finite_answer
def expert_alltoall_time(tokens, hidden, ep, system, *, top_k=2, element_bytes=2.0,
                         stride=1, nvls=True):
    """Time of the expert-parallel (EP) all-to-alls of one MoE layer per micro-batch.

    Each of the ``ep`` ranks sends every token's ``top_k`` copies to the ranks that
    hold the chosen experts (dispatch) and gets the results back (combine), in the
    forward and in the backward pass: four alltoalls of ``tokens x top_k x hidden x
    element_bytes`` bytes per rank (routing assumed balanced: every rank receives as
    much as it sends). The ranks are ``stride`` GPUs apart (Megatron places EP next
    to TP: stride = TP); inside one NVLink domain (a node, or a whole NVL72 rack) the
    alltoall runs over NVLink, across nodes it is bound by the NICs
    (:func:`gpulab.collectives.predict`, one process per GPU).

    Parameters
    ----------
    tokens : int
        Tokens per rank per micro-batch (micro-batch x sequence length / CP).
    hidden : int
        Model width.
    ep : int
        Expert-parallel ranks (>= 2), at most the system's GPUs / stride.
    system : systems.System or str
        The cluster (:func:`gpulab.network.scale_out`, :func:`cluster`).
    top_k : int
        Experts per token.
    element_bytes : float
        Bytes per activation element (2: BF16; 1: FP8 dispatch).
    stride : int
        GPUs between consecutive EP ranks.
    nvls : bool

    Returns
    -------
    ExpertAllToAll

    Examples
    --------
    >>> r = expert_alltoall_time(4096, 8192, 8, "hgx-h200")
    >>> r.calls, r.nodes, r.message_bytes == 4096 * 2 * 8192 * 2
    (4, 1, True)
    """
    s_ = as_system(system)
    t = check_int("tokens", tokens, low=1, high=10**9)
    h = check_int("hidden", hidden, low=1, high=10**7)
    k = check_int("top_k", top_k, low=1, high=1024)
    b = as_number("element_bytes", element_bytes, low=0, low_inclusive=False,
                  high=8, allow_array=False)
    st = check_int("stride", stride, low=1, high=s_.n_gpus)
    e = check_int("ep", ep, low=2, high=max(2, s_.n_gpus // st))
    if e * st > s_.n_gpus:
        raise ValueError(f"ep x stride must be at most the {s_.n_gpus} GPUs of "
                         f"{s_.name!r}; got ep={ep!r}, stride={stride!r}")
    nv = check_flag("nvls", nvls)
    msg = float(t) * k * h * b
    group = _group_system(s_, e, st)
    per_call = _ctime("alltoall", msg, e, group, bool(nv))
    return ExpertAllToAll(msg, per_call, 4, 4 * per_call,
                          max(1, math.ceil(e / group.scale_up_domain)))


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
    the forward pass, and its two all-reduces (six in total). torchtitan's per-op
    selective checkpointing recomputes the matmuls wk and w3, whose input all-gathers
    (SP) are re-issued; the reduce-scatters are in its save list: one all-reduce's
    worth more (five) with SP; without SP its forward all-reduces are not saved (six).

    Parameters
    ----------
    sequence_parallel : bool
        With sequence parallelism each all-reduce becomes a reduce-scatter plus an
        all-gather of the same total volume (Korthikanti et al. 2022); the function
        then counts those pairs.
    recompute : {"none", "selective", "full", "per-op"}

    Returns
    -------
    int

    Examples
    --------
    >>> tp_allreduce_count(), tp_allreduce_count(recompute="full")
    (4, 6)
    >>> tp_allreduce_count(True, "per-op"), tp_allreduce_count(False, "per-op")
    (5, 6)
    """
    sp = check_flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    if recompute == "per-op":
        return 5 if sp else 6
    return 6 if recompute == "full" else 4


@finite_answer
def cp_exposed(kv_s, kv_dkv_s, attention_s, cp, recompute="none"):
    r"""Context parallelism: the key/value ring exchange of one layer and one
    micro-batch that the attention kernels do not hide. [s]

    Transformer Engine's default (``cp_comm_type="p2p"``, ``AttnFuncWithCPAndKVP2P`` in
    ``transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py``
    at v2.9) splits a rank's attention into ``cp`` steps, one per KV chunk, and sends
    the next chunk round the ring while the current one is computed: the forward loop
    (line 1367) sends the KV chunk ``cp - 1`` times; the backward loop (lines
    2103-2138) sends the KV chunk first, then KV and its gradient together, and the
    KV gradient alone at the last step (``2 (cp - 1)`` chunks in ``cp`` sends). Each
    send hides behind one step's attention (ours: the step's share is 1/cp of the
    rank's forward or backward attention time; forward 1/3 of the total, backward
    2/3):

    .. math::

        t = (c-1)\,[\,t_{kv} - a_f]^+ + 2\,[\,t_{kv} - a_b]^+
            + (c-2)\,[\,t_{kv+dkv} - a_b]^+,\qquad
            a_f = \frac{A}{3c},\ a_b = \frac{2A}{3c}

    and ``recompute="full"`` runs the forward exchange again in the backward pass.
    torchtitan's default in PyTorch's ring attention all-gathers the KV shards
    instead (``context_parallel_rotate_method="allgather"``); the same bytes, modelled
    the same way (an approximation).

    Parameters
    ----------
    kv_s, kv_dkv_s : float
        Time of one send/receive of a rank's KV chunk, and of KV with its gradient. [s]
    attention_s : float
        The rank's attention time of the layer, forward + backward
        (:func:`gpulab.parallelism.efficiency.spec_attention_time`). [s]
    cp : int
        Context-parallel degree (>= 1; 1 gives 0).
    recompute : str
        ``"full"`` repeats the forward exchange.

    Examples
    --------
    >>> round(cp_exposed(1e-3, 2e-3, 0.0, 4), 9)   # nothing to hide behind: 3+2+2x2 ms
    0.009
    >>> cp_exposed(1e-3, 2e-3, 1.0, 4)     # long attention hides it all
    0.0
    """
    kv_s = as_number("kv_s", kv_s, low=0, allow_array=False)
    kv_dkv_s = as_number("kv_dkv_s", kv_dkv_s, low=0, allow_array=False)
    attention_s = as_number("attention_s", attention_s, low=0, allow_array=False)
    c = check_int("cp", cp, low=1, high=1_000_000)
    check_choice("recompute", recompute, RECOMPUTE)
    if c == 1:
        return 0.0
    a_f, a_b = attention_s / (3.0 * c), 2.0 * attention_s / (3.0 * c)
    fwd = (c - 1) * max(0.0, kv_s - a_f)
    bwd = 2.0 * max(0.0, kv_s - a_b) + (c - 2) * max(0.0, kv_dkv_s - a_b)
    return fwd * (2.0 if recompute == "full" else 1.0) + bwd


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
    ep : float
        Time of the expert-parallel all-to-alls per step (0 without EP). [s]
    ep_calls : int
        All-to-all calls per step.
    ep_bytes : float
        Each rank's buffer in one all-to-all. [B]
    cp_kv_s, cp_kv_dkv_s : float
        Context parallelism: time of one ring step's send/receive of a rank's keys and
        values, and of its keys, values and their gradients together (0 without CP).
        Before overlap with attention. [s]
    cp_bytes : float
        One rank's keys and values of one layer and micro-batch (the KV chunk each
        ring step passes on). [B]
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
    ep: float = 0.0
    ep_calls: int = 0
    ep_bytes: float = 0.0
    cp_kv_s: float = 0.0
    cp_kv_dkv_s: float = 0.0
    cp_bytes: float = 0.0


def _placement_notes(system, lay):
    reach, notes = system.scale_up_domain, []
    if lay.tp > 1:
        if system.nvlink.fabric == "none":
            notes.append(f"TP{lay.tp} runs over PCIe (no NVLink)")
        elif lay.tp > system.nvlink_domain:
            notes.append(f"TP spans NVLink domains: TP{lay.tp} > "
                         f"{system.nvlink_domain} GPUs per NVLink domain, so TP "
                         "collectives cross the network")
    if lay.cp > 1 and lay.tp * lay.cp > reach:
        notes.append(f"CP rings cross nodes (TP{lay.tp} x CP{lay.cp} > {reach} GPUs "
                     "per node): keys and values travel over the network")
    if lay.dp > 1 and lay.tp * lay.cp * lay.dp > reach:
        c = f" x CP{lay.cp}" if lay.cp > 1 else ""
        notes.append(f"DP groups cross nodes (TP{lay.tp}{c} x DP{lay.dp} > {reach} "
                     "GPUs per node): gradients travel over the network")
    if lay.pp > 1 and lay.tp * lay.cp * lay.dp >= reach:
        notes.append("PP stages sit on different nodes: activations cross the "
                     "network")
    return tuple(notes)


def comm_parts(m, system, lay, b, mb, s, z, sp, recompute, bucket, nvls, gb, wb, ep=1,
               fp8_gather=False):
    sp = sp and lay.tp > 1
    cp = lay.cp
    act = float(b) * (s // cp) * m.hidden * 2.0   # one BF16 activation tensor
    # FP8 all-gathers (torchao's float8 TP styles): one byte per element, the
    # reduce-scatters stay BF16
    ag_act = act / 2.0 if fp8_gather else act
    stage = -(-m.layers // lay.pp)                 # layers of the busiest stage
    per_mb = tp_allreduce_count(sp, recompute) * stage
    tp_calls = per_mb * mb
    if lay.tp > 1:
        if sp:
            one = _coll("reduce_scatter", act, lay.tp, 1, system, nvls) + \
                _coll("all_gather", ag_act, lay.tp, 1, system, nvls)
        else:
            one = _coll("all_reduce", act, lay.tp, 1, system, nvls)
    else:
        one, tp_calls = 0.0, 0
    tp_t = tp_calls * one
    pp_bytes = act / lay.tp if sp else act
    pp_calls = 2 * mb * lay.virtual if lay.pp > 1 else 0
    pp_t = pp_calls * _coll("sendrecv", pp_bytes, 2, lay.tp * cp * lay.dp, system,
                            nvls) if pp_calls else 0.0
    psi = stage_param_count(m, lay.tp, lay.pp)
    psi_e = stage_expert_param_count(m, lay.tp, lay.pp, ep) if ep > 1 else 0.0
    if ep > 1:
        psi = psi - stage_expert_param_count(m, lay.tp, lay.pp, 1)
    grad_bytes, w_bytes = psi * gb, psi * wb
    # gradients reduce over the DP x CP ranks (CP ranks hold the same weights)
    stride, d = lay.tp, lay.dp * cp
    parts = {}
    # dense parameters reduce over DP (stride TP); with EP the experts reduce over
    # their d / ep expert-data-parallel ranks (stride TP x CP x EP)
    groups = [(grad_bytes, w_bytes, d, stride)]
    if ep > 1:
        groups.append((psi_e * gb, psi_e * wb, d // ep, stride * cp * ep))
    for g_bytes, wt_bytes, n, st in groups:
        if n <= 1:
            continue
        if z == 0:
            parts["all_reduce"] = parts.get("all_reduce", 0.0) + _bucketed(
                "all_reduce", g_bytes, bucket, n, st, system, nvls)
        else:
            rs = _bucketed("reduce_scatter", g_bytes, bucket, n, st, system, nvls)
            ag = _bucketed("all_gather", wt_bytes, bucket, n, st, system, nvls)
            parts["reduce_scatter"] = parts.get("reduce_scatter", 0.0) + \
                rs * (mb if z >= 2 else 1)
            parts["all_gather"] = parts.get("all_gather", 0.0) + \
                ag * (2 * mb if z == 3 else 1)
    ep_t, ep_calls, ep_bytes = 0.0, 0, 0.0
    if ep > 1:
        # each TP rank dispatches its 1/tp share of the micro-batch's tokens
        ep_bytes = float(b) * (s // cp) / lay.tp * m.top_k * m.hidden * 2.0
        ep_calls = (6 if recompute == "full" else 4) * stage * mb
        ep_t = ep_calls * _coll("alltoall", ep_bytes, ep, lay.tp * cp, system, nvls)
    kv_t = kv2_t = cp_bytes = 0.0
    if cp > 1:
        # a rank's K and V chunk: (s / cp) tokens x its kv_heads / tp heads, BF16
        cp_bytes = 2.0 * b * (s // cp) * (m.kv_heads // lay.tp) * m.head_dim * 2.0
        # a ring that spans nodes is paced by its links that cross the network
        reach = system.scale_up_domain
        cp_stride = lay.tp if lay.tp * cp <= reach else max(lay.tp, reach)
        kv_t = _coll("sendrecv", cp_bytes, 2, cp_stride, system, nvls)
        kv2_t = _coll("sendrecv", 2.0 * cp_bytes, 2, cp_stride, system, nvls)
    return Communication(tp_t, pp_t, float(sum(parts.values(), 0.0)), parts, tp_calls, pp_calls,
                         act if lay.tp > 1 else 0.0, pp_bytes if lay.pp > 1 else 0.0,
                         grad_bytes if d > 1 else 0.0,
                         _placement_notes(system, lay), ep_t, ep_calls, ep_bytes,
                         kv_t, kv2_t, cp_bytes)


@finite_answer
def step_communication(spec, system, layout, *, micro_batch=1, micro_batches=1,
                       seq_len=None, zero=0, sequence_parallel=False,
                       recompute="none", bucket_bytes=None, grad_bytes=None,
                       weight_bytes=None, nvls=True, ep=1):
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
        Must be True for a mixture-of-experts model with TP > 1 (Megatron Core
        refuses MoE with tensor parallelism otherwise; ``parallelism.memory.moe_sp_reason``).
    recompute : {"none", "selective", "full", "per-op"}
    bucket_bytes : float, optional
        DP bucket size (default 25 MiB, PyTorch DDP's); one collective per bucket.
    grad_bytes, weight_bytes : float, optional
        Bytes per gradient / weight element on the wire (default 2 and 2).
    nvls : bool
        Let NCCL use NVLink SHARP where the system has it (``predict``'s default).
    ep : int
        Expert-parallel degree of a mixture-of-experts model (divides ``dp`` and
        the number of experts; 1: no EP).

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

    With expert parallelism (:math:`e > 1`) every MoE layer adds, per micro-batch,
    four all-to-alls (dispatch and combine, forward and backward; six with full
    recomputation) of :math:`(b s / t)\,k\,h \cdot 2` bytes per rank among
    :math:`e` ranks ``tp`` GPUs apart (see :func:`expert_alltoall_time`); the
    expert gradients reduce over the :math:`d/e` expert-data-parallel ranks
    (``tp * ep`` GPUs apart), the rest over all :math:`d`.

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
    EP groups carved out of DP, next to TP;    Megatron-LM MoE (expert model
    each TP rank dispatches 1/t of the tokens  parallel; sequence parallel shards)
    balanced routing                           assumption (no capacity factor)
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
    m = as_model(spec)
    s_ = as_system(system)
    lay = as_layout(layout)
    if lay.n_gpus > s_.n_gpus:
        raise ValueError(f"layout needs {lay.n_gpus} GPUs but system {s_.name!r} "
                         f"has {s_.n_gpus}; got {layout!r}")
    b = check_positive("micro_batch", micro_batch)
    mb = check_positive("micro_batches", micro_batches)
    s = seq_len_of(m, seq_len)
    z = check_zero(zero)
    sp = check_flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    bucket = default_value("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    gb = default_value("grad_bytes", grad_bytes, "grad_bytes", low=0, low_inclusive=False)
    wb = default_value("weight_bytes", weight_bytes, "weight_bytes", low=0,
                  low_inclusive=False)
    nv = check_flag("nvls", nvls)
    e = check_ep(m, ep, lay.dp)
    why = moe_sp_reason(m, lay.tp, sp)
    if why:
        raise ValueError(f"sequence_parallel must be True for layout {lay} of "
                         f"{m.name!r}: {why}")
    return comm_parts(m, s_, lay, b, mb, s, z, sp, recompute, bucket, nv, gb, wb, e)
