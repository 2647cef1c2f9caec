"""Step time: compute at the efficiency of its shapes (:mod:`.efficiency`), exposed
communication, the pipeline bubble; :func:`step_time` puts them together.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

from dataclasses import dataclass


from .. import specs
from .._validate import as_number, check_choice, check_int, finite_answer
from .comm import Communication, comm_parts, cp_exposed
from .efficiency import (ATTENTION_BACKENDS, PRECISIONS, RECIPES, logits_efficiency,
                         peak_flops, spec_attention_time, spec_shard_efficiency)
from .layout import (PIPELINE_SPLITS, Layout, as_layout, as_system, memory_reason,
                     stage_layers, structural_reasons)
from .memory import TrainingMemory, check_ep, training_memory
from .overlap import TP_OVERLAP_METHODS, tp_overlap_effect, tp_overlap_sites
from .model import RECOMPUTE, default_value, check_flag, flops_parts, check_positive, seq_len_of, as_model, check_zero, assumption, flops_per_step


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


# --- step time ---------------------------------------------------------------------
@dataclass(frozen=True)
class StepTime:
    """Time of one training step on the critical path. [s]

    ``compute + tp_comm + pp_comm + dp_comm + ep_comm + bubble == total``: the
    communication terms are what is *exposed* after overlap (``ep_comm`` is 0
    without expert parallelism).

    Attributes
    ----------
    layout : Layout
    compute : float
        GEMM and attention time at :attr:`efficiency` (includes recomputation). [s]
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
        ``total x GPUs x peak``, the dense peak in :attr:`precision`).
    micro_batches : int
    memory : TrainingMemory
    fits : bool
        ``memory.total`` within the GPU memory less the reserve.
    comm : Communication
        Communication before overlap.
    notes : tuple of str
    efficiency : float
        Fraction of the dense peak the transformer layers' compute reaches: the
        per-shape :func:`layer_efficiency` of one TP shard (its layer shapes, micro-
        batch and sequence length), or the ``mfu`` the caller passed.
    logits_efficiency : float
        The same for the output (logits) layer: the GEMM part of the layer model
        for a GEMM of its shape (hidden x vocab/tp), or the caller's ``mfu``.
    precision : str
        ``"bf16"`` or ``"fp8"`` (the linear layers' precision).
    ep : int
        Expert-parallel degree (1: none).
    ep_comm : float
        Expert-parallel all-to-alls, on the critical path (not overlapped). [s]
    cp_comm : float
        Context parallelism: what the key/value ring exchange leaves exposed after
        hiding behind the attention kernels (:func:`cp_exposed`). [s]
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
    efficiency: float = float("nan")
    logits_efficiency: float = float("nan")
    precision: str = "bf16"
    ep: int = 1
    ep_comm: float = 0.0
    cp_comm: float = 0.0

    def components(self):
        """The parts of :attr:`total` as a dict: compute, tp_comm, pp_comm,
        dp_comm and bubble, plus ep_comm with expert parallelism (ep > 1) and
        cp_comm with context parallelism (cp > 1)."""
        out = {"compute": self.compute, "tp_comm": self.tp_comm,
               "pp_comm": self.pp_comm, "dp_comm": self.dp_comm,
               "bubble": self.bubble}
        if self.ep > 1:
            out["ep_comm"] = self.ep_comm
        if self.layout.cp > 1:
            out["cp_comm"] = self.cp_comm
        return out


def _hidden(t, overlap, budget):
    return min(overlap * t, budget)


def compute_efficiency(m, gpu_spec, tp, seq_len, micro_batch, precision, mfu,
                       recipe="compiled", cp=1, attention="flash", sp=False):
    """(layer efficiency, logits efficiency) of one TP shard; ``mfu`` overrides both;
    ``sp``: sequence parallelism (the norms' rows split over TP)."""
    if mfu is not None:
        return mfu, mfu
    layer = flops_parts(m, float(seq_len) * micro_batch, seq_len, "none")[0] / m.layers
    eff = spec_shard_efficiency(m, tp, seq_len, micro_batch, gpu_spec, precision, layer,
                                recipe, cp, attention, sp)
    return eff, logits_efficiency(m.hidden, m.vocab / tp, gpu_spec, precision, recipe)


def step_result(m, s_, lay, gbatch, b, s, z, sp, recompute, mfu, dpo, tpo, bucket, res,
          nvls, gb, wb, precision="bf16", ep=1, recipe="compiled", tp_method="none",
          split="even", attention="flash", fp8_inputs=False, rc_scale=1.0,
          fp8_gather=None):
    mb = gbatch // (lay.dp * b)
    n = lay.n_gpus
    tokens = float(gbatch) * s
    peak = peak_flops(s_.gpu_spec, precision)
    eff, eff_logits = compute_efficiency(m, s_.gpu_spec, lay.tp, s, b, precision, mfu,
                                         recipe, lay.cp, attention, sp)
    f_layers, f_logits = flops_parts(m, tokens, s, recompute)
    if rc_scale != 1.0:                 # recomputation at its measured cost
        f_plain = flops_parts(m, tokens, s, "none")[0]
        f_layers = f_plain + rc_scale * (f_layers - f_plain)
    shards = lay.tp * lay.cp * lay.dp
    busy, last = stage_layers(m.layers, lay.pp, split)
    # the slowest stage sets the pace: the last one also computes the logits
    compute = max(f_layers * busy / m.layers / eff,
                  f_layers * last / m.layers / eff + f_logits / eff_logits) \
        / (shards * peak)
    if fp8_gather is None:              # what the frameworks do (step_time's fp8_tp_gather)
        fp8_gather = precision == "fp8" and recipe == "compiled" and bool(sp)
    comm = comm_parts(m, s_, lay, b, mb, s, z, sp, recompute, bucket, nvls, gb, wb,
                      ep, fp8_gather)
    exposed, slow = tp_overlap_effect(m, lay.tp, tp_method)
    layer_compute = f_layers * busy / m.layers / eff / (shards * peak)
    plain = flops_parts(m, tokens, s, "none")[0]           # linear GEMMs + attention
    linear_share = 1.0 - 3.0 * 4.0 * s * m.hidden * m.layers * tokens / plain
    tp = comm.tp * (1.0 - tpo) * exposed + slow * layer_compute * linear_share
    pp = comm.pp
    ep_t = comm.ep
    cp_t = 0.0
    if lay.cp > 1:
        attn = spec_attention_time(m, lay.tp, s, b, s_.gpu_spec, lay.cp, attention)
        cp_t = mb * busy * cp_exposed(
            comm.cp_kv_s, comm.cp_kv_dkv_s, attn, lay.cp, recompute)
    bubble = bubble_fraction(lay.pp, mb, lay.virtual) * (compute + tp + ep_t + cp_t)
    # per micro-batch forward and backward time (recomputation is in the backward)
    fwd_share = {"none": 1 / 3, "selective": 1 / 3, "full": 1 / 4}.get(
        recompute, flops_parts(m, tokens, s, "none")[0] / 3.0 / f_layers)
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
    total = compute + tp + pp + dp + bubble + ep_t + cp_t
    mem = training_memory(m, lay.tp, lay.pp, lay.dp, micro_batch=b, seq_len=s,
                          zero=z, sequence_parallel=sp, recompute=recompute,
                          micro_batches=mb, virtual=lay.virtual, grad_bytes=gb,
                          weight_bytes=wb, ep=ep, cp=lay.cp, fp8_inputs=fp8_inputs)
    fits = memory_reason(mem, s_, res) is None
    model_flops = flops_per_step(m, tokens, seq_len=s)
    notes = list(comm.notes)
    if lay.pp > 1 and mb < lay.pp:
        notes.append(f"only {mb} micro-batches for {lay.pp} stages: the pipeline "
                     "never fills")
    if tp_method != "none" and lay.tp > 1:
        name = tp_method if isinstance(tp_method, str) else "userbuffers, per site"
        notes.append(f"TP collectives overlapped with GEMMs ({name}): {exposed:.1%} "
                     f"left exposed; the hosting GEMMs add {slow:.1%} of the "
                     "linear-layer time")
    if sp and lay.tp == 1:
        notes.append("sequence parallelism has no effect at TP1")
    if not fits:
        notes.append(memory_reason(mem, s_, res))
    if lay.cp > 1:
        notes.append(f"CP{lay.cp}: keys and values pass round the ring as Transformer "
                     f"Engine's p2p context parallelism does, {cp_t / total:.1%} of the "
                     "step left exposed behind attention")
    return StepTime(lay, compute, tp, pp, dp, bubble, total, tokens / total,
                    model_flops / (total * n * peak), mb, mem, fits, comm,
                    tuple(notes), eff, eff_logits, precision, ep, ep_t, cp_t)


#: What recomputation costs (:func:`step_time`'s ``recompute_cost``).
RECOMPUTE_COSTS = ("flops", "compiled")


def compiled_recompute_scale(precision, recompute):
    """Measured cost of recomputation under torch.compile'd blocks, as a fraction of its
    FLOP charge (``data/parallelism_assumptions.yaml``, ``compiled_recompute_scale``:
    the median over our 1x H200 Llama 3 8B runs at one 4096- or 8192-token sequence of
    (step with checkpointing / step without - 1) over the step model's same ratio;
    :func:`gpulab.parallelism.recompute_scale_fit` re-derives it). 1 for ``"none"`` and
    ``"selective"``.

    >>> compiled_recompute_scale("fp8", "per-op") < 0.2 < compiled_recompute_scale("bf16", "full") < 1
    True
    """
    check_choice("precision", precision, ("bf16", "fp8"))
    check_choice("recompute", recompute, RECOMPUTE)
    table = specs.assumption("parallelism", "compiled_recompute_scale")
    return float(table.get(precision, {}).get(recompute, 1.0))


def step_options(system, *, mfu, precision, dp_overlap, tp_overlap, bucket_bytes,
                 reserve, nvls):
    """The step options shared by :func:`step_time` and the chooser, checked, with the
    documented defaults filled in: ``(mfu or None, dp_overlap, tp_overlap,
    bucket_bytes, reserve, nvls)``."""
    eta = None if mfu is None else as_number("mfu", mfu, low=0, high=1,
                                             low_inclusive=False, allow_array=False)
    check_choice("precision", precision, PRECISIONS)
    peak_flops(system.gpu_spec, precision)
    dpo = default_value("dp_overlap", dp_overlap, "dp_overlap", low=0, high=1)
    tpo = default_value("tp_overlap", tp_overlap, "tp_overlap", low=0, high=1)
    bucket = default_value("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    res = default_value("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                        high_inclusive=False)
    return eta, dpo, tpo, bucket, res, check_flag("nvls", nvls)


@finite_answer
def step_time(spec, system, layout, *, global_batch, micro_batch=1, seq_len=None,
              zero=0, sequence_parallel=False, recompute="none", mfu=None,
              dp_overlap=None, tp_overlap=None, bucket_bytes=None, reserve=None,
              nvls=True, precision="bf16", ep=1, recipe="compiled",
              tp_overlap_method="none", pipeline_split="even", attention_backend="flash",
              grad_bytes=None, fp8_saved_inputs=False, recompute_cost="flops",
              fp8_tp_gather=None):
    r"""Step time, throughput and memory of one layout.

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
    layout : Layout or tuple
        ``(tp, pp, dp[, virtual[, cp]])``; with context parallelism (``cp > 1``) each
        sequence is split over ``cp`` GPUs (see :class:`Layout`).
    global_batch : int
        Sequences per optimizer step; micro-batches per step
        ``m = global_batch / (dp * micro_batch)``.
    micro_batch : int
    seq_len : int, optional
    zero : {0, 1, 2, 3}
    sequence_parallel : bool
        Must be True for a mixture-of-experts model with TP > 1 (Megatron Core
        refuses MoE with tensor parallelism otherwise; ``parallelism.memory.moe_sp_reason``).
    recompute : {"none", "selective", "full", "per-op"}
    mfu : float, optional
        A flat fraction of the GPU's dense peak (in ``precision``) for all compute,
        in (0, 1]. Default None: from the shapes -- the transformer layers at
        :func:`layer_efficiency` of one TP shard (this model's layer dimensions,
        ``micro_batch``, ``seq_len``, the system's GPU), the logits layer at the
        efficiency of a GEMM of its shape (:mod:`.efficiency`). Communication and
        bubble come on top, so the end-to-end :attr:`StepTime.mfu` is lower.
    dp_overlap : float, optional
        Fraction of the DP communication allowed to overlap compute, [0, 1]
        (default 1.0: Megatron ``--overlap-grad-reduce``/``--overlap-param-gather``).
    tp_overlap : float, optional
        Fraction of the TP communication hidden behind GEMMs, [0, 1] (default 0), at
        no cost: a what-if knob. For what Megatron's ``--tp-comm-overlap`` does, use
        ``tp_overlap_method``.
    tp_overlap_method : str or dict
        ``"none"`` (default), ``"userbuffers"`` or ``"userbuffers-p2p"``, or
        ``{site: method}``: Transformer Engine's overlap of each TP collective with a
        GEMM of the layer (:mod:`gpulab.parallelism.overlap`): the pipeline sites' last
        chunk stays exposed, the hosting GEMMs run slower by our measured amounts. Needs
        ``sequence_parallel`` (Megatron asserts it) and excludes ``tp_overlap``.
    bucket_bytes : float, optional
        DP bucket size (default 25 MiB).
    reserve : float, optional
        Share of GPU memory kept free, [0, 1) (default 0.10).
    nvls : bool
    precision : {"bf16", "fp8"}
        Precision of the transformer layers' linear layers; sets the peak
        (``fp16_dense_flops`` or ``fp8_dense_flops``) and the efficiency curve. The
        logits layer stays BF16 under the compiled FP8 recipe.
    recipe : {"compiled", "compiled-rowwise", "eager"}
        Execution recipe of :func:`layer_efficiency`: ``"compiled"`` (default, what
        frameworks run: torch.compile, FP8 as torchao float8 training with fused casts)
        or ``"eager"`` (the naive variant: eager PyTorch, unfused ``_scaled_mm`` casts).
    ep : int
        Expert-parallel degree of a mixture-of-experts model (1: none). It must
        divide the layout's ``dp`` and the number of experts: EP groups are made of
        data-parallel ranks, Megatron Core's layout without MoE parallel folding. Adds the all-to-alls of
        :func:`step_communication` to the critical path and shards the experts in
        :func:`training_memory`.
    pipeline_split : {"even", "uneven"}
        ``"even"`` (default): the layers must divide ``pp x virtual``. ``"uneven"``:
        they need not; the busiest stage runs ``ceil(L / pp)`` layers and the last
        ``floor(L / pp)`` plus the logits (:func:`stage_layers`: torchtitan's generated
        split, Megatron's ``account_for_embedding/loss_in_pipeline_split``).
    grad_bytes : float, optional
        Bytes per gradient element that the backward pass accumulates and data
        parallelism reduces, (0, 16]: default 4 (Megatron's FP32 accumulation with BF16
        weights); 2 for BF16 gradients (Megatron-Bridge's ``grad_reduce_in_fp32=False``),
        which halves the DP traffic and the gradient buffer (the optimizer then keeps an
        FP32 copy of its shard).
    fp8_saved_inputs : bool
        Memory only: the linear layers save their inputs for the backward pass as FP8
        casts, as Transformer Engine does (:func:`activation_memory_per_layer`'s
        ``fp8_inputs``); needs ``precision="fp8"``. Default False (torchao keeps BF16).
    attention_backend : {"flash", "cudnn"}
        The attention kernels: ``"flash"`` (default; PyTorch SDPA's flash backend, what
        our shard runs and torchtitan use) or ``"cudnn"`` (cuDNN's fused attention, which
        Transformer Engine prefers on Hopper and later): the shard's attention time times
        :func:`attention_backend_ratio`, measured on our H200.
    recompute_cost : {"flops", "compiled"}
        What recomputation costs: ``"flops"`` (default) charges the recomputed forward
        work its FLOPs at the layer's efficiency, as a framework that re-runs the
        forward pass does (Megatron, Transformer Engine); ``"compiled"`` scales that
        charge by what it cost our whole-model runs with torch.compile'd blocks
        (:func:`compiled_recompute_scale`, per precision and checkpointing policy:
        torchtitan's per-op policy in FP8 recomputed almost nothing there, full
        checkpointing cost 0.5-0.7 of its FLOPs).
    fp8_tp_gather : bool
        Run the tensor-parallel all-gathers in FP8 (one byte per element) and keep the
        reduce-scatters in BF16, as torchao's float8 tensor-parallel styles do with
        tensorwise scaling (``Float8ColwiseParallel``, ``Float8RowwiseParallel`` and
        ``PrepareFloat8ModuleInput`` in ``torchao/float8/float8_tensor_parallel.py``:
        the input is cast before its all-gather, the output's gradient before the
        backward all-gather); torchtitan applies them whenever float8 is on
        (``parallelize_llama.py`` lines 146-168 at 9dec370) and, from 2025, for
        tensorwise scaling only (lines 62-65 of ``models/llama3/parallelize_llama.py``
        at 820504e). Transformer Engine gathers FP8 with sequence parallelism as well
        (the norm's output and the output gradient are quantized before their
        all-gathers). True needs ``precision="fp8"`` and ``sequence_parallel=True``.
        Default None: True for FP8 under the ``"compiled"`` recipe with sequence
        parallelism (what Transformer Engine and torchao's tensorwise TP do), False
        otherwise (BF16, the eager variant, torchao's rowwise recipe, which gathers in
        high precision).

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

    with :math:`F` from :func:`flops_per_step`, :math:`n` GPUs of dense peak
    :math:`P` (in ``precision``), efficiency :math:`\eta`. With pipelining, the
    compute term is that of the slowest stage, the last one:
    :math:`(F_\text{layers}/(p\,\eta_\text{layer}) +
    F_\text{logits}/\eta_\text{logits})/(t\,d\,P)`. :math:`\eta_\text{layer}`
    depends on the shard's shape (hidden/TP, tokens per micro-batch): small shards
    run far below the peak, so a higher TP degree or a smaller micro-batch costs
    compute time as well as communication. The DP reduction hides behind compute only
    where it can run: plain DP and ZeRO-1 reduce once per step, during the last
    micro-batch's backward pass (and gather parameters during the first forward);
    ZeRO-2 reduces every micro-batch; ZeRO-3 prefetches throughout. Hidden time is
    :math:`\min(o_d\,t, \text{that compute})`.

    ======================================  =====================================
    Assumption                              Source
    ======================================  =====================================
    compute efficiency per shard shape      data/layer_efficiency.yaml: fitted
    (:func:`layer_efficiency`; other GPUs   to our 1x H200 layer-shard runs
    transferred from H200: an assumption)   (eager PyTorch, 700 W power limit)
    recomputed work at the same efficiency  course assumption; with
    (``recompute_cost="compiled"``: scaled  recompute_cost="compiled" our
    as measured)                            whole-model runs (1x H200)
    bubble (p-1)/(v m) of ideal time        Narayanan et al. 2021, sec. 2.2
    TP collectives on the critical path     Shoeybi et al. 2019, sec. 3
    PP sends not overlapped                 Megatron's 1F1B schedule
    EP all-to-alls not overlapped           Megatron Core MoE default (its
                                            --overlap-moe-expert-parallel-comm
                                            is off by default)
    MoE compute = active parameters         top-k experts per token, balanced
    (expert GEMMs at the efficiency of      routing; an assumption (ours): the
    the model's dense MLP shape)            experts' smaller GEMMs run slower
    last stage also computes the logits     Megatron's default layer split
    (it sets the pace of the pipeline)      (no --account-for-loss-in-pipeline-
                                            split)
    context parallelism: a rank computes    balanced causal split (two chunks per
    1/cp of the layer at the efficiency     rank: Megatron's get_batch_on_this_
    of its s/cp-token shard; KV ring        cp_rank); TE's p2p ring
    exchange hidden behind attention        (:func:`cp_exposed`); the attention
    except where a step's send is longer    kernels' efficiency over chunks taken
                                            as over the whole (our H200 runs,
                                            measurements.attention_kernels:
                                            16K-64K non-causal blocks within 3%
                                            of a causal sequence's TFLOP/s;
                                            smaller blocks faster per FLOP)
    ======================================  =====================================

    Examples
    --------
    >>> st = step_time("13b", "hgx-h200", (8, 1, 1), global_batch=64)
    >>> parts = sum(st.components().values())
    >>> abs(parts - st.total) < 1e-12 * st.total, st.fits
    (True, True)
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
    check_choice("recipe", recipe, RECIPES)
    if isinstance(tp_overlap_method, str):
        check_choice("tp_overlap_method", tp_overlap_method, TP_OVERLAP_METHODS)
    elif not isinstance(tp_overlap_method, dict):
        raise ValueError("tp_overlap_method: expected one of "
                         f"{list(TP_OVERLAP_METHODS)} or a {{site: method}} dict, got "
                         f"{tp_overlap_method!r}")
    else:
        try:
            tp_overlap_sites(m, 2, tp_overlap_method)
        except ValueError as exc:
            raise ValueError(f"tp_overlap_method: {exc}") from None
    if tp_overlap_method != "none":
        if tp_overlap not in (None, 0, 0.0):
            raise ValueError("tp_overlap: leave it unset with tp_overlap_method "
                             f"{tp_overlap_method!r} (the method sets what is hidden)")
        if not sequence_parallel and as_layout(layout).tp > 1:
            raise ValueError("tp_overlap_method: Transformer Engine's TP overlap needs "
                             "sequence_parallel=True (Megatron asserts it)")
    eta, dpo, tpo, bucket, res, nv = step_options(
        s_, mfu=mfu, precision=precision, dp_overlap=dp_overlap, tp_overlap=tp_overlap,
        bucket_bytes=bucket_bytes, reserve=reserve, nvls=nvls)
    check_choice("pipeline_split", pipeline_split, PIPELINE_SPLITS)
    check_choice("attention_backend", attention_backend, ATTENTION_BACKENDS)
    why = structural_reasons(m, s_, lay, lay.n_gpus, gbatch, b, s, sp, pipeline_split)
    if why:
        raise ValueError(f"layout {lay} cannot run: {'; '.join(why)}")
    e = check_ep(m, ep, lay.dp)
    gb = default_value("grad_bytes", grad_bytes, "grad_bytes", low=0, high=16,
                       low_inclusive=False)
    if check_flag("fp8_saved_inputs", fp8_saved_inputs) and precision != "fp8":
        raise ValueError(f"fp8_saved_inputs needs precision 'fp8'; got {precision!r}")
    check_choice("recompute_cost", recompute_cost, RECOMPUTE_COSTS)
    rc_scale = compiled_recompute_scale(precision, recompute) \
        if recompute_cost == "compiled" else 1.0
    fp8_gather = None if fp8_tp_gather is None else check_flag("fp8_tp_gather",
                                                                 fp8_tp_gather)
    if fp8_gather and (precision != "fp8" or not sp):
        raise ValueError("fp8_tp_gather needs precision 'fp8' and sequence_parallel=True "
                         f"(the all-gathers it casts); got precision {precision!r}, "
                         f"sequence_parallel={sequence_parallel!r}")
    return step_result(m, s_, lay, gbatch, b, s, z, sp, recompute, eta, dpo, tpo, bucket,
                 res, nv, gb, assumption("weight_bytes"), precision,
                 e, recipe, tp_overlap_method, pipeline_split, attention_backend,
                 fp8_saved_inputs, rc_scale, fp8_gather)
